/**
 * Random do-all methods for the method compiler's differential test
 * (test/compiler-fuzz.test.ts): a seed gives the source of one ES module with three smmo
 * classes whose `m(step)` methods are random statements of the compiled subset (README
 * "Compiled methods"). The test runs the module's passes compiled and interpreted and
 * compares the heaps byte for byte after every pass, and the errors thrown.
 *
 * What a program can do, so that it is deterministic and valid on both sides:
 *  (G1) Numbers only in numeric locals, objects only in `const` object locals: mixing them
 *       is a documented fallback reason, not what this test looks for.
 *  (G2) Every Leaf is owned by exactly one Node (`node.other`, `leaf.owner` point at each
 *       other): a Node creates a leaf only when it has none and destroys only its own; a
 *       Leaf destroys itself after clearing its owner's reference. No reference to a
 *       destroyed object is left, so no program reads a stale handle.
 *  (G3) Loops are bounded by constants; the one `while` counts down a local.
 *  (G4) Errors are allowed and wanted (a null dereference, an index out of range, a
 *       `throw`): the test compares them too.
 *  (G5) Programs run on one thread, so writes into other objects (`this.next.a = …`) are
 *       ordered the same way in both runs.
 */

/** mulberry32: a small seeded generator (the test prints the seed of any failure). */
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const NODE_NUMERIC = ['a', 'b', 'c', 'd', 'e', 'f', 'h', 'w'] as const;
const LEAF_NUMERIC = ['v', 'k'] as const;
const LITERALS = [
  '0',
  '1',
  '2',
  '3',
  '7',
  '(-1)',
  '(-5)',
  '255',
  '256',
  '65535',
  '65536',
  '2147483647',
  '(-2147483648)',
  '4294967295',
  '0.5',
  '(-2.25)',
  '1e10',
  '1.5e-7',
  '(-0)',
  'K1',
  'K2',
];
const BINARY = ['+', '-', '*', '/', '%', '|', '&', '^', '<<', '>>', '>>>'];
const COMPARE = ['<', '<=', '>', '>=', '===', '!=='];
const ASSIGN = ['+=', '-=', '*=', '|=', '&=', '^=', '<<=', '>>=', '>>>=', '/=', '%='];
const MATH1 = ['Math.floor', 'Math.abs', 'Math.trunc', 'Math.round', 'Math.sign', 'Math.fround', 'Math.ceil'];
const MATH2 = ['Math.imul', 'Math.min', 'Math.max'];

type Where = 'node' | 'leaf' | 'twig';

class Gen {
  private readonly r: () => number;
  private locals: string[] = [];
  /** Loop counters: read, never assigned (G3). */
  private counters: string[] = [];
  private objects: { name: string; cls: 'Node' | 'Leaf' }[] = [];
  private next = 0;
  private where: Where = 'node';

  constructor(seed: number) {
    this.r = rng(seed);
  }

  private pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.r() * xs.length)]!;
  }
  private chance(p: number): boolean {
    return this.r() < p;
  }
  private int(lo: number, hi: number): number {
    return lo + Math.floor(this.r() * (hi - lo + 1));
  }
  private fresh(prefix: string): string {
    return `${prefix}${this.next++}`;
  }

  /** A numeric expression. */
  num(depth: number): string {
    if (depth <= 0 || this.chance(0.3)) return this.numLeaf();
    switch (this.int(0, 9)) {
      case 0:
      case 1:
      case 2:
        return `(${this.num(depth - 1)} ${this.pick(BINARY)} ${this.num(depth - 1)})`;
      case 3:
        return `${this.pick(MATH1)}(${this.num(depth - 1)})`;
      case 4:
        return `${this.pick(MATH2)}(${this.num(depth - 1)}, ${this.num(depth - 1)})`;
      case 5:
        return `(${this.bool(depth - 1)} ? ${this.num(depth - 1)} : ${this.num(depth - 1)})`;
      case 6:
        return this.pick([
          `(-${this.num(depth - 1)})`,
          `(~${this.num(depth - 1)})`,
          `Math.sqrt(Math.abs(${this.num(depth - 1)}))`,
          `(${this.num(depth - 1)} ** ${this.pick(['2', '0.5', '-1', '3'])})`,
          `Math.hypot(${this.num(depth - 1)}, ${this.num(depth - 1)})`,
          `(+(${this.bool(depth - 1)}))`,
          `((${this.num(depth - 1)} / 2) | 0)`,
          `Math.max(${this.num(depth - 1)}, ${this.num(depth - 1)}, ${this.num(depth - 1)})`,
          `(typeof ${this.num(depth - 1)} === 'number' ? 1 : 0)`,
          ...(this.where === 'node'
            ? [
                `(this.${this.pick(NODE_NUMERIC)} ${this.pick(['++', '--'])})`,
                `(this.c += ${this.num(depth - 1)})`,
                `(this.flags.get(${this.int(0, 2)}) ? 3 : 4)`,
              ]
            : []),
        ]);
      case 7:
        return `${this.pick(['mix', 'clamp', 'pick3'])}(${this.num(depth - 1)}, ${this.num(depth - 1)})`;
      case 8:
        return this.refRead(depth - 1);
      default:
        return this.numLeaf();
    }
  }

  private numLeaf(): string {
    const k = this.int(0, 9);
    if (k <= 1) return this.pick(LITERALS);
    if (k === 2) return 'step';
    if (k === 3 && this.counters.length > 0) return this.pick(this.counters);
    if (k <= 4 && this.locals.length > 0) return this.pick(this.locals);
    if (this.where === 'node') {
      if (k === 5) return `this.arr.get(${this.int(0, 2)})`;
      if (k === 6) return `this.fa.get(${this.int(0, 1)})`;
      if (k === 7 && this.chance(0.3)) return 'this.sum';
      return `this.${this.pick(NODE_NUMERIC)}`;
    }
    if (k === 5) return `this.owner.${this.pick(NODE_NUMERIC)}`;
    if (this.where === 'twig') return this.pick(['this.x', 'this.n', 'this.z', 'this.runtime.count(Twig)']);
    if (k === 6) return 'this.val()';
    return `this.${this.pick(LEAF_NUMERIC)}`;
  }

  /** A read through a reference: null-guarded, or not (a null dereference is an error both sides must throw). */
  private refRead(depth: number): string {
    if (this.where === 'twig') return `this.owner.${this.pick(NODE_NUMERIC)}`;
    if (this.where === 'leaf') {
      return this.pick([
        `this.owner.${this.pick(NODE_NUMERIC)}`,
        `(this.owner.next !== null ? this.owner.next.${this.pick(NODE_NUMERIC)} : ${this.num(depth)})`,
        `(this.owner.other !== null ? this.owner.other.val() : 0)`,
      ]);
    }
    const obj = this.objects.length > 0 && this.chance(0.3) ? this.pick(this.objects) : null;
    if (obj !== null && obj.cls === 'Node') return `(${obj.name} !== null ? ${obj.name}.${this.pick(NODE_NUMERIC)} : ${this.num(depth)})`;
    if (obj !== null) return `(${obj.name} !== null ? ${obj.name}.val() : ${this.num(depth)})`;
    switch (this.int(0, 8)) {
      case 0:
        return `(this.next !== null ? this.next.${this.pick(NODE_NUMERIC)} : ${this.num(depth)})`;
      case 1:
        return `(this.other !== null ? this.other.${this.pick(LEAF_NUMERIC)} : ${this.num(depth)})`;
      case 2:
        return `(this.other?.val() ?? 0)`;
      case 3:
        return `(this.refs.get(${this.int(0, 1)})?.${this.pick(NODE_NUMERIC)} ?? 1)`;
      case 4:
        return `(this.next?.next?.${this.pick(NODE_NUMERIC)} ?? -1)`;
      case 5:
        // Unguarded: throws TypeError when next is null (both sides).
        return this.chance(0.2)
          ? `this.next.${this.pick(NODE_NUMERIC)}`
          : `(this.next === null ? 0 : this.next.arr.get(${this.int(0, 2)}))`;
      case 6:
        // Optional chains short-circuit as a whole: `x?.next.a` is undefined when x is null.
        return this.pick([`(this.next?.next.${this.pick(NODE_NUMERIC)} ?? 5)`, `(this.next?.arr.get(${this.int(0, 2)}) ?? 6)`]);
      case 7:
        return this.pick([
          'this.count()',
          'fieldSum(this.next)',
          'fieldSum(this)',
          'this.runtime.count(Leaf)',
          `this.runtime.get(Node, this.handle).${this.pick(NODE_NUMERIC)}`,
          '(this.next?.handle ?? 0)',
        ]);
      default:
        return `(this.next !== null && this.next.is(this) ? 1 : 2)`;
    }
  }

  /** A boolean expression. */
  bool(depth: number): string {
    if (depth <= 0 || this.chance(0.3)) {
      if (this.where === 'node') {
        return this.pick([
          `(${this.num(0)} ${this.pick(COMPARE)} ${this.num(0)})`,
          'this.g',
          'this.next === null',
          'this.other !== null',
          '(this.next !== null && this.next.g)',
        ]);
      }
      if (this.where === 'twig') return this.pick([`(${this.num(0)} ${this.pick(COMPARE)} ${this.num(0)})`, 'this.owner.g']);
      return this.pick([`(${this.num(0)} ${this.pick(COMPARE)} ${this.num(0)})`, 'this.owner.g', 'this instanceof Sprout']);
    }
    switch (this.int(0, 3)) {
      case 0:
        return `(${this.bool(depth - 1)} && ${this.bool(depth - 1)})`;
      case 1:
        return `(${this.bool(depth - 1)} || ${this.bool(depth - 1)})`;
      case 2:
        return `!${this.bool(depth - 1)}`;
      default:
        return `(${this.num(depth - 1)} ${this.pick(COMPARE)} ${this.num(depth - 1)})`;
    }
  }

  private block(depth: number, indent: string): string {
    const savedLocals = this.locals.length;
    const savedObjects = this.objects.length;
    const n = this.int(1, depth > 1 ? 5 : 3);
    const out: string[] = [];
    for (let i = 0; i < n; i++) out.push(this.stmt(depth, indent));
    this.locals.length = savedLocals;
    this.objects.length = savedObjects;
    return out.join('\n');
  }

  private stmt(depth: number, ind: string): string {
    const k = this.int(0, depth > 0 ? 19 : 11);
    const e = (): string => this.num(2);
    if (this.where === 'leaf') return this.leafStmt(k, depth, ind);
    if (this.where === 'twig') return this.twigStmt(k, depth, ind);
    switch (k) {
      case 0:
        return this.declare(ind);
      case 1:
        if (this.locals.length > 0) return `${ind}${this.pick(this.locals)} ${this.pick(['=', ...ASSIGN])} ${e()};`;
        return `${ind}this.a = ${e()};`;
      case 2:
      case 3:
        return `${ind}this.${this.pick(NODE_NUMERIC)} = ${e()};`;
      case 4:
        return `${ind}this.${this.pick(NODE_NUMERIC)} ${this.pick(ASSIGN)} ${e()};`;
      case 5: {
        const f = this.pick(NODE_NUMERIC);
        return `${ind}${this.pick([`this.${f}++`, `this.${f}--`, `++this.${f}`, `--this.${f}`])};`;
      }
      case 6:
        return `${ind}this.g = ${this.bool(2)};`;
      case 7: {
        // An index out of range (3) now and then: RangeError on both sides.
        const idx = this.chance(0.1) ? `(${e()} & 3)` : this.chance(0.5) ? `${this.int(0, 2)}` : `(Math.abs(${e()} | 0) % 3)`;
        return `${ind}this.arr.set(${idx}, ${e()});`;
      }
      case 8:
        return `${ind}this.fa.set(${this.int(0, 1)}, ${e()});`;
      case 9:
        return `${ind}if (this.next !== null) this.next.${this.pick(NODE_NUMERIC)} ${this.pick(['=', '+=', '^='])} ${e()};`;
      case 10:
        return this.pick([
          `${ind}this.next = this.refs.get(${this.int(0, 1)});`,
          `${ind}this.refs.set(${this.int(0, 1)}, this.next);`,
          `${ind}if (${this.bool(1)}) this.next = null;`,
          `${ind}if (this.next !== null && this.next.next !== null) this.next = this.next.next;`,
        ]);
      case 11: {
        const o = this.fresh('o');
        const s = this.chance(0.5) ? `${ind}const ${o} = this.next;` : `${ind}const ${o} = this.refs.get(${this.int(0, 1)});`;
        this.objects.push({ name: o, cls: 'Node' });
        return s;
      }
      case 12:
      case 13:
        return `${ind}if (${this.bool(2)}) {\n${this.block(depth - 1, ind + '  ')}\n${ind}}${
          this.chance(0.5) ? ` else {\n${this.block(depth - 1, ind + '  ')}\n${ind}}` : ''
        }`;
      case 14: {
        const i = this.fresh('i');
        this.counters.push(i);
        const body = this.block(depth - 1, ind + '  ');
        this.counters.pop();
        const ctl = this.chance(0.3) ? `\n${ind}  if (${this.bool(1)}) ${this.pick(['break', 'continue'])};` : '';
        return `${ind}for (let ${i} = 0; ${i} < ${this.int(1, 4)}; ${i}++) {${ctl}\n${body}\n${ind}}`;
      }
      case 15:
        return this.pick([
          `${ind}if (this.other === null && ${this.bool(1)}) {\n${ind}  this.other = this.runtime.create(Sprout, { v: ${e()}, k: ${e()}, owner: this, s: ${e()} });\n${ind}}`,
          `${ind}if (this.other === null && ${this.bool(1)}) {\n${ind}  const n = this.runtime.create(Stem, { owner: this, t: ${e()} });\n${ind}  n.v = ${e()};\n${ind}  this.other = n;\n${ind}}`,
        ]);
      case 16:
        return `${ind}if (this.other !== null && ${this.bool(1)}) {\n${ind}  this.other.destroy();\n${ind}  this.other = null;\n${ind}}`;
      case 17: {
        const acc = this.fresh('acc');
        this.locals.push(acc);
        return `${ind}let ${acc} = 0;\n${ind}this.runtime.deviceDo(Leaf, (l) => {\n${ind}  ${acc} += ${this.pick([
          'l.v',
          'l.k',
          'l.val()',
          'l.owner.a',
        ])};\n${ind}  if (${this.bool(1)}) l.k += 1;\n${ind}});`;
      }
      case 18: {
        const sw = `${ind}switch (${e()} & 3) {\n${ind}  case 0:\n${this.block(depth - 1, ind + '    ')}\n${ind}    break;\n${ind}  case 1:\n${this.block(
          depth - 1,
          ind + '    ',
        )}\n${ind}  default:\n${this.block(depth - 1, ind + '    ')}\n${ind}}`;
        return sw;
      }
      default:
        return this.pick([
          `${ind}if (${this.bool(2)}) return;`,
          `${ind}if (${e()} > 1e300) throw new RangeError('too large');`,
          `${ind}this.bump(${e()});`,
          `${ind}this.next?.bump(${e()});`,
          `${ind}{ const [p, q] = [${e()}, ${e()}]; this.a = p - q; }`,
          `${ind}{ const { a, b, next } = this; this.f = a * b + (next === null ? 1 : next.c); }`,
          `${ind}this.sum ${this.pick(['=', '+=', '-='])} ${e()};`,
          `${ind}this.sum++;`,
          `${ind}this.arr.set(${this.int(0, 2)}, this.arr.get(${this.int(0, 2)}) ${this.pick(BINARY)} ${e()});`,
          `${ind}for (const x of WEIGHTS) this.f += x * ${e()};`,
          `${ind}try {\n${ind}  this.a = this.next.a + ${e()};\n${ind}} catch (err) {\n${ind}  this.b = err instanceof TypeError ? 1 : 2;\n${ind}}`,
          `${ind}{ let z = ${this.int(0, 3)}; do { this.c += z; z--; } while (z > 0); }`,
          `${ind}{ const s = 'x' + this.b + ${e()}; this.w = s.length; }`,
          `${ind}{ const kk = ${e()}; this.f = WEIGHTS.map((x) => x * kk)[${this.int(0, 2)}]; }`,
          `${ind}if (this.next !== null) this.next.sum += ${e()};`,
          `${ind}{ let t = 0; this.runtime.deviceDo(Node, (n) => { if (n.b > ${this.pick(['7', '100', '200'])}) t += n.a; }); this.f = t; }`,
          `${ind}for (let j = 0; j < ${this.int(1, 6)}; j++) this.runtime.create(Twig, { owner: this, x: ${e()}, n: j });`,
          `${ind}if (${this.bool(1)}) this.runtime.create(Twig, { owner: this, n: ${e()} });`,
          `${ind}this.runtime.deviceDo(Leaf, (l) => {\n${ind}  if (l.k % ${this.int(2, 5)} === 0) this.runtime.create(Twig, { owner: this, x: l.v });\n${ind}});`,
          `${ind}this.runtime.deviceDo(Twig, (tw) => {\n${ind}  if (tw.n % ${this.int(2, 9)} === ${this.int(0, 1)}) tw.destroy();\n${ind}  else this.h += 1;\n${ind}});`,
          `${ind}this.a = this.b = ${e()};`,
          `${ind}this.${this.pick(NODE_NUMERIC)} ${this.pick(['||=', '&&=', '??='])} ${e()};`,
          `${ind}this.g ${this.pick(['||=', '&&='])} ${this.bool(1)};`,
          `${ind}this.flags.set(${this.int(0, 2)}, ${this.bool(1)});`,
          `${ind}this.arr.set(this.b++ % 3, ${e()});`,
          `${ind}{ const o = ${this.bool(1)} ? this.next : this.refs.get(${this.int(0, 1)}); if (o !== null) o.h -= 1; }`,
          `${ind}{ const r = this.refs.get(${this.int(0, 1)}); this.e = ${this.chance(0.3) ? 'r.e' : '(r === null ? -1 : r.e)'}; }`,
          `${ind}this.w = this.other?.size ?? 77;`,
          `${ind}switch (this.b & 3) {\n${ind}  case 0:\n${ind}    return;\n${ind}  case 1:\n${ind}    this.h = ${e()};\n${ind}    break;\n${ind}  default:\n${ind}    if (${this.bool(1)}) return;\n${ind}}`,
          `${ind}outer: for (let x = 0; x < 3; x++) { for (let y = 0; y < 3; y++) { if (${this.bool(1)}) continue outer; if (x + y > ${this.int(1, 4)}) break outer; this.h += 1; } }`,
        ]);
    }
  }

  /** `let vN = …;` — the new local is readable in the statements after it (not in its own initialiser). */
  private declare(ind: string): string {
    const v = this.fresh('v');
    const s = `${ind}let ${v} = ${this.num(2)};`;
    this.locals.push(v);
    return s;
  }

  /** Twigs: nothing refers to them, so a twig may delete itself any time (G2). */
  private twigStmt(k: number, depth: number, ind: string): string {
    const e = (): string => this.num(2);
    switch (k % 6) {
      case 0:
        return `${ind}this.${this.pick(['x', 'n', 'z'])} ${this.pick(['=', ...ASSIGN])} ${e()};`;
      case 1:
        return `${ind}this.owner.${this.pick(NODE_NUMERIC)} ${this.pick(['=', '+=', '^='])} ${e()};`;
      case 2:
        return `${ind}if (${this.bool(1)}) {\n${ind}  this.destroy();\n${ind}  return;\n${ind}}`;
      case 3:
        if (depth > 0)
          return `${ind}if (${this.bool(2)}) {\n${this.block(depth - 1, ind + '  ')}\n${ind}} else {\n${this.block(depth - 1, ind + '  ')}\n${ind}}`;
        return `${ind}this.n++;`;
      case 4:
        return this.declare(ind);
      default:
        return `${ind}if (${this.bool(1)}) this.destroy();\n${ind}else this.x = ${e()};`;
    }
  }

  private leafStmt(k: number, depth: number, ind: string): string {
    const e = (): string => this.num(2);
    switch (k % 10) {
      case 0:
        return this.declare(ind);
      case 1:
        return `${ind}this.${this.pick(LEAF_NUMERIC)} ${this.pick(['=', ...ASSIGN])} ${e()};`;
      case 2:
        return `${ind}this.owner.${this.pick(NODE_NUMERIC)} ${this.pick(['=', '+=', '|='])} ${e()};`;
      case 3:
        return `${ind}if (this instanceof Sprout) this.s = ${e()};\n${ind}else if (this instanceof Stem) this.t ^= ${e()};`;
      case 4:
        if (depth > 0) return `${ind}if (${this.bool(2)}) {\n${this.block(depth - 1, ind + '  ')}\n${ind}}`;
        return `${ind}this.k++;`;
      case 5:
        // Self-destruction: clear the owner's reference first (G2), then leave the lane.
        return `${ind}if (${this.bool(1)}) {\n${ind}  this.owner.other = null;\n${ind}  this.destroy();\n${ind}  return;\n${ind}}`;
      case 6:
        return `${ind}this.v = this.val() ${this.pick(BINARY)} ${e()};`;
      case 7:
        return `${ind}this.owner.g = ${this.bool(1)};`;
      case 8:
        if (depth > 0) {
          const i = this.fresh('i');
          this.counters.push(i);
          const body = this.block(depth - 1, ind + '  ');
          this.counters.pop();
          return `${ind}for (let ${i} = ${this.int(0, 3)}; ${i} > 0; ${i}--) {\n${body}\n${ind}}`;
        }
        return `${ind}this.v += 1;`;
      default:
        return `${ind}this.k = this.owner.arr.get(${this.int(0, 2)});`;
    }
  }

  /** The module: classes, helpers, constants; `m(step)` bodies from this generator. */
  module(runtimeUrl: string): string {
    this.where = 'node';
    const nodeBody = this.block(3, '    ');
    this.locals = [];
    this.objects = [];
    this.where = 'leaf';
    const leafBody = this.block(2, '    ');
    this.locals = [];
    this.objects = [];
    this.where = 'twig';
    const twigBody = this.block(2, '    ');
    const k1 = this.pick(['3', '-7', '0.75', '1024', '2654435761']);
    const k2 = this.pick(['5', '-1', '1e-3', '65537']);
    return `import { array, bool, f32, f64, i16, i32, i8, object, ref, u16, u32, u8 } from ${JSON.stringify(runtimeUrl)};

const K1 = ${k1};
const K2 = ${k2};
const WEIGHTS = [1, -2, 0.5];

function mix(x, y) {
  return Math.imul((x | 0) ^ ((y | 0) >>> 3), 0x9e3779b1) >>> 0;
}

function fieldSum(n) {
  if (n === null) return 0;
  return n.a + n.c;
}

function clamp(x, lo) {
  if (x < lo) return lo;
  if (x > lo + 100) return lo + 100;
  return x;
}

function pick3(x, y) {
  switch (x & 3) {
    case 0:
      return y;
    case 1:
      return -y;
    default:
      return x * 0.5;
  }
}

export class Node extends object({
  a: i32,
  b: u8,
  c: i16,
  d: u32,
  e: f32,
  f: f64,
  g: bool,
  h: i8,
  w: u16,
  next: ref(() => Node),
  other: ref(() => Leaf),
  arr: array(i32, 3),
  fa: array(f32, 2),
  refs: array(ref(() => Node), 2),
  flags: array(bool, 3),
}) {
  count() {
    return this.other === null ? 0 : 1 + this.b;
  }

  bump(x) {
    if (x !== x) return;
    this.w += x;
    this.c -= 1;
  }

  get sum() {
    return this.a + this.b;
  }

  set sum(v) {
    this.a = v - this.b;
  }

  m(step) {
${nodeBody}
  }
}

export class Leaf extends object({ v: f64, k: u16, owner: ref(() => Node) }, { abstract: true }) {
  val() {
    return this.v;
  }

  get size() {
    return this.k + 1;
  }

  m(step) {
${leafBody}
  }
}

export class Sprout extends Leaf.extend({ s: i8 }) {
  val() {
    return this.k * 2 + this.s + super.val();
  }
}

export class Stem extends Leaf.extend({ t: u32 }) {
  val() {
    return this.t - this.v;
  }

  get size() {
    return this.t & 255;
  }
}

export class Twig extends object({ x: f32, n: i16, z: f64, owner: ref(() => Node) }) {
  m(step) {
${twigBody}
  }
}

export const CLASSES = [Node, Leaf, Sprout, Stem, Twig];
`;
  }
}

/** The source of program `seed`: an ES module importing smmo from `runtimeUrl`. */
export function programSource(seed: number, runtimeUrl: string): string {
  return new Gen(seed).module(runtimeUrl);
}
