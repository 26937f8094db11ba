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
 *       (rankBlocks below), computed from the table once, so a table changed after that
 *       would be read differently by compiled and interpreted methods.
 *  (R5) A table is made from the allocation words of the class's blocks (LIVE_HANDLES,
 *       implemented by ThreadContext and Runtime), not from a do-all's snapshot: a method
 *       may build its table inside a do-all whose snapshot left the ranked class out (a
 *       compiled method whose only JavaScript is rankTable reaches only the classes it
 *       visits: runtime/doall.ts computeReach). By R2 those words do not change while the
 *       table is in use.
 *
 * The block form (rankBlocks): a class of N_C slots per block whose blocks are all full but
 * the last in handle order (as a grid made by one parallelNew on a fresh heap typically is:
 * game-of-life's cells on 1, 2 and 4 threads) has
 * `table[i] = starts[⌊i / N_C⌋] + i mod N_C`, with one
 * start per N_C ranks. Compiled methods read ranks through `starts` when the table has this
 * form (checked over the whole table when the form is made): a 32nd of the table's memory
 * traffic for N_C = 32 (game-of-life's cells at 1714 × 1647: 11 MB of table, 350 KB of starts).
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

// The block form of each table (R4), per slots per block: tables are few and long-lived.
const blockForms = new WeakMap<Uint32Array, { per: number; starts: Int32Array }>();
let lastTable: Uint32Array | null = null;
let lastPer = 0;
let lastStarts: Int32Array = NO_RANK_BLOCKS;

/**
 * The block form of rank table `table` for `per` ranks per block (the class's slots per
 * block): `starts` with `table[i] === starts[⌊i / per⌋] + i % per` for every i, or
 * NO_RANK_BLOCKS when the table does not have that form. Compiled methods call it once per
 * rankTable() result they read (runtime/compiler/emit-js.ts, 'checkHandle').
 */
export function rankBlocks(table: Uint32Array, per: number): Int32Array {
  if (table === lastTable && per === lastPer) return lastStarts;
  let form = blockForms.get(table);
  if (form === undefined || form.per !== per) {
    form = { per, starts: blockForm(table, per) };
    blockForms.set(table, form);
  }
  lastTable = table;
  lastPer = per;
  lastStarts = form.starts;
  return form.starts;
}

function blockForm(table: Uint32Array, per: number): Int32Array {
  const n = table.length;
  if (n === 0 || !(per >= 1 && per <= 32) || table[n - 1]! > 0x7fffffff) return NO_RANK_BLOCKS;
  const starts = new Int32Array(Math.ceil(n / per));
  for (let k = 0, i = 0; k < starts.length; k++) {
    const s = table[i]!;
    starts[k] = s;
    for (let j = 0; j < per && i < n; j++, i++) if (table[i] !== s + j) return NO_RANK_BLOCKS;
  }
  return starts;
}
