/**
 * packed_5 in smmo: 1 000 entities with components A … E, five systems, each doubling one
 * component. An entity is one object of a class with five u32 fields; a system is a
 * do-all of a method that doubles one field.
 */
import { object, u32 } from '../../../runtime/index.js';
import { doubled, expect } from '../harness.js';
import { checkCompiled, smmoRuntime, type SmmoCase, type SmmoCaseOptions } from './common.js';

export class Packed extends object({ a: u32, b: u32, c: u32, d: u32, e: u32 }) {
  doubleA(): void {
    this.a *= 2;
  }
  doubleB(): void {
    this.b *= 2;
  }
  doubleC(): void {
    this.c *= 2;
  }
  doubleD(): void {
    this.d *= 2;
  }
  doubleE(): void {
    this.e *= 2;
  }
}

const METHODS = ['doubleA', 'doubleB', 'doubleC', 'doubleD', 'doubleE'].map((m) => `Packed.${m}`);

export async function setup(count: number, options: SmmoCaseOptions): Promise<SmmoCase> {
  const rt = await smmoRuntime([Packed], options);
  for (let i = 0; i < count; i++) rt.create(Packed, { a: 1, b: 1, c: 1, d: 1, e: 1 });
  return {
    runtime: rt,
    step(): void {
      rt.doAll(Packed, 'doubleA');
      rt.doAll(Packed, 'doubleB');
      rt.doAll(Packed, 'doubleC');
      rt.doAll(Packed, 'doubleD');
      rt.doAll(Packed, 'doubleE');
    },
    check(ops: number): void {
      const want = doubled(1, ops, 'u32');
      let n = 0;
      rt.deviceDo(Packed, (p) => {
        n++;
        for (const [k, v] of [
          ['a', p.a],
          ['b', p.b],
          ['c', p.c],
          ['d', p.d],
          ['e', p.e],
        ] as const) {
          expect(v === want, () => `Packed.${k} of object ${p.handle} is ${v} after ${ops} ops, expected ${want}`);
        }
      });
      expect(n === count, () => `${n} Packed objects, expected ${count}`);
      checkCompiled(rt, options, METHODS);
    },
    close: () => rt.close(),
  };
}
