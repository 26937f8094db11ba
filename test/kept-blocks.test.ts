/**
 * Kept blocks (the allocator core, wasm/src/alloc/core.rs K1–K5): a thread keeps blocks
 * it emptied for its next allocations instead of returning them to `free` at once. Every
 * Allocator here is the binding of the Rust core.
 *
 * Forced interleavings on one thread (several Allocator instances stand for threads, as
 * in interleavings.test.ts), a seeded random model with validate() after every step, and
 * runtime-level checks: on 2 threads (worker threads) passes leave no empty blocks behind;
 * on one thread the emptied blocks stay with their class from pass to pass (only the
 * thread's kept stack and hint blocks) until stats() or validateHeap() gives them back.
 */
import test from 'ava';
import fc from 'fast-check';
import { Allocator, DEFAULT_KEEP_BLOCKS } from '../runtime/allocator.js';
import { createRuntime, HeapExhaustedError, i32, object, retryLimits } from '../index.js';
import type { Heap } from '../runtime/heap.js';
import { BLOCK_ALLOC_WORD, BLOCK_GEN_WORD, MIN_HEAP_BYTES } from '../runtime/layout.js';
import { A, allocatorFixture, type Fixture } from './helpers/allocators.js';
import { FC_SEED, fcParams } from './helpers/fc.js';
import { seedNote } from './helpers/seed.js';
import { Driver, Item } from './workers.fixtures.js';

const FIXTURES = new URL('./workers.fixtures.js', import.meta.url).href;
const blockOf = (h: number): number => h >>> 5;
const fixture = (keep = DEFAULT_KEEP_BLOCKS): Fixture => allocatorFixture(keep);

const allocWord = (heap: Heap, b: number): number => Atomics.load(heap.i32, heap.blockWord(b) + BLOCK_ALLOC_WORD);
const genWord = (heap: Heap, b: number): number => Atomics.load(heap.i32, heap.blockWord(b) + BLOCK_GEN_WORD);

/** Used blocks that hold no object. */
function emptyUsedBlocks(heap: Heap): number {
  let n = 0;
  for (let b = 1; b < heap.numBlocks; b++) {
    const t = heap.blockType(b);
    if (t >= 0 && heap.liveInBlock(b) === 0) n++;
  }
  return n;
}

test('K4: emptying the block a thread allocates in leaves it open (no invalidation, no bitmap change); flushKept retires it', (t) => {
  const { heap, tA, t1 } = fixture();
  const h = t1.allocate(tA);
  const b = blockOf(h);
  const gen = genWord(heap, b);
  t1.releaseHandle(h);
  t.false(heap.free.get(b), 'not returned to free');
  t.true(heap.allocated[tA.id]!.get(b));
  t.true(heap.active[tA.id]!.get(b));
  t.is(allocWord(heap, b), heap.highMask[tA.id]!, 'empty and open');
  t.is(genWord(heap, b), gen, 'not invalidated: same generation');
  heap.validate();
  // The next allocation goes to the same block.
  const h2 = t1.allocate(tA);
  t.is(blockOf(h2), b);
  t1.releaseHandle(h2);
  t1.flushKept();
  t.true(heap.free.get(b), 'flushKept retired the empty hint block');
  t.is(heap.free.count(), heap.numBlocks - 1);
  heap.validate();
});

test('K4 then K2: another thread allocates in the open block; the flush fails, and that thread takes the block over when it empties it', (t) => {
  const { heap, tA, t1, t2 } = fixture();
  const h1 = t1.allocate(tA);
  const b = blockOf(h1);
  t1.releaseHandle(h1); // b: empty, open, t1's hint
  // t2 reserves a slot in b (as if its tryFindSet had picked b from `active`).
  const slot = t2.reserve(b);
  t.true(slot >= 0);
  t1.flushKept();
  t.false(heap.free.get(b), 't1 could not retire a block that holds t2 object');
  t.is(heap.liveInBlock(b), 1);
  t.is(allocWord(heap, b), heap.highMask[tA.id]! | (1 << slot), 'the failed lock was rolled back exactly');
  t.true(heap.active[tA.id]!.get(b));
  heap.validate();
  // t2 frees it: t2 emptied a block that is not its hint, invalidates it and keeps it.
  const gen = genWord(heap, b);
  t2.release(b, slot);
  t.is(t2.keptBlocks(), 1);
  t.is(genWord(heap, b), gen + 1, 'kept blocks open in a new generation');
  t.is(allocWord(heap, b), heap.highMask[tA.id]!);
  heap.validate();
  t2.flushKept();
  t.is(t2.keptBlocks(), 0);
  t.true(heap.free.get(b));
  heap.validate();
});

for (const own of [true, false]) {
  test(`K1: a block emptied while the thread allocates elsewhere is kept and used again before a new block (${own ? 'multi-threaded order: the stack first' : "one thread: Alg. 1's order"})`, (t) => {
    const { heap, tA, t1 } = fixture();
    t1.setOwnFirstBlock(own);
    const first: number[] = [];
    for (let i = 0; i < 32; i++) first.push(t1.allocate(tA));
    const b1 = blockOf(first[0]!);
    t.true(
      first.every((h) => blockOf(h) === b1),
      '32 slots: one block',
    );
    t.false(heap.active[tA.id]!.get(b1), 'full');
    const h2 = t1.allocate(tA);
    const b2 = blockOf(h2);
    t.not(b2, b1);
    for (const h of first) t1.releaseHandle(h);
    t.is(t1.keptBlocks(), 1, 'b1 kept');
    t.false(heap.free.get(b1));
    heap.validate();
    // The hint (b2) comes first; once b2 is full the next block is b1.
    const more: number[] = [];
    for (let i = 0; i < 31; i++) more.push(t1.allocate(tA));
    t.true(more.every((h) => blockOf(h) === b2));
    const next = t1.allocate(tA);
    t.is(blockOf(next), b1, 'b1 again, not a block from free');
    // Multi-threaded: taken off the stack; one thread: found among the active blocks (the stack entry is stale, harmless).
    t.is(t1.keptBlocks(), own ? 0 : 1);
    t1.flushKept(); // a stale entry names a block in use: the flush must leave it alone
    t.is(heap.liveInBlock(b1), 1);
    heap.validate();
  });
}

test('K1: at most `keep` blocks per type are kept; the rest are retired at once', (t) => {
  const { heap, tA, t1 } = fixture(2);
  const hs: number[] = [];
  for (let i = 0; i < 5 * 32 + 1; i++) hs.push(t1.allocate(tA)); // five full blocks and the hint
  const last = hs.pop()!;
  for (const h of hs) t1.releaseHandle(h);
  t.is(t1.keptBlocks(), 2);
  t.is(heap.allocated[tA.id]!.count(), 3, 'two kept + the hint block');
  t.is(heap.free.count(), heap.numBlocks - 1 - 3);
  heap.validate();
  t1.releaseHandle(last);
  t1.flushKept();
  t.is(heap.free.count(), heap.numBlocks - 1);
  heap.validate();
});

test('K3: blocks kept for one type are reclaimed when another type runs out of free blocks', (t) => {
  const { heap, tA, tB, t1, t2 } = fixture(8);
  const hs: number[] = [];
  for (let i = 0; i < 6 * 32 + 1; i++) hs.push(t1.allocate(tA));
  for (const h of hs) t1.releaseHandle(h);
  t.is(t1.keptBlocks(), 6);
  t.is(emptyUsedBlocks(heap), 7, 'six kept blocks and the open hint block');
  // t2 fills the whole heap with B: it must get every block, the kept ones included.
  let made = 0;
  const e = t.throws(() => {
    for (;;) {
      t2.allocate(tB);
      made++;
    }
  });
  t.true(e instanceof HeapExhaustedError, String(e));
  t.is(heap.allocated[tB.id]!.count(), heap.numBlocks - 1, 'every block went to B');
  t.is(heap.allocated[tA.id]!.count(), 0);
  t.is(made, (heap.numBlocks - 1) * heap.slots[tB.id]!);
  heap.validate();
  // t1's stack names blocks that are B's now: its next A allocation must not land in one (D1).
  t.throws(() => t1.allocate(tA), { instanceOf: HeapExhaustedError });
  heap.validate();
});

test('D1 through the stack: a kept block reclaimed and re-initialised for another type is rolled back', (t) => {
  const { heap, tA, tB, t1, t2, t3, bitmaps } = fixture();
  const hs: number[] = [];
  for (let i = 0; i < 33; i++) hs.push(t1.allocate(tA));
  const b1 = blockOf(hs[0]!);
  for (let i = 0; i < 32; i++) t1.releaseHandle(hs[i]!);
  t.is(t1.keptBlocks(), 1);
  // t2 reclaims every empty block (as on exhaustion); t3 takes b1 for B.
  t.is(t2.reclaimEmpty(), 1);
  t.true(heap.free.get(b1));
  t.true(bitmaps.tryClear(heap.free, b1));
  t3.initializeBlock(b1, tB);
  const hB = t3.allocate(tB);
  t.is(blockOf(hB), b1);
  heap.validate();
  // Fill t1's hint block so that its next allocation pops b1 from the stack.
  for (let i = 0; i < 31; i++) t1.allocate(tA);
  const h = t1.allocate(tA);
  t.is(heap.blockType(blockOf(h)), tA.id, 'an A object, not a slot in the B block');
  t.not(blockOf(h), b1);
  t.is(heap.liveInBlock(b1), 1, 'the B block is untouched');
  heap.validate();
});

test('allocateMany: the retry budget counts consecutive failed rounds only (a success resets it)', (t) => {
  // t1's kept stack, bottom to top: X1 (re-typed B), X3 (A), X2 (re-typed B), X4 (A). With
  // own first blocks, allocateMany pops them in turn: X4 succeeds, X2 fails (D1 rollback),
  // X3 succeeds, X1 fails. Two failures in one call, never two in a row: with a budget of
  // two attempts that must pass; a counter that kept counting across successes would give up.
  const { heap, tA, tB, t1, t2, t3, bitmaps } = fixture(8);
  const hs: number[] = [];
  for (let i = 0; i < 4 * 32 + 1; i++) hs.push(t1.allocate(tA));
  const block = (k: number): number[] => hs.slice(32 * k, 32 * k + 32);
  const [x1, x2, x3, x4] = [0, 1, 2, 3].map((k) => blockOf(block(k)[0]!));
  const retype = (b: number): void => {
    // Another thread frees the kept (empty) block b and a third re-initialises it for B with one object.
    t.true(t2.invalidate(b, genWord(heap, b)));
    t2.retireBlock(b, tA.id);
    t.true(bitmaps.tryClear(heap.free, b));
    t3.initializeBlock(b, tB);
    t.true(t3.reserve(b) >= 0);
  };
  for (const h of block(0)) t1.releaseHandle(h);
  retype(x1!);
  for (const h of block(2)) t1.releaseHandle(h);
  for (const h of block(1)) t1.releaseHandle(h);
  retype(x2!);
  for (const h of block(3)) t1.releaseHandle(h);
  t.is(t1.keptBlocks(), 4);
  heap.validate();
  t1.setOwnFirstBlock(true);
  const saved = { ...retryLimits };
  retryLimits.spinAttempts = 0;
  retryLimits.maxAttempts = 2;
  try {
    const out = new Uint32Array(31 + 32 + 32 + 4);
    t1.allocateMany(tA, out.length, out); // the hint's 31 free slots, X4, X3, then a new block
    t.true(
      [...out].every((h) => heap.blockType(blockOf(h)) === tA.id),
      'A objects only',
    );
    t.true(out.some((h) => blockOf(h) === x4) && out.some((h) => blockOf(h) === x3));
    // Two rounds failed: in X2 the 7 free slots of the B block were reserved (36 still wanted)
    // and rolled back, in X1 the 4 still wanted.
    t.is(t1.rollbackCount(), 7 + 4);
    t.deepEqual(
      t1.rollbacks().map(([b]) => b),
      [x2, x2, x2, x2, x1, x1, x1, x1],
      'the last 8 rollbacks: X2 then X1',
    );
  } finally {
    Object.assign(retryLimits, saved);
  }
  heap.validate();
});

test('K5: with own first blocks, a second thread opens its own block instead of sharing the first thread active one', (t) => {
  for (const own of [false, true]) {
    const { heap, tA, t1, t2 } = fixture();
    t1.setOwnFirstBlock(own);
    t2.setOwnFirstBlock(own);
    const b1 = blockOf(t1.allocate(tA));
    const b2 = blockOf(t2.allocate(tA));
    if (own) t.not(b2, b1, 'own first block');
    else t.is(b2, b1, "the paper's choice: the only active block");
    heap.validate();
    if (own) {
      // Once t2's block is full, its next choice is an active block again (b1 has room).
      for (let i = 0; i < 31; i++) t.is(blockOf(t2.allocate(tA)), b2);
      t.is(blockOf(t2.allocate(tA)), b1, 'then Alg. 1: an active block');
      // A hint that still holds objects survives the flush: the next pass goes on in it.
      t2.flushKept();
      t.is(blockOf(t2.allocate(tA)), b1);
      // A thread whose hint block was emptied and retired starts the next pass in a block of its own.
      const t3 = new Allocator(heap, 77);
      t3.setOwnFirstBlock(true);
      const h3 = t3.allocate(tA);
      const b3 = blockOf(h3);
      t.true(b3 !== b1 && b3 !== b2, 'own block although b1 has room');
      t3.releaseHandle(h3);
      t3.flushKept();
      t.true(heap.free.get(b3));
      const b4 = blockOf(t3.allocate(tA));
      t.true(b4 !== b1 && b4 !== b2, 'own block again in the next pass');
      heap.validate();
    }
  }
});

// ------------------------------------------------------------------ random model

type Op =
  | { op: 'alloc'; th: number; cls: 0 | 1; n: number }
  | { op: 'free'; th: number; pick: number }
  | { op: 'flush'; th: number }
  | { op: 'reclaim'; th: number };

test('random interleavings of allocate / release / flushKept / reclaimEmpty on three threads keep H1–H5 after every step', (t) => {
  t.log(seedNote(FC_SEED));
  const opArb: fc.Arbitrary<Op> = fc.oneof(
    {
      weight: 5,
      arbitrary: fc.record({
        op: fc.constant('alloc' as const),
        th: fc.nat(2),
        cls: fc.constantFrom(0 as const, 1 as const),
        n: fc.integer({ min: 1, max: 40 }),
      }),
    },
    { weight: 6, arbitrary: fc.record({ op: fc.constant('free' as const), th: fc.nat(2), pick: fc.nat() }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('flush' as const), th: fc.nat(2) }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('reclaim' as const), th: fc.nat(2) }) },
  );
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 4 }), fc.array(opArb, { maxLength: 120 }), (keep, ops) => {
      const { heap, tA, tB, t1, t2, t3 } = fixture(keep);
      const threads = [t1, t2, t3];
      for (const a of threads) a.setOwnFirstBlock(keep % 2 === 1); // half the cases with K5
      const types = [tA, tB];
      const live = new Map<number, number>(); // handle → type id
      for (const o of ops) {
        const a = threads[o.th]!;
        if (o.op === 'alloc') {
          for (let i = 0; i < o.n; i++) {
            let h: number;
            try {
              h = a.allocate(types[o.cls]!);
            } catch (e) {
              if (e instanceof HeapExhaustedError) break;
              throw e;
            }
            if (live.has(h)) throw new Error(`handle ${h} handed out twice`);
            live.set(h, types[o.cls]!.id);
          }
        } else if (o.op === 'free') {
          if (live.size === 0) continue;
          const hs = [...live.keys()];
          const h = hs[o.pick % hs.length]!;
          a.releaseHandle(h);
          live.delete(h);
        } else if (o.op === 'flush') {
          a.flushKept();
        } else {
          a.reclaimEmpty();
        }
        heap.validate();
        for (const [h, id] of live) if (heap.blockType(blockOf(h)) !== id) throw new Error(`handle ${h} is in a block of another type`);
        let count = 0;
        for (let b = 1; b < heap.numBlocks; b++) if (heap.blockType(b) >= 0) count += heap.liveInBlock(b);
        if (count !== live.size) throw new Error(`heap holds ${count} objects, model ${live.size}`);
      }
      for (const a of threads) a.flushKept();
      if (live.size === 0 && emptyUsedBlocks(heap) !== 0) throw new Error('empty blocks left after every thread flushed');
    }),
    fcParams(150),
  );
  t.pass('fast-check found no counterexample (it throws with the seed otherwise)');
});

// ------------------------------------------------------------------ runtime level

for (const threads of [1, 2]) {
  const what =
    threads === 1
      ? 'a runtime of one thread keeps emptied blocks from pass to pass (its own kept stack and hint only); validateHeap gives them back'
      : 'passes that create and delete leave no empty blocks behind (2 threads)';
  test(what, async (t) => {
    const rt = await createRuntime({ classes: [Item, Driver], threads, heap: '8MB', modules: [FIXTURES], inlineBlocks: 0, seed: 7 });
    try {
      await rt.parallelNew(Driver, 512, 'setup', 99);
      for (let round = 0; round < 12; round++) {
        await rt.parallelDo(Driver, 'churn', 6);
        if (threads > 1) t.is(emptyUsedBlocks(rt.heap), 0, `round ${round}: no empty used block between passes`);
        else {
          // Item and Driver: at most one open hint block each (K4) besides the kept stacks.
          const held = rt.main.allocator.keptBlocks() + 2;
          t.true(
            emptyUsedBlocks(rt.heap) <= held,
            `round ${round}: ${emptyUsedBlocks(rt.heap)} empty used blocks, the thread holds at most ${held}`,
          );
          rt.heap.validate(); // H1–H5 hold with the blocks kept
        }
        rt.validateHeap();
        t.is(emptyUsedBlocks(rt.heap), 0, `round ${round}: validateHeap gave every kept block back`);
      }
      t.true(rt.count(Item) > 0);
    } finally {
      await rt.close();
    }
  });
}

class Child extends object({ v: i32 }) {
  die(): void {
    this.destroy();
  }
}

class Parent extends object({ v: i32 }) {
  spawn(): void {
    this.runtime.create(Child, { v: this.v });
  }
}

for (const compile of [true, false]) {
  test(`one thread, ${compile ? 'compiled' : 'interpreted'}: the blocks a pass empties are the next pass's (no block leaves or joins the class); stats() gives them back`, async (t) => {
    const rt = await createRuntime({ classes: [Parent, Child], heap: MIN_HEAP_BYTES * 4, compile });
    try {
      for (let i = 0; i < 300; i++) rt.create(Parent, { v: i });
      const childBlocks = (): number[] => {
        const bs = new Set<number>();
        rt.deviceDo(Child, (c) => bs.add(blockOf(c.handle)));
        return [...bs].sort((x, y) => x - y);
      };
      rt.doAll(Parent, 'spawn');
      const first = childBlocks();
      t.is(first.length, 10, '300 children in ten blocks of 32 slots');
      const free = rt.heap.free.count();
      for (let round = 0; round < 3; round++) {
        rt.doAll(Child, 'die');
        t.is(rt.count(Child), 0);
        t.is(rt.heap.free.count(), free, `round ${round}: no emptied block went back to free`);
        t.is(emptyUsedBlocks(rt.heap), first.length, `round ${round}: the ten blocks stay with Child, empty`);
        rt.heap.validate();
        rt.doAll(Parent, 'spawn');
        t.deepEqual(childBlocks(), first, `round ${round}: the children are back in the same blocks`);
        t.is(rt.heap.free.count(), free, `round ${round}: no block taken from free`);
      }
      rt.doAll(Child, 'die');
      const stats = rt.stats();
      t.is(stats.types['Child']!.blocks, 0);
      t.is(rt.heap.free.count(), free + first.length, 'stats() retired the emptied blocks');
      t.is(emptyUsedBlocks(rt.heap), 0);
      rt.validateHeap();
    } finally {
      await rt.close();
    }
  });
}

test('keepBlocks: 0 is the paper allocator; bad values are refused', async (t) => {
  const rt = await createRuntime({ classes: [A], heap: MIN_HEAP_BYTES, keepBlocks: 0 });
  const a = rt.create(A);
  const b = blockOf(a.handle);
  rt.destroy(a);
  t.true(rt.heap.free.get(b), 'freed at once');
  await rt.close();
  for (const bad of [-1, 1.5, 5000]) {
    await t.throwsAsync(createRuntime({ classes: [A], heap: MIN_HEAP_BYTES, keepBlocks: bad }), {
      message: /keepBlocks must be an integer/,
    });
  }
});
