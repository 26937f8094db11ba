// Body.resolveMerge() on the GPU (apps/collision/body.ts): a body X with a target B that
// has no target itself wins (successfulMerge = true) unless another body O of the pass
// with O.mass > B.mass and O.mergeTarget == B is nearer to B than X (at equal distance:
// O before X in the tie order, c_before: the lower id, then the lower handle). Bodies
// without a target, or whose target has one, are left as they are (false, from
// initializeMerge). Writes its own successfulMerge only; reads positions, masses,
// mergeTarget and ids, which nobody writes in this pass. Distances in f32
// (collision_lib.wgsl "Floats"); an existence test over the set of bodies, so neither
// the order of the visit nor how the set is cut into parts matters.
//
// Mapping: as collision_prepare_merge.wgsl (one invocation per (list position, slot),
// the bodies staged WG/32 blocks at a time in workgroup memory, SPLIT parts of the list
// as z-slices, `reduce` combining the parts: X lost if it lost in any part). Only the
// bodies with a target scan (few after the first steps): a workgroup in which no
// invocation scans leaves before the loop, as a whole (the count of scanners is made
// uniform by workgroupUniformLoad).
// Libraries: collision_lib.wgsl.

override SPLIT: u32 = 1u;

@group(0) @binding(2) var<storage, read_write> partial: array<vec2<u32>>; // x: 1 if X lost in that part

var<workgroup> tile: array<vec3<f32>, WG>; // posX, posY, mass
var<workgroup> tile_t: array<u32, WG>; // mergeTarget
var<workgroup> tile_h: array<u32, WG>; // handle, 0: no body of the pass in that slot
var<workgroup> tile_id: array<u32, WG>; // id
var<workgroup> wg_scanners: atomic<u32>;
var<workgroup> wg_any: u32;

/** The target X's invocation scans for: B = X.mergeTarget if B has no target itself, else 0. */
fn r_target(h: u32) -> u32 {
  if (h == 0u) {
    return 0u;
  }
  let th = c_get32(h, F_mergeTarget);
  if (th == 0u || c_get32(th, F_mergeTarget) != 0u) {
    return 0u; // no target, or the target merges elsewhere this step
  }
  return th;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let wg = linear_workgroup(wid, nwg);
  // Whole workgroups past the end (2-D dispatch padding) leave together: uniform, no barrier skipped.
  if (wg * WG >= c_list_count() * 32u) {
    return;
  }
  let gi = wg * WG + lid;
  let h = c_object(gi);
  let th = r_target(h);
  var bx = 0.0;
  var by = 0.0;
  var bm = 0.0;
  var mine = 0.0;
  var my_id = 0u;
  if (th != 0u) {
    my_id = c_get32(h, F_id);
    bx = c_getf(th, F_posX);
    by = c_getf(th, F_posY);
    bm = c_getf(th, F_mass);
    mine = c_dist2(c_getf(h, F_posX), c_getf(h, F_posY), bx, by);
    atomicAdd(&wg_scanners, 1u);
  }
  workgroupBarrier();
  if (lid == 0u) {
    wg_any = atomicLoad(&wg_scanners);
  }
  if (workgroupUniformLoad(&wg_any) == 0u) {
    return; // nobody here has a target to win: the whole workgroup leaves
  }
  let part = wid.z;
  let jb0 = (part * c_list_count()) / SPLIT;
  let jb1 = ((part + 1u) * c_list_count()) / SPLIT;
  let tile_blocks = WG / 32u;
  var lost = false;
  for (var tb = jb0; tb < jb1; tb += tile_blocks) {
    let lj = tb + (lid >> 5u);
    var o = 0u;
    if (lj < jb1) {
      o = c_object_at(lj, lid & 31u);
    }
    var e = vec3<f32>(0.0, 0.0, 0.0);
    var ot = 0u;
    var oid = 0u;
    if (o != 0u) {
      e = vec3<f32>(c_getf(o, F_posX), c_getf(o, F_posY), c_getf(o, F_mass));
      ot = c_get32(o, F_mergeTarget);
      oid = c_get32(o, F_id);
    }
    tile[lid] = e;
    tile_t[lid] = ot;
    tile_h[lid] = o;
    tile_id[lid] = oid;
    workgroupBarrier();
    if (th != 0u && !lost) {
      for (var k = 0u; k < WG; k++) {
        let oh = tile_h[k];
        let t = tile[k];
        // Only heavier bodies targeting B (a NaN mass compares false, as in the method).
        if (oh != 0u && tile_t[k] == th && t.z > bm) {
          let d = c_dist2(t.x, t.y, bx, by);
          if (d < mine || (d == mine && c_before(tile_id[k], oh, my_id, h))) {
            lost = true;
            break;
          }
        }
      }
    }
    workgroupBarrier();
  }
  if (th == 0u) {
    return; // also every gi ≥ list_count·32, which would index the next part's entries
  }
  if (SPLIT > 1u) {
    partial[part * (c_list_count() * 32u) + gi] = vec2<u32>(select(0u, 1u, lost), 0u);
  } else {
    c_set8(h, F_successfulMerge, select(1u, 0u, lost));
  }
}

// SPLIT > 1: X won if it lost in no part.
@compute @workgroup_size(WG)
fn reduce(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let gi = linear_workgroup(wid, nwg) * WG + lid;
  let h = c_object(gi);
  if (r_target(h) == 0u) {
    return;
  }
  var lost = 0u;
  for (var p = 0u; p < SPLIT; p++) {
    lost = lost | partial[p * (c_list_count() * 32u) + gi].x;
  }
  c_set8(h, F_successfulMerge, select(1u, 0u, lost != 0u));
}
