/**
 * The two phases of defragmentation that touch every object, as *lanes* that any thread can
 * run: copy (one lane per source record: "CompactGpu: Massively Parallel Memory
 * Defragmentation on GPUs", ISMM 2019, §3 "Defragmentation Algorithm", one GPU thread per
 * source slot; here one lane per source block) and rewrite (§4 "Pointer Rewriting": one lane
 * per block of a referring class). runtime/defrag.ts drives them (its header states the
 * algorithm and F1–F4); runtime/defrag-parallel.ts hands them to the worker threads; both
 * run the same lane code, so the heap, the remap and the statistics are the same on any
 * number of threads.
 *
 * Everything a lane reads or writes besides the heap is in one *scratch* buffer (a growable
 * SharedArrayBuffer, given to the workers once at start: workers/protocol.ts
 * WorkerConfig.defragScratch; each thread reads it through a fixed-length view, renewed
 * when the buffer has grown: a length-tracking view of a growable buffer is about 20 times
 * slower per access in Node 20), in 32-bit words, NB = heap blocks:
 *
 *   [0, NB)          RECORD_OF  block → slab of its forwarding entries (−1: not a source)
 *   [NB, 2NB)        ORIGIN_OF  block → slab of its origins (−1: received no object)
 *   [2NB, 8NB)       PLAN       the phase's work list, written by the calling thread:
 *                                copy: per record j, 4 words [source, live mask, first
 *                                pair, pairs] at PLAN + 4j; per target pair p, [target,
 *                                reserved mask] at PLAN + 4NB + 2p;
 *                                rewrite: the blocks to rewrite, at PLAN; restore
 *                                (defrag-wasm.ts): the marked sources, at PLAN.
 *   [8NB, 8NB+16)    CONTROL    word 8NB: PUBLISH (1: the copy lanes publish forwarding
 *                                handles into the heap, runtime/defrag-wasm.ts); 8NB+1: the
 *                                lanes of the running rewrite-kind phase (LANES_TS, LANES_WASM,
 *                                LANES_RESTORE: defrag-wasm.ts V5); the rest unused
 *   [8NB+16, …)      SLABS      32-word slabs, handed out in order: a source's forwarding
 *                                entries (slot → final handle of the object that had that
 *                                handle before the call; 0: none), a target's origins
 *                                (slot → handle before the call of the object moved in; 0:
 *                                none). At most one of each per block: ≤ 2NB slabs.
 *
 * Invariants:
 *  (L1) Only the calling thread writes RECORD_OF, ORIGIN_OF, PLAN, CONTROL and hands out slabs (it
 *       zeroes each new slab), and only while no lane runs; the pool's fork (C_EPOCH bump)
 *       and join publish them (workers/protocol.ts P1). The buffer grows only then.
 *  (L2) Copy lane j writes only: the target slots that record j reserved (the scan reserved
 *       them through the allocator core before the phase, F1, so they are distinct), the
 *       origin words of those slots, and the forwarding entries of the objects it moves
 *       (each object's handle before the call, distinct). It reads its source block, which
 *       is no target in the same pass, and that block's origins, written in an earlier pass.
 *       With PUBLISH it also writes each moved object's forwarding word in the heap and its
 *       source's mask (runtime/defrag-wasm.ts V3: again words no other lane writes).
 *       So lanes need no synchronisation, and their order does not change the result.
 *  (L3) Rewrite lane i writes only the reference words of its own block and reads the
 *       forwarding entries, which no lane writes in that phase: any order, the same heap.
 *       With LANES_WASM the lanes are the module's (runtime/defrag-wasm.ts V3, V4): the
 *       forwarding entries they read are the ones the copy lanes published into the
 *       vacated sources; the same lookups and writes otherwise.
 *  (L4) A lane never allocates, never frees and runs no user code, so it cannot throw on a
 *       consistent heap; only a dying thread (an out-of-memory kill) can stop one. The
 *       defragmented classes are then inconsistent (reserved slots not filled):
 *       WorkerCrashedError carries validateHeap()'s verdict, as for a crash in a do-all.
 */
import { ForwardTable } from './defrag-result.js';
import { forwardingColumn, masksWord, wasmLanes } from './defrag-wasm.js';
import { UsageError } from './errors.js';
import type { Heap } from './heap.js';
import { BLOCK_ALLOC_WORD, BLOCK_TYPE_WORD, SLOT_BITS, type TypeLayout, type TypeTable } from './layout.js';

/** Words per copy record in PLAN. */
export const RECORD_WORDS = 4;
/** Initial slabs of a scratch buffer (it grows by doubling, up to 2NB). */
const INITIAL_SLABS = 64;
/** Words of CONTROL, and the values of its lanes word (the running rewrite-kind phase). */
const CONTROL_WORDS = 16;
export const LANES_TS = 0;
export const LANES_WASM = 1;
export const LANES_RESTORE = 2;

/** Growable shared buffers (ES2024; Node 20 has them, TypeScript's ES2022 lib does not declare them). */
interface Growable {
  readonly byteLength: number;
  grow(n: number): void;
}
type GrowableCtor = new (bytes: number, opts: { maxByteLength: number }) => SharedArrayBuffer & Growable;

/** The scratch buffer of defragmentation (see the top of this file). */
export class DefragScratch {
  readonly numBlocks: number;
  readonly buffer: SharedArrayBuffer;
  /** Word index of PLAN's target pairs, of CONTROL, and of SLABS. */
  readonly pairsWord: number;
  readonly controlWord: number;
  readonly slabsWord: number;
  private i32v: Int32Array;
  /** Slabs handed out in this call; those of the running pass start at passFirst, at most passMax. */
  slabs = 0;
  private passFirst = 0;
  private passMax = 0;

  /** A scratch for a heap of `numBlocks` blocks; `buffer`: attach to one made by another thread (workers). */
  constructor(numBlocks: number, buffer?: SharedArrayBuffer) {
    this.numBlocks = numBlocks;
    this.pairsWord = 2 * numBlocks + RECORD_WORDS * numBlocks;
    this.controlWord = 8 * numBlocks;
    this.slabsWord = 8 * numBlocks + CONTROL_WORDS;
    if (buffer !== undefined) {
      this.buffer = buffer;
    } else {
      const max = (this.slabsWord + 32 * 2 * numBlocks) * 4;
      const initial = (this.slabsWord + 32 * Math.min(INITIAL_SLABS, 2 * numBlocks)) * 4;
      this.buffer = new (SharedArrayBuffer as unknown as GrowableCtor)(initial, { maxByteLength: max });
    }
    this.i32v = new Int32Array(this.buffer, 0, this.buffer.byteLength >> 2);
  }

  /** The whole buffer as words: a fixed-length view, renewed after growth (by this thread or, L1, the calling thread). */
  get i32(): Int32Array {
    const bytes = this.buffer.byteLength;
    if (this.i32v.byteLength !== bytes) this.i32v = new Int32Array(this.buffer, 0, bytes >> 2);
    return this.i32v;
  }

  /** (L1) Start a call: no block is a source or a target yet; nothing published, the rewrite on the TypeScript lanes. */
  reset(): void {
    this.i32.fill(-1, 0, 2 * this.numBlocks);
    this.i32.fill(0, this.controlWord, this.controlWord + CONTROL_WORDS);
    this.slabs = 0;
  }

  /** (L1) Whether the copy lanes publish forwarding handles into the heap (runtime/defrag-wasm.ts), set at the start of a call. */
  get publish(): boolean {
    return this.i32[this.controlWord] === 1;
  }
  set publish(on: boolean) {
    this.i32[this.controlWord] = on ? 1 : 0;
  }

  /** (L1) The lanes of the next rewrite-kind phase (LANES_TS, LANES_WASM, LANES_RESTORE), set by the calling thread before it. */
  get rewriteLanes(): number {
    return this.i32[this.controlWord + 1]!;
  }
  set rewriteLanes(lanes: number) {
    this.i32[this.controlWord + 1] = lanes;
  }

  /**
   * (L1) Begin a pass that may hand out up to `more` slabs: grows the buffer once if needed
   * and returns the view that addSource / addTarget / endPass use until endPass.
   */
  beginPass(more: number): Int32Array {
    const b = this.buffer as SharedArrayBuffer & Growable;
    const need = (this.slabsWord + 32 * (this.slabs + more)) * 4;
    if (need > b.byteLength) b.grow(Math.min(Math.max(need, 2 * b.byteLength), (this.slabsWord + 64 * this.numBlocks) * 4));
    this.passFirst = this.slabs;
    this.passMax = this.slabs + more;
    return this.i32;
  }

  /** (L1) Zero the slabs handed out since beginPass (the lanes read 0 as "none"). */
  endPass(): void {
    this.i32v.fill(0, this.slabsWord + 32 * this.passFirst, this.slabsWord + 32 * this.slabs);
  }

  private slab(): number {
    if (this.slabs >= this.passMax) throw new UsageError('defrag: internal error: more slabs than beginPass allowed');
    return this.slabs++;
  }

  /** Block `b` is a source of this call: give it a forwarding slab (between beginPass and endPass). */
  addSource(b: number): void {
    const i32 = this.i32v;
    if (i32[b]! >= 0) throw new UsageError(`defrag: internal error: block ${b} is a source twice in one call`);
    i32[b] = this.slab();
  }

  /** Block `b` receives objects: give it an origin slab if it has none (between beginPass and endPass). */
  addTarget(b: number): void {
    const i32 = this.i32v;
    if (i32[this.numBlocks + b]! < 0) i32[this.numBlocks + b] = this.slab();
  }

  /**
   * The forwarding table of this call, made before anything in the heap changes
   * (runtime/reorder.ts O6, runtime/defrag.ts F5): see ForwardReservation.
   */
  reserveForwardTable(): ForwardReservation {
    return new ForwardReservation(this);
  }
}

/**
 * The forwarding table a call hands out (the scratch is reused by the next call), its arrays
 * made before the heap changes: the record at once, the entries grown by cover() for the
 * slabs a pass may take, before that pass reserves a slot. fill() then copies the call's
 * record and entries out of the scratch with nothing left to allocate but the table object.
 */
export class ForwardReservation {
  private readonly record: Int32Array;
  private entries: Uint32Array;

  constructor(private readonly sc: DefragScratch) {
    this.record = new Int32Array(sc.numBlocks);
    this.entries = new Uint32Array(32 * sc.slabs);
  }

  /** Room for the entries of `slabs` slabs (the slabs handed out so far and those of the pass about to begin). */
  cover(slabs: number): void {
    if (32 * slabs > this.entries.length) this.entries = new Uint32Array(Math.max(32 * slabs, 2 * this.entries.length));
  }

  /** The call's table, copied out of the scratch (every slab handed out must be covered). */
  fill(): ForwardTable {
    const sc = this.sc;
    const i32 = sc.i32;
    const n = 32 * sc.slabs;
    if (n > this.entries.length)
      throw new UsageError(`defrag: internal error: ${sc.slabs} slabs handed out, ${this.entries.length / 32} covered`);
    this.record.set(i32.subarray(0, sc.numBlocks));
    this.entries.set(i32.subarray(sc.slabsWord, sc.slabsWord + n));
    return new ForwardTable(this.record, this.entries.subarray(0, n));
  }
}

// ------------------------------------------------------------------ copy

/**
 * A copier of one object of a type into a heap: slot s of the block at byte `so` of the
 * source (its views, given with each call: the heap's own, or a copy of some of its blocks)
 * to slot d of the block at byte `to` of the heap.
 */
export type Copier = (
  su8: Uint8Array,
  su16: Uint16Array,
  si32: Int32Array,
  sf64: Float64Array,
  so: number,
  s: number,
  to: number,
  d: number,
) => void;

const copiers = new WeakMap<Heap, Map<number, Copier>>();

/**
 * The copier of type `t` into this thread's views of `heap`, made once per heap and type
 * (a copier made per call would start unoptimised every time: reorder copies from a fresh
 * copy of a type's blocks each call, runtime/reorder.ts). One load and store per SOA array
 * (field, or element of an inline array), unrolled with constant offsets (as thread.ts
 * makeZeroer), instead of a loop over a table of columns with a switch on the element
 * size. Not the checked-mode generation word: it belongs to the slot, not the object.
 */
export function copierOf(heap: Heap, t: TypeLayout): Copier {
  let m = copiers.get(heap);
  if (m === undefined) copiers.set(heap, (m = new Map()));
  const known = m.get(t.id);
  if (known !== undefined) return known;
  const array: Record<number, [string, number]> = { 1: ['u8', 0], 2: ['u16', 1], 4: ['i32', 2], 8: ['f64', 3] };
  const lines: string[] = [];
  for (const f of t.fields) {
    for (const off of f.offsets) {
      const [arr, shift] = array[f.elemBytes]!;
      lines.push(
        shift === 0
          ? `  ${arr}[to + ${off} + d] = s${arr}[so + ${off} + s];`
          : `  ${arr}[((to + ${off}) >>> ${shift}) + d] = s${arr}[((so + ${off}) >>> ${shift}) + s];`,
      );
    }
  }
  const code = `'use strict';\nreturn function copy_${t.id}(su8, su16, si32, sf64, so, s, to, d) {\n${lines.join('\n')}\n};`;
  const make = new Function('u8', 'u16', 'i32', 'f64', code) as (...a: unknown[]) => Copier;
  const c = make(heap.u8, heap.u16, heap.i32, heap.f64);
  m.set(t.id, c);
  return c;
}

/**
 * Copy lanes [from, to) of a copy phase of type `t` (L2): each moves the live objects of
 * its source (ascending slots) into the reserved slots of its targets (in target order,
 * ascending slots), and records where each went (forwarding entry and origin).
 */
export function copyLanes(heap: Heap, sc: DefragScratch, t: TypeLayout, from: number, to: number): void {
  const copy = copierOf(heap, t);
  const { u8: hu8, u16: hu16, i32: hi32, f64: hf64 } = heap;
  const i32 = sc.i32;
  const fwd = sc.publish ? forwardingColumn(t) : null; // (defrag-wasm.ts V3) publish into the heap too
  const hu32 = heap.u32;
  const masks = masksWord(heap);
  const fOff = fwd === null ? 0 : fwd.offset;
  const fStride = fwd !== null && fwd.wide ? 8 : 4;
  const nb = sc.numBlocks;
  const slabs = sc.slabsWord;
  const blockBytes = heap.blockWords * 4;
  const base = heap.blocksWord * 4;
  for (let j = from; j < to; j++) {
    const w = 2 * nb + RECORD_WORDS * j;
    const sb = i32[w]!;
    let left = i32[w + 1]!;
    const p0 = i32[w + 2]!;
    const pn = i32[w + 3]!;
    const so = base + sb * blockBytes;
    const srcOrigin = i32[nb + sb]!; // (L2) written in an earlier pass, if any
    let own = 0; // the source's slots whose objects were there before the call
    for (let p = p0; p < p0 + pn; p++) {
      const tb = i32[sc.pairsWord + 2 * p]!;
      let got = i32[sc.pairsWord + 2 * p + 1]!;
      const tOrigin = slabs + 32 * i32[nb + tb]!;
      const tBase = base + tb * blockBytes;
      while (got !== 0) {
        const d = 31 - Math.clz32(got & -got);
        got &= got - 1;
        const s = 31 - Math.clz32(left & -left);
        left &= left - 1;
        copy(hu8, hu16, hi32, hf64, so, s, tBase, d);
        const o = srcOrigin < 0 ? 0 : i32[slabs + 32 * srcOrigin + s]!;
        const first = o !== 0 ? o : (sb << SLOT_BITS) + s;
        i32[slabs + 32 * i32[first >>> SLOT_BITS]! + (first & 31)] = (tb << SLOT_BITS) + d;
        i32[tOrigin + d] = first;
        if (fwd !== null) {
          hu32[(base + (first >>> SLOT_BITS) * blockBytes + fOff + fStride * (first & 31)) >>> 2] = (tb << SLOT_BITS) + d;
          if (o === 0) own |= 1 << s;
        }
      }
    }
    if (own !== 0) heap.i32[masks + sb] = own;
  }
}

// ------------------------------------------------------------------ rewrite

/** Per concrete type id: the byte offsets of its reference columns that may name an object of a moved type (undefined: none). */
export type ReferringColumns = (readonly number[] | undefined)[];

/** Step (4)'s columns: per concrete class, its reference columns whose static target type has one of `moved` among its concrete types. */
export function referringColumns(table: TypeTable, moved: readonly number[]): ReferringColumns {
  const out: ReferringColumns = [];
  for (const id of table.concreteIds) {
    const u = table.types[id]!;
    const offsets: number[] = [];
    for (const f of u.fields) {
      if (f.kind !== 'ref' || f.target === undefined) continue;
      const target = table.byClass(f.target());
      if (target === undefined || !moved.some((m) => target.concrete.includes(m))) continue;
      offsets.push(...f.offsets);
    }
    if (offsets.length > 0) out[id] = offsets;
  }
  return out;
}

const columnCache = new WeakMap<TypeTable, { key: string; columns: ReferringColumns }>();

/** referringColumns, kept for the last `moved` per table (a worker computes them once per call). */
export function columnsFor(table: TypeTable, moved: readonly number[]): ReferringColumns {
  const key = moved.join(',');
  const c = columnCache.get(table);
  if (c !== undefined && c.key === key) return c.columns;
  const columns = referringColumns(table, moved);
  columnCache.set(table, { key, columns });
  return columns;
}

/** (L1) Write the rewrite phase's block list: the blocks of every referring class; returns how many. */
export function planRewrite(heap: Heap, sc: DefragScratch, columns: ReferringColumns): number {
  const i32 = sc.i32;
  let n = 0;
  for (let id = 0; id < columns.length; id++) {
    if (columns[id] === undefined) continue;
    n += heap.allocated[id]!.indices(i32, 2 * sc.numBlocks + n);
  }
  return n;
}

/** (L1) Write the restore phase's list (runtime/defrag-wasm.ts): the marked sources; returns how many. */
export function planRestore(sc: DefragScratch, marked: readonly number[]): number {
  sc.i32.set(marked, 2 * sc.numBlocks);
  return marked.length;
}

/**
 * Rewrite lanes [from, to) (L3): every reference of every live object of the listed blocks
 * that names an object moved in this call gets its final handle (F2); a dangling handle
 * (to an object deleted before the call) and one beyond the heap stay as they are.
 */
export function rewriteLanes(heap: Heap, sc: DefragScratch, columns: ReferringColumns, from: number, to: number): void {
  const s32 = sc.i32;
  const lanes = s32[sc.controlWord + 1]!;
  if (lanes !== LANES_TS) {
    wasmLanes(heap, s32, 2 * sc.numBlocks, lanes === LANES_RESTORE ? null : columns, from, to); // (defrag-wasm.ts V5)
    return;
  }
  const i32 = heap.i32;
  const nb = sc.numBlocks;
  const slabs = sc.slabsWord;
  const blockWords = heap.blockWords;
  const highMask = heap.highMask;
  for (let i = from; i < to; i++) {
    const b = s32[2 * nb + i]!;
    const w = heap.blocksWord + b * blockWords;
    const tid = i32[w + BLOCK_TYPE_WORD]!;
    const offsets = columns[tid]!;
    const liveMask = i32[w + BLOCK_ALLOC_WORD]! & ~highMask[tid]!;
    for (const off of offsets) {
      const col = w + (off >>> 2);
      let m = liveMask;
      while (m !== 0) {
        const s = 31 - Math.clz32(m & -m);
        m &= m - 1;
        const h = i32[col + s]! >>> 0;
        if (h === 0) continue;
        const hb = h >>> SLOT_BITS;
        if (hb >= nb) continue; // a dangling handle beyond the heap stays as it is
        const r = s32[hb]!;
        if (r < 0) continue;
        const nh = s32[slabs + 32 * r + (h & 31)]!;
        if (nh !== 0) i32[col + s] = nh;
      }
    }
  }
}
