/**
 * Classes for the method compiler's tests (test/compiler.test.ts): one method per
 * construct of the compiled subset (README "Compiled methods"), each writing what it
 * computes into the heap so that compiled and interpreted runs can be compared byte for
 * byte, and methods outside the subset, one per fallback reason.
 */
import { array, bool, f32, f64, i16, i32, i8, object, ref, u16, u32, u8, type SmmoContext, type SmmoObject } from '../runtime/index.js';

export const SCALE = 3;
const OFFSET = Math.fround(0.25);
const SCRATCH = new Float64Array(2);
let counter = 0;
export function bumpCounter(): number {
  return ++counter;
}

/** A module helper: inlined. */
function mix(a: number, b: number): number {
  return Math.imul(a ^ (b >>> 3), 0x9e3779b1) >>> 0;
}

/** A helper that takes an object and an inline array. */
function sumStream(s: { get(i: number): number; length: number }): number {
  let total = 0;
  for (let i = 0; i < s.length; i++) total += s.get(i);
  return total;
}

/** A helper the compiler cannot inline (it reads a module `let`): called as JavaScript. */
function readsCounter(x: number): number {
  return x + counter;
}

/**
 * Runs as JavaScript (it writes module state): a deviceDo the compiler cannot see, so a
 * do-all whose method calls it must snapshot every class (runtime/doall.ts reach).
 */
let sidesSeen = 0;
function sidesInJs(rt: SmmoContext): number {
  sidesSeen = 0;
  rt.deviceDo(Shape, (s) => {
    sidesSeen += s.sides();
  });
  return sidesSeen;
}

/** Default parameters and a local arrow function. */
function scaled(x: number, by = SCALE): number {
  const twice = (v: number): number => v * 2;
  return twice(x) * by;
}

export interface PointLike extends SmmoObject {
  x: number;
  y: number;
  mid: number;
  flag: boolean;
  next: PointLike | null;
  stream: { get(i: number): number };
  hops: { get(i: number): PointLike | null };
  bumpTag(by: number): void;
}

declare global {
  /** A global variable that a method reads (readsGlobal); the test changes it between passes. */
  var smmoFixtureScale: number;
}
globalThis.smmoFixtureScale = 2;

/** A module array a method iterates with for…of. */
const WEIGHTS = [1, 2, 3, 5];

/** How many countTo() iterators ran their finally (closed early or run to the end), and how many values they gave. */
export const CLOSED = { count: 0, pulled: 0 };

/** A generator: for…of over it runs as JavaScript; leaving the loop early runs its finally. */
function* countTo(n: number): Generator<number> {
  try {
    for (let i = 1; i <= n; i++) {
      CLOSED.pulled++;
      yield i;
    }
  } finally {
    CLOSED.count++;
  }
}

/** Module values that methods destructure. */
const PAIRS = [3, 5, 8, 13];
const PAIR_LIST: readonly (readonly [number, number])[] = [
  [1, 2],
  [3, 4],
  [5, 6],
];
const OPTIONS: { readonly scale?: number; readonly offset: number | undefined } = { offset: 0.5 };
const NESTED: readonly unknown[] = [undefined, { w: 4 }];
const WEIGHTED: readonly { readonly w?: number }[] = [{ w: 2 }, {}, { w: 3 }];

/** A helper with patterns and a rest parameter, inlined into the method that calls it. */
function spread({ x, y }: { x: number; y: number }, [s = 0, t = 1]: readonly number[], ...more: number[]): number {
  return x * s + y * t + more.length;
}

/** A helper whose finally overrides its return for large k (inlined: the return is a break the finally's break replaces). */
function pick(k: number): number {
  try {
    return k;
  } finally {
    if (k > 3) return -k;
  }
}

/** Functions a method made and handed to JavaScript that kept them (callsBack): the test calls them after the pass. */
export const KEPT: (() => number)[] = [];

/** A module function called with spread arguments (runs as JavaScript). */
function spreadSum(...ns: number[]): number {
  let t = 0;
  for (const v of ns) t += v;
  return t;
}

/** Module constants a method starts its `let` variables from. */
const START_COUNT = 3;
const START_ON = true;

export class Point extends object({
  x: f64,
  y: f32,
  n: i32,
  small: i8,
  word: u16,
  half: i16,
  big: u32,
  tag: u8,
  flag: bool,
  next: ref<PointLike>('Point'),
  other: ref<Shape>('Shape'),
  stream: array(u32, 4),
  flags: array(bool, 3),
  hops: array(ref<PointLike>('Point'), 2),
}) {
  /** Arithmetic on every field kind, stores wrap as typed arrays do. */
  arith(k: number): void {
    this.x = this.x * 1.5 + k;
    this.y += OFFSET;
    this.n = (this.n * 7 + k) | 0;
    this.small += 100; // wraps in i8
    this.word -= 1; // wraps in u16
    this.half = this.half ^ 0x5555;
    this.big = (this.big + 0xfffffff0) >>> 0;
    this.tag++;
    this.flag = !this.flag;
    const r = this.n % 5;
    this.x += r > 2 ? Math.sqrt(Math.abs(this.x)) : Math.floor(this.x / 3);
  }

  /** References: follow, compare with null, assign, optional chaining, is(). */
  refs(): void {
    const nx = this.next;
    if (nx !== null) {
      this.x = nx.x + (nx.next?.x ?? -1);
      if (nx.is(this)) this.n += 1000;
      if (nx.handle === this.handle) this.n += 1;
    }
    this.flag = this.next == null;
    const o = this.other;
    this.y = o === null ? 0 : o.area();
  }

  /**
   * Optional chains short-circuit as a whole: `a?.b.get(0).c` is undefined when a is null (not a
   * TypeError at `.c`), `a?.m(f())` neither calls m nor evaluates f(), `a?.arr.get(i)` reads
   * an inline array behind a null test.
   */
  optionalChains(k: number): void {
    this.x = this.next?.hops.get(0)!.x ?? -2;
    this.y = this.next?.next?.x ?? 0.5;
    this.n = this.other?.area() ?? -1;
    this.big = this.next?.stream.get(k & 3) ?? 7;
    this.next?.bumpTag(this.n++);
    this.flag = this.next?.hops.get(0)?.flag ?? true;
  }

  /** Logical assignments: `a ||= b` is `a || (a = b)`, the target's object evaluated once. */
  logicalAssigns(k: number): void {
    let x = this.n & 3;
    x ||= k;
    this.x &&= x;
    this.flag ||= this.n > 0;
    this.next ??= this.hops.get(1);
    this.tag ||= 9;
    const o = this.other;
    if (o !== null) o.span ||= 3;
    this.hops.get(0)!.mid ??= -1;
    this.n = x;
  }

  bumpTag(by: number): void {
    this.tag += by;
  }

  /** Inline arrays: constant and computed indices, a helper that takes the array, mix(). */
  arrays(): void {
    const s = this.stream;
    for (let i = 0; i < 4; i++) s.set(i, mix(s.get(i), i + this.n));
    this.big = sumStream(s) >>> 0;
    const f = this.flags;
    f.set(this.n & 1 ? 2 : 0, !f.get(1));
    const h = this.hops;
    h.set(1, h.get(0));
    h.set(0, this.next);
  }

  /** Loops: for, while, do-while, break and continue with and without labels, switch. */
  loops(limit: number): void {
    let acc = 0;
    outer: for (let i = 0; i < limit; i++) {
      let j = 0;
      while (true) {
        j++;
        if (j > i) break;
        if ((i + j) % 3 === 0) continue outer;
        acc += j;
      }
      do {
        acc ^= i;
      } while (acc > 1000 && (acc = acc >> 1) > 0);
      switch (i % 5) {
        case 0:
        case 1:
          acc += 2;
          break;
        case 2: {
          acc -= 1;
          break;
        }
        default:
          acc *= 2;
      }
    }
    this.n = acc;
  }

  /** deviceDo with an early return (next object), nested deviceDo, closures over locals. */
  neighbours(): void {
    let nearest = 0;
    let best = Infinity;
    let count = 0;
    const rt = this.runtime;
    rt.deviceDo(Point, (p) => {
      if (p.handle === this.handle) return;
      const d = Math.abs(p.x - this.x);
      if (d < best) {
        best = d;
        nearest = p.handle;
      }
    });
    rt.deviceDo(Shape, (s) => {
      count += s.sides();
      rt.deviceDo(Point, () => (count += 0.5));
    });
    this.next = nearest === 0 ? null : rt.get(Point, nearest);
    this.x = count;
  }

  /**
   * Fields of deviceDo objects whose classes lay the fields out differently (Square,
   * Triangle): read, a reference followed, a store into each; an inline-array element, also
   * behind `instanceof`.
   */
  shapeSum(k: number): void {
    let total = 0;
    this.runtime.deviceDo(Shape, (s) => {
      total += s.size * s.sides();
      const o = s.owner;
      if (o !== null) total += o.x;
      s.size += 0.25;
      // Lowered once per concrete class: in Square's loop this branch is left out.
      if (s instanceof Triangle) total += s.angles.get(k % 3);
    });
    this.runtime.deviceDo(Triangle, (tr) => (total += tr.angles.get(k % 3)));
    this.x = total;
  }

  /**
   * `instanceof` in `?:`, `&&` and an `&&` test over deviceDo objects: in each concrete
   * class's loop the side that class never reaches is left out (it uses the other's fields).
   */
  shapeGuarded(k: number): void {
    let total = 0;
    this.runtime.deviceDo(Shape, (s) => {
      total += s instanceof Triangle ? s.angles.get(k % 3) : s.size;
      if (s instanceof Triangle && s.angles.get(1) > 4) total += 1;
      const wide = s instanceof Square && s.corner > 6;
      if (wide) total += 2;
    });
    this.x = total;
  }

  /**
   * Negated `instanceof` guards over deviceDo objects: an early return, an if/else, `?:` and
   * `||`; in each concrete class's loop what that class never reaches is left out.
   */
  shapeGuardedEarly(k: number): void {
    let total = 0;
    this.runtime.deviceDo(Shape, (s) => {
      total += !(s instanceof Triangle) ? s.size : s.angles.get(k % 3);
      if (!(s instanceof Triangle)) total += s.size / 2;
      else total += s.angles.get(0);
      const small = !(s instanceof Square) || s.corner < 8;
      if (small) total += 0.5;
      if (!(s instanceof Triangle)) return;
      total += s.angles.get(1) * 2;
    });
    this.x = total;
  }

  /** Global variables that may change (a test global, `performance`): read where the method reads them, as JavaScript. */
  readsGlobal(): void {
    this.x = this.y * smmoFixtureScale + (performance.now() >= 0 ? 1 : 0);
  }

  /** for…of over a module array and a generator: break, continue, a labelled continue out of the inner loop. */
  iterates(k: number): void {
    let total = 0;
    for (const w of WEIGHTS) {
      if (w > k) break;
      if (w === 2) continue;
      total += w * this.y;
    }
    outer: for (const a of WEIGHTS) {
      for (const b of countTo(3)) {
        if (a * b > k) continue outer;
        total += a - b;
      }
    }
    this.x = total;
  }

  /**
   * Destructuring: object patterns over this object (fields, a reference, renamed, a
   * default), array patterns over `[…]` literals (a swap of locals and of fields), over
   * module arrays and objects (holes, defaults, rest, nesting), in for…of, in the
   * parameters of an inlined helper and of a deviceDo callback.
   */
  destructures(k: number): void {
    const { x, y, next } = this;
    const { n: count, tag = 7 } = this;
    let [a, b] = [x + k, y * 2];
    [a, b] = [b, a];
    const [, second = -1, ...more] = PAIRS;
    const { scale = 2, offset } = OPTIONS;
    const key = k > 2 ? 'offset' : 'scale';
    const { [key]: picked = -5 } = OPTIONS;
    const [[p, q] = [k, 1], { w } = { w: k }] = NESTED as [[number, number]?, { w: number }?];
    let sum = 0;
    for (const [u, v] of PAIR_LIST) sum += u * v;
    for (const { w: ww = 1 } of WEIGHTED) sum += ww;
    sum += spread({ x: a, y: b }, [k], 1, 2);
    this.runtime.deviceDo(Point, ({ tag: tg, flag, next: nx }) => {
      if (flag && nx !== null) sum += tg + nx.x;
    });
    this.x = a * scale + b + (offset ?? 0) + picked + second + more.length + count + tag + p + q + w + sum;
    this.y = next !== null ? next.x : -1;
    if (k > 2) [this.n, this.small] = [this.small, this.n];
  }

  /** for…of into an existing variable, a field, a pattern of fields, and a var. */
  iteratesInto(k: number): void {
    let last = -1;
    for (last of WEIGHTS) if (last > k) break;
    for (this.small of WEIGHTS) this.n += this.small;
    for ([this.word, this.half] of PAIR_LIST) this.n += this.word - this.half;
    for (var w of countTo(k)) this.n += w; // eslint-disable-line no-var
    // @ts-expect-error: w is a var of the loop, undefined when countTo(k) gives nothing (k < 1)
    this.x = last + (w ?? -7);
  }

  /** Array patterns over a generator: as many elements as named, the iterator closed after, a rest taking the others. */
  destructuresIterator(k: number): void {
    const [first = -1, second = 0] = countTo(k);
    const [head = -1, ...tail] = countTo(k + 1);
    let [c, d]: (number | undefined)[] = [0, 0];
    [c, , d] = countTo(k);
    this.x = first * 100 + second * 10 + head + tail.length * 1000 + (c ?? -2) + (d ?? -1);
  }

  /** A pattern and a default value among the do-all method's own parameters. */
  destructuresParams(k = 3, { length } = PAIRS): void {
    this.x = k * 10 + length;
  }

  /**
   * try/catch/finally: errors of compiled code caught (a null reference's TypeError, an
   * inline array's RangeError, a thrown value), their class and message read; a pattern
   * as the catch parameter, a catch without one; break, continue and an inlined return
   * leaving through finally.
   */
  catches(k: number): void {
    let log = 0;
    try {
      const nx = this.next;
      log += nx!.x;
    } catch (e) {
      log += e instanceof TypeError ? 1000 : 2000;
      this.tag = (e as Error).message.length;
    } finally {
      log += 1;
    }
    try {
      log += this.stream.get(k) % 7;
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
    } catch ({ name }: any) {
      log += name === 'RangeError' ? 100 : 200;
    }
    try {
      if (this.n > k * 50) throw new Error(`n ${this.n}`);
    } catch {
      log += 3;
    }
    outer: for (let i = 0; i < 3; i++) {
      try {
        if (i === k % 3) break outer;
        if (i === 1) continue;
        log += i;
      } finally {
        log += 0.5;
      }
    }
    this.x = log + pick(k);
  }

  /**
   * JavaScript values built and taken apart as written: spreads in array literals, object
   * literals, calls of built-ins and of a module function, `new`; holes; a regular
   * expression literal (a new RegExp each time: its lastIndex starts at 0); bigint literals
   * and arithmetic; `in` (also on this object, as its view) and `delete`.
   */
  jsValues(k: number): void {
    const xs = [k, this.y, ...PAIRS];
    const ys = [, ...xs, ,];
    const o: Record<string, number> = { ...(OPTIONS as Record<string, number>), a: k, ...{ b: 2 } };
    delete o.a;
    let r = Math.max(...xs) + Math.min(...PAIRS, k) + ys.length + (ys[0] === undefined ? 1 : 0) + new Set([...xs, k]).size;
    for (let i = 0; i < 2; i++) {
      const re = /(\d+)-(\d+)/g;
      const m = re.exec(`${this.n}-${k}`);
      r += m !== null ? (Number(m[1]) % 97) + re.lastIndex : -1;
    }
    const big = 2n ** 40n + BigInt(k) * 3n;
    r += Number(big % 1000n) + (big > 5n ? 1 : 0);
    r += ('a' in o ? 100 : 0) + ('b' in o ? 10 : 0) + ('x' in this ? 1000 : 0) + ('nope' in this ? 5 : 0);
    r += spreadSum(...xs, k);
    this.x = r;
  }

  /**
   * Functions written in the method handed to JavaScript (closures): map, sort, reduce,
   * filter and findIndex of arrays with arrows reading const variables and parameters; a
   * function expression; a pattern parameter; a function of the method called inside
   * one; one kept by JavaScript and called after the pass (KEPT).
   */
  callsBack(k: number): void {
    const scale = (this.n % 7) + k;
    const y = this.y;
    const xs = WEIGHTS.map((w) => w * scale + y);
    xs.sort((a, b) => b - a);
    const total = xs.reduce((acc, v, i) => acc + v * (i + 1), k);
    const big = xs.filter((v) => v > scale).length;
    const doubled = xs.map(function (v: number): number {
      return v * 2;
    });
    const small = this.small;
    const bump = (v: number): number => v + scale + small;
    const bumped = xs.map((v) => bump(v));
    const hit = [{ w: 1 }, { w: scale }].findIndex(({ w }) => w === scale);
    const h = this.handle;
    KEPT.push(() => scale * 1000 + h);
    this.x = total + big + doubled[0]! + bumped[1]! + hit + Math.max(...xs.map((v) => v % 3));
  }

  /** An accessor pair over two fields: the mean of x and y, set keeping their difference. */
  get mid(): number {
    return (this.x + this.y) / 2;
  }
  set mid(v: number) {
    const d = (this.x - this.y) / 2;
    this.x = v + d;
    this.y = v - d;
  }
  /** A setter without a getter. */
  set scaled(v: number) {
    this.n = (v * 3) | 0;
  }

  /** Assignments through setters: `=`, `+=`, `*=`, `++` (prefix and postfix), their values used, on this and through a reference. */
  setsAccessors(k: number): void {
    this.mid = k;
    this.mid += 1.5;
    this.mid++;
    const before = ++this.mid;
    const post = this.mid--;
    this.scaled = before + post + (this.mid *= 2);
    const nx = this.next;
    if (nx !== null) this.word = nx.mid = this.x + k;
  }

  /** `break` out of a labelled `if`. */
  labelledIf(k: number): void {
    let n = 0;
    check: if (k > 1) {
      n += 1;
      if (k > 2) break check;
      n += 10;
    }
    this.x = n;
  }

  /** A `let` started from module constants (a number, a boolean) and changed after. */
  countsFromConstants(k: number): void {
    let n = START_COUNT;
    let on = START_ON;
    for (let i = 0; i < k; i++) {
      n += i;
      on = !on;
    }
    this.x = on ? n : -n;
  }

  /** JavaScript values the compiler leaves as they are: strings, a typed array, a call it cannot inline, a template. */
  javascript(k: number): void {
    SCRATCH[0] = this.x;
    SCRATCH[1] = k;
    const label = `p${this.n}:${SCRATCH[0] + SCRATCH[1]}`;
    this.tag = label.length;
    this.n = readsCounter(this.n) | 0;
    this.y = scaled(this.y) + scaled(1, 2);
  }

  /** get() of a handle given as an argument (the failing ones throw as the unchecked get does). */
  getAt(h: number): void {
    this.x = this.runtime.get(Point, h).x;
  }

  /** A deviceDo over Shape inside a call left as JavaScript. */
  sidesViaJs(): void {
    this.x = sidesInJs(this.runtime);
  }

  /** Errors: a null dereference (TypeError) and an index out of range (RangeError) when asked to. */
  fail(which: number): void {
    if (which === 1 && this.tag === 4) this.x = this.next!.x;
    if (which === 2 && this.tag === 3) this.flags.set(this.tag, true);
    // A counted loop whose bound passes the array's end keeps its index check.
    if (which === 3 && this.tag === 5) for (let i = 0; i <= 3; i++) this.flags.set(i, true);
  }
}

/** An abstract class with two subclasses that override its methods: virtual calls, super. */
export abstract class Shape extends object({ size: f32, owner: ref(() => Point) }, { abstract: true }) {
  sides(): number {
    return 0;
  }
  area(): number {
    return this.size * this.sides();
  }
  get perimeter(): number {
    return this.size * this.sides();
  }
  /** The perimeter, set by resizing (each concrete class its own setter). */
  abstract set span(v: number);
  abstract get span(): number;
  /** Grows, and creates or deletes shapes. */
  grow(): void {}
  /** An early return unless `this instanceof Triangle` (compiled per concrete class: Square's stops at the return). */
  tiltEarly(k: number): void {
    if (!(this instanceof Triangle)) {
      this.size -= 0.25;
      return;
    }
    this.size += this.angles.get(k % 3) / 50;
  }
  /** A subclass's field behind `this instanceof` (compiled per concrete class: Square's leaves the branch out). */
  tilt(k: number): void {
    if (this instanceof Triangle) this.size += this.angles.get(k % 3) / 100;
    else this.size -= 0.125;
  }
}

export class Square extends Shape.extend({ corner: f64 }) {
  override sides(): number {
    return 4;
  }
  get span(): number {
    return this.size * 4;
  }
  set span(v: number) {
    this.size = v / 4;
    this.corner += 1;
  }
  override area(): number {
    return this.size * this.size;
  }
  override grow(): void {
    this.size += 1;
    this.corner = this.perimeter + super.area();
    if (this.size > 4) {
      // Split: a new Square and a Triangle, with an init object (a reference included); then delete itself.
      const ctx: SmmoContext = this.runtime;
      const sq = ctx.create(Square, { size: this.size / 2, owner: this.owner, corner: -1 });
      ctx.create(Triangle, { size: sq.size, owner: null, angles: [60, 60, 60] });
      this.destroy();
    }
  }
}

export class Triangle extends Shape.extend({ angles: array(f32, 3) }) {
  override sides(): number {
    return 3;
  }
  get span(): number {
    return this.size * 3;
  }
  set span(v: number) {
    this.size = v / 3;
    this.angles.set(1, v);
  }
  override grow(): void {
    this.size *= 1.5;
    const a = this.angles;
    a.set(0, a.get(0) + this.perimeter);
    if (this.size > 10) this.runtime.destroy(this);
  }
}

/** A do-all over Shape: calls a method of another object that is dispatched on its type. */
export class Visitor extends object({ total: f64, last: ref(() => Shape) }) {
  visit(): void {
    const s = this.last;
    if (s !== null) {
      this.total += s.area() + s.perimeter;
      if (s instanceof Square) this.total += s.corner;
    }
  }
  /** A setter and a getter of a shape of either class, dispatched on its class. */
  resizes(): void {
    const s = this.last;
    if (s !== null) {
      s.span = this.total % 17;
      s.span += 2;
      this.total += s.span;
    }
  }
  /** A reference of the base class narrowed after `if (… || !(s instanceof C)) return`, in an else branch and on the right of `||`. */
  guardedEarly(): void {
    const s = this.last;
    if (s === null || !(s instanceof Shape)) return;
    if (!(s instanceof Square)) this.total += 1;
    else this.total += s.corner / 4;
    const odd = !(s instanceof Triangle) || s.angles.get(0) > 5;
    if (odd) this.total += 0.25;
    if (!(s instanceof Triangle)) return;
    this.total += s.angles.get(1);
  }
  /** A reference of the base class narrowed by `instanceof` in `?:` and on the right of `&&`, and through an `&&` test. */
  guarded(): void {
    const s = this.last;
    if (s === null) return;
    this.total += s instanceof Triangle ? s.angles.get(2) : 0.5;
    const big = s instanceof Square && s.corner > 10;
    if (big) this.total += 2;
    if (s.size > 1 && s instanceof Triangle && s.angles.get(0) > 3) this.total += s.angles.get(0);
  }
}

/** Methods the compiler does not take, one per reason. */
export class Odd extends object({ v: f64, peer: ref<OddLike>('Odd') }) {
  comparesObjects(): void {
    if (this.peer === this.peer) this.v = 1;
  }
  readsModuleLet(): void {
    this.v = counter;
  }
  recursive(n: number): number {
    return n <= 0 ? 0 : this.recursive(n - 1) + 1;
  }
  callsRecursive(): void {
    this.v = this.recursive(3);
  }
  destructuresRest(): void {
    const { v, ...rest } = this;
    this.v = v + Object.keys(rest).length;
  }
  objectInArithmetic(): void {
    this.v = (this.peer as unknown as number) + 1;
  }
}
export interface OddLike extends SmmoObject {
  v: number;
  peer: OddLike | null;
}

export const CLASSES = [Point, Shape, Square, Triangle, Visitor, Odd];
