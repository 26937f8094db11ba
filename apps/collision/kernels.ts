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
 * only let more bodies through, then apply the method's f64 rule and handle tie rule;
 * test/wasm-collision.test.ts). Handles: a ref field is passed as a 'field' of type 'ref'
 * (u32 handles), a bool as 'bool' (u8); resolveMerge reads the other bodies' mergeTarget
 * through a second deviceDo table over the same blocks (one table has one field type).
 * The kernels compute a body's handle from its block index and slot, and find the target's
 * field offsets through the deviceDo tables, so no new kind of parameter is needed.
 *
 * initializeMerge, updateMerge and deleteMerged are O(n) with small bodies (and
 * deleteMerged deletes, which kernels do not do): they stay TypeScript (per-method
 * fallback); README "Cost" has their share of a step.
 */
import type { KernelSpec } from '../../runtime/index.js';
import { gravityKernels } from '../nbody/kernels.js';

/** The kernels of collision's Body with its constants (body.ts: G, DAMPENING, THRESHOLD_SQ). */
export function collisionKernels(g: number, dampening: number, thresholdSq: number): readonly KernelSpec[] {
  return [
    ...gravityKernels(g, dampening),
    {
      method: 'prepareMerge',
      export: 'collision_prepare_merge',
      params: {
        posX: { kind: 'field', type: 'f32' },
        posY: { kind: 'field', type: 'f32' },
        mass: { kind: 'field', type: 'f32' },
        mergeTarget: { kind: 'field', type: 'ref' }, // written: the chosen handle
        sources: { kind: 'deviceDo', class: 'Body', fields: ['posX', 'posY', 'mass'], type: 'f32' },
        thresholdSq: { kind: 'value', value: thresholdSq, type: 'f64' }, // the method's exact bound
      },
    },
    {
      method: 'resolveMerge',
      export: 'collision_resolve_merge',
      params: {
        posX: { kind: 'field', type: 'f32' },
        posY: { kind: 'field', type: 'f32' },
        mergeTarget: { kind: 'field', type: 'ref' },
        successfulMerge: { kind: 'field', type: 'bool' }, // written
        bodies: { kind: 'deviceDo', class: 'Body', fields: ['posX', 'posY', 'mass'], type: 'f32' },
        targets: { kind: 'deviceDo', class: 'Body', fields: ['mergeTarget'], type: 'ref' },
      },
    },
  ];
}
