// Body.resolveMerge() on the GPU (apps/collision/body.ts): a body X with a target B that
// has no target itself wins (successfulMerge = true) unless another body O of the pass
// with O.mass > B.mass and O.mergeTarget == B is nearer to B than X (at equal distance:
// O's handle lower than X's). Bodies without a target, or whose target has one, are left
// as they are (false, from initializeMerge). Writes its own successfulMerge only; reads
// positions, masses and mergeTarget, which nobody writes in this pass. Distances in f32
// (collision_lib.wgsl "Floats"); an existence test over the set of bodies, so the order
// of the visit does not matter.
//
// Only invocations whose body has a target scan (few: the bodies closer than the merge
// threshold to a lighter one), so there is no workgroup tiling: no barrier, each scanning
// invocation reads the other bodies' fields from the heap.
// Libraries: collision_lib.wgsl.

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let h = c_object(linear_workgroup(wid, nwg) * WG + lid);
  if (h == 0u) {
    return;
  }
  let th = c_get32(h, F_mergeTarget);
  if (th == 0u || c_get32(th, F_mergeTarget) != 0u) {
    return; // no target, or the target merges elsewhere this step
  }
  let bx = c_getf(th, F_posX);
  let by = c_getf(th, F_posY);
  let bm = c_getf(th, F_mass);
  let mine = c_dist2(c_getf(h, F_posX), c_getf(h, F_posY), bx, by);
  var won = true;
  for (var li = 0u; won && li < P.list_count; li++) {
    for (var s = 0u; s < 32u; s++) {
      let o = c_object_at(li, s);
      // Only heavier bodies can target B (a NaN mass compares false, as in the method).
      if (o == 0u || c_get32(o, F_mergeTarget) != th || !(c_getf(o, F_mass) > bm)) {
        continue;
      }
      let d = c_dist2(c_getf(o, F_posX), c_getf(o, F_posY), bx, by);
      if (d < mine || (d == mine && o < h)) {
        won = false;
        break;
      }
    }
  }
  c_set8(h, F_successfulMerge, select(0u, 1u, won));
}
