/**
 * Runtime.reorder (runtime/reorder.ts): after it the heap is valid, every object keeps its
 * fields and every reference names the same logical object (compared through an id field),
 * remap() maps every old handle to the object's new one, a do-all visits the objects in key
 * order (ties in their old order) packed into the lowest slots of the class's first blocks,
 * checked mode refuses views made before, bad fields and calls inside a do-all are typed
 * errors that move nothing, and the apps' results do not change when their agents are
 * reordered between steps. Random heaps are seeded; every message names the seed.
 */
import test from 'ava';
import { createRuntime, InvalidHandleError, UsageError, type Runtime, type SmmoObject } from '../index.js';
import { Agent, Cell, CLASSES, Fish, Holder, hooks, Keyed, REORDER_FIXTURES, Shark } from './reorder.fixtures.js';
import { rng } from './defrag.fixtures.js';
import { DefragScratch } from '../runtime/defrag-lanes.js';
import { failAllocation } from './helpers/fail-allocation.js';
import * as wator from '../apps/wa-tor/wator.js';
import { Agent as WatorAgent } from '../apps/wa-tor/model.js';
import * as epidemic from '../bench/models/epidemic.js';

const WATOR = new URL('../apps/wa-tor/index.js', import.meta.url);

type Any = SmmoObject & Record<string, unknown> & { id: number };

/** A heap of cells, fish and sharks on random cells (some shared, some none), holes from deletions, references across classes. */
function build(rt: Runtime, seed: number, cells = 300, agents = 900): void {
  const r = rng(seed);
  const cs: (SmmoObject & { id: number; agent: unknown })[] = [];
  for (let i = 0; i < cells; i++) cs.push(rt.create(Cell, { id: i }));
  const made: (SmmoObject & { id: number })[] = [];
  for (let i = 0; i < agents; i++) {
    const cell = r() < 0.1 ? null : cs[Math.floor(r() * cells)]!;
    const fields = { id: 1000 + i, rank: Math.floor(r() * 200) - 100, cell };
    const a = r() < 0.6 ? rt.create(Fish, { ...fields, w: r(), tags: [i & 255, (i >> 8) & 255, 7] }) : rt.create(Shark, fields);
    made.push(a);
    if (cell !== null && r() < 0.5) cell.agent = a as never;
  }
  const live = made.filter((a) => {
    if (r() >= 0.3) return true;
    for (const c of cs) if ((c.agent as Any | null)?.__h === a.__h) c.agent = null;
    a.destroy();
    return false;
  });
  for (const a of live) {
    (a as unknown as { friend: unknown }).friend = r() < 0.2 ? null : live[Math.floor(r() * live.length)]!;
    if (a instanceof Shark) for (let k = 0; k < 2; k++) a.prey.set(k, r() < 0.3 ? null : (live[Math.floor(r() * live.length)]! as never));
  }
  for (let i = 0; i < 40; i++) rt.create(Holder, { id: 5000 + i, any: live[Math.floor(r() * live.length)]! as never });
}

/** Every object by id: class, handle and fields, references as ids (-1: null). */
function snapshot(rt: Runtime): Map<number, { cls: string; h: number; values: string }> {
  const out = new Map<number, { cls: string; h: number; values: string }>();
  const id = (o: unknown): number => (o === null ? -1 : (o as Any).id);
  const put = (o: Any, cls: string, values: unknown[]): void => void out.set(o.id, { cls, h: o.__h, values: JSON.stringify(values) });
  rt.deviceDo(Cell, (c) => put(c as unknown as Any, 'Cell', [id(c.agent)]));
  rt.deviceDo(Fish, (f) =>
    put(f as unknown as Any, 'Fish', [f.rank, id(f.cell), id(f.friend), f.w, f.tags.get(0), f.tags.get(1), f.tags.get(2)]),
  );
  rt.deviceDo(Shark, (s) => put(s as unknown as Any, 'Shark', [s.rank, id(s.cell), id(s.friend), id(s.prey.get(0)), id(s.prey.get(1))]));
  rt.deviceDo(Holder, (o) => put(o as unknown as Any, 'Holder', [id(o.any)]));
  return out;
}

/** The handles of `cls`'s objects in do-all order and the key of each. */
function visit(
  rt: Runtime,
  cls: typeof Fish | typeof Shark | typeof Keyed,
  key: (o: Any) => number,
): { h: number[]; k: number[]; id: number[] } {
  const out = { h: [] as number[], k: [] as number[], id: [] as number[] };
  rt.deviceDo(cls, (o) => {
    out.h.push(o.__h);
    out.k.push(key(o as unknown as Any));
    out.id.push(o.id);
  });
  return out;
}

const cellKey = (o: Any): number => (o['cell'] === null ? Infinity : (o['cell'] as Any).__h);

/** The order `before` must take by key: stable by key. */
function stableByKey(before: { k: number[]; id: number[] }): number[] {
  return before.id
    .map((id, i) => ({ id, k: before.k[i]!, i }))
    .sort((a, b) => a.k - b.k || a.i - b.i)
    .map((x) => x.id);
}

/** The objects fill the lowest slots of ascending blocks, `slots` per block, the last one partly. */
function packed(
  t: { is: (a: unknown, b: unknown, m?: string) => void; true: (a: boolean, m?: string) => void },
  h: number[],
  slots: number,
  msg: string,
): void {
  for (let i = 0; i < h.length; i++) {
    t.is(h[i]! & 31, i % slots, `${msg}: object ${i} in slot ${h[i]! & 31}`);
    if (i > 0 && i % slots !== 0) t.is(h[i]! >>> 5, h[i - 1]! >>> 5, `${msg}: object ${i} in the block of the one before`);
    if (i > 0 && i % slots === 0) t.true(h[i]! >>> 5 > h[i - 1]! >>> 5, `${msg}: blocks ascending`);
  }
}

test('reorder by a reference: heap valid, fields and references kept, remap exact, visited in key order, packed', async (t) => {
  for (const seed of [1, 2, 3, 99]) {
    const rt = await createRuntime({ classes: CLASSES, heap: '8MB', seed });
    try {
      build(rt, seed);
      const before = snapshot(rt);
      const fishBefore = visit(rt, Fish, cellKey);
      const sharkBefore = visit(rt, Shark, cellKey);
      const res = rt.reorder(Agent, 'cell');
      rt.validateHeap();
      const after = snapshot(rt);
      t.is(after.size, before.size, `seed ${seed}`);
      let moved = 0;
      for (const [id, b] of before) {
        const a = after.get(id)!;
        t.is(a.values, b.values, `seed ${seed}: object ${id} keeps its fields and references`);
        t.is(res.remap(b.h), a.h, `seed ${seed}: remap of object ${id}`);
        if (a.h !== b.h) moved++;
      }
      t.is(res.moved, moved, `seed ${seed}: moved`);
      t.true(moved > 100, `seed ${seed}: ${moved} moved`);
      t.is(res.remap(0), 0);
      for (const [cls, b] of [
        [Fish, fishBefore],
        [Shark, sharkBefore],
      ] as const) {
        const now = visit(rt, cls, cellKey);
        t.deepEqual(now.id, stableByKey(b), `seed ${seed}: ${cls.name} visited by cell, ties in their old order`);
        const per = res.stats.classes[cls.name]!;
        t.is(per.objects, b.id.length, `seed ${seed}`);
        const slots = slotsOf(now.h, b.id.length);
        t.is(per.blocksAfter, Math.ceil(b.id.length / slots), `seed ${seed}`);
        packed(t, now.h, slots, `seed ${seed} ${cls.name}`);
      }
      // Reordering an ordered class moves nothing.
      t.is(rt.reorder(Agent, 'cell').moved, 0, `seed ${seed}: a second reorder moves nothing`);
      rt.validateHeap();
    } finally {
      await rt.close();
    }
  }
});

/** Slots per block of a packed class: the slot of the object after the first full block (or all of them). */
function slotsOf(h: number[], n: number): number {
  for (let i = 1; i < n; i++) if (h[i]! >>> 5 !== h[0]! >>> 5) return i;
  return Math.max(n, 1);
}

test('reorder by a signed integer field; blocks left empty are freed', async (t) => {
  const seed = 7;
  const rt = await createRuntime({ classes: CLASSES, heap: '8MB', seed });
  try {
    build(rt, seed, 100, 3000);
    const blocksBefore = rt.stats().heap.usedBlocks;
    const before = visit(rt, Fish, (o) => o['rank'] as number);
    t.true(before.k.some((k) => k < 0) && before.k.some((k) => k > 0), 'negative and positive ranks');
    const res = rt.reorder(Fish, 'rank');
    rt.validateHeap();
    const now = visit(rt, Fish, (o) => o['rank'] as number);
    t.deepEqual(now.id, stableByKey(before), `seed ${seed}: ascending rank (signed), ties in their old order`);
    const c = res.stats.classes['Fish']!;
    t.true(c.blocksAfter < c.blocksBefore, `${c.blocksBefore} → ${c.blocksAfter} blocks`);
    t.is(res.stats.blocksFreed, c.blocksBefore - c.blocksAfter);
    t.is(rt.stats().heap.usedBlocks, blocksBefore - res.stats.blocksFreed);
    t.deepEqual(Object.keys(res.stats.classes), ['Fish']);
  } finally {
    await rt.close();
  }
});

test('reorder by every kind of integer key: ascending values (signed as signed, u32 above 2^31, false before true), ties in their old order', async (t) => {
  const seed = 11;
  const rt = await createRuntime({ classes: CLASSES, heap: '8MB', seed });
  try {
    const r = rng(seed);
    // Ranges with the extremes of every kind, and few distinct values so that ties are common.
    const pick = (values: readonly number[]): number => values[Math.floor(r() * values.length)]!;
    const made: SmmoObject[] = [];
    for (let i = 0; i < 700; i++) {
      made.push(
        rt.create(Keyed, {
          id: i,
          a: pick([-128, -1, 0, 1, 127]),
          b: pick([0, 1, 128, 255]),
          c: pick([-32768, -300, 0, 300, 32767]),
          d: pick([0, 1, 32768, 65535]),
          e: pick([-(2 ** 31), -1, 0, 1, 2 ** 31 - 1]),
          f: pick([0, 1, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1]),
          g: r() < 0.5,
        }),
      );
    }
    for (const o of made) if (r() < 0.3) o.destroy(); // holes, so that objects move
    for (const field of ['a', 'b', 'c', 'd', 'e', 'f', 'g'] as const) {
      const before = visit(rt, Keyed, (o) => Number(o[field]));
      rt.reorder(Keyed, field);
      rt.validateHeap();
      const now = visit(rt, Keyed, (o) => Number(o[field]));
      t.deepEqual(now.id, stableByKey(before), `seed ${seed}: by ${field}`);
      t.true(
        now.k.some((k, i) => i > 0 && k !== now.k[i - 1]),
        `seed ${seed}: ${field} has several values`,
      );
    }
  } finally {
    await rt.close();
  }
});

test('a reorder that runs out of memory before anything moves (O6) throws with the heap and every handle as before', async (t) => {
  const seed = 21;
  const rt = await createRuntime({ classes: CLASSES, heap: '8MB', seed });
  try {
    build(rt, seed);
    const before = snapshot(rt);
    // The last allocation of the call (the result's table), after every type is planned.
    const table = failAllocation(DefragScratch.prototype, 'reserveForwardTable', () => true);
    try {
      t.throws(() => rt.reorder(Agent, 'cell'), { instanceOf: RangeError }, 'the table');
    } finally {
      table.restore();
    }
    // An allocation while planning the second class (Shark), after the first (Fish) is planned.
    const second = failAllocation(DefragScratch.prototype, 'beginPass', (call) => call === 2);
    try {
      t.throws(() => rt.reorder(Agent, 'cell'), { instanceOf: RangeError }, 'the second class');
    } finally {
      second.restore();
    }
    t.is(second.calls(), 2);
    rt.validateHeap();
    t.deepEqual(snapshot(rt), before, `seed ${seed}: every object where it was, with its fields`);
    const res = rt.reorder(Agent, 'cell'); // and the next call works
    rt.validateHeap();
    t.true(res.moved > 100, `seed ${seed}: ${res.moved} moved afterwards`);
  } finally {
    await rt.close();
  }
});

test('checked mode: a view made before reorder of an object that moved is refused; the remapped handle works', async (t) => {
  const rt = await createRuntime({ classes: CLASSES, heap: '8MB', checked: true, seed: 5 });
  try {
    build(rt, 5);
    const views: (SmmoObject & { id: number; w: number })[] = [];
    rt.deviceDo(Fish, (f) => views.push(rt.get(Fish, f.__h)));
    const ids = views.map((v) => v.id);
    const res = rt.reorder(Fish, 'cell');
    let refused = 0;
    views.forEach((v, i) => {
      const nh = res.remap(v.__h);
      if (nh === v.__h) {
        t.is(v.id, ids[i]!);
        return;
      }
      // Moved: its old slot is free, in a freed block, or holds another object now; each is refused.
      const e = t.throws(() => v.w, { instanceOf: InvalidHandleError });
      t.true(['stale', 'deleted', 'free-block'].includes((e as InvalidHandleError).reason), (e as InvalidHandleError).reason);
      t.is(rt.get(Fish, nh).id, ids[i]!);
      refused++;
    });
    t.true(refused > 100, `${refused} views refused`);
    rt.validateHeap();
  } finally {
    await rt.close();
  }
});

test('reorder refuses bad fields, a missing class and a call inside a do-all (typed errors); nothing moves', async (t) => {
  const rt = await createRuntime({ classes: CLASSES, heap: '8MB' });
  hooks.current = rt;
  try {
    build(rt, 11);
    const before = snapshot(rt);
    const cases: [() => unknown, RegExp][] = [
      [() => rt.reorder(Fish, 'nope'), /Fish has no field "nope"; order by a reference or integer field of Fish: id, rank, cell, friend/],
      [() => rt.reorder(Fish, 'w'), /Fish\.w is a f64, not a reference or an integer/],
      [() => rt.reorder(Fish, 'tags'), /Fish\.tags is an inline array/],
      [() => rt.reorder([Fish, Holder], 'cell'), /Holder has no field "cell"/],
      [() => rt.reorder(undefined as never, 'cell'), /give the class/],
    ];
    for (const [call, re] of cases) {
      const e = t.throws(call, { instanceOf: UsageError });
      t.regex(e!.message, re);
    }
    const e = t.throws(() => rt.doAll(Fish, 'early'));
    t.regex(String(e?.message) + String((e?.cause as Error | undefined)?.message), /reorder cannot be called inside a do-all/);
    const after = snapshot(rt);
    for (const [id, b] of before) t.deepEqual(after.get(id), b, `object ${id} unchanged by the refused calls`);
    rt.validateHeap();
  } finally {
    hooks.current = null;
    await rt.close();
  }
});

test('reorder on a runtime of three threads, then parallel do-alls and creation work on the reordered heap', async (t) => {
  const rt = await createRuntime({ classes: CLASSES, heap: '8MB', threads: 3, seed: 4, modules: [REORDER_FIXTURES] });
  try {
    build(rt, 4, 200, 2000);
    const before = snapshot(rt);
    rt.reorder(Agent, 'cell');
    rt.validateHeap();
    const after = snapshot(rt);
    for (const [id, b] of before) t.is(after.get(id)!.values, b.values, `object ${id}`);
    await rt.parallelNew(Fish, 500, (f, i) => {
      f.id = 90000 + i;
    });
    rt.validateHeap();
    t.is(rt.count(Fish), [...after.values()].filter((x) => x.cls === 'Fish').length + 500);
  } finally {
    await rt.close();
  }
});

test('wa-tor and the epidemic model give the same digests with their agents reordered between steps', async (t) => {
  for (const threads of [1, 2]) {
    const opts = { classes: wator.CLASSES, heap: '32MB', threads, modules: [WATOR] };
    const plain = await createRuntime(opts);
    const sorted = await createRuntime(opts);
    try {
      await wator.init(plain, 48, 40, 42);
      await wator.init(sorted, 48, 40, 42);
      let moved = 0;
      for (let i = 1; i <= 12; i++) {
        await wator.step(plain);
        await wator.step(sorted);
        if (i % 3 === 0) moved += sorted.reorder(WatorAgent, 'position').moved;
        t.is(wator.digest(sorted), wator.digest(plain), `wa-tor, ${threads} threads, step ${i}`);
      }
      t.true(moved > 0, `${moved} agents moved`);
      sorted.validateHeap();
    } finally {
      await plain.close();
      await sorted.close();
    }
  }
  const plain = await createRuntime({ classes: epidemic.CLASSES, heap: '32MB' });
  const sorted = await createRuntime({ classes: epidemic.CLASSES, heap: '32MB' });
  try {
    const wp = await epidemic.init(plain, 40, 30);
    const ws = await epidemic.init(sorted, 40, 30);
    let moved = 0;
    for (let i = 1; i <= 10; i++) {
      await epidemic.step(plain, wp);
      await epidemic.step(sorted, ws);
      if (i % 2 === 0) moved += sorted.reorder(epidemic.Person, 'cell').moved;
      t.is(epidemic.digest(sorted, ws), epidemic.digest(plain, wp), `epidemic, step ${i}`);
    }
    t.true(moved > 0, `${moved} persons moved`);
    sorted.validateHeap();
  } finally {
    await plain.close();
    await sorted.close();
  }
});

test('reorder of a class without objects, and of a class whose objects were all deleted, moves nothing', async (t) => {
  const rt = await createRuntime({ classes: CLASSES, heap: '8MB' });
  try {
    const none = rt.reorder(Shark, 'cell');
    t.deepEqual(none.stats.classes['Shark'], { objects: 0, objectsMoved: 0, blocksBefore: 0, blocksAfter: 0 });
    const made = Array.from({ length: 100 }, (_, i) => rt.create(Shark, { id: i }));
    for (const s of made) s.destroy();
    const gone = rt.reorder(Agent, 'rank');
    t.is(gone.moved, 0);
    t.is(gone.stats.blocksFreed, 0);
    t.is(gone.stats.classes['Shark']!.objects, 0);
    rt.validateHeap();
  } finally {
    await rt.close();
  }
});
