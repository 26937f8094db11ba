// Body.deleteMerged() on the GPU (apps/collision/body.ts): a winner (successfulMerge)
// deletes itself through the device-side allocator (alloc.wgsl a_free); a failure
// (BAD_FREE, DOUBLE_FREE, retry cap) goes to the status buffer (binding 4) and the
// runner raises GpuHeapError. The kernel allocates nothing; declared `allocates` so that
// the runner re-takes the pass snapshot after it (gpu-snapshot.ts).
// Libraries: collision_lib.wgsl, alloc.wgsl.

@group(0) @binding(4) var<storage, read_write> status: array<atomic<u32>>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let h = c_object(linear_workgroup(wid, nwg) * WG + lid);
  if (h == 0u || c_get8(h, F_successfulMerge) == 0u) {
    return;
  }
  a_free(h);
  if (a_status != 0u) {
    atomicOr(&status[0], a_status);
    atomicAdd(&status[1], 1u);
  }
}
