/**
 * entity_cycle in smmo: 1 000 entities with a component A; one system creates an entity
 * with a component B for each of them, the next destroys every entity with B. An entity
 * with A is an object of class A, one with B an object of class B; the first system is a
 * do-all over A whose method creates a B (carrying its A's value, as the bitecs case of
 * the original copies it), the second a do-all over B whose method deletes its object.
 *
 * The check: A's objects and values are as set up, no B is left, and — since the final
 * state does not show whether the Bs ever existed — one more update run system by
 * system: after the first there is one B per A, with the A's values; after the second
 * none. `step` runs exactly these two system functions.
 */
import { i32, object } from '../../../runtime/index.js';
import { expect } from '../harness.js';
import { checkCompiled, smmoRuntime, type SmmoCase, type SmmoCaseOptions } from './common.js';

export class A extends object({ value: i32 }) {
  spawnB(): void {
    this.runtime.create(B, { value: this.value });
  }
}

export class B extends object({ value: i32 }) {
  die(): void {
    this.destroy();
  }
}

const METHODS = ['A.spawnB', 'B.die'];

export async function setup(count: number, options: SmmoCaseOptions): Promise<SmmoCase> {
  const rt = await smmoRuntime([A, B], options);
  for (let i = 0; i < count; i++) rt.create(A, { value: i });
  const spawnBs = (): void => rt.doAll(A, 'spawnB');
  const destroyBs = (): void => rt.doAll(B, 'die');
  const values = (cls: typeof A | typeof B): number[] => {
    const out: number[] = [];
    rt.deviceDo(cls, (o) => out.push(o.value));
    return out.sort((x, y) => x - y);
  };
  const isRange = (xs: number[]): boolean => xs.length === count && xs.every((x, i) => x === i);
  return {
    runtime: rt,
    step(): void {
      spawnBs();
      destroyBs();
    },
    check(ops: number): void {
      expect(isRange(values(A)), () => `after ${ops} ops the A objects are not the ${count} set up (values 0 … ${count - 1})`);
      expect(rt.count(B) === 0, () => `${rt.count(B)} B objects left after ${ops} ops, expected 0`);
      spawnBs();
      expect(isRange(values(B)), () => `the spawn system made ${rt.count(B)} Bs, expected one per A with its value`);
      destroyBs();
      expect(rt.count(B) === 0, () => `the destroy system left ${rt.count(B)} Bs, expected 0`);
      checkCompiled(rt, options, METHODS);
    },
    close: () => rt.close(),
  };
}
