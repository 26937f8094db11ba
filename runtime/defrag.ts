/**
 * Defragmentation of the SOA heap: CompactGpu ("CompactGpu: Massively Parallel Memory
 * Defragmentation on GPUs", ISMM 2019, §3 "Defragmentation Algorithm", §4 "Pointer
 * Rewriting"; the DynaSOAr thesis, §6), on the calling thread.
 *
 * Manual (Runtime.defrag), stop-the-world (no do-all runs, no other thread allocates),
 * in-place (objects move between used blocks of their own class), not order-preserving.
 * A defragmentation factor n ≥ 1: a block of concrete class T with N_T slots and `live`
 * objects is a *candidate* when live·(n+1) ≤ n·N_T (at most n/(n+1) full). One pass over T:
 *  (1) scan: list the candidates in block order (the paper's prefix sum over a candidate
 *      bitmap); with R of them, k = ⌊R/(n+1)⌋ records: record j has source C[j] and
 *      targets C[(i+1)·k + j] for i < n (the original's partition of the candidate list
 *      into n+1 chunks). Each target has ≥ N_T/(n+1) free slots, so n targets hold every
 *      object of one source. With k = 0 and R ≥ 2, a *tail* record: the candidate with
 *      the fewest objects is the source, every other candidate a target, if their free
 *      slots hold its objects (the paper stops here; this step only packs further);
 *  (2) copy: the source's objects (ascending slots) go to the targets' lowest free slots,
 *      in target order; the slots are reserved through the allocator core (core.rs
 *      defrag_take, which moves a filled target ACTIVE → FULL), then every field, inline
 *      array elements included, is copied (not the checked-mode generation word: it
 *      belongs to the slot, not the object);
 *  (3) forwarding: handle before the call → final handle, per source slot, in a table of
 *      the call (a typed array indexed by source record × 32 + slot; CompactGpu stores it
 *      in the source block, but a block here may be too small to hold 32 handles); an
 *      object that moves again in a later pass updates its entry;
 *  (4) rewrite: every reference field (and inline array of references) of every concrete
 *      class whose static target type has a moved class among its concrete types, in
 *      every live object, is looked up in the table and rewritten. Unlike CompactGpu,
 *      once per call, after every pass of every class (see defragment: the same heap,
 *      one scan instead of one per pass);
 *  (5) update: each source's slots are released and the emptied block retired to `free`
 *      (core.rs defrag_vacate: checked heaps bump each slot's generation, Alg. 7
 *      invalidation in the block's generation, retire_block ACTIVE → FREE).
 * Passes repeat until no record can be formed. Afterwards at most n candidates of T are
 * left, and none of them fits into the others; every other block of T is more than
 * n/(n+1) full.
 *
 * Invariants:
 *  (F1) Every block transition goes through the allocator core (one implementation);
 *       validateHeap() (heap.ts H1–H5) holds after defrag, and the core's K1–K5, C1–C4 and
 *       D1–D3 are kept: the caller flushes its own kept blocks first; worker threads hold
 *       no kept blocks between do-alls (they flush at the end of their share, core.rs
 *       executor contract), and a worker's hint (TS_HINT) naming a retired block is only
 *       a hint, re-checked on use (a reservation in a free block fails; in a block
 *       re-initialised for another type it is rolled back, D1).
 *  (F2) Every live object of T keeps its field values and its identity: a reference to it
 *       from any live object names its new slot afterwards; `remap` maps each handle that
 *       was live before the call to the object's handle after it (unchanged for objects
 *       that did not move; 0 stays 0). References to objects deleted before the call
 *       (dangling handles) are left as they are.
 *  (F3) Checked mode: each vacated slot's generation is bumped (allocator.ts G1), so a
 *       view made before defrag of an object that moved fails every checked access with
 *       InvalidHandleError 'stale'. Bare handles carry no generation: an old handle into
 *       a retired block is refused ('free-block') only until the block is reused.
 *       Under SMMO_DEBUG ≥ 1 the core checks each transition (core.rs "Block transitions");
 *       under SMMO_DEBUG = 2 defragment ends with validateHeap().
 *  (F4) Only between do-alls: inside a do-all, or while a parallelDo / parallelNew is in
 *       flight, defrag is a UsageError, and so is an n that is not an integer ≥ 1.
 */
import type { Allocator } from './allocator.js';
import { popc } from './bits.js';
import { DEBUG_LEVEL } from './debug.js';
import { UsageError } from './errors.js';
import type { Heap } from './heap.js';
import { DefragResult, ForwardTable, type DefragClassStats, type DefragStats } from './defrag-result.js';
import { BLOCK_ALLOC_WORD, SLOT_BITS, type TypeLayout, type TypeTable } from './layout.js';

/** What defragment needs of a runtime. */
export interface DefragHost {
  readonly heap: Heap;
  readonly table: TypeTable;
  /** The calling thread's allocator (its state does the block transitions). */
  readonly allocator: Allocator;
}

/** Check n (F4): an integer ≥ 1; returns it. */
export function checkDefragFactor(n: unknown, where = 'defrag'): number {
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1) {
    throw new UsageError(
      `${where}: the defragmentation factor n must be an integer ≥ 1 (blocks at most n/(n+1) full are merged), got ${String(n)}`,
    );
  }
  return n;
}

/** A reference column of a class: byte offset of its SOA array in the class's blocks. */
interface RefColumns {
  type: TypeLayout;
  offsets: number[];
}

const now = (): number => performance.now();

/**
 * Defragment the concrete types `types` with factor `n` (already checked), stop-the-world,
 * on the calling thread. See the module comment. Step (4) runs once, after every pass of
 * every type: references are not read by steps (1)–(3) and (5), and the forwarding table
 * maps each handle of before the call to its object's final handle, so one rewrite gives
 * the same heap as a rewrite after each pass, for one scan instead of one per pass.
 */
export function defragment(host: DefragHost, types: readonly TypeLayout[], n: number): DefragResult {
  const t0 = now();
  const { heap, table, allocator } = host;
  allocator.flushKept(); // (F1) the caller's kept blocks go back to `free` first
  const stats: DefragStats = {
    n,
    passes: 0,
    objectsMoved: 0,
    copies: 0,
    blocksFreed: 0,
    ms: { scan: 0, copy: 0, rewrite: 0, update: 0, total: 0 },
    classes: {},
  };
  const fwd = new ForwardTable(heap.numBlocks);
  const list = new Uint32Array(heap.numBlocks);
  const moved: TypeLayout[] = [];
  for (const t of types) {
    if (t.abstract || t.slots === 0) continue;
    const before = occupancy(heap, t, list);
    const cs: DefragClassStats = {
      passes: 0,
      objectsMoved: 0,
      copies: 0,
      blocksFreed: 0,
      blocksBefore: before.blocks,
      blocksAfter: before.blocks,
      fragmentationBefore: before.fragmentation,
      fragmentationAfter: before.fragmentation,
      candidatesLeft: 0,
    };
    stats.classes[t.name] = cs;
    const movedBefore = fwd.movedObjects;
    for (;;) {
      const ts = now();
      const records = planPass(heap, t, n, list);
      stats.ms.scan += now() - ts;
      if (records === null) break;
      cs.copies += movePass(heap, allocator, t, records, fwd, stats);
      const tu = now();
      for (let j = 0; j < records.sources.length; j++) allocator.defragVacate(records.sources[j]!, t.id, records.masks[j]!);
      stats.ms.update += now() - tu;
      cs.passes++;
      cs.blocksFreed += records.sources.length;
    }
    cs.objectsMoved = fwd.movedObjects - movedBefore;
    if (cs.passes > 0) moved.push(t);
    const after = occupancy(heap, t, list);
    cs.blocksAfter = after.blocks;
    cs.fragmentationAfter = after.fragmentation;
    cs.candidatesLeft = candidates(heap, t, n, list).length;
    stats.passes += cs.passes;
    stats.objectsMoved += cs.objectsMoved;
    stats.copies += cs.copies;
    stats.blocksFreed += cs.blocksFreed;
  }
  if (moved.length > 0) rewrite(heap, referringColumns(table, moved), fwd, list, stats);
  stats.ms.total = now() - t0;
  if (DEBUG_LEVEL >= 2) heap.validate(); // debug tier 2 validates after every pass (doall.ts), and after every defrag
  return new DefragResult(stats, fwd);
}

/** Objects, blocks and fragmentation of concrete type `t` (quiescent heap). */
export function occupancy(heap: Heap, t: TypeLayout, list: Uint32Array): { objects: number; blocks: number; fragmentation: number } {
  const nb = heap.allocated[t.id]!.indices(list);
  let objects = 0;
  for (let i = 0; i < nb; i++) objects += popc(heap.i32[heap.blockWord(list[i]!) + BLOCK_ALLOC_WORD]! & ~t.highMask);
  const slots = nb * t.slots;
  return { objects, blocks: nb, fragmentation: slots === 0 ? 0 : (slots - objects) / slots };
}

/** Candidate blocks of `t` (at most n/(n+1) full), in block order. */
function candidates(heap: Heap, t: TypeLayout, n: number, list: Uint32Array): number[] {
  const nb = heap.allocated[t.id]!.indices(list);
  const out: number[] = [];
  const limit = n * t.slots;
  for (let i = 0; i < nb; i++) {
    const b = list[i]!;
    if (popc(heap.i32[heap.blockWord(b) + BLOCK_ALLOC_WORD]! & ~t.highMask) * (n + 1) <= limit) out.push(b);
  }
  return out;
}

/** One pass's records: sources[j] with live mask masks[j] goes to targets[j] (in order). */
interface Records {
  sources: number[];
  masks: number[];
  targets: number[][];
}

/** Step (1): the records of one pass, or null when none can be formed. */
function planPass(heap: Heap, t: TypeLayout, n: number, list: Uint32Array): Records | null {
  const c = candidates(heap, t, n, list);
  const live = (b: number): number => heap.i32[heap.blockWord(b) + BLOCK_ALLOC_WORD]! & ~t.highMask;
  const r: Records = { sources: [], masks: [], targets: [] };
  const k = Math.floor(c.length / (n + 1));
  if (k >= 1) {
    for (let j = 0; j < k; j++) {
      r.sources.push(c[j]!);
      r.masks.push(live(c[j]!));
      const tg: number[] = [];
      for (let i = 0; i < n; i++) tg.push(c[(i + 1) * k + j]!);
      r.targets.push(tg);
    }
    return r;
  }
  if (c.length < 2) return null;
  // Tail record: the emptiest candidate into the others, if it fits.
  let src = c[0]!;
  for (const b of c) if (popc(live(b)) < popc(live(src))) src = b;
  const others = c.filter((b) => b !== src);
  let room = 0;
  for (const b of others) room += t.slots - popc(live(b));
  if (room < popc(live(src))) return null;
  r.sources.push(src);
  r.masks.push(live(src));
  r.targets.push(others);
  return r;
}

/** A copier of one object of `t`: slot s of the block at byte `so` to slot d of the block at byte `to`. */
type Copier = (so: number, s: number, to: number, d: number) => void;

/**
 * The copier of type `t`: one load and store per SOA array (field, or element of an inline
 * array), unrolled with constant offsets (as thread.ts makeZeroer), instead of a loop over
 * a table of columns with a switch on the element size.
 */
function copierOf(t: TypeLayout, heap: Heap): Copier {
  const array: Record<number, [string, number]> = { 1: ['u8', 0], 2: ['u16', 1], 4: ['i32', 2], 8: ['f64', 3] };
  const lines: string[] = [];
  for (const f of t.fields) {
    for (const off of f.offsets) {
      const [arr, shift] = array[f.elemBytes]!;
      lines.push(
        shift === 0
          ? `  ${arr}[to + ${off} + d] = ${arr}[so + ${off} + s];`
          : `  ${arr}[((to + ${off}) >>> ${shift}) + d] = ${arr}[((so + ${off}) >>> ${shift}) + s];`,
      );
    }
  }
  const src = `'use strict';\nreturn function copy_${t.id}(so, s, to, d) {\n${lines.join('\n')}\n};`;
  return (new Function('u8', 'u16', 'i32', 'f64', src) as (...a: unknown[]) => Copier)(heap.u8, heap.u16, heap.i32, heap.f64);
}

/** Steps (2) and (3): reserve target slots, copy every object, record where it went. Returns the copies made. */
function movePass(heap: Heap, allocator: Allocator, t: TypeLayout, r: Records, fwd: ForwardTable, stats: DefragStats): number {
  const tc = now();
  const copy = copierOf(t, heap);
  const blockBytes = heap.blockWords * 4;
  const base = heap.blocksWord * 4;
  let copies = 0;
  for (let j = 0; j < r.sources.length; j++) {
    const sb = r.sources[j]!;
    fwd.addSource(sb);
    let left = r.masks[j]!;
    const so = base + sb * blockBytes;
    for (const tb of r.targets[j]!) {
      if (left === 0) break;
      const free = ~heap.i32[heap.blockWord(tb) + BLOCK_ALLOC_WORD]! & ~t.highMask;
      const want = Math.min(popc(free), popc(left));
      if (want === 0) continue;
      let got = allocator.defragTake(tb, t.id, want);
      const to = base + tb * blockBytes;
      while (got !== 0) {
        const d = 31 - Math.clz32(got & -got);
        got &= got - 1;
        const s = 31 - Math.clz32(left & -left);
        left &= left - 1;
        copy(so, s, to, d);
        fwd.move((sb << SLOT_BITS) + s, (tb << SLOT_BITS) + d);
        copies++;
      }
    }
    if (left !== 0) throw new UsageError(`defrag: internal error: the targets of block ${sb} (${t.name}) had no room for every object`);
  }
  stats.ms.copy += now() - tc;
  return copies;
}

/** Step (4)'s work list: the reference columns, per concrete class, whose target type may be one of `moved`. */
function referringColumns(table: TypeTable, moved: readonly TypeLayout[]): RefColumns[] {
  const out: RefColumns[] = [];
  for (const id of table.concreteIds) {
    const u = table.types[id]!;
    const offsets: number[] = [];
    for (const f of u.fields) {
      if (f.kind !== 'ref' || f.target === undefined) continue;
      const target = table.byClass(f.target());
      if (target === undefined || !moved.some((t) => target.concrete.includes(t.id))) continue;
      offsets.push(...f.offsets);
    }
    if (offsets.length > 0) out.push({ type: u, offsets });
  }
  return out;
}

/** Step (4): rewrite every reference to a moved object (F2); sources are retired, so only live blocks are scanned. */
function rewrite(heap: Heap, referrers: readonly RefColumns[], fwd: ForwardTable, list: Uint32Array, stats: DefragStats): void {
  const tr = now();
  const blockWords = heap.blockWords;
  const i32 = heap.i32;
  const record = fwd.record;
  const entries = fwd.entries;
  for (const { type: u, offsets } of referrers) {
    const nb = heap.allocated[u.id]!.indices(list);
    for (let i = 0; i < nb; i++) {
      const w = heap.blocksWord + list[i]! * blockWords;
      const liveMask = i32[w + BLOCK_ALLOC_WORD]! & ~u.highMask;
      for (const off of offsets) {
        const col = w + (off >>> 2);
        let m = liveMask;
        while (m !== 0) {
          const s = 31 - Math.clz32(m & -m);
          m &= m - 1;
          const h = i32[col + s]! >>> 0;
          if (h === 0) continue;
          const r = record[h >>> SLOT_BITS] ?? -1; // a dangling handle beyond the heap stays as it is
          if (r < 0) continue;
          const nh = entries[r * 32 + (h & 31)]!;
          if (nh !== 0) i32[col + s] = nh;
        }
      }
    }
  }
  stats.ms.rewrite += now() - tr;
}

/** The concrete types, in table order, that `classes` name for defrag (undefined: every concrete class; abstract: its concrete subclasses). */
export function defragTypes(table: TypeTable, classes: readonly TypeLayout[] | undefined): TypeLayout[] {
  const ids = classes === undefined ? table.concreteIds : table.concreteIds.filter((id) => classes.some((t) => t.concrete.includes(id)));
  return ids.map((id) => table.types[id]!);
}
