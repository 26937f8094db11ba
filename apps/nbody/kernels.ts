/**
 * The WASM kernels of Body's methods (wasm/src/nbody.rs), declared by `Body[KERNELS]`
 * (runtime/kernels.ts explains the spec and the dispatch). The constants come as
 * arguments (body.ts passes G and DAMPENING), so this module imports nothing of body.ts:
 * no import cycle.
 *
 * Agreement with the TypeScript methods (test/wasm-kernels.test.ts checks both):
 *  - update: bit-identical. The kernel computes in f64 and rounds at each field store, as
 *    the method does (JavaScript numbers are f64; an f32 field store rounds).
 *  - computeForce: the kernel computes in f32, the method in f64 (then stores f32). For each
 *    body and component, |force_wasm − force_ts| ≤ FORCE_TOLERANCE · Σ_o |term_o|, the sum of
 *    the magnitudes of the pair terms added (a bound for sums that cancel, where a relative
 *    error of the result itself means nothing). f32 has a unit roundoff of 6e-8; per term
 *    the kernel makes about 8 roundings, and the sum of n terms in 4 lanes adds about n/4
 *    more in the worst case (in practice √n), so 1e-5 holds up to thousands of bodies with
 *    a wide margin.
 */
import type { KernelSpec } from '../../runtime/index.js';

/** Relative tolerance of computeForce, against the sum of the magnitudes of its terms. */
export const FORCE_TOLERANCE = 1e-5;

/**
 * The specs of computeForce and update for any class with nbody's fields (posX, posY,
 * velX, velY, forceX, forceY, mass: f32) and its `deviceDo(Body, …)` force loop, with the
 * given gravitational constant and dampening: nbody's Body and collision's.
 */
export function gravityKernels(g: number, dampening: number): KernelSpec[] {
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
        // the method's deviceDo(Body, …): every Body of the pass, subclasses included
        { kind: 'deviceDo', class: 'Body', fields: ['posX', 'posY', 'mass'], type: 'f32' },
        { kind: 'value', value: g },
        { kind: 'value', value: dampening },
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
