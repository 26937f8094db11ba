// collision's merge passes on the GPU: what the five merge kernels (collision_*.wgsl)
// share. The rules, reads and writes of apps/collision/body.ts (initializeMerge,
// prepareMerge, resolveMerge, updateMerge, deleteMerged; the comment at its top gives the
// write-ownership argument), one invocation per (list position, slot) of the pass's block
// list; lanes whose iteration bit is clear do nothing. Declared in
// apps/collision/kernels.ts (WGSL section).
//
// The list: every kernel reads the pass's list start and count from the pass snapshot's
// lists buffer (binding 5, gpuLists: runtime/webgpu/gpu-snapshot.ts G4), never from
// Params, so that the runner runs a whole step after a GPU snapshot without reading the
// lists back (runner.ts: per-object kernels as game-of-life's; the split-reduce scans
// dispatched over an upper bound of blocks, runSplitOnGpuLists). Invocations past the
// list get object 0 and do nothing.
//
// Heap access: every heap word is atomic<u32> (deleteMerged appends alloc.wgsl, which
// needs that declaration; the other four use the same one). `hasIncomingMerge` and
// `successfulMerge` are 1-byte SOA arrays: four slots share a word that neighbouring
// invocations write at the same time, so a byte is written with atomicAnd (clear) then
// atomicOr (set) on its word. One invocation writes a given byte per pass (body.ts), so
// the two atomics of one store never race with another store of the same byte, and no
// invocation reads a byte that another writes in the same pass.
//
// Body has no subclasses (the runner refuses a class with subclasses), so deviceDo(Body)
// is the visited class's own block list, and all bodies share the field offsets below.
//
// Floats: WGSL has no f64. The methods decide merges with squared distances in f64; the
// kernels compute them in f32 (c_dist2) and compare with THRESHOLD_SQ rounded to f32, and
// updateMerge's mass-weighted velocity is computed in f32. The rules (nearest lighter body
// in range; nearest body targeting the target; ties to the lower id, then the lower
// handle: c_before) are the same,
// and do not depend on the order invocations run in; a distance within an f32 rounding of
// the threshold or of another distance may decide differently from the CPU. Positions
// already differ from the CPU's by computeForce's f32 sums, so the comparison with the
// TypeScript run is within the app's float tolerance (apps/collision/README.md).

override WG: u32 = 64u;
override F_posX: u32;
override F_posY: u32;
override F_velX: u32;
override F_velY: u32;
override F_mass: u32;
override F_mergeTarget: u32; // ref: u32 handle, 0 = null
override F_hasIncomingMerge: u32; // bool as u8
override F_successfulMerge: u32; // bool as u8
override F_id: u32; // u32: the body's index at the start, the tie rule's order (body.ts "Ties")

struct Params {
  list_start: u32, // unused: the list comes from `lists` (gpuLists, runtime/webgpu/gpu-snapshot.ts G4)
  list_count: u32, // unused, as list_start
  type_id: u32, // Body's type id
  p3: u32,
};

@group(0) @binding(0) var<storage, read_write> heap: array<atomic<u32>>;
@group(0) @binding(1) var<uniform> P: Params;
/** The pass snapshot's lists: [4t] count, [4t + 1] start of type t (gpu-snapshot.ts G4). */
@group(0) @binding(5) var<storage, read> lists: array<u32>;

/** Blocks in the pass's list (uniform: a read-only buffer). */
fn c_list_count() -> u32 {
  return lists[4u * P.type_id];
}

/** The object at list position li, slot `slot` (a handle), or 0: past the list or iteration bit clear. */
fn c_object_at(li: u32, slot: u32) -> u32 {
  if (li >= c_list_count()) {
    return 0u;
  }
  let bid = atomicLoad(&heap[BW_BLOCK_LIST + lists[4u * P.type_id + 1u] + li]);
  if ((atomicLoad(&heap[block_word(bid) + BLOCK_ITER_WORD]) & (1u << slot)) == 0u) {
    return 0u;
  }
  return (bid << SLOT_BITS) | slot;
}

/** The object invocation gi visits, or 0. */
fn c_object(gi: u32) -> u32 {
  return c_object_at(gi >> 5u, gi & 31u);
}

/** Buffer word of a 4-byte field at byte offset `off` (its SOA array) of object h. */
fn c_word(h: u32, off: u32) -> u32 {
  return block_word(h >> SLOT_BITS) + (off >> 2u) + (h & 31u);
}
fn c_getf(h: u32, off: u32) -> f32 {
  return bitcast<f32>(atomicLoad(&heap[c_word(h, off)]));
}
fn c_setf(h: u32, off: u32, v: f32) {
  atomicStore(&heap[c_word(h, off)], bitcast<u32>(v));
}
fn c_get32(h: u32, off: u32) -> u32 {
  return atomicLoad(&heap[c_word(h, off)]);
}
fn c_set32(h: u32, off: u32, v: u32) {
  atomicStore(&heap[c_word(h, off)], v);
}
/** A 1-byte field (SOA arrays are 16-byte aligned: layout.ts ARRAY_ALIGN). */
fn c_get8(h: u32, off: u32) -> u32 {
  let s = h & 31u;
  let w = block_word(h >> SLOT_BITS) + (off >> 2u) + (s >> 2u);
  return (atomicLoad(&heap[w]) >> (8u * (s & 3u))) & 0xffu;
}
fn c_set8(h: u32, off: u32, v: u32) {
  let s = h & 31u;
  let w = block_word(h >> SLOT_BITS) + (off >> 2u) + (s >> 2u);
  let sh = 8u * (s & 3u);
  atomicAnd(&heap[w], ~(0xffu << sh));
  atomicOr(&heap[w], (v & 0xffu) << sh);
}

/**
 * Body (id, h) comes before body (best_id, best) in the tie order of equal distances
 * (apps/collision/body.ts "Ties"): the lower id, at equal ids the lower handle. Ids do not
 * change when defragmentation moves bodies; handles do.
 */
fn c_before(id: u32, h: u32, best_id: u32, best: u32) -> bool {
  return id < best_id || (id == best_id && h < best);
}

/** Squared distance in f32, `(ax − bx)² + (ay − by)²`, the methods' formula (they compute it in f64). */
fn c_dist2(ax: f32, ay: f32, bx: f32, by: f32) -> f32 {
  let dx = ax - bx;
  let dy = ay - by;
  return dx * dx + dy * dy;
}
