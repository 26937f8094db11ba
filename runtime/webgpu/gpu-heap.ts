/// <reference types="@webgpu/types" />
/**
 * The GPU copy of a heap: one storage buffer holding heap bytes [GPU_BASE_BYTES, heapBytes)
 * with exactly the host layout (wgsl.ts), and the bookkeeping of which side is newer.
 *
 * Coherence invariant: at any time at most one side holds changes the other lacks.
 *   hostNewer: the host may have written the heap since the last upload (the GPU copy is
 *              stale); cleared by upload().
 *   gpuNewer:  a GPU pass wrote the buffer since the last download (the host heap is
 *              stale); cleared by download().
 * The owner (GpuRunner) uploads before a GPU pass when hostNewer and downloads before
 * host access when gpuNewer; a host write after a download sets hostNewer again.
 *
 * Transfers: Dawn cannot read from or write to a SharedArrayBuffer-backed view (writeBuffer
 * with one segfaults in webgpu@0.6.2), so uploads go through a reusable plain
 * ArrayBuffer in chunks, and downloads map a staging buffer chunk by chunk and copy
 * the mapped range into the heap before unmapping it.
 */
import { UsageError } from '../errors.js';
import type { Heap } from '../heap.js';
import { BufferUsage, MapMode, type GpuContext } from './device.js';
import { GPU_BASE_BYTES } from './wgsl.js';

/** Bytes per transfer chunk (upload scratch and download staging buffer). */
const CHUNK = 16 << 20;

export interface TransferStats {
  uploads: number;
  uploadBytes: number;
  downloads: number;
  downloadBytes: number;
}

export class GpuHeap {
  readonly buffer: GPUBuffer;
  /** Bytes of the buffer (heapBytes − GPU_BASE_BYTES, rounded up to 4). */
  readonly bytes: number;
  hostNewer = true;
  gpuNewer = false;
  readonly stats: TransferStats = { uploads: 0, uploadBytes: 0, downloads: 0, downloadBytes: 0 };
  private staging: GPUBuffer | null = null;
  private scratch: Uint8Array | null = null;

  constructor(
    readonly gpu: GpuContext,
    readonly heap: Heap,
  ) {
    const bytes = Math.ceil((heap.plan.heapBytes - GPU_BASE_BYTES) / 4) * 4;
    const limit = Math.min(gpu.info.maxStorageBufferBindingSize, gpu.info.maxBufferSize);
    if (bytes > limit) {
      throw new UsageError(
        `the heap's GPU copy needs ${bytes} bytes, but the adapter '${gpu.info.description}' binds at most ${limit} bytes per storage buffer; ` +
          `create the runtime with a heap of at most ${limit + GPU_BASE_BYTES} bytes for --backend webgpu`,
      );
    }
    this.bytes = bytes;
    this.buffer = gpu.device.createBuffer({
      size: bytes,
      usage: BufferUsage.STORAGE | BufferUsage.COPY_DST | BufferUsage.COPY_SRC,
      label: 'smmo heap',
    });
  }

  /** Copy the host heap to the GPU (queued before any later submit). */
  upload(): void {
    const src = this.heap.u8;
    if (this.scratch === null) this.scratch = new Uint8Array(Math.min(CHUNK, this.bytes));
    const scratch = this.scratch;
    for (let at = 0; at < this.bytes; at += scratch.length) {
      const n = Math.min(scratch.length, this.bytes - at);
      const from = GPU_BASE_BYTES + at;
      // The last word may reach past the heap when heapBytes is not a multiple of 4.
      const avail = Math.max(0, Math.min(n, src.length - from));
      scratch.set(src.subarray(from, from + avail), 0);
      if (avail < n) scratch.fill(0, avail, n);
      this.gpu.device.queue.writeBuffer(this.buffer, at, scratch, 0, n);
    }
    this.hostNewer = false;
    this.stats.uploads++;
    this.stats.uploadBytes += this.bytes;
  }

  /**
   * Copy the GPU copy back into the host heap. `submitPending` flushes work the caller
   * has encoded but not submitted, so that the copies see it.
   */
  async download(submitPending?: () => void): Promise<void> {
    submitPending?.();
    const device = this.gpu.device;
    if (this.staging === null) {
      this.staging = device.createBuffer({
        size: Math.min(CHUNK, this.bytes),
        usage: BufferUsage.MAP_READ | BufferUsage.COPY_DST,
        label: 'smmo heap staging',
      });
    }
    const staging = this.staging;
    const dst = this.heap.u8;
    for (let at = 0; at < this.bytes; at += staging.size) {
      const n = Math.min(staging.size, this.bytes - at);
      const enc = device.createCommandEncoder();
      enc.copyBufferToBuffer(this.buffer, at, staging, 0, n);
      device.queue.submit([enc.finish()]);
      await staging.mapAsync(MapMode.READ, 0, n);
      const mapped = new Uint8Array(staging.getMappedRange(0, n));
      const from = GPU_BASE_BYTES + at;
      const avail = Math.max(0, Math.min(n, dst.length - from));
      dst.set(avail === n ? mapped : mapped.subarray(0, avail), from);
      staging.unmap();
    }
    this.gpu.checkErrors('download');
    // The GPU's allocator opened and retired blocks without the block-set epoch, and R holds
    // the GPU's lists: the host's next snapshot walks the bitmaps again.
    this.heap.blockSetChanged();
    this.gpuNewer = false;
    this.stats.downloads++;
    this.stats.downloadBytes += this.bytes;
  }

  destroy(): void {
    this.buffer.destroy();
    this.staging?.destroy();
    this.staging = null;
  }
}
