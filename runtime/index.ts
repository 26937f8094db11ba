/**
 * The runtime's API without its worker threads: everything the package exports except
 * createRuntime, which the package's entry (index.ts at the root) defines with the
 * worker pool. Modules below workers/ (the runtime itself, apps' classes) import from here.
 */
export { DEFAULT_INLINE_BLOCKS, DEFAULT_INLINE_MICROS, MAX_THREADS, parseSize, Runtime } from './runtime.js';
export { DEFAULT_DEFRAG_FACTOR, DefragResult, DefragStoppedError, ReorderResult } from './defrag-result.js';
export type { DefragClassStats, DefragStats, ReorderClassStats, ReorderStats } from './defrag-result.js';
export type {
  AllocatorOptions,
  CompiledMethodStats,
  HeapStats,
  MethodArgs,
  MethodName,
  RuntimeOptions,
  RuntimeStats,
  TypeStats,
} from './runtime.js';
export { array, bool, f32, f64, i16, i32, i8, object, ref, SmmoObject, u16, u32, u8 } from './schema.js';
export type { FieldType, InlineArray, Schema, SchemaOptions, SmmoClass } from './schema.js';
export type { Init, SmmoContext } from './schema.js';
export {
  ContentionError,
  HeapCorruptionError,
  HeapExhaustedError,
  InvalidHandleError,
  KernelParamsError,
  MethodError,
  PassTimeoutError,
  SchemaError,
  SmmoError,
  UsageError,
  WorkerCrashedError,
} from './errors.js';
export type { InvalidHandleReason } from './errors.js';
export { HierarchicalBitmap, bitmapWords } from './bitmap.js';
export { layoutConstants, LAYOUT_VERSION } from './layout.js';
export { KERNELS } from './kernel-spec.js';
export type { Backend, KernelDeclaration, KernelNumberType, KernelParam, KernelSpec, WgslArgKind, WgslKernel } from './kernel-spec.js';
export type { WasmOptions, WasmVariant } from './wasm-options.js';
export type { GpuAdapterSummary, GpuOptions, GpuRunnerStats, WebGpuOptions } from './webgpu/options.js';
export { retryLimits } from './shared.js';
export { rankTable, resetRankTable } from './rank-table.js';
