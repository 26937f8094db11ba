/**
 * TEST ORACLE — not part of the runtime, never used by it. The TypeScript allocator smmo
 * used before the allocator core moved to Rust (wasm/src/alloc/core.rs, the one
 * implementation), kept as the reference of the model test
 * (test/allocator-model.test.ts): the same random operations on this oracle and on the
 * Rust core, from the same start, must leave byte-identical heaps. Extended with the
 * core's later additions so that the model covers them: the variants (rotation off,
 * coalescing off, BitmapAlloc; read from the heap's flags), the warp cache (core.rs
 * C1–C7: warpBegin / lane / warpEnd) and the stale-handle generation rule (T_GEN_OFFSET).
 * Everything below is as it was, D1–D3 and K1–K5 included.
 *
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
 * Kept blocks (a per-thread cache of emptied blocks; not in the paper). A thread that
 * empties a block and wins its invalidation (Alg. 7) may *keep* it instead of
 * retiring it: the block stays of its type, allocated and active, opens again in a new
 * generation, and goes on this thread's stack of at most `keep` blocks per type.
 * allocate() takes blocks from that stack before searching `active` or `free`. On a
 * GPU every block transition is cheap next to a kernel launch; on a CPU the `free`,
 * `allocated[T]` and `active[T]` words are shared by all threads (32 blocks per word,
 * 16 words per cache line), so a thread that allocates and frees in turn (the
 * linux-scalability pattern, a lane that creates and deletes objects in one call)
 * would otherwise write five shared bitmap words per block it goes through.
 *  (K1) A kept block is an ordinary used block: it satisfies H4 (empty, active), any
 *       thread may allocate in it (it is in `active`), and the stack is only a hint,
 *       re-checked on use like `hint` (D1 type check after reservation).
 *  (K2) Nothing owns a kept block: giving it back (flushKept, reclaimEmpty) takes it
 *       through the same invalidation as a release (lock, same generation, empty)
 *       and rolls back if another thread allocated in it meanwhile.
 *  (K3) Kept blocks never cause HeapExhaustedError: when `free` is empty, newBlock
 *       reclaims empty blocks of every type (any thread's) before giving up.
 *  (K4) A thread that empties the block it is allocating in (its hint) leaves it open
 *       without invalidating it: an empty used block is a valid state (H4), and the
 *       responsibility passes to flushKept or to whichever thread empties it next.
 *  (K5) In a multi-threaded runtime, a thread without a hint takes its first block of a
 *       pass from `free`, not from `active`. Alg. 1 prefers active blocks (on a GPU
 *       the lanes that share a block are one warp's); on a CPU, threads that pick the
 *       same active block at the start of a pass keep sharing it while none fills it,
 *       and every reservation and release then moves one cache line between cores
 *       (measured: linux-scalability at k ≤ 4 was 15× slower per thread at 16 threads
 *       than at one). Costs at most one partly filled block per thread and type.
 *  On a heap of several threads every thread flushes its kept blocks when its share of a
 *  pass ends (workers/pass.ts, runtime/doall.ts), so between passes such a heap holds no
 *  empty blocks except those the calling thread kept from create/destroy outside passes
 *  and rare ones whose flush lost a race (allowed by H4); a runtime of one thread keeps
 *  them from pass to pass. stats() and validateHeap() flush first.
 *
 * Deliberate differences from the original (wasm/src/alloc/core.rs D1–D3):
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
import { ffsFrom, lowestSetBits, popc } from '../../runtime/bits.js';
import { HeapExhaustedError, InvalidHandleError } from '../../runtime/errors.js';
import { FREE_TYPE, type Heap } from '../../runtime/heap.js';
import {
  ALL_ONES,
  BLOCK_ALLOC_WORD,
  BLOCK_GEN_WORD,
  BLOCK_ITER_WORD,
  BLOCK_TYPE_WORD,
  H_BLOCK_SET_EPOCH,
  HEADER_OFFSET,
  SLOT_BITS,
  type TypeLayout,
} from '../../runtime/layout.js';
import { OracleBitmap } from './bitmap.js';
import { addWord, andWord, loadWord, orWord, retryPause, storeWord } from './shared.js';

/** @internal Outcomes of Allocator.invalidateResolve. */
export const INVALIDATE_FAILED = 0;
/** @internal */
export const INVALIDATE_OWNED = 1;
/** @internal */
export const INVALIDATE_RETRY = -1;

export class OracleAllocator {
  private readonly mem: Int32Array;
  /** Per type: the block this thread allocated in last (a hint, re-checked on use). */
  private readonly hint: Int32Array;
  /** Set by reserve*: whether the reservation filled the block. */
  private full = false;
  /** Rotation seed (§4.2): differs per thread/warp, advanced on every retry. */
  seed: number;
  /** Most blocks kept per type (K1); 0 retires every emptied block at once (the paper's behaviour). */
  readonly keep: number;
  /** Kept blocks: type t's stack is kept[t * keep …], keptCount[t] deep. */
  private readonly kept: Int32Array;
  private readonly keptCount: Int32Array;
  /** (K5) Per type: 1 while this thread has not chosen a block in this pass and has no hint. */
  private readonly fresh: Uint8Array;
  /** (K5) Whether the first block of a pass is a fresh one (set for threads of a multi-threaded runtime). */
  private ownFirstBlock = false;

  /** The oracle's own bitmap views (the runtime's are read-only). */
  readonly free: OracleBitmap;
  readonly allocated: readonly (OracleBitmap | null)[];
  readonly active: readonly (OracleBitmap | null)[];
  /** The heap's variant flags. */
  private readonly rotate: boolean;
  private readonly coalesce: boolean;
  private readonly bitmapAlloc: boolean;
  /** Whether the heap was formatted for several threads (C5 applies to one thread only). */
  private readonly atomic: boolean;
  /** Warp cache (core.rs C1–C7): whether a warp is open, the lanes left, per type the cached block and slots. */
  private inWarp = false;
  private lanesLeft = 0;
  /** (C6) The lanes left and type of the warp's last coalesced reservation ('' : none yet). */
  private mark = '';
  readonly cacheBlock: Int32Array;
  readonly cacheMask: Int32Array;
  /** (C7) Several threads: per type, the objects the last warp that reserved any took (0: none yet). */
  readonly want: Int32Array;

  constructor(
    readonly heap: Heap,
    seed: number,
  ) {
    const keep = heap.plan.keepBlocks;
    this.mem = heap.i32;
    this.hint = new Int32Array(heap.table.types.length);
    this.seed = seed >>> 0;
    this.keep = keep;
    this.kept = new Int32Array(heap.table.types.length * keep);
    this.keptCount = new Int32Array(heap.table.types.length);
    this.fresh = new Uint8Array(heap.table.types.length);
    this.cacheBlock = new Int32Array(heap.table.types.length);
    this.want = new Int32Array(heap.table.types.length);
    this.cacheMask = new Int32Array(heap.table.types.length);
    const flags = heap.flags;
    this.rotate = flags.rotation;
    this.coalesce = flags.coalescing;
    this.bitmapAlloc = flags.bitmapAlloc;
    this.atomic = flags.atomic;
    const m = heap.numBlocks;
    this.free = new OracleBitmap(this.mem, heap.plan.freeBitmapWord, m, 'free', this.rotate);
    this.allocated = heap.table.types.map((t) =>
      t.abstract ? null : new OracleBitmap(this.mem, heap.plan.allocatedBitmapWord[t.id]!, m, `allocated[${t.name}]`, this.rotate),
    );
    this.active = heap.table.types.map((t) =>
      t.abstract ? null : new OracleBitmap(this.mem, heap.plan.activeBitmapWord[t.id]!, m, `active[${t.name}]`, this.rotate),
    );
  }

  /** The oracle's per-thread state, for comparison with the core's state words. */
  snapshotState(): {
    hint: number[];
    keptCount: number[];
    kept: number[][];
    fresh: number[];
    cacheBlock: number[];
    cacheMask: number[];
    want: number[];
  } {
    const n = this.hint.length;
    return {
      hint: [...this.hint],
      keptCount: [...this.keptCount],
      kept: Array.from({ length: n }, (_, t) => [...this.kept.subarray(t * this.keep, t * this.keep + this.keptCount[t]!)]),
      fresh: [...this.fresh],
      cacheBlock: Array.from({ length: n }, (_, t) => (this.cacheMask[t] !== 0 ? this.cacheBlock[t]! : 0)),
      cacheMask: [...this.cacheMask],
      want: [...this.want],
    };
  }

  /** (K5) Give each thread its own first block per pass (threads > 1, keep > 0). */
  setOwnFirstBlock(on: boolean): void {
    this.ownFirstBlock = on && this.keep > 0;
    this.fresh.fill(this.ownFirstBlock ? 1 : 0);
    for (let t = 0; t < this.fresh.length; t++) if (this.hint[t] !== 0) this.fresh[t] = 0;
  }

  /**
   * (K5) The first block this thread allocates in for type t in a pass: a block of its
   * own from `free` (newBlock; an active block if `free` is empty), not an active one.
   */
  private firstBlock(t: TypeLayout): number {
    this.fresh[t.id] = 0;
    return this.newBlock(t);
  }

  /**
   * A block to allocate in when the hint has none (-1: take a new one from `free`).
   * Multi-threaded (K5 on): the thread's own blocks first — a kept one, else, for its
   * first block of the pass, a new one — then Alg. 1's active blocks: a block another
   * thread is filling costs a cache line transfer per reservation. One thread: Alg. 1's
   * order, active blocks first (the partly filled ones; measured on wa-tor, taking kept
   * blocks first there raised the agents' fragmentation after 500 iterations from
   * 12.6–15.0 % to 16.2–19.7 %), kept blocks when no active one is found.
   */
  private selectBlock(t: TypeLayout, active: OracleBitmap, attempt: number): number {
    const id = t.id;
    if (this.ownFirstBlock) {
      const kept = this.popKept(id);
      if (kept !== 0) {
        this.fresh[id] = 0; // a kept block is this thread's own too
        return kept;
      }
      return this.fresh[id] === 1 ? this.firstBlock(t) : this.findActive(active, this.seed + attempt);
    }
    const bid = this.findActive(active, this.seed + attempt);
    if (bid >= 0) return bid;
    const kept = this.popKept(id);
    return kept !== 0 ? kept : -1;
  }

  /**
   * An active block, or -1 when there is none: the rotated descent, and when it fails while
   * the top container still says some block is active (B3, an operation in flight), the
   * descent with backtracking (bitmap.rs B5; core.rs find_active).
   */
  private findActive(active: OracleBitmap, seed: number): number {
    const bid = active.tryFindSet(seed);
    if (bid >= 0 || !active.anyAtTop()) return bid;
    return active.findSet(seed);
  }

  /** Take a kept block of type `id` off this thread's stack (0: none). */
  private popKept(id: number): number {
    const n = this.keptCount[id]!;
    if (n === 0) return 0;
    this.keptCount[id] = n - 1;
    return this.kept[id * this.keep + n - 1]!;
  }

  // ---------------------------------------------------------------- allocate (Alg. 1)

  /** Reserve one slot for a new object of concrete type `t`; returns its handle. */
  allocate(t: TypeLayout): number {
    if (this.bitmapAlloc) return this.allocateBitmap(t);
    if (this.coalesce && this.inWarp) return this.allocateWarp(t);
    const id = t.id;
    const active = this.active[id]!;
    let bid = this.hint[id]!;
    for (let attempt = 1; ; attempt++) {
      if (bid === 0) {
        bid = this.selectBlock(t, active, attempt);
        if (bid < 0) bid = this.newBlock(t);
      }
      const slot = this.reserve(bid);
      if (slot >= 0) {
        const tt = loadWord(this.mem, this.heap.blockWord(bid) + BLOCK_TYPE_WORD);
        if (this.full) this.active[tt]!.clear(bid);
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
    if (this.bitmapAlloc || !this.coalesce) {
      let made = 0;
      try {
        for (; made < count; made++) out[at + made] = this.bitmapAlloc ? this.allocateBitmap(t) : this.allocateOne(t);
      } catch (e) {
        for (let k = 0; k < made; k++) this.releaseHandle(out[at + k]!);
        throw e;
      }
      return;
    }
    const id = t.id;
    const active = this.active[id]!;
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
          bid = this.selectBlock(t, active, attempt);
          if (bid < 0) bid = this.newBlock(t);
        }
        const got = this.reserveMany(bid, count - done);
        if (got !== 0) {
          const tt = loadWord(this.mem, this.heap.blockWord(bid) + BLOCK_TYPE_WORD);
          if (this.full) this.active[tt]!.clear(bid);
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

  /** A block joined or left allocated[t]: the block-set epoch moves, as the core's does (layout.ts H_BLOCK_SET_EPOCH). */
  private blockSetChanged(): void {
    addWord(this.mem, (HEADER_OFFSET >> 2) + H_BLOCK_SET_EPOCH, 1);
  }

  /** @internal Take a free block for type `t` (Alg. 1 l. 4–7); returns its index. */
  newBlock(t: TypeLayout): number {
    const heap = this.heap;
    let bid = this.free.findAndClear(this.seed);
    if (bid < 0) {
      // No free block. An active block of this type may have appeared meanwhile.
      const other = this.active[t.id]!.scanFindSet(this.seed);
      if (other >= 0) return other;
      // (K3) Empty blocks kept by any thread go back to `free`, then one more try.
      if (this.reclaimEmpty() > 0) bid = this.free.findAndClear(this.seed);
      if (bid < 0) throw new HeapExhaustedError(t.name, heap.plan.heapBytes, heap.numBlocks - 1);
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
    this.allocated[t.id]!.set(bid);
    this.blockSetChanged();
    this.active[t.id]!.set(bid);
  }

  // ---------------------------------------------------------------- reserve (Alg. 6)

  /** @internal Reserve one slot of block `bid` (Alg. 6); -1 if it is full or invalidated. Sets `this.full`. */
  reserve(bid: number): number {
    const w = this.heap.blockWord(bid) + BLOCK_ALLOC_WORD;
    for (let attempt = 1; ; attempt++) {
      const bm = loadWord(this.mem, w);
      if (bm === ALL_ONES) return -1;
      const pos = ffsFrom(~bm, this.rotate ? this.seed + attempt : 0);
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
    const genOffset = heap.table.types[t]!.genOffset;
    if (genOffset !== 0) {
      if ((loadWord(mem, w + BLOCK_ALLOC_WORD) & mask) === 0) {
        throw new InvalidHandleError(bid * 32 + slot, 'deleted', `slot ${slot} of block ${bid} is not allocated (deleted twice?)`);
      }
      addWord(mem, w + (genOffset >> 2) + slot, 1);
    }
    const before = andWord(mem, w + BLOCK_ALLOC_WORD, ~mask);
    if ((before & mask) === 0) {
      throw new InvalidHandleError(bid * 32 + slot, 'deleted', `slot ${slot} of block ${bid} is not allocated (deleted twice?)`);
    }
    if (this.bitmapAlloc) {
      storeWord(mem, w + BLOCK_ITER_WORD, 0);
      this.allocated[t]!.clear(bid);
      this.blockSetChanged();
      storeWord(mem, w + BLOCK_TYPE_WORD, FREE_TYPE);
      storeWord(mem, w + BLOCK_ALLOC_WORD, ALL_ONES);
      this.free.set(bid);
      return;
    }
    this.released(bid, t, gen, before, mask);
  }

  /** Alg. 2 l. 5–13 (shared by release and the warp cache's releaseMask). */
  private released(bid: number, t: number, gen: number, before: number, mask: number): void {
    const heap = this.heap;
    const mem = this.mem;
    const w = heap.blockWord(bid);
    // A deleted object is not visited by the running do-all. Iteration bits are only set
    // by snapshot(), which runs between do-alls, never concurrently with a release: a
    // plain check first saves the read-modify-write for objects no pass has listed.
    if ((loadWord(mem, w + BLOCK_ITER_WORD) & mask) !== 0) andWord(mem, w + BLOCK_ITER_WORD, ~mask);
    if (before === ALL_ONES) this.active[t]!.set(bid); // FIRST: the block was full
    if ((before & ~mask) === heap.highMask[t]) {
      // EMPTY: this release freed the last object; we are responsible for the block.
      // (K4) The block this thread allocates in stays as it is, empty and open: no
      // invalidation, no bitmap change. flushKept() (or a later emptying) retires it.
      if (this.keep > 0 && this.hint[t] === bid) return;
      if (this.invalidate(bid, gen)) {
        const n = this.keptCount[t]!;
        if (n < this.keep) {
          this.reopenBlock(bid);
          this.kept[t * this.keep + n] = bid;
          this.keptCount[t] = n + 1;
          return;
        }
        this.retireBlock(bid, t);
      }
      if (this.hint[t] === bid) this.hint[t] = 0;
    }
  }

  /**
   * @internal (K1) Open block `bid`, which this thread has invalidated (all bits set,
   * empty), again for its type in a new generation, instead of retiring it: no bitmap
   * changes (it is still allocated and active).
   */
  reopenBlock(bid: number): void {
    const w = this.heap.blockWord(bid);
    const t = loadWord(this.mem, w + BLOCK_TYPE_WORD);
    storeWord(this.mem, w + BLOCK_ITER_WORD, 0);
    addWord(this.mem, w + BLOCK_GEN_WORD, 1);
    storeWord(this.mem, w + BLOCK_ALLOC_WORD, this.heap.highMask[t]!);
  }

  /**
   * Give every kept block back to `free` (K2): those still empty are retired; so is the
   * hint block when it is empty (a block reopened while it was the hint).
   */
  flushKept(): void {
    if (this.keep === 0) return;
    const heap = this.heap;
    for (let t = 0; t < this.keptCount.length; t++) {
      for (let n = this.keptCount[t]!; n > 0; n--) this.retireIfEmpty(this.kept[t * this.keep + n - 1]!);
      this.keptCount[t] = 0;
      const h = this.hint[t]!;
      if (h !== 0 && loadWord(this.mem, heap.blockWord(h) + BLOCK_ALLOC_WORD) === heap.highMask[t]) {
        this.retireIfEmpty(h);
        this.hint[t] = 0;
      }
      if (this.ownFirstBlock && this.hint[t] === 0) this.fresh[t] = 1;
    }
  }

  /** Blocks on this thread's stacks (tests and stats). */
  keptBlocks(): number {
    let n = 0;
    for (let t = 0; t < this.keptCount.length; t++) n += this.keptCount[t]!;
    return n;
  }

  /**
   * (K3) Retire every empty used block of every type (kept by any thread, or left by a
   * lost flush race); returns how many went back to `free`. O(blocks).
   */
  reclaimEmpty(): number {
    const heap = this.heap;
    let n = 0;
    for (let b = 1; b < heap.numBlocks; b++) {
      const w = heap.blockWord(b);
      const t = loadWord(this.mem, w + BLOCK_TYPE_WORD);
      if (t !== FREE_TYPE && loadWord(this.mem, w + BLOCK_ALLOC_WORD) === heap.highMask[t] && this.retireIfEmpty(b)) n++;
    }
    for (let t = 0; t < this.keptCount.length; t++) this.keptCount[t] = 0;
    return n;
  }

  /**
   * (K2) Retire block `bid` if it is empty, through Alg. 7 with the generation read
   * now: if anyone allocates in it (or recycles it) meanwhile, the lock is rolled back
   * and the block stays. No live object pins the generation here, but a block that is
   * freed and re-initialised between the read and the lock has a new generation, so
   * the lock fails (D2); a free block is all ones, so the lock fails too.
   */
  private retireIfEmpty(bid: number): boolean {
    const w = this.heap.blockWord(bid);
    const gen = loadWord(this.mem, w + BLOCK_GEN_WORD);
    // RETRY (emptied again during our lock, Alg. 7 l. 10): a few more tries, then the
    // block stays an empty used block (valid, H4; reclaimed when the heap runs out).
    for (let attempt = 0; attempt < 4; attempt++) {
      const outcome = this.invalidateResolve(bid, gen, this.invalidateLock(bid));
      if (outcome === INVALIDATE_FAILED) return false;
      if (outcome === INVALIDATE_OWNED) {
        this.retireBlock(bid, loadWord(this.mem, w + BLOCK_TYPE_WORD));
        return true;
      }
    }
    return false;
  }

  /**
   * @internal Alg. 2 l. 9–12: return block `bid` of type `t`, which this thread has
   * invalidated, to the free bitmap. Its allocation bitmap stays all ones (free).
   */
  retireBlock(bid: number, t: number): void {
    const heap = this.heap;
    const w = heap.blockWord(bid);
    storeWord(this.mem, w + BLOCK_ITER_WORD, 0);
    this.active[t]!.clear(bid);
    this.allocated[t]!.clear(bid);
    this.blockSetChanged();
    storeWord(this.mem, w + BLOCK_TYPE_WORD, FREE_TYPE);
    this.free.set(bid);
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
    if (beforeRollback !== ALL_ONES) this.active[t]!.clear(bid);
    // Empty again in our generation and nobody else saw it empty: retry (Alg. 7 l. 10).
    if ((beforeRollback & before) !== this.heap.highMask[t] || !sameGeneration) return INVALIDATE_FAILED;
    return INVALIDATE_RETRY;
  }

  // ---------------------------------------------------------------- oracle extensions

  /** Alg. 1 with one slot per call (the body of allocate above, outside a warp). */
  private allocateOne(t: TypeLayout): number {
    const inWarp = this.inWarp;
    this.inWarp = false;
    try {
      return this.allocate(t);
    } finally {
      this.inWarp = inWarp;
    }
  }

  /** BitmapAlloc: a block of one slot straight from `free`. */
  private allocateBitmap(t: TypeLayout): number {
    const bid = this.free.findAndClear(this.seed);
    if (bid < 0) throw new HeapExhaustedError(t.name, this.heap.plan.heapBytes, this.heap.numBlocks - 1);
    const w = this.heap.blockWord(bid);
    storeWord(this.mem, w + BLOCK_TYPE_WORD, t.id);
    storeWord(this.mem, w + BLOCK_ITER_WORD, 0);
    addWord(this.mem, w + BLOCK_GEN_WORD, 1);
    storeWord(this.mem, w + BLOCK_ALLOC_WORD, ALL_ONES);
    this.allocated[t.id]!.set(bid);
    this.blockSetChanged();
    return bid * 32;
  }

  /** (C2) An allocation inside a warp: a cached slot, or one coalesced reservation of the lanes left. */
  private allocateWarp(t: TypeLayout): number {
    const id = t.id;
    const cached = this.cacheMask[id]!;
    if (cached !== 0) {
      const slot = 31 - Math.clz32(cached & -cached);
      this.cacheMask[id] = cached & (cached - 1);
      return this.cacheBlock[id]! * 32 + slot;
    }
    let want = Math.min(32, Math.max(1, this.lanesLeft));
    // (C6) The same lane asks again after using up its reservation: a block's worth, all
    // but one slot when the objects of its last reservation's block are all gone.
    const me = `${this.lanesLeft}:${id}`;
    const again = this.mark === me;
    // (C7) Several threads: the warp's first reservation of the type asks for what the last warp took.
    const learn = this.atomic && !again;
    const first = this.mark === '' || Number(this.mark.slice(this.mark.indexOf(':') + 1)) !== id;
    if (learn && first && this.want[id]! !== 0) want = Math.min(want, this.want[id]!);
    let keeps = false;
    if (again) {
      keeps = loadWord(this.mem, this.heap.blockWord(this.cacheBlock[id]!) + BLOCK_ALLOC_WORD) !== this.heap.highMask[id];
      want = Math.max(want, keeps ? t.slots : t.slots - 1);
    }
    const active = this.active[id]!;
    let bid = this.hint[id]!;
    // (C5) One thread: a full warp that the hint block cannot take whole goes to a kept block.
    let after = 0;
    if (bid !== 0 && want >= t.slots && !this.atomic) {
      const free = popc(~loadWord(this.mem, this.heap.blockWord(bid) + BLOCK_ALLOC_WORD));
      if (free < want) {
        const kept = this.popKept(id);
        if (kept !== 0) {
          after = free > 0 ? bid : 0;
          bid = kept;
        }
      }
    }
    // (C6) Several threads: a lane that keeps what it creates fills a block of its own thread.
    if (keeps && this.atomic) {
      const free = bid === 0 ? 0 : popc(~loadWord(this.mem, this.heap.blockWord(bid) + BLOCK_ALLOC_WORD));
      if (free < want) {
        after = free > 0 ? bid : 0;
        const kept = this.popKept(id);
        bid = kept !== 0 ? kept : this.newBlock(t);
      }
    }
    for (let attempt = 1; ; attempt++) {
      if (bid === 0) {
        bid = this.selectBlock(t, active, attempt);
        if (bid < 0) bid = this.newBlock(t);
      }
      const got = this.reserveMany(bid, want);
      if (got !== 0) {
        const tt = loadWord(this.mem, this.heap.blockWord(bid) + BLOCK_TYPE_WORD);
        if (this.full) this.active[tt]!.clear(bid);
        if (tt === id) {
          this.hint[id] = !this.full || (again && after === 0) ? bid : after;
          this.mark = me;
          this.cacheBlock[id] = bid;
          if (this.atomic) this.want[id] = Math.min((learn && first ? 0 : this.want[id]!) + popc(got), 1 << 16);
          const rest = got & (got - 1);
          if (rest !== 0) this.cacheMask[id] = rest;
          return bid * 32 + (31 - Math.clz32(got & -got));
        }
        let bits = got;
        while (bits !== 0) {
          this.release(bid, 31 - Math.clz32(bits & -bits));
          bits &= bits - 1;
        }
      }
      bid = 0;
      retryPause(attempt, `allocate(${t.name})`);
    }
  }

  /** (C1) Open a warp of `lanes` lanes. */
  warpBegin(lanes: number): void {
    this.inWarp = true;
    this.lanesLeft = lanes;
    this.mark = '';
  }

  /** (C1) The executor's store before each lane: lanes left, the current one included. */
  lane(left: number): void {
    this.lanesLeft = left;
  }

  /** (C3) Close the warp: give every cached slot back, one atomic per block. */
  warpEnd(): void {
    this.inWarp = false;
    this.lanesLeft = 0;
    this.mark = '';
    for (let t = 0; t < this.cacheMask.length; t++) {
      const mask = this.cacheMask[t]!;
      if (mask === 0) continue;
      this.cacheMask[t] = 0;
      if (this.atomic) this.want[t] = Math.max(1, this.want[t]! - popc(mask));
      const bid = this.cacheBlock[t]!;
      const w = this.heap.blockWord(bid);
      const gen = loadWord(this.mem, w + BLOCK_GEN_WORD);
      const tt = loadWord(this.mem, w + BLOCK_TYPE_WORD);
      const genOffset = this.heap.table.types[tt]!.genOffset;
      if (genOffset !== 0) {
        for (let bits = mask; bits !== 0; bits &= bits - 1) addWord(this.mem, w + (genOffset >> 2) + (31 - Math.clz32(bits & -bits)), 1);
      }
      const before = andWord(this.mem, w + BLOCK_ALLOC_WORD, ~mask);
      this.released(bid, tt, gen, before, mask);
    }
  }
}
