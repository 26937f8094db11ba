// Fish.prepare() on the GPU (apps/wa-tor/model.ts): eggTimer += 1, then ask for a free
// neighbouring cell (w_request_move). Libraries: wator_lib.wgsl, objects.wgsl, alloc.wgsl.

override F_position: u32; // Fish.position (ref)
override F_newPosition: u32; // Fish.newPosition (ref)
override F_eggTimer: u32; // Fish.eggTimer (u32)

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let h = o_object(linear_workgroup(wid, nwg) * WG + lid);
  if (h == 0u) {
    return;
  }
  o_set32(h, F_eggTimer, o_get32(h, F_eggTimer) + 1u);
  w_request_move(h, F_position, F_newPosition, false);
}
