/**
 * Per-warp request coalescing (paper §4.2 after XMalloc; the allocator core's warp cache,
 * wasm/src/alloc/core.rs C1–C4) through the runtime: a do-all whose lanes create objects.
 *
 *  - the first create of a warp reserves, with one atomic on one block, as many slots as
 *    there are lanes left (the current one included); later creates take cached slots;
 *    the cache runs dry at the last lane; the objects lie in one block in lane order;
 *  - lanes that create several objects or none: each refill reserves the lanes left; a
 *    lane that uses up its own reservation asks again for a whole block (core.rs C6);
 *  - a block with fewer free slots than lanes: the rest spills to another block; on one
 *    thread a full warp goes to a kept block instead, when there is one (core.rs C5);
 *  - a method that throws: the slots cached for the rest of the warp go back;
 *  - NoCoal, and create outside a do-all: one slot per create, nothing cached;
 *  - the executor contract: a hand-written executor that makes the same calls leaves the
 *    same heap, byte for byte;
 *  - two threads: every object accounted for, the heap valid.
 */
import test from 'ava';
import { createRuntime, MethodError, type Runtime, type RuntimeOptions } from '../index.js';
import { BLOCK_ALLOC_WORD, MIN_HEAP_BYTES, S_CACHED } from '../runtime/layout.js';
import { Child, COALESCING_FIXTURES, seen, Spawner } from './coalescing.fixtures.js';

const blockOf = (h: number): number => h >>> 5;

async function spawners(ns: readonly number[], options: Partial<RuntimeOptions> = {}): Promise<Runtime> {
  const rt = await createRuntime({ classes: [Spawner, Child], heap: MIN_HEAP_BYTES, ...options });
  await rt.parallelNew(Spawner, ns.length, (s, i) => (s.n = ns[i]!));
  seen.length = 0;
  return rt;
}

/** Live Children: the heap's count, which must equal the objects the lanes saw created. */
function children(rt: Runtime): number {
  return rt.count(Child);
}

test.serial('one reservation per warp: the first create reserves the lanes left, the others take cached slots in lane order', async (t) => {
  const rt = await spawners(new Array<number>(32).fill(1));
  try {
    await rt.parallelDo(Spawner, 'spawn');
    t.is(seen.length, 32);
    t.deepEqual(
      seen.map((s) => s.cached),
      Array.from({ length: 32 }, (_, k) => 31 - k),
      'after lane k the cache holds 31 - k slots',
    );
    t.deepEqual(
      seen.map((s) => s.lanesLeft),
      Array.from({ length: 32 }, (_, k) => 32 - k),
    );
    const b = blockOf(seen[0]!.child);
    t.deepEqual(
      seen.map((s) => s.child),
      Array.from({ length: 32 }, (_, k) => b * 32 + k),
      'one block, slots in lane order',
    );
    t.is(children(rt), 32);
    t.is(rt.heap.i32[rt.main.allocator.state + S_CACHED], 0, 'nothing cached after the pass');
    rt.validateHeap();
  } finally {
    await rt.close();
  }
});

test.serial(
  'lanes that create several objects or none: each refill reserves the lanes left, and nothing reserved stays unused',
  async (t) => {
    const ns = [0, 2, 1, 0, 3, 0, 0, 1, 2, 0, 0, 0, 4, 1, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0, 1, 0, 0, 3, 0, 0, 1];
    const rt = await spawners(ns);
    try {
      await rt.parallelDo(Spawner, 'spawn');
      const total = ns.reduce((a, b) => a + b, 0);
      t.is(seen.length, total);
      // A create that found the cache empty reserved min(lanes left, free slots): it left
      // lanesLeft - 1 slots (the block had room for all of them here).
      let cached = 0;
      for (const s of seen) {
        const expected = cached > 0 ? cached - 1 : s.lanesLeft - 1;
        t.is(s.cached, expected, `create in lane ${s.lane}`);
        cached = s.cached;
      }
      t.is(children(rt), total, 'no reserved slot left behind');
      t.is(rt.stats().types['Child']!.objects, total);
      rt.validateHeap();
    } finally {
      await rt.close();
    }
  },
);

test.serial('a lane that creates more than its reservation asks again for a whole block; another lane does not (C6)', async (t) => {
  // Lanes 30 and 31 of one warp (2 and 1 lanes left) create two Children each.
  const rt = await spawners([...new Array<number>(30).fill(0), 2, 2]);
  try {
    await rt.parallelDo(Spawner, 'spawn');
    t.deepEqual(
      seen.map((s) => [s.lanesLeft, s.cached]),
      [
        [2, 1], // the lanes left: 2 reserved, 1 cached
        [2, 0],
        [1, 0], // a new lane: the lanes left, 1 (C2), though the lane before used its reservation up
        [1, 28], // the same lane again: the 29 free slots of the block
      ],
    );
    t.is(children(rt), 4);
    t.is(rt.heap.i32[rt.main.allocator.state + S_CACHED], 0, 'nothing cached after the pass');
    rt.validateHeap();
  } finally {
    await rt.close();
  }
});

test.serial('a lane that creates in a loop reserves a block at a time, not one slot per create (C6)', async (t) => {
  const rt = await spawners([...new Array<number>(31).fill(0), 40]); // the last lane: 1 lane left
  try {
    await rt.parallelDo(Spawner, 'spawn');
    t.deepEqual(
      seen.map((s) => s.cached),
      [0, ...Array.from({ length: 31 }, (_, k) => 30 - k), ...Array.from({ length: 8 }, (_, k) => 31 - k)],
      'one slot (the lanes left), then the 31 left in that block, then a whole new block',
    );
    const blocks = new Set(seen.map((s) => blockOf(s.child)));
    t.is(blocks.size, 2);
    t.is(children(rt), 40, 'the 24 slots reserved and not used went back');
    rt.validateHeap();
  } finally {
    await rt.close();
  }
});

test.serial('a lane that deletes what it creates asks again for all slots but one: its block never fills (C6)', async (t) => {
  const rt = await spawners([...new Array<number>(31).fill(0), 70]); // the last lane: 1 lane left
  try {
    await rt.parallelDo(Spawner, 'churn');
    t.deepEqual(
      seen.map((s) => s.cached),
      [
        0,
        ...Array.from({ length: 31 }, (_, k) => 30 - k),
        ...Array.from({ length: 31 }, (_, k) => 30 - k),
        ...Array.from({ length: 7 }, (_, k) => 30 - k),
      ],
      'one slot (the lanes left), then 31 of the 32 at a time',
    );
    t.is(new Set(seen.map((s) => blockOf(s.child))).size, 1, 'one block for all 70');
    t.is(children(rt), 0, 'every child deleted');
    const w = rt.heap.blockWord(blockOf(seen[0]!.child));
    t.is(rt.heap.i32[w]! & ~rt.table.byClass(Child)!.highMask, 0, 'the reserved and unused slots went back');
    rt.validateHeap();
  } finally {
    await rt.close();
  }
});

test.serial('two threads: a lane that keeps what it creates fills blocks of its own, not the open block (C6)', async (t) => {
  // The heap of two threads; one block of Spawners runs inline on the calling thread.
  const rt = await spawners([...new Array<number>(31).fill(0), 40], { threads: 2, modules: [COALESCING_FIXTURES] });
  try {
    const open: number[] = [];
    for (let i = 0; i < 20; i++) open.push(rt.create(Child).handle); // block H: 20 objects, 12 free
    const h = blockOf(open[0]!);
    seen.length = 0;
    await rt.parallelDo(Spawner, 'spawn');
    t.deepEqual(
      seen.map((s) => s.cached),
      [0, ...Array.from({ length: 32 }, (_, k) => 31 - k), ...Array.from({ length: 7 }, (_, k) => 31 - k)],
      'one slot of the open block (the lanes left), then whole blocks',
    );
    const blocks = seen.map((s) => blockOf(s.child));
    t.is(blocks[0], h);
    t.true(blocks.slice(1, 33).every((b) => b === blocks[1]) && blocks[1] !== h, 'the next 32 in one block of its own');
    t.true(blocks.slice(33).every((b) => b === blocks[33]) && blocks[33] !== blocks[1] && blocks[33] !== h);
    let inOpen = 0;
    rt.deviceDo(Child, (c) => void (inOpen += blockOf(c.handle) === h ? 1 : 0));
    t.is(inOpen, 21, 'the open block keeps its other 11 free slots');
    t.is(children(rt), 60);
    rt.validateHeap();
  } finally {
    await rt.close();
  }
});

test.serial('a block with fewer free slots than lanes: the reservation takes what it has, the rest spills to another block', async (t) => {
  const rt = await spawners(new Array<number>(32).fill(1));
  try {
    const first: number[] = [];
    for (let i = 0; i < 20; i++) first.push(rt.create(Child).handle); // one block, 12 slots free
    const b1 = blockOf(first[0]!);
    t.true(first.every((h) => blockOf(h) === b1));
    seen.length = 0;
    await rt.parallelDo(Spawner, 'spawn');
    const inB1 = seen.filter((s) => blockOf(s.child) === b1);
    t.is(inB1.length, 12, 'the 12 free slots of the partly filled block');
    t.is(seen[0]!.cached, 11);
    const spill = seen[12]!;
    t.not(blockOf(spill.child), b1);
    t.is(spill.lanesLeft, 20);
    t.is(spill.cached, 19, 'the second reservation: the 20 lanes left');
    t.true(seen.slice(12).every((s) => blockOf(s.child) === blockOf(spill.child)));
    t.is(children(rt), 52);
    rt.validateHeap();
  } finally {
    await rt.close();
  }
});

for (const threads of [1, 2]) {
  test.serial(
    threads === 1
      ? 'one thread: a full warp that the open block cannot take whole goes to a kept block, and the open block keeps its free slots (C5)'
      : 'two threads: the same warp spills from the open block into another (C5 is for one thread)',
    async (t) => {
      const rt = await spawners(new Array<number>(32).fill(1), { threads, modules: [COALESCING_FIXTURES] });
      try {
        const full: number[] = [];
        for (let i = 0; i < 32; i++) full.push(rt.create(Child).handle); // block K, full
        const open: number[] = [];
        for (let i = 0; i < 20; i++) open.push(rt.create(Child).handle); // block H: 20 objects, 12 free, the open block
        const k = blockOf(full[0]!);
        const h = blockOf(open[0]!);
        t.true(full.every((x) => blockOf(x) === k) && open.every((x) => blockOf(x) === h) && k !== h);
        for (const x of full) rt.destroy(rt.get(Child, x)); // K empty: kept (K1)
        seen.length = 0;
        await rt.parallelDo(Spawner, 'spawn'); // one block of 32 Spawners: inline on the calling thread
        t.is(seen.length, 32);
        const inH = seen.filter((s) => blockOf(s.child) === h).length;
        if (threads === 1) {
          t.true(
            seen.every((s) => blockOf(s.child) === k),
            'all 32 in the kept block',
          );
          t.is(seen[0]!.cached, 31, 'one reservation for the warp');
          t.is(inH, 0, 'the open block keeps its 12 free slots');
        } else {
          t.is(inH, 12, 'the 12 free slots of the open block first');
          t.is(seen[12]!.cached, 19, 'then one reservation of the 20 lanes left elsewhere');
        }
        let inOpen = 0;
        rt.deviceDo(Child, (c) => void (inOpen += blockOf(c.handle) === h ? 1 : 0));
        t.is(inOpen, threads === 1 ? 20 : 32);
        t.is(children(rt), 52);
        rt.validateHeap();
      } finally {
        await rt.close();
      }
    },
  );
}

test.serial('a method that throws in the middle of a warp: the slots cached for the rest of it go back', async (t) => {
  const ns = new Array<number>(32).fill(1);
  ns[5] = 99; // creates one, then throws
  const rt = await spawners(ns);
  try {
    const e = await t.throwsAsync(rt.parallelDo(Spawner, 'spawn'), { instanceOf: MethodError });
    t.regex(e.message, /fails on purpose/);
    t.is(seen.length, 6, 'lanes 0 … 5 created one each');
    t.is(seen[5]!.cached, 26, 'the warp had 26 slots cached when the lane threw');
    t.is(children(rt), 6, 'the 26 cached slots were released');
    t.is(rt.heap.i32[rt.main.allocator.state + S_CACHED], 0);
    rt.validateHeap();
    // The runtime stays usable: the next pass coalesces again, in the 26 free slots of the
    // same Child block first (the rest spills).
    for (let i = 0; i < 32; i++) rt.get(Spawner, seen[0]!.lane - (seen[0]!.lane & 31) + i).n = 1;
    const b = blockOf(seen[0]!.child);
    seen.length = 0;
    await rt.parallelDo(Spawner, 'spawn');
    t.is(seen[0]!.cached, 25);
    t.is(blockOf(seen[0]!.child), b);
    t.is(children(rt), 38);
    rt.validateHeap();
  } finally {
    await rt.close();
  }
});

test.serial('NoCoal, and create outside a do-all: one slot per create, nothing cached', async (t) => {
  const rt = await spawners(new Array<number>(32).fill(1), { allocator: { coalescing: false } });
  try {
    await rt.parallelDo(Spawner, 'spawn');
    t.is(seen.length, 32);
    t.true(
      seen.every((s) => s.cached === 0),
      'the cache is never used',
    );
    t.is(children(rt), 32);
    rt.validateHeap();
  } finally {
    await rt.close();
  }
  const rt2 = await spawners([1]);
  try {
    const c = rt2.create(Child);
    const st = rt2.main.allocator.state;
    t.is(rt2.heap.i32[st + S_CACHED], 0, 'outside a do-all: no cache');
    t.truthy(c);
  } finally {
    await rt2.close();
  }
});

test.serial('the executor contract: a hand-written executor that makes the same allocator calls leaves the same heap bytes', async (t) => {
  const ns = [1, 0, 2, 1, 3, 0, 1, 1, 0, 2, 1, 0, 0, 4, 1, 1, 0, 2, 0, 0, 1, 3, 1, 0, 1, 0, 0, 2, 1, 1, 0, 1, 2, 1, 1];
  const a = await spawners(ns, { seed: 5 });
  const b = await spawners(ns, { seed: 5 });
  try {
    await a.parallelDo(Spawner, 'spawnQuietly');
    // On b, the contract by hand (wasm/src/alloc/core.rs "Executor contract"): for each
    // block of the pass in block-list order, warp begin with its lanes, before each lane
    // (ascending slots) the lanes left, the lane's creates, then warp end; flushKept at the end.
    // The lanes come from the allocation words, as a's: spawnQuietly creates only Child
    // objects, so a's do-all on the calling thread copies no iteration word (thread.ts R1).
    const ctx = b.main;
    const id = b.table.byClass(Spawner)!.id;
    const lists = ctx.snapshotLists([id]);
    const alloc = ctx.allocator;
    for (let i = lists[2 * id]!; i < lists[2 * id]! + lists[2 * id + 1]!; i++) {
      const bid = ctx.blockList[i]!;
      let bits = Atomics.load(b.heap.i32, b.heap.blockWord(bid) + BLOCK_ALLOC_WORD);
      let left = 0;
      for (let x = bits; x !== 0; x &= x - 1) left++;
      alloc.warpBegin(left);
      while (bits !== 0) {
        const slot = 31 - Math.clz32(bits & -bits);
        bits &= bits - 1;
        b.heap.i32[alloc.laneWord] = left--;
        const self = b.get(Spawner, bid * 32 + slot);
        for (let k = 0; k < self.n; k++) ctx.create(Child, { parent: self.handle });
      }
      alloc.warpEnd();
    }
    alloc.flushKept();
    const pa = a.heap.plan;
    const skip = [pa.stateWord * 4, (pa.stateWord + pa.states * pa.stateWords) * 4];
    const bytes = (rt: Runtime, from: number, to: number): Buffer => Buffer.from(rt.heap.buffer, from, to - from);
    t.true(bytes(a, pa.blocksOffset, pa.heapBytes).equals(bytes(b, pa.blocksOffset, pa.heapBytes)), 'blocks');
    t.true(bytes(a, 1 << 20, skip[0]!).equals(bytes(b, 1 << 20, skip[0]!)), 'header, bitmaps, type table');
    t.is(
      a.count(Child),
      ns.reduce((x, y) => x + y, 0),
    );
  } finally {
    await a.close();
    await b.close();
  }
});

test('two threads: every child accounted for, no cached slot left, the heap valid', async (t) => {
  const n = 40 * 32;
  const rt = await createRuntime({ classes: [Spawner, Child], heap: '4MB', threads: 2, modules: [COALESCING_FIXTURES], inlineBlocks: 0 });
  try {
    t.true(rt.heap.flags.atomic, 'several threads: the core uses atomics');
    await rt.parallelNew(Spawner, n, (s, i) => (s.n = i % 4));
    let expected = 0;
    for (let i = 0; i < n; i++) expected += i % 4;
    for (let round = 1; round <= 3; round++) {
      await rt.parallelDo(Spawner, 'spawnQuietly');
      t.is(rt.count(Child), round * expected);
      rt.validateHeap();
    }
  } finally {
    await rt.close();
  }
});
