/**
 * The allocator of a thread: a thin binding of the allocator core, which is written in
 * Rust and compiled into the WebAssembly module (wasm/src/alloc/core.rs: the DynaSOAr
 * allocator, paper §3 Alg. 1, 2; §4.2 Alg. 6 and per-warp request coalescing; §5.2 Alg. 7;
 * kept blocks K1–K5, the deliberate differences D1–D3, the variants and the executor
 * contract are documented there). One implementation serves every CPU thread, and a Rust
 * kernel of the same module can allocate by calling the core directly.
 *
 * What this binding adds:
 *  - an allocator *state* in the heap (layout.ts, "Allocator states"), claimed per
 *    Allocator from the heap's claim bitmap and given back by dispose(); the state holds
 *    everything the core keeps per thread (hints, kept stacks, K5 flags, warp cache, seed,
 *    retry limits, last error);
 *  - the retry limits of this realm (shared.ts retryLimits) copied into the state before
 *    every call that may retry;
 *  - typed errors: the core returns a code and leaves the details in the state; the
 *    binding throws HeapExhaustedError (class, heap size, blocks), InvalidHandleError
 *    (handle, reason, detail), ContentionError (naming the operation) or
 *    HeapCorruptionError, exactly as the TypeScript allocator did;
 *  - count() and keptBlocks(), which only read the heap.
 *
 * Every call goes through the thread's own module instance (Heap.wasm, runtime/wasm.ts W2);
 * several Allocators on one thread share it (the tests run several on one heap, standing
 * for threads).
 */
import { popc } from './bits.js';
import type { HierarchicalBitmap } from './bitmap.js';
import { ContentionError, HeapCorruptionError, HeapExhaustedError, InvalidHandleError, UsageError } from './errors.js';
import type { Heap } from './heap.js';
import {
  ALLOC_ERR_BAD_TYPE,
  ALLOC_ERR_CONTENTION,
  ALLOC_ERR_CORRUPT,
  ALLOC_ERR_TRANSITION,
  TRF_ACTIVE,
  TRF_ALLOC,
  TRF_ALLOCATED,
  TRF_FREE,
  TRF_TYPE,
  ALLOC_ERR_DELETED,
  ALLOC_ERR_EXHAUSTED,
  ALLOC_ERR_FORGED_BLOCK,
  ALLOC_ERR_FORGED_SLOT,
  ALLOC_ERR_FREE_BLOCK,
  ALLOC_OP_ALLOCATE,
  ALLOC_OP_ALLOCATE_MANY,
  ALLOC_OP_BITMAP_CLEAR,
  ALLOC_OP_BITMAP_SET,
  ALLOC_OP_FIND_AND_CLEAR,
  ALLOC_OP_INVALIDATE,
  ALLOC_OP_RESERVE,
  ALLOC_OP_RESERVE_MANY,
  BLOCK_ALLOC_WORD,
  DEFAULT_KEEP_BLOCKS,
  ROLLBACK_LOG_WORDS,
  S_CACHED,
  S_ERROR,
  S_ERROR_A,
  S_ERROR_B,
  S_ERROR_C,
  S_FULL,
  S_LANES_LEFT,
  S_MAX_ATTEMPTS,
  S_ROLLBACK_LOG,
  S_ROLLBACKS,
  S_SEED,
  S_SPIN,
  S_TYPES,
  S_WARP,
  SLOT_BITS,
  TS_CACHE_MASK,
  TS_KEPT,
  TS_WORDS,
  type TypeLayout,
} from './layout.js';
import { retryLimits } from './shared.js';
import { FastRelease, RELEASE_BY_CORE, takeCachedSlot } from './alloc-fast-path.js';
import type { WasmInstance } from './wasm.js';

export { DEFAULT_KEEP_BLOCKS };

/** @internal Outcomes of Allocator.invalidateResolve. */
export const INVALIDATE_FAILED = 0;
/** @internal */
export const INVALIDATE_OWNED = 1;
/** @internal */
export const INVALIDATE_RETRY = -1;

/** Handles the core writes per allocateMany call: the thread slot's scratch area (runtime/wasm.ts). */
const MANY_CHUNK_BYTES = 4096;

type F = (...a: number[]) => number;

/** The allocator core's exports (wasm/src/alloc/ffi.rs). */
interface CoreExports {
  claim: F;
  releaseState: F;
  allocate: F;
  allocateMany: F;
  release: F;
  releaseMany: F;
  flushKept: F;
  reclaimEmpty: F;
  setOwnFirst: F;
  warpBegin: F;
  warpEnd: F;
  newBlock: F;
  initializeBlock: F;
  reserve: F;
  invalidate: F;
  invalidateLock: F;
  invalidateResolve: F;
  retireBlock: F;
  reopenBlock: F;
  releaseBegin: F;
  releaseEnd: F;
  releaseEndMany: F;
  defragTake: F;
  defragVacate: F;
}

function coreExports(wasm: WasmInstance): CoreExports {
  const fn = (name: string): F => {
    const f = wasm.fn(`smmo_alloc_${name}`);
    if (f === undefined)
      throw new UsageError(
        `the WebAssembly module ${wasm.file} has no export smmo_alloc_${name}; rebuild it (node scripts/build-wasm.mjs)`,
      );
    return f;
  };
  return {
    claim: fn('claim'),
    releaseState: fn('release_state'),
    allocate: fn('allocate'),
    allocateMany: fn('allocate_many'),
    release: fn('release'),
    releaseMany: fn('release_many'),
    flushKept: fn('flush_kept'),
    reclaimEmpty: fn('reclaim_empty'),
    setOwnFirst: fn('set_own_first'),
    warpBegin: fn('warp_begin'),
    warpEnd: fn('warp_end'),
    newBlock: fn('new_block'),
    initializeBlock: fn('initialize_block'),
    reserve: fn('reserve'),
    invalidate: fn('invalidate'),
    invalidateLock: fn('invalidate_lock'),
    invalidateResolve: fn('invalidate_resolve'),
    retireBlock: fn('retire_block'),
    reopenBlock: fn('reopen_block'),
    releaseBegin: fn('release_begin'),
    releaseEnd: fn('release_end'),
    releaseEndMany: fn('release_end_many'),
    defragTake: fn('defrag_take'),
    defragVacate: fn('defrag_vacate'),
  };
}

export class Allocator {
  /** Most blocks kept per type (K1; the heap's keepBlocks); 0 retires every emptied block at once (the paper's behaviour). */
  readonly keep: number;
  /** Word index of this thread's state in the heap. */
  readonly state: number;
  /**
   * Int32Array index of the state's S_LANES_LEFT word: the do-all executor stores the lanes
   * left in the warp (the current one included) there before each lane (core.rs C1).
   */
  readonly laneWord: number;
  private readonly i32: Int32Array;
  private readonly x: CoreExports;
  private readonly numTypes: number;
  /** The limits last copied into the state (retryLimits may change between calls). */
  private spin = -1;
  private max = -1;
  private disposed = false;
  /** Int32Array index of the state's TS_CACHE_MASK word of type 0 (alloc-fast-path.ts F1); type t's is + t × TS_WORDS. */
  private readonly cacheMask0: number;
  /** The JavaScript first half of a release (alloc-fast-path.ts F2, F3). */
  /** @internal The JavaScript first half of a release (alloc-fast-path.ts F2, F3); compiled methods call it directly. */
  readonly fast: FastRelease;
  /** fast.enabled (a heap of one thread, not BitmapAlloc), tested before the call. */
  private readonly fastRelease: boolean;

  constructor(
    readonly heap: Heap,
    seed: number,
  ) {
    this.i32 = heap.i32;
    this.x = coreExports(heap.wasm);
    this.keep = heap.plan.keepBlocks;
    this.numTypes = heap.table.types.length;
    const st = this.x.claim(seed >>> 0, 0, retryLimits.spinAttempts, retryLimits.maxAttempts);
    if (st < 0) {
      throw new UsageError(
        `all ${heap.plan.states} allocator states of this heap are taken: each thread that allocates holds one until its ` +
          `runtime is closed (layout.ts allocatorStates); close runtimes you no longer use, or use fewer threads`,
      );
    }
    this.state = st;
    this.laneWord = st + S_LANES_LEFT;
    this.spin = retryLimits.spinAttempts;
    this.max = retryLimits.maxAttempts;
    this.cacheMask0 = st + S_TYPES + TS_CACHE_MASK;
    const flags = heap.flags;
    this.fast = new FastRelease(
      this.i32,
      st,
      heap.blocksWord,
      heap.blockWords,
      heap.numBlocks,
      this.numTypes,
      heap.slots,
      heap.genOffset,
      heap.highMask,
      !flags.atomic && !flags.bitmapAlloc,
      this.x.releaseEnd,
      this.x.releaseEndMany,
    );
    this.fastRelease = this.fast.enabled;
  }

  /** Rotation seed (§4.2): differs per thread, advanced on every retry inside the core. */
  get seed(): number {
    return this.i32[this.state + S_SEED]! >>> 0;
  }
  set seed(v: number) {
    this.i32[this.state + S_SEED] = v | 0;
  }

  /** Copy retryLimits into the state when they changed (tests lower them). */
  private limits(): void {
    const spin = retryLimits.spinAttempts;
    const max = retryLimits.maxAttempts;
    if (spin !== this.spin || max !== this.max) {
      this.i32[this.state + S_SPIN] = spin;
      this.i32[this.state + S_MAX_ATTEMPTS] = max;
      this.spin = spin;
      this.max = max;
    }
  }

  /** @internal Copy the retry limits into the state before a kernel allocates with it (runtime/kernels.ts). */
  syncLimits(): void {
    this.limits();
  }

  /** @internal The typed error of the last failure on this state (an allocating kernel returned its code: runtime/kernels.ts). */
  lastError(): Error {
    return this.error();
  }

  /**
   * (K5) Give this thread its own first block per pass (keep > 0). The runtime and the
   * workers switch it on only with threads > 1 and RuntimeOptions.allocator.ownFirstBlock.
   */
  setOwnFirstBlock(on: boolean): void {
    this.x.setOwnFirst(this.state, on ? 1 : 0);
  }

  // ---------------------------------------------------------------- allocate / release

  /** Reserve one slot for a new object of concrete type `t`; returns its handle. */
  allocate(t: TypeLayout): number {
    // (alloc-fast-path.ts F1) A slot this warp has reserved already: no call into the core.
    const mw = this.cacheMask0 + t.id * TS_WORDS;
    if (this.i32[mw] !== 0) return takeCachedSlot(this.i32, mw, this.state + S_CACHED);
    if (retryLimits.spinAttempts !== this.spin || retryLimits.maxAttempts !== this.max) this.limits();
    const h = this.x.allocate(this.state, t.id);
    if (h === 0) this.fail();
    return h >>> 0;
  }

  /**
   * Reserve `count` slots of type `t` with coalesced requests (§4.2, XMalloc): one atomic
   * per block reserves as many slots as the block has, spilling to further blocks (the
   * NoCoal and BitmapAlloc variants reserve one at a time). Handles are written to
   * out[at …]. On an error every slot reserved by this call is released again before the
   * error propagates. The core writes up to 1024 handles per call into the thread's scratch
   * area; a larger request is made of several calls (an error in a later one releases the
   * earlier ones' slots too, after the core released its own).
   */
  allocateMany(t: TypeLayout, count: number, out: Uint32Array | number[], at = 0): void {
    this.limits();
    const wasm = this.heap.wasm;
    const chunk = Math.min(MANY_CHUNK_BYTES, wasm.scratchBytes) >> 2;
    const u32 = this.heap.u32;
    const scratch = wasm.scratch >>> 2;
    let done = 0;
    while (done < count) {
      const k = Math.min(chunk, count - done);
      if (this.x.allocateMany(this.state, t.id, k, wasm.scratch) !== 0) {
        const error = this.error();
        for (let j = 0; j < done; j++) this.releaseHandle(out[at + j]!);
        throw error;
      }
      for (let j = 0; j < k; j++) out[at + done + j] = u32[scratch + j]!;
      done += k;
    }
  }

  /** Free the object named by `handle` (no type check; see Runtime for checked mode). */
  releaseHandle(handle: number): void {
    if (retryLimits.spinAttempts !== this.spin || retryLimits.maxAttempts !== this.max) this.limits();
    // (alloc-fast-path.ts F2) The first half in JavaScript; the core only where the block changes state (or F3).
    if (this.fastRelease) {
      const r = this.fast.release(handle);
      if (r === 0) return;
      if (r !== RELEASE_BY_CORE) this.fail();
    }
    if (this.x.release(this.state, handle >>> SLOT_BITS, handle & 31) !== 0) this.fail();
  }

  /** @internal The rest of a release after `fast.release(handle)` returned `r` ≠ 0 (compiled methods). */
  releaseRest(handle: number, r: number): void {
    if (r !== RELEASE_BY_CORE) this.fail();
    this.limits();
    if (this.x.release(this.state, handle >>> SLOT_BITS, handle & 31) !== 0) this.fail();
  }

  /**
   * @internal Free the objects in slots `mask` of block `bid` with one atomic (core.rs
   * release_many): a compiled method's deferred deletions of its own objects, made when
   * its lanes leave the block (runtime/compiler/emit-js.ts).
   */
  releaseMany(bid: number, mask: number): void {
    // (alloc-fast-path.ts F5) in JavaScript on a heap of one thread; the core where the block changes state (or F3).
    if (this.fastRelease) {
      const r = this.fast.releaseMask(bid, mask);
      if (r === 0) return;
      if (r !== RELEASE_BY_CORE) this.fail();
    }
    this.limits();
    if (this.x.releaseMany(this.state, bid, mask) !== 0) this.fail();
  }

  /**
   * @internal A compiled method's deferred deletions in block `bid` (runtime/compiler/emit-js.ts
   * deferOthers): releaseMany, and (G4) where the core refused the whole mask before writing
   * anything — a block or slot no object can be in — one release per slot, lowest first, so
   * that the valid deletions are made and the error thrown is the bad handle's, as
   * with immediate releases. (A slot already free is reported by release_many itself, after
   * the others are released.)
   */
  releaseDeferred(bid: number, mask: number): void {
    try {
      this.releaseMany(bid, mask);
    } catch (e) {
      if (!(e instanceof InvalidHandleError) || e.reason === 'deleted') throw e;
      for (let bits = mask; bits !== 0; bits &= bits - 1) this.release(bid, 31 - Math.clz32(bits & -bits));
      throw e; // not reached: the bad slot's release throws
    }
  }

  /** Free slot `slot` of block `bid` (Alg. 2). */
  release(bid: number, slot: number): void {
    this.limits();
    if (this.x.release(this.state, bid, slot) !== 0) this.fail();
  }

  /**
   * (core.rs C1) Open a warp of `lanes` lanes: allocations until warpEnd are coalesced.
   * The warp words are part of the state protocol (layout.ts): opening a warp is two
   * stores, S_WARP = 1 and S_LANES_LEFT = lanes, exactly what smmo_alloc_warp_begin does;
   * the executor's generated loop makes them inline.
   */
  warpBegin(lanes: number): void {
    this.i32[this.state + S_WARP] = 1;
    this.i32[this.state + S_LANES_LEFT] = lanes;
  }

  /**
   * (C3) Close the warp: slots reserved for it and not used go back (one call into the core,
   * only when a cache holds slots: otherwise closing is the two stores smmo_alloc_warp_end
   * makes before it finds the caches empty). Idempotent.
   */
  warpEnd(): void {
    if (this.i32[this.state + S_CACHED] !== 0) {
      this.limits();
      if (this.x.warpEnd(this.state) !== 0) this.fail();
      return;
    }
    this.i32[this.state + S_WARP] = 0;
    this.i32[this.state + S_LANES_LEFT] = 0;
  }

  /**
   * Give every kept block back to `free` (K2): those still empty are retired; so is the
   * hint block when it is empty (a block reopened while it was the hint).
   */
  flushKept(): void {
    if (this.keep === 0) return;
    this.limits();
    if (this.x.flushKept(this.state) !== 0) this.fail();
  }

  /**
   * Give back the state `st` of another thread that died or was terminated and will never
   * run again (workers/pool.ts): slots its open warp had cached for its lanes (C3) and its
   * kept blocks (K2) go back, then the state itself, so replacement threads do not run out
   * of states and count() does not see reserved slots as objects. A thread killed inside
   * an allocator operation may have left the state half-updated: the core's own checks then
   * fail here, this returns false, and the caller's validateHeap() says what is wrong.
   */
  reclaimState(st: number): boolean {
    if (st === this.state) throw new UsageError(`reclaimState: state ${st} is this allocator's own`);
    let ok = true;
    if (this.i32[st + S_CACHED] !== 0) ok = this.x.warpEnd(st) === 0;
    else {
      this.i32[st + S_WARP] = 0;
      this.i32[st + S_LANES_LEFT] = 0;
    }
    if (this.keep !== 0 && this.x.flushKept(st) !== 0) ok = false;
    this.x.releaseState(st);
    return ok;
  }

  /** Blocks on this thread's stacks (tests and stats). */
  keptBlocks(): number {
    let n = 0;
    for (let t = 0; t < this.numTypes; t++) n += this.i32[this.state + S_TYPES + t * TS_WORDS + TS_KEPT]!;
    return n;
  }

  /**
   * (K3) Retire every empty used block of every type (kept by any thread, or left by a
   * lost flush race); returns how many went back to `free`. O(blocks).
   */
  reclaimEmpty(): number {
    this.limits();
    const n = this.x.reclaimEmpty(this.state);
    if (n < 0) this.fail();
    return n;
  }

  /** Live objects of concrete type `t` (a scan of its blocks; exact when quiescent). */
  count(t: TypeLayout): number {
    const heap = this.heap;
    const list = new Uint32Array(heap.numBlocks);
    const n = heap.allocated[t.id]!.indices(list);
    let live = 0;
    for (let i = 0; i < n; i++) live += popc(Atomics.load(this.i32, heap.blockWord(list[i]!) + BLOCK_ALLOC_WORD) & ~t.highMask);
    return live;
  }

  /** Flush the kept blocks and give the state back (idempotent); the allocator must not be used afterwards. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    try {
      this.flushKept();
    } finally {
      this.x.releaseState(this.state);
    }
  }

  // ---------------------------------------------------------------- block steps
  // The core's atomic building blocks, exported so that test/interleavings.test.ts and
  // test/kept-blocks.test.ts can run them one at a time in a chosen order (forced
  // interleavings on one thread); production code calls allocate/release.

  /**
   * @internal The first half of a release (Alg. 2 l. 1–4, core.rs release_begin): the
   * slot's bit is cleared; returns the block's generation and type read before, and the
   * allocation word before the clear. The release is then unfinished: the caller (a
   * forced-interleaving test) goes on with invalidate/retireBlock in the order it tests.
   */
  releaseBegin(handle: number): { gen: number; type: number; before: number } {
    this.limits();
    const wasm = this.heap.wasm;
    if (this.x.releaseBegin(this.state, handle >>> SLOT_BITS, handle & 31, wasm.scratch) !== 0) this.fail();
    const at = wasm.scratch >>> 2;
    const u32 = this.heap.u32;
    return { gen: u32[at]!, type: u32[at + 1]!, before: u32[at + 2]! | 0 };
  }

  /** @internal Take a free block for type `t` (Alg. 1 l. 4–7); returns its index. */
  newBlock(t: TypeLayout): number {
    this.limits();
    const b = this.x.newBlock(this.state, t.id);
    if (b < 0) this.fail();
    return b;
  }

  /** @internal initialize_block (Alg. 1 l. 5–7) of block `bid`, whose free bit the caller has just cleared. */
  initializeBlock(bid: number, t: TypeLayout): void {
    this.limits();
    if (this.x.initializeBlock(this.state, bid, t.id) !== 0) this.fail();
  }

  /** @internal Reserve one slot of block `bid` (Alg. 6); -1 if it is full or invalidated. */
  reserve(bid: number): number {
    this.limits();
    const s = this.x.reserve(this.state, bid);
    if (s === -2) this.fail();
    return s;
  }

  /** @internal Whether the last reserve() filled its block. */
  get full(): boolean {
    return this.i32[this.state + S_FULL] !== 0;
  }

  /** @internal Lock-and-resolve (Alg. 7) until decided: true if this thread owns the emptied block (generation `gen`, D2). */
  invalidate(bid: number, gen: number): boolean {
    this.limits();
    const r = this.x.invalidate(this.state, bid, gen);
    if (r === -2) this.fail();
    return r === 1;
  }

  /** @internal Alg. 7 l. 1: set every bit of the allocation bitmap; returns the bitmap before. */
  invalidateLock(bid: number): number {
    return this.x.invalidateLock(this.state, bid) | 0;
  }

  /** @internal Alg. 7 l. 2–13: INVALIDATE_OWNED, INVALIDATE_FAILED or INVALIDATE_RETRY. */
  invalidateResolve(bid: number, gen: number, before: number): number {
    this.limits();
    const r = this.x.invalidateResolve(this.state, bid, gen, before);
    if (r === -2) this.fail();
    return r;
  }

  /** @internal Alg. 2 l. 9–12: return block `bid` of type `t`, which this thread has invalidated, to `free`. */
  retireBlock(bid: number, t: number): void {
    this.limits();
    if (this.x.retireBlock(this.state, bid, t) !== 0) this.fail();
  }

  /** @internal (K1) Open block `bid`, which this thread has invalidated, again in a new generation. */
  reopenBlock(bid: number): void {
    this.x.reopenBlock(this.state, bid);
  }

  /** @internal The slots the core rolled back after a type change (D1) so far: [block, slot] pairs, at most the last 8. */
  rollbacks(): [number, number][] {
    const n = this.i32[this.state + S_ROLLBACKS]!;
    const out: [number, number][] = [];
    for (let k = Math.max(0, n - ROLLBACK_LOG_WORDS); k < n; k++) {
      const h = this.i32[this.state + S_ROLLBACK_LOG + (k % ROLLBACK_LOG_WORDS)]! >>> 0;
      out.push([h >>> SLOT_BITS, h & 31]);
    }
    return out;
  }

  /** @internal How many D1 rollbacks the core made so far. */
  rollbackCount(): number {
    return this.i32[this.state + S_ROLLBACKS]!;
  }

  // ---------------------------------------------------------------- defragmentation
  // Stop-the-world block steps of runtime/defrag.ts (core.rs defrag_take, defrag_vacate).

  /** @internal Reserve `want` free slots (lowest first) of target block `bid` of type `t`; returns their mask. */
  defragTake(bid: number, t: number, want: number): number {
    this.limits();
    const m = this.x.defragTake(this.state, bid, t, want);
    if (m === 0) this.fail();
    return m;
  }

  /** @internal Release the slots `mask` (every live object, all moved) of source block `bid` of type `t`, and retire the block. */
  defragVacate(bid: number, t: number, mask: number): void {
    this.limits();
    if (this.x.defragVacate(this.state, bid, t, mask) !== 0) this.fail();
  }

  // ---------------------------------------------------------------- errors

  private fail(): never {
    throw this.error();
  }

  /** The typed error of the core's last failure on this state. */
  private error(): Error {
    const i32 = this.i32;
    const st = this.state;
    const code = i32[st + S_ERROR]!;
    const a = i32[st + S_ERROR_A]! >>> 0;
    const b = i32[st + S_ERROR_B]! >>> 0;
    const c = i32[st + S_ERROR_C]! >>> 0;
    const heap = this.heap;
    const types = heap.table.types;
    switch (code) {
      case ALLOC_ERR_EXHAUSTED:
        return new HeapExhaustedError(types[a]?.name ?? `type ${a}`, heap.plan.heapBytes, heap.numBlocks - 1);
      case ALLOC_ERR_FORGED_BLOCK:
        return new InvalidHandleError(a * 32 + b, 'forged', `block ${a} is not a block of this heap (1 … ${heap.numBlocks - 1})`);
      case ALLOC_ERR_FORGED_SLOT:
        return new InvalidHandleError(a * 32 + b, 'forged', `slot ${b} does not exist in block ${a} (${c} slots)`);
      case ALLOC_ERR_FREE_BLOCK:
        return new InvalidHandleError(a * 32 + b, 'free-block', `block ${a} holds no objects; the object was already deleted`);
      case ALLOC_ERR_DELETED:
        return new InvalidHandleError(a * 32 + b, 'deleted', `slot ${b} of block ${a} is not allocated (deleted twice?)`);
      case ALLOC_ERR_CORRUPT:
        return new HeapCorruptionError([
          `block ${a}: its header names type ${c | 0} (not a type of this heap) or its allocation bitmap lost reserved slots (${b})`,
        ]);
      case ALLOC_ERR_TRANSITION: {
        const step = ['', 'FREE → ACTIVE', 'ACTIVE → FULL', 'FULL → ACTIVE', 'ACTIVE → FREE', 'kept block reopened'][b] ?? `step ${b}`;
        const parts = (
          [
            [TRF_ALLOC, 'its allocation bitmap'],
            [TRF_TYPE, 'its type word'],
            [TRF_FREE, 'its free bit'],
            [TRF_ALLOCATED, 'its allocated[T] bit'],
            [TRF_ACTIVE, 'its active[T] bit'],
          ] as const
        )
          .filter(([bit]) => (c & bit) !== 0)
          .map(([, what]) => what);
        return new HeapCorruptionError([
          `block ${a}, transition ${step} (SMMO_DEBUG check): ${parts.join(', ')} disagree with the block's state`,
        ]);
      }
      case ALLOC_ERR_BAD_TYPE:
        return new UsageError(`allocate: type id ${a} is not a concrete type of this heap`);
      case ALLOC_ERR_CONTENTION:
        return new ContentionError(
          `${this.operation(a, b, c)}: gave up after ${this.max} attempts. Another thread may have died in the ` +
            `middle of a heap operation, or the heap's control words were overwritten; ` +
            `run validateHeap() to see which invariant is broken.`,
        );
      default:
        return new HeapCorruptionError([`the allocator core failed with unknown code ${code}`]);
    }
  }

  /** The operation a ContentionError names (ALLOC_OP_* with its arguments). */
  private operation(op: number, a: number, b: number): string {
    const types = this.heap.table.types;
    const bitmap = (id: number): string =>
      id === 0 ? 'free' : `${id % 2 === 1 ? 'allocated' : 'active'}[${types[(id - 1) >> 1]?.name ?? '?'}]`;
    switch (op) {
      case ALLOC_OP_ALLOCATE:
        return `allocate(${types[a]?.name ?? a})`;
      case ALLOC_OP_ALLOCATE_MANY:
        return `allocateMany(${types[a]?.name ?? a})`;
      case ALLOC_OP_RESERVE:
        return `reserve(block ${a})`;
      case ALLOC_OP_RESERVE_MANY:
        return `reserveMany(block ${a})`;
      case ALLOC_OP_INVALIDATE:
        return `invalidate(block ${a})`;
      case ALLOC_OP_BITMAP_SET:
        return `${bitmap(a)}.set(${b & 0x7ffffff}) at level ${b >>> 27}`;
      case ALLOC_OP_BITMAP_CLEAR:
        return `${bitmap(a)}.clear(${b & 0x7ffffff}) at level ${b >>> 27}`;
      case ALLOC_OP_FIND_AND_CLEAR:
        return `${bitmap(a)}.findAndClear`;
      default:
        return `operation ${op}`;
    }
  }
}

/**
 * The bitmap operations of the allocator core (wasm/src/alloc/bitmap.rs, Alg. 3–4) on any
 * HierarchicalBitmap in the module's memory: for tests and host code that must change a
 * bitmap (runtime/bitmap.ts itself only reads). Always atomic; retry limits from
 * retryLimits; a loop that runs out throws ContentionError naming the bitmap, position and level.
 */
export class WasmBitmaps {
  private readonly f: Record<string, F>;

  constructor(wasm: WasmInstance) {
    this.f = {};
    for (const name of [
      'set',
      'clear',
      'try_set',
      'try_clear',
      'try_find_set',
      'find_set',
      'scan_find_set',
      'find_and_clear',
      'fill',
      'reset',
    ]) {
      const fn = wasm.fn(`smmo_bitmap_${name}`);
      if (fn === undefined) throw new UsageError(`the WebAssembly module ${wasm.file} has no export smmo_bitmap_${name}`);
      this.f[name] = fn;
    }
  }

  private check(bm: HierarchicalBitmap, pos: number, what: string, r: number): number {
    if (r < 0) {
      throw new ContentionError(
        `${bm.name}.${what}(${pos}) at level ${-1 - r}: gave up after ${retryLimits.maxAttempts} attempts. Another thread may have ` +
          `died in the middle of a heap operation, or the heap's control words were overwritten.`,
      );
    }
    return r;
  }

  /** Set the bit, changing it from 0 to 1: waits (bounded) while it is already 1. */
  set(bm: HierarchicalBitmap, pos: number): void {
    this.check(bm, pos, 'set', this.f['set']!(bm.base, bm.bits, pos, retryLimits.spinAttempts, retryLimits.maxAttempts));
  }
  /** Clear the bit, changing it from 1 to 0: waits (bounded) while it is already 0 (Alg. 3). */
  clear(bm: HierarchicalBitmap, pos: number): void {
    this.check(bm, pos, 'clear', this.f['clear']!(bm.base, bm.bits, pos, retryLimits.spinAttempts, retryLimits.maxAttempts));
  }
  /** Set the bit if it is 0; returns whether this call changed it. */
  trySet(bm: HierarchicalBitmap, pos: number): boolean {
    return (
      this.check(bm, pos, 'trySet', this.f['try_set']!(bm.base, bm.bits, pos, retryLimits.spinAttempts, retryLimits.maxAttempts)) === 1
    );
  }
  /** Clear the bit if it is 1; returns whether this call changed it. */
  tryClear(bm: HierarchicalBitmap, pos: number): boolean {
    return (
      this.check(bm, pos, 'tryClear', this.f['try_clear']!(bm.base, bm.bits, pos, retryLimits.spinAttempts, retryLimits.maxAttempts)) === 1
    );
  }
  /** Alg. 4: some set bit, or -1 (may fail while bits are set, B3). `rotate` false: the search starts at bit 0. */
  tryFindSet(bm: HierarchicalBitmap, seed: number, rotate = true): number {
    return this.f['try_find_set']!(bm.base, bm.bits, seed >>> 0, rotate ? 1 : 0);
  }
  /** Some set bit reachable through set upper bits (the descent with backtracking, bitmap.rs B5), or -1. */
  findSet(bm: HierarchicalBitmap, seed: number, rotate = true): number {
    return this.f['find_set']!(bm.base, bm.bits, seed >>> 0, rotate ? 1 : 0);
  }
  /** Some set bit by a scan of level 0, or -1. */
  scanFindSet(bm: HierarchicalBitmap, seed: number, rotate = true): number {
    return this.f['scan_find_set']!(bm.base, bm.bits, seed >>> 0, rotate ? 1 : 0);
  }
  /** Find a set bit and clear it; -1 only if none is set. */
  findAndClear(bm: HierarchicalBitmap, seed: number, rotate = true): number {
    const r = this.f['find_and_clear']!(bm.base, bm.bits, seed >>> 0, rotate ? 1 : 0, retryLimits.spinAttempts, retryLimits.maxAttempts);
    if (r === -2) {
      throw new ContentionError(`${bm.name}.findAndClear: gave up after ${retryLimits.maxAttempts} attempts.`);
    }
    return r;
  }
  /** Set every position (formatting: nothing else may use the bitmap meanwhile). */
  fill(bm: HierarchicalBitmap): void {
    this.f['fill']!(bm.base, bm.bits);
  }
  /** Clear every word of every level (formatting). */
  reset(bm: HierarchicalBitmap): void {
    this.f['reset']!(bm.base, bm.bits);
  }
}
