// Cell.decide() on the GPU (apps/wa-tor/model.ts): a cell whose own agent raised STAY
// grants it itself; otherwise, if some neighbours' agents asked for this cell, one draw
// from the cell's own stream picks one of them (uniform among the requesters in direction
// order) and sets that agent's newPosition. Reads the request flags and Cell.agent (nobody
// writes them in this pass); writes its own stream and newPosition of the one agent it
// grants (an agent asks one cell only, so no other cell writes that word).
// Libraries: wator_lib.wgsl, objects.wgsl, alloc.wgsl.

override F_fishNewPosition: u32; // Fish.newPosition (an inherited field's offset differs per concrete type)
override F_sharkNewPosition: u32; // Shark.newPosition

/** newPosition := cell on agent a (a Fish, else a Shark: the model has no third kind). */
fn grant(a: u32, cell: u32) {
  o_set32(a, select(F_sharkNewPosition, F_fishNewPosition, w_type(a) == T_FISH), cell);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let h = o_object(linear_workgroup(wid, nwg) * WG + lid);
  if (h == 0u) {
    return;
  }
  if (o_get8(h, F_cellReq_4) != 0u) {
    // The agent here found nowhere to go: it has priority and stays.
    grant(o_get32(h, F_cellAgent), h);
    return;
  }
  var candidates = 0u;
  var n = 0u;
  for (var d = 0u; d < 4u; d++) {
    if (o_get8(h, w_req_off(d)) != 0u) {
      candidates |= d << (3u * n);
      n += 1u;
    }
  }
  if (n == 0u) {
    return; // most cells: nobody asked
  }
  let chosen = (candidates >> (3u * (w_next(h) % n))) & 7u;
  grant(o_get32(o_get32(h, w_nb_off(chosen & 3u)), F_cellAgent), h);
}
