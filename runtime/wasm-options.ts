/**
 * RuntimeOptions.wasm: plain data, in a module of its own so that the public declarations
 * (runtime/index.ts) name no WebAssembly type (wasm.ts, which loads the module, does).
 */

export type WasmVariant = 'simd' | 'scalar';

/** Where the kernels come from (plain data: a worker receives the same object). */
export interface WasmOptions {
  /** 'simd' (default) or 'scalar' (the same kernels built without simd128). */
  variant?: WasmVariant;
  /** Folder with smmo_simd.wasm / smmo_scalar.wasm. Default: wasm/pkg of this package (shipped, built from wasm/src). */
  dir?: string;
}
