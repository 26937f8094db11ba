/// <reference types="@webgpu/types" />
/**
 * WebGPU device acquisition through npm `webgpu` (Dawn for Node), an optional dependency.
 *
 * Adapter choice (option `adapter`, default 'auto'):
 *  - If neither VK_ICD_FILENAMES nor VK_DRIVER_FILES is set and the machine shows no GPU
 *    device node (/dev/nvidia*, /dev/dri/renderD*, /dev/kfd) but Debian's `chromium`
 *    SwiftShader driver exists, VK_ICD_FILENAMES is pointed at it before Dawn starts
 *    (and VK_LOADER_LAYERS_DISABLE='*' so that no stray layer loads).
 *  - Otherwise Dawn's default adapter is asked for; if there is none and SwiftShader
 *    exists and nothing was set, a second Dawn instance is made with SwiftShader.
 *  - No adapter at all: GpuUnavailableError('no-adapter') saying how to get one.
 * `info.autoSwiftShader` tells whether smmo set the variable itself.
 *
 * Lifetime invariant (found by the toolchain spike): the `gpu` object returned by
 * Dawn's create() must stay strongly referenced while any GPU promise is pending, or the
 * process segfaults. A GpuContext therefore holds it, and every open context is also
 * held by the module-level set LIVE until close(), so dropping a context without closing
 * it cannot crash a pending mapAsync.
 */
import { existsSync, readdirSync } from 'node:fs';
import { GpuError, GpuUnavailableError, HOW_TO_GET_AN_ADAPTER } from './errors.js';
import { UsageError } from '../errors.js';
import type { GpuAdapterSummary, GpuOptions } from './options.js';

export const SWIFTSHADER_ICD = '/usr/lib/chromium/vk_swiftshader_icd.json';

/** Buffer usage and map-mode flags (WebGPU spec values; Dawn's globals are not installed on globalThis). */
export const BufferUsage = {
  MAP_READ: 0x1,
  MAP_WRITE: 0x2,
  COPY_SRC: 0x4,
  COPY_DST: 0x8,
  INDEX: 0x10,
  VERTEX: 0x20,
  UNIFORM: 0x40,
  STORAGE: 0x80,
  INDIRECT: 0x100,
  QUERY_RESOLVE: 0x200,
} as const;
export const MapMode = { READ: 0x1, WRITE: 0x2 } as const;

export type { GpuAdapterSummary, GpuOptions } from './options.js';

type DawnModule = { create(options: string[]): GPU; globals: object };

let dawnModule: Promise<DawnModule> | null = null;

/** Import npm `webgpu` once; GpuUnavailableError('no-package') if it is missing or does not load. */
export async function loadDawn(): Promise<DawnModule> {
  if (dawnModule === null) {
    // A variable specifier keeps TypeScript from requiring the optional package at build time.
    const spec = 'webgpu';
    dawnModule = (import(spec) as Promise<DawnModule>).catch((e: unknown) => {
      dawnModule = null;
      throw new GpuUnavailableError(
        'no-package',
        `the optional npm package 'webgpu' (Dawn for Node) could not be loaded (${(e as Error)?.message ?? String(e)}). ` +
          `Install it with \`npm install webgpu@0.6.2\` (Linux x64/arm64, macOS, Windows); the CPU backends work without it.`,
        { cause: e },
      );
    });
  }
  return dawnModule;
}

/** Whether npm `webgpu` can be imported (no adapter is asked for). */
export async function webgpuPackageAvailable(): Promise<boolean> {
  try {
    await loadDawn();
    return true;
  } catch {
    return false;
  }
}

const LIVE = new Set<GpuContext>();
/** Dawn instances that found no adapter: kept, never released (a few bytes; see the lifetime invariant). */
const SPENT: GPU[] = [];

function hasGpuDeviceNode(): boolean {
  try {
    if (readdirSync('/dev').some((n) => /^nvidia\d+$/.test(n) || n === 'kfd')) return true;
  } catch {
    /* no /dev: not Linux */
  }
  try {
    return readdirSync('/dev/dri').some((n) => n.startsWith('renderD'));
  } catch {
    return false;
  }
}

/** Whether libvulkan.so.1 is in a standard library folder or on LD_LIBRARY_PATH (Linux; elsewhere: assume yes). */
function vulkanLoaderFound(): boolean {
  if (process.platform !== 'linux') return true;
  const dirs = [
    ...(process.env['LD_LIBRARY_PATH'] ?? '').split(':').filter(Boolean),
    '/lib/x86_64-linux-gnu',
    '/usr/lib/x86_64-linux-gnu',
    '/lib/aarch64-linux-gnu',
    '/usr/lib/aarch64-linux-gnu',
    '/usr/lib64',
    '/lib64',
    '/usr/lib',
    '/lib',
    '/usr/local/lib',
  ];
  return dirs.some((d) => existsSync(`${d}/libvulkan.so.1`));
}

function vulkanDriverChosen(): boolean {
  return Boolean(process.env['VK_ICD_FILENAMES'] || process.env['VK_DRIVER_FILES']);
}

function useSwiftShader(): void {
  process.env['VK_ICD_FILENAMES'] = SWIFTSHADER_ICD;
  if (process.env['VK_LOADER_LAYERS_DISABLE'] === undefined) process.env['VK_LOADER_LAYERS_DISABLE'] = '*';
}

function isSoftware(info: GPUAdapterInfo): boolean {
  const s = `${info.vendor} ${info.architecture} ${info.device} ${info.description}`.toLowerCase();
  return /swiftshader|llvmpipe|lavapipe|software|warp/.test(s);
}

/** An acquired adapter + device. Close it to destroy the device. */
export class GpuContext {
  private closed = false;
  /** Messages of uncaptured GPU errors since the last check (validation, out of memory). */
  private readonly uncaptured: string[] = [];
  private lostMessage: string | null = null;

  private constructor(
    /** Dawn's GPU object: held for the context's life (lifetime invariant above). */
    private readonly gpu: GPU,
    readonly adapter: GPUAdapter,
    readonly device: GPUDevice,
    readonly info: GpuAdapterSummary,
  ) {
    device.lost.then(
      (i) => {
        if (!this.closed) this.lostMessage = `${i.reason}: ${i.message}`;
      },
      () => undefined,
    );
    device.addEventListener('uncapturederror', (ev) => {
      const e = (ev as GPUUncapturedErrorEvent).error;
      if (this.uncaptured.length < 20) this.uncaptured.push(e?.message ?? String(e));
    });
  }

  /** Find an adapter and open a device on it (see the file header for the choice). */
  static async acquire(options: GpuOptions = {}): Promise<GpuContext> {
    const mode = options.adapter ?? 'auto';
    const log = options.log ?? ((): void => undefined);
    const dawn = await loadDawn();
    const swiftShaderInstalled = existsSync(SWIFTSHADER_ICD);
    let autoSwiftShader = false;
    if (!vulkanDriverChosen() && swiftShaderInstalled && (mode === 'software' || (mode === 'auto' && !hasGpuDeviceNode()))) {
      useSwiftShader();
      autoSwiftShader = true;
    }
    if (options.validation !== undefined && typeof options.validation !== 'boolean')
      throw new UsageError(`webgpu.validation must be true or false, got ${String(options.validation)}`);
    // Dawn's toggles (options.validation false: skip_validation, see GpuOptions).
    const flags = options.validation === false ? ['enable-dawn-features=skip_validation'] : [];
    let gpu = dawn.create(flags);
    let adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
    if (adapter === null && mode !== 'hardware' && !autoSwiftShader && !vulkanDriverChosen() && swiftShaderInstalled) {
      SPENT.push(gpu);
      useSwiftShader();
      autoSwiftShader = true;
      gpu = dawn.create(flags);
      adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
    }
    if (adapter === null) {
      SPENT.push(gpu);
      const env = `VK_ICD_FILENAMES=${process.env['VK_ICD_FILENAMES'] ?? '(unset)'}, VK_DRIVER_FILES=${process.env['VK_DRIVER_FILES'] ?? '(unset)'}`;
      const loader = vulkanLoaderFound() ? '' : ' No Vulkan loader (libvulkan.so.1) was found in the system library folders.';
      throw new GpuUnavailableError('no-adapter', `Dawn found no WebGPU adapter (${env}).${loader} ${HOW_TO_GET_AN_ADAPTER}`);
    }
    const ai = adapter.info;
    const L = adapter.limits;
    const info: GpuAdapterSummary = {
      vendor: ai.vendor,
      architecture: ai.architecture,
      device: ai.device,
      description: ai.description,
      software: isSoftware(ai),
      autoSwiftShader,
      maxStorageBufferBindingSize: L.maxStorageBufferBindingSize,
      maxBufferSize: L.maxBufferSize,
      maxComputeWorkgroupsPerDimension: L.maxComputeWorkgroupsPerDimension,
      maxComputeInvocationsPerWorkgroup: L.maxComputeInvocationsPerWorkgroup,
      maxComputeWorkgroupStorageSize: L.maxComputeWorkgroupStorageSize,
      validation: options.validation !== false,
    };
    if (mode === 'hardware' && info.software) {
      SPENT.push(gpu);
      throw new GpuUnavailableError(
        'software-only',
        `only a software adapter was found (${info.description}); a hardware GPU was required. ${HOW_TO_GET_AN_ADAPTER}`,
      );
    }
    let device: GPUDevice;
    try {
      device = await adapter.requestDevice({
        requiredLimits: {
          maxStorageBufferBindingSize: L.maxStorageBufferBindingSize,
          maxBufferSize: L.maxBufferSize,
          maxComputeInvocationsPerWorkgroup: L.maxComputeInvocationsPerWorkgroup,
          maxComputeWorkgroupSizeX: L.maxComputeWorkgroupSizeX,
          maxComputeWorkgroupStorageSize: L.maxComputeWorkgroupStorageSize,
        },
      });
    } catch (e) {
      SPENT.push(gpu);
      throw new GpuUnavailableError('no-device', `the adapter '${info.description}' refused to open a device: ${(e as Error).message}`, {
        cause: e,
      });
    }
    log(
      `webgpu: adapter ${info.description || info.device} (${info.vendor}/${info.architecture})${info.software ? ', software' : ''}${autoSwiftShader ? `, VK_ICD_FILENAMES set to ${SWIFTSHADER_ICD} by smmo` : ''}`,
    );
    const ctx = new GpuContext(gpu, adapter, device, info);
    LIVE.add(ctx);
    return ctx;
  }

  /** Dawn's GPU instance (kept alive by this context). */
  get instance(): GPU {
    return this.gpu;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Throw GpuError if the device was lost or reported uncaptured errors since the last call. */
  checkErrors(where: string): void {
    if (this.lostMessage !== null)
      throw new GpuError(`${where}: the GPU device was lost (${this.lostMessage}); create a new runtime/backend`);
    if (this.uncaptured.length > 0) {
      const msgs = this.uncaptured.splice(0);
      throw new GpuError(`${where}: the GPU reported ${msgs.length} error(s):\n  ${msgs.join('\n  ')}`);
    }
  }

  /** Wait for submitted GPU work, then destroy the device. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    try {
      await this.device.queue.onSubmittedWorkDone();
    } catch {
      /* device already lost: nothing to wait for */
    }
    this.closed = true;
    this.device.destroy();
    LIVE.delete(this);
  }
}

/** Acquire a GPU (see GpuContext.acquire). */
export function acquireGpu(options?: GpuOptions): Promise<GpuContext> {
  return GpuContext.acquire(options);
}

/** fp32 peak (non-tensor) of adapters we know, for "fraction of peak" reports. */
export interface KnownPeak {
  name: string;
  tflops: number;
  source: string;
}

/**
 * fp32 peak of the adapter if we know it. H100 SXM5 80GB (HBM3): 67 TFLOP/s FP32
 * non-tensor, NVIDIA H100 Tensor Core GPU datasheet (SXM column); H100 PCIe (HBM2e): 51.
 */
export function knownFp32Peak(info: Pick<GpuAdapterSummary, 'description' | 'device'>): KnownPeak | null {
  const s = `${info.description} ${info.device}`;
  if (/H100/i.test(s) && /PCIe/i.test(s))
    return { name: 'NVIDIA H100 PCIe', tflops: 51, source: 'NVIDIA H100 Tensor Core GPU datasheet (PCIe: FP32 51 TFLOPS)' };
  if (/H100/i.test(s))
    return { name: 'NVIDIA H100 SXM5', tflops: 67, source: 'NVIDIA H100 Tensor Core GPU datasheet (SXM: FP32 67 TFLOPS, non-tensor)' };
  if (/H200/i.test(s))
    return { name: 'NVIDIA H200 SXM', tflops: 67, source: 'NVIDIA H200 Tensor Core GPU datasheet (FP32 67 TFLOPS, non-tensor)' };
  return null;
}
