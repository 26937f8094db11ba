// Alive.createCandidates(width, height) on the GPU (apps/game-of-life/model.ts): a new
// Alive puts a new Candidate into each empty cell around it (dx, then dy, from -1 to 1)
// that it is the designated creator of (g_is_creator_of: reads only CELL_NEW, which no one
// writes in this pass; the cells written go CELL_EMPTY → CELL_CANDIDATE, and only their
// designated creator writes them). Creation through alloc.wgsl.
// Libraries: gol_lib.wgsl, objects.wgsl, alloc.wgsl.

override F_isNew: u32;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let gi = linear_workgroup(wid, nwg) * WG + lid;
  let h = o_object(gi);
  if (h == 0u) {
    return;
  }
  if (o_get8(h, F_isNew) == 0u) {
    return;
  }
  g_seed(gi);
  let id = i32(o_get32(h, F_cellId));
  let x = id % P.width;
  let y = id / P.width;
  for (var dx = -1; dx <= 1; dx++) {
    let nx = x + dx;
    if (nx < 0 || nx >= P.width) {
      continue;
    }
    for (var dy = -1; dy <= 1; dy++) {
      let ny = y + dy;
      if (ny < 0 || ny >= P.height) {
        continue;
      }
      let tgt = ny * P.width + nx;
      let cell = ranks[u32(tgt)];
      if (o_get8(cell, F_cellState) == CELL_EMPTY && g_is_creator_of(id, nx, ny)) {
        let c = a_allocate(T_CANDIDATE);
        if (a_status != 0u) {
          g_report();
          return;
        }
        o_set32(c, F_candidateCellId, u32(tgt));
        o_set32(cell, F_cellAgent, c);
        g_change8(cell, F_cellState, CELL_EMPTY, CELL_CANDIDATE);
      }
    }
  }
}
