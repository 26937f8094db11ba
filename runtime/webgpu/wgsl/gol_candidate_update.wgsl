// Candidate.update(width, height) on the GPU (apps/game-of-life/model.ts): ACTION_SPAWN →
// a new Alive (isNew) in its cell, CELL_NEW; ACTION_DIE → the cell empty; either way the
// Candidate deletes itself. Creation and deletion through alloc.wgsl (a_allocate, a_free);
// a failure goes to the status buffer (g_report) and the invocation stops.
// Libraries: gol_lib.wgsl, objects.wgsl, alloc.wgsl.

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let gi = linear_workgroup(wid, nwg) * WG + lid;
  let h = o_object(gi);
  if (h == 0u) {
    return;
  }
  let action = o_get8(h, F_action);
  if (action == ACTION_NONE) {
    return;
  }
  g_seed(gi);
  let id = o_get32(h, F_cellId);
  let cell = ranks[id];
  if (action == ACTION_SPAWN) {
    let a = a_allocate(T_ALIVE);
    if (a_status != 0u) {
      g_report();
      return;
    }
    o_set32(a, F_aliveCellId, id);
    g_set8(a, F_aliveIsNew, 1u);
    o_set32(cell, F_cellAgent, a);
    g_set8(cell, F_cellState, CELL_NEW);
  } else {
    o_set32(cell, F_cellAgent, 0u);
    g_set8(cell, F_cellState, CELL_EMPTY);
  }
  a_free(h);
  g_report();
}
