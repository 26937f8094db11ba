/**
 * Generated WGSL kernels (runtime/compiler/emit-wgsl.ts, GpuRunner's `generate`): a method
 * without a hand-written WGSL kernel runs on the GPU as WGSL made from its compiled form.
 * Each pass runs on a TypeScript runtime and a WebGPU runtime from the same start, and
 * every field of every object must then be equal (integers exactly; floats exactly too
 * where the method rounds every step with Math.fround, as here). The methods exercise the
 * subset's corners: unsigned hashes with Math.imul and >>>, signed/unsigned comparisons,
 * Math.floor of negative quotients, 1- and 2-byte fields written by neighbouring lanes,
 * inline arrays with computed indices, references to a base class whose field offsets
 * differ per subclass, labelled break/continue, a switch with shared cases, side effects inside
 * && and ?:, creation and deletion, an object argument, a rank table, deviceDo; and the failures JavaScript would
 * throw (GpuLaneError), and the visible fallback of a method outside the subset.
 */
import test from 'ava';
import { array, bool, createRuntime, f32, f64, i16, i32, i8, object, rankTable, ref, u16, u32, u8, type Runtime } from '../index.js';
import { lowerForBackend } from '../runtime/compiler/index.js';
import { emitWgsl, WgslUnsupported } from '../runtime/compiler/emit-wgsl.js';
import { GpuLaneError, STATUS } from '../runtime/webgpu/errors.js';
import { gpuSuite } from './helpers/gpu-suite.js';
import { describeChild, lastJson, smmo } from './helpers/child.js';

const { gtest, title, gpu } = await gpuSuite('webgpu-generated.test');

const N = 300;
const LIMIT = 0x80000000;

function mix(x: number): number {
  x = Math.imul(x ^ (x >>> 16), 0x7feb352d);
  x = Math.imul(x ^ (x >>> 15), 0x846ca68b);
  return (x ^ (x >>> 16)) >>> 0;
}

export abstract class Base extends object({ v: i32, u: i32 }, { abstract: true }) {}
/** Small: 32 slots per block. */
export class Light extends Base.extend({ tag: u8, pad: array(u32, 6) }) {}
/** Large: fewer slots per block, so Base.u sits at another offset than in Light. */
export class Heavy extends Base.extend({ pad: array(f32, 64) }) {}

/** Addressed by rank (rankTable); created at the start only. */
export class Slot extends object({ val: i32, pad: array(u32, 8) }) {}
const SLOTS = 24;

export class Holder extends object({ total: i32, seen: bool, pad: array(u32, 8) }) {}

export class Item extends object({
  id: u32,
  key: u32,
  s: i32,
  small: u8,
  tiny: i8,
  half: u16,
  shalf: i16,
  flag: bool,
  q: i32,
  f: f32,
  arr: array(i32, 4),
  next: ref<Item>('Item'),
  link: ref<Base>('Base'),
  hits: i32,
}) {
  /** Integers: an unsigned hash, signed remainders, floor division, sub-word fields, mixed comparisons. */
  ints(step: number): void {
    const h = mix(this.key + step);
    this.key = h;
    this.s = ((h | 0) % 1000) - 500;
    this.q = Math.floor(this.s / 7) + ((this.s / 3) | 0);
    this.small = h & 0x1ff;
    this.tiny = this.s;
    this.half = h >>> 7;
    this.shalf = -(h & 0x7fff);
    this.flag = h > LIMIT === this.s < 0;
    let c = 0;
    if (this.s < h) c += 1;
    if (h >= -1) c += 2;
    if ((h | 0) < this.s) c += 4;
    this.hits = c + (Math.max(this.small, this.tiny) - Math.min(this.half, this.shalf));
    // Remainders with the dividend's sign, unsigned against signed both ways.
    this.q += (h % (this.s | 1)) + (this.s % ((h >>> 1) + 1));
  }

  /** Control flow: nested labelled loops, continue/break to the outer loop, a switch with fall-through. */
  loops(limit: number): void {
    let acc = 0;
    outer: for (let i = 0; i < limit; i++) {
      for (let j = 0; j < 6; j++) {
        if ((this.key >>> (i + j)) & 1) continue outer;
        if (j === 4 && i > 2) break outer;
        acc += i * 8 + j;
      }
    }
    switch (this.id % 5) {
      case 0:
      case 1:
        acc += 10;
        break;
      case 2: {
        acc -= 3;
        if (acc < 0) break;
        acc *= 2;
        break;
      }
      default:
        acc = -acc;
    }
    this.s = acc;
    this.bump(); // an inlined call that returns nothing
  }

  private bump(): void {
    this.hits += 1;
  }

  /** Inline arrays with computed indices, another object's array, references through a base class with per-subclass offsets. */
  arrays(k: number): void {
    const a = this.arr;
    for (let i = 0; i < 4; i++) a.set((i + k) % 4, a.get(i) + i * k);
    const n = this.next;
    if (n !== null) this.q = (n.key % 1000) + n.id * k; // fields this pass does not write (no race)
    const l = this.link;
    if (l !== null && this.id < 40) {
      // Items 0 … 39 link to distinct bases (id mod 40): one writer per base.
      l.u = l.v + this.id; // Light and Heavy hold `u` at different offsets
      this.hits = l.u;
    }
  }

  /** && and ?: whose right-hand sides write, and a shared object argument written by one lane. */
  effects(box: Holder): void {
    let n = 0;
    const ok = this.id % 2 === 0 && (n = this.id + 1) > 5;
    this.flag = ok;
    this.q = this.id % 3 === 0 ? (n += 2) : n--;
    this.hits = n;
    if (this.id === 7) {
      box.total = box.total + 1;
      box.seen = true;
    }
  }

  /** Floats, rounded to f32 at every step. */
  floats(dt: number): void {
    const x = Math.fround(this.f * dt);
    this.f = Math.fround(Math.fround(x + Math.fround(this.id / 8)) - Math.fround(Math.sqrt(Math.fround(this.id))));
  }

  /** A host do-all beside the GPU's passes (rt.doAll runs on the calling thread whatever the backend). */
  tick(): void {
    this.hits += 1;
  }

  /** Creation and deletion: every third item makes a new one; every fifth goes. */
  churn(): void {
    if (this.id % 3 === 0) {
      const c = this.runtime.create(Item);
      c.id = this.id + 100000;
      c.key = mix(this.key);
    }
    if (this.id % 5 === 0) this.destroy();
  }

  /** for…of over a rank table, and an array pattern over one: JavaScript's iterator protocol, not generated. */
  iteratesTable(n: number): void {
    const t = rankTable(this.runtime, Slot, n);
    let sum = 0;
    for (const h of t) sum += h;
    this.key = sum;
  }
  destructuresTable(n: number): void {
    const [first = 0] = rankTable(this.runtime, Slot, n);
    this.key = first;
  }

  /** A rank table (runtime/rank-table.ts) and the exact quotient (id - id % 7) / 7. */
  ranked(n: number): void {
    const ctx = this.runtime;
    const t = rankTable(ctx, Slot, n);
    const id = this.id;
    const x = id % 7;
    const y = (id - x) / 7;
    this.q = ctx.get(Slot, t[(y * 3 + x) % n]!).val + y;
  }

  /** A comparison with a constant beyond 32 bits: exact in 64-bit arithmetic on the GPU (W8). */
  wide(turn: number): void {
    // Inline: a local would hold the GPU's 32-bit value (W1); a comparison sees the whole expression (W8).
    const k = this.key + 1;
    this.flag = k * turn <= 4294967296;
    // Products of up to 52 bits (turn about 2²⁰) against several boundaries: every carry of the 64-bit product counts.
    this.hits =
      (k * turn > 2 ** 50 ? 1 : 0) +
      (k * turn >= 3 * 2 ** 49 ? 2 : 0) +
      (k * turn < 2 ** 51 ? 4 : 0) +
      (this.s * turn - 3 > -2147483650 ? 8 : 0);
  }

  /** deviceDo over another class (W9), with an early return (the next object). */
  census(): void {
    let total = 0;
    let n = 0;
    this.runtime.deviceDo(Slot, (sl) => {
      if ((sl.val + this.id) % 3 === 0) return;
      total += sl.val;
      n++;
    });
    this.q = total;
    this.hits = n;
  }

  /** Optional chaining compared strictly: `x?.f === y` (no undefined on the GPU). */
  optional(): void {
    this.flag = this.next?.id !== 5;
    this.hits = (this.link?.v === 1 ? 1 : 0) + (this.next?.key === this.key ? 2 : 0);
  }

  /** Local typed arrays (W11): written and read back with computed indices. */
  scratch(n: number): void {
    const a = new Int32Array(n);
    for (let i = 0; i < n; i++) a[i] = this.s * i - (this.key & 7);
    let acc = 0;
    for (let i = n - 1; i >= 0; i--) acc = (acc * 31 + a[i]!) | 0;
    const u = new Uint32Array(3);
    u[2] = this.key;
    const f = new Float32Array(2);
    f[1] = this.f * 0.5;
    this.q = acc + (u[2]! % 1000) + u[0]!;
    this.f = f[1]! + f[0]!;
  }

  /** Math.sin, `%` and `**` of floats without f64 fields: computed in f32 under double-single (W10 has no versions of them). */
  trig(): void {
    this.f = Math.sin(this.f) + (this.f % 1.5) + this.f ** 2;
  }

  /** `+=` on a typed array's element: outside the subset (W11 has a[i] and a[i] = v only). */
  scratchPlus(): void {
    const a = new Int32Array(2);
    a[0]! += 1;
    this.q = a[0]!;
  }

  /** Such a constant in arithmetic (not a comparison): outside the GPU's subset. */
  wider(): void {
    this.q = (this.key + 4294967296) % 7;
  }

  /**
   * What JavaScript would throw: 1 a null dereference, 2 an index out of bounds, 3 a throw
   * statement; where the GPU cannot follow (W11): 4 a typed array past the cap, 5 one read
   * outside its length.
   */
  fail(which: number): void {
    if (this.id !== 11) return;
    if (which === 1) this.s = this.next!.s;
    else if (which === 2) this.s = this.arr.get(which + 4);
    else if (which === 3) throw new Error(`item ${this.id} failed`);
    else if (which === 4) {
      const big = new Uint32Array(which * 1000);
      big[0] = 1;
      this.s = big[0]!;
    } else if (which === 5) {
      const small = new Int32Array(2);
      this.s = small[which]! | 0;
    }
  }
}

/** f64 fields: double-single arithmetic on the GPU (W10); Math.sin of one is outside the subset. */
export class Wide extends object({ x: f64, pad: array(u32, 8) }) {
  grow(): void {
    this.x = this.x * 1.5 + 1;
  }

  wave(): void {
    this.x = Math.sin(this.x);
  }
}

/**
 * W10's operations on f64 fields, each result in a field of its own: compared with
 * JavaScript within double-single's precision (about 48 bits), comparisons and integer
 * results exactly.
 */
export class Dbl extends object({
  id: u32,
  a: f64,
  b: f64,
  sum: f64,
  diff: f64,
  prod: f64,
  quot: f64,
  root: f64,
  fl: f64,
  mix: f64,
  copy: f64,
  single: f32,
  whole: i32,
  cmp: i32,
  count: f64,
}) {
  arith(k: number): void {
    const a = this.a;
    const b = this.b;
    this.sum = a + b;
    this.diff = a - b;
    this.prod = a * b * k;
    this.quot = a / b;
    this.root = Math.sqrt(Math.abs(a));
    this.fl = Math.floor(a * 1000) + Math.ceil(b) - Math.trunc(-a) + Math.round(b * 3);
    this.mix = Math.min(a, b) * 2 - Math.max(a, b) / 3 + Math.hypot(a, b) + (a > 0 ? 0.1 : -0.3);
    this.copy = a;
    this.single = a * k;
    this.whole = Math.trunc(a * 1000);
    this.cmp = (a < b ? 1 : 0) + (a <= b ? 2 : 0) + (a > b ? 4 : 0) + (a >= b ? 8 : 0) + (a === b ? 16 : 0) + (a !== b ? 32 : 0);
    let n = this.count;
    n++;
    this.count = n + this.whole / 7;
  }
}

const CLASSES = [Base, Light, Heavy, Slot, Holder, Item, Wide, Dbl];

/** A runtime of the fixture's classes on `backend`, with no objects yet. */
function emptyRuntime(backend: 'ts' | 'webgpu'): Promise<Runtime> {
  return createRuntime({
    classes: CLASSES,
    heap: 8 << 20,
    threads: 1,
    backend,
    ...(backend === 'webgpu' ? { webgpu: { gpu: gpu() } } : {}),
  });
}

async function runtime(backend: 'ts' | 'webgpu'): Promise<Runtime> {
  const rt = await emptyRuntime(backend);
  const items: Item[] = [];
  const bases: Base[] = [];
  for (let i = 0; i < 40; i++) {
    const b = i % 2 === 0 ? rt.create(Light) : rt.create(Heavy);
    b.v = i * 3 - 50;
    bases.push(b);
  }
  for (let i = 0; i < N; i++) {
    const it = rt.create(Item);
    it.id = i;
    it.key = mix(i + 1);
    it.f = Math.fround(i / 3);
    for (let k = 0; k < 4; k++) it.arr.set(k, i * 4 + k - 300);
    items.push(it);
  }
  items.forEach((it, i) => {
    it.next = i % 7 === 0 ? null : items[(i * 13) % N]!;
    it.link = i % 5 === 0 ? null : bases[i % bases.length]!;
  });
  for (let i = 0; i < SLOTS; i++) rt.create(Slot).val = i * 1000 - 7;
  rt.create(Holder);
  const w = rt.create(Wide);
  w.x = 0.25;
  return rt;
}

/** Every object's fields as text, sorted by class and `key` (handles are left out where objects are created). */
function state(rt: Runtime, withHandles: boolean): string[] {
  const rows: string[] = [];
  const of = (o: object, fields: string[]): string =>
    fields
      .map((f) => {
        const v = (o as Record<string, unknown>)[f];
        if (v === null || typeof v !== 'object') return `${f}=${String(v)}`;
        if ('handle' in v && !withHandles) return `${f}=obj`;
        if ('handle' in v) return `${f}=#${(v as { handle: number }).handle}`;
        const arr = v as { length: number; get(i: number): unknown };
        return `${f}=[${Array.from({ length: arr.length }, (_, i) => arr.get(i)).join(',')}]`;
      })
      .join(' ');
  rt.deviceDo(Item, (it) =>
    rows.push(`Item ${of(it, ['id', 'key', 's', 'small', 'tiny', 'half', 'shalf', 'flag', 'q', 'f', 'arr', 'next', 'link', 'hits'])}`),
  );
  rt.deviceDo(Base, (b) => rows.push(`${b.constructor.name.replace(/\W/g, '')} ${withHandles ? b.handle : ''} ${of(b, ['v', 'u'])}`));
  rt.deviceDo(Holder, (h) => rows.push(`Holder ${of(h, ['total', 'seen'])}`));
  rt.deviceDo(Wide, (w) => rows.push(`Wide ${of(w, ['x'])}`));
  return rows.sort();
}

/** Run the same pass on both runtimes; the GPU one must have run it as generated WGSL. */
async function both(ref: Runtime, rt: Runtime, method: string, ...args: unknown[]): Promise<void> {
  const map = (r: Runtime): unknown[] => args.map((a) => (a === HOLDER ? holderOf(r) : a));
  await ref.parallelDo(Item, method as never, ...map(ref));
  await rt.sync();
  await rt.parallelDo(Item, method as never, ...map(rt));
  await rt.sync();
}

const HOLDER = Symbol('holder');
function holderOf(rt: Runtime): Holder {
  let h = 0;
  rt.deviceDo(Holder, (x) => void (h = x.handle)); // deviceDo's view moves on: keep the handle
  return rt.get(Holder, h);
}

function generated(rt: Runtime): Record<string, number> {
  return rt.stats().backend.webgpu!.generated;
}

gtest(title('every pass of the fixture equals TypeScript field for field, run as generated WGSL'), async (t) => {
  const ref = await runtime('ts');
  const rt = await runtime('webgpu');
  try {
    t.deepEqual(state(rt, true), state(ref, true), 'the same start');
    for (let step = 0; step < 3; step++) {
      await both(ref, rt, 'ints', step * 977 + 3);
      t.deepEqual(state(rt, true), state(ref, true), `ints, step ${step}`);
      await both(ref, rt, 'loops', 5 + step);
      t.deepEqual(state(rt, true), state(ref, true), `loops, step ${step}`);
      await both(ref, rt, 'arrays', step + 1);
      t.deepEqual(state(rt, true), state(ref, true), `arrays, step ${step}`);
      await both(ref, rt, 'effects', HOLDER);
      t.deepEqual(state(rt, true), state(ref, true), `effects, step ${step}`);
      await both(ref, rt, 'floats', 0.75);
      t.deepEqual(state(rt, true), state(ref, true), `floats, step ${step}`);
      await both(ref, rt, 'ranked', SLOTS);
      t.deepEqual(state(rt, true), state(ref, true), `ranked, step ${step}`);
      await both(ref, rt, 'wide', step === 0 ? 3 : 1000003 + step * 77777);
      t.deepEqual(state(rt, true), state(ref, true), `wide, step ${step}`);
      await both(ref, rt, 'optional');
      t.deepEqual(state(rt, true), state(ref, true), `optional, step ${step}`);
      await both(ref, rt, 'census');
      t.deepEqual(state(rt, true), state(ref, true), `census, step ${step}`);
      await both(ref, rt, 'scratch', 5 + step);
      t.deepEqual(state(rt, true), state(ref, true), `scratch, step ${step}`);
    }
    const g = generated(rt);
    for (const m of ['ints', 'loops', 'arrays', 'effects', 'floats', 'ranked', 'wide', 'optional', 'census', 'scratch'])
      t.is(g[`Item.${m}`], 3, `Item.${m} ran as generated WGSL`);
    t.deepEqual(rt.stats().backend.webgpu!.fallbacks, {});
    t.is(rt.stats().backend.methods['Item.ints'], 'webgpu');
    // A float argument that is not an integer and one that is: two kernels, both generated.
    await both(ref, rt, 'floats', 2);
    t.deepEqual(state(rt, true), state(ref, true), 'floats with an integer argument');
    rt.validateHeap();
  } finally {
    await rt.close();
    await ref.close();
  }
});

gtest(title('creation and deletion in a generated kernel: the same objects as TypeScript, the heap valid'), async (t) => {
  const ref = await runtime('ts');
  const rt = await runtime('webgpu');
  try {
    for (let step = 0; step < 3; step++) {
      // A host do-all before and after the GPU's: the second must not reuse the first's
      // block lists (the GPU opened blocks; the download moves the block-set epoch, thread.ts L1).
      for (const r of [ref, rt]) r.doAll(Item, 'tick');
      await both(ref, rt, 'churn');
      for (const r of [ref, rt]) r.doAll(Item, 'tick');
      t.is(rt.count(Item), ref.count(Item), `step ${step}: as many items`);
      // Handles of created objects follow the GPU's allocation order: compare without them.
      t.deepEqual(state(rt, false), state(ref, false), `step ${step}`);
      rt.validateHeap();
      await both(ref, rt, 'ints', step);
      t.deepEqual(state(rt, false), state(ref, false), `ints after churn, step ${step}`);
    }
    t.is(generated(rt)['Item.churn'], 3);
  } finally {
    await rt.close();
    await ref.close();
  }
});

/** Dbl's starting values, by index: five kinds of (a, b) pairs. */
function dblStart(i: number): { a: number; b: number; short: boolean } {
  const u = (j: number): number => mix(i * 4 + j) / 2 ** 32 + mix(i * 4 + j + 2) / 2 ** 64; // 53 random bits in [0, 1)
  const signed = (j: number): number => (mix(i * 7 + j) & 1 ? -1 : 1) * (1 + u(j)) * 2 ** (Math.floor(u(j + 1) * 60) - 30);
  switch (i % 5) {
    case 0: // full 53-bit significands, magnitudes 2⁻³⁰ … 2³⁰
      return { a: signed(0), b: signed(1), short: false };
    case 1: // equal
      return { a: signed(0), b: signed(0), short: false };
    case 2: // apart by 2⁻³⁰ relative: equal in f32, not in double-single
      return { a: signed(0), b: signed(0) * (1 + 2 ** -30), short: false };
    case 3: // 47-bit significands: a pair holds them exactly
      return { a: (mix(i) * 2 ** 15 + (mix(i + 1) >>> 17)) * 2 ** -30 * (i & 8 ? -1 : 1), b: 3 + i / 16, short: true };
    default: // halves and integers: the rounding functions' edges
      return { a: (i % 13) / 2 - 3, b: -((i % 11) / 2), short: true };
  }
}

gtest(title('f64 fields on the GPU: double-single arithmetic within 2⁻⁴⁴ of JavaScript, comparisons and integers exact'), async (t) => {
  const make = async (backend: 'ts' | 'webgpu'): Promise<Runtime> => {
    const rt = await emptyRuntime(backend);
    for (let i = 0; i < 400; i++) {
      const d = rt.create(Dbl);
      const { a, b } = dblStart(i);
      d.id = i;
      d.a = a;
      d.b = b;
    }
    return rt;
  };
  const ref = await make('ts');
  const rt = await make('webgpu');
  try {
    const FIELDS = ['sum', 'diff', 'prod', 'quot', 'root', 'fl', 'mix', 'copy', 'single', 'whole', 'cmp', 'count'] as const;
    const rows = (r: Runtime): Map<number, Record<string, number>> => {
      const m = new Map<number, Record<string, number>>();
      r.deviceDo(Dbl, (d) => void m.set(d.handle, Object.fromEntries((['id', 'a', 'b', ...FIELDS] as const).map((f) => [f, d[f]]))));
      return m;
    };
    for (const k of [0.3, 7, -1.25e-7]) {
      await ref.parallelDo(Dbl, 'arith', k);
      await rt.parallelDo(Dbl, 'arith', k);
      await rt.sync();
      const want = rows(ref);
      const got = rows(rt);
      t.is(got.size, want.size);
      const bad: string[] = [];
      for (const [h, w] of want) {
        const g = got.get(h)!;
        const { short } = dblStart(w['id']!);
        const near = (f: string, scale: number, bits: number): void => {
          if (!Number.isFinite(w[f]!)) exact(f);
          else if (!(Math.abs(g[f]! - w[f]!) <= 2 ** -bits * scale))
            bad.push(`#${h} ${f}: ${g[f]} vs ${w[f]} (a ${w['a']}, b ${w['b']}, k ${k})`);
        };
        const exact = (f: string): void => {
          if (!Object.is(g[f], w[f])) bad.push(`#${h} ${f}: ${g[f]} vs ${w[f]} exactly (a ${w['a']}, b ${w['b']}, k ${k})`);
        };
        const ab = Math.abs(w['a']!) + Math.abs(w['b']!);
        near('sum', ab, 46);
        near('diff', ab, 46);
        for (const f of ['prod', 'quot', 'root', 'count']) near(f, Math.abs(w[f]!), 44);
        near('mix', 4 * ab + 0.3, 45);
        if (short) exact('copy');
        else near('copy', Math.abs(w['copy']!), 47);
        for (const f of ['fl', 'single', 'whole', 'cmp']) exact(f);
      }
      t.deepEqual(bad.slice(0, 10), [], `k ${k}: ${bad.length} of ${want.size * FIELDS.length} results off`);
    }
    t.deepEqual(rt.stats().backend.webgpu!.fallbacks, {});
    t.is(generated(rt)['Dbl.arith'], 3);
  } finally {
    await rt.close();
    await ref.close();
  }
});

gtest(title("what JavaScript throws stops the kernel's invocation: GpuLaneError with the reason and the pass"), async (t) => {
  const rt = await runtime('webgpu');
  try {
    let h11 = 0;
    rt.deviceDo(Item, (x) => void (x.id === 11 ? (h11 = x.handle) : 0)); // deviceDo's view moves on: keep the handle
    rt.get(Item, h11).next = null;
    const cases: [number, number][] = [
      [1, STATUS.NULL_DEREF],
      [2, STATUS.RANGE],
      [3, STATUS.THROW],
      [4, STATUS.LOCAL_ARRAY],
      [5, STATUS.LOCAL_ARRAY],
    ];
    for (const [which, code] of cases) {
      await rt.parallelDo(Item, 'fail', which);
      const e = await t.throwsAsync(rt.sync(), { instanceOf: GpuLaneError });
      t.is(e!.codes, code, e!.message);
      t.is(e!.failedInvocations, 1);
      t.deepEqual(e!.passes, ['Item.fail']);
      t.regex(e!.message, /backend 'ts'/);
      // Cases 1–3: the TypeScript method throws there too; 4 and 5 are the GPU's limits (W11), JavaScript goes on.
      await rt.sync();
    }
    // A rank table of another length than the method says (the TypeScript method throws UsageError).
    await rt.parallelDo(Item, 'ranked', SLOTS + 1);
    const e = await t.throwsAsync(rt.sync(), { instanceOf: GpuLaneError });
    t.is(e!.codes, STATUS.RANKS, e!.message);
    await rt.sync();
    // A passing call reports nothing.
    await rt.parallelDo(Item, 'fail', 0);
    await t.notThrowsAsync(rt.sync());
  } finally {
    await rt.close();
  }
});

gtest(title('a method outside the subset runs in TypeScript, visibly, with the reason'), async (t) => {
  const ref = await runtime('ts');
  const rt = await runtime('webgpu');
  try {
    // x · 1.5 + 1 from 0.25: exact in double-single (few significant bits).
    await ref.parallelDo(Wide, 'grow');
    await rt.parallelDo(Wide, 'grow');
    await rt.sync();
    t.deepEqual(state(rt, true), state(ref, true));
    t.is(generated(rt)['Wide.grow'], 1);
    await ref.parallelDo(Wide, 'wave');
    await rt.parallelDo(Wide, 'wave');
    await rt.sync();
    t.deepEqual(state(rt, true), state(ref, true));
    const f = rt.stats().backend.webgpu!.fallbacks['Wide.wave'];
    t.truthy(f);
    t.regex(f!.reason, /generated WGSL: Wide\.wave: Math\.sin in a method with f64 fields/);
    t.is(rt.stats().backend.methods['Wide.wave'], 'ts');
    t.is(generated(rt)['Wide.wave'], undefined);
  } finally {
    await rt.close();
    await ref.close();
  }
});

gtest(title('webgpu.generate: false runs such methods in TypeScript'), async (t) => {
  const rt = await createRuntime({
    classes: CLASSES,
    heap: 8 << 20,
    threads: 1,
    backend: 'webgpu',
    webgpu: { gpu: gpu(), generate: false },
  });
  try {
    rt.create(Item).key = 5;
    await rt.parallelDo(Item, 'ints', 1);
    t.regex(rt.stats().backend.webgpu!.fallbacks['Item.ints']!.reason, /declares no kernel/);
    t.deepEqual(generated(rt), {});
  } finally {
    await rt.close();
  }
});

// ------------------------------------------------------------------ the emitter alone (no GPU)

test('emitWgsl: the reasons a method is outside the subset', async (t) => {
  const rt = await createRuntime({ classes: CLASSES, heap: 8 << 20, threads: 1 });
  try {
    const type = (name: string) => rt.table.types.find((x) => x.name === name)!;
    const host = { classOf: (v: unknown) => (typeof v === 'function' ? rt.table.byClass(v as never) : undefined) };
    const irOf = (cls: string, m: string, classes: (string | null)[] = []) => {
      const ir = lowerForBackend(
        rt.table,
        type(cls),
        m,
        classes.map((c) => (c === null ? null : type(c))),
      );
      if ('reason' in ir) throw new Error(ir.reason);
      return ir;
    };
    t.throws(() => emitWgsl(irOf('Wide', 'wave'), [], host), {
      instanceOf: WgslUnsupported,
      message: /Math\.sin in a method with f64 fields/,
    });
    const grow = emitWgsl(irOf('Wide', 'grow'), [], host);
    t.regex(grow.source, /df_store\(.*df_add\(df_mul\(df_load\(/);
    t.deepEqual(emitWgsl(irOf('Dbl', 'arith'), ['f32'], host).args, ['df64'], 'a float argument is two words');
    // Without the argument's class the object argument is a JavaScript value.
    t.throws(() => emitWgsl(irOf('Item', 'effects'), ['i32'], host), { instanceOf: WgslUnsupported, message: /JavaScript/ });
    const ok = emitWgsl(irOf('Item', 'effects', ['Holder']), ['h'], host);
    t.regex(ok.source, /a0: u32/);
    t.false(ok.allocates);
    const churn = emitWgsl(irOf('Item', 'churn'), [], host);
    t.true(churn.allocates && churn.frees && churn.reports);
    t.regex(churn.source, /a_allocate\(\d+u\)/);
    t.throws(() => emitWgsl(irOf('Item', 'wider'), [], host), { instanceOf: WgslUnsupported, message: /beyond 32 bits/ });
    // JavaScript's iterator protocol is never generated (a loop is not dropped), even over a rank table.
    for (const m of ['iteratesTable', 'destructuresTable']) {
      t.throws(() => emitWgsl(irOf('Item', m), ['i32'], host), { instanceOf: WgslUnsupported, message: /iterator protocol/ }, m);
    }
    // Floats: double-single by default (W10), f32 when asked.
    t.regex(emitWgsl(irOf('Item', 'floats'), ['f32'], host).source, /df_mul\(.*\n.*df_sqrt\(/);
    t.notRegex(emitWgsl(irOf('Item', 'floats'), ['f32'], host, 'f32').source, /df_/);
    const trig = emitWgsl(irOf('Item', 'trig'), [], host).source;
    t.regex(trig, /vec2<f32>\(sin\(/);
    t.regex(trig, /\) % bitcast<f32>/);
    t.regex(trig, /pow\(/);
    const scratch = emitWgsl(irOf('Item', 'scratch'), ['i32'], host).source;
    t.regex(scratch, /var l\d+: array<i32, 1024>;/);
    t.regex(scratch, /var l\d+: array<f32, 1024>;/);
    t.regex(scratch, new RegExp(`k_fail\\(${STATUS.LOCAL_ARRAY}u\\)`));
    t.throws(() => emitWgsl(irOf('Item', 'scratchPlus'), [], host), {
      instanceOf: WgslUnsupported,
      message: /the \+= operator on a typed array's element/,
    });
    t.regex(emitWgsl(irOf('Item', 'wide'), ['i32'], host).source, /w_cmp\(w_mul\(/);
    const ranked = emitWgsl(irOf('Item', 'ranked'), ['i32'], host);
    t.is(ranked.ranks?.name, 'Slot');
    t.regex(ranked.source, /arrayLength\(&ranks\)/);
    t.notRegex(ranked.source.slice(ranked.source.indexOf('fn main')), /f32/, 'the exact quotient keeps the index an integer');
    // A throw's message is JavaScript; the throw itself is generated (a status bit).
    const failing = emitWgsl(irOf('Item', 'fail'), ['i32'], host);
    t.regex(failing.source, new RegExp(`k_fail\\(${STATUS.THROW}u\\)`));
    // Constants fold with JavaScript's arithmetic (W3): no f32 literal for an integral quotient.
    const ints = emitWgsl(irOf('Item', 'ints'), ['i32'], host);
    t.regex(ints.source, /mix_cmp/);
    t.regex(ints.source, /floor_div/);
    // No statement follows a break, continue or return in its block (the shader compiler would warn on stdout).
    for (const src of [ok.source, churn.source, failing.source, ints.source, emitWgsl(irOf('Item', 'loops'), ['i32'], host).source]) {
      const lines = src.split('\n');
      lines.forEach((l, i) => {
        if (/^\s*(break|continue|return);$/.test(l)) {
          const next = lines[i + 1]!;
          t.true(next.trim() === '}' || next.trim().startsWith('} else'), `line ${i + 1}: ${l.trim()} then ${next.trim()}`);
        }
      });
    }
  } finally {
    await rt.close();
  }
});

gtest(title('smmo run --gpu-kernels generated: the hand-written kernels replaced where the method allows, the same digest'), async (t) => {
  const args = ['run', 'game-of-life', '--width', '32', '--height', '32', '--iterations', '5', '--json'];
  const ts = await smmo([...args, '--backend', 'ts']);
  const gen = await smmo([...args, '--backend', 'webgpu', '--gpu-kernels', 'generated']);
  t.is(gen.code, 0, describeChild(gen));
  const j = lastJson(gen.stdout);
  t.is(j['digest'], lastJson(ts.stdout)['digest']);
  const g = (j['gpu'] as { generated: Record<string, number> }).generated;
  t.deepEqual(Object.keys(g).sort(), ['Alive.createCandidates', 'Alive.prepare', 'Alive.update', 'Candidate.prepare', 'Candidate.update']);
  const auto = lastJson((await smmo([...args, '--backend', 'webgpu'])).stdout);
  t.deepEqual((auto['gpu'] as { generated: object }).generated, {}, 'auto: the hand-written kernels');
});

gtest(
  title("webgpu.floats 'f32': the same fixture passes in f32 arithmetic (rounded with Math.fround every step: equal); --gpu-floats"),
  async (t) => {
    const ref = await emptyRuntime('ts');
    const rt = await createRuntime({
      classes: CLASSES,
      heap: 8 << 20,
      threads: 1,
      backend: 'webgpu',
      webgpu: { gpu: gpu(), floats: 'f32' },
    });
    try {
      t.is(rt.stats().backend.webgpu!.floats, 'f32');
      for (const r of [ref, rt]) for (let i = 0; i < N; i++) r.create(Item).f = Math.fround(i / 3);
      await ref.parallelDo(Item, 'floats', 0.75);
      await rt.parallelDo(Item, 'floats', 0.75);
      await rt.sync();
      const fs = (r: Runtime): number[] => {
        const out: number[] = [];
        r.deviceDo(Item, (it) => void out.push(it.f));
        return out.sort((a, b) => a - b);
      };
      t.deepEqual(fs(rt), fs(ref));
      t.is(generated(rt)['Item.floats'], 1);
    } finally {
      await rt.close();
      await ref.close();
    }
    const args = ['run', 'structure', '--nodes', '300', '--iterations', '2', '--backend', 'webgpu', '--json'];
    const f32 = lastJson((await smmo([...args, '--gpu-floats', 'f32'])).stdout);
    t.is((f32['gpu'] as { floats: string }).floats, 'f32');
    t.is((lastJson((await smmo(args)).stdout)['gpu'] as { floats: string }).floats, 'double-single', 'the default');
  },
);

test('--gpu-kernels: a bad value, or without --backend webgpu, is a usage error', async (t) => {
  const bad = await smmo(['run', 'game-of-life', '--iterations', '1', '--backend', 'webgpu', '--gpu-kernels', 'handmade']);
  t.is(bad.code, 2, describeChild(bad));
  t.regex(bad.stderr, /--gpu-kernels must be one of auto, generated, declared, got 'handmade'/);
  const noGpu = await smmo(['run', 'game-of-life', '--iterations', '1', '--gpu-kernels', 'generated']);
  t.is(noGpu.code, 2, describeChild(noGpu));
  t.regex(noGpu.stderr, /add --backend webgpu/);
  const badFloats = await smmo(['run', 'game-of-life', '--iterations', '1', '--backend', 'webgpu', '--gpu-floats', 'f16']);
  t.is(badFloats.code, 2, describeChild(badFloats));
  t.regex(badFloats.stderr, /--gpu-floats must be one of double-single, f32, got 'f16'/);
  const floatsNoGpu = await smmo(['run', 'game-of-life', '--iterations', '1', '--gpu-floats', 'f32']);
  t.is(floatsNoGpu.code, 2, describeChild(floatsNoGpu));
  t.regex(floatsNoGpu.stderr, /--gpu-floats chooses the arithmetic of --backend webgpu's generated kernels; add --backend webgpu/);
});
