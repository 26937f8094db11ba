/**
 * Deferred self-deletion in compiled methods (runtime/compiler/emit-js.ts deferFree; core.rs
 * release_many): a method that deletes only its own object, iterates no class and runs no
 * JavaScript marks each deleted lane and releases the block's marked objects together when
 * its lanes leave the block, or before a call into the core's allocation. Checked here:
 *  - the heap is the interpreted one byte for byte after every pass on one thread (blocks
 *    partly emptied, emptied — kept and retired —, full before), also where the method
 *    creates objects of its own class or another before or after deleting itself, and
 *    stays so when objects are created afterwards (the allocator's state is the same, so
 *    new objects take the same slots);
 *  - a second destroy of the same object fails with the interpreted error, and the heap
 *    after it is the interpreted one; a lane that throws after some deletions in its block
 *    leaves the interpreted heap;
 *  - the deferral is used exactly where it may be: not for a method that also deletes
 *    another object or iterates a class, nor in checked mode;
 *  - on two threads the survivors are the same and validateHeap passes;
 *  - release_many through the binding: an already free slot in the mask is an error
 *    reported after the others are released; a slot the class does not have is refused
 *    before anything changes.
 */
import test from 'ava';
import { createRuntime, type Runtime } from '../index.js';
import type { ThreadContext } from '../runtime/thread.js';
import { DEFERRED_FREE_FIXTURES, Mote, Spark } from './deferred-free.fixtures.js';
import { compiledSource as sourceOf } from './helpers/compiled.js';
import { failsAlike, heapDifference } from './helpers/heap-bytes.js';

const N = 1000;

async function make(compile: boolean, opts: { checked?: boolean; threads?: number } = {}): Promise<Runtime> {
  const rt = await createRuntime({ classes: [Mote, Spark], heap: '4MB', compile, seed: 9, modules: [DEFERRED_FREE_FIXTURES], ...opts });
  for (let i = 0; i < N; i++) rt.create(Mote, { v: i, w: 0 });
  return rt;
}

const DEFERRED = /dead \|= 1 << slot/;

test('deferred self-deletion: the interpreted heap after every pass, and after creating afterwards', async (t) => {
  const a = await make(false);
  const b = await make(true);
  try {
    for (const k of [7, 2, 5, 1]) {
      for (const rt of [a, b]) rt.doAll(Mote, 'cull', k);
      t.is(heapDifference(b, a), null, `cull ${k}`);
      t.is(b.count(Mote), a.count(Mote));
      for (const rt of [a, b]) rt.validateHeap(); // both: it gives back the kept blocks of a one-thread runtime
      // New objects take the same slots: the allocator's state is the same.
      for (const rt of [a, b]) for (let i = 0; i < 300; i++) rt.create(Mote, { v: N + i * k, w: 0 });
      t.is(heapDifference(b, a), null, `creates after cull ${k}`);
    }
    t.regex(sourceOf(b, 'Mote.cull'), DEFERRED);
  } finally {
    await a.close();
    await b.close();
  }
});

test('deferred self-deletion with creations: the interpreted heap, the marked released before the core allocates', async (t) => {
  const a = await make(false);
  const b = await make(true);
  try {
    for (const [m, k] of [
      ['spawnOrDie', 4],
      ['replace', 5],
      ['dieThenSpark', 2],
      ['spawnOrDie', 2],
      ['dieThenSpark', 1],
    ] as const) {
      for (const rt of [a, b]) rt.doAll(Mote, m, k);
      t.is(heapDifference(b, a), null, `${m} ${k}`);
      t.is(b.count(Mote), a.count(Mote));
      t.is(b.count(Spark), a.count(Spark));
      for (const rt of [a, b]) rt.validateHeap(); // both: it gives back the kept blocks of a one-thread runtime
      for (const rt of [a, b]) for (let i = 0; i < 100; i++) rt.create(Mote, { v: 7 * i, w: 0 });
      t.is(heapDifference(b, a), null, `creates after ${m} ${k}`);
      const src = sourceOf(b, `Mote.${m}`);
      t.regex(src, DEFERRED, m);
      t.regex(src, /dead !== 0 && \(A\.releaseMany\(bid, dead\), dead = 0\), A\.allocate/, `${m}: released before the core allocates`);
    }
  } finally {
    await a.close();
    await b.close();
  }
});

test('deferred self-deletion: a second destroy and a throwing lane fail as interpreted, leaving the interpreted heap', async (t) => {
  for (const [method, arg] of [
    ['twice', undefined],
    ['boom', 50],
    ['boom', 63],
  ] as const) {
    await failsAlike(
      t,
      `${method} ${arg}`,
      (compile) => make(compile),
      (rt) => (arg === undefined ? rt.doAll(Mote, method) : rt.doAll(Mote, method, arg)),
      (rt) => t.regex(sourceOf(rt, `Mote.${method}`), DEFERRED, method),
    );
  }
});

test('deferred self-deletion only where no one can tell: not with other deletions, deviceDo or checks', async (t) => {
  const a = await make(false);
  const b = await make(true);
  const c = await make(true, { checked: true });
  try {
    // Each mote's w names another mote (a neighbour by handle) for cullOther.
    for (const rt of [a, b]) {
      const hs: number[] = [];
      rt.deviceDo(Mote, (m) => void hs.push(m.handle));
      hs.forEach((h, i) => (rt.get(Mote, h).w = hs[(i + 1) % hs.length]!));
    }
    for (const [m, k] of [
      ['cullOther', 10],
      ['census', 8],
    ] as const) {
      for (const rt of [a, b]) rt.doAll(Mote, m, k);
      t.is(heapDifference(b, a), null, m);
      const src = sourceOf(b, `Mote.${m}`);
      t.true(src !== '', `Mote.${m} compiled`);
      t.notRegex(src, DEFERRED, m);
    }
    c.doAll(Mote, 'cull', 4);
    const src = sourceOf(c, 'Mote.cull');
    t.true(src !== '', 'checked: compiled');
    t.notRegex(src, DEFERRED, 'checked mode');
  } finally {
    await a.close();
    await b.close();
    await c.close();
  }
});

test('deferred self-deletion on two threads: the same survivors, a valid heap', async (t) => {
  const survivors = async (compile: boolean): Promise<number[]> => {
    const rt = await make(compile, { threads: 2 });
    try {
      for (const k of [3, 2]) {
        await rt.parallelDo(Mote, 'cull', k);
        rt.validateHeap();
      }
      if (compile) t.regex(sourceOf(rt, 'Mote.cull'), DEFERRED);
      const vs: number[] = [];
      rt.deviceDo(Mote, (m) => void vs.push(m.v * 10 + m.w));
      return vs.sort((x, y) => x - y);
    } finally {
      await rt.close();
    }
  };
  const [x, y] = [await survivors(false), await survivors(true)];
  t.is(x.length, N - Math.ceil(N / 3) - Math.floor((N - Math.ceil(N / 3)) / 2));
  t.deepEqual(y, x);
});

test('release_many: an already free slot is an error after the others are released; a forged slot changes nothing', async (t) => {
  const rt = await createRuntime({ classes: [Mote], heap: '4MB', seed: 9 });
  try {
    const hs = Array.from({ length: 40 }, (_, i) => rt.create(Mote, { v: i, w: 0 }).handle);
    const bid = hs[0]! >>> 5;
    const inBlock = hs.filter((h) => h >>> 5 === bid);
    const slots = inBlock.map((h) => h & 31);
    t.true(slots.length >= 4, `block ${bid} holds ${slots.length} motes`);
    const alloc = (rt.context as unknown as ThreadContext).allocator;
    // Slot of the second mote freed first; then a mask of the first three.
    rt.destroy(rt.get(Mote, inBlock[1]!));
    const before = rt.count(Mote);
    const mask = (1 << slots[0]!) | (1 << slots[1]!) | (1 << slots[2]!);
    const e = t.throws(() => alloc.releaseMany(bid, mask));
    t.regex(String((e as Error).message), /delet/i, String(e));
    t.is(rt.count(Mote), before - 2, 'the two live ones released');
    rt.validateHeap();
    // A slot beyond the class's slots per block: refused, nothing changed.
    const per = (rt.context as unknown as ThreadContext).table.types.find((x) => x.cls === Mote)!.slots;
    if (per < 32) {
      const count = rt.count(Mote);
      t.throws(() => alloc.releaseMany(bid, (1 << slots[3]!) | (1 << per)));
      t.is(rt.count(Mote), count);
      rt.validateHeap();
    }
  } finally {
    await rt.close();
  }
});
