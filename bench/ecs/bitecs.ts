/**
 * The five suites in bitecs 0.3.34, written from its documented API (README and API documentation):
 * defineComponent({ value: Types.… }) gives a store of typed arrays indexed by entity id;
 * defineQuery([...]) a function that returns the ids of the world's entities that have
 * every listed component; a system is a function of the world, and pipe() chains them.
 * bitecs applies removals from a query's list when the query is next called, so a system
 * may remove the entities it iterates while walking forwards.
 *
 * Each case counts what its structural systems did per pass (one addition per system
 * call, not per entity), so that `check` can tell that they ran.
 */
import {
  Types,
  addComponent,
  addEntity,
  createWorld,
  defineComponent,
  defineQuery,
  hasComponent,
  pipe,
  removeComponent,
  removeEntity,
  type IWorld,
} from 'bitecs';
import { doubled, expect, type CaseSetup, type EcsCase, type Suite } from './harness.js';

/*
 * Every system below is a function literal of its own, as bitecs's README writes them,
 * not the product of a shared factory: closures of one literal share V8's type feedback,
 * and packed_5 built from a `doubling(c)` factory ran 30× slower (2 900 instead of
 * 87 000 ops/s on the dev VM).
 */

function packed5(count: number): EcsCase {
  const world = createWorld();
  const A = defineComponent({ value: Types.ui32 });
  const B = defineComponent({ value: Types.ui32 });
  const C = defineComponent({ value: Types.ui32 });
  const D = defineComponent({ value: Types.ui32 });
  const E = defineComponent({ value: Types.ui32 });
  const comps = [A, B, C, D, E];
  const withA = defineQuery([A]);
  const withB = defineQuery([B]);
  const withC = defineQuery([C]);
  const withD = defineQuery([D]);
  const withE = defineQuery([E]);
  const doubleA = (w: IWorld): IWorld => {
    const ents = withA(w);
    for (let i = 0; i < ents.length; i++) A.value[ents[i]!]! *= 2;
    return w;
  };
  const doubleB = (w: IWorld): IWorld => {
    const ents = withB(w);
    for (let i = 0; i < ents.length; i++) B.value[ents[i]!]! *= 2;
    return w;
  };
  const doubleC = (w: IWorld): IWorld => {
    const ents = withC(w);
    for (let i = 0; i < ents.length; i++) C.value[ents[i]!]! *= 2;
    return w;
  };
  const doubleD = (w: IWorld): IWorld => {
    const ents = withD(w);
    for (let i = 0; i < ents.length; i++) D.value[ents[i]!]! *= 2;
    return w;
  };
  const doubleE = (w: IWorld): IWorld => {
    const ents = withE(w);
    for (let i = 0; i < ents.length; i++) E.value[ents[i]!]! *= 2;
    return w;
  };
  const ids: number[] = [];
  for (let i = 0; i < count; i++) {
    const e = addEntity(world);
    ids.push(e);
    for (const c of comps) {
      addComponent(world, c, e);
      c.value[e] = 1;
    }
  }
  const update = pipe(doubleA, doubleB, doubleC, doubleD, doubleE);
  return {
    step: () => update(world),
    check(ops) {
      const want = doubled(1, ops, 'u32');
      comps.forEach((c, k) =>
        ids.forEach((e) =>
          expect(c.value[e] === want, () => `component ${k} of entity ${e} is ${c.value[e]} after ${ops} ops, expected ${want}`),
        ),
      );
    },
  };
}

function simpleIter(count: number): EcsCase {
  const world = createWorld();
  const A = defineComponent({ value: Types.ui32 });
  const B = defineComponent({ value: Types.ui32 });
  const C = defineComponent({ value: Types.ui32 });
  const D = defineComponent({ value: Types.ui32 });
  const E = defineComponent({ value: Types.ui32 });
  const withAB = defineQuery([A, B]);
  const withCD = defineQuery([C, D]);
  const withCE = defineQuery([C, E]);
  const swapAB = (w: IWorld): IWorld => {
    const ents = withAB(w);
    for (let i = 0; i < ents.length; i++) {
      const e = ents[i]!;
      const t = A.value[e]!;
      A.value[e] = B.value[e]!;
      B.value[e] = t;
    }
    return w;
  };
  const swapCD = (w: IWorld): IWorld => {
    const ents = withCD(w);
    for (let i = 0; i < ents.length; i++) {
      const e = ents[i]!;
      const t = C.value[e]!;
      C.value[e] = D.value[e]!;
      D.value[e] = t;
    }
    return w;
  };
  const swapCE = (w: IWorld): IWorld => {
    const ents = withCE(w);
    for (let i = 0; i < ents.length; i++) {
      const e = ents[i]!;
      const t = C.value[e]!;
      C.value[e] = E.value[e]!;
      E.value[e] = t;
    }
    return w;
  };
  const kinds = [
    [A, B],
    [A, B, C],
    [A, B, C, D],
    [A, B, C, E],
  ];
  // Entity i of each kind starts with A = 5i+1, B = 5i+2, … (the smmo case's values).
  const ids: number[][] = [[], [], [], []];
  for (let i = 0; i < count; i++) {
    kinds.forEach((kind, k) => {
      const e = addEntity(world);
      ids[k]!.push(e);
      for (const c of kind) {
        addComponent(world, c, e);
        c.value[e] = 5 * i + [A, B, C, D, E].indexOf(c) + 1;
      }
    });
  }
  const update = pipe(swapAB, swapCD, swapCE);
  return {
    step: () => update(world),
    check(ops) {
      const odd = ops % 2 === 1;
      for (let i = 0; i < count; i++) {
        const [a, b, c, d, e] = [1, 2, 3, 4, 5].map((j) => 5 * i + j) as [number, number, number, number, number];
        const want = [
          [odd ? b : a, odd ? a : b],
          [odd ? b : a, odd ? a : b, c],
          [odd ? b : a, odd ? a : b, odd ? d : c, odd ? c : d],
          [odd ? b : a, odd ? a : b, odd ? e : c, odd ? c : e],
        ];
        kinds.forEach((kind, k) => {
          const id = ids[k]![i]!;
          kind.forEach((comp, j) => {
            const got = comp.value[id];
            expect(got === want[k]![j], () => `entity ${id}: component ${j} is ${got} after ${ops} ops, expected ${want[k]![j]}`);
          });
        });
      }
    },
  };
}

function fragIter(count: number): EcsCase {
  const world = createWorld();
  const letters = Array.from({ length: 26 }, () => defineComponent({ value: Types.i32 }));
  const Z = letters[25]!;
  const Data = defineComponent({ value: Types.i32 });
  const ids: number[] = [];
  for (let i = 0; i < count; i++) {
    for (const l of letters) {
      const e = addEntity(world);
      ids.push(e);
      addComponent(world, Data, e);
      addComponent(world, l, e);
      Data.value[e] = 1;
      if (l === Z) Z.value[e] = 1;
    }
  }
  const withData = defineQuery([Data]);
  const withZ = defineQuery([Z]);
  const dataSystem = (w: IWorld): IWorld => {
    const ents = withData(w);
    for (let i = 0; i < ents.length; i++) Data.value[ents[i]!]! *= 2;
    return w;
  };
  const zSystem = (w: IWorld): IWorld => {
    const ents = withZ(w);
    for (let i = 0; i < ents.length; i++) Z.value[ents[i]!]! *= 2;
    return w;
  };
  return {
    step: () => {
      dataSystem(world);
      zSystem(world);
    },
    check(ops) {
      const want = doubled(1, ops, 'i32');
      let zs = 0;
      for (const e of ids) {
        expect(Data.value[e] === want, () => `Data of entity ${e} is ${Data.value[e]} after ${ops} ops, expected ${want}`);
        if (!hasComponent(world, Z, e)) continue;
        zs++;
        expect(Z.value[e] === want, () => `Z of entity ${e} is ${Z.value[e]} after ${ops} ops, expected ${want}`);
      }
      expect(zs === count, () => `${zs} entities with Z, expected ${count}`);
    },
  };
}

function entityCycle(count: number): EcsCase {
  const world = createWorld();
  const A = defineComponent({ value: Types.i32 });
  const B = defineComponent({ value: Types.i32 });
  const withA = defineQuery([A]);
  const withB = defineQuery([B]);
  let destroyed = 0;
  const spawnBs = (w: IWorld): IWorld => {
    const ents = withA(w);
    for (let i = 0; i < ents.length; i++) {
      const e = addEntity(w);
      addComponent(w, B, e);
      B.value[e] = A.value[ents[i]!]!;
    }
    return w;
  };
  const destroyBs = (w: IWorld): IWorld => {
    const ents = withB(w);
    destroyed += ents.length;
    for (let i = 0; i < ents.length; i++) removeEntity(w, ents[i]!);
    return w;
  };
  for (let i = 0; i < count; i++) {
    const e = addEntity(world);
    addComponent(world, A, e);
    A.value[e] = i;
  }
  const update = pipe(spawnBs, destroyBs);
  return {
    step: () => update(world),
    check(ops) {
      expect(destroyed === ops * count, () => `${destroyed} entities destroyed in ${ops} ops, expected ${ops * count}`);
      expect(withB(world).length === 0, () => `${withB(world).length} entities with B left, expected 0`);
      const as = withA(world).map((e) => A.value[e]!);
      as.sort((x, y) => x - y);
      expect(as.length === count && as.every((v, i) => v === i), () => `the entities with A changed`);
    },
  };
}

function addRemove(count: number): EcsCase {
  const world = createWorld();
  const A = defineComponent();
  const B = defineComponent();
  const withA = defineQuery([A]);
  const withB = defineQuery([B]);
  let removed = 0;
  const addBs = (w: IWorld): IWorld => {
    const ents = withA(w);
    for (let i = 0; i < ents.length; i++) addComponent(w, B, ents[i]!);
    return w;
  };
  const removeBs = (w: IWorld): IWorld => {
    const ents = withB(w);
    removed += ents.length;
    for (let i = 0; i < ents.length; i++) removeComponent(w, B, ents[i]!);
    return w;
  };
  const as: number[] = [];
  for (let i = 0; i < count; i++) {
    const e = addEntity(world);
    addComponent(world, A, e);
    as.push(e);
  }
  const update = pipe(addBs, removeBs);
  return {
    step: () => update(world),
    check(ops) {
      expect(removed === ops * count, () => `B removed ${removed} times in ${ops} ops, expected ${ops * count}`);
      expect(
        as.every((e) => hasComponent(world, A, e) && !hasComponent(world, B, e)),
        () => `after ${ops} ops not every entity has A and no B`,
      );
    },
  };
}

export const bitecsCases: Record<Suite, CaseSetup> = {
  packed_5: packed5,
  simple_iter: simpleIter,
  frag_iter: fragIter,
  entity_cycle: entityCycle,
  add_remove: addRemove,
};
