// Body.computeForce (apps/nbody/body.ts) on the GPU.
//
// Semantics kept from the TypeScript method: for every Body B of the pass (block list R
// of the pass, iteration bitmaps), force(B) = sum over every other Body O of the pass,
// visited in list order and, within a block, in ascending slot order (what deviceDo
// inside a do-all visits), of
//     dx = O.pos - B.pos, dist = |dx|, f = G·B.mass·O.mass / (dist² + DAMPENING),
//     force += f·dx / dist
// Differences, all within the tolerance of cli/check.ts: the sums are f32
// (the TypeScript method sums in float64 and rounds once), dist² is dx²+dy² (not
// sqrt(.)²), and /dist is ·inverseSqrt(dist²).
//
// Mapping: one invocation per (list position, slot): gi = position·32 + slot, so a block
// is one 32-lane virtual warp as on the CPU; lanes whose iteration bit is clear (holes,
// slots ≥ N_T) only help load tiles. The j loop walks the list in tiles of WG/32 blocks
// staged in workgroup memory, and its inner loop is unrolled four times without a branch:
// a hole is staged as a body far away (1e18, 1e18) without mass, whose term is exactly
// +0, and the body's own term is dropped by a select (a tile holds a multiple of 32
// entries). Measured on the H100, 20 000 × 3 000: 1.10 s against 1.34 s for the
// branching loop, 1.08–1.11 s unrolled eight times, 1.17 s twice (docs/webgpu.md).
//
// The list: start and count of the visited class's blocks come from the pass snapshot's
// lists buffer (binding 5, runtime/webgpu/gpu-snapshot.ts G4; `gpuLists`), not from Params,
// in `main` and `reduce` alike, so that the runner can run it right after a GPU snapshot
// without reading the lists back (runner.ts runSplitOnGpuLists: the dispatch covers an
// upper bound of blocks; invocations past the list return at once). `partial` is indexed
// with the count read here (the same in both entry points).
//
// Tunables (override): WG (workgroup size, a multiple of 32), SPLIT (the j range is cut
// into SPLIT contiguous parts, one per z-slice of the dispatch, for occupancy with few
// bodies; SPLIT > 1 writes partial sums and the `reduce` entry point adds them in part
// order, so SPLIT = 1 reproduces the sequential order exactly).

override WG: u32 = 128u;
override SPLIT: u32 = 1u;
override G_CONST: f32 = 6.673e-11;
override DAMPENING: f32 = 0.05;
override F_posX: u32;
override F_posY: u32;
override F_mass: u32;
override F_forceX: u32;
override F_forceY: u32;

struct Params {
  list_start: u32, // unused: the list comes from `lists` (gpuLists, runtime/webgpu/gpu-snapshot.ts G4)
  list_count: u32, // unused, as list_start
  type_id: u32, // the visited class's type id
  p3: u32,
};

@group(0) @binding(0) var<storage, read_write> heap: array<u32>;
@group(0) @binding(1) var<uniform> P: Params;
@group(0) @binding(2) var<storage, read_write> partial: array<vec2<f32>>;
/** The pass snapshot's lists: [4t] count, [4t + 1] start of type t (gpu-snapshot.ts G4). */
@group(0) @binding(5) var<storage, read> lists: array<u32>;

var<workgroup> tile: array<vec4<f32>, WG>; // posX, posY, mass, 1.0 if the slot holds a Body of the pass

fn field(bw: u32, off: u32, slot: u32) -> u32 {
  return bw + (off >> 2u) + slot;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let list_count = lists[4u * P.type_id];
  let list_start = lists[4u * P.type_id + 1u];
  let total = list_count * 32u;
  let wg = linear_workgroup(wid, nwg);
  // Whole workgroups past the end (2-D dispatch padding) leave together: uniform, no barrier skipped.
  if (wg * WG >= total) {
    return;
  }
  let gi = wg * WG + lid;
  let li = gi >> 5u;
  let slot = gi & 31u;
  var mine = false;
  var bw = 0u;
  var px = 0.0;
  var py = 0.0;
  var gm = 0.0;
  if (li < list_count) {
    let bid = heap[BW_BLOCK_LIST + list_start + li];
    bw = block_word(bid);
    if ((heap[bw + BLOCK_ITER_WORD] & (1u << slot)) != 0u) {
      mine = true;
      px = bitcast<f32>(heap[field(bw, F_posX, slot)]);
      py = bitcast<f32>(heap[field(bw, F_posY, slot)]);
      gm = G_CONST * bitcast<f32>(heap[field(bw, F_mass, slot)]);
    }
  }
  let part = wid.z;
  let jb0 = (part * list_count) / SPLIT;
  let jb1 = ((part + 1u) * list_count) / SPLIT;
  let tile_blocks = WG / 32u;
  var fx = 0.0;
  var fy = 0.0;
  for (var tb = jb0; tb < jb1; tb += tile_blocks) {
    // Stage WG/32 blocks: lane lid loads slot lid%32 of block tb + lid/32.
    let lj = tb + (lid >> 5u);
    let ls = lid & 31u;
    var e = vec4<f32>(1e18, 1e18, 0.0, 0.0); // a hole: far away, no mass: adds +0 exactly
    if (lj < jb1) {
      let obw = block_word(heap[BW_BLOCK_LIST + list_start + lj]);
      if ((heap[obw + BLOCK_ITER_WORD] & (1u << ls)) != 0u) {
        e = vec4<f32>(bitcast<f32>(heap[field(obw, F_posX, ls)]), bitcast<f32>(heap[field(obw, F_posY, ls)]), bitcast<f32>(heap[field(obw, F_mass, ls)]), 1.0);
      }
    }
    tile[lid] = e;
    workgroupBarrier();
    let n = min(WG, (jb1 - tb) * 32u);
    let first = tb * 32u; // gi of tile entry 0
    for (var k = 0u; k < n; k += 4u) {
        {
          let o = tile[k + 0u];
          let dx = o.x - px;
          let dy = o.y - py;
          let d2 = dx * dx + dy * dy;
          let inv = inverseSqrt(d2);
          let f = gm * o.z / (d2 + DAMPENING);
          let self_ = first + k + 0u == gi;
          fx += select(f * dx * inv, 0.0, self_);
          fy += select(f * dy * inv, 0.0, self_);
        }
        {
          let o = tile[k + 1u];
          let dx = o.x - px;
          let dy = o.y - py;
          let d2 = dx * dx + dy * dy;
          let inv = inverseSqrt(d2);
          let f = gm * o.z / (d2 + DAMPENING);
          let self_ = first + k + 1u == gi;
          fx += select(f * dx * inv, 0.0, self_);
          fy += select(f * dy * inv, 0.0, self_);
        }
        {
          let o = tile[k + 2u];
          let dx = o.x - px;
          let dy = o.y - py;
          let d2 = dx * dx + dy * dy;
          let inv = inverseSqrt(d2);
          let f = gm * o.z / (d2 + DAMPENING);
          let self_ = first + k + 2u == gi;
          fx += select(f * dx * inv, 0.0, self_);
          fy += select(f * dy * inv, 0.0, self_);
        }
        {
          let o = tile[k + 3u];
          let dx = o.x - px;
          let dy = o.y - py;
          let d2 = dx * dx + dy * dy;
          let inv = inverseSqrt(d2);
          let f = gm * o.z / (d2 + DAMPENING);
          let self_ = first + k + 3u == gi;
          fx += select(f * dx * inv, 0.0, self_);
          fy += select(f * dy * inv, 0.0, self_);
        }
    }
    workgroupBarrier();
  }
  if (mine) {
    if (SPLIT == 1u) {
      heap[field(bw, F_forceX, slot)] = bitcast<u32>(fx);
      heap[field(bw, F_forceY, slot)] = bitcast<u32>(fy);
    } else {
      partial[part * total + gi] = vec2<f32>(fx, fy);
    }
  }
}

// SPLIT > 1: force = ((0 + part 0) + part 1) + … , written to the Body's fields.
@compute @workgroup_size(WG)
fn reduce(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let list_count = lists[4u * P.type_id];
  let total = list_count * 32u;
  let gi = linear_workgroup(wid, nwg) * WG + lid;
  let li = gi >> 5u;
  let slot = gi & 31u;
  if (li >= list_count) {
    return;
  }
  let bw = block_word(heap[BW_BLOCK_LIST + lists[4u * P.type_id + 1u] + li]);
  if ((heap[bw + BLOCK_ITER_WORD] & (1u << slot)) == 0u) {
    return;
  }
  var s = vec2<f32>(0.0, 0.0);
  for (var p = 0u; p < SPLIT; p++) {
    s += partial[p * total + gi];
  }
  heap[field(bw, F_forceX, slot)] = bitcast<u32>(s.x);
  heap[field(bw, F_forceY, slot)] = bitcast<u32>(s.y);
}
