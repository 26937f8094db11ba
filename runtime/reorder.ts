/**
 * Reordering: put the objects of a class into the order of one of their fields, packed into
 * the class's first blocks (Runtime.reorder). A do-all visits a class's objects in handle
 * order (its blocks ascending, then their slots), so after a reorder by a reference to a
 * grid's cells it visits them in the order of their cells, and the cells it reads for
 * consecutive objects are next to each other in memory.
 *
 * Why: objects created while a model runs go to whatever slot the allocator has free
 * (DynaSOAr, ECOOP 2019, §4: any active block of the type), not next to their cell; after a
 * few steps a pass over them reads its cells in no order (wa-tor's fish: a pass over 2.6 M
 * fish took 330 ms in heap order and 117 ms in cell order; docs/benchmarks.md). A
 * defragmentation that moves every object of the class (CompactGpu, ISMM 2019, §3: objects
 * are copied into other slots, §4: every reference to them rewritten through a forwarding
 * table), here into sorted slots instead of into the fullest blocks.
 *
 * reorder(host, t, field), for one concrete type t with S slots per block, on a quiescent
 * heap (stop-the-world, between do-alls, on the calling thread):
 *  (1) collect: t's blocks B[0 … m) ascending and their N live objects (handle order), with
 *      each object's key: the field's value (a reference: its handle, null after every
 *      handle; a signed integer: in signed order);
 *  (2) sort: a stable radix sort of the keys (two 16-bit digits), so equal keys keep their
 *      handle order; the object of rank k gets slot k mod S of block B[⌊k/S⌋];
 *  (3) take: every block's new slots that were free (the lowest free ones, core.rs
 *      defrag_take; a block filled moves ACTIVE → FULL);
 *  (4) copy: t's blocks are copied aside once, then every object whose handle changes is
 *      copied from there into its new slot (field columns, not the block header or the
 *      checked-mode generation word), and its forwarding entry written (the defrag scratch's
 *      slabs, runtime/defrag-lanes.ts: old handle → new handle);
 *  (5) rewrite: every reference that names an object of t, in every live object of every
 *      class that may refer to t, gets the new handle (defrag-lanes.ts rewriteLanes);
 *  (6) release: a block's old slots that are not among its new ones are released
 *      (release_many: FULL → ACTIVE), a block left with no object is vacated and retired
 *      (defrag_vacate: ACTIVE → FREE); checked heaps bump the generation of every slot whose
 *      object changed, released or not.
 *
 * Invariants:
 *  (O1) Every block transition goes through the allocator core (defrag.ts F1); the caller's
 *       kept blocks are flushed first. A block gains no slot before (3) and loses none
 *       before (6), and (3) runs before (6), so no block is empty in between.
 *  (O2) Every live object of t keeps its field values and its identity (defrag.ts F2): a
 *       reference to it names its new slot afterwards, and the result's remap maps each
 *       handle of before the call to its object's handle after it.
 *  (O3) Afterwards t's objects fill the lowest slots of B[0 … ⌈N/S⌉) in key order (ties in
 *       their old handle order) and B[⌈N/S⌉ …) are free: the heap is the same whatever
 *       order the objects had before, for the same objects and keys (and the same blocks).
 *  (O4) Checked mode: views made before of an object that moved are stale (defrag.ts F3).
 *  (O5) The call allocates, outside the heap, for every type t a copy of t's blocks and at
 *       most 4.5N + m + 64 K words (N objects in m blocks: keys, old positions, the sort's
 *       two passes and high halves, each block's forwarding offset), the result's forwarding
 *       table, and the defrag scratch if the host has none; nothing inside it. Nothing
 *       moves before every class and field is checked.
 *  (O6) Everything the call allocates is allocated before anything in the heap changes:
 *       (1), (2), the copy of the blocks aside and the forwarding slabs of every type are
 *       planned first, the result's forwarding table made, then (3)–(6) run for every type,
 *       and the table is filled. A call that runs out of memory throws with the heap as it
 *       was (and every handle still valid).
 */
import type { Allocator } from './allocator.js';
import { popc } from './bits.js';
import { DEBUG_LEVEL } from './debug.js';
import { ReorderResult, type ReorderStats } from './defrag-result.js';
import { DefragScratch, LANES_TS, planRewrite, referringColumns, rewriteLanes, copierOf } from './defrag-lanes.js';
import { UsageError } from './errors.js';
import type { Heap } from './heap.js';
import { BLOCK_ALLOC_WORD, SLOT_BITS, type FieldLayout, type TypeLayout, type TypeTable } from './layout.js';

/** What reorder needs of a runtime. */
export interface ReorderHost {
  readonly heap: Heap;
  readonly table: TypeTable;
  /** The calling thread's allocator (its state does the block transitions). */
  readonly allocator: Allocator;
  /** A scratch buffer for the heap's blocks to reuse (runtime/defrag-lanes.ts); made for the call if absent. */
  readonly scratch?: DefragScratch;
}

const KEY_KINDS = new Set(['ref', 'i8', 'u8', 'i16', 'u16', 'i32', 'u32', 'bool']);

/**
 * The field of `t` named `name` that reorder can order by: a reference or an integer
 * scalar declared on `t` or a superclass; UsageError naming the fields that can otherwise.
 */
export function keyField(t: TypeLayout, name: unknown, where = 'reorder'): FieldLayout {
  const usable = t.fields.filter((f) => f.length === 0 && KEY_KINDS.has(f.kind)).map((f) => f.name);
  const f = typeof name === 'string' ? t.fields.find((x) => x.name === name) : undefined;
  if (f === undefined || f.length !== 0 || !KEY_KINDS.has(f.kind)) {
    const why =
      f === undefined
        ? `${t.name} has no field ${JSON.stringify(name)}`
        : f.length !== 0
          ? `${t.name}.${f.name} is an inline array`
          : `${t.name}.${f.name} is a ${f.kind}, not a reference or an integer`;
    throw new UsageError(
      `${where}: ${why}; order by a reference or integer field of ${t.name}: ${usable.length > 0 ? usable.join(', ') : '(it has none)'}`,
    );
  }
  return f;
}

/**
 * Reorder the concrete types `types` (each on its own blocks) by their field `field`
 * (checked with keyField for each), on the calling thread. See the module comment.
 */
export function reorder(host: ReorderHost, types: readonly TypeLayout[], field: string): ReorderResult {
  const t0 = performance.now();
  const { heap, table, allocator } = host;
  const keys = types.map((t) => keyField(t, field));
  allocator.flushKept(); // (O1)
  const sc = host.scratch ?? new DefragScratch(heap.numBlocks);
  sc.reset();
  const stats: ReorderStats = { field, objectsMoved: 0, blocksFreed: 0, ms: { sort: 0, copy: 0, rewrite: 0, total: 0 }, classes: {} };
  // (O6) every type planned, and the result's table made, before anything moves
  const plans: Plan[] = [];
  for (let i = 0; i < types.length; i++) {
    const t = types[i]!;
    if (t.abstract || t.slots === 0) continue;
    plans.push(planType(heap, sc, t, keys[i]!, stats));
  }
  const planned = plans.filter((p) => p.n > 0).map((p) => p.t.id);
  const columns = planned.length > 0 ? referringColumns(table, planned) : [];
  const fwd = sc.reserveForwardTable();
  let moved = false;
  for (const p of plans) {
    const cs = applyPlan(heap, allocator, sc, p, stats);
    stats.classes[p.t.name] = cs;
    moved ||= cs.objectsMoved > 0;
    stats.objectsMoved += cs.objectsMoved;
    stats.blocksFreed += cs.blocksBefore - cs.blocksAfter;
  }
  if (moved) {
    const tr = performance.now();
    sc.rewriteLanes = LANES_TS; // (5)
    const lanes = planRewrite(heap, sc, columns);
    if (lanes > 0) rewriteLanes(heap, sc, columns, 0, lanes);
    stats.ms.rewrite += performance.now() - tr;
  }
  stats.ms.total = performance.now() - t0;
  if (DEBUG_LEVEL >= 2) heap.validate();
  return new ReorderResult(stats, fwd.fill());
}

/** One type's reorder, planned (O6): its objects' old positions in key order and what the copy needs. */
interface Plan {
  readonly t: TypeLayout;
  /** Live objects. */
  readonly n: number;
  /** t's blocks ascending, and each one's live slots before the call. */
  readonly blocks: Uint32Array;
  readonly oldMask: Int32Array;
  /** Old positions ((index in blocks) << SLOT_BITS | slot) in key order. */
  readonly sorted: Uint32Array;
  /** t's blocks copied aside, as the copier reads them. */
  readonly aside: { u8: Uint8Array; u16: Uint16Array; i32: Int32Array; f64: Float64Array };
  /** Each old block's forwarding entries: a word offset into the scratch. */
  readonly slab: Int32Array;
  /** Per new block: slots kept whose object changed (O4), written by applyPlan. */
  readonly changed: Int32Array;
}

const NO_OBJECTS = { u8: new Uint8Array(0), u16: new Uint16Array(0), i32: new Int32Array(0), f64: new Float64Array(0) };

/** (1), (2) and what (4) needs, for type t: reads the heap, changes nothing in it. */
function planType(heap: Heap, sc: DefragScratch, t: TypeLayout, f: FieldLayout, stats: ReorderStats): Plan {
  const ts = performance.now();
  const i32 = heap.i32;
  const hm = t.highMask;
  // (1) collect
  const allocated = heap.allocated[t.id]!;
  const blocks = new Uint32Array(allocated.count());
  const m = allocated.indices(blocks);
  const oldMask = new Int32Array(m); // each block's live slots before the call
  let n = 0;
  for (let j = 0; j < m; j++) n += popc((oldMask[j] = i32[heap.blockWord(blocks[j]!) + BLOCK_ALLOC_WORD]! & ~hm));
  // With no objects nothing moves (and, the kept blocks flushed, t has no block left either).
  if (n === 0)
    return { t, n, blocks, oldMask, sorted: new Uint32Array(0), aside: NO_OBJECTS, slab: new Int32Array(0), changed: new Int32Array(0) };
  const from = new Uint32Array(n); // old position: (index in blocks) << SLOT_BITS | slot, in handle order
  const key = collectKeys(heap, f, blocks, oldMask, from);
  // (2) sort: the old positions in key order (stable)
  const sorted = sortedBy(key, from);
  stats.ms.sort += performance.now() - ts;
  const tc = performance.now();
  // (4), first half: t's blocks copied aside once, and their forwarding slabs
  const base = heap.blocksWord * 4;
  const blockBytes = heap.blockWords * 4;
  const buffer = new ArrayBuffer(m * blockBytes);
  const aside = { u8: new Uint8Array(buffer), u16: new Uint16Array(buffer), i32: new Int32Array(buffer), f64: new Float64Array(buffer) };
  for (let j = 0; j < m;) {
    let e = j + 1; // a run of consecutive blocks: one copy
    while (e < m && blocks[e] === blocks[e - 1]! + 1) e++;
    const at = base + blocks[j]! * blockBytes;
    aside.u8.set(heap.u8.subarray(at, at + (e - j) * blockBytes), j * blockBytes);
    j = e;
  }
  const s32 = sc.beginPass(m);
  for (let j = 0; j < m; j++) sc.addSource(blocks[j]!);
  sc.endPass();
  const slab = new Int32Array(m);
  for (let j = 0; j < m; j++) slab[j] = sc.slabsWord + 32 * s32[blocks[j]!]!;
  const changed = new Int32Array(Math.ceil(n / t.slots));
  stats.ms.copy += performance.now() - tc;
  return { t, n, blocks, oldMask, sorted, aside, slab, changed };
}

/** (3), (4) and (6) for a planned type: the object of rank k gets slot k mod S of block B[⌊k/S⌋]. */
function applyPlan(heap: Heap, allocator: Allocator, sc: DefragScratch, p: Plan, stats: ReorderStats): ReorderStats['classes'][string] {
  const { t, n, blocks, oldMask, sorted, aside, slab, changed } = p;
  const m = blocks.length;
  const S = t.slots;
  const cs = { objects: n, objectsMoved: 0, blocksBefore: m, blocksAfter: n === 0 ? m : Math.ceil(n / S) };
  if (n === 0) return cs;
  const tc = performance.now();
  const base = heap.blocksWord * 4;
  const blockBytes = heap.blockWords * 4;
  // (3) take: the new masks; slots gained are the lowest free ones
  const newMask = (j: number): number => {
    const c = Math.min(S, Math.max(0, n - j * S));
    return c === 32 ? -1 : (1 << c) - 1;
  };
  for (let j = 0; j < cs.blocksAfter; j++) {
    const add = newMask(j) & ~oldMask[j]!;
    if (add === 0) continue;
    const got = allocator.defragTake(blocks[j]!, t.id, popc(add));
    if (got !== add)
      throw new UsageError(`reorder: internal error: block ${blocks[j]} (${t.name}) gave slots ${got >>> 0}, not ${add >>> 0}`);
  }
  // (4) copy, in rank order: each new block's slots written in turn from wherever their
  // objects were (aside); forwarding entries for the objects that move
  const copy = copierOf(heap, t);
  const s32 = sc.i32;
  const { u8: su8, u16: su16, i32: si32, f64: sf64 } = aside;
  let moved = 0;
  for (let nj = 0, r = 0; nj < cs.blocksAfter; nj++) {
    const nb = blocks[nj]!;
    const dst = base + nb * blockBytes;
    const kept = oldMask[nj]!;
    const end = Math.min(n, r + S);
    let c = 0;
    for (let d = 0; r < end; r++, d++) {
      const q = sorted[r]!;
      const j = q >>> SLOT_BITS;
      const s = q & 31;
      if (j === nj && s === d) continue;
      copy(su8, su16, si32, sf64, j * blockBytes, s, dst, d);
      s32[slab[j]! + s] = (nb << SLOT_BITS) + d;
      if ((kept & (1 << d)) !== 0) c |= 1 << d;
      moved++;
    }
    changed[nj] = c;
  }
  cs.objectsMoved = moved;
  stats.ms.copy += performance.now() - tc;
  // (6) release; checked heaps: generations of the slots whose object changed
  const i32 = heap.i32;
  const gen = t.genOffset;
  for (let j = 0; j < m; j++) {
    const b = blocks[j]!;
    const nm = j < cs.blocksAfter ? newMask(j) : 0;
    if (nm === 0) {
      allocator.defragVacate(b, t.id, oldMask[j]!);
      continue;
    }
    if (gen !== 0) {
      const g = (base + b * blockBytes + gen) >>> 2;
      for (let c = changed[j]!; c !== 0; c &= c - 1) i32[g + 31 - Math.clz32(c & -c)]! += 1; // as the core's release (G1)
    }
    const gone = oldMask[j]! & ~nm;
    if (gone !== 0) allocator.releaseMany(b, gone);
  }
  return cs;
}

/**
 * (1) The key of every live object of `blocks` (live slots `masks`), in handle order, and
 * its old position into `from`: a reference's key is (handle − 1) mod 2³² (null after every
 * handle), a signed integer's its value + 2³¹, an unsigned one's its value.
 */
function collectKeys(heap: Heap, f: FieldLayout, blocks: Uint32Array, masks: Int32Array, from: Uint32Array): Uint32Array {
  const signed = f.kind === 'i8' || f.kind === 'i16' || f.kind === 'i32';
  const shift = f.elemBytes === 4 ? 2 : f.elemBytes === 2 ? 1 : 0;
  const column = shift === 2 ? heap.i32 : shift === 1 ? (signed ? heap.i16 : heap.u16) : signed ? heap.i8 : heap.u8;
  const add = f.kind === 'ref' ? -1 : 0;
  const flip = signed ? 0x80000000 : 0;
  return keysOf(column, shift, heap.blocksWord * 4 + f.offsets[0]!, heap.blockWords * 4, add, flip, blocks, masks, from);
}

/** collectKeys' loop over the field's column (`shift`: log2 of its element size); no test of the field's kind per object. */
function keysOf(
  column: Int32Array | Int16Array | Uint16Array | Int8Array | Uint8Array,
  shift: number,
  at0: number,
  blockBytes: number,
  add: number,
  flip: number,
  blocks: Uint32Array,
  masks: Int32Array,
  from: Uint32Array,
): Uint32Array {
  const key = new Uint32Array(from.length);
  let k = 0;
  for (let j = 0; j < masks.length; j++) {
    const at = (at0 + blocks[j]! * blockBytes) >>> shift;
    for (let live = masks[j]!; live !== 0; live &= live - 1) {
      const s = 31 - Math.clz32(live & -live);
      key[k] = ((column[at + s]! + add) ^ flip) >>> 0;
      from[k++] = (j << SLOT_BITS) | s;
    }
  }
  return key;
}

/**
 * `value` ordered by `key`, equal keys in their order in `value`: `value` itself when the
 * keys ascend already (a reorder again before anything changed), else radixSorted.
 */
function sortedBy(key: Uint32Array, value: Uint32Array): Uint32Array {
  for (let i = 1; i < key.length; i++) if (key[i]! < key[i - 1]!) return radixSorted(key, value);
  return value;
}

/**
 * `value` ordered by `key` (stable): two counting passes (16-bit digits, low then high; one
 * when every key is below 2¹⁶). Both read keys in the order they scan: the first scans them
 * in order, the second the high halves the first moved along with the values.
 */
function radixSorted(key: Uint32Array, value: Uint32Array): Uint32Array {
  const n = key.length;
  let highs = 0;
  for (let i = 0; i < n; i++) highs |= key[i]! >>> 16;
  const mid = new Uint32Array(n); // values after the first pass
  const high = new Uint16Array(n); // their keys' high halves, in the same order
  const count = new Uint32Array(65537);
  for (let i = 0; i < n; i++) count[(key[i]! & 0xffff) + 1]!++;
  for (let d = 0; d < 65536; d++) count[d + 1]! += count[d]!;
  for (let i = 0; i < n; i++) {
    const k = key[i]!;
    const at = count[k & 0xffff]!++;
    mid[at] = value[i]!;
    high[at] = k >>> 16;
  }
  if (highs === 0) return mid;
  const out = new Uint32Array(n);
  count.fill(0);
  for (let i = 0; i < n; i++) count[high[i]! + 1]!++;
  for (let d = 0; d < 65536; d++) count[d + 1]! += count[d]!;
  for (let i = 0; i < n; i++) out[count[high[i]!]!++] = mid[i]!;
  return out;
}
