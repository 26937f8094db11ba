/**
 * How a class declares its kernels, and the backends: plain data and the checks on it.
 * Split from kernels.ts (which binds kernels to a thread's WebAssembly instance) so that
 * the public declarations (runtime/index.ts) name no WebAssembly type: a strict consumer
 * (`skipLibCheck: false`, no DOM lib) type-checks them. kernels.ts documents the ABI.
 */
import { UsageError } from './errors.js';
import type { ScalarKind, SmmoClass } from './schema.js';

/** The key of a class's kernel declaration. */
export const KERNELS: unique symbol = Symbol.for('smmo.kernels');

/** `type`: the field kind the kernel reads (checked against the class; a mismatch is a UsageError). */
export type KernelParam =
  | { readonly kind: 'field'; readonly name: string; readonly type: ScalarKind; readonly element?: number; readonly class?: string }
  | { readonly kind: 'typeId'; readonly class: string }
  | { readonly kind: 'arg'; readonly index: number }
  | { readonly kind: 'value'; readonly value: number }
  | { readonly kind: 'deviceDo'; readonly class: string; readonly fields: readonly string[]; readonly type: ScalarKind };

export interface KernelSpec {
  /** The method this kernel implements. */
  readonly method: string;
  /** Name of the function exported by the wasm module. */
  readonly export: string;
  readonly params: readonly KernelParam[];
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
