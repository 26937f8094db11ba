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
      for (let attempt = 1; done < count; attempt++) {
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
            if (!this.full) continue; // the block may still have room: stay on it
          } else {
            // (D1) wrong type: roll every reserved slot back
            let bits = got;
            while (bits !== 0) {
              this.release(bid, 31 - Math.clz32(bits & -bits));
              bits &= bits - 1;
            }
          }
        } else {
          retryPause(attempt, `allocateMany(${t.name})`);
        }
        bid = 0;
      }
    } catch (e) {
      for (let k = 0; k < done; k++) this.releaseHandle(out[at + k]!);
      throw e;
    }
  }

  /** Take a free block for type `t` (Alg. 1 l. 4–7). */
  private newBlock(t: TypeLayout): number {
    const heap = this.heap;
    const bid = heap.free.findAndClear(this.seed);
    if (bid < 0) {
      // No free block. An active block of this type may have appeared meanwhile.
      const other = heap.active[t.id]!.scanFindSet(this.seed);
      if (other >= 0) return other;
      throw new HeapExhaustedError(t.name, heap.plan.heapBytes, heap.numBlocks - 1);
    }
    // initialize_block: type first, then generation, then open the slots. Atomics are
    // sequentially consistent, so the type is visible before any reservation can
    // succeed (the paper's thread fence, §5.2 footnote 5).
    const w = heap.blockWord(bid);
    storeWord(this.mem, w + BLOCK_TYPE_WORD, t.id);
    storeWord(this.mem, w + BLOCK_ITER_WORD, 0);
    addWord(this.mem, w + BLOCK_GEN_WORD, 1);
    storeWord(this.mem, w + BLOCK_ALLOC_WORD, t.highMask);
    heap.allocated[t.id]!.set(bid);
    heap.active[t.id]!.set(bid);
    return bid;
  }

  // ---------------------------------------------------------------- reserve (Alg. 6)

  /** Reserve one slot of block `bid`; -1 if it is full or invalidated. Sets `this.full`. */
  private reserve(bid: number): number {
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
    const w = heap.blockWord(bid);
    const mask = 1 << slot;
    // Read before our atomic, while our live object pins the block's generation (D2).
    const gen = loadWord(mem, w + BLOCK_GEN_WORD);
    const t = loadWord(mem, w + BLOCK_TYPE_WORD);
    if (t === FREE_TYPE || slot >= heap.slots[t]!) {
      throw new InvalidHandleError(bid * 32 + slot, 'free-block', `block ${bid} holds no objects; the object was already deleted`);
    }
    const before = andWord(mem, w + BLOCK_ALLOC_WORD, ~mask);
    if ((before & mask) === 0) {
      throw new InvalidHandleError(bid * 32 + slot, 'deleted', `slot ${slot} of block ${bid} is not allocated (deleted twice?)`);
    }
    andWord(mem, w + BLOCK_ITER_WORD, ~mask); // a deleted object is not visited by the running do-all
    if (before === ALL_ONES) heap.active[t]!.set(bid); // FIRST: the block was full
    if ((before & ~mask) === heap.highMask[t]) {
      // EMPTY: this release freed the last object; we are responsible for the block.
      if (this.invalidate(bid, gen)) {
        storeWord(mem, w + BLOCK_ITER_WORD, 0);
        heap.active[t]!.clear(bid);
        heap.allocated[t]!.clear(bid);
        storeWord(mem, w + BLOCK_TYPE_WORD, FREE_TYPE);
        heap.free.set(bid);
      }
      if (this.hint[t] === bid) this.hint[t] = 0;
    }
  }

  /**
   * Lock an empty block against reservations by setting all its bits (Alg. 7); true if
   * this thread now owns the (empty) block and must free it. `gen` is the generation in
   * which the caller emptied it (D2).
   */
  private invalidate(bid: number, gen: number): boolean {
    const mem = this.mem;
    const w = this.heap.blockWord(bid);
    for (let attempt = 1; ; attempt++) {
      const before = orWord(mem, w + BLOCK_ALLOC_WORD, ALL_ONES);
      // All bits were set already: another thread holds or filled the block.
      if (before === ALL_ONES) return false;
      // We hold at least one bit, so the block cannot be freed: its type is stable.
      const t = loadWord(mem, w + BLOCK_TYPE_WORD);
      const sameGeneration = loadWord(mem, w + BLOCK_GEN_WORD) === gen;
      if (before === this.heap.highMask[t] && sameGeneration) return true;
      // Not ours to delete (objects were allocated again, or the block was recycled):
      // give back exactly the bits we set.
      const beforeRollback = andWord(mem, w + BLOCK_ALLOC_WORD, before);
      // A release ran while we held all bits; it saw a "full" block and will set the
      // active bit, which is already set: clear it so that its set can complete.
      if (beforeRollback !== ALL_ONES) this.heap.active[t]!.clear(bid);
      // Empty again in our generation and nobody else saw it empty: retry (Alg. 7 l. 10).
      if ((beforeRollback & before) !== this.heap.highMask[t] || !sameGeneration) return false;
      retryPause(attempt, `invalidate(block ${bid})`);
    }
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
