/// <reference types="@webgpu/types" />
/**
 * The pass snapshot taken on the GPU (wgsl/snapshot.wgsl): after an allocating WGSL
 * kernel the block lists and iteration bitmaps are stale (runner.ts); instead of bringing
 * the heap to the host for ThreadContext.snapshot() and uploading it again (two full heap
 * transfers), three dispatches rebuild them in the heap's GPU copy; the host reads back
 * 16 bytes per type (count, start, cursor, live objects) plus the allocator status words
 * only when it needs the lists (G4).
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
 *  (G4) Without the read-back: a kernel that declares `gpuLists` reads its list start and
 *       count from the lists buffer itself (binding 5) and is dispatched indirectly, its
 *       workgroup counts written by one `args` invocation right before it (with Dawn's
 *       validation on, directly instead, with workgroups for every block of the heap:
 *       runner.ts runKernel, measured there); so with
 *       option snapshot 'gpu' a step of such kernels makes no round trip at all. After a
 *       host snapshot the host's lists are written to the same buffer, so the kernel reads
 *       the right lists whichever side took the snapshot. The read-back happens only when
 *       something needs the lists on the host (a kernel without gpuLists; option
 *       snapshot 'gpu-readback'); allocator failures then surface at the next read-back
 *       or download (toHost, rt.sync()).
 *  (G5) Split-reduce kernels (nbody's computeForce, collision's prepareMerge and
 *       resolveMerge) declare `gpuLists` too: `main` and `reduce` read the list from
 *       binding 5 (so does `partial`'s indexing), and the runner dispatches them directly
 *       over an upper bound of blocks with z = SPLIT (the `args` dispatch writes z = 1, so
 *       they are never dispatched indirectly). The host still chooses SPLIT: from the
 *       class's block count in this buffer SPLIT_LAG snapshots earlier, copied to a
 *       staging buffer right after that snapshot and mapped after the next submit — a
 *       read that has normally arrived long before it is used, so no stall
 *       (runner.ts runSplitOnGpuLists, splitCountsFor S1–S2). These count reads are not
 *       list read-backs (`listReadbacks`): nothing waits for them in steady state.
 * Tested by test/webgpu-gol.test.ts (every step compared with TypeScript, lists compared
 * with the host snapshot's after download) and test/webgpu-collision-gpulists.test.ts
 * (G5: no read-back over five collision steps, the same results as with the lists read
 * back, SPLIT from the count SPLIT_LAG snapshots back).
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
/** Indirect-argument slots (one per (type, workgroup size) pair in use). */
const MAX_SLOTS = 64;

export class GpuSnapshot {
  /** The lists (binding 5 of gpuLists kernels): per type id [count, start, cursor, objects]; then 2 status words (G3). */
  readonly meta: GPUBuffer;
  private readonly metaBytes: number;
  private readonly indirect: GPUBuffer;
  private readonly slots = new Map<string, { slot: number; params: GPUBuffer; group: GPUBindGroup | null }>();
  private groups: [GPUBindGroup, GPUBindGroup, GPUBindGroup] | null = null;

  constructor(private readonly host: SnapshotHost) {
    this.metaBytes = 16 * host.numTypes;
    this.meta = host.device.createBuffer({
      size: this.metaBytes + 16,
      usage: BufferUsage.STORAGE | BufferUsage.COPY_SRC | BufferUsage.COPY_DST,
      label: 'smmo snapshot lists',
    });
    this.indirect = host.device.createBuffer({
      size: 16 * MAX_SLOTS,
      usage: BufferUsage.STORAGE | BufferUsage.INDIRECT,
      label: 'smmo indirect dispatch',
    });
  }

  /** Compile the snapshot's pipelines now (so that a timed run does not include compilation). */
  async prepare(): Promise<void> {
    const h = this.host;
    await Promise.all([h.pipeline('count', { WG }), h.pipeline('starts', {}), h.pipeline('fill', { WG }), h.pipeline('args', {})]);
  }

  /** Encode the snapshot's three dispatches (G1); the lists stay on the GPU (read() brings them). */
  async encode(): Promise<void> {
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
  }

  /** Read the lists back, with `status` (8 bytes, if any) copied in first (G3): one round trip. */
  async read(status: GPUBuffer | null): Promise<GpuSnapshotResult> {
    const h = this.host;
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

  /** After a host snapshot: the same lists into the GPU's copy (G4: gpuLists kernels read them there). */
  writeHostLists(lists: Int32Array): void {
    const words = new Uint32Array(4 * this.host.numTypes);
    for (let t = 0; t < this.host.numTypes; t++) {
      words[4 * t] = lists[2 * t + 1]!;
      words[4 * t + 1] = lists[2 * t]!;
      words[4 * t + 2] = lists[2 * t + 1]!;
    }
    this.host.device.queue.writeBuffer(this.meta, 0, words);
  }

  /**
   * Encode the `args` dispatch for a kernel of type `typeId` at workgroup size `wg` (G4) and
   * return where its indirect arguments are: (listed blocks × 32 / wg) workgroups as
   * (x, y, 1) with x ≤ maxDim (the kernel linearises y·nx + x: wgsl.ts linear_workgroup).
   */
  async encodeArgs(typeId: number, wg: number, maxDim: number): Promise<{ buffer: GPUBuffer; offset: number }> {
    const h = this.host;
    const key = `${typeId}|${wg}`;
    let e = this.slots.get(key);
    if (e === undefined) {
      if (this.slots.size >= MAX_SLOTS)
        throw new GpuError(`indirect dispatch: more than ${MAX_SLOTS} (class, workgroup size) pairs in one runner`);
      const params = h.device.createBuffer({ size: 16, usage: BufferUsage.UNIFORM | BufferUsage.COPY_DST, label: `smmo args ${key}` });
      const slot = this.slots.size;
      h.device.queue.writeBuffer(params, 0, new Uint32Array([typeId, wg, maxDim, slot]));
      this.slots.set(key, (e = { slot, params, group: null }));
    }
    const pipe = await h.pipeline('args', {});
    e.group ??= h.device.createBindGroup({
      layout: pipe.getBindGroupLayout(0),
      entries: [
        { binding: 1, resource: { buffer: this.meta } },
        { binding: 2, resource: { buffer: e.params } },
        { binding: 3, resource: { buffer: this.indirect } },
      ],
    });
    h.dispatch(pipe, e.group, 1);
    return { buffer: this.indirect, offset: 16 * e.slot };
  }

  destroy(): void {
    this.meta.destroy();
    this.indirect.destroy();
    for (const e of this.slots.values()) e.params.destroy();
  }
}
