// Shark.update() on the GPU (apps/wa-tor/model.ts): a shark without energy leaves its
// cell and deletes itself; one granted another cell eats the Fish there (energy +
// ENERGY_BOOST, the fish deleted), moves, and when its egg timer is past SPAWN_THRESHOLD
// leaves a new Shark on the cell it left (spawnShark) and resets the timer. Creation and
// deletion through alloc.wgsl (a_allocate, a_free); a failure goes to the status buffer
// (w_report) and the invocation stops.
// Writes: its own fields, the cell it leaves (nobody was granted it: a shark stood there)
// and the cell it was granted (only it enters; only it reads that cell's agent, the prey,
// which only it deletes). Libraries: wator_lib.wgsl, objects.wgsl, alloc.wgsl.

override F_position: u32; // Shark.position (ref)
override F_newPosition: u32; // Shark.newPosition (ref)
override F_eggTimer: u32; // Shark.eggTimer (u32)
override F_energy: u32; // Shark.energy (u32)
override T_CHILD: u32; // type id of Shark (the child's class)
override F_childRs_0: u32; // the child's randomState[0..4]
override F_childRs_1: u32;
override F_childRs_2: u32;
override F_childRs_3: u32;
override F_childPosition: u32;
override F_childNewPosition: u32;
override F_childEggTimer: u32;
override F_childEnergy: u32;

/** spawnShark(cell, seed): a new Shark on `cell`, linked from it, with ENERGY_START; false after an allocator failure. */
fn spawn(cell: u32, seed: u32) -> bool {
  let rs = vec4<u32>(F_childRs_0, F_childRs_1, F_childRs_2, F_childRs_3);
  let a = w_spawn(T_CHILD, cell, seed, rs, F_childPosition, F_childNewPosition, F_childEggTimer);
  if (a == 0u) {
    return false;
  }
  o_set32(a, F_childEnergy, ENERGY_START);
  return true;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let gi = linear_workgroup(wid, nwg) * WG + lid;
  let h = o_object(gi);
  if (h == 0u) {
    return;
  }
  w_seed(gi);
  let here = o_get32(h, F_position);
  var energy = o_get32(h, F_energy);
  if (energy == 0u) {
    o_set32(here, F_cellAgent, 0u);
    a_free(h);
    w_report();
    return;
  }
  let there = o_get32(h, F_newPosition);
  if (here == there) {
    return;
  }
  let prey = o_get32(there, F_cellAgent);
  if (prey != 0u && w_type(prey) == T_FISH) {
    energy += ENERGY_BOOST;
    o_set32(h, F_energy, energy);
    a_free(prey); // the move below overwrites the cell's agent
    if (a_status != 0u) {
      w_report();
      return;
    }
  }
  o_set32(here, F_cellAgent, 0u);
  o_set32(there, F_cellAgent, h);
  o_set32(h, F_position, there);
  if (o_get32(h, F_eggTimer) > SPAWN_THRESHOLD) {
    if (!spawn(here, w_next(h))) {
      w_report();
      return;
    }
    o_set32(h, F_eggTimer, 0u);
  }
}
