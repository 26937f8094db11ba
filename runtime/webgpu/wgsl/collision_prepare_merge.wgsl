// Body.prepareMerge() on the GPU (apps/collision/body.ts): mergeTarget = the nearest
// body O of the pass with O.mass < mass and squared distance d < THRESHOLD_SQ (ties: the
// lower id, then the lower handle: c_before); left null (initializeMerge) when there is
// none. Writes its own mergeTarget only; reads positions, masses and ids, which nobody
// writes in this pass.
// Distances in f32 (collision_lib.wgsl "Floats").
//
// The rule is a minimum over the set of bodies under a total order (d, id, handle), so
// the order of the visit does not matter. Mapping as nbody_compute_force.wgsl: one
// invocation per (list position, slot); the other bodies are staged WG/32 blocks at a
// time in workgroup memory (every invocation of a workgroup loads one slot and takes
// part in the barriers, also those that visit no body).
//
// Tunables: WG (a multiple of 32), SPLIT: the list is cut into SPLIT contiguous parts,
// one per z-slice of the dispatch (occupancy with few bodies, as computeForce's); with
// SPLIT > 1 each part writes its (best handle, best d) to binding 2 and `reduce` takes
// the minimum over the parts under the same order (reading the candidates' ids). A minimum under a total order does
// not depend on how the set is cut, so every SPLIT gives the same mergeTarget.
// Libraries: collision_lib.wgsl.

override THRESHOLD_SQ: f32;
override SPLIT: u32 = 1u;

@group(0) @binding(2) var<storage, read_write> partial: array<vec2<u32>>; // (best handle, bits of best d) per part and invocation

var<workgroup> tile: array<vec3<f32>, WG>; // posX, posY, mass
var<workgroup> tile_h: array<u32, WG>; // handle, 0: no body of the pass in that slot
var<workgroup> tile_id: array<u32, WG>; // id

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let wg = linear_workgroup(wid, nwg);
  // Whole workgroups past the end (2-D dispatch padding) leave together: uniform, no barrier skipped.
  if (wg * WG >= c_list_count() * 32u) {
    return;
  }
  let gi = wg * WG + lid;
  let h = c_object(gi);
  var px = 0.0;
  var py = 0.0;
  var m = 0.0;
  if (h != 0u) {
    px = c_getf(h, F_posX);
    py = c_getf(h, F_posY);
    m = c_getf(h, F_mass);
  }
  var best = 0u;
  var best_id = 0u;
  var best_d = THRESHOLD_SQ; // d < best_d then implies d < THRESHOLD_SQ
  let part = wid.z;
  let jb0 = (part * c_list_count()) / SPLIT;
  let jb1 = ((part + 1u) * c_list_count()) / SPLIT;
  let tile_blocks = WG / 32u;
  for (var tb = jb0; tb < jb1; tb += tile_blocks) {
    let lj = tb + (lid >> 5u);
    var o = 0u;
    if (lj < jb1) {
      o = c_object_at(lj, lid & 31u);
    }
    var e = vec3<f32>(0.0, 0.0, 0.0);
    var oid = 0u;
    if (o != 0u) {
      e = vec3<f32>(c_getf(o, F_posX), c_getf(o, F_posY), c_getf(o, F_mass));
      oid = c_get32(o, F_id);
    }
    tile[lid] = e;
    tile_h[lid] = o;
    tile_id[lid] = oid;
    workgroupBarrier();
    if (h != 0u) {
      for (var k = 0u; k < WG; k++) {
        let oh = tile_h[k];
        let t = tile[k];
        // Lighter bodies only (so never this one); a NaN mass compares false, as in the method.
        if (oh != 0u && t.z < m) {
          let d = c_dist2(px, py, t.x, t.y);
          // An exact tie counts only once a body is chosen (best_d = THRESHOLD_SQ before: never taken).
          if (d < best_d || (d == best_d && best != 0u && c_before(tile_id[k], oh, best_id, best))) {
            best = oh;
            best_id = tile_id[k];
            best_d = d;
          }
        }
      }
    }
    workgroupBarrier();
  }
  if (h == 0u) {
    return; // also every gi ≥ list_count·32, which would index the next part's entries
  }
  if (SPLIT > 1u) {
    partial[part * (c_list_count() * 32u) + gi] = vec2<u32>(best, bitcast<u32>(best_d));
  } else if (best != 0u) {
    c_set32(h, F_mergeTarget, best);
  }
}

// SPLIT > 1: mergeTarget = the minimum over the parts' (d, handle), as `main` takes it.
@compute @workgroup_size(WG)
fn reduce(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let gi = linear_workgroup(wid, nwg) * WG + lid;
  let h = c_object(gi);
  if (h == 0u) {
    return;
  }
  var best = 0u;
  var best_id = 0u;
  var best_d = THRESHOLD_SQ;
  for (var p = 0u; p < SPLIT; p++) {
    let e = partial[p * (c_list_count() * 32u) + gi];
    if (e.x == 0u) {
      continue; // no candidate in that part
    }
    let d = bitcast<f32>(e.y);
    let id = c_get32(e.x, F_id);
    if (d < best_d || (d == best_d && best != 0u && c_before(id, e.x, best_id, best))) {
      best = e.x;
      best_id = id;
      best_d = d;
    }
  }
  if (best != 0u) {
    c_set32(h, F_mergeTarget, best);
  }
}
