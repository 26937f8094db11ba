/**
 * The WASM kernels of wa-tor's non-allocating passes (wasm/src/wator.rs), declared by
 * `Cell[KERNELS]`, `Fish[KERNELS]` and `Shark[KERNELS]` (runtime/kernels.ts explains the
 * spec and the dispatch): Cell.prepare, Cell.decide, Fish.prepare, Shark.prepare. The
 * update passes create and delete agents, which only the TypeScript allocator can do, so
 * they stay TypeScript on every backend.
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

const stream: readonly KernelParam[] = [0, 1, 2, 3].map((element) => ({ kind: 'field', name: 'randomState', type: 'u32', element }));
const requests = (cls?: string): KernelParam[] =>
  [0, 1, 2, 3, 4].map((element) => ({ kind: 'field', name: 'neighborRequest', type: 'bool', element, ...(cls ? { class: cls } : {}) }));
const neighbors = (cls?: string): KernelParam[] =>
  [0, 1, 2, 3].map((element) => ({ kind: 'field', name: 'neighbors', type: 'ref', element, ...(cls ? { class: cls } : {}) }));
/** What an agent's kernel reads of the cells: neighbours, agent, request flags (wator.rs CellFields). */
const cellFields: readonly KernelParam[] = [
  ...neighbors('Cell'),
  { kind: 'field', name: 'agent', type: 'ref', class: 'Cell' },
  ...requests('Cell'),
];

export function cellKernels(): readonly KernelSpec[] {
  return [
    { method: 'prepare', export: 'wator_cell_prepare', params: requests() },
    {
      method: 'decide',
      export: 'wator_cell_decide',
      params: [
        ...stream,
        ...neighbors(),
        { kind: 'field', name: 'agent', type: 'ref' },
        ...requests(),
        // the granted agent's newPosition: its offset per concrete agent type (Fish, else Shark)
        { kind: 'typeId', class: 'Fish' },
        { kind: 'field', name: 'newPosition', type: 'ref', class: 'Fish' },
        { kind: 'field', name: 'newPosition', type: 'ref', class: 'Shark' },
      ],
    },
  ];
}

const agentFields: readonly KernelParam[] = [
  ...stream,
  { kind: 'field', name: 'position', type: 'ref' },
  { kind: 'field', name: 'newPosition', type: 'ref' },
  { kind: 'field', name: 'eggTimer', type: 'u32' },
];

export function fishKernels(): readonly KernelSpec[] {
  return [{ method: 'prepare', export: 'wator_fish_prepare', params: [...agentFields, ...cellFields] }];
}

export function sharkKernels(): readonly KernelSpec[] {
  return [
    {
      method: 'prepare',
      export: 'wator_shark_prepare',
      params: [
        ...agentFields,
        { kind: 'field', name: 'energy', type: 'u32' },
        ...cellFields,
        // `instanceof Fish` of a neighbour's agent: Fish has no subclasses
        { kind: 'typeId', class: 'Fish' },
      ],
    },
  ];
}
