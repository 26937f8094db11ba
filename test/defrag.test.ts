/**
 * Runtime.defrag (runtime/defrag.ts, CompactGpu): after it the heap is valid, every object
 * keeps its fields and every reference names the same logical object (compared through a
 * per-object id field), remap() maps every old live handle to the object's new handle, the
 * blocks left are more than n/(n+1) full (but at most n that cannot be merged), checked mode
 * refuses views made before, and defrag is refused inside a do-all and for a bad n.
 * A property-based test (fast-check) runs the same checks over random heaps with references
 * across classes and subclasses; its seed is printed (FC_SEED=… reruns one).
 */
import test from 'ava';
import fc from 'fast-check';
import {
  array,
  createRuntime,
  DefragStoppedError,
  f32,
  f64,
  i32,
  InvalidHandleError,
  object,
  ref,
  u8,
  UsageError,
  type Runtime,
  type SmmoClass,
  type SmmoObject,
} from '../index.js';
import { BLOCK_ALLOC_WORD } from '../runtime/layout.js';
import { popc } from '../runtime/bits.js';
import { DefragScratch, ForwardReservation } from '../runtime/defrag-lanes.js';
import { failAllocation } from './helpers/fail-allocation.js';
// Shared with test/defrag-parallel.test.ts; the classes here stay this file's own (Shark.boom), and so does
// build: the fixtures' version also leaves dangling references, which snapshot() below would refuse.
import { rng, type AgentLike, type FishLike, type Shape, type SharkLike } from './defrag.fixtures.js';
import { shapeArbitrary } from './helpers/defrag-shapes.js';

abstract class Agent extends object({ id: i32, friend: ref<AgentLike>('Agent') }, { abstract: true }) {}
class Fish extends Agent.extend({ food: ref<SharkLike>('Shark'), w: f64, tag: u8 }) {}
class Shark extends Agent.extend({ prey: array(ref<FishLike>('Fish'), 3), energy: f32, big: array(f64, 4) }) {
  boom(): void {
    current!.defrag(Fish, 2);
  }
}
class Holder extends object({ id: i32, any: ref(() => Agent), fish: ref(() => Fish) }) {}
const CLASSES = [Agent, Fish, Shark, Holder];

let current: Runtime | null = null;

type Any = SmmoObject & Record<string, unknown>;

/** Every live object by id: its class, handle and field values, references as ids (-1: null). */
function snapshot(rt: Runtime): Map<number, { cls: string; h: number; values: string }> {
  const out = new Map<number, { cls: string; h: number; values: string }>();
  // Through rt.get (always checked): a reference into a vacated slot is an error, not the
  // stale bytes a retired block still holds.
  const idOf = (o: unknown, cls: SmmoClass = Agent): number =>
    o === null ? -1 : ((rt.get(cls, (o as Any).__h) as unknown as Any)['id'] as number);
  const visit = (o: Any, cls: string, values: unknown[]): void => {
    out.set(o['id'] as number, { cls, h: o.__h, values: JSON.stringify(values) });
  };
  rt.deviceDo(Fish, (o) => visit(o as unknown as Any, 'Fish', [idOf(o.friend), idOf(o.food, Shark), o.w, o.tag]));
  rt.deviceDo(Shark, (o) =>
    visit(o as unknown as Any, 'Shark', [
      idOf(o.friend),
      [0, 1, 2].map((i) => idOf(o.prey.get(i), Fish)),
      o.energy,
      [0, 1, 2, 3].map((i) => o.big.get(i)),
    ]),
  );
  rt.deviceDo(Holder, (o) => visit(o as unknown as Any, 'Holder', [idOf(o.any), idOf(o.fish, Fish)]));
  return out;
}

/** A fragmented heap: objects of every class, references among the survivors, the rest deleted. */
function build(rt: Runtime, s: Shape): void {
  const r = rng(s.seed);
  let id = 0;
  const fish = Array.from({ length: s.fish }, () => rt.create(Fish, { id: id++, w: r() * 100, tag: Math.floor(r() * 256) }));
  const sharks = Array.from({ length: s.sharks }, () => rt.create(Shark, { id: id++, energy: Math.fround(r() * 10) }));
  const holders = Array.from({ length: s.holders }, () => rt.create(Holder, { id: id++ }));
  const keep = (): boolean => r() >= s.kill;
  const liveFish = fish.filter(keep);
  const liveSharks = sharks.filter(keep);
  const liveHolders = holders.filter(keep);
  const agents: AgentLike[] = [...liveFish, ...liveSharks];
  const pick = <T>(xs: readonly T[]): T | null => (xs.length > 0 && r() < s.density ? xs[Math.floor(r() * xs.length)]! : null);
  for (const f of liveFish) {
    f.friend = pick(agents);
    f.food = pick(liveSharks);
  }
  for (const k of liveSharks) {
    k.friend = pick(agents);
    for (let i = 0; i < 3; i++) k.prey.set(i, pick(liveFish));
    for (let i = 0; i < 4; i++) k.big.set(i, r());
  }
  for (const h of liveHolders) {
    h.any = pick(agents);
    h.fish = pick(liveFish);
  }
  const dead = new Set<SmmoObject>([...fish, ...sharks, ...holders]);
  for (const o of [...liveFish, ...liveSharks, ...liveHolders]) dead.delete(o);
  for (const o of dead) rt.destroy(o);
}

/** Blocks of `cls` at most n/(n+1) full, and every block's live count. */
function blocksOf(rt: Runtime, cls: SmmoClass, n: number): { candidates: number[]; frees: number[]; slots: number } {
  const t = rt.table.byClass(cls)!;
  const list = new Uint32Array(rt.heap.numBlocks);
  const nb = rt.heap.allocated[t.id]!.indices(list);
  const candidates: number[] = [];
  const frees: number[] = [];
  for (let i = 0; i < nb; i++) {
    const live = popc(rt.heap.i32[rt.heap.blockWord(list[i]!) + BLOCK_ALLOC_WORD]! & ~t.highMask);
    if (live * (n + 1) <= n * t.slots) {
      candidates.push(live);
      frees.push(t.slots - live);
    }
  }
  return { candidates, frees, slots: t.slots };
}

/** Everything a defrag must guarantee, for the heap of `rt` as built. Returns the stats' moved count. */
function checkDefrag(rt: Runtime, n: number, check: (ok: boolean, what: string) => void): number {
  rt.validateHeap();
  const before = snapshot(rt);
  const res = rt.defrag(undefined, n);
  rt.validateHeap();
  const after = snapshot(rt);
  check(after.size === before.size, `objects ${before.size} → ${after.size}`);
  let moved = 0;
  for (const [id, b] of before) {
    const a = after.get(id);
    check(a !== undefined && a.cls === b.cls && a.values === b.values, `object ${id} (${b.cls}) changed: ${b.values} → ${a?.values}`);
    if (a === undefined) continue;
    check(res.remap(b.h) === a.h, `remap(${b.h}) = ${res.remap(b.h)}, object ${id} is at ${a.h}`);
    if (a.h !== b.h) moved++;
  }
  check(res.remap(0) === 0, 'remap(0) is 0');
  check(moved === res.stats.objectsMoved && moved === res.moved, `moved ${moved}, stats say ${res.stats.objectsMoved}`);
  for (const cls of [Fish, Shark, Holder]) {
    const { candidates, frees } = blocksOf(rt, cls, n);
    check(candidates.length <= n, `${cls.name}: ${candidates.length} blocks at most ${n}/${n + 1} full remain (at most ${n})`);
    if (candidates.length >= 2) {
      const least = Math.min(...candidates);
      const room = frees.reduce((x, y) => x + y, 0) - frees[candidates.indexOf(least)]!;
      check(least > room, `${cls.name}: the emptiest candidate (${least} objects) fits into the others (${room} free slots)`);
    }
    check(res.stats.classes[cls.name]!.candidatesLeft === candidates.length, `${cls.name}: candidatesLeft`);
  }
  return moved;
}

const SHAPE: Shape = { seed: 7, fish: 3000, sharks: 700, holders: 500, kill: 0.6, density: 0.8 };

test('defrag: heap valid, fields and references kept (by id), remap exact, blocks more than n/(n+1) full', async (t) => {
  for (const n of [1, 3]) {
    const rt = await createRuntime({ classes: CLASSES, heap: '16MB' });
    try {
      build(rt, SHAPE);
      const fragBefore = rt.stats().types;
      const moved = checkDefrag(rt, n, (ok, what) => t.true(ok, what));
      t.true(moved > 300, `n=${n}: ${moved} objects moved`);
      const res2 = rt.defrag(undefined, n);
      t.is(res2.stats.objectsMoved, 0, 'a second defrag with the same n finds nothing to do');
      const after = rt.stats().types;
      for (const name of ['Fish', 'Shark', 'Holder']) {
        const a = after[name]!;
        const frag = 1 - a.objects / (a.blocks * a.slotsPerBlock);
        t.log(`n=${n} ${name}: blocks ${fragBefore[name]!.blocks} → ${a.blocks}, fragmentation ${frag.toFixed(3)}`);
        // At most n blocks (the residual candidates) may be emptier than n/(n+1).
        t.true(a.objects >= (a.blocks - n) * Math.floor((n * a.slotsPerBlock) / (n + 1) + 1), `${name}: fragmentation bound`);
      }
    } finally {
      await rt.close();
    }
  }
});

for (const where of ['the scratch', "the result's table"] as const) {
  test(`a pass that cannot be planned (out of memory in ${where}, F5): DefragStoppedError, the passes done kept and rewritten, the remap in the error`, async (t) => {
    const rt = await createRuntime({ classes: CLASSES, heap: '16MB' });
    try {
      build(rt, SHAPE);
      const before = snapshot(rt);
      const second = (call: number): boolean => call === 2; // the second pass
      const oom =
        where === 'the scratch'
          ? failAllocation(DefragScratch.prototype, 'beginPass', second)
          : failAllocation(ForwardReservation.prototype, 'cover', second);
      let e: DefragStoppedError;
      try {
        e = t.throws(() => rt.defrag(undefined, 1), { instanceOf: DefragStoppedError });
      } finally {
        oom.restore();
      }
      t.true(e.cause instanceof RangeError, 'the cause is the failed allocation');
      t.regex(e.message, /stopped after 1 pass: RangeError: Array buffer allocation failed.*remap/);
      t.is(e.result.stats.passes, 1);
      t.true(e.result.stats.objectsMoved > 0, `${e.result.stats.objectsMoved} moved in the pass done`);
      rt.validateHeap();
      const after = snapshot(rt); // through rt.get: a reference left at a vacated slot would throw here
      t.is(after.size, before.size);
      let moved = 0;
      for (const [id, b] of before) {
        const a = after.get(id)!;
        t.is(a.values, b.values, `object ${id} keeps its fields and references`);
        t.is(e.result.remap(b.h), a.h, `remap of object ${id}`);
        if (a.h !== b.h) moved++;
      }
      t.is(moved, e.result.stats.objectsMoved);
      const fish = e.result.stats.classes['Fish']!; // the class whose second pass failed
      t.is(fish.passes, 1);
      t.is(fish.blocksAfter, rt.stats().types['Fish']!.blocks, 'its figures after the pass done');
      t.is(fish.blocksAfter, fish.blocksBefore - fish.blocksFreed);
      t.deepEqual(Object.keys(e.result.stats.classes), ['Fish'], 'the classes after it are left as they are');
      // The next call finishes the work.
      const moved2 = checkDefrag(rt, 1, (ok, what) => t.true(ok, what));
      t.true(moved2 > 0, `${moved2} moved by the next call`);
    } finally {
      await rt.close();
    }
  });
}

test('defrag of one class, and of an abstract class (its concrete subclasses)', async (t) => {
  const rt = await createRuntime({ classes: CLASSES, heap: '16MB' });
  try {
    build(rt, SHAPE);
    const before = snapshot(rt);
    const r1 = rt.defrag(Shark, 2);
    t.deepEqual(Object.keys(r1.stats.classes), ['Shark']);
    t.true(r1.stats.objectsMoved > 0);
    const r2 = rt.defrag(Agent, 2);
    t.deepEqual(Object.keys(r2.stats.classes).sort(), ['Fish', 'Shark']);
    t.true(r2.stats.classes['Fish']!.objectsMoved > 0);
    t.is(r2.stats.classes['Shark']!.objectsMoved, 0);
    rt.validateHeap();
    const after = snapshot(rt);
    for (const [id, b] of before) {
      t.is(after.get(id)?.values, b.values);
      t.is(r2.remap(r1.remap(b.h)), after.get(id)!.h);
    }
    t.true(r1.stats.ms.total >= 0 && r1.stats.passes >= 1 && r1.stats.blocksFreed >= 1);
    // An array of classes: their concrete classes, each once, in table order.
    const r3 = rt.defrag([Agent, Fish, Holder], 1);
    t.deepEqual(Object.keys(r3.stats.classes), ['Fish', 'Shark', 'Holder']);
    rt.validateHeap();
  } finally {
    await rt.close();
  }
});

test('checked mode: a view made before defrag of an object that moved is stale; the remapped handle works', async (t) => {
  const rt = await createRuntime({ classes: CLASSES, heap: '16MB', checked: true });
  try {
    build(rt, { ...SHAPE, fish: 2000, sharks: 10, holders: 10 });
    const views: (SmmoObject & { w: number; id: number })[] = [];
    rt.deviceDo(Fish, (f) => views.push(rt.get(Fish, f.__h)));
    const ids: number[] = views.map((v) => v.id);
    const res = rt.defrag(Fish, 2);
    let stale = 0;
    views.forEach((v, i) => {
      const nh = res.remap(v.__h);
      if (nh === v.__h) {
        t.is(v.id, ids[i]!); // not moved: the view still works
        return;
      }
      stale++;
      const e = t.throws(() => v.w, { instanceOf: InvalidHandleError });
      t.is((e as InvalidHandleError).reason, 'deleted'); // its block is free now
      t.is(rt.get(Fish, nh).id, ids[i]!);
    });
    t.true(stale > 100, `${stale} views stale`);
    rt.validateHeap();
    // The freed blocks are reused by new objects: an old view of a moved object must still
    // fail (the slot generation was bumped when the object left), never read the new object.
    for (let i = 0; i < 3000; i++) rt.create(Fish, { id: -1 - i });
    let reused = 0;
    views.forEach((v, i) => {
      if (res.remap(v.__h) === v.__h) return;
      const e = t.throws(() => v.id, { instanceOf: InvalidHandleError });
      if ((e as InvalidHandleError).reason === 'stale') reused++;
      else t.is((e as InvalidHandleError).reason, 'deleted');
      t.not(ids[i], undefined);
    });
    t.true(reused > 100, `${reused} old views name a reused slot and are refused as stale`);
  } finally {
    await rt.close();
  }
});

test('defrag refuses a bad n and a call inside a do-all (typed errors)', async (t) => {
  const rt = await createRuntime({ classes: CLASSES, heap: '16MB' });
  current = rt;
  try {
    build(rt, { ...SHAPE, fish: 200, sharks: 50, holders: 10 });
    for (const n of [0, -1, 1.5, NaN, Infinity]) {
      const e = t.throws(() => rt.defrag(Fish, n), { instanceOf: UsageError });
      t.regex(e!.message, /integer ≥ 1/);
    }
    t.throws(() => rt.defrag(Fish, '2' as unknown as number), { instanceOf: UsageError });
    const e = t.throws(() => rt.doAll(Shark, 'boom'));
    t.regex(String(e?.message) + String((e?.cause as Error | undefined)?.message), /defrag cannot be called inside a do-all/);
    rt.validateHeap();
    t.true(rt.defrag().stats.objectsMoved > 0, 'after the refusals, defrag runs');
    rt.validateHeap();
  } finally {
    current = null;
    await rt.close();
  }
});

test('a hint or kept block that defrag retires is only a hint: allocation afterwards is correct', async (t) => {
  const rt = await createRuntime({ classes: CLASSES, heap: '16MB', keepBlocks: 2 });
  try {
    build(rt, { ...SHAPE, fish: 1500, sharks: 10, holders: 10 });
    const f = rt.create(Fish, { id: 99999 }); // the allocator's hint is a Fish block now
    const hint = f.__h >>> 5;
    rt.defrag(Fish, 1);
    rt.validateHeap();
    for (let i = 0; i < 500; i++) rt.create(Fish, { id: 100000 + i });
    rt.validateHeap();
    t.is(rt.count(Fish), snapshotCount(rt, Fish));
    t.pass(`hint block ${hint}`);
  } finally {
    await rt.close();
  }
});

function snapshotCount(rt: Runtime, cls: SmmoClass): number {
  let n = 0;
  rt.deviceDo(cls, () => n++);
  return n;
}

test('property: random heaps with references across classes and subclasses (fast-check; the seed is printed)', async (t) => {
  const seed = process.env['FC_SEED'] !== undefined ? Number(process.env['FC_SEED']) : 0x5eed;
  t.log(`fast-check seed ${seed} (rerun with FC_SEED=${seed})`);
  const shape = shapeArbitrary();
  let runs = 0;
  let lastFailure = '';
  let totalMoved = 0;
  t.teardown(() => {
    if (lastFailure !== '') console.log(`last failure (shrunk): ${lastFailure}`);
  });
  await fc.assert(
    fc.asyncProperty(shape, fc.noBias(fc.integer({ min: 1, max: 6 })), async (s, n) => {
      const rt = await createRuntime({ classes: CLASSES, heap: '8MB' });
      try {
        build(rt, s);
        const problems: string[] = [];
        try {
          totalMoved += checkDefrag(rt, n, (ok, what) => {
            if (!ok) problems.push(what);
          });
        } catch (e) {
          problems.push(String(e));
        }
        runs++;
        if (problems.length > 0) {
          lastFailure = `n=${n} ${JSON.stringify(s)}: ${problems.slice(0, 5).join('; ')}`;
          throw new Error(lastFailure);
        }
      } finally {
        await rt.close();
      }
    }),
    { seed, numRuns: 40 },
  );
  t.true(runs >= 40);
  t.log(`${runs} random heaps, ${totalMoved} objects moved`);
  t.true(totalMoved > 1000);
});
