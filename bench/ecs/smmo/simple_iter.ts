/**
 * simple_iter in smmo: 1 000 entities each of (A, B), (A, B, C), (A, B, C, D) and
 * (A, B, C, E); three systems swap A↔B, C↔D and C↔E. The component sets form a class
 * hierarchy AB ← ABC ← ABCD, ABC ← ABCE, so "every entity with A and B" is a do-all over
 * AB (its subclasses included: one pass per concrete class), "with C and D" one over
 * ABCD, "with C and E" one over ABCE.
 */
import { object, u32, type Runtime } from '../../../runtime/index.js';
import { expect } from '../harness.js';
import { checkCompiled, smmoRuntime, type SmmoCase, type SmmoCaseOptions } from './common.js';

export class AB extends object({ a: u32, b: u32 }) {
  swapAB(): void {
    const a = this.a;
    this.a = this.b;
    this.b = a;
  }
}

export class ABC extends AB.extend({ c: u32 }) {}

export class ABCD extends ABC.extend({ d: u32 }) {
  swapCD(): void {
    const c = this.c;
    this.c = this.d;
    this.d = c;
  }
}

export class ABCE extends ABC.extend({ e: u32 }) {
  swapCE(): void {
    const c = this.c;
    this.c = this.e;
    this.e = c;
  }
}

const METHODS = ['AB.swapAB', 'ABC.swapAB', 'ABCD.swapAB', 'ABCE.swapAB', 'ABCD.swapCD', 'ABCE.swapCE'];

/** Entity i starts with A = 5i+1, B = 5i+2, C = 5i+3, D = 5i+4, E = 5i+5 (every value distinct). */
const start = (i: number, k: number): number => 5 * i + k + 1;

export async function setup(count: number, options: SmmoCaseOptions): Promise<SmmoCase> {
  const rt = await smmoRuntime([AB, ABC, ABCD, ABCE], options);
  const handles: number[][] = [[], [], [], []];
  for (let i = 0; i < count; i++) {
    const [a, b, c, d, e] = [0, 1, 2, 3, 4].map((k) => start(i, k)) as [number, number, number, number, number];
    handles[0]!.push(rt.create(AB, { a, b }).handle);
    handles[1]!.push(rt.create(ABC, { a, b, c }).handle);
    handles[2]!.push(rt.create(ABCD, { a, b, c, d }).handle);
    handles[3]!.push(rt.create(ABCE, { a, b, c, e }).handle);
  }
  return {
    runtime: rt,
    step(): void {
      rt.doAll(AB, 'swapAB');
      rt.doAll(ABCD, 'swapCD');
      rt.doAll(ABCE, 'swapCE');
    },
    check(ops: number): void {
      checkValues(rt, handles, count, ops);
      checkCompiled(rt, options, METHODS);
    },
    close: () => rt.close(),
  };
}

function checkValues(rt: Runtime, handles: number[][], count: number, ops: number): void {
  const odd = ops % 2 === 1;
  const is = (what: string, h: number, got: number, want: number): void =>
    expect(got === want, () => `${what} of object ${h} is ${got} after ${ops} ops, expected ${want}`);
  for (let i = 0; i < count; i++) {
    const [a, b, c, d, e] = [0, 1, 2, 3, 4].map((k) => start(i, k)) as [number, number, number, number, number];
    const [x, y] = odd ? [b, a] : [a, b];
    const ab = rt.get(AB, handles[0]![i]!);
    is('AB.a', ab.handle, ab.a, x);
    is('AB.b', ab.handle, ab.b, y);
    const abc = rt.get(ABC, handles[1]![i]!);
    is('ABC.a', abc.handle, abc.a, x);
    is('ABC.b', abc.handle, abc.b, y);
    is('ABC.c', abc.handle, abc.c, c);
    const abcd = rt.get(ABCD, handles[2]![i]!);
    is('ABCD.a', abcd.handle, abcd.a, x);
    is('ABCD.b', abcd.handle, abcd.b, y);
    is('ABCD.c', abcd.handle, abcd.c, odd ? d : c);
    is('ABCD.d', abcd.handle, abcd.d, odd ? c : d);
    const abce = rt.get(ABCE, handles[3]![i]!);
    is('ABCE.a', abce.handle, abce.a, x);
    is('ABCE.b', abce.handle, abce.b, y);
    is('ABCE.c', abce.handle, abce.c, odd ? e : c);
    is('ABCE.e', abce.handle, abce.e, odd ? c : e);
  }
  for (const [cls, name] of [
    [AB, 'AB'],
    [ABC, 'ABC'],
    [ABCD, 'ABCD'],
    [ABCE, 'ABCE'],
  ] as const) {
    const n = rt.count(cls);
    const want = name === 'AB' ? 4 * count : name === 'ABC' ? 3 * count : count;
    expect(n === want, () => `${n} objects of ${name} and its subclasses, expected ${want}`);
  }
}
