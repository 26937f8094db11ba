/**
 * ThreadContext (runtime/thread.ts), one thread's side of a runtime, through its own
 * methods and the Runtime calls that reach them: handle checks of get() (unchecked: only
 * the heap's range and a block with objects) and getChecked()/checked get() (every
 * reason, with its message), the UsageErrors of unregistered and abstract classes, the
 * checks of foreign and non-smmo values (reference fields, destroy, do-all arguments),
 * the delete rule during a do-all on the interpreted path, the do-all executor with the
 * compiler on and off (generated warp loops of every arity), initial values of inline
 * arrays, occupancy in stats(), and abandonPass().
 *
 * Written to kill surviving mutants of the thread-views and thread-passes groups
 * (scripts/mutate-ts.mjs, smmo issue #17); each test states the behaviour it pins down.
 */
import test from 'ava';
import {
  array,
  createRuntime,
  f32,
  f64,
  i32,
  InvalidHandleError,
  MethodError,
  object,
  ref,
  u8,
  UsageError,
  type Runtime,
  type SmmoClass,
  type SmmoObject,
} from '../index.js';
import { Body, DT } from '../apps/nbody/body.js';
import { MIN_HEAP_BYTES, S_WARP } from '../runtime/layout.js';
import { SLOT_CLAIM_OFFSET } from '../runtime/wasm.js';
import { ThreadContext } from '../runtime/thread.js';

/** What the arity tests' method saw: one entry per call. */
const seen: unknown[][] = [];

abstract class Animal extends object({ age: i32 }, { abstract: true }) {}
class Fish extends Animal.extend({ weight: f64, flag: u8, target: ref(() => Animal), prey: ref(() => Shark) }) {
  grow(): void {
    this.age += 1;
    this.weight = this.weight * 2 + this.flag;
  }
  /** Delete another Fish during a pass over Fish: refused in checked mode. */
  killTarget(): void {
    const t = this.target;
    if (t !== null) t.destroy();
  }
  /** Delete a Shark during a pass over Fish: allowed. */
  eatPrey(): void {
    const s = this.prey;
    if (s !== null) s.destroy();
  }
  die(): void {
    this.destroy();
  }
  fail(): void {
    if (this.age === 7) throw new Error('boom');
  }
  record(...xs: unknown[]): void {
    seen.push([this.handle, ...xs]);
  }
}
class Shark extends Animal.extend({ energy: f32, flags: u8 }) {}
/** Two slots per block (see test/checked.test.ts): 18 f64 arrays fill the data segment. */
class Big extends object({ a: f64, rest: array(f64, 17) }) {}
/** Never registered with any runtime here. */
class Loner extends object({ x: i32 }) {}

const CLASSES = [Animal, Fish, Shark, Big];

/** The context's members these tests call that are not public API. */
interface Ctx {
  compiler: unknown;
  handleLimit: number;
  pass: unknown;
  get(cls: unknown, handle: number): SmmoObject;
  view(handle: number): SmmoObject;
  checkOwn(v: unknown, where: string): void;
  destroyHandle(handle: number, current: number): void;
  runBlocks(typeId: number, method: string, args: readonly unknown[], from: number, to: number): void;
  runnerFor(typeId: number, method: string, arity: number): unknown;
  snapshot(): Int32Array;
  abandonPass(): void;
  compileUse: Map<string, { compiled: boolean }>;
  allocator: { state: number; warpBegin(lanes: number): void; keptBlocks(): number };
}
const ctxOf = (rt: Runtime): Ctx => rt.main as unknown as Ctx;

async function runtime(t: { teardown(fn: () => Promise<void>): void }, options: Record<string, unknown> = {}): Promise<Runtime> {
  const rt = await createRuntime({ classes: CLASSES, heap: MIN_HEAP_BYTES * 4, keepBlocks: 0, ...options });
  t.teardown(() => rt.close());
  return rt;
}

const typeId = (rt: Runtime, cls: SmmoClass): number => rt.table.byClass(cls)!.id;
/** The heap word `word` of the block of `handle`. */
const blockWordIndex = (rt: Runtime, handle: number, word: number): number => rt.heap.blockWord(handle >>> 5) + word;

// ------------------------------------------------------------------ construction

test('the compiler exists only when asked for: ThreadContext defaults to none, createRuntime to compile: true', async (t) => {
  const on = await runtime(t);
  const off = await runtime(t, { compile: false });
  t.not(ctxOf(on).compiler, null);
  t.is(ctxOf(off).compiler, null);
  const bare = new ThreadContext(on.heap, on.table, false, 1);
  try {
    t.is((bare as unknown as Ctx).compiler, null);
  } finally {
    (bare as unknown as { allocator: { dispose(): void } }).allocator.dispose();
  }
});

test('close() disposes the main context: kept blocks go back, the allocator state and the thread slot are released', async (t) => {
  const rt = await createRuntime({ classes: CLASSES, heap: MIN_HEAP_BYTES * 4, keepBlocks: 4 });
  const ctx = ctxOf(rt);
  for (const f of Array.from({ length: 200 }, () => rt.create(Fish))) rt.destroy(f);
  t.true(ctx.allocator.keptBlocks() > 0);
  const slot = (rt.heap.wasm as unknown as { slot: number }).slot;
  const claim = (): number => Atomics.load(rt.heap.i32, (SLOT_CLAIM_OFFSET >> 2) + (slot >> 5)) & (1 << (slot & 31));
  t.not(claim(), 0, 'the thread slot is claimed while the runtime is open');
  await rt.close();
  t.is(ctx.allocator.keptBlocks(), 0, 'kept blocks were given back');
  t.true((ctx.allocator as unknown as { disposed: boolean }).disposed);
  t.is(claim(), 0, 'the thread slot was given back');
});

// ------------------------------------------------------------------ unchecked get()

test('unchecked get(): a live handle gives a view of its block class that reads its fields (any slot)', async (t) => {
  const rt = await runtime(t);
  const ctx = ctxOf(rt);
  t.is(ctx.handleLimit, rt.heap.numBlocks * 32);
  const fish = [0, 1, 2].map((k) => rt.create(Fish, { age: 10 + k, weight: 1.5 + k, flag: 200 + k }));
  for (const [k, f] of fish.entries()) {
    const v = ctx.get(Fish, f.handle) as Fish;
    t.true(v instanceof Fish);
    t.is(v.handle, f.handle);
    t.is(v.age, 10 + k);
    t.is(v.weight, 1.5 + k);
    t.is(v.flag, 200 + k);
  }
  // Unchecked: the class asked for is not compared, only the block's class is used.
  const shark = rt.create(Shark, { energy: 0.5 });
  const asFish = ctx.get(Fish, shark.handle) as unknown as Shark;
  t.true(asFish instanceof Shark);
  t.is(asFish.energy, 0.5);
});

test('unchecked get(): handles outside 1 … numBlocks·32 − 1 or not integers are null/forged', async (t) => {
  const rt = await runtime(t);
  const ctx = ctxOf(rt);
  rt.create(Fish);
  const limit = rt.heap.numBlocks * 32;
  const e0 = t.throws(() => ctx.get(Fish, 0), { instanceOf: InvalidHandleError })!;
  t.is(e0.reason, 'null');
  t.is(e0.message, 'invalid handle 0 (null): get: not a handle of this heap');
  for (const h of [-1, -32, limit, limit + 31, 64.5, Number.NaN, 2 ** 32 + 33]) {
    const e = t.throws(() => ctx.get(Fish, h), { instanceOf: InvalidHandleError }, String(h))!;
    t.is(e.reason, 'forged', String(h));
    t.is(e.handle, h);
    t.is(e.message, `invalid handle ${h} (forged): get: not a handle of this heap`);
  }
});

test('unchecked get(): a handle in a block with no objects is free-block, naming the block', async (t) => {
  const rt = await runtime(t);
  const ctx = ctxOf(rt);
  rt.create(Fish);
  const last = rt.heap.numBlocks * 32 - 1;
  const bid = rt.heap.numBlocks - 1;
  const e = t.throws(() => ctx.get(Fish, last), { instanceOf: InvalidHandleError })!;
  t.is(e.reason, 'free-block');
  t.is(e.message, `invalid handle ${last} (free-block): get: block ${bid} holds no objects`);
  // Block 0 (handles 1 … 31) never holds objects.
  const e1 = t.throws(() => ctx.get(Fish, 5), { instanceOf: InvalidHandleError })!;
  t.is(e1.message, 'invalid handle 5 (free-block): get: block 0 holds no objects');
  // view() says the same, without the "get:".
  const e2 = t.throws(() => ctx.view(last), { instanceOf: InvalidHandleError })!;
  t.is(e2.message, `invalid handle ${last} (free-block): block ${bid} holds no objects`);
});

// ------------------------------------------------------------------ checked get(), getChecked()

test('checked get() and Runtime.get(): every handle reason with its message', async (t) => {
  for (const checked of [true, false]) {
    const rt = await runtime(t, { checked });
    // checked: the context's get; both modes: Runtime.get (getChecked).
    const gets: ((cls: SmmoClass, h: number) => SmmoObject)[] = [(c, h) => rt.get(c, h)];
    if (checked) gets.push((c, h) => ctxOf(rt).get(c, h));
    const top = rt.heap.numBlocks * 32 - 1;
    const fishA = rt.create(Fish, { age: 3 });
    const fishB = rt.create(Fish);
    const shark = rt.create(Shark);
    const big = rt.create(Big);
    const lone = rt.create(Big);
    const loneBlock = lone.handle >>> 5;
    rt.create(Big); // a second block of Bigs, so that deleting `lone`'s block mates frees it
    const bigBlock = big.handle >>> 5;
    t.is(lone.handle >>> 5, bigBlock, 'two Bigs per block');
    const deleted = fishB.handle;
    rt.destroy(fishB);
    rt.destroy(big);
    rt.destroy(lone); // its block is now empty: free (keepBlocks: 0)
    for (const get of gets) {
      const ok = get(Fish, fishA.handle) as Fish;
      t.true(ok instanceof Fish);
      t.is(ok.age, 3);
      t.true(get(Animal, shark.handle) instanceof Shark, 'a subclass is accepted');
      const cases: [number, SmmoClass, string, string][] = [
        [0, Fish, 'null', `get(Fish): not a handle of this heap (32 … ${top})`],
        [31, Fish, 'forged', `get(Fish): not a handle of this heap (32 … ${top})`],
        [top + 1, Fish, 'forged', `get(Fish): not a handle of this heap (32 … ${top})`],
        [fishA.handle + 0.5, Fish, 'forged', `get(Fish): not a handle of this heap (32 … ${top})`],
        [bigBlock * 32, Big, 'free-block', `get(Big): block ${loneBlock} is free; the object was deleted`],
        [deleted, Fish, 'deleted', `get(Fish): the Fish in slot ${deleted & 31} of block ${deleted >>> 5} was deleted`],
        [shark.handle, Fish, 'wrong-type', 'get(Fish): expected a Fish, found a Shark'],
        [fishA.handle, Big, 'wrong-type', 'get(Big): expected a Big, found a Fish'],
      ];
      for (const [h, cls, reason, detail] of cases) {
        const e = t.throws(() => get(cls, h), { instanceOf: InvalidHandleError }, `${h} ${reason}`)!;
        t.is(e.reason as string, reason);
        t.is(e.message, `invalid handle ${h} (${reason}): ${detail}`);
      }
      const u = t.throws(() => get(Loner, fishA.handle), { instanceOf: UsageError })!;
      t.is(u.message, 'get: class Loner is not registered with this runtime (pass it in options.classes)');
    }
  }
});

test('Runtime.get(): a slot the block type does not have, and a block whose type word is forged', async (t) => {
  const rt = await runtime(t);
  const big = rt.create(Big);
  const bid = big.handle >>> 5;
  const e = t.throws(() => rt.get(Big, bid * 32 + 5), { instanceOf: InvalidHandleError })!;
  t.is(e.reason, 'forged');
  t.is(e.message, `invalid handle ${bid * 32 + 5} (forged): get(Big): slot 5 does not exist in a Big block (2 slots)`);
  // The type word names an abstract type, or no type at all: forged, with the type id.
  const w = blockWordIndex(rt, big.handle, 2); // BLOCK_TYPE_WORD
  const saved = rt.heap.i32[w]!;
  const abstractId = typeId(rt, Animal);
  try {
    for (const bad of [abstractId, 999]) {
      rt.heap.i32[w] = bad;
      const f = t.throws(() => rt.get(Big, big.handle), { instanceOf: InvalidHandleError })!;
      t.is(f.reason, 'forged');
      t.is(f.message, `invalid handle ${big.handle} (forged): get(Big): block ${bid} has no valid type (${bad})`);
    }
  } finally {
    rt.heap.i32[w] = saved;
  }
  t.is(rt.get(Big, big.handle).handle, big.handle);
});

// ------------------------------------------------------------------ classes

test('unregistered and abstract classes: UsageErrors naming the operation and the class', async (t) => {
  const rt = await runtime(t);
  // null as the very first create: the one-entry class cache must not take it for a hit.
  const n = t.throws(() => rt.create(null as unknown as typeof Fish), { instanceOf: UsageError })!;
  t.is(n.message, 'create: class null is not registered with this runtime (pass it in options.classes)');
  const cases: [string, () => unknown][] = [
    ['create', () => rt.create(Loner)],
    ['count', () => rt.count(Loner)],
    ['deviceDo', () => rt.deviceDo(Loner, () => {})],
    ['get', () => rt.get(Loner, 32)],
  ];
  for (const [what, fn] of cases) {
    const e = t.throws(fn, { instanceOf: UsageError }, what)!;
    t.is(e.message, `${what}: class Loner is not registered with this runtime (pass it in options.classes)`);
  }
  const a = t.throws(() => rt.create(Animal as unknown as typeof Fish), { instanceOf: UsageError })!;
  t.is(a.message, 'create: Animal is abstract; create one of its subclasses');
  t.is(rt.count(Animal), 0, 'nothing was created');
});

// ------------------------------------------------------------------ foreign and non-smmo values

test('reference fields refuse values that are not smmo objects of this runtime, saying what they got', async (t) => {
  for (const checked of [false, true]) {
    const rt = await runtime(t, { checked });
    const other = await runtime(t, { checked });
    const fish = rt.create(Fish);
    const stranger = other.create(Fish);
    const assign = (v: unknown) => () => {
      (fish as unknown as { target: unknown }).target = v;
    };
    const s = t.throws(assign('abc'), { instanceOf: UsageError })!;
    t.is(s.message, 'Fish.target = …: expected an smmo object of this runtime, got string abc');
    const o = t.throws(assign({ a: 1 }), { instanceOf: UsageError })!;
    t.is(o.message, 'Fish.target = …: expected an smmo object of this runtime, got an object that is not an smmo object');
    const f = t.throws(assign(stranger), { instanceOf: InvalidHandleError })!;
    t.is(f.reason, 'foreign');
    t.is(f.handle, stranger.handle);
    t.true(
      f.message.startsWith(
        `invalid handle ${stranger.handle} (foreign): Fish.target = …: this Fish (handle ${stranger.handle}) belongs to another runtime; `,
      ),
      f.message,
    );
    t.is(fish.target, null, 'nothing was assigned');
  }
});

/** A class whose own name contains the generated classes' suffix: messages must keep its name whole. */
class Odd$ViewName extends object({ x: i32 }) {}

test("'foreign' messages name the view's class, stripping only the generated suffix", async (t) => {
  const rt = await createRuntime({ classes: [Odd$ViewName], heap: MIN_HEAP_BYTES });
  const other = await createRuntime({ classes: [Odd$ViewName], heap: MIN_HEAP_BYTES });
  t.teardown(async () => {
    await rt.close();
    await other.close();
  });
  const stranger = other.create(Odd$ViewName);
  const e = t.throws(() => rt.destroy(stranger), { instanceOf: InvalidHandleError })!;
  t.is(e.reason, 'foreign');
  t.true(
    e.message.startsWith(`invalid handle ${stranger.handle} (foreign): destroy: this Odd$ViewName (handle ${stranger.handle}) belongs`),
    e.message,
  );
});

test('checkOwn(): null, and a forged view with no constructor, are described as such', async (t) => {
  const rt = await runtime(t);
  const ctx = ctxOf(rt);
  const n = t.throws(() => ctx.checkOwn(null, 'here'), { instanceOf: UsageError })!;
  t.is(n.message, 'here: expected an smmo object of this runtime, got null');
  const u = t.throws(() => ctx.checkOwn(undefined, 'here'), { instanceOf: UsageError })!;
  t.is(u.message, 'here: expected an smmo object of this runtime, got undefined undefined');
  const forged = Object.assign(Object.create(null) as object, { __h: 77, __host: {} });
  const e = t.throws(() => ctx.checkOwn(forged, 'here'), { instanceOf: InvalidHandleError })!;
  t.is(e.reason, 'foreign');
  t.true(e.message.startsWith('invalid handle 77 (foreign): here: this object (handle 77) belongs to another runtime; '), e.message);
  const hostOnly = t.throws(() => ctx.checkOwn({ __host: {} }, 'here'), { instanceOf: UsageError })!;
  t.is(hostOnly.message, 'here: expected an smmo object of this runtime, got an object that is not an smmo object');
  t.notThrows(() => ctx.checkOwn(rt.create(Fish), 'here'));
});

test('destroy(): values that are not smmo objects; checked mode: deleted and stale views, deleted handles', async (t) => {
  const rt = await runtime(t, { checked: true });
  const d = (v: unknown) => () => rt.destroy(v as SmmoObject);
  t.is(t.throws(d({}), { instanceOf: UsageError })!.message, 'destroy: expected an smmo object, got [object Object]');
  t.is(t.throws(d(5), { instanceOf: UsageError })!.message, 'destroy: expected an smmo object, got 5');
  t.is(t.throws(d(null), { instanceOf: UsageError })!.message, 'destroy: expected an smmo object, got null');
  const a = rt.create(Fish);
  const b = rt.create(Fish);
  const h = a.handle;
  rt.destroy(a);
  const e = t.throws(() => rt.destroy(a), { instanceOf: InvalidHandleError })!;
  t.is(e.reason, 'deleted');
  t.is(e.message, `invalid handle ${h} (deleted): destroy: the Fish in slot ${h & 31} of block ${h >>> 5} was deleted`);
  const e2 = t.throws(() => ctxOf(rt).destroyHandle(h, 0), { instanceOf: InvalidHandleError })!;
  t.is(e2.message, e.message);
  // The slot is reused: the old view is stale.
  const c = rt.create(Fish);
  t.is(c.handle, h, 'the freed slot is reused');
  const s = t.throws(() => rt.destroy(a), { instanceOf: InvalidHandleError })!;
  t.is(s.reason, 'stale');
  t.true(
    s.message.startsWith(
      `invalid handle ${h} (stale): destroy: a stale view: its Fish was deleted, and slot ${h & 31} of block ${h >>> 5}`,
    ),
  );
  t.is(rt.count(Fish), 2);
  rt.destroy(b);
  rt.destroy(c);
  t.is(rt.count(Fish), 0);
});

test('checked field access of a deleted object: whether its block is free or only its slot', async (t) => {
  const rt = await runtime(t, { checked: true });
  const x = rt.create(Fish);
  const y = rt.create(Fish);
  rt.destroy(x);
  const e = t.throws(() => x.age, { instanceOf: InvalidHandleError })!;
  t.is(e.reason, 'deleted');
  t.is(e.message, `invalid handle ${x.handle} (deleted): access to Fish.age of a deleted object`);
  rt.destroy(y); // the block is now empty and free (keepBlocks: 0)
  const f = t.throws(() => y.weight, { instanceOf: InvalidHandleError })!;
  t.is(f.reason, 'deleted');
  t.is(f.message, `invalid handle ${y.handle} (deleted): access to Fish.weight of a deleted object (its block is free)`);
});

// ------------------------------------------------------------------ do-alls: arguments

test('do-all arguments: non-views pass through untouched; views of another runtime and deleted views are refused', async (t) => {
  for (const checked of [false, true]) {
    const rt = await runtime(t, { checked, compile: false });
    const other = await runtime(t, { checked });
    const fish = rt.create(Fish);
    const mine = rt.create(Shark);
    rt.create(Shark); // keeps the block of `mine` allocated once `mine` is deleted
    seen.length = 0;
    const args = [5, 'x', null, { a: 1 }, { __h: 3 }, { __o: 4 }, mine];
    rt.doAll(Fish, 'record', ...args);
    t.deepEqual(seen, [[fish.handle, ...args]]);
    const stranger = other.create(Shark);
    const e = t.throws(() => rt.doAll(Fish, 'record', 1, stranger), { instanceOf: InvalidHandleError })!;
    t.is(e.reason, 'foreign');
    t.true(
      e.message.startsWith(
        `invalid handle ${stranger.handle} (foreign): parallelDo(Fish, 'record'): argument 1: this Shark (handle ${stranger.handle}) belongs`,
      ),
      e.message,
    );
    if (checked) {
      rt.destroy(mine);
      const d = t.throws(() => rt.doAll(Fish, 'record', 1, 2, mine), { instanceOf: InvalidHandleError })!;
      t.is(d.reason, 'deleted');
      t.is(
        d.message,
        `invalid handle ${mine.handle} (deleted): parallelDo(Fish, 'record'): argument 2: the Shark in slot ${mine.handle & 31} of block ${mine.handle >>> 5} was deleted`,
      );
    }
    t.is(seen.length, 1, 'no refused do-all ran');
  }
});

test('interpreted do-alls pass exactly the arguments given, for every arity (0 … 6)', async (t) => {
  const rt = await runtime(t, { compile: false });
  const fish = [rt.create(Fish), rt.create(Fish), rt.create(Fish)];
  for (let arity = 0; arity <= 6; arity++) {
    seen.length = 0;
    const args = Array.from({ length: arity }, (_, k) => k * 10 + arity);
    rt.doAll(Fish, 'record', ...args);
    t.deepEqual(
      seen,
      fish.map((f) => [f.handle, ...args]),
      `arity ${arity}`,
    );
  }
  const ctx = ctxOf(rt);
  const id = typeId(rt, Fish);
  t.is(ctx.runnerFor(id, 'record', 2), ctx.runnerFor(id, 'record', 2), 'one generated loop per (type, method, arity)');
  t.not(ctx.runnerFor(id, 'record', 2), ctx.runnerFor(id, 'record', 3));
});

// ------------------------------------------------------------------ do-alls: executor

test('do-alls with the compiler on run compiled, with it off interpreted; both give the same fields at every slot', async (t) => {
  const results: number[][] = [];
  for (const compile of [true, false]) {
    const rt = await runtime(t, { compile });
    const fish = Array.from({ length: 40 }, (_, k) => rt.create(Fish, { age: k, weight: k / 4, flag: k % 3 }));
    rt.doAll(Fish, 'grow');
    rt.doAll(Fish, 'grow');
    t.deepEqual(
      fish.map((f) => f.age),
      fish.map((_, k) => k + 2),
    );
    results.push(fish.map((f) => f.weight));
    const use = ctxOf(rt).compileUse.get('Fish.grow');
    if (compile) t.is(use?.compiled, true, 'ran compiled');
    else t.is(use, undefined, 'no compiler: nothing recorded');
    t.deepEqual(Object.keys(rt.stats().compiled), compile ? ['Fish.grow'] : []);
  }
  t.deepEqual(results[0], results[1]);
  t.deepEqual(
    results[1],
    Array.from({ length: 40 }, (_, k) => (k / 4) * 4 + (k % 3) * 3),
  );
});

test('a method with a kernel of the chosen backend runs the kernel (backend wasm), not the TypeScript method', async (t) => {
  const rt = await createRuntime({ classes: [Body], heap: '2MB', backend: 'wasm' });
  t.teardown(() => rt.close());
  rt.create(Body, { posX: 0.5, velX: 0.25, mass: 1 });
  rt.doAll(Body, 'update', DT);
  t.deepEqual(rt.stats().backend.methods, { 'Body.update': 'wasm' });
});

test('runBlocks outside a pass (no pass marker) runs the listed blocks, compiled or not', async (t) => {
  for (const compile of [true, false]) {
    const rt = await runtime(t, { compile });
    const ctx = ctxOf(rt);
    const fish = [rt.create(Fish, { age: 1 }), rt.create(Fish, { age: 5 })];
    const id = typeId(rt, Fish);
    const lists = ctx.snapshot();
    t.is(ctx.pass, null);
    ctx.runBlocks(id, 'grow', [], lists[2 * id]!, lists[2 * id]! + lists[2 * id + 1]!);
    t.deepEqual(
      fish.map((f) => f.age),
      [2, 6],
    );
    t.is(rt.heap.i32[ctx.allocator.state + S_WARP], 0, 'the warp is closed');
  }
});

test('with the compiler on, runBlocks runs the compiled loop (not the generated interpreted one)', async (t) => {
  const rt = await runtime(t);
  const ctx = ctxOf(rt);
  const fish = [rt.create(Fish, { age: 1 }), rt.create(Fish, { age: 2 })];
  const id = typeId(rt, Fish);
  const compiler = ctx.compiler as {
    compile(id: number, m: string, use: Map<string, unknown>): { compiled: boolean; run: (...a: unknown[]) => void };
  };
  const c = compiler.compile(id, 'grow', ctx.compileUse);
  t.true(c.compiled);
  const run = c.run;
  let calls = 0;
  c.run = (...a: unknown[]) => {
    calls++;
    run(...a);
  };
  rt.doAll(Fish, 'grow');
  t.is(calls, 1);
  t.deepEqual(
    fish.map((f) => f.age),
    [2, 3],
  );
  // Outside a pass (no pass marker), a compiled method that throws throws its own error.
  const f = compiler.compile(id, 'fail', ctx.compileUse);
  t.true(f.compiled, 'fail() compiles');
  rt.create(Fish, { age: 7 });
  const lists = ctx.snapshot();
  const e = t.throws(() => ctx.runBlocks(id, 'fail', [], lists[2 * id]!, lists[2 * id]! + lists[2 * id + 1]!))!;
  t.is(e.message, 'boom');
  t.is(rt.heap.i32[ctx.allocator.state + S_WARP], 0, 'the warp is closed');
});

test('a method that throws: MethodError names the object, the warp is closed and the pass marker cleared', async (t) => {
  for (const compile of [true, false]) {
    const rt = await runtime(t, { compile });
    const ctx = ctxOf(rt);
    const fish = Array.from({ length: 10 }, (_, k) => rt.create(Fish, { age: k }));
    const e = t.throws(() => rt.doAll(Fish, 'fail'), { instanceOf: MethodError })!;
    t.is(e.handle, fish[7]!.handle, `compile ${compile}`);
    t.is(e.message, `Fish.fail threw on object ${fish[7]!.handle} (calling thread): Error: boom`);
    t.is(rt.heap.i32[ctx.allocator.state + S_WARP], 0);
    t.is(ctx.pass, null);
    rt.doAll(Fish, 'grow'); // the runtime goes on
    t.is(fish[9]!.age, 10);
  }
});

test('interpreted checked do-alls: a method may delete itself and other classes, not another object of its class', async (t) => {
  const rt = await runtime(t, { checked: true, compile: false });
  const a = rt.create(Fish);
  const b = rt.create(Fish);
  a.target = b;
  const e = t.throws(() => rt.doAll(Fish, 'killTarget'), { instanceOf: MethodError })!;
  t.is(e.handle, a.handle);
  t.true(e.cause instanceof UsageError);
  t.is((e.cause as Error).message, 'destroy: a Fish method may delete itself, but not another Fish during a do-all over that type');
  t.is(rt.count(Fish), 2);
  a.target = null;
  const s1 = rt.create(Shark);
  const s2 = rt.create(Shark);
  a.prey = s1;
  b.prey = s2;
  rt.doAll(Fish, 'eatPrey');
  t.is(rt.count(Shark), 0);
  rt.doAll(Fish, 'die');
  t.is(rt.count(Fish), 0);
  // Objects in reused slots (slot generations past 0) delete themselves too.
  const again = Array.from({ length: 5 }, () => rt.create(Fish));
  for (const f of again) rt.destroy(f);
  const reused = Array.from({ length: 5 }, () => rt.create(Fish));
  t.deepEqual(
    reused.map((f) => f.handle),
    again.map((f) => f.handle),
    'the slots are reused',
  );
  rt.doAll(Fish, 'die');
  t.is(rt.count(Fish), 0);
  // Outside a do-all, any object may be deleted.
  const c = rt.create(Fish);
  const d = rt.create(Fish);
  c.target = d;
  c.killTarget();
  t.is(rt.count(Fish), 1);
});

test('the delete rule is checked mode only: compiled or not, an unchecked method may delete another object of its class', async (t) => {
  for (const compile of [true, false]) {
    const rt = await runtime(t, { compile });
    const a = rt.create(Fish);
    const b = rt.create(Fish);
    a.target = b;
    rt.doAll(Fish, 'killTarget');
    t.is(rt.count(Fish), 1, `compile ${compile}`);
    t.is(rt.get(Fish, a.handle).handle, a.handle);
  }
  const checked = await runtime(t, { checked: true });
  const a = checked.create(Fish);
  a.target = checked.create(Fish);
  const e = t.throws(() => checked.doAll(Fish, 'killTarget'), { instanceOf: MethodError })!;
  t.is((e.cause as Error).message, 'destroy: a Fish method may delete itself, but not another Fish during a do-all over that type');
  t.is(checked.count(Fish), 2);
});

// ------------------------------------------------------------------ initial values

test('create() init: inline arrays take up to their length in values; bad keys and values are refused without a leak', async (t) => {
  const rt = await runtime(t);
  const full = Array.from({ length: 17 }, (_, k) => k + 0.5);
  const b = rt.create(Big, { a: 2, rest: full });
  t.is(b.a, 2);
  t.deepEqual(
    Array.from({ length: 17 }, (_, k) => b.rest.get(k)),
    full,
  );
  const part = rt.create(Big, { rest: [7, 8] });
  t.deepEqual(
    Array.from({ length: 17 }, (_, k) => part.rest.get(k)),
    [7, 8, ...Array<number>(15).fill(0)],
  );
  const before = rt.count(Big);
  const msg = "create(Big): field 'rest' is an inline array of 17; give an array of at most 17 values";
  for (const bad of [[...full, 1], 3, 'abc', { 0: 1 }]) {
    const e = t.throws(() => rt.create(Big, { rest: bad as number[] }), { instanceOf: UsageError }, JSON.stringify(bad))!;
    t.is(e.message, msg);
  }
  const k = t.throws(() => rt.create(Big, { nope: 1 } as never), { instanceOf: UsageError })!;
  t.is(k.message, "create(Big): Big has no field 'nope'");
  t.is(rt.count(Big), before, 'refused inits leave no object behind');
});

// ------------------------------------------------------------------ occupancy, abandonPass

test('stats(): objects, blocks and fragmentation per class from the allocation words', async (t) => {
  const rt = await runtime(t);
  const bigs = [rt.create(Big), rt.create(Big), rt.create(Big)];
  rt.create(Fish);
  let s = rt.stats();
  t.deepEqual(s.types.Big, { objects: 3, blocks: 2, slotsPerBlock: 2 });
  t.is(s.types.Fish!.objects, 1);
  t.is(s.types.Fish!.blocks, 1);
  const fishSlots = s.types.Fish!.slotsPerBlock;
  t.is(s.heap.usedBlocks, 3);
  t.is(s.heap.fragmentation, (4 + fishSlots - 4) / (4 + fishSlots));
  rt.destroy(bigs[0]!);
  s = rt.stats();
  t.deepEqual(s.types.Big, { objects: 2, blocks: 2, slotsPerBlock: 2 });
});

test('abandonPass(): clears the pass marker, closes the open warp and gives kept blocks back', async (t) => {
  const rt = await runtime(t, { keepBlocks: 4 });
  const ctx = ctxOf(rt);
  const fish = Array.from({ length: 200 }, () => rt.create(Fish)); // several blocks
  ctx.pass = { lists: new Int32Array(2 * rt.table.types.length), typeId: typeId(rt, Fish), current: null };
  ctx.allocator.warpBegin(8);
  for (const f of fish) rt.destroy(f); // emptied blocks are kept
  t.true(ctx.allocator.keptBlocks() > 0);
  t.is(rt.heap.i32[ctx.allocator.state + S_WARP], 1);
  ctx.abandonPass();
  t.is(ctx.pass, null);
  t.is(rt.heap.i32[ctx.allocator.state + S_WARP], 0);
  t.is(ctx.allocator.keptBlocks(), 0);
  rt.heap.validate();
});
