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
import type { KernelSpec, WgslKernel } from '../../runtime/index.js';

/** Relative tolerance of computeForce, against the sum of the magnitudes of its terms. */
export const FORCE_TOLERANCE = 1e-5;

/**
 * Backend 'webgpu' of computeForce: runtime/webgpu/wgsl/nbody_compute_force.wgsl. Flops per
 * pair as written there: 2 sub, 2 mul + 1 add (dist²), 1 rsqrt, 1 add (+ DAMPENING), 1 mul
 * (·mass), 1 div, 4 mul (f·dx·inv, f·dy·inv), 2 add (accumulate) = 15, counting rsqrt and
 * div as 1 each.
 */
export const COMPUTE_FORCE_WGSL: WgslKernel = {
  file: 'nbody_compute_force.wgsl',
  fields: { posX: 'f32', posY: 'f32', mass: 'f32', forceX: 'f32', forceY: 'f32' },
  args: [],
  values: { G_CONST: 'g', DAMPENING: 'dampening' },
  tunables: { WG: 128, SPLIT: 0 }, // SPLIT 0: automatic (runtime/webgpu/runner.ts AUTO_SPLIT_GROUPS); 1: the sequential order exactly
  dispatch: 'split-reduce',
  visitsOwnClass: true,
  gpuLists: true, // list start and count from the snapshot's lists buffer (binding 5): collision runs it after a GPU snapshot without a read-back
  flops: { perPair: 15 },
};

/** Backend 'webgpu' of update: runtime/webgpu/wgsl/nbody_update.wgsl. */
export const UPDATE_WGSL: WgslKernel = {
  file: 'nbody_update.wgsl',
  fields: { posX: 'f32', posY: 'f32', velX: 'f32', velY: 'f32', forceX: 'f32', forceY: 'f32', mass: 'f32' },
  args: ['f32'],
  tunables: { WG: 128 },
  dispatch: 'per-object',
  gpuLists: true, // as COMPUTE_FORCE_WGSL's
  flops: { perObject: 10 }, // (F·dt)/m + v: 3, ×2; p + v·dt: 2, ×2
};

/**
 * The kernels of computeForce and update (WASM and WGSL) for any class with nbody's fields (posX, posY,
 * velX, velY, forceX, forceY, mass: f32) and its `deviceDo(Body, …)` force loop, with the
 * given gravitational constant and dampening: nbody's Body and collision's.
 */
export function gravityKernels(g: number, dampening: number): KernelSpec[] {
  const f32 = { kind: 'field', type: 'f32' } as const; // the field of the parameter's name
  return [
    {
      method: 'computeForce',
      export: 'nbody_compute_force',
      params: {
        posX: f32,
        posY: f32,
        forceX: f32,
        forceY: f32,
        mass: f32,
        // the method's deviceDo(Body, …): every Body of the pass, subclasses included
        sources: { kind: 'deviceDo', class: 'Body', fields: ['posX', 'posY', 'mass'], type: 'f32' },
        g: { kind: 'value', value: g, type: 'f32' },
        dampening: { kind: 'value', value: dampening, type: 'f32' },
      },
      wgsl: COMPUTE_FORCE_WGSL,
    },
    {
      method: 'update',
      export: 'nbody_update',
      params: {
        posX: f32,
        posY: f32,
        velX: f32,
        velY: f32,
        forceX: f32,
        forceY: f32,
        mass: f32,
        dt: { kind: 'arg', index: 0, type: 'f64' },
      },
      wgsl: UPDATE_WGSL,
    },
  ];
}
