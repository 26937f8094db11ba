/**
 * Cell ids of the grid apps (wa-tor, game-of-life): **cell i is the Cell object with
 * the i-th smallest handle**. Cell i sits at x = i mod width, y = ⌊i / width⌋.
 *
 * Why this rule: the originals index a global array `cells[]` of Cell pointers. smmo's
 * methods also run on worker threads, which share only the heap, and do-all arguments
 * are a few numbers (workers/protocol.ts), so a table made on the main thread cannot
 * be handed to them. The rank of a handle, though, is something every thread can
 * recompute from the heap alone. Each thread builds the table once per runtime, on
 * first use, and keeps it (cells are created by the app's init and never deleted, so
 * the table never changes; cellTable() checks the count to catch a violation).
 * The rule does not depend on which handles the allocator handed out, so results do not
 * depend on the number of threads.
 */
import { UsageError, type SmmoClass, type SmmoContext } from '../runtime/index.js';

interface Entry {
  cls: SmmoClass;
  handles: Uint32Array;
}

const tables = new WeakMap<object, Entry[]>();
// One-entry cache in front of the WeakMap: methods call cellTable() once per object.
let lastContext: object | null = null;
let lastEntry: Entry | null = null;

/**
 * The handles of every `cls` object in ascending order (index = cell id), for the
 * runtime or thread context `ctx`. `expected` is the number of cells (width · height).
 */
export function cellTable(ctx: SmmoContext, cls: SmmoClass, expected: number): Uint32Array {
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

/** Forget the cached table of `ctx` (call after creating the cells). */
export function resetCellTable(ctx: SmmoContext): void {
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
      `grid: expected ${expected} ${cls.name} objects (width × height), found ${n}; ` +
        `cells must be created by the app's init only and never deleted`,
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
  if (k !== n) throw new UsageError(`grid: ${cls.name}: count() says ${n} objects but deviceDo visited ${k}`);
  if (!sorted) handles.sort();
  return handles;
}
