// The pass snapshot on the GPU (runtime/webgpu/gpu-snapshot.ts): the block lists and
// iteration bitmaps that ThreadContext.snapshot() (runtime/thread.ts, S1–S3) writes on the
// host, made from the heap's GPU copy so that an allocating kernel does not force the
// heap to the host and back. Paper: "DynaSOAr: A Parallel Memory Allocator for
// Object-Oriented Programming on GPUs with Efficient Memory Access" (Springer & Masuhara,
// ECOOP 2019) §2.1: a do-all visits the objects that exist when it starts.
//
// Three dispatches, in one compute pass (WebGPU orders the storage writes of one
// dispatch before the next dispatch's reads):
//   count:  one invocation per block b: if b is allocated for concrete type t (the type
//           word names t and bit b of allocated[t] is set: H4), count[t] += 1 and
//           objects[t] += its live slots (allocation word without the type's high bits).
//   starts: one invocation: start[t] = Σ count[u] over u < t (type-id order, as the host's
//           concreteIds; abstract types count 0), cursor[t] = 0.
//   fill:   one invocation per block again: q = cursor[t]++ (atomic); block list
//           [start[t] + q] = b; iteration word := allocation word & ~high mask (S1).
// Within a type the list order is the order of the atomic increments, not ascending as on
// the host; no kernel depends on the order (a do-all's result may not: paper §2.1), and
// the rank tables sort (ranks.ts R1).
//
// snap (binding 1), words per type id t: [4t] count, [4t+1] start, [4t+2] cursor,
// [4t+3] objects; the host reads it back (lists and the rank check) and zeroes it before
// the next snapshot. The host snapshot's own writes (block list region, iteration words)
// are the same in content up to the list order.

override WG: u32 = 64u;

@group(0) @binding(0) var<storage, read_write> heap: array<u32>;
@group(0) @binding(1) var<storage, read_write> snap: array<atomic<u32>>;

/** The concrete type block b is allocated for, or NONE. */
fn listed_type(b: u32) -> u32 {
  let t = heap[block_word(b) + BLOCK_TYPE_WORD];
  if (t >= NUM_TYPES || BW_ALLOCATED_BM[t] == ALL_ONES) {
    return NONE;
  }
  if ((heap[BW_ALLOCATED_BM[t] + (b >> 5u)] & (1u << (b & 31u))) == 0u) {
    return NONE;
  }
  return t;
}

fn block_of(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
  return linear_workgroup(wid, nwg) * WG + lid;
}

@compute @workgroup_size(WG)
fn count(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let b = block_of(wid, nwg, lid);
  if (b >= NUM_BLOCKS) {
    return;
  }
  let t = listed_type(b);
  if (t == NONE) {
    return;
  }
  atomicAdd(&snap[4u * t], 1u);
  atomicAdd(&snap[4u * t + 3u], countOneBits(heap[block_word(b) + BLOCK_ALLOC_WORD] & ~TYPE_HIGH_MASK[t]));
}

@compute @workgroup_size(1)
fn starts() {
  var at = 0u;
  for (var t = 0u; t < NUM_TYPES; t++) {
    atomicStore(&snap[4u * t + 1u], at);
    atomicStore(&snap[4u * t + 2u], 0u);
    at += atomicLoad(&snap[4u * t]);
  }
}

@compute @workgroup_size(WG)
fn fill(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let b = block_of(wid, nwg, lid);
  if (b >= NUM_BLOCKS) {
    return;
  }
  let t = listed_type(b);
  if (t == NONE) {
    return;
  }
  let q = atomicAdd(&snap[4u * t + 2u], 1u);
  heap[BW_BLOCK_LIST + atomicLoad(&snap[4u * t + 1u]) + q] = b;
  let w = block_word(b);
  heap[w + BLOCK_ITER_WORD] = heap[w + BLOCK_ALLOC_WORD] & ~TYPE_HIGH_MASK[t];
}

struct ArgsParams {
  type_id: u32,
  wg: u32,
  max_dim: u32,
  slot: u32,
};
@group(0) @binding(2) var<uniform> A: ArgsParams;
@group(0) @binding(3) var<storage, read_write> indirect: array<u32>;

@compute @workgroup_size(1)
fn args() {
  let groups = (atomicLoad(&snap[4u * A.type_id]) * 32u + A.wg - 1u) / A.wg;
  let x = min(groups, A.max_dim);
  indirect[4u * A.slot] = x;
  indirect[4u * A.slot + 1u] = select(0u, (groups + x - 1u) / max(x, 1u), x > 0u);
  indirect[4u * A.slot + 2u] = 1u;
}
