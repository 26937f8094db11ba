/**
 * The WASM kernels of game-of-life (wasm/src/gol.rs), declared by `Alive[KERNELS]` and
 * `Candidate[KERNELS]` (runtime/kernels.ts explains the spec and the dispatch): all five
 * passes of a step, Candidate.prepare, Alive.prepare, Candidate.update, Alive.update and
 * Alive.createCandidates. The update passes and createCandidates create and delete
 * agents: their kernels call the allocator core on the calling thread's state
 * (`allocator`), zero a new agent as create() does (`zero`), and keep the executor
 * contract, so the heap after every pass is byte-identical to the TypeScript methods'.
 *
 * Cells by id: cell i is the Cell with the i-th smallest handle (apps/grid.ts). The
 * methods look it up in a per-thread table (cellTable); a kernel gets the same mapping
 * from a `ranks` table that the host makes from the pass's block list of Cell (cells
 * are created by init and never deleted).
 *
 * Agreement: exact (integers only, the same reads and writes in the same lane order);
 * test/wasm-gol.test.ts checks the heap byte for byte after each pass and the digests of
 * whole runs (ts vs wasm, 1, 2 and 4 threads).
 */
import type { KernelParam, KernelSpec, WgslKernel } from '../../runtime/index.js';

const cellId = { kind: 'field', type: 'i32' } as const;
const action = { kind: 'field', type: 'i8' } as const;
const isNew = { kind: 'field', type: 'bool' } as const;
const width = { kind: 'arg', index: 0, type: 'i32' } as const;
const height = { kind: 'arg', index: 1, type: 'i32' } as const;
/** What an agent's kernel reads and writes of the cells. */
const cells = { kind: 'ranks', class: 'Cell' } as const;
const cellAgent = { kind: 'field', name: 'agent', type: 'ref', class: 'Cell' } as const;
const cellState = { kind: 'field', name: 'state', type: 'u8', class: 'Cell' } as const;
const allocator = { kind: 'allocator' } as const;

/** What a kernel needs to create an agent of concrete class `cls`: its type id, zero table and the fields it sets. */
function creates(prefix: 'alive' | 'candidate', cls: 'Alive' | 'Candidate'): Record<string, KernelParam> {
  return {
    [`${prefix}Type`]: { kind: 'typeId', class: cls },
    [`${prefix}Zero`]: { kind: 'zero', class: cls },
    [`${prefix}CellId`]: { kind: 'field', name: 'cellId', type: 'i32', class: cls },
    ...(cls === 'Alive' ? { aliveIsNew: { kind: 'field', name: 'isNew', type: 'bool', class: 'Alive' } } : {}),
  };
}

/**
 * Backend 'webgpu': the WGSL kernel of each pass (runtime/webgpu/wgsl/gol_*.wgsl, with the
 * helpers of gol_lib.wgsl and the allocator alloc.wgsl). The same rules, reads and writes
 * as the methods; the update passes and createCandidates create and delete agents through
 * the device-side allocator (`allocates`: the runner re-takes the pass snapshot after
 * them). Cells by id through the rank table of Cell (`ranks`, runtime/webgpu/ranks.ts).
 * Exact: the set of live cells after each step equals the TypeScript run's; handles
 * differ (GPU allocation order), so heaps are not byte-identical (test/webgpu-gol.test.ts).
 */
function golWgsl(file: string, own: 'Alive' | 'Candidate', allocates: boolean, readsSize = true): WgslKernel {
  return {
    file,
    libraries: ['gol_lib.wgsl', 'objects.wgsl', 'alloc.wgsl'],
    fields: own === 'Alive' ? { cellId: 'i32', action: 'i8', isNew: 'bool' } : { cellId: 'i32', action: 'i8' },
    classFields: {
      cellAgent: { class: 'Cell', field: 'agent', kind: 'ref' },
      cellState: { class: 'Cell', field: 'state', kind: 'u8' },
      aliveCellId: { class: 'Alive', field: 'cellId', kind: 'i32' },
      aliveIsNew: { class: 'Alive', field: 'isNew', kind: 'bool' },
      candidateCellId: { class: 'Candidate', field: 'cellId', kind: 'i32' },
    },
    typeIds: { T_ALIVE: 'Alive', T_CANDIDATE: 'Candidate' },
    ranks: 'Cell',
    gpuLists: true,
    // width, height; the update passes read neither (cells by id through `ranks`), as their WASM kernels.
    ...(readsSize ? { args: ['i32', 'i32'] as const } : { args: [], unusedArgs: 2 }),
    // SPIN_LIMIT: alloc.wgsl's default (why it is 2^22 is written there).
    tunables: { WG: 64 },
    dispatch: 'per-object',
    ...(allocates ? { allocates: true } : {}),
  };
}

export function aliveKernels(): readonly KernelSpec[] {
  return [
    {
      method: 'prepare',
      export: 'gol_alive_prepare',
      params: { cellId, action, isNew, cells, cellState, width, height },
      wgsl: golWgsl('gol_alive_prepare.wgsl', 'Alive', false),
    },
    {
      method: 'update',
      export: 'gol_alive_update',
      params: { cellId, action, isNew, cells, cellAgent, cellState, allocator, ...creates('candidate', 'Candidate') },
      wgsl: golWgsl('gol_alive_update.wgsl', 'Alive', true, false),
    },
    {
      method: 'createCandidates',
      export: 'gol_alive_create_candidates',
      params: { cellId, isNew, cells, cellAgent, cellState, allocator, ...creates('candidate', 'Candidate'), width, height },
      wgsl: golWgsl('gol_alive_create_candidates.wgsl', 'Alive', true),
    },
  ];
}

export function candidateKernels(): readonly KernelSpec[] {
  return [
    {
      method: 'prepare',
      export: 'gol_candidate_prepare',
      params: { cellId, action, cells, cellState, width, height },
      wgsl: golWgsl('gol_candidate_prepare.wgsl', 'Candidate', false),
    },
    {
      method: 'update',
      export: 'gol_candidate_update',
      params: { cellId, action, cells, cellAgent, cellState, allocator, ...creates('alive', 'Alive') },
      wgsl: golWgsl('gol_candidate_update.wgsl', 'Candidate', true, false),
    },
  ];
}
