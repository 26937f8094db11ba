/**
 * The five suites in piecs 0.4.0, written from its documented API (README and type declarations):
 * a World hands out component ids; values live in typed arrays the program keeps itself
 * (piecs: "bring your own component sets"), indexed by entity id; an entity system runs
 * once per archetype that matches its query, with that archetype's entity ids; update()
 * runs the registered systems in order. A system that moves entities out of the archetype
 * it iterates (deleteEntity, add/removeComponent) walks the ids backwards: piecs removes
 * an id by moving the last one into its place.
 *
 * Each case counts what its structural systems did per pass (one addition per system
 * call, not per entity), so that `check` can tell that they ran.
 */
import { World, createEntitySystem } from 'piecs';
import { doubled, expect, type CaseSetup, type EcsCase, type Suite } from './harness.js';

/** A component: its piecs id and its values by entity id. */
interface Component<V> {
  readonly id: number;
  readonly values: V;
}

function component<V>(world: World, values: V): Component<V> {
  return { id: world.createComponentId(), values };
}

/*
 * Every system below is a function literal of its own, as piecs's users write them, not
 * the product of a shared factory: closures of one literal share V8's type feedback (in
 * bitecs's packed_5 a factory made the systems 30× slower; see bitecs.ts).
 */

type U32 = Component<Uint32Array>;

function packed5(count: number): EcsCase {
  const world = new World();
  const A = component(world, new Uint32Array(count).fill(1));
  const B = component(world, new Uint32Array(count).fill(1));
  const C = component(world, new Uint32Array(count).fill(1));
  const D = component(world, new Uint32Array(count).fill(1));
  const E = component(world, new Uint32Array(count).fill(1));
  world
    .registerSystem(
      createEntitySystem(
        (entities) => {
          for (let i = 0; i < entities.length; i++) A.values[entities[i]!]! *= 2;
        },
        (q) => q.every(A),
      ),
    )
    .registerSystem(
      createEntitySystem(
        (entities) => {
          for (let i = 0; i < entities.length; i++) B.values[entities[i]!]! *= 2;
        },
        (q) => q.every(B),
      ),
    )
    .registerSystem(
      createEntitySystem(
        (entities) => {
          for (let i = 0; i < entities.length; i++) C.values[entities[i]!]! *= 2;
        },
        (q) => q.every(C),
      ),
    )
    .registerSystem(
      createEntitySystem(
        (entities) => {
          for (let i = 0; i < entities.length; i++) D.values[entities[i]!]! *= 2;
        },
        (q) => q.every(D),
      ),
    )
    .registerSystem(
      createEntitySystem(
        (entities) => {
          for (let i = 0; i < entities.length; i++) E.values[entities[i]!]! *= 2;
        },
        (q) => q.every(E),
      ),
    );
  world.initialize();
  const all = world.prefabricate([A, B, C, D, E]);
  for (let i = 0; i < count; i++) world.createEntity(all);
  return {
    step: () => world.update(),
    check(ops) {
      const want = doubled(1, ops, 'u32');
      [A, B, C, D, E].forEach((c, k) =>
        c.values.forEach((v, e) => expect(v === want, () => `component ${k} of entity ${e} is ${v} after ${ops} ops, expected ${want}`)),
      );
    },
  };
}

function simpleIter(count: number): EcsCase {
  const world = new World();
  const n = 4 * count;
  const [A, B, C, D, E] = [0, 1, 2, 3, 4].map(() => component(world, new Uint32Array(n))) as [U32, U32, U32, U32, U32];
  world
    .registerSystem(
      createEntitySystem(
        (entities) => {
          for (let i = 0; i < entities.length; i++) {
            const e = entities[i]!;
            const t = A.values[e]!;
            A.values[e] = B.values[e]!;
            B.values[e] = t;
          }
        },
        (q) => q.every(A, B),
      ),
    )
    .registerSystem(
      createEntitySystem(
        (entities) => {
          for (let i = 0; i < entities.length; i++) {
            const e = entities[i]!;
            const t = C.values[e]!;
            C.values[e] = D.values[e]!;
            D.values[e] = t;
          }
        },
        (q) => q.every(C, D),
      ),
    )
    .registerSystem(
      createEntitySystem(
        (entities) => {
          for (let i = 0; i < entities.length; i++) {
            const e = entities[i]!;
            const t = C.values[e]!;
            C.values[e] = E.values[e]!;
            E.values[e] = t;
          }
        },
        (q) => q.every(C, E),
      ),
    );
  world.initialize();
  const kinds = [
    world.prefabricate([A, B]),
    world.prefabricate([A, B, C]),
    world.prefabricate([A, B, C, D]),
    world.prefabricate([A, B, C, E]),
  ];
  // Entity i of each kind starts with A = 5i+1, B = 5i+2, … (the smmo case's values).
  const ids: number[][] = [[], [], [], []];
  for (let i = 0; i < count; i++) {
    kinds.forEach((kind, k) => {
      const e = world.createEntity(kind);
      ids[k]!.push(e);
      [A, B, C, D, E].forEach((c, j) => {
        if (world.hasComponent(e, c)) c.values[e] = 5 * i + j + 1;
      });
    });
  }
  return {
    step: () => world.update(),
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
        for (let k = 0; k < 4; k++) {
          const id = ids[k]![i]!;
          const comps = k === 3 ? [A, B, C, E] : [A, B, C, D].slice(0, k + 2);
          comps.forEach((comp, j) => {
            const got = comp.values[id];
            expect(got === want[k]![j], () => `entity ${id}: component ${j} is ${got} after ${ops} ops, expected ${want[k]![j]}`);
          });
        }
      }
    },
  };
}

function fragIter(count: number): EcsCase {
  const world = new World();
  const letters = Array.from({ length: 26 }, () => world.createComponentId());
  const Z = { id: letters[25]!, values: new Int32Array(26 * count) };
  const Data = component(world, new Int32Array(26 * count));
  world
    .registerSystem(
      createEntitySystem(
        (entities) => {
          for (let i = 0; i < entities.length; i++) Data.values[entities[i]!]! *= 2;
        },
        (q) => q.every(Data),
      ),
    )
    .registerSystem(
      createEntitySystem(
        (entities) => {
          for (let i = 0; i < entities.length; i++) Z.values[entities[i]!]! *= 2;
        },
        (q) => q.every(Z),
      ),
    );
  world.initialize();
  const kinds = letters.map((l) => world.prefabricate([Data, l]));
  for (let i = 0; i < count; i++) {
    for (const kind of kinds) {
      const e = world.createEntity(kind);
      Data.values[e] = 1;
      if (kind === kinds[25]) Z.values[e] = 1;
    }
  }
  return {
    step: () => world.update(),
    check(ops) {
      const want = doubled(1, ops, 'i32');
      Data.values.forEach((v, e) => expect(v === want, () => `Data of entity ${e} is ${v} after ${ops} ops, expected ${want}`));
      let zs = 0;
      for (let e = 0; e < 26 * count; e++) {
        if (!world.hasComponent(e, Z)) continue;
        zs++;
        expect(Z.values[e] === want, () => `Z of entity ${e} is ${Z.values[e]} after ${ops} ops, expected ${want}`);
      }
      expect(zs === count, () => `${zs} entities with Z, expected ${count}`);
    },
  };
}

function entityCycle(count: number): EcsCase {
  const world = new World();
  const A = world.createComponentId();
  const B = world.createComponentId();
  const withA = world.prefabricate([A]);
  const withB = world.prefabricate([B]);
  let destroyed = 0;
  world
    .registerSystem(
      createEntitySystem(
        (entities, w) => {
          for (let i = 0; i < entities.length; i++) w.createEntity(withB);
        },
        (q) => q.every(A),
      ),
    )
    .registerSystem(
      createEntitySystem(
        (entities, w) => {
          destroyed += entities.length;
          for (let i = entities.length - 1; i >= 0; i--) w.deleteEntity(entities[i]!);
        },
        (q) => q.every(B),
      ),
    );
  world.initialize();
  const as: number[] = [];
  for (let i = 0; i < count; i++) as.push(world.createEntity(withA));
  return {
    step: () => world.update(),
    check(ops) {
      expect(destroyed === ops * count, () => `${destroyed} entities destroyed in ${ops} ops, expected ${ops * count}`);
      expect(withB.entities.length === 0, () => `${withB.entities.length} entities with B left, expected 0`);
      expect(withA.entities.length === count && as.every((e) => world.hasComponent(e, A)), () => `the entities with A changed`);
    },
  };
}

function addRemove(count: number): EcsCase {
  const world = new World();
  const A = world.createComponentId();
  const B = world.createComponentId();
  const withA = world.prefabricate([A]);
  let removed = 0;
  world
    .registerSystem(
      createEntitySystem(
        (entities, w) => {
          for (let i = entities.length - 1; i >= 0; i--) w.addComponent(entities[i]!, B);
        },
        (q) => q.every(A),
      ),
    )
    .registerSystem(
      createEntitySystem(
        (entities, w) => {
          removed += entities.length;
          for (let i = entities.length - 1; i >= 0; i--) w.removeComponent(entities[i]!, B);
        },
        (q) => q.every(B),
      ),
    );
  world.initialize();
  const as: number[] = [];
  for (let i = 0; i < count; i++) as.push(world.createEntity(withA));
  return {
    step: () => world.update(),
    check(ops) {
      expect(removed === ops * count, () => `B removed ${removed} times in ${ops} ops, expected ${ops * count}`);
      expect(
        as.every((e) => world.hasComponent(e, A) && !world.hasComponent(e, B)),
        () => `after ${ops} ops not every entity has A and no B`,
      );
    },
  };
}

export const piecsCases: Record<Suite, CaseSetup> = {
  packed_5: packed5,
  simple_iter: simpleIter,
  frag_iter: fragIter,
  entity_cycle: entityCycle,
  add_remove: addRemove,
};
