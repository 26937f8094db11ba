/**
 * Defragmentation's rewrite phase as WebAssembly lanes (wasm/src/defrag.rs
 * smmo_defrag_rewrite), for runtimes of backend 'wasm': "CompactGpu: Massively Parallel
 * Memory Defragmentation on GPUs" (ISMM 2019), §4 "Pointer Rewriting", reading the
 * forwarding handles where §3 "Defragmentation Algorithm" keeps them: in the vacated source
 * blocks' slots, with a per-block "source" mark. runtime/defrag.ts drives it (its header:
 * the algorithm and F1–F4); the TypeScript lanes (runtime/defrag-lanes.ts, L1–L4) stay the
 * reference and the fallback.
 *
 * Why this way: the module's memory is the heap, and the call's forwarding table lives in
 * the scratch buffer (defrag-lanes.ts), which the module cannot read. The vacated source
 * blocks are free, and free blocks are never targets within a call (defrag takes no block
 * from `free`), so between the copy passes and the end of the call their slots are room
 * that nobody else uses, as in CompactGpu. The block list of do-alls (layout.ts BLOCK_LIST)
 * is free between do-alls and holds the phase's list of blocks to rewrite.
 *
 * Protocol, per call (the calling thread; the lanes may run on any thread):
 *  publish  after every copy pass: for each source X of the call whose forwarding slab has
 *           entries (slots s whose object of before the call moved), write the entry (its
 *           final handle) into X's *forwarding column* at slot s, then X's iteration word
 *           := the mask of those slots and X's type word := FWD_MARK | column offset
 *           (| FWD_WIDE for a column of 8-byte elements);
 *  rewrite  the WASM lanes (one per listed block) replace every reference that names a
 *           marked source's slot in its mask by the handle stored there;
 *  restore  each marked X gets back its column words and header words, so the heap ends
 *           byte for byte as after the TypeScript lanes.
 *
 * Invariants:
 *  (V1) A class's forwarding column is its first field SOA array whose elements are 4 or 8
 *       bytes and not references (i32, u32, f32, f64: an 8-byte element gets the handle in
 *       its low 4 bytes). A call publishes only when every moved class has one; otherwise
 *       its rewrite runs on the TypeScript lanes (stats.lanes is then absent). The checked
 *       mode's generation array is no field and never used.
 *  (V2) Restoring is exact. Retire (core.rs retire_block) left a source's iteration word 0
 *       and its type word FREE_TYPE: publish checks both and restore writes them back. A
 *       vacated slot s of X that got an entry held a copy of the moved object (the copy
 *       lanes never clear a source), and the column is no reference, which neither later
 *       passes nor the rewrite change: the object's final copy (the entry) holds the same
 *       bytes, which restore copies back (4 bytes: only those were overwritten).
 *  (V3) While marks are published, no block transition happens (stop-the-world: F1, F4),
 *       the copy passes are over, and the lanes write only the reference words of live
 *       blocks, never a marked block (free: no rewrite lists it). So the lanes read
 *       headers, marks and forwarding words that nobody writes.
 *  (V4) A marked type word has FWD_MARK set and is not FREE_TYPE (all ones), so no type id
 *       and no free block reads as marked; FWD_WIDE and the column offset (below 2^30:
 *       blocks are far smaller) are the other bits. A reference into a block beyond the
 *       heap, a free block, an unmarked block or a slot outside the mask stays as it is:
 *       exactly the TypeScript lanes' lookups (an entry 0 is no entry).
 *  (V5) The lanes are chosen per call on the calling thread and published to every thread
 *       with the scratch buffer's lanes word (defrag-lanes.ts, L1); each thread writes the
 *       lanes' parameter table into its own argument scratch area (runtime/wasm.ts W2).
 */
import { UsageError } from './errors.js';
import type { Heap } from './heap.js';
import { BLOCK_ITER_WORD, BLOCK_TYPE_WORD, FREE_TYPE, SLOT_BITS, type TypeLayout, type TypeTable } from './layout.js';
import { BUILD_HINT } from './wasm.js';

/** Per concrete type id, the byte offsets of the reference columns to rewrite (defrag-lanes.ts ReferringColumns; declared here too: defrag-lanes.ts imports this file). */
type ReferringColumns = readonly (readonly number[] | undefined)[];

/** What publishForwarding reads of the call's scratch (defrag-lanes.ts DefragScratch): RECORD_OF and SLABS. */
interface ForwardingSlabs {
  readonly i32: Int32Array;
  readonly slabsWord: number;
}

/** Which lanes run defragmentation's phases: 'wasm' runs the rewrite as WebAssembly lanes (backend 'wasm'). */
export type DefragLanes = 'ts' | 'wasm';

/** (V4) The mark bit of a published source's type word, and the bit of an 8-byte column. */
export const FWD_MARK = 0x80000000;
export const FWD_WIDE = 0x40000000;

/** The module's export. */
const EXPORT = 'smmo_defrag_rewrite';
/** Blocks per call of the export (V8 tiers a wasm function up between calls, not within one: runtime/kernels.ts). */
const CALL_BLOCKS = 16;

/** (V1) A class's forwarding column: byte offset within a block, and whether its elements are 8 bytes apart. */
export interface ForwardingColumn {
  readonly offset: number;
  readonly wide: boolean;
}

/** (V1) The forwarding column of concrete class `t`, or null when it has none. */
export function forwardingColumn(t: TypeLayout): ForwardingColumn | null {
  for (const f of t.fields) {
    if (f.kind === 'ref' || (f.elemBytes !== 4 && f.elemBytes !== 8)) continue;
    return { offset: f.offsets[0]!, wide: f.elemBytes === 8 };
  }
  return null;
}

/** The words of the lanes' parameter table (wasm/src/defrag.rs RewriteParams) at byte `at`: header, 3 words per type id, the columns. */
function tableWords(heap: Heap, columns: ReferringColumns, at: number): Uint32Array {
  const nTypes = heap.highMask.length;
  let total = 0;
  for (const c of columns) total += c?.length ?? 0;
  const words = new Uint32Array(5 + 3 * nTypes + total);
  const typesAt = at + 5 * 4;
  const columnsAt = typesAt + 3 * nTypes * 4;
  words.set([heap.numBlocks, FWD_MARK, FWD_WIDE, typesAt, columnsAt]);
  let k = 0;
  for (let id = 0; id < nTypes; id++) {
    const c = columns[id] ?? [];
    words.set([heap.highMask[id]! >>> 0, k, c.length], 5 + 3 * id);
    words.set(c, 5 + 3 * nTypes + k);
    k += c.length;
  }
  return words;
}

const tables = new WeakMap<ReferringColumns, { heap: Heap; words: Uint32Array }>();

/**
 * (V1, V5) Whether this call's rewrite can run on the WebAssembly lanes: the module has the
 * export, every moved class has a forwarding column, and the parameter table fits a thread's
 * argument scratch area. The same answer on every thread (same module, classes and sizes).
 */
export function wasmRewriteFits(heap: Heap, table: TypeTable, moved: readonly number[], columns: ReferringColumns): boolean {
  if (heap.wasm.fn(EXPORT) === undefined) {
    throw new UsageError(
      `defrag: the wasm module ${heap.wasm.file} has no export ${EXPORT} (the rewrite lanes of backend 'wasm'); ${BUILD_HINT}`,
    );
  }
  if (!moved.every((id) => forwardingColumn(table.types[id]!) !== null)) return false;
  return tableWords(heap, columns, 0).length * 4 <= heap.wasm.scratchBytes;
}

/**
 * Rewrite lanes [from, to) on this thread's instance of the module: the blocks at those
 * positions of the heap's block list (planRewrite wrote it), the references the marks
 * forward (V3, V4). The same heap as rewriteLanes.
 */
export function wasmRewriteLanes(heap: Heap, columns: ReferringColumns, from: number, to: number): void {
  const fn = heap.wasm.fn(EXPORT);
  if (fn === undefined) throw new UsageError(`defrag: the wasm module ${heap.wasm.file} has no export ${EXPORT}; ${BUILD_HINT}`);
  const at = heap.wasm.scratch;
  let cached = tables.get(columns);
  if (cached === undefined || cached.heap !== heap) {
    cached = { heap, words: tableWords(heap, columns, at) };
    tables.set(columns, cached);
  }
  heap.u32.set(cached.words, at >>> 2); // (V5) rewritten per call: other kernels of the thread use the area too
  const list = heap.plan.blockListOffset;
  const blocks = heap.plan.blocksOffset;
  const bytes = heap.plan.blockBytes;
  for (let a = from; a < to; a += CALL_BLOCKS) fn(list, a, Math.min(a + CALL_BLOCKS, to), blocks, bytes, at);
}

/** A source block of the call and its class (defrag.ts lists them in order). */
export interface VacatedBlock {
  readonly block: number;
  readonly type: TypeLayout;
}

/**
 * Publish the call's forwarding handles into the vacated sources (protocol "publish"; V1,
 * V2, V4); returns the marked blocks, for restoreForwarding. Every source's class must have
 * a forwarding column (wasmRewriteFits said so).
 */
export function publishForwarding(heap: Heap, sc: ForwardingSlabs, vacated: readonly VacatedBlock[]): VacatedBlock[] {
  const s32 = sc.i32;
  const u32 = heap.u32;
  const i32 = heap.i32;
  const marked: VacatedBlock[] = [];
  for (const v of vacated) {
    const col = forwardingColumn(v.type)!;
    const r = s32[v.block]!;
    if (r < 0) throw new UsageError(`defrag: internal error: source block ${v.block} has no forwarding slab`);
    const w = heap.blockWord(v.block);
    if (i32[w + BLOCK_ITER_WORD] !== 0 || i32[w + BLOCK_TYPE_WORD] !== FREE_TYPE)
      throw new UsageError(`defrag: internal error: source block ${v.block} is not retired (V2)`);
    const entries = sc.slabsWord + 32 * r;
    const base = (w << 2) + col.offset;
    const stride = col.wide ? 8 : 4;
    let mask = 0;
    for (let s = 0; s < v.type.slots; s++) {
      const e = s32[entries + s]!;
      if (e === 0) continue;
      u32[(base + stride * s) >>> 2] = e;
      mask |= 1 << s;
    }
    if (mask === 0) continue; // every object it held had moved in (their entries are in their origin's slab)
    i32[w + BLOCK_ITER_WORD] = mask;
    u32[w + BLOCK_TYPE_WORD] = (FWD_MARK | (col.wide ? FWD_WIDE : 0) | col.offset) >>> 0;
    marked.push(v);
  }
  return marked;
}

/** Put the marked blocks back as retire left them, and their column words as the copies left them (protocol "restore"; V2). */
export function restoreForwarding(heap: Heap, marked: readonly VacatedBlock[]): void {
  const u32 = heap.u32;
  const i32 = heap.i32;
  const blockBytes = heap.blockWords * 4;
  const blocks = heap.blocksWord * 4;
  for (const v of marked) {
    const col = forwardingColumn(v.type)!;
    const w = heap.blockWord(v.block);
    const base = (w << 2) + col.offset;
    const stride = col.wide ? 8 : 4;
    for (let m = i32[w + BLOCK_ITER_WORD]!; m !== 0; m &= m - 1) {
      const s = 31 - Math.clz32(m & -m);
      const at = (base + stride * s) >>> 2;
      const e = u32[at]!; // the final handle: a live object of the same class
      u32[at] = u32[(blocks + (e >>> SLOT_BITS) * blockBytes + col.offset + stride * (e & 31)) >>> 2]!;
    }
    i32[w + BLOCK_ITER_WORD] = 0;
    i32[w + BLOCK_TYPE_WORD] = FREE_TYPE;
  }
}
