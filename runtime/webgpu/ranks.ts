/// <reference types="@webgpu/types" />
/**
 * Rank tables on the GPU: for a WGSL kernel that declares `ranks: '<Class>'`
 * (runtime/kernel-spec.ts WgslKernel), the runner binds at binding 3 an `array<u32>`
 * whose entry r is the handle of the r-th smallest live object of that concrete class
 * (apps/grid.ts: cell ids of the grid apps). The WASM backend's `ranks` parameter
 * (runtime/kernels.ts) describes the same mapping in a compressed form; on the GPU the
 * plain table costs one load per lookup.
 *
 * Invariants:
 *  (R1) The table is made on the host from the host heap at a host snapshot (the heap is
 *       current there: the runner downloads first), from the class's allocated blocks
 *       and their allocation words, ascending block indices, then ascending slots.
 *  (R2) It stays valid while no object of the class is created or deleted. WGSL kernels
 *       must not create or delete objects of a ranked class (their declarations name the
 *       classes they create in `typeIds`; the runner refuses a kernel that creates a
 *       ranked class), and every host write re-takes the snapshot and so the table.
 *       Checked (GpuError; test/webgpu-gol.test.ts): at every download the table is
 *       compared with the downloaded heap's, and at every read-back of a GPU snapshot
 *       (gpu-snapshot.ts) the class's live objects are counted against its length, for
 *       tables made at the latest host snapshot.
 *  (R3) The buffer is re-uploaded only when the table changed (compared word by word).
 */
import type { Heap } from '../heap.js';
import { BLOCK_ALLOC_WORD } from '../layout.js';
import type { TypeLayout } from '../layout.js';
import { BufferUsage, type GpuContext } from './device.js';

/** Handles of the live objects of concrete type `t`, ascending (R1), from the host heap's allocation bitmaps. */
export function rankHandles(heap: Heap, t: TypeLayout): Uint32Array<ArrayBuffer> {
  const ids = new Uint32Array(heap.numBlocks);
  const count = heap.allocated[t.id]!.indices(ids, 0);
  const blocks = Array.from(ids.subarray(0, count)).sort((a, b) => a - b);
  const high = t.highMask;
  let n = 0;
  const live = blocks.map((bid) => {
    const w = (heap.i32[heap.blockWord(bid) + BLOCK_ALLOC_WORD]! & ~high) >>> 0;
    n += popcount(w);
    return w;
  });
  const out = new Uint32Array(n);
  let k = 0;
  blocks.forEach((bid, i) => {
    let w = live[i]!;
    while (w !== 0) {
      const s = 31 - Math.clz32(w & -w);
      out[k++] = bid * 32 + s;
      w = (w & (w - 1)) >>> 0;
    }
  });
  return out;
}

function popcount(x: number): number {
  x = x - ((x >>> 1) & 0x55555555);
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return (((x + (x >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}

/** One ranked class's table on the GPU. */
export class GpuRanks {
  buffer: GPUBuffer | null = null;
  handles: Uint32Array<ArrayBuffer> = new Uint32Array(0);
  /** Bumped when `buffer` is replaced (bind groups name it). */
  generation = 0;
  uploads = 0;

  constructor(
    readonly gpu: GpuContext,
    readonly t: TypeLayout,
  ) {}

  /** Make the table from the host heap (R1) and upload it if it changed (R3); returns a destroy callback for a replaced buffer. */
  refresh(heap: Heap): (() => void) | null {
    const next = rankHandles(heap, this.t);
    const same = next.length === this.handles.length && next.every((h, i) => h === this.handles[i]);
    if (same && this.buffer !== null) return null;
    this.handles = next;
    let old: GPUBuffer | null = null;
    const bytes = Math.max(16, next.byteLength);
    if (this.buffer === null || this.buffer.size < bytes) {
      old = this.buffer;
      this.buffer = this.gpu.device.createBuffer({
        size: bytes,
        usage: BufferUsage.STORAGE | BufferUsage.COPY_DST,
        label: `smmo ranks ${this.t.name}`,
      });
      this.generation++;
    }
    if (next.length > 0) this.gpu.device.queue.writeBuffer(this.buffer, 0, next);
    this.uploads++;
    return old === null ? null : () => old.destroy();
  }

  destroy(): void {
    this.buffer?.destroy();
    this.buffer = null;
  }
}
