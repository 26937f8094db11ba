/**
 * add_remove in smmo: 1 000 entities with a component A; one system adds a component B to
 * each, the next removes B from every entity that has it.
 *
 * Mapping: an smmo object has a fixed class, so a component that comes and goes is its
 * own object. "Add B to entity e" creates a B object whose field `entity` refers to e
 * (an A); "remove B" deletes that object. "Every entity with B" is a do-all over B, which
 * reaches the entity through the reference. Where this differs from an ECS:
 *  - the B has a handle of its own; the entity's identity is its A, and `b.entity` leads
 *    from the component to it, not the other way: asking an A whether it has a B needs a
 *    back reference (one more field store per add and per remove) or a search;
 *  - an ECS makes adding B twice a no-op (or an error) and moves the entity between
 *    archetypes; here a second create would give the entity two Bs;
 *  - a flag field on A (`hasB`) would be the other mapping: no allocation at all, but a
 *    query for B would then visit every A and test the flag.
 * In smmo this suite therefore costs what entity_cycle costs, plus one reference store.
 *
 * The check: A's objects as set up, no B left, and one more update run system by system
 * (the final state does not show whether Bs ever existed): after the first, one B per A,
 * each referring to a different A; after the second none. `step` runs exactly these two
 * system functions.
 */
import { i32, object, ref } from '../../../runtime/index.js';
import { expect } from '../harness.js';
import { checkCompiled, smmoRuntime, type SmmoCase, type SmmoCaseOptions } from './common.js';

export class A extends object({ value: i32 }) {
  addB(): void {
    this.runtime.create(B, { entity: this });
  }
}

export class B extends object({ entity: ref(() => A) }) {
  removeB(): void {
    this.destroy();
  }
}

const METHODS = ['A.addB', 'B.removeB'];

export async function setup(count: number, options: SmmoCaseOptions): Promise<SmmoCase> {
  const rt = await smmoRuntime([A, B], options);
  const entities = new Set<number>();
  for (let i = 0; i < count; i++) entities.add(rt.create(A, { value: i }).handle);
  const addBs = (): void => rt.doAll(A, 'addB');
  const removeBs = (): void => rt.doAll(B, 'removeB');
  return {
    runtime: rt,
    step(): void {
      addBs();
      removeBs();
    },
    check(ops: number): void {
      const as: number[] = [];
      rt.deviceDo(A, (a) => as.push(a.handle));
      expect(as.length === count && as.every((h) => entities.has(h)), () => `after ${ops} ops the A objects are not the ${count} set up`);
      expect(rt.count(B) === 0, () => `${rt.count(B)} B objects left after ${ops} ops, expected 0`);
      addBs();
      const owners = new Set<number>();
      let bs = 0;
      rt.deviceDo(B, (b) => {
        bs++;
        if (b.entity !== null) owners.add(b.entity.handle);
      });
      expect(
        bs === count && owners.size === count && [...owners].every((h) => entities.has(h)),
        () => `the add system made ${bs} Bs for ${owners.size} distinct As, expected one B on each of the ${count} As`,
      );
      removeBs();
      expect(rt.count(B) === 0, () => `the remove system left ${rt.count(B)} Bs, expected 0`);
      checkCompiled(rt, options, METHODS);
    },
    close: () => rt.close(),
  };
}
