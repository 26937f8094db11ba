// Body.initializeMerge() on the GPU (apps/collision/body.ts): mergeTarget = null,
// hasIncomingMerge = successfulMerge = false; each invocation writes its own body only.
// Libraries: collision_lib.wgsl.

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let h = c_object(linear_workgroup(wid, nwg) * WG + lid);
  if (h == 0u) {
    return;
  }
  c_set32(h, F_mergeTarget, 0u);
  c_set8(h, F_hasIncomingMerge, 0u);
  c_set8(h, F_successfulMerge, 0u);
}
