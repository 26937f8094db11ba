// Fish.update() on the GPU (apps/wa-tor/model.ts): a fish granted another cell moves
// there (the cell it leaves empty, the cell it enters holds it) and, when its egg timer
// is past SPAWN_THRESHOLD, leaves a new Fish on the cell it left (spawnFish: its stream
// seeded from the parent's next draw) and resets the timer. Creation through alloc.wgsl;
// a failure goes to the status buffer (w_report) and the invocation stops.
// Writes: its own fields, the cell it leaves (nobody was granted it) and the cell it was
// granted (only it enters). Libraries: wator_lib.wgsl, objects.wgsl, alloc.wgsl.

override F_position: u32; // Fish.position (ref)
override F_newPosition: u32; // Fish.newPosition (ref)
override F_eggTimer: u32; // Fish.eggTimer (u32)
override T_CHILD: u32; // type id of Fish (the child's class)
override F_childRs_0: u32; // the child's randomState[0..4]
override F_childRs_1: u32;
override F_childRs_2: u32;
override F_childRs_3: u32;
override F_childPosition: u32;
override F_childNewPosition: u32;
override F_childEggTimer: u32;

/** spawnFish(cell, seed): a new Fish on `cell`, linked from it; false after an allocator failure. */
fn spawn(cell: u32, seed: u32) -> bool {
  let rs = vec4<u32>(F_childRs_0, F_childRs_1, F_childRs_2, F_childRs_3);
  return w_spawn(T_CHILD, cell, seed, rs, F_childPosition, F_childNewPosition, F_childEggTimer) != 0u;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let gi = linear_workgroup(wid, nwg) * WG + lid;
  let h = o_object(gi);
  if (h == 0u) {
    return;
  }
  let here = o_get32(h, F_position);
  let there = o_get32(h, F_newPosition);
  if (here == there) {
    return;
  }
  o_set32(here, F_cellAgent, 0u);
  o_set32(there, F_cellAgent, h);
  o_set32(h, F_position, there);
  if (o_get32(h, F_eggTimer) > SPAWN_THRESHOLD) {
    w_seed(gi);
    if (!spawn(here, w_next(h))) {
      w_report();
      return;
    }
    o_set32(h, F_eggTimer, 0u);
  }
}
