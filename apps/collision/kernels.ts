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
 * The merge phases run as TypeScript (per-method fallback): prepareMerge and resolveMerge
 * are O(n²) too, but they take and compare handles, which the kernels do not do yet.
 */
import type { KernelSpec } from '../../runtime/index.js';
import { DAMPENING, G } from './body.js';

export function collisionKernels(): readonly KernelSpec[] {
  return [
    {
      method: 'computeForce',
      export: 'nbody_compute_force',
      params: [
        { kind: 'field', name: 'posX', type: 'f32' },
        { kind: 'field', name: 'posY', type: 'f32' },
        { kind: 'field', name: 'forceX', type: 'f32' },
        { kind: 'field', name: 'forceY', type: 'f32' },
        { kind: 'field', name: 'mass', type: 'f32' },
        { kind: 'deviceDo', class: 'Body', fields: ['posX', 'posY', 'mass'], type: 'f32' },
        { kind: 'value', value: G },
        { kind: 'value', value: DAMPENING },
      ],
    },
    {
      method: 'update',
      export: 'nbody_update',
      params: [
        { kind: 'field', name: 'posX', type: 'f32' },
        { kind: 'field', name: 'posY', type: 'f32' },
        { kind: 'field', name: 'velX', type: 'f32' },
        { kind: 'field', name: 'velY', type: 'f32' },
        { kind: 'field', name: 'forceX', type: 'f32' },
        { kind: 'field', name: 'forceY', type: 'f32' },
        { kind: 'field', name: 'mass', type: 'f32' },
        { kind: 'arg', index: 0 }, // dt
      ],
    },
  ];
}
