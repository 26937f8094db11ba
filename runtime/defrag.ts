/**
 * Defragmentation of the SOA heap: CompactGpu ("CompactGpu: Massively Parallel Memory
 * Defragmentation on GPUs", ISMM 2019, §3 "Defragmentation Algorithm", §4 "Pointer
 * Rewriting"; the DynaSOAr thesis, §6). Runtime.defrag runs it on the calling thread;
 * Runtime.parallelDefrag runs its copy and rewrite phases on the worker threads too
 * (runtime/defrag-parallel.ts). Both drive the same steps (defragSteps below) and the
 * same lanes (runtime/defrag-lanes.ts, invariants L1–L4), so they give the same heap,
 * remap and statistics (but the times and `threads`).
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
 *      in target order; the slots of every record of the pass are reserved first, on the
 *      calling thread, through the allocator core (core.rs defrag_take, which moves a
 *      filled target ACTIVE → FULL), then one lane per record (defrag-lanes.ts, on any
 *      thread) copies every field, inline array elements included (not the checked-mode
 *      generation word: it belongs to the slot, not the object);
 *  (3) forwarding: handle before the call → final handle, per source slot, in a slab of
 *      the call's scratch buffer (defrag-lanes.ts; CompactGpu stores it in the source
 *      block, but a block here may be too small to hold 32 handles); an object that moves
 *      again in a later pass updates its entry (the lane finds its first handle in the
 *      origin slab of the block it is in). With the WASM rewrite (backend 'wasm' and
 *      wasm.defragLanes 'wasm') the lanes also write it where CompactGpu does, into the
 *      vacated source slots, and put those words back afterwards (runtime/defrag-wasm.ts,
 *      V1–V6);
 *  (4) rewrite: every reference field (and inline array of references) of every concrete
 *      class whose static target type has a moved class among its concrete types, in
 *      every live object, is looked up in the table and rewritten (one lane per block of
 *      such a class, on any thread). Unlike CompactGpu,
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
 *  (F5) A pass allocates what it needs (step (1)'s records, the scratch's growth for its
 *       slabs, room in the result's forwarding table) before it reserves a slot, and the
 *       call allocates nothing large after its last pass. When that fails (out of memory),
 *       the passes done so far stay done: their references are rewritten (4) as at the end
 *       of a call, and the call throws DefragStoppedError, whose `result` has their
 *       statistics and remap; the heap is consistent and no handle is lost. A failure
 *       anywhere else is a bug of smmo, thrown as it is.
 */
import type { Allocator } from './allocator.js';
import { popc } from './bits.js';
import { DEBUG_LEVEL } from './debug.js';
import { UsageError } from './errors.js';
import type { Heap } from './heap.js';
import { DefragResult, DefragStoppedError, type DefragClassStats, type DefragStats } from './defrag-result.js';
import {
  copyLanes,
  DefragScratch,
  planRewrite,
  RECORD_WORDS,
  LANES_RESTORE,
  LANES_TS,
  LANES_WASM,
  planRestore,
  referringColumns,
  rewriteLanes,
  type ReferringColumns,
} from './defrag-lanes.js';
import {
  checkWasmLanes,
  clearMasks,
  markSources,
  restoreSources,
  wasmRewriteFits,
  type DefragLanes,
  type VacatedBlock,
} from './defrag-wasm.js';
import { BLOCK_ALLOC_WORD, type TypeLayout, type TypeTable } from './layout.js';

/** What defragment needs of a runtime. */
export interface DefragHost {
  readonly heap: Heap;
  readonly table: TypeTable;
  /** The calling thread's allocator (its state does the block transitions). */
  readonly allocator: Allocator;
  /** 'wasm': the rewrite phase on WebAssembly lanes where it can (runtime/defrag-wasm.ts, V1–V5); default 'ts'. */
  readonly lanes?: DefragLanes;
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

const now = (): number => performance.now();

/**
 * A phase of lanes for the driver to run (defrag-lanes.ts): the copy lanes [0, lanes) of a
 * pass of `type`, or the rewrite lanes [0, lanes) with `columns` (`restore`: the restore
 * lanes of the WASM rewrite, runtime/defrag-wasm.ts, which rewriteLanes runs as the scratch's
 * lanes word says). The steps resume when every lane has run (on one thread, or on several:
 * L2, L3).
 */
export type LaneRequest =
  | { kind: 'copy'; type: TypeLayout; lanes: number }
  | { kind: 'rewrite'; moved: readonly number[]; columns: ReferringColumns; lanes: number; restore?: true };

/** Run a phase's lanes [from, to) on this thread. */
export function runLanes(heap: Heap, sc: DefragScratch, req: LaneRequest, from: number, to: number): void {
  if (req.kind === 'copy') copyLanes(heap, sc, req.type, from, to);
  else rewriteLanes(heap, sc, req.columns, from, to);
}

/**
 * Defragment the concrete types `types` with factor `n` (already checked), stop-the-world,
 * on the calling thread. See the module comment.
 */
export function defragment(host: DefragHost, types: readonly TypeLayout[], n: number): DefragResult {
  const sc = new DefragScratch(host.heap.numBlocks);
  const steps = defragSteps(host, types, n, sc, 1);
  try {
    for (let r = steps.next(); ; r = steps.next()) {
      if (r.done === true) return r.value;
      runLanes(host.heap, sc, r.value, 0, r.value.lanes);
    }
  } finally {
    steps.return(undefined as never); // after a throw: the steps' cleanup (defrag-wasm.ts restore) runs; a no-op when done
  }
}

/**
 * The steps of one defrag call, the lanes left to the caller: each yield asks for a phase
 * of lanes (LaneRequest) to run on the scratch `sc` before the steps go on; the return
 * value is the call's result. `threads`: what the stats report (the threads the driver may
 * run lanes on). Step (4) runs once, after every pass of every type: references are not
 * read by steps (1)–(3) and (5), and the forwarding table maps each handle of before the
 * call to its object's final handle, so one rewrite gives the same heap as a rewrite after
 * each pass, for one scan instead of one per pass. Phase times include the lanes' time.
 */
export function* defragSteps(
  host: DefragHost,
  types: readonly TypeLayout[],
  n: number,
  sc: DefragScratch,
  threads: number,
): Generator<LaneRequest, DefragResult, void> {
  const t0 = now();
  const { heap, table, allocator } = host;
  // The WASM rewrite chosen (defrag-wasm.ts "start"): the copy lanes publish forwarding handles for it.
  const publish = host.lanes === 'wasm';
  if (publish) checkWasmLanes(heap);
  allocator.flushKept(); // (F1) the caller's kept blocks go back to `free` first
  const stats: DefragStats = {
    n,
    threads,
    passes: 0,
    objectsMoved: 0,
    copies: 0,
    blocksFreed: 0,
    ms: { scan: 0, copy: 0, rewrite: 0, update: 0, total: 0 },
    classes: {},
  };
  sc.reset();
  const fwd = sc.reserveForwardTable(); // (F5) the result's table, covered pass by pass before the pass moves anything
  if (publish) {
    clearMasks(heap);
    sc.publish = true;
  }
  const list = new Uint32Array(heap.numBlocks);
  const moved: number[] = [];
  const vacated: VacatedBlock[] = []; // the WASM rewrite: the call's sources, in order (defrag-wasm.ts "mark")
  let stopped: { error: unknown } | null = null; // (F5) a pass that could not be planned
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
    for (;;) {
      const ts = now();
      let records: Records | null;
      let slabs: Int32Array | null = null;
      try {
        // (F5) everything the pass allocates, before it reserves a slot
        records = planPass(heap, t, n, list);
        if (records !== null) {
          const most = records.sources.length + records.targets.reduce((k, tg) => k + tg.length, 0);
          fwd.cover(sc.slabs + most);
          slabs = sc.beginPass(most);
        }
      } catch (e) {
        stopped = { error: e };
        break;
      }
      stats.ms.scan += now() - ts;
      if (records === null || slabs === null) break;
      const tc = now();
      const counts = reservePass(heap, allocator, sc, t, records, slabs);
      cs.copies += counts.copies;
      cs.objectsMoved += counts.firstMoves;
      yield { kind: 'copy', type: t, lanes: records.sources.length };
      stats.ms.copy += now() - tc;
      const tu = now();
      for (let j = 0; j < records.sources.length; j++) allocator.defragVacate(records.sources[j]!, t.id, records.masks[j]!);
      if (publish) for (const block of records.sources) vacated.push({ block, type: t });
      stats.ms.update += now() - tu;
      cs.passes++;
      cs.blocksFreed += records.sources.length;
    }
    if (cs.passes > 0) moved.push(t.id);
    stats.passes += cs.passes;
    stats.objectsMoved += cs.objectsMoved;
    stats.copies += cs.copies;
    stats.blocksFreed += cs.blocksFreed;
    const after = occupancy(heap, t, list); // (F5) allocates nothing but its result
    cs.blocksAfter = after.blocks;
    cs.fragmentationAfter = after.fragmentation;
    cs.candidatesLeft = candidateCount(heap, t, n, list);
    if (stopped !== null) break; // (F5) the classes after this one are left as they are
  }
  if (moved.length > 0) {
    const tr = now();
    const columns = referringColumns(table, moved);
    // (defrag-wasm.ts "mark", V1, V5) the WASM rewrite: the module's lanes when every moved class published
    const marked = publish ? markSources(heap, vacated) : [];
    let restored = false;
    try {
      const wasm = publish && wasmRewriteFits(heap, table, moved, columns);
      sc.rewriteLanes = wasm ? LANES_WASM : LANES_TS;
      const lanes = planRewrite(heap, sc, columns);
      if (lanes > 0) yield { kind: 'rewrite', moved, columns, lanes };
      if (marked.length > 0) {
        sc.rewriteLanes = LANES_RESTORE; // (defrag-wasm.ts "restore") after every rewrite lane
        yield { kind: 'rewrite', moved, columns: [], lanes: planRestore(sc, marked), restore: true };
      }
      restored = true;
      if (wasm) stats.lanes = { copy: 'ts', rewrite: 'wasm' };
    } finally {
      if (!restored) restoreSources(heap, marked); // (V6) a phase failed
      sc.rewriteLanes = LANES_TS;
    }
    stats.ms.rewrite += now() - tr;
  }
  const remapTable = fwd.fill();
  stats.ms.total = now() - t0;
  if (DEBUG_LEVEL >= 2) heap.validate(); // debug tier 2 validates after every pass (doall.ts), and after every defrag
  const result = new DefragResult(stats, remapTable);
  if (stopped !== null) throw new DefragStoppedError(result, stopped.error); // (F5)
  return result;
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
  const out: number[] = [];
  forCandidates(heap, t, n, list, (b) => out.push(b));
  return out;
}

/** How many blocks of `t` are candidates (allocates nothing: F5). */
function candidateCount(heap: Heap, t: TypeLayout, n: number, list: Uint32Array): number {
  let k = 0;
  forCandidates(heap, t, n, list, () => k++);
  return k;
}

function forCandidates(heap: Heap, t: TypeLayout, n: number, list: Uint32Array, each: (b: number) => void): void {
  const nb = heap.allocated[t.id]!.indices(list);
  const limit = n * t.slots;
  for (let i = 0; i < nb; i++) {
    const b = list[i]!;
    if (popc(heap.i32[heap.blockWord(b) + BLOCK_ALLOC_WORD]! & ~t.highMask) * (n + 1) <= limit) each(b);
  }
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

/**
 * Step (2)'s reservations, on the calling thread (F1), after sc.beginPass for the record's
 * sources and targets (`i32`, its view: F5): for each record in turn, as many of
 * each target's lowest free slots as its source still has objects (core.rs defrag_take),
 * written into the scratch's PLAN for the copy lanes (L1). Returns the copies the lanes
 * will make and how many of them move an object for the first time in this call.
 */
function reservePass(
  heap: Heap,
  allocator: Allocator,
  sc: DefragScratch,
  t: TypeLayout,
  r: Records,
  i32: Int32Array,
): { copies: number; firstMoves: number } {
  const nb = sc.numBlocks;
  const hi = heap.i32;
  let pairs = 0;
  let copies = 0;
  let again = 0;
  for (let j = 0; j < r.sources.length; j++) {
    const sb = r.sources[j]!;
    const mask = r.masks[j]!;
    sc.addSource(sb);
    const origin = i32[nb + sb]!; // (L2) the objects that moved into sb in an earlier pass move again
    if (origin >= 0) for (let m = mask; m !== 0; m &= m - 1) if (i32[sc.slabsWord + 32 * origin + (31 - Math.clz32(m & -m))] !== 0) again++;
    let left = popc(mask);
    copies += left;
    const first = pairs;
    for (const tb of r.targets[j]!) {
      if (left === 0) break;
      const free = ~hi[heap.blockWord(tb) + BLOCK_ALLOC_WORD]! & ~t.highMask;
      const want = Math.min(popc(free), left);
      if (want === 0) continue;
      const got = allocator.defragTake(tb, t.id, want);
      sc.addTarget(tb);
      i32[sc.pairsWord + 2 * pairs] = tb;
      i32[sc.pairsWord + 2 * pairs + 1] = got;
      pairs++;
      left -= popc(got);
    }
    if (left !== 0) throw new UsageError(`defrag: internal error: the targets of block ${sb} (${t.name}) had no room for every object`);
    const w = 2 * nb + RECORD_WORDS * j; // (L1) copy record j: [source, live mask, first pair, pairs]
    i32[w] = sb;
    i32[w + 1] = mask;
    i32[w + 2] = first;
    i32[w + 3] = pairs - first;
  }
  sc.endPass();
  return { copies, firstMoves: copies - again };
}

/** The concrete types, in table order, that `classes` name for defrag (undefined: every concrete class; abstract: its concrete subclasses). */
export function defragTypes(table: TypeTable, classes: readonly TypeLayout[] | undefined): TypeLayout[] {
  const ids = classes === undefined ? table.concreteIds : table.concreteIds.filter((id) => classes.some((t) => t.concrete.includes(id)));
  return ids.map((id) => table.types[id]!);
}
