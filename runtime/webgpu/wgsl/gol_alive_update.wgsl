// Alive.update(width, height) on the GPU (apps/game-of-life/model.ts): a dying Alive that
// is not new becomes a Candidate (a new Candidate in its cell, CELL_CANDIDATE) and
// deletes itself, through alloc.wgsl. Libraries: gol_lib.wgsl, objects.wgsl, alloc.wgsl.

override F_isNew: u32;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let gi = linear_workgroup(wid, nwg) * WG + lid;
  let h = o_object(gi);
  if (h == 0u) {
    return;
  }
  if (o_get8(h, F_isNew) != 0u || o_get8(h, F_action) != ACTION_DIE) {
    return;
  }
  g_seed(gi);
  let id = o_get32(h, F_cellId);
  let cell = ranks[id];
  let c = a_allocate(T_CANDIDATE);
  if (a_status != 0u) {
    g_report();
    return;
  }
  o_set32(c, F_candidateCellId, id);
  o_set32(cell, F_cellAgent, c);
  g_set8(cell, F_cellState, CELL_CANDIDATE);
  a_free(h);
  g_report();
}
