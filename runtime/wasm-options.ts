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
  /**
   * With backend 'wasm': 'wasm' rewrites references in defrag / parallelDefrag on
   * WebAssembly lanes (runtime/defrag-wasm.ts), 'ts' (the default) on the TypeScript
   * lanes. Opt-in because it does not pay everywhere yet (docs/benchmarks.md
   * "Defragmentation with WebAssembly lanes": faster on structure and wa-tor, slower on
   * the synthetic heap, where most objects move).
   */
  defragLanes?: 'ts' | 'wasm';
}
