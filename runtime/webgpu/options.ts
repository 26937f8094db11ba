/**
 * The WebGPU backend's options and statistics as the public API shows them: plain data,
 * without a single WebGPU type (GPU, GPUDevice, GPUBuffer, …). RuntimeOptions and
 * RuntimeStats refer to this module only, so the published declarations of smmo
 * type-check in a strict consumer (`skipLibCheck: false`) that has no `@webgpu/types`.
 * The modules that use the GPU (device.ts, runner.ts, gpu-heap.ts) import from here.
 */

export interface GpuOptions {
  /** 'auto': a hardware adapter if any, else SwiftShader; 'hardware': refuse software adapters; 'software': SwiftShader only. */
  adapter?: 'auto' | 'hardware' | 'software';
  /** Receives one line about the adapter choice (e.g. console.error). Default: silent. */
  log?: (line: string) => void;
  /**
   * Dawn's validation of every API call (default true). false opens the device with Dawn's
   * `skip_validation` toggle: encoding a dispatch then costs far less CPU time, which is
   * what a run of many small passes waits for (game-of-life, tm.pgm × 300, on an H100:
   * 1.2–1.8 s with validation, 0.49 s without; docs/webgpu.md) — but a wrong use of the API
   * (a binding that does not match a shader, a buffer too small) is no longer reported as
   * an error and may crash the process or give wrong results. smmo's kernels are tested
   * with validation on; turn it off for a kernel set that ran validated first.
   */
  validation?: boolean;
}

/** What smmo tells about the adapter it uses (RuntimeStats.backend.webgpu.adapter). */
export interface GpuAdapterSummary {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  /** A CPU implementation (SwiftShader, lavapipe/llvmpipe). */
  software: boolean;
  /** smmo set VK_ICD_FILENAMES to SwiftShader itself. */
  autoSwiftShader: boolean;
  maxStorageBufferBindingSize: number;
  maxBufferSize: number;
  maxComputeWorkgroupsPerDimension: number;
  maxComputeInvocationsPerWorkgroup: number;
  maxComputeWorkgroupStorageSize: number;
  /** Dawn validates API calls (GpuOptions.validation; false: opened with skip_validation). */
  validation: boolean;
}

/** RuntimeOptions.webgpu: adapter choice and kernel tunables. */
export interface WebGpuOptions extends GpuOptions {
  /**
   * @internal An acquired device (runtime/webgpu/device.ts GpuContext) to use instead of
   * acquiring one; the runner does not close it. Typed `object` here so that this module
   * names no WebGPU type; GpuRunner.create checks that it is a GpuContext.
   */
  gpu?: object;
  /** Override constants per kernel, e.g. { 'Body.computeForce': { WG: 256, SPLIT: 4 } }. */
  tunables?: Record<string, Record<string, number>>;
  /** Do-alls encoded before a submit (default 32). */
  passesPerSubmit?: number;
  /**
   * Where the pass snapshot is re-taken after an allocating WGSL kernel
   * (runtime/webgpu/gpu-snapshot.ts): 'gpu' (default: on the GPU, and kernels that read
   * their lists there are dispatched indirectly, without a read-back), 'gpu-readback' (on
   * the GPU, the lists read back every time: 16 bytes per class) or 'host' (the heap is
   * downloaded, ThreadContext.snapshot() runs, the heap is uploaded again).
   */
  snapshot?: 'gpu' | 'gpu-readback' | 'host';
  /**
   * Methods without a declared WGSL kernel run as WGSL generated from their compiled form
   * (runtime/compiler/emit-wgsl.ts) where the method is inside its subset (default true);
   * false: they run in TypeScript; 'always': the generated kernel also replaces declared
   * (hand-written) ones where it can be generated, to compare the two. `stats.generated`
   * names the passes that ran generated.
   */
  generate?: boolean | 'always';
  /**
   * How generated kernels compute numbers that are not integers (runtime/compiler/emit-wgsl.ts
   * W2, W10): 'double-single' (default) as pairs of f32, about 48 significant bits, so that
   * results agree with JavaScript's f64 arithmetic to its last bits nearly always (an f32
   * field then gets JavaScript's rounding of it); 'f32' in f32 arithmetic, faster where a
   * kernel is bound by arithmetic, and within the app's tolerance. Methods with f64 fields
   * are double-single either way.
   */
  floats?: 'double-single' | 'f32';
}

export interface GpuRunnerStats {
  /** The adapter the passes run on. */
  adapter: GpuAdapterSummary;
  /** Do-alls run by WGSL kernels. */
  gpuPasses: number;
  /** Do-alls run in TypeScript because their method has no (usable) WGSL kernel. */
  fallbackPasses: number;
  /** Fallback passes by 'Class.method', with the reason. */
  fallbacks: Record<string, { passes: number; reason: string }>;
  /** Of `gpuPasses`, those run by generated WGSL (WebGpuOptions.generate), by 'Class.method'. */
  generated: Record<string, number>;
  /** WebGpuOptions.floats in effect. */
  floats: 'double-single' | 'f32';
  /** Tunables of the last GPU pass of each 'Class.method' (automatic values resolved). */
  tunables: Record<string, Record<string, number>>;
  dispatches: number;
  submits: number;
  snapshots: number;
  /** Of `snapshots`, those taken on the GPU (options.snapshot 'gpu' or 'gpu-readback'). */
  gpuSnapshots: number;
  /** Read-backs of a GPU snapshot's lists (16 bytes per class; none for kernels that read them on the GPU). */
  listReadbacks: number;
  /** Whole-heap uploads and downloads. */
  uploads: number;
  /** Bytes: the whole-heap transfers, and the metadata, header words and plans of GPU defragmentation (gpu-defrag.ts). */
  uploadBytes: number;
  downloads: number;
  downloadBytes: number;
}
