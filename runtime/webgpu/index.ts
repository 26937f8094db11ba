/**
 * The WebGPU backend (optional: needs npm `webgpu`). See docs/webgpu.md.
 */
export { acquireGpu, GpuContext, knownFp32Peak, loadDawn, SWIFTSHADER_ICD, webgpuPackageAvailable } from './device.js';
export type { GpuAdapterSummary, GpuOptions, KnownPeak } from './device.js';
export { GpuError, GpuHeapError, GpuLaneError, GpuUnavailableError, HOW_TO_GET_AN_ADAPTER, STATUS, describeStatus } from './errors.js';
export { GpuHeap } from './gpu-heap.js';
export { GpuRunner } from './runner.js';
export type { GpuRunnerOptions, GpuRunnerStats } from './runner.js';
export type { WgslKernel } from './wgsl-kernels.js';
export { GPU_BASE_BYTES, loadWgsl, preludeValues, wgslDir, wgslPrelude } from './wgsl.js';
