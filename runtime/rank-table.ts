/**
 * Rank tables: **object i of class C is the C object with the i-th smallest handle**, as a
 * Uint32Array of handles (index = rank), for methods that address objects by a number
 * (the grid apps' cell ids: apps/grid.ts).
 *
 * Why ranks: DynaSOAr's applications index a global array of pointers (`cells[]`). smmo's
 * methods also run on worker threads, which share only the heap, and do-all arguments
 * are a few numbers, so a table made on the main thread cannot be handed to them. The
 * rank of a handle, though, is something every thread can recompute from the heap alone,
 * and it does not depend on which handles the allocator handed out, so results do not
 * depend on the number of threads.
 *
 * Invariants:
 *  (R1) Each thread context builds the table of a class once, on first use, and keeps it;
 *       resetRankTable() forgets it (after creating the objects).
 *  (R2) A ranked class's objects are created before the table's first use and never
 *       created or deleted afterwards; `expected` (the number the caller knows, e.g. width
 *       × height) is checked when the table is built, so a violation is an error, not a
 *       silently shifted rank.
 *  (R3) The method compiler knows this function by identity: on the GPU a generated kernel
 *       reads the same ranks from the runner's rank table (runtime/webgpu/ranks.ts, built
 *       from the host heap with the same rule) and checks its length against `expected`
 *       (runtime/compiler/emit-wgsl.ts); the runner refuses GPU kernels that create or
 *       delete objects of the class they rank.
 *  (R4) A table is read, never written: compiled methods may read it through its block form
 *       (rankBlocks, rankForm below), computed from the table once, so a table changed after that
 *       would be read differently by compiled and interpreted methods.
 *  (R5) A table is made from the allocation words of the class's blocks (LIVE_HANDLES,
 *       implemented by ThreadContext and Runtime), not from a do-all's snapshot: a method
 *       may build its table inside a do-all whose snapshot left the ranked class out (a
 *       compiled method whose only JavaScript is rankTable reaches only the classes it
 *       visits: runtime/doall.ts computeReach). By R2 those words do not change while the
 *       table is in use.
 *
 * The block form (rankBlocks, rankForm): a class of N_C slots per block whose blocks are all
 * full but the last in handle order (as a grid made by one parallelNew on a fresh heap on one
 * thread is) has `table[i] = starts[⌊i / N_C⌋] + i mod N_C`, with one start per N_C ranks.
 * Every start is slot 0 of its block (a full block of N_C ≤ 32 slots has no other first
 * slot). One block may be partly used anywhere in handle order, its objects in its first
 * slots: on several threads parallelNew's last claim, which holds the n mod 32 objects left,
 * fills a block wherever its thread found one (game-of-life's cells at 1714 × 1647 on 16
 * threads: 8 216 of 88 217 blocks after it in handle order). The form then pads the ranks
 * after that block by what the block lacks: rank i is read at
 * `i' = i < e ? i : i + p` (e: the first rank after the partly used block, p: N_C minus its
 * objects), `table[i] = starts[⌊i' / N_C⌋] + i' mod N_C`; without such a block e is n and
 * p 0. The form covers the ranks below `n` (RankForm.n): it ends at a second partly used
 * block (after it) or at a block whose first object is not in slot 0 (before it), and the
 * ranks from there are read from the table. Compiled methods read the ranks it covers through
 * `starts` (each one checked when the form is made): a 32nd of the table's memory
 * traffic for N_C = 32 (game-of-life's cells at 1714 × 1647: 11 MB of table, 350 KB of
 * starts). rankForm adds `bases`, the byte offset of each start's block in the heap, so that
 * a compiled `ctx.get(C, table[i]).f` addresses field f of rank i as
 * `bases[⌊i' / N_C⌋] + offset(f) + i' mod N_C` (for a byte field) without forming the handle.
 */
import { UsageError } from './errors.js';
import type { SmmoClass, SmmoContext } from './schema.js';

interface Entry {
  cls: SmmoClass;
  handles: Uint32Array;
}

const tables = new WeakMap<object, Entry[]>();
// One-entry cache in front of the WeakMap: methods call rankTable() once per object.
let lastContext: object | null = null;
let lastEntry: Entry | null = null;

/**
 * The handles of every `cls` object in ascending order (index = rank), for the runtime or
 * thread context `ctx` (a method's `this.runtime`). `expected` is the number of objects the
 * caller expects (R2).
 */
export function rankTable(ctx: SmmoContext, cls: SmmoClass, expected: number): Uint32Array {
  if (lastContext === ctx && lastEntry !== null && lastEntry.cls === cls && lastEntry.handles.length === expected) return lastEntry.handles;
  let list = tables.get(ctx);
  if (list === undefined) tables.set(ctx, (list = []));
  let entry = list.find((e) => e.cls === cls);
  if (entry === undefined || entry.handles.length !== expected) {
    entry = { cls, handles: collect(ctx, cls, expected) };
    const at = list.findIndex((e) => e.cls === cls);
    if (at >= 0) list[at] = entry;
    else list.push(entry);
  }
  lastContext = ctx;
  lastEntry = entry;
  return entry.handles;
}

/** Forget the rank tables of `ctx` (call after creating the ranked objects). */
export function resetRankTable(ctx: SmmoContext): void {
  tables.delete(ctx);
  if (lastContext === ctx) {
    lastContext = null;
    lastEntry = null;
  }
}

/**
 * The method by which a context lists the live objects of a class from the allocation words
 * (R5): ascending within each concrete class, inside a do-all or not.
 */
export const LIVE_HANDLES = Symbol('smmo.liveHandles');

interface LiveHandles {
  [LIVE_HANDLES](cls: SmmoClass): Uint32Array;
}

function collect(ctx: SmmoContext, cls: SmmoClass, expected: number): Uint32Array {
  const n = ctx.count(cls);
  if (n !== expected) {
    throw new UsageError(
      `rankTable: expected ${expected} ${cls.name} objects, found ${n}; ` +
        `a ranked class's objects must be created before its first rankTable() and never created or deleted afterwards`,
    );
  }
  let handles: Uint32Array;
  const own = (ctx as Partial<LiveHandles>)[LIVE_HANDLES];
  if (own !== undefined) {
    handles = own.call(ctx, cls);
  } else {
    // A context of the user's own (not one smmo made): its deviceDo.
    handles = new Uint32Array(n);
    let k = 0;
    ctx.deviceDo(cls, (c) => {
      if (k < n) handles[k] = c.handle;
      k++;
    });
    if (k !== n) handles = handles.subarray(0, Math.min(k, n));
  }
  if (handles.length !== n) throw new UsageError(`rankTable: ${cls.name}: count() says ${n} objects but ${handles.length} were found`);
  let sorted = true;
  for (let i = 1; i < n && sorted; i++) if (handles[i]! < handles[i - 1]!) sorted = false;
  if (!sorted) handles.sort();
  return handles;
}

/** No block form: an empty `starts`, so a compiled read takes the table's own element. */
export const NO_RANK_BLOCKS = new Int32Array(0);

/**
 * A table's block form for one slot count and one heap: `starts` and `bases` per block, and
 * `n`, the ranks they cover (0 without a form), `e` and `p`, the padding after a partly used
 * block (e = n, p = 0 without one). For every rank i < n, with `i' = i < e ? i : i + p`:
 * `table[i] === starts[⌊i' / per⌋] + i' % per` and `bases[⌊i' / per⌋]` is the byte offset of
 * that handle's block (`blocksOffset + (starts[k] >>> 5) · blockBytes`).
 */
export interface RankForm {
  readonly starts: Int32Array;
  readonly bases: Int32Array;
  readonly n: number;
  readonly e: number;
  readonly p: number;
}

/** The form of a table that has none: every read takes the table's element. */
export const NO_RANK_FORM: RankForm = Object.freeze({ starts: NO_RANK_BLOCKS, bases: NO_RANK_BLOCKS, n: 0, e: 0, p: 0 });

/** blockForm's result: a RankForm without the block offsets, which depend on the heap. */
type Blocks = Omit<RankForm, 'bases'>;
const NO_BLOCKS: Blocks = { starts: NO_RANK_BLOCKS, n: 0, e: 0, p: 0 };

// The block form of each table (R4), per slots per block: tables are few and long-lived.
interface Forms {
  per: number;
  blocks: Blocks;
  /** With `bases`, for the heap geometry it was made for (a table belongs to one context, so to one heap). */
  form: RankForm | null;
  blocksOffset: number;
  blockBytes: number;
}
const blockForms = new WeakMap<Uint32Array, Forms>();
let lastTable: Uint32Array | null = null;
let lastPer = 0;
let lastForms: Forms | null = null;

function formsOf(table: Uint32Array, per: number): Forms {
  if (table === lastTable && per === lastPer) return lastForms!;
  let f = blockForms.get(table);
  if (f === undefined || f.per !== per) {
    f = { per, blocks: blockForm(table, per), form: null, blocksOffset: -1, blockBytes: -1 };
    blockForms.set(table, f);
  }
  lastTable = table;
  lastPer = per;
  lastForms = f;
  return f;
}

/**
 * The starts of rank table `table`'s block form for `per` ranks per block (the class's slots
 * per block), or NO_RANK_BLOCKS when no rank has that form; the ranks covered and the padding
 * are rankForm's.
 */
export function rankBlocks(table: Uint32Array, per: number): Int32Array {
  return formsOf(table, per).blocks.starts;
}

/**
 * rankBlocks with each start's block byte offset, for a heap whose blocks begin at byte
 * `blocksOffset` and take `blockBytes` each. Compiled methods call it once per rankTable()
 * result they read (runtime/compiler/emit-js.ts, 'checkHandle' and field access through a
 * rank). The caller guarantees that every block offset fits an int32 (the emitter only asks
 * on such heaps); NO_RANK_FORM where the table has no block form.
 */
export function rankForm(table: Uint32Array, per: number, blocksOffset: number, blockBytes: number): RankForm {
  const f = formsOf(table, per);
  if (f.form !== null && f.blocksOffset === blocksOffset && f.blockBytes === blockBytes) return f.form;
  const { starts, n, e, p } = f.blocks;
  let form = NO_RANK_FORM;
  if (starts.length > 0) {
    const bases = new Int32Array(starts.length);
    for (let k = 0; k < starts.length; k++) bases[k] = blocksOffset + (starts[k]! >>> 5) * blockBytes;
    form = Object.freeze({ starts, bases, n, e, p });
  }
  f.form = form;
  f.blocksOffset = blocksOffset;
  f.blockBytes = blockBytes;
  return form;
}

function blockForm(table: Uint32Array, per: number): Blocks {
  const n = table.length;
  if (n === 0 || !(per >= 1 && per <= 32) || table[n - 1]! > 0x7fffffff) return NO_BLOCKS;
  const starts = new Int32Array(Math.ceil(n / per) + 1);
  let k = 0;
  let i = 0;
  let e = n;
  let p = 0;
  while (i < n) {
    const s = table[i]!;
    if ((s & 31) !== 0) break; // a block's objects must begin at its slot 0: the form ends before it
    let j = 1;
    while (j < per && i + j < n && table[i + j] === s + j) j++;
    starts[k++] = s;
    i += j;
    if (j === per || i === n) continue; // a full block, or the last one
    // A partly used block with ranks after it: the ranks after it are padded (once; a second
    // such block ends the form after it).
    if (e !== n) break;
    e = i;
    p = per - j;
  }
  if (k === 0) return NO_BLOCKS;
  if (e > i) e = i; // no padding within the ranks covered
  return { starts: starts.subarray(0, k), n: i, e, p: e === i ? 0 : p };
}
