// Candidate.prepare(width, height) on the GPU (apps/game-of-life/model.ts): exactly 3 live
// neighbours → ACTION_SPAWN; none → ACTION_DIE. Writes only its own `action`; reads
// Cell.state. Libraries: gol_lib.wgsl (helpers, bindings, overrides), objects.wgsl, alloc.wgsl.

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let h = o_object(linear_workgroup(wid, nwg) * WG + lid);
  if (h == 0u) {
    return;
  }
  let n = g_alive_neighbours(i32(o_get32(h, F_cellId)));
  if (n == 3u) {
    g_set8(h, F_action, ACTION_SPAWN);
  } else if (n == 0u) {
    g_set8(h, F_action, ACTION_DIE);
  }
}
