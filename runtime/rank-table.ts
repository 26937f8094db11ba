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

function collect(ctx: SmmoContext, cls: SmmoClass, expected: number): Uint32Array {
  const n = ctx.count(cls);
  if (n !== expected) {
    throw new UsageError(
      `rankTable: expected ${expected} ${cls.name} objects, found ${n}; ` +
        `a ranked class's objects must be created before its first rankTable() and never created or deleted afterwards`,
    );
  }
  const handles = new Uint32Array(n);
  let k = 0;
  let sorted = true;
  ctx.deviceDo(cls, (c) => {
    const h = c.handle;
    if (k > 0 && h < handles[k - 1]!) sorted = false;
    handles[k++] = h;
  });
  if (k !== n) throw new UsageError(`rankTable: ${cls.name}: count() says ${n} objects but deviceDo visited ${k}`);
  if (!sorted) handles.sort();
  return handles;
}
