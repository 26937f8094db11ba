// Body.updateMerge() on the GPU (apps/collision/body.ts): a winner X (successfulMerge)
// writes the merged body into its target B: mass = m_X + m_B, velocity = the
// mass-weighted mean, position = the mean, B.hasIncomingMerge = true. f32 arithmetic (the
// method computes in f64 and rounds at each store): mass and position come out the same
// (one f32 addition of two f32s, and a halving, are correctly rounded either way), the
// velocity within a few f32 roundings.
//
// Conflicts: each B has at most one winner, and a B that is written has no target, so it
// is neither a winner nor read by another winner (body.ts): the writes go to distinct
// bodies that no invocation reads in this pass; B's own invocation does nothing.
// Libraries: collision_lib.wgsl.

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let h = c_object(linear_workgroup(wid, nwg) * WG + lid);
  if (h == 0u || c_get8(h, F_successfulMerge) == 0u) {
    return;
  }
  let t = c_get32(h, F_mergeTarget);
  let m = c_getf(h, F_mass);
  let tm = c_getf(t, F_mass);
  let mass = m + tm;
  let vx = (c_getf(h, F_velX) * m + c_getf(t, F_velX) * tm) / mass;
  let vy = (c_getf(h, F_velY) * m + c_getf(t, F_velY) * tm) / mass;
  let px = (c_getf(h, F_posX) + c_getf(t, F_posX)) * 0.5;
  let py = (c_getf(h, F_posY) + c_getf(t, F_posY)) * 0.5;
  c_setf(t, F_mass, mass);
  c_setf(t, F_velX, vx);
  c_setf(t, F_velY, vy);
  c_setf(t, F_posX, px);
  c_setf(t, F_posY, py);
  c_set8(t, F_hasIncomingMerge, 1u);
}
