/**
 * The allocator's two common cases in JavaScript, without a call into WebAssembly: taking a
 * slot that this thread's warp has already reserved, and freeing a slot of a block that
 * stays partly filled. Everything else goes to the allocator core (wasm/src/alloc/core.rs),
 * which stays the one implementation of the algorithms: these are the core's own steps
 * for those cases, transcribed access for access, on the same words. Measured (dev VM,
 * docs/benchmarks.md "Fewer calls into the core"): a call into the module costs about as
 * much as the work of these two cases, and they are most of what linux-scalability does.
 *
 * Paper: "DynaSOAr: A Parallel Memory Allocator for Object-Oriented Programming on GPUs
 * with Efficient Memory Access" (ECOOP 2019), §4.2 (request coalescing: F1 takes the
 * slots a coalesced request reserved) and §3 Alg. 2 (F2 is its lines 1–4, and line 5's
 * test of what the atomic returned).
 *
 * Invariants:
 *  (F1) Cached slot. takeCachedSlot is core.rs allocate_warp's cached branch (C2): when
 *       the thread's cache mask of the type (state word TS_CACHE_MASK) is not 0, the lowest
 *       slot leaves the mask, S_CACHED drops by one when the mask becomes 0, and the handle
 *       is TS_CACHE_BLOCK × 32 + slot; nothing else changes, so heap and state are word for
 *       word what smmo_alloc_allocate leaves (the executor contract's byte-identical heaps).
 *       It needs no check of the block or the heap's variant: the core makes the mask
 *       non-zero only inside a warp with coalescing on (C2, never NoCoal or BitmapAlloc), a
 *       cached slot is reserved (its bit set), so its block can be neither retired nor
 *       re-typed while it is cached, and warp_end empties every mask (C3). A zero mask: the
 *       core allocates (nothing was written). Allocator.allocate tests the mask and calls
 *       it; a compiled method's generated alloc_<id> (compiler/emit-js.ts) does the same
 *       inline, with the state's word indices as constants.
 *  (F2) Release in the middle of a block. FastRelease.release is core.rs release_begin for a
 *       type without generations (genOffset 0), in the same order: the block's generation,
 *       then its type (both read while the object still pins the block, D2), the checks on
 *       the handle, then the AND of the allocation word — on a heap formatted for one
 *       thread only, where the core itself uses plain accesses (mem.rs M1 Plain). On a heap
 *       of several threads every release is the core's: JavaScript's Atomics made the
 *       release twice as slow as the call into the core (measured, dev VM). If the word
 *       before the AND shows that nothing but the slot's bit changes — the block was not
 *       full (no FULL → ACTIVE) and is not emptied (no EMPTY: invalidation or K4) — the
 *       release is complete once the slot's iteration bit is cleared, exactly as core.rs
 *       `released` would leave it (it clears that bit and does nothing else then).
 *       Otherwise the core finishes it (smmo_alloc_release_end → `released`, which finds
 *       the iteration bit already clear) with the generation read before the AND.
 *       Allocator.releaseHandle calls it; a compiled method's destroy calls it directly and
 *       Allocator.releaseRest only when it returns non-zero. The retry limits
 *       (shared.ts retryLimits) are copied into the state only before the core's whole
 *       release: release_end on a heap of one thread never waits (no other thread can
 *       hold a bit or a lock), and its loops are bounded by the limits last copied anyway.
 *  (F3) Anything else is the core's, before any write: a handle outside the heap, a free or
 *       corrupt block, a slot the type does not have, a type with generations (checked
 *       mode bumps them first), a BitmapAlloc heap, a heap of several threads. The only
 *       case decided after the AND is a slot that was not allocated (deleted twice?): the
 *       AND changed nothing, and the core's release, run next on the same unchanged words
 *       (no other thread exists, F2), reports it.
 *  (F4) The state is the calling thread's own (mem.rs M2): its words are read and written
 *       with plain accesses; JavaScript and the core run on one thread one after the other.
 *  (F5) Release of several slots of one block (FastRelease.releaseMask): core.rs
 *       release_many on a heap of one thread, as F2 is release_begin — the block's
 *       generation, then its type, the checks on the slots, and only then (every slot of the
 *       mask allocated: otherwise the core's release_many reports the first one that is not,
 *       nothing written here) one AND of the allocation word and of the iteration word. Where
 *       the word shows a transition (the block was full, or is now empty) the core finishes
 *       it (smmo_alloc_release_end_many → `released` with the mask). What compiled methods'
 *       deferred self-deletions release (runtime/compiler/emit-js.ts deferFree): a block with
 *       one or two deletions costs what F2 costs them, not a call into the core.
 */
import { BLOCK_ALLOC_WORD, BLOCK_GEN_WORD, BLOCK_ITER_WORD, BLOCK_TYPE_WORD, TS_CACHE_BLOCK, TS_CACHE_MASK } from './layout.js';

/**
 * (F1) Take the lowest cached slot of a type: its handle, or 0 when the cache is empty
 * (handle 0 is null: nothing was written). `maskWord`: the Int32Array index of the state's
 * TS_CACHE_MASK word of the type; `cachedWord`: that of S_CACHED.
 */
export function takeCachedSlot(i32: Int32Array, maskWord: number, cachedWord: number): number {
  const m = i32[maskWord]!;
  if (m === 0) return 0;
  const low = m & -m;
  const rest = m ^ low;
  i32[maskWord] = rest;
  if (rest === 0) i32[cachedWord] = i32[cachedWord]! - 1;
  return i32[maskWord - TS_CACHE_MASK + TS_CACHE_BLOCK]! * 32 + (31 - Math.clz32(low));
}

/** What FastRelease.release returns when the core must make the whole release (F3; nothing written). */
export const RELEASE_BY_CORE = -1;

/** The core's release_end (wasm/src/alloc/ffi.rs smmo_alloc_release_end): 0 or an error code in the state. */
type ReleaseEnd = (st: number, bid: number, t: number, gen: number, before: number, slot: number) => number;
/** The core's release_end_many (ffi.rs smmo_alloc_release_end_many): as ReleaseEnd for a mask of slots. */
type ReleaseEndMany = (st: number, bid: number, t: number, gen: number, before: number, mask: number) => number;

/** (F2) The JavaScript first half of a release, for one thread's state on one heap. */
export class FastRelease {
  constructor(
    private readonly i32: Int32Array,
    /** Word index of the thread's allocator state. */
    private readonly state: number,
    /** Heap.blocksWord, Heap.blockWords, Heap.numBlocks, the number of type ids. */
    private readonly blocksWord: number,
    private readonly blockWords: number,
    private readonly numBlocks: number,
    private readonly numTypes: number,
    /** Per type id: slots per block (0: abstract), generation offset (0: none), pre-set high bits (Heap's tables). */
    private readonly slots: Int32Array,
    private readonly genOffset: Int32Array,
    private readonly highMask: Int32Array,
    /** False on a heap formatted for several threads or for BitmapAlloc: every release is the core's (F2, F3). */
    readonly enabled: boolean,
    private readonly releaseEnd: ReleaseEnd,
    private readonly releaseEndMany: ReleaseEndMany,
  ) {}

  /**
   * (F5) Free the objects in slots `mask` (not 0) of block `bid`: 0, an error code (the error
   * is in the state), or RELEASE_BY_CORE (nothing written: call the core's release_many).
   */
  releaseMask(bid: number, mask: number): number {
    if (!this.enabled || bid <= 0 || bid >= this.numBlocks || mask === 0) return RELEASE_BY_CORE;
    const i32 = this.i32;
    const w = this.blocksWord + bid * this.blockWords;
    const gen = i32[w + BLOCK_GEN_WORD]!;
    const t = i32[w + BLOCK_TYPE_WORD]!;
    if (t < 0 || t >= this.numTypes || this.genOffset[t] !== 0) return RELEASE_BY_CORE;
    const slots = this.slots[t]!;
    if (slots === 0 || (slots < 32 && mask >>> slots !== 0)) return RELEASE_BY_CORE;
    const before = i32[w + BLOCK_ALLOC_WORD]!;
    if ((before & mask) !== mask) return RELEASE_BY_CORE;
    i32[w + BLOCK_ALLOC_WORD] = before & ~mask;
    const iter = i32[w + BLOCK_ITER_WORD]!;
    if ((iter & mask) !== 0) i32[w + BLOCK_ITER_WORD] = iter & ~mask;
    if (before === -1 || (before & ~mask) === this.highMask[t]) {
      return this.releaseEndMany(this.state, bid, t, gen, before, mask);
    }
    return 0;
  }

  /**
   * Free the object `handle`: 0 (done), an ALLOC_ERR_* code from the core's release_end
   * (the error is in the state), or RELEASE_BY_CORE (nothing written: call the core's release).
   */
  release(handle: number): number {
    const bid = handle >>> 5;
    const slot = handle & 31;
    if (!this.enabled || bid === 0 || bid >= this.numBlocks) return RELEASE_BY_CORE;
    const i32 = this.i32;
    const w = this.blocksWord + bid * this.blockWords;
    // Generation, then type: read while our live object pins the block (D2), as release_begin.
    const gen = i32[w + BLOCK_GEN_WORD]!;
    const t = i32[w + BLOCK_TYPE_WORD]!;
    // A free block (type all ones, -1 here), a corrupt type, an abstract type, a slot beyond
    // the type's, a type with generations: the core's (F3).
    if (t < 0 || t >= this.numTypes || slot >= this.slots[t]! || this.genOffset[t] !== 0) return RELEASE_BY_CORE;
    const mask = 1 << slot;
    // Plain read-modify-write: the heap has one thread (mem.rs M1 Plain).
    const before = i32[w + BLOCK_ALLOC_WORD]!;
    i32[w + BLOCK_ALLOC_WORD] = before & ~mask;
    // Not allocated (deleted twice?): the AND changed nothing; the core's release reports it (F3).
    if ((before & mask) === 0) return RELEASE_BY_CORE;
    // The iteration bit first, as `released` does (a plain read-modify-write, as the core's
    // on one thread; the common case of an object deleting itself in a do-all over its class).
    const iter = i32[w + BLOCK_ITER_WORD]!;
    if ((iter & mask) !== 0) i32[w + BLOCK_ITER_WORD] = iter & ~mask;
    // FULL → ACTIVE (before all ones) or EMPTY (only the high bits left): the rest of the
    // core's `released` (F2), which finds the iteration bit already clear.
    if (before === -1 || (before & ~mask) === this.highMask[t]) {
      return this.releaseEnd(this.state, bid, t, gen, before, slot);
    }
    return 0;
  }
}
