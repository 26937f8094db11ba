/**
 * runtime/heap.ts besides validateHeap: what Heap.create formats (the header and type
 * table the allocator core reads, the allocator flags), how another thread attaches to
 * the same memory (Heap.attach and its refusals), and the block helpers (blockWord,
 * blockOffset, blockType, liveInBlock). The header is the contract between TypeScript,
 * the Rust core and the WGSL kernels: every word is checked against the plan it came
 * from.
 */
import test from 'ava';
import { f64, i32, object, u8 } from '../index.js';
import { Heap } from '../runtime/heap.js';
import {
  ALLOC_FLAG_ATOMIC,
  ALLOC_FLAG_BITMAP_ALLOC,
  ALLOC_FLAG_COALESCING,
  ALLOC_FLAG_DEBUG,
  ALLOC_FLAG_OWN_FIRST,
  ALLOC_FLAG_ROTATION,
  allocatorStates,
  BLOCK_ALLOC_WORD,
  BLOCK_TYPE_WORD,
  FREE_TYPE,
  H_ALLOC_FLAGS,
  H_BITMAP_LEVELS,
  H_BLOCK_BYTES,
  H_BLOCK_LIST_OFFSET,
  H_BLOCKS_OFFSET,
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
  HEADER_OFFSET,
  LAYOUT_VERSION,
  MAGIC,
  MAX_BITMAP_LEVELS,
  MAX_HEAP_BYTES,
  MIN_HEAP_BYTES,
  planHeap,
  planTypes,
  T_ACTIVE_WORD,
  T_ALLOCATED_WORD,
  T_GEN_OFFSET,
  T_HIGH_MASK,
  T_SLOTS,
  TYPE_WORDS,
} from '../runtime/layout.js';
import { bitmapLevelWords } from '../runtime/bitmap.js';
import { DEBUG_LEVEL } from '../runtime/debug.js';
import { UsageError } from '../runtime/errors.js';

abstract class Shape extends object({ id: i32 }, { abstract: true }) {}
class Disc extends Shape.extend({ r: f64 }) {}
class Dot extends Shape.extend({ on: u8 }) {}
const CLASSES = [Shape, Disc, Dot];
const H = HEADER_OFFSET >> 2;
const BYTES = 2 << 20;

function heapOf(options: Parameters<typeof Heap.create>[2] = {}, checked = false): Heap {
  return Heap.create(planTypes(CLASSES, { checked }), BYTES, options);
}

test('Heap.create writes the header from its plan: sizes, offsets, states, keep blocks, bitmap levels', (t) => {
  const heap = heapOf({ threads: 3, keepBlocks: 5 });
  try {
    const p = heap.plan;
    const w = (k: number): number => heap.i32[H + k]!;
    t.is(w(H_MAGIC), MAGIC);
    t.is(w(H_VERSION), LAYOUT_VERSION);
    t.is(heap.u32[H + H_HEAP_BYTES], BYTES);
    t.is(w(H_BLOCK_BYTES), p.blockBytes);
    t.is(w(H_NUM_BLOCKS), p.numBlocks);
    t.is(heap.numBlocks, p.numBlocks);
    t.is(w(H_NUM_TYPES), 3);
    t.is(heap.u32[H + H_BLOCKS_OFFSET], p.blocksOffset);
    t.is(heap.u32[H + H_BLOCK_LIST_OFFSET], p.blockListOffset);
    t.is(w(H_KEEP_BLOCKS), 5);
    t.is(p.keepBlocks, 5);
    t.is(w(H_FREE_BITMAP_WORD), p.freeBitmapWord);
    t.is(w(H_TYPE_TABLE_WORD), p.typeTableWord);
    t.is(w(H_STATE_WORD), p.stateWord);
    t.is(w(H_STATE_WORDS), p.stateWords);
    t.is(w(H_NUM_STATES), allocatorStates(3), 'states for 3 threads: 2 × 3 + 6');
    t.is(allocatorStates(3), 12);
    const levels = bitmapLevelWords(p.numBlocks);
    t.true(levels.length >= 2, `a bitmap of ${p.numBlocks} blocks has ${levels.length} levels`);
    t.is(w(H_BITMAP_LEVELS), levels.length);
    let at = 0;
    for (let l = 0; l < MAX_BITMAP_LEVELS; l++) {
      t.is(w(H_LEVEL_OFFSETS + l), l < levels.length ? at : 0, `level ${l} offset`);
      if (l < levels.length) at += levels[l]!;
    }
    t.is(w(H_LEVEL0_WORDS), levels[0]!);
    t.is(heap.blockWords, p.blockBytes >> 2);
  } finally {
    heap.dispose();
  }
});

test('Heap.create writes the type table: bitmaps, high mask, slots and generation offset of each concrete class; an abstract class has none', (t) => {
  const heap = heapOf({}, true);
  try {
    const p = heap.plan;
    for (const ty of heap.table.types) {
      const w = (k: number): number => heap.i32[p.typeTableWord + ty.id * TYPE_WORDS + k]!;
      if (ty.abstract) {
        t.deepEqual([w(T_ALLOCATED_WORD), w(T_ACTIVE_WORD), w(T_HIGH_MASK), w(T_SLOTS)], [0, 0, -1, 0], ty.name);
        t.is(heap.allocated[ty.id], null);
        t.is(heap.active[ty.id], null);
      } else {
        t.is(w(T_ALLOCATED_WORD), p.allocatedBitmapWord[ty.id]!, ty.name);
        t.is(w(T_ACTIVE_WORD), p.activeBitmapWord[ty.id]!, ty.name);
        t.is(w(T_HIGH_MASK), ty.highMask, ty.name);
        t.is(w(T_SLOTS), ty.slots, ty.name);
        t.true(ty.genOffset > 0, `${ty.name}: checked heaps keep generations`);
        t.is(heap.slots[ty.id], ty.slots);
        t.is(heap.highMask[ty.id], ty.highMask);
        t.is(heap.genOffset[ty.id], ty.genOffset);
        t.not(heap.allocated[ty.id], null);
        t.not(heap.active[ty.id], null);
      }
      t.is(w(T_GEN_OFFSET), ty.genOffset, ty.name);
    }
    t.is(heap.free.count(), heap.numBlocks - 1, 'every block free but block 0');
  } finally {
    heap.dispose();
  }
});

test('Heap.create: the allocator flags, each on its own, and their defaults (atomics with several threads)', (t) => {
  const cases: [Parameters<typeof Heap.create>[2], number, Record<string, boolean>][] = [
    [
      {},
      ALLOC_FLAG_ROTATION | ALLOC_FLAG_COALESCING,
      { atomic: false, rotation: true, coalescing: true, bitmapAlloc: false, ownFirstBlock: false },
    ],
    [
      { threads: 2 },
      ALLOC_FLAG_ATOMIC | ALLOC_FLAG_ROTATION | ALLOC_FLAG_COALESCING,
      { atomic: true, rotation: true, coalescing: true, bitmapAlloc: false, ownFirstBlock: false },
    ],
    [
      { threads: 2, atomic: false },
      ALLOC_FLAG_ROTATION | ALLOC_FLAG_COALESCING,
      { atomic: false, rotation: true, coalescing: true, bitmapAlloc: false, ownFirstBlock: false },
    ],
    [
      { atomic: true },
      ALLOC_FLAG_ATOMIC | ALLOC_FLAG_ROTATION | ALLOC_FLAG_COALESCING,
      { atomic: true, rotation: true, coalescing: true, bitmapAlloc: false, ownFirstBlock: false },
    ],
    [
      { rotation: false },
      ALLOC_FLAG_COALESCING,
      { atomic: false, rotation: false, coalescing: true, bitmapAlloc: false, ownFirstBlock: false },
    ],
    [
      { coalescing: false },
      ALLOC_FLAG_ROTATION,
      { atomic: false, rotation: true, coalescing: false, bitmapAlloc: false, ownFirstBlock: false },
    ],
    [
      { ownFirstBlock: true },
      ALLOC_FLAG_ROTATION | ALLOC_FLAG_COALESCING | ALLOC_FLAG_OWN_FIRST,
      { atomic: false, rotation: true, coalescing: true, bitmapAlloc: false, ownFirstBlock: true },
    ],
  ];
  const known = ALLOC_FLAG_ATOMIC | ALLOC_FLAG_ROTATION | ALLOC_FLAG_COALESCING | ALLOC_FLAG_BITMAP_ALLOC | ALLOC_FLAG_OWN_FIRST;
  for (const [options, bits, flags] of cases) {
    const heap = heapOf(options);
    try {
      t.is(heap.i32[H + H_ALLOC_FLAGS]! & known, bits, JSON.stringify(options));
      t.deepEqual(heap.flags, flags, JSON.stringify(options));
    } finally {
      heap.dispose();
    }
  }
  const bitmap = Heap.create(planTypes(CLASSES, { bitmapAlloc: true }), BYTES, { ownFirstBlock: true });
  try {
    t.deepEqual(
      bitmap.flags,
      { atomic: false, rotation: true, coalescing: false, bitmapAlloc: true, ownFirstBlock: false },
      'BitmapAlloc: no coalescing, no own blocks',
    );
    t.is(bitmap.i32[H + H_ALLOC_FLAGS]! & known, ALLOC_FLAG_ROTATION | ALLOC_FLAG_BITMAP_ALLOC);
  } finally {
    bitmap.dispose();
  }
  const e = t.throws(() => Heap.create(planTypes(CLASSES, { bitmapAlloc: true }), BYTES, { coalescing: true }), { instanceOf: UsageError });
  t.is(e?.message, 'the BitmapAlloc variant has no blocks of several objects: coalescing must be off');
  const keep = heapOf({});
  try {
    t.true(keep.plan.keepBlocks > 0, 'keep blocks by default');
    t.is(keep.i32[H + H_KEEP_BLOCKS], keep.plan.keepBlocks);
    t.is(keep.i32[H + H_NUM_STATES], allocatorStates(1));
  } finally {
    keep.dispose();
  }
});

test('Heap.attach: another view of the same memory sees the same plan, flags and objects', (t) => {
  const heap = heapOf({ threads: 2, keepBlocks: 3, rotation: false });
  const other = Heap.attach(heap.memory, heap.table, BYTES);
  try {
    t.deepEqual(other.plan, heap.plan);
    t.deepEqual(other.flags, heap.flags);
    t.is(other.numBlocks, heap.numBlocks);
    t.is(other.buffer, heap.buffer);
    const disc = heap.table.byClass(Disc)!;
    const bid = 1;
    t.is(other.blockType(bid), FREE_TYPE);
    t.is(other.liveInBlock(bid), 0, 'a free block holds nothing');
    // Make block 1 a Disc block with three objects by hand (as the core would), through one view.
    const w = heap.blockWord(bid);
    heap.i32[w + BLOCK_TYPE_WORD] = disc.id;
    heap.i32[w + BLOCK_ALLOC_WORD] = disc.highMask | 0b1011; // slots 0, 1, 3, and the bits past N
    t.is(other.blockType(bid), disc.id);
    t.is(other.liveInBlock(bid), 3, 'popcount of the slots below N only');
    heap.i32[w + BLOCK_ALLOC_WORD] = disc.highMask; // empty again
    t.is(other.liveInBlock(bid), 0);
    heap.i32[w + BLOCK_TYPE_WORD] = FREE_TYPE;
    heap.i32[w + BLOCK_ALLOC_WORD] = -1;
  } finally {
    other.dispose();
    heap.dispose();
  }
});

test('Heap.attach refuses memory that is not an smmo heap of this layout, or was laid out for other classes', (t) => {
  const heap = heapOf({ threads: 2 });
  try {
    const blank = new WebAssembly.Memory({ initial: BYTES / 65536, maximum: BYTES / 65536, shared: true });
    const notHeap = t.throws(() => Heap.attach(blank, heap.table, BYTES), { instanceOf: UsageError });
    t.is(notHeap?.message, 'attach: memory is not an smmo heap of this layout version');
    const old = heap.i32[H + H_VERSION]!;
    heap.i32[H + H_VERSION] = old + 1;
    t.throws(() => Heap.attach(heap.memory, heap.table, BYTES), {
      instanceOf: UsageError,
      message: 'attach: memory is not an smmo heap of this layout version',
    });
    heap.i32[H + H_VERSION] = old;
    // Other classes: another block size.
    class Big extends object({ a: f64, b: f64, c: f64, d: f64 }) {}
    const others = planTypes([Big]);
    t.not(others.blockBytes, heap.table.blockBytes);
    t.throws(() => Heap.attach(heap.memory, others, BYTES), {
      instanceOf: UsageError,
      message: 'attach: the heap was laid out for other classes (block size or count differ)',
    });
    // The same classes, another heap size: another block count.
    t.throws(() => Heap.attach(heap.memory, heap.table, BYTES - 65536 * 8), {
      instanceOf: UsageError,
      message: 'attach: the heap was laid out for other classes (block size or count differ)',
    });
    // The same classes and size, another state area (more states than the heap was made for).
    const states = heap.i32[H + H_NUM_STATES]!;
    heap.i32[H + H_STATE_WORD] = heap.i32[H + H_STATE_WORD]! + 1;
    t.throws(() => Heap.attach(heap.memory, heap.table, BYTES), { instanceOf: UsageError, message: /laid out for other classes/ });
    heap.i32[H + H_STATE_WORD] = heap.plan.stateWord;
    t.is(states, heap.plan.states);
    const ok = Heap.attach(heap.memory, heap.table, BYTES);
    ok.dispose();
  } finally {
    heap.dispose();
  }
});

test('block helpers: blockWord and blockOffset address the same block, blockType of a free block is FREE_TYPE', (t) => {
  const heap = heapOf();
  try {
    const p = heap.plan;
    for (const b of [0, 1, 2, heap.numBlocks - 1]) {
      t.is(heap.blockOffset(b), p.blocksOffset + b * p.blockBytes, `block ${b}`);
      t.is(heap.blockWord(b) * 4, heap.blockOffset(b), `block ${b}`);
    }
    t.is(heap.blockType(1), FREE_TYPE);
    t.is(heap.blockType(heap.numBlocks - 1), FREE_TYPE);
  } finally {
    heap.dispose();
  }
});

test('Heap.attach: each header check on its own — magic, block count, block size — refuses a heap the others would pass', (t) => {
  const heap = heapOf({ threads: 2 });
  try {
    // The magic alone wrong (the version right).
    heap.i32[H + H_MAGIC] = MAGIC ^ 1;
    t.throws(() => Heap.attach(heap.memory, heap.table, BYTES), {
      instanceOf: UsageError,
      message: 'attach: memory is not an smmo heap of this layout version',
    });
    heap.i32[H + H_MAGIC] = MAGIC;
    // One block fewer: the same block size and state area, another block count.
    const fewer = BYTES - heap.plan.blockBytes;
    t.is(planHeap(fewer, heap.table, { states: heap.plan.states }).stateWord, heap.plan.stateWord, 'the state area does not move');
    t.throws(() => Heap.attach(heap.memory, heap.table, fewer), {
      instanceOf: UsageError,
      message: 'attach: the heap was laid out for other classes (block size or count differ)',
    });
    // Another block size with the same block count and state area (classes of the same
    // shape, one field wider; the heap size chosen to give the same count).
    abstract class Shape2 extends object({ id: i32 }, { abstract: true }) {}
    class Disc2 extends Shape2.extend({ r: f64, s: f64 }) {}
    class Dot2 extends Shape2.extend({ on: f64 }) {}
    const wider = planTypes([Shape2, Disc2, Dot2]);
    t.not(wider.blockBytes, heap.table.blockBytes);
    let size = 0;
    for (let s = Math.max(MIN_HEAP_BYTES, heap.plan.numBlocks * wider.blockBytes); s <= MAX_HEAP_BYTES && size === 0; s += 8) {
      const p = planHeap(s, wider, { states: heap.plan.states, keepBlocks: heap.plan.keepBlocks });
      if (p.numBlocks === heap.plan.numBlocks && p.stateWord === heap.plan.stateWord) size = s;
      if (p.numBlocks > heap.plan.numBlocks) break;
    }
    t.true(size > 0, 'a heap size with the same block count exists');
    t.throws(() => Heap.attach(heap.memory, wider, size), {
      instanceOf: UsageError,
      message: 'attach: the heap was laid out for other classes (block size or count differ)',
    });
  } finally {
    heap.dispose();
  }
});

test('Heap.create: memory the engine cannot give is a UsageError that says to ask for less; a missing allocator core names it', (t) => {
  const Memory = WebAssembly.Memory;
  const refusal = new RangeError('WebAssembly.Memory(): could not allocate memory');
  (WebAssembly as { Memory: unknown }).Memory = function refuse() {
    throw refusal;
  };
  let e: UsageError | undefined;
  try {
    e = t.throws(() => heapOf(), { instanceOf: UsageError });
  } finally {
    (WebAssembly as { Memory: unknown }).Memory = Memory;
  }
  t.is(e?.message, `could not allocate a heap of ${BYTES} bytes: ${refusal.message}; ask for a smaller heap`);
  t.is(e?.cause, refusal);

  const missing = t.throws(() => heapOf({ wasm: { dir: '/nonexistent/smmo-wasm' } }), { instanceOf: UsageError });
  t.true(missing?.message.startsWith('every runtime needs the allocator core: '), missing?.message);
  t.true(missing?.cause instanceof UsageError, 'the loader error is the cause');
  t.true((missing?.cause as Error).message.includes('/nonexistent/smmo-wasm'));
});

test('Heap: the bitmaps carry the names validateHeap() reports; the debug flag follows SMMO_DEBUG', (t) => {
  const heap = heapOf();
  try {
    const disc = heap.table.byClass(Disc)!.id;
    t.is(heap.free.name, 'free');
    t.is(heap.allocated[disc]!.name, 'allocated[Disc]');
    t.is(heap.active[disc]!.name, 'active[Disc]');
    t.is((heap.i32[H + H_ALLOC_FLAGS]! & ALLOC_FLAG_DEBUG) !== 0, DEBUG_LEVEL >= 1, `SMMO_DEBUG level ${DEBUG_LEVEL}`);
  } finally {
    heap.dispose();
  }
});
