/**
 * The WASM kernels of every wa-tor pass, declared by `Cell[KERNELS]`, `Fish[KERNELS]` and
 * `Shark[KERNELS]` (runtime/kernels.ts explains the spec and the dispatch): Cell.prepare,
 * Cell.decide, Fish.prepare, Shark.prepare (wasm/src/wator.rs), and Fish.update and
 * Shark.update (wasm/src/wator_update.rs), which create and delete agents: their kernels
 * call the allocator core on the calling thread's state (`allocator`), zero a new agent
 * as create() does (`zero`) and keep the executor contract ("Allocating kernels" there).
 *
 * Agreement: exact. Integer fields, the same draws from the same streams in the same
 * lane order; test/wasm-wator.test.ts checks the heap byte for byte after each pass and
 * the digests of whole runs (ts vs wasm, 1 vs 2 threads).
 *
 * Why these pay (apps/wa-tor/README.md, "Performance"): in TypeScript every reference
 * read makes a view object (a cell's four neighbours, their agents…), which is most of
 * these passes' time; the kernels follow handles as plain integers.
 */
import type { KernelParam, KernelSpec } from '../../runtime/index.js';

/** The parameters of the field of the parameter's name. */
const u32 = { kind: 'field', type: 'u32' } as const;
const ref = { kind: 'field', type: 'ref' } as const;
/** randomState[0..4]: the object's random stream. */
const randomState: KernelParam = { kind: 'field', type: 'u32', elements: 4 };
const neighbors = (cls?: string): KernelParam => ({
  kind: 'field',
  name: 'neighbors',
  type: 'ref',
  elements: 4,
  ...(cls ? { class: cls } : {}),
});
const requests = (cls?: string): KernelParam => ({
  kind: 'field',
  name: 'neighborRequest',
  type: 'bool',
  elements: 5,
  ...(cls ? { class: cls } : {}),
});
/** What an agent's kernel reads of the cells: neighbours, agent, request flags (wator.rs CellFields). */
const cellFields = {
  cellNeighbors: neighbors('Cell'),
  cellAgent: { kind: 'field', name: 'agent', type: 'ref', class: 'Cell' },
  cellRequests: requests('Cell'),
} as const satisfies Record<string, KernelParam>;

export function cellKernels(): readonly KernelSpec[] {
  return [
    { method: 'prepare', export: 'wator_cell_prepare', params: { requests: requests() } },
    {
      method: 'decide',
      export: 'wator_cell_decide',
      params: {
        randomState,
        neighbors: neighbors(),
        agent: ref,
        requests: requests(),
        // the granted agent's newPosition: its offset per concrete agent type (Fish, else Shark)
        fishType: { kind: 'typeId', class: 'Fish' },
        fishNewPosition: { kind: 'field', name: 'newPosition', type: 'ref', class: 'Fish' },
        sharkNewPosition: { kind: 'field', name: 'newPosition', type: 'ref', class: 'Shark' },
      },
    },
  ];
}

/** The fields of a new agent of concrete class `cls` that spawnFish / spawnShark set (model.ts). */
function child(cls: 'Fish' | 'Shark'): Record<string, KernelParam> {
  return {
    childType: { kind: 'typeId', class: cls },
    childZero: { kind: 'zero', class: cls },
    childRandomState: { kind: 'field', name: 'randomState', type: 'u32', elements: 4, class: cls },
    childPosition: { kind: 'field', name: 'position', type: 'ref', class: cls },
    childNewPosition: { kind: 'field', name: 'newPosition', type: 'ref', class: cls },
    childEggTimer: { kind: 'field', name: 'eggTimer', type: 'u32', class: cls },
    ...(cls === 'Shark' ? { childEnergy: { kind: 'field', name: 'energy', type: 'u32', class: 'Shark' } } : {}),
  };
}
const allocator = { kind: 'allocator' } as const;
const cellAgent = cellFields.cellAgent;

export function fishKernels(): readonly KernelSpec[] {
  return [
    {
      method: 'prepare',
      export: 'wator_fish_prepare',
      params: { randomState, position: ref, newPosition: ref, eggTimer: u32, ...cellFields },
    },
    {
      method: 'update',
      export: 'wator_fish_update',
      params: { randomState, position: ref, newPosition: ref, eggTimer: u32, cellAgent, allocator, ...child('Fish') },
    },
  ];
}

export function sharkKernels(): readonly KernelSpec[] {
  return [
    {
      method: 'prepare',
      export: 'wator_shark_prepare',
      params: {
        randomState,
        position: ref,
        newPosition: ref,
        eggTimer: u32,
        energy: u32,
        ...cellFields,
        // `instanceof Fish` of a neighbour's agent: Fish has no subclasses
        fishType: { kind: 'typeId', class: 'Fish' },
      },
    },
    {
      method: 'update',
      export: 'wator_shark_update',
      params: {
        randomState,
        position: ref,
        newPosition: ref,
        eggTimer: u32,
        energy: u32,
        cellAgent,
        allocator,
        // `prey instanceof Fish`: Fish has no subclasses
        fishType: { kind: 'typeId', class: 'Fish' },
        ...child('Shark'),
      },
    },
  ];
}
