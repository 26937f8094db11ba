/**
 * The heap: one shared WebAssembly.Memory laid out by layout.ts, its typed-array
 * views, its block-state bitmaps (read-only views), the thread's instance of the
 * WebAssembly module (the allocator core and the kernels), and validateHeap().
 *
 * A Heap object is a per-thread *view*: the main thread creates the memory
 * (`Heap.create`), workers attach to the same memory (`Heap.attach`) and build views
 * of their own, each with its own module instance and thread slot (runtime/wasm.ts W2).
 * No JavaScript object is shared; only bytes are.
 */
import { bitmapLevelWords, HierarchicalBitmap } from './bitmap.js';
import { DEBUG_LEVEL } from './debug.js';
import { popc } from './bits.js';
import { HeapCorruptionError, UsageError } from './errors.js';
import {
  ALL_ONES,
  ALLOC_FLAG_ATOMIC,
  ALLOC_FLAG_BITMAP_ALLOC,
  ALLOC_FLAG_DEBUG,
  ALLOC_FLAG_COALESCING,
  ALLOC_FLAG_ROTATION,
  ALLOC_FLAG_OWN_FIRST,
  allocatorStates,
  BLOCK_ALLOC_WORD,
  BLOCK_ITER_WORD,
  BLOCK_TYPE_WORD,
  FREE_TYPE,
  HEADER_OFFSET,
  H_ALLOC_FLAGS,
  H_BITMAP_LEVELS,
  H_BLOCKS_OFFSET,
  H_BLOCK_BYTES,
  H_BLOCK_LIST_OFFSET,
  H_BLOCK_SET_EPOCH,
  H_FREE_BITMAP_WORD,
  H_HEAP_BYTES,
  H_KEEP_BLOCKS,
  H_LEVEL0_WORDS,
  H_LEVEL_OFFSETS,
  H_MAGIC,
  H_NUM_BLOCKS,
  H_NUM_STATES,
  H_NUM_TYPES,
  H_STATE_WORD,
  H_STATE_WORDS,
  H_TYPE_TABLE_WORD,
  H_VERSION,
  LAYOUT_VERSION,
  MAGIC,
  MAX_BITMAP_LEVELS,
  planHeap,
  T_ACTIVE_WORD,
  T_ALLOCATED_WORD,
  T_GEN_OFFSET,
  T_HIGH_MASK,
  T_SLOTS,
  TYPE_WORDS,
  type HeapPlan,
  type TypeTable,
} from './layout.js';
import { loadWasmModule, WasmInstance, wasmFile, type WasmOptions } from './wasm.js';

export { FREE_TYPE };

/** How Heap.create lays out and formats a heap. */
export interface HeapOptions {
  /**
   * Threads that will use the heap (default 1). One thread: the allocator core uses plain
   * loads and stores; more: sequentially consistent atomics (wasm/src/alloc/mem.rs M1).
   * Also sets how many allocator states are planned (layout.ts allocatorStates).
   */
  threads?: number;
  /** Override the memory-operation choice of `threads` (tests run the atomic path on one thread). */
  atomic?: boolean;
  /** Allocator states to plan (default allocatorStates(threads)). */
  states?: number;
  /** Emptied blocks each thread keeps per type (default DEFAULT_KEEP_BLOCKS; forced 0 for BitmapAlloc). */
  keepBlocks?: number;
  /** Bitmap rotation (§4.2); false is the NoShift variant. Default true. */
  rotation?: boolean;
  /** Per-warp request coalescing (§4.2); false is the NoCoal variant. Default true (false for BitmapAlloc). */
  coalescing?: boolean;
  /** Each thread of a multi-threaded runtime opens a block of its own first in every pass (core.rs K5). Default false. */
  ownFirstBlock?: boolean;
  /** Which build of the module, and where it is. */
  wasm?: WasmOptions;
}

/** The allocator variant a heap was formatted for (its header flags). */
export interface AllocatorFlags {
  atomic: boolean;
  rotation: boolean;
  coalescing: boolean;
  bitmapAlloc: boolean;
  ownFirstBlock: boolean;
}

export class Heap {
  readonly buffer: SharedArrayBuffer;
  readonly i8: Int8Array;
  readonly u8: Uint8Array;
  readonly i16: Int16Array;
  readonly u16: Uint16Array;
  readonly i32: Int32Array;
  readonly u32: Uint32Array;
  readonly f32: Float32Array;
  readonly f64: Float64Array;
  readonly free: HierarchicalBitmap;
  /** allocated[t] / active[t] by type id; null for abstract types. */
  readonly allocated: readonly (HierarchicalBitmap | null)[];
  readonly active: readonly (HierarchicalBitmap | null)[];
  /** Word index of block 0's header; block b's header is at blocksWord + b * blockWords. */
  readonly blocksWord: number;
  readonly blockWords: number;
  readonly numBlocks: number;
  /** highMask by type id (0 for 32 slots; unused for abstract types). */
  readonly highMask: Int32Array;
  /** Slots by type id. */
  readonly slots: Int32Array;
  /** Byte offset of the generation array in a block, by type id (0: none; layout.ts genOffset). */
  readonly genOffset: Int32Array;
  /** This thread's instance of the module (allocator core, kernels) and its thread slot. */
  readonly wasm: WasmInstance;

  private constructor(
    readonly memory: WebAssembly.Memory,
    readonly table: TypeTable,
    readonly plan: HeapPlan,
    wasm: WasmOptions,
  ) {
    this.buffer = memory.buffer as unknown as SharedArrayBuffer;
    const b = this.buffer;
    this.i8 = new Int8Array(b);
    this.u8 = new Uint8Array(b);
    this.i16 = new Int16Array(b);
    this.u16 = new Uint16Array(b);
    this.i32 = new Int32Array(b);
    this.u32 = new Uint32Array(b);
    this.f32 = new Float32Array(b);
    this.f64 = new Float64Array(b);
    const m = plan.numBlocks;
    this.numBlocks = m;
    this.free = new HierarchicalBitmap(this.i32, plan.freeBitmapWord, m, 'free');
    this.allocated = table.types.map((t) =>
      t.abstract ? null : new HierarchicalBitmap(this.i32, plan.allocatedBitmapWord[t.id]!, m, `allocated[${t.name}]`),
    );
    this.active = table.types.map((t) =>
      t.abstract ? null : new HierarchicalBitmap(this.i32, plan.activeBitmapWord[t.id]!, m, `active[${t.name}]`),
    );
    this.blocksWord = plan.blocksOffset >> 2;
    this.blockWords = plan.blockBytes >> 2;
    this.highMask = Int32Array.from(table.types, (t) => t.highMask);
    this.slots = Int32Array.from(table.types, (t) => t.slots);
    this.genOffset = Int32Array.from(table.types, (t) => t.genOffset);
    this.wasm = WasmInstance.create(loadWasmModule(wasm), memory, wasmFile(wasm));
  }

  /** Allocate and initialise a heap of `heapBytes` for these types (all blocks free). */
  static create(table: TypeTable, heapBytes: number, options: HeapOptions = {}): Heap {
    const threads = options.threads ?? 1;
    const plan = planHeap(heapBytes, table, {
      states: options.states ?? allocatorStates(threads),
      ...(options.keepBlocks !== undefined ? { keepBlocks: options.keepBlocks } : {}),
    });
    const pages = Math.ceil(heapBytes / 65536);
    let memory: WebAssembly.Memory;
    try {
      memory = new WebAssembly.Memory({ initial: pages, maximum: pages, shared: true });
    } catch (e) {
      throw new UsageError(`could not allocate a heap of ${heapBytes} bytes: ${(e as Error).message}; ask for a smaller heap`, {
        cause: e,
      });
    }
    let heap: Heap;
    try {
      heap = new Heap(memory, table, plan, options.wasm ?? {});
    } catch (e) {
      throw e instanceof UsageError ? new UsageError(`every runtime needs the allocator core: ${e.message}`, { cause: e }) : e;
    }
    const bitmapAlloc = table.bitmapAlloc;
    if (bitmapAlloc && options.coalescing === true)
      throw new UsageError('the BitmapAlloc variant has no blocks of several objects: coalescing must be off');
    heap.format({
      atomic: options.atomic ?? threads > 1,
      rotation: options.rotation ?? true,
      coalescing: !bitmapAlloc && (options.coalescing ?? true),
      bitmapAlloc,
      ownFirstBlock: !bitmapAlloc && options.ownFirstBlock === true,
    });
    return heap;
  }

  /** View an existing heap (a worker's side), with this thread's instance of the module. */
  static attach(memory: WebAssembly.Memory, table: TypeTable, heapBytes: number, wasm: WasmOptions = {}): Heap {
    const i32 = new Int32Array(memory.buffer as unknown as SharedArrayBuffer);
    const h = HEADER_OFFSET >> 2;
    if (i32[h + H_MAGIC] !== MAGIC || i32[h + H_VERSION] !== LAYOUT_VERSION) {
      throw new UsageError('attach: memory is not an smmo heap of this layout version');
    }
    const plan = planHeap(heapBytes, table, { states: i32[h + H_NUM_STATES]!, keepBlocks: i32[h + H_KEEP_BLOCKS]! });
    if (
      i32[h + H_NUM_BLOCKS] !== plan.numBlocks ||
      i32[h + H_BLOCK_BYTES] !== plan.blockBytes ||
      i32[h + H_STATE_WORD] !== plan.stateWord
    ) {
      throw new UsageError('attach: the heap was laid out for other classes (block size or count differ)');
    }
    return new Heap(memory, table, plan, wasm);
  }

  /** The allocator variant this heap was formatted for. */
  get flags(): AllocatorFlags {
    const f = this.i32[(HEADER_OFFSET >> 2) + H_ALLOC_FLAGS]!;
    return {
      atomic: (f & ALLOC_FLAG_ATOMIC) !== 0,
      rotation: (f & ALLOC_FLAG_ROTATION) !== 0,
      coalescing: (f & ALLOC_FLAG_COALESCING) !== 0,
      bitmapAlloc: (f & ALLOC_FLAG_BITMAP_ALLOC) !== 0,
      ownFirstBlock: (f & ALLOC_FLAG_OWN_FIRST) !== 0,
    };
  }

  /** Give this thread's module instance (its thread slot) back. The view must not be used afterwards. */
  dispose(): void {
    this.wasm.dispose();
  }

  /**
   * Write the header (the allocator descriptor included) and the type table, then let the
   * allocator core mark every block free (block 0 stays reserved for null).
   */
  private format(flags: AllocatorFlags): void {
    const h = HEADER_OFFSET >> 2;
    const p = this.plan;
    const i32 = this.i32;
    i32[h + H_MAGIC] = MAGIC;
    i32[h + H_VERSION] = LAYOUT_VERSION;
    this.u32[h + H_HEAP_BYTES] = p.heapBytes;
    i32[h + H_BLOCK_BYTES] = p.blockBytes;
    i32[h + H_NUM_BLOCKS] = p.numBlocks;
    i32[h + H_NUM_TYPES] = this.table.types.length;
    this.u32[h + H_BLOCKS_OFFSET] = p.blocksOffset;
    this.u32[h + H_BLOCK_LIST_OFFSET] = p.blockListOffset;
    i32[h + H_ALLOC_FLAGS] =
      (flags.atomic ? ALLOC_FLAG_ATOMIC : 0) |
      (flags.rotation ? ALLOC_FLAG_ROTATION : 0) |
      (flags.coalescing ? ALLOC_FLAG_COALESCING : 0) |
      (flags.bitmapAlloc ? ALLOC_FLAG_BITMAP_ALLOC : 0) |
      (flags.ownFirstBlock ? ALLOC_FLAG_OWN_FIRST : 0) |
      (DEBUG_LEVEL >= 1 ? ALLOC_FLAG_DEBUG : 0);
    i32[h + H_KEEP_BLOCKS] = p.keepBlocks;
    i32[h + H_FREE_BITMAP_WORD] = p.freeBitmapWord;
    i32[h + H_TYPE_TABLE_WORD] = p.typeTableWord;
    i32[h + H_STATE_WORD] = p.stateWord;
    i32[h + H_STATE_WORDS] = p.stateWords;
    i32[h + H_NUM_STATES] = p.states;
    const levels = bitmapLevelWords(p.numBlocks);
    if (levels.length > MAX_BITMAP_LEVELS)
      throw new UsageError(`a heap of ${p.numBlocks} blocks needs more than ${MAX_BITMAP_LEVELS} bitmap levels`);
    i32[h + H_BITMAP_LEVELS] = levels.length;
    for (let l = 0, at = 0; l < MAX_BITMAP_LEVELS; l++) {
      i32[h + H_LEVEL_OFFSETS + l] = l < levels.length ? at : 0;
      if (l < levels.length) at += levels[l]!;
    }
    i32[h + H_LEVEL0_WORDS] = levels[0]!;
    for (const t of this.table.types) {
      const w = p.typeTableWord + t.id * TYPE_WORDS;
      i32[w + T_ALLOCATED_WORD] = t.abstract ? 0 : p.allocatedBitmapWord[t.id]!;
      i32[w + T_ACTIVE_WORD] = t.abstract ? 0 : p.activeBitmapWord[t.id]!;
      i32[w + T_HIGH_MASK] = t.abstract ? ALL_ONES : t.highMask;
      i32[w + T_SLOTS] = t.abstract ? 0 : t.slots;
      i32[w + T_GEN_OFFSET] = t.genOffset;
    }
    (this.wasm.exports['smmo_heap_format'] as () => void)();
  }

  /** The block-set epoch (layout.ts H_BLOCK_SET_EPOCH): changes when some allocated[t] or the block list R changed. */
  blockSetEpoch(): number {
    return Atomics.load(this.i32, (HEADER_OFFSET >> 2) + H_BLOCK_SET_EPOCH);
  }

  /**
   * Host-side rewrites of heap bytes outside the allocator (blockSetChanged calls), on this
   * thread's Heap object. Not in shared memory: a rewrite may put back an older epoch word
   * (a heap snapshot restored, a GPU copy downloaded), so the epoch alone could come back to
   * a value a cache holds; this counter only grows.
   */
  hostRewrites = 0;

  /**
   * Say that the block sets or the block list R changed outside the allocator core (a
   * defrag's forwarding masks in R, a whole-heap download from the GPU, a heap snapshot
   * put back): a do-all's snapshot then walks the bitmaps again instead of reusing its
   * lists (thread.ts snapshotLists L1).
   */
  blockSetChanged(): void {
    Atomics.add(this.i32, (HEADER_OFFSET >> 2) + H_BLOCK_SET_EPOCH, 1);
    this.hostRewrites++;
  }

  /** Word index of block `b`'s header. */
  blockWord(b: number): number {
    return this.blocksWord + b * this.blockWords;
  }

  /** Byte offset of block `b`. */
  blockOffset(b: number): number {
    return this.plan.blocksOffset + b * this.plan.blockBytes;
  }

  /** Type id of block `b` (FREE_TYPE if free). */
  blockType(b: number): number {
    return Atomics.load(this.i32, this.blockWord(b) + BLOCK_TYPE_WORD);
  }

  /** Live objects in block `b` (0 for a free block). */
  liveInBlock(b: number): number {
    const t = this.blockType(b);
    if (t === FREE_TYPE) return 0;
    return popc(Atomics.load(this.i32, this.blockWord(b) + BLOCK_ALLOC_WORD) & ~this.highMask[t]!);
  }

  // ---------------------------------------------------------------- validation

  /**
   * Check every invariant of the heap; throws HeapCorruptionError listing the broken
   * ones. Only meaningful when no operation is in flight (between do-alls).
   *
   *  (H1) every bitmap is internally consistent (bitmap.ts B1, B2);
   *  (H2) block 0 is reserved: not free, in no allocated[t];
   *  (H3) a free block: free bit set, allocation bitmap all ones, type FREE, no
   *       allocated[t] / active[t] bit, iteration bitmap 0;
   *  (H4) a used block of type t: free bit clear, exactly allocated[t] set, bits ≥ N_t
   *       of the allocation bitmap set, active[t] set ⇔ the block has a free slot;
   *  (H5) iteration bitmap ⊆ allocation bitmap, and 0 on slots ≥ N_t.
   */
  validate(): void {
    const problems: string[] = [];
    this.free.validate(problems);
    for (const bm of this.allocated) bm?.validate(problems);
    for (const bm of this.active) bm?.validate(problems);
    const types = this.table.types;
    for (let b = 0; b < this.numBlocks && problems.length < 100; b++) {
      const w = this.blockWord(b);
      const alloc = this.i32[w + BLOCK_ALLOC_WORD]!;
      const iter = this.i32[w + BLOCK_ITER_WORD]!;
      const t = this.i32[w + BLOCK_TYPE_WORD]!;
      const isFree = this.free.get(b);
      const inAllocated = types.filter((ty) => this.allocated[ty.id]?.get(b)).map((ty) => ty.name);
      const inActive = types.filter((ty) => this.active[ty.id]?.get(b)).map((ty) => ty.name);
      if (b === 0) {
        if (isFree || inAllocated.length > 0) problems.push('block 0 (null) is marked free or allocated');
        continue;
      }
      if (isFree || t === FREE_TYPE) {
        if (!isFree) problems.push(`block ${b}: type is FREE but its free bit is clear (lost block)`);
        if (t !== FREE_TYPE) problems.push(`block ${b}: free bit set but type is ${t}`);
        if (alloc !== ALL_ONES) problems.push(`block ${b}: free but allocation bitmap is ${hex(alloc)}, not all ones`);
        if (inAllocated.length || inActive.length)
          problems.push(`block ${b}: free but in allocated/active of ${[...inAllocated, ...inActive].join(',')}`);
        if (iter !== 0) problems.push(`block ${b}: free but iteration bitmap is ${hex(iter)}`);
        continue;
      }
      const ty = types[t];
      if (!ty || ty.abstract) {
        problems.push(`block ${b}: type id ${t} is not a concrete type`);
        continue;
      }
      if (inAllocated.length !== 1 || inAllocated[0] !== ty.name) {
        problems.push(`block ${b} (${ty.name}): allocated bit set for [${inAllocated.join(',')}], expected exactly ${ty.name}`);
      }
      const high = ty.highMask;
      if ((alloc & high) !== high) problems.push(`block ${b} (${ty.name}): slots ≥ ${ty.slots} not pre-set (${hex(alloc)})`);
      const hasFree = alloc !== ALL_ONES;
      const act = inActive.includes(ty.name);
      if (inActive.some((n) => n !== ty.name)) problems.push(`block ${b} (${ty.name}): active bit set for [${inActive.join(',')}]`);
      if (hasFree !== act) {
        problems.push(`block ${b} (${ty.name}): ${hasFree ? 'has a free slot but is not active' : 'is full but is active'}`);
      }
      if ((iter & ~alloc) !== 0 || (iter & high) !== 0) {
        problems.push(`block ${b} (${ty.name}): iteration bitmap ${hex(iter)} not within allocation bitmap ${hex(alloc)}`);
      }
    }
    if (problems.length > 0) throw new HeapCorruptionError(problems);
  }
}

function hex(x: number): string {
  return '0x' + (x >>> 0).toString(16).padStart(8, '0');
}
