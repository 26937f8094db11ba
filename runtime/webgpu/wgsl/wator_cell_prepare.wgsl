// Cell.prepare() on the GPU (apps/wa-tor/model.ts): clear the cell's five request flags.
// Writes only its own flag bytes (atomicAnd: the word's other bytes are other cells').
// Libraries: wator_lib.wgsl, objects.wgsl, alloc.wgsl.

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let h = o_object(linear_workgroup(wid, nwg) * WG + lid);
  if (h == 0u) {
    return;
  }
  for (var d = 0u; d <= STAY; d++) {
    w_clear8(h, w_req_off(d));
  }
}
