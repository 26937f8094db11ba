/**
 * How a class declares its kernels, the one lookup of a declaration, and the backends:
 * plain data and the checks on it. Split from kernels.ts (which binds kernels to a
 * thread's WebAssembly instance) so that the public declarations (runtime/index.ts) name
 * no WebAssembly or WebGPU type: a strict consumer (`skipLibCheck: false`, no DOM lib)
 * type-checks them. kernels.ts documents the WASM ABI, runtime/webgpu/wgsl-kernels.ts the
 * WGSL one.
 *
 * One declaration per method (KernelSpec), in the class's static [KERNELS], carries every
 * backend of that method:
 *   'ts'      the TypeScript method `method` of the class itself (the reference);
 *   'wasm'    the function `export` of the WebAssembly module, with its parameters `params`;
 *   'webgpu'  the WGSL kernel `wgsl` (optional: without it the method runs in TypeScript).
 * Nothing is registered anywhere: every thread finds the declaration from the class alone,
 * through kernelFor() — the one lookup that the WASM dispatch (kernels.ts) and the GPU
 * runner (runtime/webgpu/runner.ts) both use.
 */
import { UsageError } from './errors.js';
import type { TypeLayout } from './layout.js';
import { SmmoObject, type ScalarKind, type SmmoClass } from './schema.js';

/** The key of a class's kernel declaration. */
export const KERNELS: unique symbol = Symbol.for('smmo.kernels');

/** The type of a number parameter in the kernel's table (Rust f32, f64, u32, i32). */
export type KernelNumberType = 'f32' | 'f64' | 'u32' | 'i32';

/**
 * How the host makes one parameter of a WASM kernel (kernels.ts, "Kernel call ABI"; its
 * place and type in the table: kernel-params.ts). `type` of a field: the field kind the
 * kernel reads (checked against the class; a mismatch is a KernelParamsError). A field
 * parameter reads the field of its own name unless `name` says otherwise.
 */
export type KernelParam =
  | {
      readonly kind: 'field';
      readonly type: ScalarKind;
      /** The field (default: the parameter's name). */
      readonly name?: string;
      /** One element of an inline array field. */
      readonly element?: number;
      /** Elements 0 … elements − 1 of an inline array field: an array of offsets in the table. */
      readonly elements?: number;
      /** A concrete class whose offset of the field to pass instead of the running type's. */
      readonly class?: string;
    }
  | { readonly kind: 'typeId'; readonly class: string }
  | { readonly kind: 'arg'; readonly index: number; readonly type: KernelNumberType }
  | { readonly kind: 'value'; readonly value: number; readonly type: KernelNumberType }
  | { readonly kind: 'deviceDo'; readonly class: string; readonly fields: readonly string[]; readonly type: ScalarKind }
  /** The calling thread's allocator state (word index): the kernel creates or deletes objects (kernels.ts, "Allocating kernels"). */
  | { readonly kind: 'allocator' }
  /** How to zero a new object of concrete class `class`: a table of its fields' [byte offset, element bytes]. */
  | { readonly kind: 'zero'; readonly class: string }
  /** Rank → handle of the objects of concrete class `class` in the pass (apps/grid.ts cell ids): a table of the pass. */
  | { readonly kind: 'ranks'; readonly class: string };

/** A number argument's Params words: one f32, u32 or i32; 'df64' two f32, hi and lo, whose sum is the number (double-single). */
export type WgslArgKind = 'f32' | 'u32' | 'i32' | 'df64';

/**
 * The WGSL kernel of a method (backend 'webgpu'; runtime/webgpu/wgsl-kernels.ts checks it
 * against the class and the declaration's params, runtime/webgpu/runner.ts runs it).
 */
export interface WgslKernel {
  /** File in runtime/webgpu/wgsl/ (appended to the generated prelude). */
  readonly file: string;
  /** Extra library files appended after it (e.g. alloc.wgsl). */
  readonly libraries?: readonly string[];
  /** Field name → kind, bound to `override F_<name>` (byte offset of the field in a block). */
  readonly fields: Readonly<Record<string, ScalarKind>>;
  /** Kinds of the method's arguments, packed from byte 16 of the Params uniform (4 bytes each, 'df64' 8). */
  readonly args: readonly WgslArgKind[];
  /**
   * Arguments of the method after `args` that the kernel does not read (nor the spec's
   * params pass); the runner checks the call has args.length + unusedArgs arguments. Default 0.
   */
  readonly unusedArgs?: number;
  /** Override name → name of the declaration's `value` param it is bound to. */
  readonly values?: Readonly<Record<string, string>>;
  /**
   * Override constants and their defaults (WG must be a multiple of 32 for 'split-reduce').
   * 'split-reduce' kernels also read SPLIT_GROUPS, SPLIT_MAX, SPLIT_POW2 and SPLIT_LAG here
   * (how SPLIT = 0 is resolved: runtime/webgpu/runner.ts constantsFor, splitCountsFor).
   */
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
  /**
   * Fields of other classes the kernel reads or writes: name → (concrete class, field,
   * kind), bound to `override F_<name>` (byte offset of the field's SOA array in a block
   * of that class), checked like `fields`.
   */
  readonly classFields?: Readonly<Record<string, { readonly class: string; readonly field: string; readonly kind: ScalarKind }>>;
  /**
   * Array fields (schema `array(kind, n)`) the kernel reads or writes: name → (class, the
   * kernel's own class when absent; field; element kind; number of elements), bound to
   * `override F_<name>_<k>` for k < length (byte offset of element k's SOA array in a block
   * of that class), checked like `fields` (wgsl-kernels.ts kernelArrayMismatch).
   */
  readonly arrays?: Readonly<
    Record<string, { readonly class?: string; readonly field: string; readonly kind: ScalarKind; readonly length: number }>
  >;
  /** Override name → concrete class name, bound to the class's type id (a kernel that creates objects of it). */
  readonly typeIds?: Readonly<Record<string, string>>;
  /**
   * A concrete class whose live handles, ascending, the runner binds at binding 3 as
   * `array<u32>` (index = rank: apps/grid.ts cell ids). The class's objects must be
   * neither created nor deleted while such kernels run (runtime/webgpu/ranks.ts).
   */
  readonly ranks?: string;
  /**
   * The kernel reads its list start and count from binding 5 (`lists: array<u32>`, words
   * 4·T + 0 = count and 4·T + 1 = start, T = its type id, Params word 2) instead of the
   * Params uniform, so that after a GPU snapshot the runner can dispatch it indirectly
   * without reading the lists back (runtime/webgpu/gpu-snapshot.ts G4).
   */
  readonly gpuLists?: boolean;
  /**
   * With `allocates`: the kernel only frees objects, it creates none (collision's
   * deleteMerged), so no class's block count grows through it. The runner may then bound
   * the dispatch of a later split-reduce kernel that reads its lists on the GPU by an
   * older block count of its class (runtime/webgpu/runner.ts runSplitOnGpuLists); a kernel
   * that creates objects must not declare it (its class's later dispatches would be too small).
   */
  readonly freesOnly?: boolean;
  /**
   * @internal The kernel reports failures of its own (not only the allocator's) through the
   * status buffer (binding 4): generated kernels (runtime/compiler/emit-wgsl.ts W4).
   */
  readonly status?: boolean;
  /** Floating-point operations per object pair or object, for benchmark reports (documented in the .wgsl). */
  readonly flops?: { perPair?: number; perObject?: number };
}

/** One method's kernels: every backend of it (the module comment). */
export interface KernelSpec {
  /** The method these kernels implement (the class's TypeScript method of that name is backend 'ts'). */
  readonly method: string;
  /** Backend 'wasm': name of the function exported by the wasm module. */
  readonly export: string;
  /**
   * Backend 'wasm': the kernel's parameter table, name → how the host makes it, in table
   * order; wasm/src/params.rs is generated from it (kernel-params.ts P1–P3).
   */
  readonly params: Readonly<Record<string, KernelParam>>;
  /** Backend 'webgpu': the WGSL kernel, if the method has one. */
  readonly wgsl?: WgslKernel;
}

export type KernelDeclaration = readonly KernelSpec[] | (() => readonly KernelSpec[]);

/**
 * Backends a runtime accepts. 'webgpu': do-alls whose method has a WGSL kernel run on the
 * GPU (runtime/webgpu/, docs/webgpu.md); the rest run the TypeScript methods, as with 'ts'.
 */
export type Backend = 'ts' | 'wasm' | 'webgpu';
export const BACKENDS = ['ts', 'wasm', 'webgpu'] as const;

/** Validate RuntimeOptions.backend. */
export function checkBackend(value: unknown): Backend {
  if (value === undefined || value === 'ts') return 'ts';
  if (value === 'wasm') return 'wasm';
  if (value === 'webgpu') return 'webgpu';
  throw new UsageError(`backend must be one of ${BACKENDS.join(', ')}; got ${String(value)}`);
}

/** The kernels class `cls` declares itself (own static, not inherited). */
export function ownKernels(cls: SmmoClass): readonly KernelSpec[] {
  if (!Object.prototype.hasOwnProperty.call(cls, KERNELS)) return [];
  const decl = (cls as unknown as Record<symbol, KernelDeclaration>)[KERNELS];
  const specs = typeof decl === 'function' ? decl() : decl;
  if (!Array.isArray(specs)) throw new UsageError(`${cls.name}[KERNELS] must be an array of kernel specs or a function returning one`);
  return specs as readonly KernelSpec[];
}

/**
 * The declaration that implements `method` for concrete type `t`, or null (kernels.ts K2):
 * the spec of `method` declared by the nearest class C on t's prototype chain (t itself
 * first), provided t does not override the method below C; otherwise null (the TypeScript
 * method runs). The one lookup of every backend.
 */
export function kernelFor(t: TypeLayout, method: string): KernelSpec | null {
  const impl = (t.cls.prototype as unknown as Record<string, unknown>)[method];
  for (const c of classChain(t.cls)) {
    const spec = ownKernels(c).find((s) => s.method === method);
    if (spec === undefined) continue;
    return (c.prototype as unknown as Record<string, unknown>)[method] === impl ? spec : null;
  }
  return null;
}

/** The methods that some class on t's prototype chain declares kernels for (kernelFor may still say null: an override). */
export function declaredMethods(t: TypeLayout): string[] {
  const methods = new Set<string>();
  for (const c of classChain(t.cls)) for (const spec of ownKernels(c)) methods.add(spec.method);
  return [...methods];
}

/** `cls` and its superclasses up to (not including) SmmoObject. */
function classChain(cls: SmmoClass): SmmoClass[] {
  const out: SmmoClass[] = [];
  for (let c: SmmoClass | null = cls; c !== null && (c as unknown) !== SmmoObject; c = Object.getPrototypeOf(c) as SmmoClass | null)
    out.push(c);
  return out;
}

// ------------------------------------------------------------------ WebGPU-only kernels

/**
 * The key of a class's WebGPU-only kernel declarations: methods that have a WGSL kernel
 * but no WASM export (collision's initializeMerge, updateMerge and deleteMerged). Kept
 * apart from [KERNELS] so that the WASM backend and the generated wasm/src/params.rs
 * never see them: the WASM dispatch and gen-kernel-params read [KERNELS] only. The GPU
 * runner looks a method up in [KERNELS] first (kernelFor), then here (gpuKernelFor),
 * with the same rule K2 (nearest declaring class, unless overridden below it).
 */
export const GPU_KERNELS: unique symbol = Symbol.for('smmo.gpuKernels');

/** A WebGPU-only kernel: the method, its `value`/`arg` params (as KernelSpec.params; default none), and the WGSL kernel. */
export interface GpuKernelSpec {
  readonly method: string;
  readonly params?: Readonly<Record<string, KernelParam>>;
  readonly wgsl: WgslKernel;
}

/** What the GPU runner needs of a declaration (a KernelSpec or a GpuKernelSpec). */
export type WgslSpec = Pick<KernelSpec, 'method' | 'params' | 'wgsl'>;

/** The WebGPU-only kernels class `cls` declares itself (own static [GPU_KERNELS], not inherited). */
export function ownGpuKernels(cls: SmmoClass): readonly GpuKernelSpec[] {
  if (!Object.prototype.hasOwnProperty.call(cls, GPU_KERNELS)) return [];
  const specs = (cls as unknown as Record<symbol, unknown>)[GPU_KERNELS];
  if (!Array.isArray(specs)) throw new UsageError(`${cls.name}[GPU_KERNELS] must be an array of WebGPU kernel specs`);
  return specs as readonly GpuKernelSpec[];
}

/** The WebGPU-only declaration of `method` for concrete type `t` (rule K2, as kernelFor), or null. */
export function gpuKernelFor(t: TypeLayout, method: string): WgslSpec | null {
  const impl = (t.cls.prototype as unknown as Record<string, unknown>)[method];
  for (const c of classChain(t.cls)) {
    const spec = ownGpuKernels(c).find((s) => s.method === method);
    if (spec === undefined) continue;
    if ((c.prototype as unknown as Record<string, unknown>)[method] !== impl) return null;
    return { method: spec.method, params: spec.params ?? {}, wgsl: spec.wgsl };
  }
  return null;
}

/** The methods that some class on t's prototype chain declares WebGPU-only kernels for. */
export function gpuDeclaredMethods(t: TypeLayout): string[] {
  const methods = new Set<string>();
  for (const c of classChain(t.cls)) for (const spec of ownGpuKernels(c)) methods.add(spec.method);
  return [...methods];
}
