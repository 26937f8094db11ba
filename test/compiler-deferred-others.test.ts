/**
 * Deferred deletion of other objects (runtime/compiler/emit-js.ts deferOthers, G1–G4): a
 * compiled method that deletes other objects gathers its lanes' deletions while they fall
 * in one block and makes them with one release (core.rs release_many) when the run ends,
 * when the block's lanes end, before the core allocates and before an error leaves the
 * runner. Checked here:
 *  - on one thread the heap is the interpreted one byte for byte after every pass: lanes
 *    that create objects and delete them again (runs within a block, across blocks,
 *    emptying and refilling blocks), that delete only some, that delete another object
 *    and then themselves, that delete and then create; new objects after the pass take
 *    the same slots;
 *  - unchecked, an object of a later block deleted by a lane is not visited by the pass;
 *  - a second deletion of the same object, and a lane that throws after a deletion, fail
 *    with the interpreted error and leave the interpreted heap;
 *  - the deferral is used exactly where it may be: not with deviceDo, not in checked mode;
 *  - seeded random creates and deletes: the interpreted heap after every pass on one thread;
 *    on three threads a valid heap after every pass and the one-thread survivors (the seed
 *    is in every message);
 *  - on two threads the survivors are the interpreted ones and validateHeap passes;
 *  - Allocator.releaseDeferred (G4): a mask with a slot the class does not have makes the
 *    valid deletions and reports the bad handle, where release_many refuses the mask.
 */
import test from 'ava';
import { createRuntime, InvalidHandleError, type Runtime } from '../index.js';
import type { ThreadContext } from '../runtime/thread.js';
import { Bud, DEFERRED_OTHERS_FIXTURES, Leaf, Twig } from './deferred-others.fixtures.js';
import { compiledSource as sourceOf } from './helpers/compiled.js';
import { failsAlike, heapDifference } from './helpers/heap-bytes.js';

const N = 300;

/** N twigs with v = 0 … N − 1, every even one naming a Bud of its own. */
async function make(compile: boolean, opts: { checked?: boolean; threads?: number } = {}): Promise<Runtime> {
  const rt = await createRuntime({
    classes: [Leaf, Bud, Twig],
    heap: '4MB',
    compile,
    seed: 9,
    modules: [DEFERRED_OTHERS_FIXTURES],
    ...opts,
  });
  for (let i = 0; i < N; i++) rt.create(Twig, { v: i, w: i % 2 === 0 ? rt.create(Bud, { y: i }).handle : 0 });
  return rt;
}

/** Runs one of the pass methods with its arguments. */
function pass(rt: Runtime, m: 'churn' | 'thin', args: readonly number[]): void {
  if (m === 'churn') rt.doAll(Twig, m, args[0]!, args[1]!);
  else rt.doAll(Twig, m, args[0]!);
}

/** The deferral's mark in the generated code (G1). */
const DEFERRED = /omask \|= /;

test('deferred deletion: lanes that create and delete leave the interpreted heap after every pass', async (t) => {
  const a = await make(false);
  const b = await make(true);
  try {
    for (const [m, args] of [
      ['churn', [1, 3]],
      ['churn', [5, 2]],
      ['thin', [7]],
      ['churn', [40, 1]],
      ['thin', [40]],
      ['churn', [33, 2]],
    ] as const) {
      for (const rt of [a, b]) pass(rt, m, args);
      const what = `${m}(${args.join(', ')})`;
      t.is(heapDifference(b, a), null, what);
      t.is(b.count(Leaf), a.count(Leaf), what);
      t.regex(sourceOf(b, `Twig.${m}`), DEFERRED, what);
      for (const rt of [a, b]) rt.validateHeap(); // both: it gives back the kept blocks of a one-thread runtime
      for (const rt of [a, b]) for (let i = 0; i < 50; i++) rt.create(Leaf, { x: -i });
      t.is(heapDifference(b, a), null, `creates after ${what}`);
    }
    // Each lane's thin(n) keeps the odd i with i % 4 === 3: one of 7, ten of 40; 50 Leaves made after each of the six passes.
    t.is(a.count(Leaf), N * (1 + 10) + 6 * 50);
  } finally {
    await a.close();
    await b.close();
  }
});

test('deferred deletion: deleting another object, itself after it, or creating after it: the interpreted heap', async (t) => {
  for (const k of [2, 3]) {
    const a = await make(false);
    const b = await make(true);
    try {
      for (const rt of [a, b]) rt.doAll(Twig, 'killPartner', k);
      t.is(heapDifference(b, a), null, `killPartner ${k}`);
      // Killers: even v, multiple of k. Each deletes its Bud, and itself at multiples of 2k; every other lane makes a Leaf.
      let killers = 0;
      let selves = 0;
      for (let v = 0; v < N; v += 2) {
        if (v % k === 0) {
          killers++;
          if (v % (2 * k) === 0) selves++;
        }
      }
      t.is(b.count(Leaf), N - killers, `killPartner ${k}: leaves`);
      t.is(b.count(Bud), N / 2 - killers, `killPartner ${k}: buds`);
      t.is(b.count(Twig), N - selves, `killPartner ${k}: twigs`);
      t.regex(sourceOf(b, 'Twig.killPartner'), DEFERRED);
      for (const rt of [a, b]) rt.validateHeap();
    } finally {
      await a.close();
      await b.close();
    }
  }
  const a = await make(false);
  const b = await make(true);
  try {
    for (const k of [3, 1]) {
      for (const rt of [a, b]) rt.doAll(Twig, 'killThenSpawn', k);
      t.is(heapDifference(b, a), null, `killThenSpawn ${k}`);
      t.is(b.count(Twig), a.count(Twig));
      const src = sourceOf(b, 'Twig.killThenSpawn');
      t.regex(src, DEFERRED);
      t.regex(src, /omask !== 0 && \(A\.releaseDeferred\(obid, omask\), omask = 0\), A\.allocate/, 'released before the core allocates');
      for (const rt of [a, b]) rt.validateHeap();
    }
  } finally {
    await a.close();
    await b.close();
  }
});

test('deferred deletion, seeded random creates and deletes: the interpreted heap after every pass (one thread)', async (t) => {
  for (const seed of [1, 2, 3, 4, 5, 6]) {
    const a = await make(false);
    const b = await make(true);
    try {
      for (const n of [3, 20, 40, 7]) {
        for (const rt of [a, b]) rt.doAll(Twig, 'mix', seed, n);
        const d = heapDifference(b, a);
        if (d !== null) t.log(`seed ${seed}, n ${n}: ${d}`);
        t.is(d, null, `seed ${seed}, n ${n}`);
        t.is(b.count(Leaf), a.count(Leaf), `seed ${seed}, n ${n}`);
      }
      t.regex(sourceOf(b, 'Twig.mix'), DEFERRED);
      for (const rt of [a, b]) rt.validateHeap();
    } finally {
      await a.close();
      await b.close();
    }
  }
});

test('deferred deletion, seeded random creates and deletes on three threads: a valid heap after every pass, the one-thread survivors', async (t) => {
  const leaves = (rt: Runtime): number[] => {
    const xs: number[] = [];
    rt.deviceDo(Leaf, (x) => void xs.push(x.x));
    return xs.sort((x, y) => x - y);
  };
  for (const seed of [11, 12, 13]) {
    const one = await make(false);
    const three = await make(true, { threads: 3 });
    try {
      for (const n of [20, 3, 40]) {
        one.doAll(Twig, 'mix', seed, n);
        await three.parallelDo(Twig, 'mix', seed, n);
        try {
          three.validateHeap();
        } catch (e) {
          t.log(`seed ${seed}, n ${n}: ${String(e)}`);
          throw e;
        }
        t.deepEqual(leaves(three), leaves(one), `seed ${seed}, n ${n}`);
        t.is(three.count(Bud), one.count(Bud), `seed ${seed}, n ${n}`);
      }
      t.regex(sourceOf(three, 'Twig.mix'), DEFERRED);
    } finally {
      await one.close();
      await three.close();
    }
  }
});

test('deferred deletion (unchecked): a Twig of a later block deleted by a lane is not visited', async (t) => {
  const a = await make(false);
  const b = await make(true);
  try {
    // Twig i names twig i + 21 where i is a multiple of 4: a Twig two or more blocks later, never a killer itself.
    let killers = 0;
    for (const rt of [a, b]) {
      const hs: number[] = [];
      rt.deviceDo(Twig, (x) => void hs.push(x.handle));
      const per = (rt.context as unknown as ThreadContext).table.types.find((x) => x.cls === Twig)!.slots;
      killers = 0;
      for (let i = 0; i + 21 < N; i += 4) {
        t.true(hs[i + 21]! >>> 5 > hs[i]! >>> 5 && per < 21, 'a later block');
        rt.get(Twig, hs[i]!).next = hs[i + 21]!;
        killers++;
      }
    }
    for (const rt of [a, b]) rt.doAll(Twig, 'killNext', 4);
    t.is(heapDifference(b, a), null);
    t.is(b.count(Twig), N - killers);
    t.is(b.count(Leaf), N - 2 * killers, 'the deleted Twigs made no Leaf');
    t.regex(sourceOf(b, 'Twig.killNext'), DEFERRED);
  } finally {
    await a.close();
    await b.close();
  }
});

test('deferred deletion: a second deletion and a throwing lane fail as interpreted, leaving the interpreted heap', async (t) => {
  for (const [method, arg] of [
    ['killTwice', 10],
    ['killBoom', 48],
    ['killBoom', 50],
  ] as const) {
    await failsAlike(
      t,
      `${method} ${arg}`,
      (compile) => make(compile),
      (rt) => rt.doAll(Twig, method, arg),
      (rt) => t.regex(sourceOf(rt, `Twig.${method}`), DEFERRED, method),
    );
  }
});

test('deferred deletion only where no one can tell: not with deviceDo, not in checked mode', async (t) => {
  const a = await make(false);
  const b = await make(true);
  const c = await make(true, { checked: true });
  try {
    for (const rt of [a, b]) rt.doAll(Twig, 'killCensus', 4);
    t.is(heapDifference(b, a), null, 'killCensus');
    const src = sourceOf(b, 'Twig.killCensus');
    t.true(src !== '', 'killCensus compiled');
    t.notRegex(src, DEFERRED, 'deviceDo');
    c.doAll(Twig, 'killPartner', 2);
    const checked = sourceOf(c, 'Twig.killPartner');
    t.true(checked !== '', 'checked: compiled');
    t.notRegex(checked, DEFERRED, 'checked mode');
  } finally {
    await a.close();
    await b.close();
    await c.close();
  }
});

test('deferred deletion on two threads: the interpreted survivors, a valid heap', async (t) => {
  const survivors = async (compile: boolean): Promise<number[]> => {
    const rt = await make(compile, { threads: 2 });
    try {
      await rt.parallelDo(Twig, 'churn', 33, 2);
      rt.validateHeap();
      await rt.parallelDo(Twig, 'killPartner', 3);
      rt.validateHeap();
      await rt.parallelDo(Twig, 'thin', 9);
      rt.validateHeap();
      if (compile) t.regex(sourceOf(rt, 'Twig.killPartner'), DEFERRED);
      const vs: number[] = [];
      rt.deviceDo(Twig, (x) => void vs.push(x.v));
      rt.deviceDo(Leaf, (x) => void vs.push(-1 - x.x));
      rt.deviceDo(Bud, (x) => void vs.push(1e6 + x.y));
      return vs.sort((x, y) => x - y);
    } finally {
      await rt.close();
    }
  };
  const [x, y] = [await survivors(false), await survivors(true)];
  t.true(x.length > N, `${x.length} objects`);
  t.deepEqual(y, x);
});

test('releaseDeferred: a slot the class does not have — the valid deletions made, the bad handle reported', async (t) => {
  const rt = await createRuntime({ classes: [Leaf, Bud, Twig], heap: '4MB', seed: 9 });
  try {
    const hs = Array.from({ length: 40 }, (_, i) => rt.create(Twig, { v: i, w: 0 }).handle);
    const bid = hs[0]! >>> 5;
    const slots = hs.filter((h) => h >>> 5 === bid).map((h) => h & 31);
    const ctx = rt.context as unknown as ThreadContext;
    const per = ctx.table.types.find((x) => x.cls === Twig)!.slots;
    t.true(per < 32, `Twig has ${per} slots per block`); // Leaf (4 bytes) sets the block size
    const mask = (1 << slots[0]!) | (1 << slots[1]!) | (1 << per);
    const count = rt.count(Twig);
    t.throws(() => ctx.allocator.releaseMany(bid, mask), { instanceOf: InvalidHandleError });
    t.is(rt.count(Twig), count, 'release_many: nothing released');
    const e = t.throws(() => ctx.allocator.releaseDeferred(bid, mask), { instanceOf: InvalidHandleError });
    t.is(e!.handle, bid * 32 + per, String(e));
    t.is(e!.reason, 'forged');
    t.is(rt.count(Twig), count - 2, 'releaseDeferred: the two live ones released');
    rt.validateHeap();
  } finally {
    await rt.close();
  }
});
