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
import type { KernelParam, KernelSpec, WgslKernel } from '../../runtime/index.js';

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
    {
      method: 'prepare',
      export: 'wator_cell_prepare',
      params: { requests: requests() },
      wgsl: watorWgsl('wator_cell_prepare.wgsl', {}),
    },
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
      wgsl: watorWgsl(
        'wator_cell_decide.wgsl',
        {},
        {
          classFields: {
            fishNewPosition: { class: 'Fish', field: 'newPosition', kind: 'ref' },
            sharkNewPosition: { class: 'Shark', field: 'newPosition', kind: 'ref' },
          },
        },
      ),
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

/**
 * Backend 'webgpu': the WGSL kernel of each pass (runtime/webgpu/wgsl/wator_*.wgsl, with
 * the helpers of wator_lib.wgsl and the allocator alloc.wgsl). The same rules, draws and
 * writes as the methods; the update passes create and delete agents through the
 * device-side allocator (`allocates`: the runner re-takes the pass snapshot after them).
 * Every kernel binds the Cell fields an agent reads (neighbours, agent, request flags),
 * its own class's stream (`rs`) and Fish's type id; `own` adds its own scalar fields,
 * `classFields` / `arrays` / `typeIds` what it writes of other classes.
 * Exact: the occupied cells and their kinds after each step equal the TypeScript run's
 * (digest); handles differ (GPU allocation order), so heaps are not byte-identical
 * (test/webgpu-wator.test.ts).
 */
function watorWgsl(
  file: string,
  fields: WgslKernel['fields'],
  extra: Pick<WgslKernel, 'classFields' | 'arrays' | 'typeIds'> = {},
  allocates = false,
): WgslKernel {
  const cellArray = (field: string, kind: 'ref' | 'bool', length: number) => ({ class: 'Cell', field, kind, length }) as const;
  return {
    file,
    libraries: ['wator_lib.wgsl', 'objects.wgsl', 'alloc.wgsl'],
    fields,
    classFields: { cellAgent: { class: 'Cell', field: 'agent', kind: 'ref' }, ...extra.classFields },
    arrays: {
      rs: { field: 'randomState', kind: 'u32', length: 4 },
      cellNb: cellArray('neighbors', 'ref', 4),
      cellReq: cellArray('neighborRequest', 'bool', 5),
      ...extra.arrays,
    },
    typeIds: { T_FISH: 'Fish', ...extra.typeIds },
    gpuLists: true,
    args: [],
    tunables: { WG: 64 },
    dispatch: 'per-object',
    ...(allocates ? { allocates: true } : {}),
  };
}

/** What an update kernel sets of a new agent of concrete class `cls` (spawnFish / spawnShark), as the WASM `child` params. */
function wgslChild(cls: 'Fish' | 'Shark'): Pick<WgslKernel, 'classFields' | 'arrays' | 'typeIds'> {
  const f = (field: string, kind: 'ref' | 'u32') => ({ class: cls, field, kind }) as const;
  return {
    classFields: {
      childPosition: f('position', 'ref'),
      childNewPosition: f('newPosition', 'ref'),
      childEggTimer: f('eggTimer', 'u32'),
      ...(cls === 'Shark' ? { childEnergy: f('energy', 'u32') } : {}),
    },
    arrays: { childRs: { class: cls, field: 'randomState', kind: 'u32', length: 4 } },
    typeIds: { T_CHILD: cls },
  };
}
const agentOwn = { position: 'ref', newPosition: 'ref', eggTimer: 'u32' } as const;
const sharkOwn = { ...agentOwn, energy: 'u32' } as const;

export function fishKernels(): readonly KernelSpec[] {
  return [
    {
      method: 'prepare',
      export: 'wator_fish_prepare',
      params: { randomState, position: ref, newPosition: ref, eggTimer: u32, ...cellFields },
      wgsl: watorWgsl('wator_fish_prepare.wgsl', agentOwn),
    },
    {
      method: 'update',
      export: 'wator_fish_update',
      params: { randomState, position: ref, newPosition: ref, eggTimer: u32, cellAgent, allocator, ...child('Fish') },
      wgsl: watorWgsl('wator_fish_update.wgsl', agentOwn, wgslChild('Fish'), true),
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
      wgsl: watorWgsl('wator_shark_prepare.wgsl', sharkOwn),
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
      wgsl: watorWgsl('wator_shark_update.wgsl', sharkOwn, wgslChild('Shark'), true),
    },
  ];
}
