/**
 * The allocator and the do-all executor through the public Runtime API, against a model.
 *
 * Three classes of different sizes make N_T differ: Small (32 slots per block), Mid
 * (16 slots: bits 16…31 of its allocation bitmaps are pre-set) and Big (2 slots: bits
 * 2…31 pre-set). The heap is the smallest allowed (176 usable blocks), so random
 * sequences also run into HeapExhaustedError. After every step: validateHeap(), counts
 * per class, block accounting (free blocks + used blocks = all blocks; live + free slots
 * = capacity of the used blocks), unique handles, and every field of every live object
 * compared with the model.
 */
import test, { type ExecutionContext } from 'ava';
import fc from 'fast-check';
import {
  array,
  bool,
  createRuntime,
  f32,
  f64,
  HeapExhaustedError,
  i32,
  InvalidHandleError,
  object,
  ref,
  u16,
  u8,
  type Runtime,
  type SmmoClass,
} from '../index.js';
import { popc } from '../runtime/bits.js';
import { BLOCK_ALLOC_WORD, MIN_HEAP_BYTES } from '../runtime/layout.js';
import { FC_SEED, fcParams } from './helpers/fc.js';
import { seedNote } from './helpers/seed.js';

// ------------------------------------------------------------------ classes of three sizes

/** 10 bytes: the smallest class, 32 slots per block. */
class Small extends object({ a: f64, b: u16 }) {
  bump(k: number): void {
    this.a += k;
    this.b = this.a;
  }
  dieIf(m: number): void {
    if (this.a % m === 0) this.destroy();
  }
}

/** An inline-array class: 16 slots per block. */
class Mid extends object({ p: array(i32, 3), flag: bool, other: ref(() => Small) }) {
  bump(k: number): void {
    this.p.set(0, this.p.get(0) + k);
    this.p.set(1, this.p.get(1) - k);
    this.p.set(2, this.p.get(2) + 3 * k);
    this.flag = this.p.get(0) % 2 === 1;
  }
  dieIf(m: number): void {
    if (this.p.get(0) % m === 0) this.destroy();
  }
}

/** 19 × f64 + i32: 2 slots per block. */
class Big extends object({ vals: array(f64, 19), id: i32 }) {
  bump(k: number): void {
    this.id += k;
    this.vals.set(0, this.vals.get(0) + k);
    this.vals.set(18, this.vals.get(18) - k);
  }
  dieIf(m: number): void {
    if (this.id % m === 0) this.destroy();
  }
}

const CLASSES = { Small, Mid, Big } as const;
type ClassName = keyof typeof CLASSES;
const NAMES = Object.keys(CLASSES) as ClassName[];
type Obj = Small | Mid | Big;

/** Write the fields of `o` (of class `cls`) that the model derives from x. */
function writeFields(cls: ClassName, o: Obj, x: number): void {
  if (cls === 'Small') {
    const s = o as Small;
    s.a = x;
    s.b = x;
  } else if (cls === 'Mid') {
    const m = o as Mid;
    m.p.set(0, x);
    m.p.set(1, -x);
    m.p.set(2, 3 * x);
    m.flag = x % 2 === 1;
  } else {
    const b = o as Big;
    b.id = x;
    b.vals.set(0, x);
    b.vals.set(18, -x);
  }
}

/** '' if the fields of `o` are what the model says for x, else a description. */
function checkFields(cls: ClassName, o: Obj, x: number): string {
  let ok: boolean;
  if (cls === 'Small') {
    const s = o as Small;
    ok = s.a === x && s.b === (x & 0xffff);
  } else if (cls === 'Mid') {
    const m = o as Mid;
    ok = m.p.get(0) === x && m.p.get(1) === -x && m.p.get(2) === 3 * x && m.flag === (x % 2 === 1) && m.other === null;
  } else {
    const b = o as Big;
    ok = b.id === x && b.vals.get(0) === x && b.vals.get(18) === -x && b.vals.get(9) === 0;
  }
  return ok ? '' : `${cls} ${o.handle}: fields disagree with the model value ${x}`;
}

async function smallRuntime(extra: Partial<Parameters<typeof createRuntime>[0]> = {}): Promise<Runtime> {
  return createRuntime({ classes: [Small, Mid, Big], heap: MIN_HEAP_BYTES, ...extra });
}

// ------------------------------------------------------------------ model and its checks

interface Entry {
  cls: ClassName;
  x: number;
}

class Model {
  readonly objects = new Map<number, Entry>();
  count(cls: ClassName): number {
    let n = 0;
    for (const e of this.objects.values()) if (e.cls === cls) n++;
    return n;
  }
}

/** Every invariant the runtime promises between operations; '' or the first problem. */
function checkAgainstModel(rt: Runtime, model: Model, step: string): string {
  try {
    rt.validateHeap();
  } catch (e) {
    return `after ${step}: ${(e as Error).message}`;
  }
  const heap = rt.heap;
  // Block accounting: every block (but the null block) is free or used by one type.
  const stats = rt.stats();
  if (heap.free.count() + stats.heap.usedBlocks !== heap.numBlocks - 1) {
    return `after ${step}: ${heap.free.count()} free + ${stats.heap.usedBlocks} used blocks ≠ ${heap.numBlocks - 1}`;
  }
  for (const name of NAMES) {
    const t = rt.table.byClass(CLASSES[name])!;
    // Slot accounting from the raw allocation bitmaps: live + free = capacity.
    const list = new Uint32Array(heap.numBlocks);
    const n = heap.allocated[t.id]!.indices(list);
    let live = 0;
    let free = 0;
    for (let i = 0; i < n; i++) {
      const bm = heap.i32[heap.blockWord(list[i]!) + BLOCK_ALLOC_WORD]!;
      live += popc(bm & ~t.highMask);
      free += popc(~bm & ~t.highMask);
    }
    if (live + free !== n * t.slots) return `after ${step}: ${name}: ${live} live + ${free} free slots ≠ ${n} blocks × ${t.slots}`;
    if (live !== model.count(name) || rt.count(CLASSES[name]) !== live || stats.types[name]!.objects !== live) {
      return `after ${step}: ${name}: ${live} live in bitmaps, count() ${rt.count(CLASSES[name])}, model ${model.count(name)}`;
    }
  }
  // The live handles are exactly the model's, each seen once, with the model's fields.
  const seen = new Set<number>();
  let problem = '';
  for (const name of NAMES) {
    rt.deviceDo(CLASSES[name] as SmmoClass<Obj>, (o) => {
      if (problem) return;
      const h = o.handle;
      const e = model.objects.get(h);
      if (seen.has(h)) problem = `handle ${h} enumerated twice`;
      else if (!e) problem = `handle ${h} (${name}) is live but not in the model`;
      else if (e.cls !== name) problem = `handle ${h} is a ${name}, the model says ${e.cls}`;
      else problem = checkFields(name, o, e.x);
      seen.add(h);
    });
    if (problem) return `after ${step}: ${problem}`;
  }
  if (seen.size !== model.objects.size) return `after ${step}: ${seen.size} live objects, model has ${model.objects.size}`;
  return '';
}

// ------------------------------------------------------------------ random sequences

type Op =
  | { op: 'create'; cls: ClassName; x: number }
  | { op: 'destroy'; k: number }
  | { op: 'parallelNew'; cls: ClassName; n: number; x: number }
  | { op: 'parallelDo'; cls: ClassName; k: number }
  | { op: 'dieIf'; cls: ClassName; m: number };

const clsArb = fc.constantFrom<ClassName>(...NAMES);
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ op: fc.constant('create' as const), cls: clsArb, x: fc.nat({ max: 100000 }) }) },
  { weight: 4, arbitrary: fc.record({ op: fc.constant('destroy' as const), k: fc.nat() }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('parallelNew' as const),
      cls: clsArb,
      n: fc.oneof(fc.nat({ max: 70 }), fc.constant(400)),
      x: fc.nat({ max: 100000 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('parallelDo' as const), cls: clsArb, k: fc.integer({ min: 1, max: 9 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('dieIf' as const), cls: clsArb, m: fc.integer({ min: 1, max: 4 }) }) },
);

/** Run `ops` on a fresh runtime and the model; '' or the first problem. `stats.exhausted` counts steps that hit a full heap. */
async function runOps(ops: readonly Op[], stats = { exhausted: 0 }): Promise<string> {
  const rt = await smallRuntime({ seed: ops.length });
  const model = new Model();
  try {
    for (const [i, o] of ops.entries()) {
      const step = `#${i} ${JSON.stringify(o)}`;
      switch (o.op) {
        case 'create': {
          let obj: Obj;
          try {
            obj = rt.create(CLASSES[o.cls] as SmmoClass<Obj>);
          } catch (e) {
            if (!(e instanceof HeapExhaustedError) || e.typeName !== o.cls) return `${step}: ${String(e)}`;
            stats.exhausted++;
            break; // nothing was allocated: the model is unchanged
          }
          if (model.objects.has(obj.handle)) return `${step}: handle ${obj.handle} handed out twice`;
          if (checkFields(o.cls, obj, 0) !== '') return `${step}: a new object's fields are not zero`;
          writeFields(o.cls, obj, o.x);
          model.objects.set(obj.handle, { cls: o.cls, x: o.x });
          break;
        }
        case 'destroy': {
          if (model.objects.size === 0) break;
          const h = [...model.objects.keys()][o.k % model.objects.size]!;
          const e = model.objects.get(h)!;
          rt.destroy(rt.get(CLASSES[e.cls] as SmmoClass<Obj>, h));
          model.objects.delete(h);
          break;
        }
        case 'parallelNew': {
          const made: [number, number][] = [];
          try {
            await rt.parallelNew(CLASSES[o.cls] as SmmoClass<Obj>, o.n, (obj, idx) => {
              writeFields(o.cls, obj, o.x + idx);
              made.push([obj.handle, idx]);
            });
          } catch (e) {
            if (!(e instanceof HeapExhaustedError) || e.typeName !== o.cls) return `${step}: ${String(e)}`;
            stats.exhausted++;
            break; // n ≤ one chunk (4096): everything was rolled back
          }
          if (made.length !== o.n) return `${step}: init ran ${made.length} times`;
          for (const [h, idx] of made) {
            if (model.objects.has(h)) return `${step}: handle ${h} handed out twice`;
            model.objects.set(h, { cls: o.cls, x: o.x + idx });
          }
          break;
        }
        case 'parallelDo': {
          await rt.parallelDo(CLASSES[o.cls] as SmmoClass<Small>, 'bump', o.k);
          for (const e of model.objects.values()) if (e.cls === o.cls) e.x += o.k;
          break;
        }
        case 'dieIf': {
          // Self-delete during a pass: every object with x % m = 0 deletes itself.
          await rt.parallelDo(CLASSES[o.cls] as SmmoClass<Small>, 'dieIf', o.m);
          for (const [h, e] of model.objects) if (e.cls === o.cls && e.x % o.m === 0) model.objects.delete(h);
          break;
        }
      }
      const problem = checkAgainstModel(rt, model, step);
      if (problem) return problem;
    }
    return '';
  } finally {
    await rt.close();
  }
}

test('random create / destroy / parallelNew / parallelDo sequences agree with a model (fast-check)', async (t) => {
  t.log(seedNote(FC_SEED));
  const stats = { exhausted: 0 };
  await fc.assert(
    fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 60 }), async (ops) => {
      const problem = await runOps(ops, stats);
      if (problem) throw new Error(problem); // fast-check reports it with the seed
    }),
    fcParams(250),
  );
  t.true(stats.exhausted > 0, 'some sequences ran the heap full');
  t.log(`${stats.exhausted} steps hit a full heap`);
});

test('a long sequence that fills the heap with every class and empties it again', async (t) => {
  // Deterministic companion of the property test: many full/empty block transitions.
  const ops: Op[] = [];
  for (let round = 0; round < 6; round++) {
    for (const cls of NAMES) ops.push({ op: 'parallelNew', cls, n: 150, x: round * 1000 });
    for (let k = 0; k < 40; k++) ops.push({ op: 'destroy', k: k * 7919 + round });
    ops.push({ op: 'dieIf', cls: NAMES[round % 3]!, m: 1 });
    ops.push({ op: 'parallelDo', cls: NAMES[(round + 1) % 3]!, k: 3 });
  }
  t.is(await runOps(ops), '');
});

test('the test classes really have different slots per block (32, 16, 2)', async (t) => {
  const rt = await smallRuntime();
  const slots = Object.fromEntries(NAMES.map((n) => [n, rt.table.byClass(CLASSES[n])!.slots]));
  t.deepEqual(slots, { Small: 32, Mid: 16, Big: 2 });
  t.is(rt.table.byClass(Big)!.highMask, ~3);
  t.is(rt.heap.numBlocks - 1, 176);
  await rt.close();
});

// ------------------------------------------------------------------ subclass passes

/** Visits recorded by Agent methods: [class name, handle]. Shared, so the tests using it are serial. */
let visits: [string, number][] = [];

abstract class Agent extends object({ age: i32 }, { abstract: true }) {
  kind(): string {
    return this instanceof Fish ? 'Fish' : this instanceof Shark ? 'Shark' : '?';
  }
  tick(): void {
    visits.push([this.kind(), this.handle]);
    this.age += 1;
  }
  /** Create an object of the own class: it must not be visited by this pass. */
  breed(): void {
    visits.push([this.kind(), this.handle]);
    this.runtime.create(this instanceof Fish ? Fish : Shark, { age: 1000 });
  }
  /** Delete itself if the age is even. */
  dieIfEven(): void {
    visits.push([this.kind(), this.handle]);
    if (this.age % 2 === 0) this.destroy();
  }
  act(): void {
    visits.push([this.kind(), this.handle]);
  }
}

class Fish extends Agent.extend({ eggs: u8, prey: ref(() => Shark) }) {
  /** Eat the prey: deletes an object of another type during the Fish pass. */
  override act(): void {
    super.act();
    const p = this.prey;
    if (p !== null) {
      p.destroy();
      this.prey = null;
    }
  }
}

class Shark extends Agent.extend({ energy: f32 }) {}

async function agents(fish: number, sharks: number): Promise<Runtime> {
  const rt = await createRuntime({ classes: [Agent, Fish, Shark], heap: MIN_HEAP_BYTES });
  await rt.parallelNew(Fish, fish, (f, i) => {
    f.age = i;
  });
  await rt.parallelNew(Shark, sharks, (s, i) => {
    s.age = 100 + i;
  });
  visits = [];
  return rt;
}

function handlesOf(rt: Runtime, cls: SmmoClass<Agent>): number[] {
  const hs: number[] = [];
  rt.deviceDo(cls, (o) => hs.push(o.handle));
  return hs.sort((a, b) => a - b);
}

function sorted(xs: number[]): number[] {
  return [...xs].sort((a, b) => a - b);
}

/** The kinds in `visits`, run-length encoded: ['Fish', 'Shark'] = one pass per class. */
function passes(): string[] {
  const out: string[] = [];
  for (const [k] of visits) if (out[out.length - 1] !== k) out.push(k);
  return out;
}

test.serial('parallelDo over an abstract class visits every Fish and every Shark once, one pass per concrete class', async (t) => {
  const rt = await agents(70, 45);
  const fish = handlesOf(rt, Fish);
  const sharks = handlesOf(rt, Shark);
  t.is(rt.count(Agent), 115);
  await rt.parallelDo(Agent, 'tick');
  t.deepEqual(passes(), ['Fish', 'Shark']);
  t.deepEqual(sorted(visits.filter(([k]) => k === 'Fish').map(([, h]) => h)), fish);
  t.deepEqual(sorted(visits.filter(([k]) => k === 'Shark').map(([, h]) => h)), sharks);
  // The method ran on the objects: every age went up by one.
  rt.deviceDo(Fish, (f) => t.true(f.age >= 1 && f.age <= 70));
  rt.deviceDo(Shark, (s) => t.true(s.age >= 101 && s.age <= 145));
  // A pass over one concrete class visits only that class.
  visits = [];
  await rt.parallelDo(Shark, 'tick');
  t.deepEqual(passes(), ['Shark']);
  t.is(visits.length, 45);
  rt.validateHeap();
  await rt.close();
});

test.serial('objects created during a pass are not visited by it', async (t) => {
  const rt = await agents(40, 33);
  const before = [...handlesOf(rt, Fish), ...handlesOf(rt, Shark)].sort((a, b) => a - b);
  await rt.parallelDo(Agent, 'breed');
  t.is(visits.length, 73, 'one visit per object that existed when the call started');
  t.deepEqual(sorted(visits.map(([, h]) => h)), before);
  t.is(rt.count(Fish), 80);
  t.is(rt.count(Shark), 66);
  rt.validateHeap();
  // The next pass sees the new objects.
  visits = [];
  await rt.parallelDo(Agent, 'tick');
  t.is(visits.length, 146);
  // Created into the same blocks as well as new ones: ages 1000 were never ticked during 'breed'.
  let newborn = 0;
  rt.deviceDo(Agent, (a) => {
    if (a.age === 1001) newborn++;
  });
  t.is(newborn, 73);
  await rt.close();
});

test.serial('an object may delete itself during a pass; a pass where every object deletes itself frees every block', async (t) => {
  const rt = await agents(100, 64);
  await rt.parallelDo(Agent, 'dieIfEven');
  t.is(visits.length, 164);
  t.is(rt.count(Fish), 50); // ages 0…99: the odd half survive
  t.is(rt.count(Shark), 32);
  rt.deviceDo(Agent, (a) => t.is(a.age % 2, 1));
  rt.validateHeap();
  // Make every age even, then everyone deletes itself: blocks are emptied mid-pass.
  await rt.parallelDo(Agent, 'tick');
  visits = [];
  await rt.parallelDo(Agent, 'dieIfEven');
  t.is(visits.length, 82);
  t.is(rt.count(Agent), 0);
  rt.validateHeap();
  t.is(rt.stats().heap.usedBlocks, 0);
  t.is(rt.heap.free.count(), rt.heap.numBlocks - 1);
  await rt.close();
});

test.serial('deleting objects of another type during a pass: they are not visited later in the same call', async (t) => {
  const rt = await agents(20, 30);
  const fish = handlesOf(rt, Fish);
  const sharks = handlesOf(rt, Shark);
  // Fish i hunts Shark 3·i (for 3·i < 30): 10 Sharks are eaten during the Fish pass.
  fish.forEach((h, i) => {
    if (3 * i < sharks.length) rt.get(Fish, h).prey = rt.get(Shark, sharks[3 * i]!);
  });
  const eaten = new Set(sharks.filter((_, j) => j % 3 === 0));
  await rt.parallelDo(Agent, 'act');
  t.deepEqual(passes(), ['Fish', 'Shark']);
  const sharkVisits = visits.filter(([k]) => k === 'Shark').map(([, h]) => h);
  t.is(sharkVisits.length, 20);
  t.false(
    sharkVisits.some((h) => eaten.has(h)),
    'an eaten Shark was visited',
  );
  t.is(rt.count(Shark), 20);
  rt.validateHeap();
  await rt.close();
});

// ------------------------------------------------------------------ a full heap

test('heap full → HeapExhaustedError naming the type and heap size; the heap stays usable', async (t) => {
  const rt = await smallRuntime();
  const bigs: Big[] = [];
  let err: unknown;
  for (let i = 0; i < 10000; i++) {
    try {
      bigs.push(rt.create(Big, { id: i }));
    } catch (e) {
      err = e;
      break;
    }
  }
  t.true(err instanceof HeapExhaustedError, `expected HeapExhaustedError, got ${String(err)}`);
  const e = err as HeapExhaustedError;
  t.is(bigs.length, 352, '176 blocks × 2 slots');
  t.is(e.typeName, 'Big');
  t.is(e.heapBytes, MIN_HEAP_BYTES);
  t.regex(e.message, /Big/);
  t.regex(e.message, new RegExp(String(MIN_HEAP_BYTES)));
  t.regex(e.message, /larger heap|--heap/, 'says how to ask for more');
  rt.validateHeap();
  // Another type fails too (no free block and no Small block yet), and again nothing breaks.
  t.throws(() => rt.create(Small), { instanceOf: HeapExhaustedError, message: /Small/ });
  t.throws(() => rt.create(Big), { instanceOf: HeapExhaustedError });
  rt.validateHeap();
  t.is(rt.count(Big), 352);
  // Free one slot: the next Big goes there.
  rt.destroy(bigs[7]!);
  const again = rt.create(Big, { id: -1 });
  t.is(again.id, -1);
  t.throws(() => rt.create(Big), { instanceOf: HeapExhaustedError });
  // Free a whole block (two Bigs): now a Small block can be made from it.
  const byBlock = new Map<number, Big[]>();
  for (const b of bigs) byBlock.set(b.handle >>> 5, [...(byBlock.get(b.handle >>> 5) ?? []), b]);
  const [, pair] = [...byBlock].find(([bid, bs]) => bs.length === 2 && bid !== again.handle >>> 5)!;
  for (const b of pair) rt.destroy(b);
  rt.validateHeap();
  const s = rt.create(Small, { a: 1.5 });
  t.is(s.a, 1.5);
  t.is(s.handle >>> 5, pair[0]!.handle >>> 5, 'the freed block was re-used for the other type');
  t.is(rt.count(Small), 1);
  rt.validateHeap();
  await rt.close();
});

test('allocateMany and parallelNew roll back on exhaustion and leave the heap valid', async (t) => {
  const rt = await smallRuntime();
  await rt.parallelNew(Mid, 100);
  await rt.parallelNew(Small, 33); // two Small blocks, one of them partly free
  const before = rt.objectCounts();
  const usedBefore = rt.stats().heap.usedBlocks;
  // More Bigs than fit: everything reserved in this call is given back.
  const e = await t.throwsAsync(
    rt.parallelNew(Big, 1000, (b, i) => (b.id = i)),
    { instanceOf: HeapExhaustedError },
  );
  t.is(e.typeName, 'Big');
  t.deepEqual(rt.objectCounts(), before);
  t.is(rt.stats().heap.usedBlocks, usedBefore);
  rt.validateHeap();
  // The allocator's own entry point, with an offset into the output array.
  const out = new Uint32Array(2000);
  const bigT = rt.table.byClass(Big)!;
  t.throws(() => rt.main.allocator.allocateMany(bigT, 1500, out, 10), { instanceOf: HeapExhaustedError });
  t.deepEqual(rt.objectCounts(), before);
  rt.validateHeap();
  // And then it works: exactly as many Bigs as there are free blocks × 2.
  const freeBlocks = rt.heap.free.count();
  rt.main.allocator.allocateMany(bigT, freeBlocks * 2, out, 0);
  const handles = new Set(out.subarray(0, freeBlocks * 2));
  t.is(handles.size, freeBlocks * 2, 'unique handles');
  t.is(rt.count(Big), freeBlocks * 2);
  t.is(rt.heap.free.count(), 0);
  rt.validateHeap();
  // Small still has room in its partly used block: allocating into it works on a full heap.
  await rt.parallelNew(Small, 31);
  t.throws(() => rt.create(Small), { instanceOf: HeapExhaustedError });
  rt.validateHeap();
  await rt.close();
});

// ------------------------------------------------------------------ invalid deletes

test('double delete → InvalidHandleError, also in unchecked mode; the heap is unchanged', async (t) => {
  const rt = await smallRuntime({ keepBlocks: 0 });
  const a = rt.create(Small, { a: 1 });
  const b = rt.create(Small, { a: 2 });
  rt.destroy(a);
  // b keeps the block alive: the slot is free → 'deleted'.
  const e1 = t.throws(() => rt.destroy(a), { instanceOf: InvalidHandleError });
  t.is(e1.reason, 'deleted');
  t.is(e1.handle, a.handle);
  rt.validateHeap();
  t.is(rt.count(Small), 1);
  rt.destroy(b);
  // Now the block is free → 'free-block'.
  const e2 = t.throws(() => rt.destroy(b), { instanceOf: InvalidHandleError });
  t.is(e2.reason, 'free-block');
  rt.validateHeap();
  t.is(rt.heap.free.count(), rt.heap.numBlocks - 1);
  // A handle outside the heap is refused with a typed error, not a RangeError.
  const e3 = t.throws(() => rt.main.allocator.releaseHandle(rt.heap.numBlocks * 32 + 3), { instanceOf: InvalidHandleError });
  t.is(e3.reason, 'forged');
  // A slot that a Big block does not have (its bit is pre-set) must not be "freed".
  const big = rt.create(Big);
  const e4 = t.throws(() => rt.main.allocator.releaseHandle((big.handle & ~31) + 5), { instanceOf: InvalidHandleError });
  t.is(e4.reason, 'forged');
  // Every slot past the class's 2, the first one included.
  for (let slot = 2; slot < 32; slot++) {
    const e = t.throws(() => rt.main.allocator.releaseHandle((big.handle & ~31) + slot), { instanceOf: InvalidHandleError });
    t.regex(e.message, new RegExp(`slot ${slot} does not exist in block \\d+ \\(2 slots\\)`));
  }
  rt.validateHeap();
  await rt.close();
});

/** Guard against a vacuous model: the checker does notice a wrong model. */
test('the model checker detects a discrepancy (sanity check of the harness)', async (t: ExecutionContext) => {
  const rt = await smallRuntime();
  const model = new Model();
  const s = rt.create(Small, { a: 3, b: 3 });
  model.objects.set(s.handle, { cls: 'Small', x: 3 });
  t.is(checkAgainstModel(rt, model, 'ok'), '');
  model.objects.get(s.handle)!.x = 4;
  t.regex(checkAgainstModel(rt, model, 'wrong value'), /disagree/);
  model.objects.delete(s.handle);
  t.regex(checkAgainstModel(rt, model, 'missing'), /live in bitmaps|not in the model/);
  await rt.close();
});
