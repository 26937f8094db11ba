/// <reference types="@webgpu/types" />
/**
 * Defragmentation on the heap's GPU copy (backend 'webgpu'; Runtime.parallelDefrag routes
 * here when the runtime has a GPU runner): "CompactGpu: Massively Parallel Memory
 * Defragmentation on GPUs" (ISMM 2019) §3 "Defragmentation Algorithm" and §4 "Pointer
 * Rewriting", as runtime/defrag.ts (its header states the algorithm and F1–F4), with the
 * objects' data never leaving the GPU:
 *
 *   host: download the heap's metadata region (header, bitmaps, type table, allocator
 *         states, block list: bytes [HEADER_OFFSET, blocksOffset)) and every block's
 *         header words, gathered on the GPU into one compact buffer (defrag.wgsl gather;
 *         checked heaps: with each block's per-slot generation words), unless the host is
 *         already current; then the same steps as Runtime.defrag (defrag.ts defragSteps:
 *         scan, reservations through the allocator core, update), which read and write
 *         only those words;
 *   GPU:  each pass's copy (defrag.wgsl copy: one invocation per target pair and SOA
 *         array), after the host computed the pass's forwarding entries and origins (they
 *         depend only on the slot masks: defrag-lanes.ts copyLanes without the field
 *         copies); the rewrite (defrag.wgsl rewrite: one invocation per slot of every
 *         block of a referring class and each of its reference columns), with the
 *         forwarding table uploaded as a buffer;
 *   host: upload the metadata region and the header words of the blocks whose words
 *         changed (defrag.wgsl scatter), not their data segments.
 *
 * Invariants (besides F1–F4 and L1–L4):
 *  (G1) Before planning, the host's metadata region and block header words (checked: and
 *       generation words) equal the GPU copy's: downloaded when the GPU is newer; when the
 *       host is newer the whole heap is uploaded first (what the next GPU pass would do).
 *       The host reads nothing else: its data segments may be stale throughout.
 *  (G2) Copy passes run in order (one dispatch per pass, each with its own pairs buffer, in
 *       one compute pass: WebGPU orders one dispatch's storage writes before the next
 *       dispatch's reads; a later pass may move an object again); within a pass each target block is in one pair (defrag.ts
 *       planPass: targets are distinct candidates), so no two invocations write one word,
 *       and a source is no target, so none reads a word another writes.
 *  (G3) Afterwards both copies hold the same metadata and header words (the host's); the
 *       GPU copy holds the data. A call whose steps stop between passes (defrag.ts F5)
 *       ends the same way for the passes done, then throws their DefragStoppedError. The
 *       runner's coherence (gpu-heap.ts) says the GPU is newer when anything moved, and
 *       its pass snapshot and the moved classes' rank tables are retaken (runner.ts
 *       afterDefrag).
 *  (G4) Same results as Runtime.defrag on the same heap: the same steps (so the same
 *       reservations, stats and remap), and the copy and rewrite kernels compute what
 *       copyLanes and rewriteLanes do (same slot pairing, same lookups). The stats add
 *       `device: 'webgpu'` and the bytes moved over the bus (`transfer`).
 */
import { defragSteps, type DefragHost } from '../defrag.js';
import { UsageError } from '../errors.js';
import { DefragScratch, RECORD_WORDS, type ReferringColumns } from '../defrag-lanes.js';
import { DefragStoppedError, type DefragResult } from '../defrag-result.js';
import type { Heap } from '../heap.js';
import { BLOCK_TYPE_WORD, SLOT_BITS, type TypeLayout } from '../layout.js';
import { BufferUsage } from './device.js';
import type { GpuRunner } from './runner.js';
import { GPU_BASE_BYTES } from './wgsl.js';

const WG = 64;
const FILE = 'defrag.wgsl';
/** Words of a gathered block record: 4 header words, plus 32 generation words on checked heaps. */
const recWords = (heap: Heap): number => (heap.table.types.some((t) => t.genOffset !== 0) ? 36 : 4);

/** Bytes that crossed the bus in one GPU defrag call. */
export interface DefragTransfer {
  downloadBytes: number;
  uploadBytes: number;
  /** Whole-heap uploads (only when the host was newer at the start: G1). */
  fullUploads: number;
}

/** The GPU resources of one call. */
class Call {
  readonly device: GPUDevice;
  readonly rec: number;
  private readonly bufs: GPUBuffer[] = [];
  private readonly pipes = new Map<string, Promise<GPUComputePipeline>>();
  readonly transfer: DefragTransfer = { downloadBytes: 0, uploadBytes: 0, fullUploads: 0 };
  /** Per type id: the word offset of its generation words in a block (0: none). */
  readonly gens: Uint32Array;

  constructor(
    readonly runner: GpuRunner,
    readonly heap: Heap,
  ) {
    this.device = runner.gpu.device;
    this.rec = recWords(heap);
    this.gens = new Uint32Array(Math.max(1, heap.table.types.length));
    for (const t of heap.table.types) this.gens[t.id] = t.genOffset >>> 2;
  }

  pipeline(entry: string): Promise<GPUComputePipeline> {
    let p = this.pipes.get(entry);
    if (p === undefined) this.pipes.set(entry, (p = this.runner.pipeline(FILE, [], entry, { WG, REC: this.rec })));
    return p;
  }

  /** A storage buffer holding `words` (at least 4 bytes), counted as uploaded. */
  buffer(words: Uint32Array, extra = 0, label = 'smmo defrag'): GPUBuffer {
    const size = Math.max(16, Math.ceil((words.byteLength + extra) / 16) * 16);
    const b = this.device.createBuffer({ size, usage: BufferUsage.STORAGE | BufferUsage.COPY_DST | BufferUsage.COPY_SRC, label });
    this.bufs.push(b);
    if (words.byteLength > 0) {
      this.device.queue.writeBuffer(b, 0, words);
      this.transfer.uploadBytes += words.byteLength;
    }
    return b;
  }

  async run(entry: string, buffers: GPUBuffer[], invocations: number): Promise<void> {
    if (invocations <= 0) return;
    const p = await this.pipeline(entry);
    // Encoded into the runner's open compute pass: dispatches are ordered (G2); submitted at a read-back or at the end.
    this.runner.dispatch(p, this.runner.bindBuffers(p, [this.runner.gheap.buffer, ...buffers]), Math.ceil(invocations / WG));
  }

  /** Submit, and destroy the call's buffers once the GPU has done with them. */
  async done(): Promise<void> {
    await this.runner.submit();
    await this.device.queue.onSubmittedWorkDone();
    for (const b of this.bufs) b.destroy();
  }
}

/**
 * The host's record of block b (its header words; checked: the generation words of type
 * `t`, by default its type word's), as the GPU's gather writes it.
 */
function hostRecord(heap: Heap, gens: Uint32Array, rec: number, b: number, out: Uint32Array, at: number, type?: number): void {
  const w = heap.blocksWord + b * heap.blockWords;
  const i32 = heap.i32;
  for (let k = 0; k < 4; k++) out[at + k] = i32[w + k]!;
  if (rec <= 4) return;
  const t = type ?? i32[w + BLOCK_TYPE_WORD]! >>> 0;
  const g = t < heap.table.types.length ? gens[t]! : 0;
  const ns = g === 0 ? 0 : heap.table.types[t]!.slots;
  for (let k = 0; k < rec - 4; k++) out[at + 4 + k] = k < ns ? i32[w + g + k]! : 0;
}

/** Write record `at` of `recs` (block b) into the host heap (G1). */
function putRecord(heap: Heap, gens: Uint32Array, rec: number, b: number, recs: Uint32Array, at: number): void {
  const w = heap.blocksWord + b * heap.blockWords;
  const i32 = heap.i32;
  for (let k = 0; k < 4; k++) i32[w + k] = recs[at + k]!;
  if (rec <= 4) return;
  const t = recs[at + BLOCK_TYPE_WORD]!;
  const g = t < heap.table.types.length ? gens[t]! : 0;
  const ns = g === 0 ? 0 : heap.table.types[t]!.slots;
  for (let k = 0; k < ns; k++) i32[w + g + k] = recs[at + 4 + k]!;
}

/** Bytes of the metadata region (the GPU copy's first bytes: header … block list). */
const metaBytes = (heap: Heap): number => heap.plan.blocksOffset - GPU_BASE_BYTES;

/**
 * (G4) A copy phase's host half: what copyLanes does but the field copies (forwarding
 * entries and origins), and the pairs for the GPU: [source, source slots, target,
 * reserved slots] per target pair, from plan[4].
 */
function hostCopyLanes(sc: DefragScratch, lanes: number): Uint32Array {
  const i32 = sc.i32;
  const nb = sc.numBlocks;
  const slabs = sc.slabsWord;
  const pairs: number[] = [0, 0, 0, 0];
  for (let j = 0; j < lanes; j++) {
    const w = 2 * nb + RECORD_WORDS * j;
    const sb = i32[w]!;
    let left = i32[w + 1]!;
    const p0 = i32[w + 2]!;
    const pn = i32[w + 3]!;
    const srcOrigin = i32[nb + sb]!;
    for (let p = p0; p < p0 + pn; p++) {
      const tb = i32[sc.pairsWord + 2 * p]!;
      const reserved = i32[sc.pairsWord + 2 * p + 1]!;
      let got = reserved;
      const tOrigin = slabs + 32 * i32[nb + tb]!;
      let smask = 0;
      while (got !== 0) {
        const d = 31 - Math.clz32(got & -got);
        got &= got - 1;
        const s = 31 - Math.clz32(left & -left);
        left &= left - 1;
        smask |= 1 << s;
        const o = srcOrigin < 0 ? 0 : i32[slabs + 32 * srcOrigin + s]!;
        const first = o !== 0 ? o : (sb << SLOT_BITS) + s;
        i32[slabs + 32 * i32[first >>> SLOT_BITS]! + (first & 31)] = (tb << SLOT_BITS) + d;
        i32[tOrigin + d] = first;
      }
      pairs.push(sb, smask >>> 0, tb, reserved >>> 0);
    }
  }
  const out = new Uint32Array(pairs);
  out[0] = (pairs.length - 4) / 4;
  return out;
}

/** The rewrite entries: [buffer word of a reference column of a block, its live slots] for every block of a referring class. */
function rewriteEntries(heap: Heap, columns: ReferringColumns): Uint32Array {
  const out: number[] = [0, 0, 0, 0];
  const list = new Uint32Array(heap.numBlocks);
  const base = GPU_BASE_BYTES / 4;
  for (let id = 0; id < columns.length; id++) {
    const offs = columns[id];
    if (offs === undefined) continue;
    const hm = heap.table.types[id]!.highMask;
    const nb = heap.allocated[id]!.indices(list);
    for (let i = 0; i < nb; i++) {
      const w = heap.blocksWord + list[i]! * heap.blockWords;
      const live = (heap.i32[w]! & ~hm) >>> 0;
      if (live === 0) continue;
      for (const off of offs) out.push(w + (off >>> 2) - base, live);
    }
  }
  const a = new Uint32Array(out);
  a[0] = (out.length - 4) / 2;
  return a;
}

/**
 * The forwarding table for the rewrite kernel: per block, the index of its forwarding slab
 * among the sources' (NONE: not a source), then those slabs (32 words each). The origin
 * slabs of the scratch (defrag-lanes.ts) are left out: the rewrite does not read them.
 */
function forwardingBuffer(sc: DefragScratch): Uint32Array {
  const i32 = sc.i32;
  const nb = sc.numBlocks;
  let sources = 0;
  for (let b = 0; b < nb; b++) if (i32[b]! >= 0) sources++;
  const out = new Uint32Array(nb + 32 * sources);
  let k = 0;
  for (let b = 0; b < nb; b++) {
    const r = i32[b]!;
    if (r < 0) {
      out[b] = 0xffffffff;
      continue;
    }
    out[b] = k;
    out.set(i32.subarray(sc.slabsWord + 32 * r, sc.slabsWord + 32 * r + 32), nb + 32 * k);
    k++;
  }
  return out;
}

/**
 * Defragment `types` with factor `n` (checked) on the GPU copy of `host.heap` (see the top
 * of this file). The caller (Runtime) has checked F4 and marks the call in flight.
 */
export async function gpuDefragment(runner: GpuRunner, host: DefragHost, types: readonly TypeLayout[], n: number): Promise<DefragResult> {
  const t0 = performance.now();
  const heap = host.heap;
  await runner.beforeDefrag();
  const call = new Call(runner, heap);
  const { rec, gens } = call;
  const nb = heap.numBlocks;
  const gheap = runner.gheap;
  const wasGpuNewer = gheap.gpuNewer;
  let before: Uint32Array;
  let result: DefragResult | null = null;
  let stopped: DefragStoppedError | null = null;
  let moved: number[] = [];
  try {
    const gensBuf = call.buffer(gens, 0, 'smmo defrag gens');
    if (gheap.hostNewer) {
      // (G1) the host is current: upload it all, as the next GPU pass would.
      gheap.upload();
      call.transfer.fullUploads++;
      call.transfer.uploadBytes += gheap.bytes;
      before = new Uint32Array(nb * rec);
      for (let b = 0; b < nb; b++) hostRecord(heap, gens, rec, b, before, b * rec);
    } else {
      // (G1) metadata region, then every block's record, gathered on the GPU.
      const meta = metaBytes(heap);
      const m = new Uint8Array(await runner.readBuffer(gheap.buffer, meta));
      heap.u8.set(m, GPU_BASE_BYTES);
      heap.blockSetChanged(); // the GPU's bitmaps and R (thread.ts L1)
      const out = call.buffer(new Uint32Array(0), nb * rec * 4, 'smmo defrag records');
      await call.run('gather', [out, gensBuf], nb);
      before = new Uint32Array(await runner.readBuffer(out, nb * rec * 4));
      call.transfer.downloadBytes += meta + nb * rec * 4;
      for (let b = 0; b < nb; b++) putRecord(heap, gens, rec, b, before, b * rec);
    }

    // The host steps, with the lanes on the GPU (G2, G4).
    const sc = new DefragScratch(nb);
    const steps = defragSteps(host, types, n, sc, 1);
    // (F5) a call stopped between passes ends as a finished one (G3 below) before it throws
    const next = (): ReturnType<typeof steps.next> => {
      try {
        return steps.next();
      } catch (e) {
        if (!(e instanceof DefragStoppedError)) throw e;
        stopped = e;
        return { done: true, value: e.result };
      }
    };
    let copied = false;
    for (let r = next(); ; r = next()) {
      if (r.done === true) {
        result = r.value;
        break;
      }
      const req = r.value;
      if (req.kind === 'copy') {
        const pairs = hostCopyLanes(sc, req.lanes);
        pairs[1] = req.type.id;
        const nc = req.type.fields.reduce((a, f) => a + f.offsets.length, 0);
        await call.run('copy', [call.buffer(pairs, 0, 'smmo defrag pairs')], pairs[0]! * nc);
        copied = true;
      } else {
        moved = [...req.moved];
        const entries = rewriteEntries(heap, req.columns);
        const fwd = forwardingBuffer(sc);
        await call.run(
          'rewrite',
          [call.buffer(entries, 0, 'smmo defrag entries'), call.buffer(fwd, 0, 'smmo defrag forwarding')],
          entries[0]! * 32,
        );
      }
    }

    // (G3) the metadata region and the changed block records go back. The metadata write is
    // queued before the encoded copy and rewrite dispatches run (they are submitted at the
    // end); neither reads it (block words come from constants, live masks from the entries).
    // The header words go up through the scatter dispatch, after them.
    const meta = heap.u8.slice(GPU_BASE_BYTES, GPU_BASE_BYTES + metaBytes(heap));
    runner.gpu.device.queue.writeBuffer(gheap.buffer, 0, meta);
    call.transfer.uploadBytes += meta.byteLength;
    const now = new Uint32Array(rec);
    const changed: number[] = [0, 0, 0, 0];
    for (let b = 0; b < nb; b++) {
      const type = before[b * rec + BLOCK_TYPE_WORD]!; // a retired block's generation words are its old type's
      hostRecord(heap, gens, rec, b, now, 0, type);
      let same = true;
      for (let k = 0; k < rec; k++) if (now[k] !== before[b * rec + k]) same = false;
      if (!same) changed.push(b, type, ...now);
    }
    const recs = new Uint32Array(changed);
    recs[0] = (changed.length - 4) / (rec + 2);
    await call.run('scatter', [call.buffer(recs, 0, 'smmo defrag changed records'), gensBuf], recs[0]!);
    runner.afterDefrag(moved, copied || wasGpuNewer);
  } finally {
    await call.done();
    // The runner's transfer counters (rt.stats().backend.webgpu) include the call's partial transfers (a whole upload counted itself).
    gheap.stats.downloadBytes += call.transfer.downloadBytes;
    gheap.stats.uploadBytes += call.transfer.uploadBytes - call.transfer.fullUploads * gheap.bytes;
  }
  if (result === null) throw new UsageError('parallelDefrag (webgpu): internal error: the defrag steps returned no result');
  result.stats.device = 'webgpu';
  result.stats.transfer = call.transfer;
  result.stats.ms.total = performance.now() - t0; // (G4) the transfers included
  if (stopped !== null) throw stopped; // (F5) its result is `result`, the copies agree (G3)
  return result;
}
