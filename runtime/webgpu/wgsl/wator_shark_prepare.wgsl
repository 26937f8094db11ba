// Shark.prepare() on the GPU (apps/wa-tor/model.ts): eggTimer += 1, energy -= 1 (u32,
// wrapping as the u32 field); a shark with energy left asks for a neighbouring cell with
// a fish, else a free one (w_request_move); one without does not move (Shark.update
// deletes it). Libraries: wator_lib.wgsl, objects.wgsl, alloc.wgsl.

override F_position: u32; // Shark.position (ref)
override F_newPosition: u32; // Shark.newPosition (ref)
override F_eggTimer: u32; // Shark.eggTimer (u32)
override F_energy: u32; // Shark.energy (u32)

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let h = o_object(linear_workgroup(wid, nwg) * WG + lid);
  if (h == 0u) {
    return;
  }
  o_set32(h, F_eggTimer, o_get32(h, F_eggTimer) + 1u);
  let energy = o_get32(h, F_energy) - 1u;
  o_set32(h, F_energy, energy);
  if (energy != 0u) {
    w_request_move(h, F_position, F_newPosition, true);
  }
}
