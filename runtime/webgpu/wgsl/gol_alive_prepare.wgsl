// Alive.prepare(width, height) on the GPU (apps/game-of-life/model.ts): a new Alive is new
// no more (isNew := false, its cell CELL_NEW → CELL_ALIVE); fewer than 2 or more than 3
// live neighbours → ACTION_DIE. Neighbours read "state ≥ CELL_ALIVE", which both CELL_NEW
// and CELL_ALIVE answer alike, so the concurrent state change is not seen.
// Libraries: gol_lib.wgsl, objects.wgsl, alloc.wgsl.

override F_isNew: u32;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let h = o_object(linear_workgroup(wid, nwg) * WG + lid);
  if (h == 0u) {
    return;
  }
  let id = i32(o_get32(h, F_cellId));
  if (o_get8(h, F_isNew) != 0u) {
    g_set8(h, F_isNew, 0u);
    g_change8(ranks[u32(id)], F_cellState, CELL_NEW, CELL_ALIVE);
  }
  let n = g_alive_neighbours(id);
  if (n < 2u || n > 3u) {
    g_set8(h, F_action, ACTION_DIE);
  }
}
