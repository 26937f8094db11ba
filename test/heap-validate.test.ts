/**
 * The judges judged: validateHeap() (heap.ts H1–H5) and HierarchicalBitmap.validate()
 * (bitmap.ts B1–B2) must report every corruption they claim to check. Many tests rely on
 * validateHeap() passing as their verdict; a validator that accepts a broken heap would
 * make them pass whatever the allocator does.
 *
 * Each test builds a small heap (or bitmap) that validates, breaks exactly one thing by
 * writing words of the shared memory (test/helpers/corrupt.ts), and expects the exact
 * list of problems: the broken invariant named, and nothing else reported.
 */
import test, { type ExecutionContext } from 'ava';
import { FREE_TYPE, Heap } from '../runtime/heap.js';
import { createRuntime, f64, HeapCorruptionError, object, SmmoError, u32, UsageError, type Runtime } from '../index.js';
import {
  ALL_ONES,
  H_BLOCK_BYTES,
  H_BLOCK_LIST_OFFSET,
  H_BLOCKS_OFFSET,
  H_HEAP_BYTES,
  H_MAGIC,
  H_NUM_BLOCKS,
  H_NUM_TYPES,
  H_VERSION,
  HEADER_OFFSET,
  MAGIC,
  MIN_HEAP_BYTES,
  planTypes,
} from '../runtime/layout.js';
import {
  bitAt,
  bitmapProblems,
  clearConsistent,
  corruptionReport,
  flipBit,
  readHeader,
  setConsistent,
  writeHeader,
} from './helpers/corrupt.js';
import { moduleBitmap } from './helpers/module-bitmap.js';

// ------------------------------------------------------------------ bitmaps (B1, B2)

/** A bitmap of `bits` positions in a memory of its own (test/helpers/module-bitmap.ts), named 'bm'. */
function bitmapOf(bits: number): ReturnType<typeof moduleBitmap> & { mem: Int32Array } {
  const m = moduleBitmap(bits, 'bm');
  return { ...m, mem: m.all };
}

test('B1/B2 control: empty, full, and multiple-of-32 bitmaps validate (no false alarm)', (t) => {
  for (const bits of [1, 31, 32, 33, 64, 1000, 1024, 1025, 2000, 32768]) {
    const { mem, bm, ops } = bitmapOf(bits);
    t.deepEqual(bitmapProblems(bm), [], `empty, bits=${bits}`);
    ops.fill(bm); // the allocator core's formatting (bitmap.rs fill)
    t.deepEqual(bitmapProblems(bm), [], `full, bits=${bits}`);
    t.is(bm.count(), bits, `bits=${bits}: fill() sets every position`);
    t.true(bitAt(mem, bm, 0, bits - 1), `bits=${bits}: the last position is set by fill()`);
    ops.reset(bm);
    t.is(bm.count(), 0, `bits=${bits}: reset() clears every position`);
    setConsistent(mem, bm, bits - 1);
    t.deepEqual(bitmapProblems(bm), [], `only the last position, bits=${bits}`);
  }
});

test('B1: a bit beyond the last position of level 0 is reported (bits = 33 and 1000)', (t) => {
  for (const bits of [33, 1000]) {
    const { mem, bm } = bitmapOf(bits);
    // A valid bit in the last container first, so that the container is non-empty and
    // its upper bit is set: the padding bit breaks B1 alone.
    setConsistent(mem, bm, bits - 1);
    flipBit(mem, bm, 0, bits);
    t.deepEqual(bitmapProblems(bm), [`bm: level 0 has bits set beyond position ${bits - 1}`], `bits=${bits}`);
    flipBit(mem, bm, 0, bits);
    flipBit(mem, bm, 0, 32 * Math.ceil(bits / 32) - 1); // bit 31 of the last container
    t.deepEqual(bitmapProblems(bm), [`bm: level 0 has bits set beyond position ${bits - 1}`], `bits=${bits}, bit 31`);
  }
});

test('B1: a bit naming a container that does not exist is reported at levels 1 and 2', (t) => {
  // 1025 positions: level 0 has 33 containers, level 1 has 33 bits in 2 containers, level 2 has 2 bits.
  const { mem, bm } = bitmapOf(1025);
  setConsistent(mem, bm, 1024); // level-1 container 1 and level-2 bit 1 now set
  flipBit(mem, bm, 1, 40);
  t.deepEqual(bitmapProblems(bm), ['bm: level 1 has bits set beyond position 32']);
  flipBit(mem, bm, 1, 40);
  flipBit(mem, bm, 2, 2);
  t.deepEqual(bitmapProblems(bm), ['bm: level 2 has bits set beyond position 1']);
  flipBit(mem, bm, 2, 2);
  // Two levels (33 positions): level 1 has 2 bits.
  const small = bitmapOf(33);
  flipBit(small.mem, small.bm, 1, 5);
  t.deepEqual(bitmapProblems(small.bm), ['bm: level 1 has bits set beyond position 1']);
});

test('B2: an upper bit over an empty container, and a clear upper bit over a non-empty one, at every level', (t) => {
  // 2000 positions: 63 containers at level 0, 2 at level 1, 1 at level 2. Container 40
  // is named by bit 8 of level 1's second word.
  const { mem, bm } = bitmapOf(2000);
  setConsistent(mem, bm, 41 * 32); // container 41: keeps level-1 container 1 non-empty
  flipBit(mem, bm, 1, 40);
  t.deepEqual(bitmapProblems(bm), ['bm: level 1 bit 40 is 1 but container 40 of level 0 is empty']);
  flipBit(mem, bm, 1, 40);
  t.deepEqual(bitmapProblems(bm), []);

  flipBit(mem, bm, 0, 40 * 32 + 31); // a bit of container 40 without its upper bit
  t.deepEqual(bitmapProblems(bm), ['bm: level 1 bit 40 is 0 but container 40 of level 0 is non-empty']);
  flipBit(mem, bm, 0, 40 * 32 + 31);

  flipBit(mem, bm, 1, 3); // level-1 container 0 was empty: both level 1 and level 2 disagree
  t.deepEqual(bitmapProblems(bm), [
    'bm: level 1 bit 3 is 1 but container 3 of level 0 is empty',
    'bm: level 2 bit 0 is 0 but container 0 of level 1 is non-empty',
  ]);
  flipBit(mem, bm, 1, 3);

  flipBit(mem, bm, 2, 0); // level 2 names an empty level-1 container
  t.deepEqual(bitmapProblems(bm), ['bm: level 2 bit 0 is 1 but container 0 of level 1 is empty']);
});

// ------------------------------------------------------------------ heaps (H1–H5)

abstract class Base extends object({ x: u32 }, { abstract: true }) {}
/** 4 bytes: 32 slots per block. */
class A extends Base.extend({}) {}
/** 16 bytes: 8 slots per block, bits 8 … 31 of the allocation bitmap pre-set. */
class B extends object({ y: f64, z: f64 }) {}

interface Fixture {
  rt: Runtime;
  heap: Heap;
  mem: Int32Array;
  /** A block of A with all 32 slots taken (not active). */
  full: number;
  /** A block of A with 3 objects (active). */
  part: number;
  /** A block of B with 2 objects (active). */
  partB: number;
  /** Free blocks. */
  free: number[];
  idA: number;
  idB: number;
  idBase: number;
}

function hex(x: number): string {
  return '0x' + (x >>> 0).toString(16).padStart(8, '0');
}

/**
 * A heap with a full block of A, a partly filled block of A and of B, the rest free; it
 * validates. keepBlocks 0: validateHeap() then changes nothing before it checks.
 */
async function withHeap(t: ExecutionContext, body: (f: Fixture) => void): Promise<void> {
  const rt = await createRuntime({ classes: [Base, A, B], heap: MIN_HEAP_BYTES, keepBlocks: 0 });
  try {
    const handles = Array.from({ length: 32 }, () => rt.create(A).handle);
    const full = handles[0]! >>> 5;
    t.true(
      handles.every((h) => h >>> 5 === full),
      'the first 32 objects of A fill one block',
    );
    const part = rt.create(A).handle >>> 5;
    rt.create(A);
    rt.create(A);
    const partB = rt.create(B).handle >>> 5;
    rt.create(B);
    const heap = rt.heap;
    const free: number[] = [];
    for (let b = 1; b < heap.numBlocks; b++) if (heap.blockType(b) === FREE_TYPE) free.push(b);
    t.is(free.length, heap.numBlocks - 4, 'three used blocks and block 0');
    t.true(free.length > 120, `a heap of ${heap.numBlocks} blocks`);
    const idA = rt.table.byClass(A)!.id;
    const idB = rt.table.byClass(B)!.id;
    const idBase = rt.table.byClass(Base)!.id;
    t.is(heap.liveInBlock(part), 3);
    t.is(heap.liveInBlock(full), 32);
    rt.validateHeap(); // control: the fixture is a valid heap
    body({ rt, heap, mem: heap.i32, full, part, partB, free, idA, idB, idBase });
  } finally {
    await rt.close();
  }
}

/** The problems validateHeap() reports (it must throw HeapCorruptionError). */
function problemsOf(f: Fixture): readonly string[] {
  return corruptionReport(() => f.rt.validateHeap());
}

test('HeapCorruptionError is an SmmoError whose message lists the problems', async (t) => {
  await withHeap(t, (f) => {
    writeHeader(f.heap, f.free[0]!, 'iter', 1);
    const e = t.throws(() => f.rt.validateHeap(), { instanceOf: HeapCorruptionError });
    t.true(e instanceof SmmoError);
    t.deepEqual(e!.problems, [`block ${f.free[0]}: free but iteration bitmap is 0x00000001`]);
    t.is(e!.message, `heap invariant violated (1 problem):\n  block ${f.free[0]}: free but iteration bitmap is 0x00000001`);
  });
});

test('H1: a heap bitmap that breaks B2 or B1 is reported by validateHeap()', async (t) => {
  await withHeap(t, (f) => {
    const bm = f.heap.allocated[f.idB]!;
    const c = f.partB >>> 5 === 3 ? 2 : 3; // a level-0 container of allocated[B] that is empty
    flipBit(f.mem, bm, 1, c);
    t.deepEqual(problemsOf(f), [`allocated[B]: level 1 bit ${c} is 1 but container ${c} of level 0 is empty`]);
    flipBit(f.mem, bm, 1, c);
    f.rt.validateHeap();
    const free = f.heap.free;
    t.not(free.bits % 32, 0, 'the heap has a partial last container');
    flipBit(f.mem, free, 0, free.bits); // a block that does not exist, in a non-empty container
    t.deepEqual(problemsOf(f), [`free: level 0 has bits set beyond position ${free.bits - 1}`]);
  });
});

test('H2: block 0 (null) marked free, or allocated to a type', async (t) => {
  await withHeap(t, (f) => {
    setConsistent(f.mem, f.heap.free, 0);
    t.deepEqual(problemsOf(f), ['block 0 (null) is marked free or allocated']);
    clearConsistent(f.mem, f.heap.free, 0);
    f.rt.validateHeap();
    setConsistent(f.mem, f.heap.allocated[f.idB]!, 0);
    t.deepEqual(problemsOf(f), ['block 0 (null) is marked free or allocated']);
  });
});

test('H3: a free block whose free bit is clear is a lost block', async (t) => {
  await withHeap(t, (f) => {
    const b = f.free[5]!;
    clearConsistent(f.mem, f.heap.free, b);
    t.deepEqual(problemsOf(f), [`block ${b}: type is FREE but its free bit is clear (lost block)`]);
  });
});

test('H3: a block with its free bit set must have type FREE', async (t) => {
  await withHeap(t, (f) => {
    const b = f.free[5]!;
    writeHeader(f.heap, b, 'type', f.idA);
    t.deepEqual(problemsOf(f), [`block ${b}: free bit set but type is ${f.idA}`]);
  });
});

test('H3: a used block marked free is reported with everything that disagrees', async (t) => {
  await withHeap(t, (f) => {
    setConsistent(f.mem, f.heap.free, f.part);
    const alloc = readHeader(f.heap, f.part, 'alloc');
    t.deepEqual(problemsOf(f), [
      `block ${f.part}: free bit set but type is ${f.idA}`,
      `block ${f.part}: free but allocation bitmap is ${hex(alloc)}, not all ones`,
      `block ${f.part}: free but in allocated/active of A,A`,
    ]);
  });
});

test('H3: a free block whose allocation bitmap is not all ones', async (t) => {
  await withHeap(t, (f) => {
    const b = f.free[5]!;
    writeHeader(f.heap, b, 'alloc', ALL_ONES ^ (1 << 31)); // only slot 31 open
    t.deepEqual(problemsOf(f), [`block ${b}: free but allocation bitmap is 0x7fffffff, not all ones`]);
  });
});

test('H3: a free block in allocated[t] or active[t]', async (t) => {
  await withHeap(t, (f) => {
    const b = f.free[5]!;
    setConsistent(f.mem, f.heap.allocated[f.idB]!, b);
    t.deepEqual(problemsOf(f), [`block ${b}: free but in allocated/active of B`]);
    clearConsistent(f.mem, f.heap.allocated[f.idB]!, b);
    setConsistent(f.mem, f.heap.active[f.idA]!, b);
    t.deepEqual(problemsOf(f), [`block ${b}: free but in allocated/active of A`]);
  });
});

test('H3: a free block with a non-zero iteration bitmap', async (t) => {
  await withHeap(t, (f) => {
    const b = f.free[5]!;
    writeHeader(f.heap, b, 'iter', 1 << 31);
    t.deepEqual(problemsOf(f), [`block ${b}: free but iteration bitmap is 0x80000000`]);
  });
});

test('H4: a used block whose type id is not a concrete type (out of range, abstract)', async (t) => {
  await withHeap(t, (f) => {
    for (const bad of [99, f.idBase, -2]) {
      writeHeader(f.heap, f.part, 'type', bad);
      t.deepEqual(problemsOf(f), [`block ${f.part}: type id ${bad} is not a concrete type`], `type id ${bad}`);
    }
  });
});

test('H4: a used block must be in exactly allocated[its type]', async (t) => {
  await withHeap(t, (f) => {
    clearConsistent(f.mem, f.heap.allocated[f.idA]!, f.part);
    t.deepEqual(problemsOf(f), [`block ${f.part} (A): allocated bit set for [], expected exactly A`]);
    setConsistent(f.mem, f.heap.allocated[f.idA]!, f.part);
    setConsistent(f.mem, f.heap.allocated[f.idB]!, f.part);
    t.deepEqual(problemsOf(f), [`block ${f.part} (A): allocated bit set for [A,B], expected exactly A`]);
    clearConsistent(f.mem, f.heap.allocated[f.idA]!, f.part);
    t.deepEqual(problemsOf(f), [`block ${f.part} (A): allocated bit set for [B], expected exactly A`]);
  });
});

test('H4: slots a type does not have must stay taken in the allocation bitmap', async (t) => {
  await withHeap(t, (f) => {
    for (const slot of [8, 31]) {
      const alloc = readHeader(f.heap, f.partB, 'alloc');
      writeHeader(f.heap, f.partB, 'alloc', alloc & ~(1 << slot));
      t.deepEqual(problemsOf(f), [`block ${f.partB} (B): slots ≥ 8 not pre-set (${hex(alloc & ~(1 << slot))})`], `slot ${slot}`);
      writeHeader(f.heap, f.partB, 'alloc', alloc);
    }
  });
});

test('H4: a used block in the active bitmap of another type', async (t) => {
  await withHeap(t, (f) => {
    setConsistent(f.mem, f.heap.active[f.idB]!, f.part);
    t.deepEqual(problemsOf(f), [`block ${f.part} (A): active bit set for [A,B]`]);
    // Active for B only: both "not B's" and "has a free slot but is not active".
    clearConsistent(f.mem, f.heap.active[f.idA]!, f.part);
    t.deepEqual(problemsOf(f), [`block ${f.part} (A): active bit set for [B]`, `block ${f.part} (A): has a free slot but is not active`]);
  });
});

test('H4: a block with a free slot must be active (issue 17, survivor 1: and a full block must not be)', async (t) => {
  await withHeap(t, (f) => {
    clearConsistent(f.mem, f.heap.active[f.idA]!, f.part);
    t.deepEqual(problemsOf(f), [`block ${f.part} (A): has a free slot but is not active`]);
    setConsistent(f.mem, f.heap.active[f.idA]!, f.part);
    f.rt.validateHeap();
    setConsistent(f.mem, f.heap.active[f.idA]!, f.full);
    t.deepEqual(problemsOf(f), [`block ${f.full} (A): is full but is active`]);
    clearConsistent(f.mem, f.heap.active[f.idA]!, f.full);
    f.rt.validateHeap();
    // A full block of B: its free slots are the pre-set ones, so it is full.
    const alloc = readHeader(f.heap, f.partB, 'alloc');
    writeHeader(f.heap, f.partB, 'alloc', ALL_ONES);
    t.deepEqual(problemsOf(f), [`block ${f.partB} (B): is full but is active`]);
    clearConsistent(f.mem, f.heap.active[f.idB]!, f.partB);
    f.rt.validateHeap();
    writeHeader(f.heap, f.partB, 'alloc', alloc);
    t.deepEqual(problemsOf(f), [`block ${f.partB} (B): has a free slot but is not active`]);
  });
});

test('H5: the iteration bitmap must lie within the allocation bitmap and below N_t', async (t) => {
  await withHeap(t, (f) => {
    const alloc = readHeader(f.heap, f.part, 'alloc');
    const freeSlot = 31 - Math.clz32(~alloc & -~alloc); // lowest free slot
    writeHeader(f.heap, f.part, 'iter', alloc | (1 << freeSlot));
    t.deepEqual(problemsOf(f), [
      `block ${f.part} (A): iteration bitmap ${hex(alloc | (1 << freeSlot))} not within allocation bitmap ${hex(alloc)}`,
    ]);
    writeHeader(f.heap, f.part, 'iter', alloc);
    f.rt.validateHeap(); // iteration = allocation is allowed (a do-all's start)
    // A slot ≥ N_t is "allocated" (pre-set), but never an object to visit.
    const allocB = readHeader(f.heap, f.partB, 'alloc');
    writeHeader(f.heap, f.partB, 'iter', 1 << 31);
    t.deepEqual(problemsOf(f), [`block ${f.partB} (B): iteration bitmap 0x80000000 not within allocation bitmap ${hex(allocB)}`]);
  });
});

test('a heap with more than 100 problems reports the first 100 (in block order)', async (t) => {
  await withHeap(t, (f) => {
    const broken = f.free.slice(0, 120);
    for (const b of broken) writeHeader(f.heap, b, 'iter', 1); // one problem per block
    const e = t.throws(() => f.rt.validateHeap(), { instanceOf: HeapCorruptionError })!;
    t.deepEqual(
      e.problems,
      broken.slice(0, 100).map((b) => `block ${b}: free but iteration bitmap is 0x00000001`),
    );
    t.regex(e.message, /^heap invariant violated \(100 problems\):\n/);
    t.regex(e.message, /\n {2}… and 80 more$/);
  });
});

// ------------------------------------------------------------------ a worker's view (Heap.attach)

test("Heap.attach: a second view of the same memory sees the same blocks; another layout's or a blank memory is refused", async (t) => {
  await withHeap(t, (f) => {
    const view = Heap.attach(f.heap.memory, f.heap.table, f.heap.plan.heapBytes);
    t.is(view.numBlocks, f.heap.numBlocks);
    t.is(view.blockType(f.part), f.idA);
    t.is(view.liveInBlock(f.part), 3);
    t.is(view.liveInBlock(f.partB), 2);
    t.is(view.liveInBlock(f.free[0]!), 0);
    t.is(view.blockType(f.free[0]!), FREE_TYPE);
    view.validate();
    writeHeader(view, f.free[0]!, 'iter', 1); // a write through one view is seen by the other
    t.deepEqual(problemsOf(f), [`block ${f.free[0]}: free but iteration bitmap is 0x00000001`]);
    writeHeader(view, f.free[0]!, 'iter', 0);
    // Other classes: another block size.
    const other = planTypes([B]);
    t.throws(() => Heap.attach(f.heap.memory, other, f.heap.plan.heapBytes), {
      instanceOf: UsageError,
      message: 'attach: the heap was laid out for other classes (block size or count differ)',
    });
    // Same classes, a larger heap: another block count.
    t.throws(() => Heap.attach(f.heap.memory, f.heap.table, f.heap.plan.heapBytes + 65536), {
      instanceOf: UsageError,
      message: /^attach: the heap was laid out for other classes/,
    });
  });
  const blank = new WebAssembly.Memory({ initial: MIN_HEAP_BYTES / 65536, maximum: MIN_HEAP_BYTES / 65536, shared: true });
  const table = planTypes([Base, A, B]);
  t.throws(() => Heap.attach(blank, table, MIN_HEAP_BYTES), {
    instanceOf: UsageError,
    message: 'attach: memory is not an smmo heap of this layout version',
  });
  const heap = Heap.create(table, MIN_HEAP_BYTES);
  const version = (HEADER_OFFSET >> 2) + H_VERSION;
  heap.i32[version]! += 1;
  t.throws(() => Heap.attach(heap.memory, table, MIN_HEAP_BYTES), { message: /not an smmo heap of this layout version/ });
  heap.i32[version]! -= 1;
  t.is(Heap.attach(heap.memory, table, MIN_HEAP_BYTES).numBlocks, heap.numBlocks);
});

test('Heap.create: a new heap is all free except block 0, with its header written', (t) => {
  const table = planTypes([Base, A, B]);
  const heap = Heap.create(table, MIN_HEAP_BYTES);
  heap.validate();
  t.is(heap.free.count(), heap.numBlocks - 1);
  t.false(heap.free.get(0));
  const h = HEADER_OFFSET >> 2;
  t.is(heap.i32[h + H_MAGIC], MAGIC);
  t.is(heap.i32[h + H_NUM_BLOCKS], heap.numBlocks);
  t.is(heap.i32[h + H_BLOCK_BYTES], heap.plan.blockBytes);
  t.is(heap.i32[h + H_NUM_TYPES], 3);
  t.is(heap.u32[h + H_HEAP_BYTES], MIN_HEAP_BYTES);
  t.is(heap.u32[h + H_BLOCKS_OFFSET], heap.plan.blocksOffset);
  t.is(heap.u32[h + H_BLOCK_LIST_OFFSET], heap.plan.blockListOffset);
  for (const b of [0, 1, heap.numBlocks - 1]) {
    t.is(readHeader(heap, b, 'alloc'), ALL_ONES, `block ${b}`);
    t.is(readHeader(heap, b, 'iter'), 0);
    t.is(readHeader(heap, b, 'type'), FREE_TYPE);
    t.is(readHeader(heap, b, 'gen'), 0);
  }
  for (const bm of [...heap.allocated, ...heap.active]) if (bm !== null) t.is(bm.count(), 0, bm.name);
  t.is(heap.allocated[table.byClass(Base)!.id], null, 'no bitmaps for an abstract class');
  t.deepEqual(Array.from(heap.slots), [0, 32, 8]);
  t.deepEqual(Array.from(heap.highMask), [table.types[0]!.highMask, 0, ~0xff]);
});
