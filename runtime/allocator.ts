/**
 * The DynaSOAr allocator on 32-bit bitmaps (paper §3 Alg. 1, 2; §4.2 Alg. 6; §5.2
 * Alg. 7), one instance per thread over the shared heap.
 *
 * Block states and who moves a block between them (the thread whose atomic caused the
 * transition, §3 "responsibility"):
 *
 *   FREE ──newBlock (free.findAndClear, initialise, allocated.set, active.set)──▶ ACTIVE
 *   ACTIVE ──reserve filled the last slot──▶ FULL          (active.clear)
 *   FULL ──release freed the first slot──▶ ACTIVE          (active.set)
 *   ACTIVE ──release emptied it, invalidate won──▶ FREE    (active.clear, allocated.clear, free.set)
 *
 * Invariants between operations (checked by Heap.validate): see heap.ts H1–H5.
 *
 * Deliberate differences from the original (DESIGN.md "Known defects"):
 *  (D1) When the block's type changed under a reservation (Alg. 1 l. 14–17), the slot
 *       is rolled back *and the loop continues*; the original rolled back but still
 *       returned an object in a block of the wrong type.
 *  (D2) Invalidation (Alg. 7) is tied to the block's *generation*: the emptying thread
 *       reads it while it still holds a live object (so the block cannot be recycled
 *       under it) and invalidation only succeeds if the block is empty in that same
 *       generation. The original identified the block by index only, so a
 *       free → re-initialise between "emptied" and "invalidate" let a stale thread
 *       delete a block that now belonged to someone else.
 *  (D3) A full heap raises HeapExhaustedError (the original loops forever); freeing a
 *       slot that is not taken raises InvalidHandleError (the original livelocks);
 *       every retry loop is bounded (shared.ts retryPause).
 */
import { ffsFrom, lowestSetBits, popc } from './bits.js';
import { HeapExhaustedError, InvalidHandleError } from './errors.js';
import { FREE_TYPE, type Heap } from './heap.js';
import { ALL_ONES, BLOCK_ALLOC_WORD, BLOCK_GEN_WORD, BLOCK_ITER_WORD, BLOCK_TYPE_WORD, SLOT_BITS, type TypeLayout } from './layout.js';
import { andWord, loadWord, orWord, retryPause, storeWord, addWord } from './shared.js';

/** @internal Outcomes of Allocator.invalidateResolve. */
export const INVALIDATE_FAILED = 0;
/** @internal */
export const INVALIDATE_OWNED = 1;
/** @internal */
export const INVALIDATE_RETRY = -1;

export class Allocator {
  private readonly mem: Int32Array;
  /** Per type: the block this thread allocated in last (a hint, re-checked on use). */
  private readonly hint: Int32Array;
  /** Set by reserve*: whether the reservation filled the block. */
  private full = false;
  /** Rotation seed (§4.2): differs per thread/warp, advanced on every retry. */
  seed: number;

  constructor(
    readonly heap: Heap,
    seed: number,
  ) {
    this.mem = heap.i32;
    this.hint = new Int32Array(heap.table.types.length);
    this.seed = seed >>> 0;
  }

  // ---------------------------------------------------------------- allocate (Alg. 1)

  /** Reserve one slot for a new object of concrete type `t`; returns its handle. */
  allocate(t: TypeLayout): number {
    const id = t.id;
    const active = this.heap.active[id]!;
    let bid = this.hint[id]!;
    for (let attempt = 1; ; attempt++) {
      if (bid === 0) {
        bid = active.tryFindSet(this.seed + attempt);
        if (bid < 0) bid = this.newBlock(t);
      }
      const slot = this.reserve(bid);
      if (slot >= 0) {
        const tt = loadWord(this.mem, this.heap.blockWord(bid) + BLOCK_TYPE_WORD);
        if (this.full) this.heap.active[tt]!.clear(bid);
        if (tt === id) {
          this.hint[id] = this.full ? 0 : bid;
          return bid * 32 + slot;
        }
        // (D1) The block was freed and re-initialised for another type between
        // selection and reservation: give the slot back and select again.
        this.release(bid, slot);
      }
      bid = 0;
      retryPause(attempt, `allocate(${t.name})`);
    }
  }

  /**
   * Reserve `count` slots of type `t` with coalesced requests (§4.2, XMalloc): one atomic
   * per block reserves as many slots as the block has, spilling to further blocks.
   * Handles are written to out[at …]. On HeapExhaustedError the slots reserved so far
   * are released again before the error propagates.
   */
  allocateMany(t: TypeLayout, count: number, out: Uint32Array | number[], at = 0): void {
    const id = t.id;
    const active = this.heap.active[id]!;
    let done = 0;
    let bid = this.hint[id]!;
    try {
      // `attempt` counts consecutive failed rounds only. (Fix: it used to count every
      // round, so a large request that spans many blocks used up the retry budget with
      // successful rounds and a single later failure threw ContentionError. A
      // wrong-type rollback (D1) is a failed round too, so that loop is bounded as well.)
      let attempt = 0;
      while (done < count) {
        if (bid === 0) {
          bid = active.tryFindSet(this.seed + attempt);
          if (bid < 0) bid = this.newBlock(t);
        }
        const got = this.reserveMany(bid, count - done);
        if (got !== 0) {
          const tt = loadWord(this.mem, this.heap.blockWord(bid) + BLOCK_TYPE_WORD);
          if (this.full) this.heap.active[tt]!.clear(bid);
          if (tt === id) {
            let bits = got;
            while (bits !== 0) {
              const slot = 31 - Math.clz32(bits & -bits);
              out[at + done++] = bid * 32 + slot;
              bits &= bits - 1;
            }
            this.hint[id] = this.full ? 0 : bid;
            attempt = 0;
            if (this.full) bid = 0; // else the block may still have room: stay on it
            continue;
          }
          // (D1) wrong type: roll every reserved slot back
          let bits = got;
          while (bits !== 0) {
            this.release(bid, 31 - Math.clz32(bits & -bits));
            bits &= bits - 1;
          }
        }
        // Full, invalidated or re-typed under us: select another block.
        bid = 0;
        retryPause(++attempt, `allocateMany(${t.name})`);
      }
    } catch (e) {
      for (let k = 0; k < done; k++) this.releaseHandle(out[at + k]!);
      throw e;
    }
  }

  // ---------------------------------------------------------------- block steps
  // The steps below are the allocator's atomic building blocks. They are public only
  // so that test/interleavings.test.ts can run them one at a time in a chosen order
  // (forced interleavings on one thread); production code calls allocate/release.

  /** @internal Take a free block for type `t` (Alg. 1 l. 4–7); returns its index. */
  newBlock(t: TypeLayout): number {
    const heap = this.heap;
    const bid = heap.free.findAndClear(this.seed);
    if (bid < 0) {
      // No free block. An active block of this type may have appeared meanwhile.
      const other = heap.active[t.id]!.scanFindSet(this.seed);
      if (other >= 0) return other;
      throw new HeapExhaustedError(t.name, heap.plan.heapBytes, heap.numBlocks - 1);
    }
    this.initializeBlock(bid, t);
    return bid;
  }

  /**
   * @internal initialize_block (Alg. 1 l. 5–7) of block `bid`, whose free bit the caller
   * has just cleared: it now belongs to type `t`, empty, in a new generation.
   */
  initializeBlock(bid: number, t: TypeLayout): void {
    const heap = this.heap;
    // Type first, then generation, then open the slots. Atomics are sequentially
    // consistent, so the type is visible before any reservation can succeed (the
    // paper's thread fence, §5.2 footnote 5).
    const w = heap.blockWord(bid);
    storeWord(this.mem, w + BLOCK_TYPE_WORD, t.id);
    storeWord(this.mem, w + BLOCK_ITER_WORD, 0);
    addWord(this.mem, w + BLOCK_GEN_WORD, 1);
    storeWord(this.mem, w + BLOCK_ALLOC_WORD, t.highMask);
    heap.allocated[t.id]!.set(bid);
    heap.active[t.id]!.set(bid);
  }

  // ---------------------------------------------------------------- reserve (Alg. 6)

  /** @internal Reserve one slot of block `bid` (Alg. 6); -1 if it is full or invalidated. Sets `this.full`. */
  reserve(bid: number): number {
    const w = this.heap.blockWord(bid) + BLOCK_ALLOC_WORD;
    for (let attempt = 1; ; attempt++) {
      const bm = loadWord(this.mem, w);
      if (bm === ALL_ONES) return -1;
      const pos = ffsFrom(~bm, this.seed + attempt);
      const mask = 1 << pos;
      const before = orWord(this.mem, w, mask);
      if ((before & mask) === 0) {
        this.full = (before | mask) === ALL_ONES;
        return pos;
      }
      if (before === ALL_ONES) return -1;
      // another thread took that slot first: pick another
      retryPause(attempt, `reserve(block ${bid})`);
    }
  }

  /** Reserve up to `want` slots of block `bid` in one atomic; returns their mask (0: none). */
  private reserveMany(bid: number, want: number): number {
    const w = this.heap.blockWord(bid) + BLOCK_ALLOC_WORD;
    for (let attempt = 1; ; attempt++) {
      const bm = loadWord(this.mem, w);
      if (bm === ALL_ONES) return 0;
      const mask = lowestSetBits(~bm, want);
      const before = orWord(this.mem, w, mask);
      const got = mask & ~before;
      if (got !== 0) {
        this.full = (before | mask) === ALL_ONES;
        return got;
      }
      if (before === ALL_ONES) return 0;
      retryPause(attempt, `reserveMany(block ${bid})`);
    }
  }

  // ---------------------------------------------------------------- release (Alg. 2)

  /** Free the object named by `handle` (no type check; see Runtime for checked mode). */
  releaseHandle(handle: number): void {
    this.release(handle >>> SLOT_BITS, handle & 31);
  }

  /** Free slot `slot` of block `bid` (Alg. 2). */
  release(bid: number, slot: number): void {
    const heap = this.heap;
    const mem = this.mem;
    // Cheap range checks even in unchecked mode: a handle outside the heap would
    // otherwise make the atomics below throw a bare RangeError (or touch block 0).
    if (!(bid > 0 && bid < heap.numBlocks)) {
      throw new InvalidHandleError(bid * 32 + slot, 'forged', `block ${bid} is not a block of this heap (1 … ${heap.numBlocks - 1})`);
    }
    const w = heap.blockWord(bid);
    const mask = 1 << slot;
    // Read before our atomic, while our live object pins the block's generation (D2).
    const gen = loadWord(mem, w + BLOCK_GEN_WORD);
    const t = loadWord(mem, w + BLOCK_TYPE_WORD);
    if (t === FREE_TYPE) {
      throw new InvalidHandleError(bid * 32 + slot, 'free-block', `block ${bid} holds no objects; the object was already deleted`);
    }
    if (slot >= heap.slots[t]!) {
      // Pre-set high bits (§5.2) would make the slot look allocated: clearing one would corrupt the block.
      throw new InvalidHandleError(bid * 32 + slot, 'forged', `slot ${slot} does not exist in block ${bid} (${heap.slots[t]} slots)`);
    }
    const before = andWord(mem, w + BLOCK_ALLOC_WORD, ~mask);
    if ((before & mask) === 0) {
      throw new InvalidHandleError(bid * 32 + slot, 'deleted', `slot ${slot} of block ${bid} is not allocated (deleted twice?)`);
    }
    // A deleted object is not visited by the running do-all. Iteration bits are only set
    // by snapshot(), which runs between do-alls, never concurrently with a release: a
    // plain check first saves the read-modify-write for objects no pass has listed.
    if ((loadWord(mem, w + BLOCK_ITER_WORD) & mask) !== 0) andWord(mem, w + BLOCK_ITER_WORD, ~mask);
    if (before === ALL_ONES) heap.active[t]!.set(bid); // FIRST: the block was full
    if ((before & ~mask) === heap.highMask[t]) {
      // EMPTY: this release freed the last object; we are responsible for the block.
      if (this.invalidate(bid, gen)) this.retireBlock(bid, t);
      if (this.hint[t] === bid) this.hint[t] = 0;
    }
  }

  /**
   * @internal Alg. 2 l. 9–12: return block `bid` of type `t`, which this thread has
   * invalidated, to the free bitmap. Its allocation bitmap stays all ones (free).
   */
  retireBlock(bid: number, t: number): void {
    const heap = this.heap;
    const w = heap.blockWord(bid);
    storeWord(this.mem, w + BLOCK_ITER_WORD, 0);
    heap.active[t]!.clear(bid);
    heap.allocated[t]!.clear(bid);
    storeWord(this.mem, w + BLOCK_TYPE_WORD, FREE_TYPE);
    heap.free.set(bid);
  }

  /**
   * @internal Lock an empty block against reservations by setting all its bits (Alg. 7);
   * true if this thread now owns the (empty) block and must free it (retireBlock). `gen`
   * is the generation in which the caller emptied it (D2).
   */
  invalidate(bid: number, gen: number): boolean {
    for (let attempt = 1; ; attempt++) {
      const outcome = this.invalidateResolve(bid, gen, this.invalidateLock(bid));
      if (outcome !== INVALIDATE_RETRY) return outcome === INVALIDATE_OWNED;
      retryPause(attempt, `invalidate(block ${bid})`);
    }
  }

  /** @internal Alg. 7 l. 1: set every bit of the allocation bitmap; returns the bitmap before. */
  invalidateLock(bid: number): number {
    return orWord(this.mem, this.heap.blockWord(bid) + BLOCK_ALLOC_WORD, ALL_ONES);
  }

  /**
   * @internal Alg. 7 l. 2–13, given `before` from invalidateLock: INVALIDATE_OWNED (this
   * thread owns the empty block), INVALIDATE_FAILED (not ours; our bits are rolled back)
   * or INVALIDATE_RETRY (rolled back, and empty again in our generation: lock again).
   */
  invalidateResolve(bid: number, gen: number, before: number): number {
    const mem = this.mem;
    const w = this.heap.blockWord(bid);
    // All bits were set already: another thread holds or filled the block.
    if (before === ALL_ONES) return INVALIDATE_FAILED;
    // We hold at least one bit, so the block cannot be freed: its type is stable.
    const t = loadWord(mem, w + BLOCK_TYPE_WORD);
    const sameGeneration = loadWord(mem, w + BLOCK_GEN_WORD) === gen;
    if (before === this.heap.highMask[t] && sameGeneration) return INVALIDATE_OWNED;
    // Not ours to delete (objects were allocated again, or the block was recycled):
    // give back exactly the bits we set.
    const beforeRollback = andWord(mem, w + BLOCK_ALLOC_WORD, before);
    // A release ran while we held all bits; it saw a "full" block and will set the
    // active bit, which is already set: clear it so that its set can complete.
    if (beforeRollback !== ALL_ONES) this.heap.active[t]!.clear(bid);
    // Empty again in our generation and nobody else saw it empty: retry (Alg. 7 l. 10).
    if ((beforeRollback & before) !== this.heap.highMask[t] || !sameGeneration) return INVALIDATE_FAILED;
    return INVALIDATE_RETRY;
  }

  /** Live objects of concrete type `t` (a scan of its blocks; exact when quiescent). */
  count(t: TypeLayout): number {
    const heap = this.heap;
    const list = new Uint32Array(heap.numBlocks);
    const n = heap.allocated[t.id]!.indices(list);
    let live = 0;
    for (let i = 0; i < n; i++) live += popc(loadWord(this.mem, heap.blockWord(list[i]!) + BLOCK_ALLOC_WORD) & ~t.highMask);
    return live;
  }
}
