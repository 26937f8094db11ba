/**
 * The heap: one shared WebAssembly.Memory laid out by layout.ts, its typed-array
 * views, its block-state bitmaps, and validateHeap().
 *
 * A Heap object is a per-thread *view*: the main thread creates the memory
 * (`Heap.create`), workers attach to the same memory (`Heap.attach`) and build views
 * of their own. No JavaScript object is shared; only bytes are.
 */
import { HierarchicalBitmap } from './bitmap.js';
import { popc } from './bits.js';
import { HeapCorruptionError, UsageError } from './errors.js';
import {
  ALL_ONES,
  BLOCK_ALLOC_WORD,
  BLOCK_GEN_WORD,
  BLOCK_ITER_WORD,
  BLOCK_TYPE_WORD,
  HEADER_OFFSET,
  H_BLOCKS_OFFSET,
  H_BLOCK_BYTES,
  H_BLOCK_LIST_OFFSET,
  H_HEAP_BYTES,
  H_MAGIC,
  H_NUM_BLOCKS,
  H_NUM_TYPES,
  H_VERSION,
  LAYOUT_VERSION,
  MAGIC,
  planHeap,
  type HeapPlan,
  type TypeTable,
} from './layout.js';

/** Type id stored in the header of a free block. */
export const FREE_TYPE = -1;

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

  private constructor(
    readonly memory: WebAssembly.Memory,
    readonly table: TypeTable,
    readonly plan: HeapPlan,
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
  }

  /** Allocate and initialise a heap of `heapBytes` for these types (all blocks free). */
  static create(table: TypeTable, heapBytes: number): Heap {
    const plan = planHeap(heapBytes, table);
    const pages = Math.ceil(heapBytes / 65536);
    let memory: WebAssembly.Memory;
    try {
      memory = new WebAssembly.Memory({ initial: pages, maximum: pages, shared: true });
    } catch (e) {
      throw new UsageError(`could not allocate a heap of ${heapBytes} bytes: ${(e as Error).message}; ask for a smaller heap`, {
        cause: e,
      });
    }
    const heap = new Heap(memory, table, plan);
    heap.format();
    return heap;
  }

  /** View an existing heap (a worker's side). */
  static attach(memory: WebAssembly.Memory, table: TypeTable, heapBytes: number): Heap {
    const heap = new Heap(memory, table, planHeap(heapBytes, table));
    const h = HEADER_OFFSET >> 2;
    if (heap.i32[h + H_MAGIC] !== MAGIC || heap.i32[h + H_VERSION] !== LAYOUT_VERSION) {
      throw new UsageError('attach: memory is not an smmo heap of this layout version');
    }
    if (heap.i32[h + H_NUM_BLOCKS] !== heap.numBlocks || heap.i32[h + H_BLOCK_BYTES] !== heap.plan.blockBytes) {
      throw new UsageError('attach: the heap was laid out for other classes (block size or count differ)');
    }
    return heap;
  }

  /** Write the header, mark every block free (block 0 stays reserved for null). */
  private format(): void {
    const h = HEADER_OFFSET >> 2;
    const p = this.plan;
    this.i32[h + H_MAGIC] = MAGIC;
    this.i32[h + H_VERSION] = LAYOUT_VERSION;
    this.u32[h + H_HEAP_BYTES] = p.heapBytes;
    this.i32[h + H_BLOCK_BYTES] = p.blockBytes;
    this.i32[h + H_NUM_BLOCKS] = p.numBlocks;
    this.i32[h + H_NUM_TYPES] = this.table.types.length;
    this.u32[h + H_BLOCKS_OFFSET] = p.blocksOffset;
    this.u32[h + H_BLOCK_LIST_OFFSET] = p.blockListOffset;
    for (let b = 0; b < this.numBlocks; b++) {
      const w = this.blockWord(b);
      this.i32[w + BLOCK_ALLOC_WORD] = ALL_ONES;
      this.i32[w + BLOCK_ITER_WORD] = 0;
      this.i32[w + BLOCK_TYPE_WORD] = FREE_TYPE;
      this.i32[w + BLOCK_GEN_WORD] = 0;
    }
    this.free.fill();
    this.free.tryClear(0); // block 0 is never handed out: handle 0 means null
    for (const bm of this.allocated) bm?.reset();
    for (const bm of this.active) bm?.reset();
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
