// Device-side DynaSOAr allocator on the heap's own 32-bit bitmaps (paper §3 Alg. 1, 2;
// §4.1 Alg. 3, 4; §4.2 Alg. 6; §5.2 Alg. 7), a line-by-line port of runtime/bitmap.ts
// and runtime/allocator.ts onto atomic<u32>. A library: a kernel that allocates declares
//     @group(0) @binding(0) var<storage, read_write> heap: array<atomic<u32>>;
// and appends this file (after the generated prelude). Every heap word is accessed
// atomically, object fields too (heap_store / heap_load below).
//
// Kept from the CPU allocator: the block state machine (FREE → ACTIVE ⇄ FULL → FREE), the
// responsibilities of the thread whose atomic changed a container (SET-FIRST sets the
// upper bit, CLEAR-LAST clears it), (D1) a reservation in a block whose type changed is
// rolled back and the allocation continues, (D2) invalidation is tied to the block's
// generation, read while the releasing invocation still pins the block.
//
// GPU-specific, and why:
//  * No recursion in WGSL: the upward propagation in the hierarchical bitmaps is a loop.
//  * No unbounded spinning: every retry loop stops after SPIN_LIMIT iterations and sets
//    STATUS_SPIN_CAP in the invocation's status (a_status); the caller reports it
//    through its status buffer and the host raises GpuHeapError. A full heap sets
//    STATUS_HEAP_FULL (the CPU side's HeapExhaustedError), a bad free BAD_FREE / DOUBLE_FREE.
//    After a failure the invocation must stop touching the heap.
//  * WGSL atomics are relaxed and WebGPU has no device-scope fence, so the order
//    "type, generation, then open the slots" of initialize_block (the paper's
//    __threadfence) is not guaranteed by the language. What we rely on instead (P1):
//    an atomic read-modify-write whose old value the invocation tests before its next
//    heap access has been performed at the device's coherence point (NVIDIA/AMD L2,
//    SwiftShader's locked x86 instructions) before that access is issued: the test
//    needs the value back. Plain atomicStore, and an RMW whose result is unused (which
//    compilers turn into a fire-and-forget reduction), give no such order: on an H100
//    two of them to words in different L2 slices can land in either order. So every
//    word that publishes a block state to other invocations is written by an RMW whose
//    old value is checked against what the state machine says it must be (STATUS_BAD_BLOCK
//    otherwise), in this order:
//      retire (a_release, EMPTY): iteration word, type := FREE, then the free bit;
//      initialise (a_new_block): type := t, iteration word, generation + 1, then open the
//      slots, then the allocated and active bits.
//    An invocation that finds the block through a bit, or reserves one of its slots, and
//    then reads the type word therefore reads the type of that state. Without it a
//    retiring invocation's `type := FREE` could land after the next owner's `type := t`
//    (the block then serves objects under type FREE: STATUS_BAD_FREE for every later
//    free and allocation in it — seen on an H100 in wa-tor at 2048 × 2560). The checks
//    double as corruption detectors. validateHeap() after every GPU allocation test, and
//    wa-tor's default size on the H100 (docs/webgpu.md), are the checks.
//  * A waiting invocation (bm_set on a bit another invocation has yet to clear) needs the
//    other one to progress. Independent thread scheduling (NVIDIA Volta and later) or one
//    invocation per workgroup guarantees that; lock-step SIMD lanes may not, and then the
//    wait ends at SPIN_LIMIT with STATUS_SPIN_CAP rather than hanging.
//
// Used by game-of-life's kernels (gol_*.wgsl). What orders their allocations and frees
// against the other invocations of a pass and against later passes (dispatch boundaries;
// no object published within a pass; what a reordered block initialisation would cost:
// a stale type read ends in D1's rollback, a BAD_FREE status or nothing) is written down
// in docs/webgpu.md, "Memory model: what orders what"; test/webgpu-gol.test.ts exercises it.

const STATUS_HEAP_FULL: u32 = 1u;
const STATUS_SPIN_CAP: u32 = 2u;
const STATUS_BAD_FREE: u32 = 4u;
const STATUS_DOUBLE_FREE: u32 = 8u;
const STATUS_BAD_BLOCK: u32 = 16u;

// 2^22: an invocation may wait (bm_set) on a bit that an invocation of another workgroup
// has yet to clear. On SwiftShader workgroups are CPU threads the OS may deschedule, and
// 65 536 spins (a few ms there) ran out on loaded CI machines, in hand-written and in
// generated kernels alike; on an H100 2^22 spins are still well under a second, so a
// real livelock ends in STATUS_SPIN_CAP (GpuHeapError) instead of a hang.
override SPIN_LIMIT: u32 = 4194304u;

var<private> a_status: u32 = 0u;
/** Rotation seed (§4.2), set per invocation by the kernel, advanced on retries. */
var<private> a_seed: u32 = 0u;
/** Set by a_reserve: the reservation filled the block. */
var<private> a_full: bool = false;
/** Per type: the block this invocation allocated in last (a hint, re-checked on use). */
var<private> a_hint: array<u32, NUM_TYPES>;

fn a_fail(code: u32) {
  a_status = a_status | code;
}

fn heap_load(w: u32) -> u32 {
  return atomicLoad(&heap[w]);
}
fn heap_store(w: u32, v: u32) {
  atomicStore(&heap[w], v);
}

/** Index of a set bit of x, searching from bit `start` upwards and wrapping (bits.ts ffsFrom); -1 for 0. */
fn ffs_from(x: u32, start: u32) -> i32 {
  if (x == 0u) {
    return -1;
  }
  let s = start & 31u;
  let high = x & (ALL_ONES << s);
  if (high != 0u) {
    return i32(firstTrailingBit(high));
  }
  return i32(firstTrailingBit(x));
}

// ------------------------------------------------------------ hierarchical bitmap (bitmap.ts)

fn bm_word(bm: u32, level: u32, pos: u32) -> u32 {
  return bm + BM_LEVEL_OFF[level] + (pos >> 5u);
}

/** Set bit `pos0` of level `level0` (0 → 1), waiting (bounded) while it is 1; propagate SET-FIRST upwards. */
fn bm_set_from(bm: u32, level0: u32, pos0: u32) -> bool {
  var level = level0;
  var pos = pos0;
  var spins = 0u;
  loop {
    let mask = 1u << (pos & 31u);
    let prev = atomicOr(&heap[bm_word(bm, level, pos)], mask);
    if ((prev & mask) == 0u) {
      if (prev == 0u && level < BM_TOP) {
        level += 1u;
        pos = pos >> 5u;
        spins = 0u;
        continue;
      }
      return true;
    }
    // Already set: a concurrent clear of this bit has not happened yet (Alg. 3 l. 6).
    spins += 1u;
    if (spins >= SPIN_LIMIT) {
      a_fail(STATUS_SPIN_CAP);
      return false;
    }
  }
}

fn bm_set(bm: u32, pos: u32) -> bool {
  return bm_set_from(bm, 0u, pos);
}

/** Clear bit `pos0` of level `level0` (1 → 0), waiting (bounded) while it is 0; propagate CLEAR-LAST upwards. */
fn bm_clear_from(bm: u32, level0: u32, pos0: u32) -> bool {
  var level = level0;
  var pos = pos0;
  var spins = 0u;
  loop {
    let mask = 1u << (pos & 31u);
    let prev = atomicAnd(&heap[bm_word(bm, level, pos)], ~mask);
    if ((prev & mask) != 0u) {
      if (prev == mask && level < BM_TOP) {
        level += 1u;
        pos = pos >> 5u;
        spins = 0u;
        continue;
      }
      return true;
    }
    spins += 1u;
    if (spins >= SPIN_LIMIT) {
      a_fail(STATUS_SPIN_CAP);
      return false;
    }
  }
}

fn bm_clear(bm: u32, pos: u32) -> bool {
  return bm_clear_from(bm, 0u, pos);
}

/** Clear the bit if it is set; whether this call changed it. */
fn bm_try_clear(bm: u32, pos: u32) -> bool {
  let mask = 1u << (pos & 31u);
  let prev = atomicAnd(&heap[bm_word(bm, 0u, pos)], ~mask);
  if ((prev & mask) == 0u) {
    return false;
  }
  if (prev == mask && BM_TOP > 0u) {
    bm_clear_from(bm, 1u, pos >> 5u);
  }
  return true;
}

/** Some set bit, top-down with rotation (Alg. 4); NONE if a level shows none (may be spurious, B3). */
fn bm_try_find_set(bm: u32, seed: u32) -> u32 {
  var pos = 0u;
  var level = BM_TOP;
  loop {
    let word = atomicLoad(&heap[bm + BM_LEVEL_OFF[level] + pos]);
    let bit = ffs_from(word, (seed >> (level * 5u)) + level);
    if (bit < 0) {
      return NONE;
    }
    pos = pos * 32u + u32(bit);
    if (level == 0u) {
      return pos;
    }
    level -= 1u;
  }
}

/** Some set bit by a scan of level 0 (exact when quiescent), or NONE. Bounded by the level's words. */
fn bm_scan_find_set(bm: u32, seed: u32) -> u32 {
  let n = BM_L0_WORDS;
  let start = seed % n;
  for (var k = 0u; k < n; k++) {
    var c = start + k;
    if (c >= n) {
      c -= n;
    }
    let word = atomicLoad(&heap[bm + c]);
    if (word != 0u) {
      return c * 32u + u32(ffs_from(word, seed));
    }
  }
  return NONE;
}

/** Find a set bit, clear it, return it; NONE if a full scan found none (or on failure: check a_status). */
fn bm_find_and_clear(bm: u32, seed: u32) -> u32 {
  for (var attempt = 1u; attempt <= SPIN_LIMIT; attempt++) {
    var pos = bm_try_find_set(bm, seed + attempt);
    if (pos == NONE) {
      pos = bm_scan_find_set(bm, seed + attempt);
    }
    if (pos == NONE) {
      return NONE;
    }
    if (bm_try_clear(bm, pos)) {
      return pos;
    }
  }
  a_fail(STATUS_SPIN_CAP);
  return NONE;
}

// ------------------------------------------------------------ allocator (allocator.ts)

/** Take a free block for type t and initialise it (Alg. 1 l. 4–7); 0 on failure. */
fn a_new_block(t: u32) -> u32 {
  let bid = bm_find_and_clear(BW_FREE_BM, a_seed);
  if (bid == NONE) {
    if (a_status != 0u) {
      return 0u;
    }
    // No free block. An active block of this type may have appeared meanwhile.
    let other = bm_scan_find_set(BW_ACTIVE_BM[t], a_seed);
    if (other != NONE) {
      return other;
    }
    a_fail(STATUS_HEAP_FULL);
    return 0u;
  }
  let w = block_word(bid);
  // initialize_block: type, iteration bitmap, generation, the allocated and active bits,
  // then open the slots (the CPU core's order, wasm/src/alloc/core.rs D4: no invalidation
  // can own a block before its bits are set); each an RMW whose old value is tested before
  // the next (P1), the values a free block has (H3).
  if (atomicExchange(&heap[w + BLOCK_TYPE_WORD], t) != FREE_TYPE) {
    a_fail(STATUS_BAD_BLOCK);
    return 0u;
  }
  if (atomicExchange(&heap[w + BLOCK_ITER_WORD], 0u) != 0u) {
    a_fail(STATUS_BAD_BLOCK);
    return 0u;
  }
  // generation + 1 as a compare-exchange, so that the old value is tested; only the owner
  // of a free block writes its generation, so a changed value means corruption.
  let gen = atomicLoad(&heap[w + BLOCK_GEN_WORD]);
  var bumped = false;
  for (var attempt = 0u; attempt < SPIN_LIMIT && !bumped; attempt++) {
    let r = atomicCompareExchangeWeak(&heap[w + BLOCK_GEN_WORD], gen, gen + 1u);
    if (!r.exchanged && r.old_value != gen) {
      a_fail(STATUS_BAD_BLOCK);
      return 0u;
    }
    bumped = r.exchanged;
  }
  if (!bumped) {
    a_fail(STATUS_SPIN_CAP);
    return 0u;
  }
  if (!bm_set(BW_ALLOCATED_BM[t], bid)) {
    return 0u;
  }
  if (!bm_set(BW_ACTIVE_BM[t], bid)) {
    return 0u;
  }
  if (atomicExchange(&heap[w + BLOCK_ALLOC_WORD], TYPE_HIGH_MASK[t]) != ALL_ONES) {
    a_fail(STATUS_BAD_BLOCK);
    return 0u;
  }
  return bid;
}

/** Reserve one slot of block bid (Alg. 6); NONE if full or invalidated. Sets a_full. */
fn a_reserve(bid: u32) -> u32 {
  let w = block_word(bid) + BLOCK_ALLOC_WORD;
  for (var attempt = 1u; attempt <= SPIN_LIMIT; attempt++) {
    let bm = atomicLoad(&heap[w]);
    if (bm == ALL_ONES) {
      return NONE;
    }
    let pos = u32(ffs_from(~bm, a_seed + attempt));
    let mask = 1u << pos;
    let before = atomicOr(&heap[w], mask);
    if ((before & mask) == 0u) {
      a_full = (before | mask) == ALL_ONES;
      return pos;
    }
    if (before == ALL_ONES) {
      return NONE;
    }
  }
  a_fail(STATUS_SPIN_CAP);
  return NONE;
}

/** Set every field of object h of type t to 0 (thread.ts zero); sub-word fields with atomicAnd (neighbours share the word). */
fn a_zero(t: u32, h: u32) {
  let bw = block_word(h >> SLOT_BITS);
  let s = h & 31u;
  for (var k = ZERO_START[t]; k < ZERO_START[t + 1u]; k++) {
    let w = bw + (ZERO_PLAN[2u * k] >> 2u);
    let bytes = ZERO_PLAN[2u * k + 1u];
    if (bytes == 4u) {
      atomicStore(&heap[w + s], 0u);
    } else if (bytes == 8u) {
      atomicStore(&heap[w + 2u * s], 0u);
      atomicStore(&heap[w + 2u * s + 1u], 0u);
    } else if (bytes == 2u) {
      atomicAnd(&heap[w + (s >> 1u)], ~(0xffffu << (16u * (s & 1u))));
    } else {
      atomicAnd(&heap[w + (s >> 2u)], ~(0xffu << (8u * (s & 3u))));
    }
  }
}

/** Allocate an object of concrete type t (Alg. 1 with D1); its handle with fields zeroed, or 0 (see a_status). */
fn a_allocate(t: u32) -> u32 {
  var bid = a_hint[t];
  for (var attempt = 1u; attempt <= SPIN_LIMIT; attempt++) {
    if (bid == 0u) {
      bid = bm_try_find_set(BW_ACTIVE_BM[t], a_seed + attempt);
      if (bid == NONE) {
        bid = a_new_block(t);
        if (bid == 0u) {
          return 0u;
        }
      }
    }
    let slot = a_reserve(bid);
    if (a_status != 0u) {
      return 0u;
    }
    if (slot != NONE) {
      let tt = atomicLoad(&heap[block_word(bid) + BLOCK_TYPE_WORD]);
      if (tt >= NUM_TYPES) {
        // We hold a slot, so the block cannot be free: the heap is corrupted.
        a_fail(STATUS_BAD_FREE);
        return 0u;
      }
      if (a_full && !bm_clear(BW_ACTIVE_BM[tt], bid)) {
        return 0u;
      }
      if (tt == t) {
        a_hint[t] = select(bid, 0u, a_full);
        let h = bid * 32u + slot;
        a_zero(t, h);
        return h;
      }
      // (D1) The block was freed and re-initialised for another type between selection
      // and reservation: give the slot back and select again.
      a_release(bid, slot);
      if (a_status != 0u) {
        return 0u;
      }
    }
    bid = 0u;
  }
  a_fail(STATUS_SPIN_CAP);
  return 0u;
}

/** Lock an empty block by setting all its bits (Alg. 7 with D2); true if this invocation must free it. */
fn a_invalidate(bid: u32, gen: u32) -> bool {
  let w = block_word(bid);
  for (var attempt = 1u; attempt <= SPIN_LIMIT; attempt++) {
    let before = atomicOr(&heap[w + BLOCK_ALLOC_WORD], ALL_ONES);
    if (before == ALL_ONES) {
      return false; // another invocation holds or filled the block
    }
    // We hold at least one bit, so the block cannot be freed: its type is stable.
    let t = atomicLoad(&heap[w + BLOCK_TYPE_WORD]);
    if (t >= NUM_TYPES) {
      a_fail(STATUS_BAD_FREE);
      return false;
    }
    let same_generation = atomicLoad(&heap[w + BLOCK_GEN_WORD]) == gen;
    if (before == TYPE_HIGH_MASK[t] && same_generation) {
      return true;
    }
    // Not ours to delete: give back exactly the bits we set.
    let before_rollback = atomicAnd(&heap[w + BLOCK_ALLOC_WORD], before);
    // A release ran while we held all bits; it saw a full block and will set the active
    // bit, which is already set: clear it so that its set can complete.
    if (before_rollback != ALL_ONES && !bm_clear(BW_ACTIVE_BM[t], bid)) {
      return false;
    }
    if ((before_rollback & before) != TYPE_HIGH_MASK[t] || !same_generation) {
      return false;
    }
  }
  a_fail(STATUS_SPIN_CAP);
  return false;
}

/** Free slot `slot` of block `bid` (Alg. 2 with D2). */
fn a_release(bid: u32, slot: u32) {
  let w = block_word(bid);
  let mask = 1u << slot;
  // Read before our atomic, while our live object pins the block's generation (D2).
  let gen = atomicLoad(&heap[w + BLOCK_GEN_WORD]);
  let t = atomicLoad(&heap[w + BLOCK_TYPE_WORD]);
  if (t >= NUM_TYPES || slot >= TYPE_SLOTS[t]) {
    a_fail(STATUS_BAD_FREE);
    return;
  }
  let before = atomicAnd(&heap[w + BLOCK_ALLOC_WORD], ~mask);
  if ((before & mask) == 0u) {
    a_fail(STATUS_DOUBLE_FREE);
    return;
  }
  atomicAnd(&heap[w + BLOCK_ITER_WORD], ~mask); // a deleted object is not visited by the running do-all
  if (before == ALL_ONES && !bm_set(BW_ACTIVE_BM[t], bid)) {
    return; // FIRST: the block was full
  }
  if ((before & ~mask) == TYPE_HIGH_MASK[t]) {
    // EMPTY: this release freed the last object; we are responsible for the block.
    if (a_invalidate(bid, gen)) {
      // retire_block: iteration word, type := FREE, then the free bit; each an RMW whose
      // old value is tested before the next (P1). The iteration word may still hold the
      // bit of a slot whose release's clear (above, fire-and-forget) has not landed yet,
      // never one beyond the type's slots (H5).
      if ((atomicExchange(&heap[w + BLOCK_ITER_WORD], 0u) & TYPE_HIGH_MASK[t]) != 0u) {
        a_fail(STATUS_BAD_BLOCK);
        return;
      }
      if (!bm_clear(BW_ACTIVE_BM[t], bid)) {
        return;
      }
      if (!bm_clear(BW_ALLOCATED_BM[t], bid)) {
        return;
      }
      if (atomicExchange(&heap[w + BLOCK_TYPE_WORD], FREE_TYPE) != t) {
        a_fail(STATUS_BAD_BLOCK);
        return;
      }
      if (!bm_set(BW_FREE_BM, bid)) {
        return;
      }
    }
    if (a_hint[t] == bid) {
      a_hint[t] = 0u;
    }
  }
}

fn a_free(h: u32) {
  a_release(h >> SLOT_BITS, h & 31u);
}
