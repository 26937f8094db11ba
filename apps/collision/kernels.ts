/**
 * The WASM kernels of collision's Body (runtime/kernels.ts explains specs and dispatch).
 *
 * Body.computeForce and Body.update here are the same methods as nbody's (same formula,
 * same field names; only G, DAMPENING and the arguments are collision's), so they run the
 * nbody kernels (wasm/src/nbody.rs) with this class's own field offsets — its blocks also
 * hold a reference and two bools, so every offset differs from nbody's. Agreement with the
 * TypeScript methods is as stated in apps/nbody/kernels.ts: update bit-identical,
 * computeForce within FORCE_TOLERANCE of the sum of the magnitudes of its terms.
 *
 * Body.prepareMerge and Body.resolveMerge, the merge phases that visit every body for each
 * body (O(n²), like computeForce), run wasm/src/collision.rs. Their results are
 * bit-identical to the TypeScript methods (the kernels filter with f32 SIMD tests that can
 * only let more bodies through, then apply the method's f64 rule and (id, handle) tie rule;
 * test/wasm-collision.test.ts). Handles: a ref field is passed as a 'field' of type 'ref'
 * (u32 handles), a bool as 'bool' (u8); resolveMerge reads the other bodies' mergeTarget
 * through a second deviceDo table over the same blocks (one table has one field type),
 * and both read the other bodies' ids (u32) through one more.
 * The kernels compute a body's handle from its block index and slot, and find the target's
 * field offsets through the deviceDo tables, so no new kind of parameter is needed.
 *
 * initializeMerge, updateMerge and deleteMerged are O(n) with small bodies (and
 * deleteMerged deletes, which kernels do not do): on the wasm backend they stay TypeScript
 * (per-method fallback); README "Cost" has their share of a step.
 *
 * Backend 'webgpu' (collisionWgslKernels, collisionGpuKernels): every pass of a step. The
 * gravity passes run nbody's WGSL kernels; the five merge passes run
 * runtime/webgpu/wgsl/collision_*.wgsl (helpers in collision_lib.wgsl, deleteMerged frees
 * through alloc.wgsl). prepareMerge and resolveMerge carry their WGSL kernel in the
 * declaration above; initializeMerge, updateMerge and deleteMerged have no WASM export, so
 * they are declared under Body[GPU_KERNELS] (runtime/kernel-spec.ts), which only the GPU
 * runner reads. Agreement with the TypeScript methods: the same rules with f32 distances
 * (collision_lib.wgsl "Floats"); test/webgpu-collision.test.ts compares body counts
 * exactly and digests within the app's tolerance after every step.
 */
import type { GpuKernelSpec, KernelParam, KernelSpec, WgslKernel } from '../../runtime/kernel-spec.js';
import { gravityKernels } from '../nbody/kernels.js';

/** The fields every merge kernel binds (collision_lib.wgsl declares their offsets). */
const MERGE_FIELDS = {
  posX: 'f32',
  posY: 'f32',
  velX: 'f32',
  velY: 'f32',
  mass: 'f32',
  mergeTarget: 'ref',
  hasIncomingMerge: 'bool',
  successfulMerge: 'bool',
  id: 'u32', // the tie rule's order (body.ts "Ties")
} as const;

/**
 * The WGSL kernel of merge pass `file`. `visitsBodies`: it reads or writes bodies other
 * than its own (deviceDo, or the target through mergeTarget) with its own class's field
 * offsets, so the declaration's deviceDo must be over the visited class and that class
 * must have no subclasses (wgsl-kernels.ts visitsOwnClass).
 */
function mergeWgsl(file: string, visitsBodies: boolean, extra: Partial<WgslKernel> = {}): WgslKernel {
  return {
    file,
    libraries: ['collision_lib.wgsl'],
    fields: MERGE_FIELDS,
    args: [],
    tunables: { WG: 64 },
    dispatch: 'per-object',
    gpuLists: true, // collision_lib.wgsl reads the list from binding 5: no read-back after deleteMerged's GPU snapshot
    ...(visitsBodies ? { visitsOwnClass: true } : {}),
    ...extra,
  };
}

/** updateMerge reads and writes its target, a Body: declared as a deviceDo over Body so that the visitsOwnClass check applies. */
const bodies: KernelParam = { kind: 'deviceDo', class: 'Body', fields: ['posX', 'posY', 'mass'], type: 'f32' };

/** The WebGPU-only kernels of collision's Body (Body[GPU_KERNELS]): the merge passes without a WASM export. */
export function collisionGpuKernels(): readonly GpuKernelSpec[] {
  return [
    { method: 'initializeMerge', wgsl: mergeWgsl('collision_initialize_merge.wgsl', false) },
    { method: 'updateMerge', params: { bodies }, wgsl: mergeWgsl('collision_update_merge.wgsl', true) },
    {
      method: 'deleteMerged',
      wgsl: mergeWgsl('collision_delete_merged.wgsl', false, {
        libraries: ['collision_lib.wgsl', 'alloc.wgsl'],
        tunables: { WG: 64 },
        allocates: true,
        freesOnly: true, // deletes only: Body's block count never grows during a run (runner.ts splitCountsFor S2)
      }),
    },
  ];
}

/**
 * How collision's split-reduce kernels (computeForce, prepareMerge, resolveMerge) resolve
 * SPLIT 0 (runtime/webgpu/runner.ts autoSplit, splitCountsFor): powers of two only (the
 * body count falls from 40 000 to about 570 over the default run; each new SPLIT value
 * compiles `main` and `reduce` again), from the block count of the GPU snapshot 8 steps
 * back (one snapshot per step: after deleteMerged), aiming at 16 384 workgroups, which
 * gives SPLIT 32 (SPLIT_MAX) at every body count of the default run. H100, 40 000 × 2 000,
 * three rounds (docs/webgpu.md): the runner's 4 096 groups 6.36–6.38 s, 8 192 groups
 * 5.85–5.86 s, SPLIT 32 fixed 5.61–5.62 s. On a software adapter automatic SPLIT stays 1
 * unless the options set SPLIT_GROUPS. Tunable per kernel through
 * `webgpu: { tunables: { 'Body.prepareMerge': { SPLIT_LAG: 4, SPLIT_POW2: 0, … } } }`.
 */
const SPLIT_CHOICE = { SPLIT_POW2: 1, SPLIT_LAG: 8, SPLIT_GROUPS: 16384 } as const;

/** nbody's gravity kernel with collision's SPLIT choice (nbody's own declaration keeps the runner's defaults). */
function withSplitChoice(spec: KernelSpec): KernelSpec {
  const w = spec.wgsl;
  return w?.dispatch === 'split-reduce' ? { ...spec, wgsl: { ...w, tunables: { ...w.tunables, ...SPLIT_CHOICE } } } : spec;
}

/** The kernels of collision's Body with its constants (body.ts: G, DAMPENING, THRESHOLD_SQ). */
export function collisionKernels(g: number, dampening: number, thresholdSq: number): readonly KernelSpec[] {
  return [
    ...gravityKernels(g, dampening).map(withSplitChoice),
    {
      method: 'prepareMerge',
      export: 'collision_prepare_merge',
      params: {
        posX: { kind: 'field', type: 'f32' },
        posY: { kind: 'field', type: 'f32' },
        mass: { kind: 'field', type: 'f32' },
        mergeTarget: { kind: 'field', type: 'ref' }, // written: the chosen handle
        sources: { kind: 'deviceDo', class: 'Body', fields: ['posX', 'posY', 'mass'], type: 'f32' },
        ids: { kind: 'deviceDo', class: 'Body', fields: ['id'], type: 'u32' }, // the same blocks: the tie rule's ids
        thresholdSq: { kind: 'value', value: thresholdSq, type: 'f64' }, // the method's exact bound
      },
      // SPLIT 0: automatic, as computeForce's (runtime/webgpu/runner.ts AUTO_SPLIT_GROUPS); every SPLIT gives the same targets.
      wgsl: mergeWgsl('collision_prepare_merge.wgsl', true, {
        values: { THRESHOLD_SQ: 'thresholdSq' },
        tunables: { WG: 128, SPLIT: 0, ...SPLIT_CHOICE },
        dispatch: 'split-reduce',
      }),
    },
    {
      method: 'resolveMerge',
      export: 'collision_resolve_merge',
      params: {
        posX: { kind: 'field', type: 'f32' },
        posY: { kind: 'field', type: 'f32' },
        mergeTarget: { kind: 'field', type: 'ref' },
        successfulMerge: { kind: 'field', type: 'bool' }, // written
        id: { kind: 'field', type: 'u32' },
        bodies: { kind: 'deviceDo', class: 'Body', fields: ['posX', 'posY', 'mass'], type: 'f32' },
        targets: { kind: 'deviceDo', class: 'Body', fields: ['mergeTarget'], type: 'ref' },
        ids: { kind: 'deviceDo', class: 'Body', fields: ['id'], type: 'u32' },
      },
      wgsl: mergeWgsl('collision_resolve_merge.wgsl', true, { tunables: { WG: 128, SPLIT: 0, ...SPLIT_CHOICE }, dispatch: 'split-reduce' }),
    },
  ];
}
