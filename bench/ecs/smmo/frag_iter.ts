/**
 * frag_iter in smmo: 26 component types A … Z, 100 entities of each, every entity also
 * with a Data component; two systems double Data (every entity) and Z. An entity is an
 * object of one of 26 classes that all extend the abstract class Data, which declares the
 * shared field; Z adds its own field. "Every entity with Data" is a do-all over Data (one
 * pass per concrete class: 26 passes of 100 objects), "with Z" one over Z.
 */
import { i32, object } from '../../../runtime/index.js';
import { doubled, expect } from '../harness.js';
import { checkCompiled, smmoRuntime, type SmmoCase, type SmmoCaseOptions } from './common.js';

export abstract class Data extends object({ data: i32 }, { abstract: true }) {
  doubleData(): void {
    this.data *= 2;
  }
}

export class A extends Data {}
export class B extends Data {}
export class C extends Data {}
export class D extends Data {}
export class E extends Data {}
export class F extends Data {}
export class G extends Data {}
export class H extends Data {}
export class I extends Data {}
export class J extends Data {}
export class K extends Data {}
export class L extends Data {}
export class M extends Data {}
export class N extends Data {}
export class O extends Data {}
export class P extends Data {}
export class Q extends Data {}
export class R extends Data {}
export class S extends Data {}
export class T extends Data {}
export class U extends Data {}
export class V extends Data {}
export class W extends Data {}
export class X extends Data {}
export class Y extends Data {}
export class Z extends Data.extend({ z: i32 }) {
  doubleZ(): void {
    this.z *= 2;
  }
}

/** The 26 concrete classes, A … Z. */
export const FRAGMENTS = [A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S, T, U, V, W, X, Y, Z] as const;

const METHODS = [...FRAGMENTS.map((c) => `${c.name}.doubleData`), 'Z.doubleZ'];

export async function setup(count: number, options: SmmoCaseOptions): Promise<SmmoCase> {
  const rt = await smmoRuntime([Data, ...FRAGMENTS], options);
  for (let i = 0; i < count; i++) {
    for (const cls of FRAGMENTS) {
      if (cls === Z) rt.create(Z, { data: 1, z: 1 });
      else rt.create(cls, { data: 1 });
    }
  }
  return {
    runtime: rt,
    step(): void {
      rt.doAll(Data, 'doubleData');
      rt.doAll(Z, 'doubleZ');
    },
    check(ops: number): void {
      const want = doubled(1, ops, 'i32');
      for (const cls of FRAGMENTS) {
        let n = 0;
        rt.deviceDo(cls, (o) => {
          n++;
          expect(o.data === want, () => `${cls.name}.data of object ${o.handle} is ${o.data} after ${ops} ops, expected ${want}`);
        });
        expect(n === count, () => `${n} objects of ${cls.name}, expected ${count}`);
      }
      rt.deviceDo(Z, (z) => expect(z.z === want, () => `Z.z of object ${z.handle} is ${z.z} after ${ops} ops, expected ${want}`));
      checkCompiled(rt, options, METHODS);
    },
    close: () => rt.close(),
  };
}
