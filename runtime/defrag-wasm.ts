/**
 * Defragmentation's rewrite phase as WebAssembly lanes (wasm/src/defrag.rs
 * smmo_defrag_rewrite and smmo_defrag_restore), for runtimes of backend 'wasm' that opt in
 * (RuntimeOptions.wasm.defragLanes 'wasm'): "CompactGpu: Massively Parallel
 * Memory Defragmentation on GPUs" (ISMM 2019), §4 "Pointer Rewriting", reading the
 * forwarding handles where §3 "Defragmentation Algorithm" keeps them: in the vacated source
 * blocks' slots, with a per-block "source" mark. runtime/defrag.ts drives it (its header:
 * the algorithm and F1–F4); the TypeScript lanes (runtime/defrag-lanes.ts, L1–L4) stay the
 * reference and the fallback.
 *
 * Why this way: the module's memory is the heap, and the call's forwarding table lives in
 * the scratch buffer (defrag-lanes.ts), which the module cannot read. The vacated source
 * blocks are free, and free blocks are never targets within a call (defrag takes no block
 * from `free`), so from its copy to the end of the call a source's slots are room that
 * nobody else uses, as in CompactGpu. The do-all block list (layout.ts BLOCK_LIST, one u32
 * per block) is free between do-alls: it holds the *forwarding masks*.
 *
 * Protocol, per call of a runtime that opted in (defrag.ts defragSteps):
 *  start    the masks are zeroed and the scratch's PUBLISH word set (defrag-lanes.ts);
 *  copy     (TypeScript lanes) besides the scratch's forwarding entry, a lane writes each
 *           moved object's new handle into the forwarding column (V1) of the block where the
 *           object was before the call, at its slot there (a later move overwrites it: it is
 *           the final handle at the end, as the entry), and the mask of its source's slots
 *           that held objects of before the call (those with an entry) into the source's mask;
 *  mark     after the last pass, each source with a mask gets type word FWD_MARK | column
 *           offset (| FWD_WIDE for a column of 8-byte elements) instead of FREE_TYPE;
 *  rewrite  the WASM lanes (one per block of a referring class) replace every reference
 *           whose block's mask has its slot by the handle stored there (smmo_defrag_rewrite);
 *  restore  after every rewrite lane, WASM lanes (one per marked source) copy the column
 *           words back from each object's final copy and make the type word FREE_TYPE again
 *           (smmo_defrag_restore), so the heap ends byte for byte as after the TypeScript
 *           lanes.
 *
 * Invariants:
 *  (V1) A class's forwarding column is its first field SOA array whose elements are 4 or 8
 *       bytes and not references (i32, u32, f32, f64: an 8-byte element gets the handle in
 *       its low 4 bytes). The copy lanes publish for the classes that have one; a call whose
 *       moved classes all have one rewrites on the WASM lanes, any other on the TypeScript
 *       lanes (stats.lanes then absent) and still restores what was published. The checked
 *       mode's generation array is no field and never used.
 *  (V2) Restoring is exact. A published word of slot s of source X held a copy of the object
 *       that moved (a lane copies slot s before it writes there; lanes never clear a
 *       source), and the column is no reference, which neither later passes nor the rewrite
 *       change: the object's final copy holds the same 4 bytes, which restore copies back.
 *       Retire (core.rs retire_block) left X's type word FREE_TYPE: mark checks it and
 *       restore writes it back. The masks are in the do-all block list, which no result
 *       compares and every do-all rewrites.
 *  (V3) Copy lane j writes, besides L2's words, only the forwarding words of the objects it
 *       moves (each at the object's slot of before the call: distinct) and the mask of its
 *       own source. While marks are published no block transition happens (F1, F4: the
 *       passes are over) and the rewrite lanes write only reference words of live blocks,
 *       never a source (free: no rewrite lists it); the restore lanes only their own
 *       sources' words, after the rewrite. So every lane reads words nobody writes meanwhile.
 *  (V4) A marked type word has FWD_MARK set and is not FREE_TYPE (all ones), so no type id
 *       reads as marked; FWD_WIDE and the column offset (below 2^30: blocks are far smaller)
 *       are its other bits. A reference is followed only where its block's mask has its slot:
 *       null, a handle beyond the heap, a slot without an entry (a dangling reference, an
 *       object that moved in during the call) stay as they are — the TypeScript lanes'
 *       lookups exactly (an entry 0 is no entry).
 *  (V5) The lanes are chosen per call on the calling thread and published to every thread
 *       with the scratch buffer's CONTROL words (defrag-lanes.ts, L1); each thread copies
 *       its lanes' list and the parameter table into its own argument scratch area
 *       (runtime/wasm.ts W2) for each call of the module.
 *  (V6) If a phase fails (L4: a dying thread), defragSteps' cleanup restores the marked
 *       sources on the calling thread (restoreSources), so no mark outlives the call.
 */
import { UsageError } from './errors.js';
import type { Heap } from './heap.js';
import { BLOCK_TYPE_WORD, FREE_TYPE, SLOT_BITS, type TypeLayout, type TypeTable } from './layout.js';
import { BUILD_HINT } from './wasm.js';

/** Per concrete type id, the byte offsets of the reference columns to rewrite (defrag-lanes.ts ReferringColumns; declared here too: defrag-lanes.ts imports this file). */
type ReferringColumns = readonly (readonly number[] | undefined)[];

/** Which lanes run defragmentation's phases: 'wasm' runs the rewrite as WebAssembly lanes (backend 'wasm'). */
export type DefragLanes = 'ts' | 'wasm';

/**
 * RuntimeOptions.wasm.defragLanes of a runtime of `backend`, checked: 'wasm' needs backend
 * 'wasm'. Chosen once per runtime; each call publishes it to every thread with the
 * scratch's CONTROL words (V5).
 */
export function defragLanesOption(value: unknown, backend: string): DefragLanes {
  if (value === undefined || value === 'ts') return 'ts';
  if (value !== 'wasm') throw new UsageError(`wasm.defragLanes must be 'ts' or 'wasm', got ${JSON.stringify(value)}`);
  if (backend !== 'wasm')
    throw new UsageError(
      `wasm.defragLanes 'wasm' needs backend 'wasm' (the WebAssembly rewrite lanes run there); this runtime's backend is '${backend}'`,
    );
  return 'wasm';
}

/** (V4) The mark bit of a published source's type word, and the bit of an 8-byte column. */
export const FWD_MARK = 0x80000000;
export const FWD_WIDE = 0x40000000;

/** The module's exports. */
const REWRITE = 'smmo_defrag_rewrite';
const RESTORE = 'smmo_defrag_restore';
/** Most blocks per call of an export (V8 tiers a wasm function up between calls, not within one: runtime/kernels.ts). */
const CALL_BLOCKS = 64;

/** (V1) A class's forwarding column: byte offset within a block, and whether its elements are 8 bytes apart. */
export interface ForwardingColumn {
  readonly offset: number;
  readonly wide: boolean;
}

const columnCache = new WeakMap<TypeLayout, ForwardingColumn | null>();

/** (V1) The forwarding column of concrete class `t`, or null when it has none. */
export function forwardingColumn(t: TypeLayout): ForwardingColumn | null {
  const known = columnCache.get(t);
  if (known !== undefined) return known;
  let col: ForwardingColumn | null = null;
  for (const f of t.fields) {
    if (f.kind === 'ref' || (f.elemBytes !== 4 && f.elemBytes !== 8)) continue;
    col = { offset: f.offsets[0]!, wide: f.elemBytes === 8 };
    break;
  }
  columnCache.set(t, col);
  return col;
}

/** Word index of the forwarding masks: the heap's do-all block list (module comment). */
export function masksWord(heap: Heap): number {
  return heap.plan.blockListOffset >>> 2;
}

/** Protocol "start": every mask 0. The block list R now holds masks: a do-all's snapshot must not reuse its lists. */
export function clearMasks(heap: Heap): void {
  const w = masksWord(heap);
  heap.i32.fill(0, w, w + heap.numBlocks);
  heap.blockSetChanged();
}

/**
 * The words of the lanes' parameter table (wasm/src/defrag.rs RewriteParams) at byte `at`:
 * 6 header words, 3 words per type id, the columns (`columns` null: no type has any, the
 * restore lanes' table).
 */
function tableWords(heap: Heap, columns: ReferringColumns | null, at: number): Uint32Array {
  const nTypes = heap.highMask.length;
  let total = 0;
  for (const c of columns ?? []) total += c?.length ?? 0;
  const words = new Uint32Array(6 + 3 * nTypes + total);
  const typesAt = at + 6 * 4;
  const columnsAt = typesAt + 3 * nTypes * 4;
  words.set([heap.numBlocks, FWD_MARK, FWD_WIDE, typesAt, columnsAt, heap.plan.blockListOffset]);
  let k = 0;
  for (let id = 0; id < nTypes; id++) {
    const c = columns?.[id] ?? [];
    words.set([heap.highMask[id]! >>> 0, k, c.length], 6 + 3 * id);
    words.set(c, 6 + 3 * nTypes + k);
    k += c.length;
  }
  return words;
}

/** The module's export `name`, or a UsageError that says how to get a module that has it. */
function exported(heap: Heap, name: string): (...a: number[]) => number {
  const fn = heap.wasm.fn(name);
  if (fn === undefined)
    throw new UsageError(
      `defrag: the wasm module ${heap.wasm.file} has no export ${name} (the defragmentation lanes of backend 'wasm'); ${BUILD_HINT}`,
    );
  return fn;
}

/** Backend 'wasm': check at the start of a call that the module has the lanes (a stale module is refused before anything moves). */
export function checkWasmLanes(heap: Heap): void {
  exported(heap, REWRITE);
  exported(heap, RESTORE);
}

/**
 * (V1, V5) Whether this call's rewrite can run on the WebAssembly lanes: every moved class
 * has a forwarding column, and the parameter table leaves room for a list of blocks in a
 * thread's argument scratch area. The same answer on every thread (same classes and sizes).
 */
export function wasmRewriteFits(heap: Heap, table: TypeTable, moved: readonly number[], columns: ReferringColumns): boolean {
  if (!moved.every((id) => forwardingColumn(table.types[id]!) !== null)) return false;
  return (tableWords(heap, columns, 0).length + CALL_BLOCKS) * 4 <= heap.wasm.scratchBytes;
}

const tables = new WeakMap<Heap, { columns: ReferringColumns | null; words: Uint32Array }[]>();

/**
 * Lanes [from, to) of the rewrite (`restore` false) or restore phase on this thread's instance
 * of the module: the blocks at those positions of `list` (the scratch's PLAN, L1), copied
 * with the parameter table into this thread's argument scratch area (V5) per call.
 */
export function wasmLanes(
  heap: Heap,
  list: Int32Array,
  listWord: number,
  columns: ReferringColumns | null,
  from: number,
  to: number,
): void {
  const fn = exported(heap, columns === null ? RESTORE : REWRITE);
  const at = heap.wasm.scratch;
  let cache = tables.get(heap);
  if (cache === undefined) tables.set(heap, (cache = []));
  let entry = cache.find((e) => e.columns === columns);
  if (entry === undefined) {
    entry = { columns, words: tableWords(heap, columns, at) };
    cache.unshift(entry);
    cache.length = Math.min(cache.length, 4);
  }
  const u32 = heap.u32;
  u32.set(entry.words, at >>> 2); // rewritten per phase share: other kernels of the thread use the area too
  const listAt = at + entry.words.length * 4;
  const blocks = heap.plan.blocksOffset;
  const bytes = heap.plan.blockBytes;
  for (let a = from; a < to; a += CALL_BLOCKS) {
    const k = Math.min(CALL_BLOCKS, to - a);
    u32.set(list.subarray(listWord + a, listWord + a + k), listAt >>> 2);
    fn(listAt, 0, k, blocks, bytes, at);
  }
}

/** A source block of the call and its class (defrag.ts lists them in order). */
export interface VacatedBlock {
  readonly block: number;
  readonly type: TypeLayout;
}

/** Protocol "mark" (V2, V4): the sources with a mask get their marked type word; returns them, for the restore. */
export function markSources(heap: Heap, vacated: readonly VacatedBlock[]): number[] {
  const i32 = heap.i32;
  const u32 = heap.u32;
  const masks = masksWord(heap);
  const marked: number[] = [];
  for (const v of vacated) {
    if (i32[masks + v.block] === 0) continue; // nothing published: a class without a column, or every object had moved in
    const col = forwardingColumn(v.type)!;
    const w = heap.blockWord(v.block);
    if (i32[w + BLOCK_TYPE_WORD] !== FREE_TYPE) throw new UsageError(`defrag: internal error: source block ${v.block} is not retired (V2)`);
    u32[w + BLOCK_TYPE_WORD] = (FWD_MARK | (col.wide ? FWD_WIDE : 0) | col.offset) >>> 0;
    marked.push(v.block);
  }
  return marked;
}

/** (V6) Protocol "restore" on the calling thread, for `marked` sources whose restore lanes did not run. */
export function restoreSources(heap: Heap, marked: readonly number[]): void {
  const u32 = heap.u32;
  const i32 = heap.i32;
  const masks = masksWord(heap);
  const blockBytes = heap.blockWords * 4;
  const blocks = heap.blocksWord * 4;
  for (const x of marked) {
    const w = heap.blockWord(x);
    const tw = u32[w + BLOCK_TYPE_WORD]!;
    if ((tw & FWD_MARK) === 0 || tw === FREE_TYPE >>> 0) continue; // restored already
    const offset = tw & ~(FWD_MARK | FWD_WIDE);
    const stride = (tw & FWD_WIDE) !== 0 ? 8 : 4;
    for (let m = i32[masks + x]!; m !== 0; m &= m - 1) {
      const s = 31 - Math.clz32(m & -m);
      const at = ((w << 2) + offset + stride * s) >>> 2;
      const e = u32[at]!;
      u32[at] = u32[(blocks + (e >>> SLOT_BITS) * blockBytes + offset + stride * (e & 31)) >>> 2]!;
    }
    i32[w + BLOCK_TYPE_WORD] = FREE_TYPE;
  }
}
