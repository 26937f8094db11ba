/// <reference types="@webgpu/types" />
/**
 * The pass snapshot taken on the GPU (wgsl/snapshot.wgsl): after an allocating WGSL
 * kernel the block lists and iteration bitmaps are stale (runner.ts); instead of bringing
 * the heap to the host for ThreadContext.snapshot() and uploading it again (two full heap
 * transfers), three dispatches rebuild them in the heap's GPU copy and the host reads back
 * 16 bytes per type (count, start, cursor, live objects) plus the allocator status words.
 * Paper: "DynaSOAr: A Parallel Memory Allocator for Object-Oriented Programming on GPUs
 * with Efficient Memory Access" (Springer & Masuhara, ECOOP 2019) §2.1 (a do-all visits the
 * objects that exist when it starts).
 *
 * Invariants (the host snapshot's S1–S3 of runtime/thread.ts, on the GPU copy):
 *  (G1) Afterwards, for every concrete type t, block-list entries [start_t, start_t + count_t)
 *       are exactly the blocks allocated for t (type word t and allocated[t] bit set), each
 *       once, types in id order as the host's; each listed block's iteration word equals
 *       its allocation word without the type's high bits. Only the order within a type
 *       may differ from the host's (atomic increments): no kernel depends on it.
 *  (G2) It runs only when the GPU copy is the newer one and no host write is pending
 *       (runner.ts ensureSnapshot: otherwise the host snapshot runs, as the heap must be
 *       uploaded anyway), and between kernels: nothing else touches the heap meanwhile.
 *  (G3) The read-back is what the runner needs to size and parametrise the next
 *       dispatches (list start and count per type), the live objects per type (the rank
 *       tables' check, ranks.ts R2) and the status words of the allocating kernels since
 *       the last check (GpuHeapError before the lists are used): one round trip, no heap
 *       bytes.
 * Tested by test/webgpu-gol.test.ts (every step compared with TypeScript, lists compared
 * with the host snapshot's after download).
 */
import { BufferUsage } from './device.js';
import { GpuError } from './errors.js';

/** What the runner lends the snapshot: pipelines, dispatch, buffers, read-back. */
export interface SnapshotHost {
  readonly device: GPUDevice;
  readonly heapBuffer: GPUBuffer;
  readonly numTypes: number;
  readonly numBlocks: number;
  pipeline(entry: string, constants: Record<string, number>): Promise<GPUComputePipeline>;
  dispatch(pipeline: GPUComputePipeline, bindGroup: GPUBindGroup, groups: number): void;
  clear(buffer: GPUBuffer): void;
  copy(src: GPUBuffer, srcOffset: number, dst: GPUBuffer, dstOffset: number, bytes: number): void;
  readBuffer(src: GPUBuffer, bytes: number): Promise<ArrayBuffer>;
}

export interface GpuSnapshotResult {
  /** [start, count] per type id, as ThreadContext.snapshot() returns. */
  lists: Int32Array;
  /** Live objects per type id. */
  objects: number[];
  /** Status words of the allocating kernels copied in before the read-back: [STATUS_* bits, failed invocations]. */
  status: [number, number];
}

const WG = 64;

export class GpuSnapshot {
  private readonly meta: GPUBuffer;
  private readonly metaBytes: number;
  private groups: [GPUBindGroup, GPUBindGroup, GPUBindGroup] | null = null;

  constructor(private readonly host: SnapshotHost) {
    this.metaBytes = 16 * host.numTypes;
    // meta words, then 2 status words copied in (G3).
    this.meta = host.device.createBuffer({
      size: this.metaBytes + 16,
      usage: BufferUsage.STORAGE | BufferUsage.COPY_SRC | BufferUsage.COPY_DST,
      label: 'smmo snapshot meta',
    });
  }

  /** Encode the three dispatches, copy `status` (8 bytes, if any) in, and read back (G1, G3). */
  async take(status: GPUBuffer | null): Promise<GpuSnapshotResult> {
    const h = this.host;
    const [count, starts, fill] = await Promise.all([h.pipeline('count', { WG }), h.pipeline('starts', {}), h.pipeline('fill', { WG })]);
    if (this.groups === null) {
      const both = (p: GPUComputePipeline): GPUBindGroup =>
        h.device.createBindGroup({
          layout: p.getBindGroupLayout(0),
          entries: [
            { binding: 0, resource: { buffer: h.heapBuffer } },
            { binding: 1, resource: { buffer: this.meta } },
          ],
        });
      const metaOnly = h.device.createBindGroup({
        layout: starts.getBindGroupLayout(0),
        entries: [{ binding: 1, resource: { buffer: this.meta } }],
      });
      this.groups = [both(count), metaOnly, both(fill)];
    }
    const blockGroups = Math.ceil(h.numBlocks / WG);
    h.clear(this.meta);
    h.dispatch(count, this.groups[0], blockGroups);
    h.dispatch(starts, this.groups[1], 1);
    h.dispatch(fill, this.groups[2], blockGroups);
    if (status !== null) h.copy(status, 0, this.meta, this.metaBytes, 8);
    const words = new Uint32Array(await h.readBuffer(this.meta, this.metaBytes + 16));
    const lists = new Int32Array(2 * h.numTypes);
    const objects: number[] = [];
    for (let t = 0; t < h.numTypes; t++) {
      const n = words[4 * t]!;
      lists[2 * t] = words[4 * t + 1]!;
      lists[2 * t + 1] = n;
      objects.push(words[4 * t + 3]!);
      if (words[4 * t + 2] !== n) throw new GpuError(`GPU snapshot: type ${t} listed ${words[4 * t + 2]} blocks, counted ${n}`);
    }
    const st = status === null ? [0, 0] : [words[4 * h.numTypes]!, words[4 * h.numTypes + 1]!];
    return { lists, objects, status: [st[0]!, st[1]!] };
  }

  destroy(): void {
    this.meta.destroy();
  }
}
