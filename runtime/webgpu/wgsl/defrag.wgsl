// Defragmentation on the heap's GPU copy (runtime/webgpu/gpu-defrag.ts): "CompactGpu:
// Massively Parallel Memory Defragmentation on GPUs" (ISMM 2019) §3 (copy) and §4 (pointer
// rewriting), with the host planning and reserving (runtime/defrag.ts F1). Four entry
// points, each its own dispatch:
//
//   gather:  one invocation per block b: plan[b·REC …] := b's header words (allocation,
//            iteration, type, generation) and, when REC > 4 (checked heaps), the block's
//            per-slot generation words (gens[type] = their word offset in the block, 0:
//            none; TYPE_SLOTS[type] of them, the rest 0). The host reads it back instead
//            of the heap (G1 in gpu-defrag.ts).
//   scatter: one invocation per record i of plan[4 …] ([block, its type at gather, REC
//            words]): the inverse of gather for the blocks whose words the host changed
//            (G3); the generation words are those of the type at gather (a block that
//            defrag retired is free now, but its slots' generations were bumped).
//   copy:    one invocation per (pair, SOA array) of plan[4 …], a pair being [source
//            block, source slots, target block, reserved slots] (equal popcounts): the
//            k-th lowest source slot's element goes to the k-th lowest reserved slot
//            (defrag-lanes.ts copyLanes' order). plan[0] = pairs, plan[1] = type id; the
//            arrays are the prelude's ZERO_PLAN of that type. No two invocations of one
//            dispatch write the same word (G2).
//   rewrite: one invocation per (entry, slot) of plan[4 …], an entry being [buffer word
//            of a reference column of a block, live slots]: a handle whose block has a
//            forwarding slab (fwd[block] ≠ NONE) and whose entry is not 0 becomes that
//            entry (defrag-lanes.ts rewriteLanes). fwd = RECORD_OF (NUM_BLOCKS words)
//            then the slabs (32 words each). plan[0] = entries.

override WG: u32 = 64u;
override REC: u32 = 4u;

@group(0) @binding(0) var<storage, read_write> heap: array<u32>;
@group(0) @binding(1) var<storage, read_write> plan: array<u32>;
@group(0) @binding(2) var<storage, read> aux: array<u32>;

fn invocation(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
  return linear_workgroup(wid, nwg) * WG + lid;
}

/** Word offset in the block and count of block-type t's generation words (0, 0: none). */
fn gen_span(t: u32) -> vec2<u32> {
  if (REC <= 4u || t >= NUM_TYPES) {
    return vec2<u32>(0u, 0u);
  }
  let g = aux[t];
  if (g == 0u) {
    return vec2<u32>(0u, 0u);
  }
  return vec2<u32>(g, TYPE_SLOTS[t]);
}

@compute @workgroup_size(WG)
fn gather(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let b = invocation(wid, nwg, lid);
  if (b >= NUM_BLOCKS) {
    return;
  }
  let w = block_word(b);
  let o = b * REC;
  for (var k = 0u; k < 4u; k++) {
    plan[o + k] = heap[w + k];
  }
  if (REC > 4u) {
    let g = gen_span(heap[w + BLOCK_TYPE_WORD]);
    for (var k = 0u; k < REC - 4u; k++) {
      var v = 0u;
      if (k < g.y) {
        v = heap[w + g.x + k];
      }
      plan[o + 4u + k] = v;
    }
  }
}

@compute @workgroup_size(WG)
fn scatter(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let i = invocation(wid, nwg, lid);
  if (i >= plan[0]) {
    return;
  }
  let r = 4u + i * (REC + 2u);
  let w = block_word(plan[r]);
  for (var k = 0u; k < 4u; k++) {
    heap[w + k] = plan[r + 2u + k];
  }
  let g = gen_span(plan[r + 1u]);
  for (var k = 0u; k < g.y; k++) {
    heap[w + g.x + k] = plan[r + 6u + k];
  }
}

/** Copy element s of the SOA array at buffer word `sw` to element d of the one at `dw` (eb bytes each). */
fn copy_element(sw: u32, s: u32, dw: u32, d: u32, eb: u32) {
  if (eb == 4u) {
    heap[dw + d] = heap[sw + s];
  } else if (eb == 8u) {
    heap[dw + 2u * d] = heap[sw + 2u * s];
    heap[dw + 2u * d + 1u] = heap[sw + 2u * s + 1u];
  } else {
    let mask = select(0xffffu, 0xffu, eb == 1u);
    let sb = s * eb;
    let db = d * eb;
    let v = (heap[sw + (sb >> 2u)] >> ((sb & 3u) * 8u)) & mask;
    let w = dw + (db >> 2u);
    let sh = (db & 3u) * 8u;
    heap[w] = (heap[w] & ~(mask << sh)) | (v << sh);
  }
}

@compute @workgroup_size(WG)
fn copy(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let i = invocation(wid, nwg, lid);
  let t = plan[1];
  let c0 = ZERO_START[t];
  let nc = ZERO_START[t + 1u] - c0;
  if (nc == 0u || i >= plan[0] * nc) {
    return;
  }
  let p = i / nc;
  let c = c0 + i % nc;
  let off = ZERO_PLAN[2u * c] >> 2u;
  let eb = ZERO_PLAN[2u * c + 1u];
  let e = 4u + 4u * p;
  let sw = block_word(plan[e]) + off;
  var sm = plan[e + 1u];
  let dw = block_word(plan[e + 2u]) + off;
  var dm = plan[e + 3u];
  loop {
    if (dm == 0u || sm == 0u) {
      break;
    }
    let d = countTrailingZeros(dm);
    dm &= dm - 1u;
    let s = countTrailingZeros(sm);
    sm &= sm - 1u;
    copy_element(sw, s, dw, d, eb);
  }
}

@compute @workgroup_size(WG)
fn rewrite(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let i = invocation(wid, nwg, lid);
  if (i >= plan[0] * 32u) {
    return;
  }
  let e = 4u + 2u * (i >> 5u);
  let s = i & 31u;
  if ((plan[e + 1u] & (1u << s)) == 0u) {
    return;
  }
  let w = plan[e] + s;
  let h = heap[w];
  if (h == 0u) {
    return;
  }
  let hb = h >> SLOT_BITS;
  if (hb >= NUM_BLOCKS) {
    return;
  }
  let r = aux[hb];
  if (r == NONE) {
    return;
  }
  let nh = aux[NUM_BLOCKS + 32u * r + (h & 31u)];
  if (nh != 0u) {
    heap[w] = nh;
  }
}
