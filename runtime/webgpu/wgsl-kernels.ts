/**
 * The WGSL kernels the WebGPU backend knows, and how a (class, method) finds one.
 *
 * Opt-in, never by guessing: a class declares which *kernel contract* implements a
 * method through its static [KERNELS] specs (runtime/kernels.ts), whose `export` names
 * the contract (e.g. 'nbody_compute_force', also the wasm export). A WGSL kernel
 * implements a contract; the lookup for (concrete type T, method M) is the one of
 * runtime/kernels.ts (K2): the spec of M declared by the nearest class on T's prototype
 * chain, unless T overrides M below it. Then the WGSL kernel of that contract, checked
 * against T: every field it names (bound by name to `override F_<field>`, the byte
 * offset of the field's SOA array in T's blocks) must exist with the declared kind.
 * The spec's `value` params bind, in order, to the kernel's `values` overrides (so an
 * app's constants reach the GPU), its `arg` params to the Params uniform (after
 * list_start, list_count and two pad words, 4 bytes each, kinds `args`).
 * Anything that does not fit runs in TypeScript (the runner counts a fallback and says why).
 */
import { ownKernels, type KernelSpec } from '../kernels.js';
import type { TypeLayout } from '../layout.js';
import { SmmoObject, type ScalarKind, type SmmoClass } from '../schema.js';

export type ArgKind = 'f32' | 'u32' | 'i32';

export interface WgslKernel {
  /** The kernel contract (the [KERNELS] spec's `export` name) this kernel implements. */
  readonly contract: string;
  /** File in runtime/webgpu/wgsl/ (appended to the generated prelude). */
  readonly file: string;
  /** Extra library files appended after it (e.g. alloc.wgsl). */
  readonly libraries?: readonly string[];
  /** Field name → kind, bound to `override F_<name>` (byte offset of the field in a block). */
  readonly fields: Readonly<Record<string, ScalarKind>>;
  /** Kinds of the method's arguments, packed from byte 16 of the Params uniform (4 bytes each). */
  readonly args: readonly ArgKind[];
  /** Override names bound, in order, to the spec's `value` params. */
  readonly values?: readonly string[];
  /** Override constants and their defaults (WG must be a multiple of 32 for 'split-reduce'). */
  readonly tunables: Readonly<Record<string, number>>;
  /**
   * 'per-object': one invocation per (list position, slot), entry point `main`.
   * 'split-reduce': `main` dispatched with z = SPLIT parts writing partial sums to
   * binding 2, then `reduce` when SPLIT > 1 (nbody computeForce).
   */
  readonly dispatch: 'per-object' | 'split-reduce';
  /** The method reads every object of its own class (deviceDo): the class must have no subclasses. */
  readonly visitsOwnClass?: boolean;
  /** The kernel allocates or frees objects: the host's block lists are stale after it. */
  readonly allocates?: boolean;
  /** Floating-point operations per object pair or object, for benchmark reports (documented in the .wgsl). */
  readonly flops?: { perPair?: number; perObject?: number };
}

const REGISTRY = new Map<string, WgslKernel>();

export function kernelKey(className: string, method: string): string {
  return `${className}.${method}`;
}

/** Register a WGSL kernel for its contract (replacing one registered before). */
export function registerWgslKernel(k: WgslKernel): void {
  REGISTRY.set(k.contract, k);
}

export function wgslKernels(): WgslKernel[] {
  return [...REGISTRY.values()];
}

/** The WGSL kernel of a contract, if any. */
export function findWgslKernel(contract: string): WgslKernel | undefined {
  return REGISTRY.get(contract);
}

/** The [KERNELS] spec that implements `method` for concrete type `t` (runtime/kernels.ts K2), or null. */
export function declaredSpec(t: TypeLayout, method: string): KernelSpec | null {
  const impl = (t.cls.prototype as unknown as Record<string, unknown>)[method];
  for (let c: SmmoClass | null = t.cls; c !== null && (c as unknown) !== SmmoObject; c = Object.getPrototypeOf(c) as SmmoClass | null) {
    const spec = ownKernels(c).find((x) => x.method === method);
    if (spec === undefined) continue;
    return (c.prototype as unknown as Record<string, unknown>)[method] === impl ? spec : null;
  }
  return null;
}

/** Why kernel `k` cannot run `spec` for type `t` (null: it can). */
export function kernelMismatch(k: WgslKernel, t: TypeLayout, spec: KernelSpec): string | null {
  if (t.abstract) return `${t.name} is abstract`;
  for (const [name, kind] of Object.entries(k.fields)) {
    const f = t.fields.find((x) => x.name === name);
    if (!f) return `${t.name} has no field '${name}'`;
    if (f.kind !== kind || f.length !== 0)
      return `${t.name}.${name} is ${f.length ? `an array of ${f.kind}` : f.kind}, the kernel needs ${kind}`;
  }
  const values = spec.params.filter((p) => p.kind === 'value');
  if (values.length !== (k.values?.length ?? 0))
    return `the spec passes ${values.length} constant(s), the WGSL kernel takes ${k.values?.length ?? 0}`;
  const args = spec.params.filter((p) => p.kind === 'arg');
  if (args.length !== k.args.length || args.some((p, i) => p.kind === 'arg' && p.index !== i)) {
    return `the spec passes arguments [${args.map((p) => (p.kind === 'arg' ? p.index : -1)).join(', ')}], the WGSL kernel takes ${k.args.length} in order`;
  }
  if (k.visitsOwnClass) {
    const dd = spec.params.filter((p) => p.kind === 'deviceDo');
    if (dd.length !== 1 || (dd[0]!.kind === 'deviceDo' && dd[0]!.class !== t.name))
      return `the WGSL kernel visits ${t.name} objects only, the spec's deviceDo differs`;
    if (t.concrete.length !== 1) return `${t.name} has subclasses; the WGSL kernel visits ${t.name} objects only`;
  }
  return null;
}

/** The spec's `value` params bound to the kernel's override names. */
export function kernelValues(k: WgslKernel, spec: KernelSpec): Record<string, number> {
  const out: Record<string, number> = {};
  const values = spec.params.filter((p) => p.kind === 'value');
  (k.values ?? []).forEach((name, i) => {
    const p = values[i];
    if (p?.kind === 'value') out[name] = p.value;
  });
  return out;
}

// nbody's Body (apps/nbody/kernels.ts), also collision's (apps/collision/kernels.ts). Flops per pair as written in nbody_compute_force.wgsl:
// 2 sub, 2 mul + 1 add (dist²), 1 rsqrt, 1 add (+ DAMPENING), 1 mul (·mass), 1 div,
// 4 mul (f·dx·inv, f·dy·inv), 2 add (accumulate) = 15, counting rsqrt and div as 1 each.
registerWgslKernel({
  contract: 'nbody_compute_force',
  file: 'nbody_compute_force.wgsl',
  fields: { posX: 'f32', posY: 'f32', mass: 'f32', forceX: 'f32', forceY: 'f32' },
  args: [],
  values: ['G_CONST', 'DAMPENING'],
  tunables: { WG: 128, SPLIT: 0 }, // SPLIT 0: automatic (runner.ts AUTO_SPLIT_GROUPS); 1: the sequential order exactly
  dispatch: 'split-reduce',
  visitsOwnClass: true,
  flops: { perPair: 15 },
});

registerWgslKernel({
  contract: 'nbody_update',
  file: 'nbody_update.wgsl',
  fields: { posX: 'f32', posY: 'f32', velX: 'f32', velY: 'f32', forceX: 'f32', forceY: 'f32', mass: 'f32' },
  args: ['f32'],
  tunables: { WG: 128 },
  dispatch: 'per-object',
  flops: { perObject: 10 }, // (F·dt)/m + v: 3, ×2; p + v·dt: 2, ×2
});
