/**
 * get() of a rank-table element in compiled code (runtime/compiler/emit-js.ts
 * 'checkHandle', emit-wgsl.ts rankTableReads): in a method whose only JavaScript is
 * rankTable(ctx, C, n) and reads of its elements, `ctx.get(C, table[i])` skips the read
 * of the block's type word (the element is a live object's handle by rank-table.ts R2, or
 * undefined past the end). Checked here:
 *  - the same heap as the interpreted method, and the unchecked form in the source;
 *  - an index past the end throws the interpreted error;
 *  - a method that writes into its table, or passes it to a function, keeps the check;
 *  - checked mode keeps every check.
 */
import test from 'ava';
import { createRuntime, i32, object, rankTable, type Runtime } from '../index.js';
import { InvalidHandleError } from '../runtime/errors.js';
import type { ThreadContext } from '../runtime/thread.js';
import { persistentHeapBytes } from './helpers/heap-bytes.js';

const COUNT = 100;

/** A function the compiler leaves as JavaScript (try/catch is outside the subset): it could write into a table it is given. */
function keep(t: Uint32Array): Uint32Array {
  try {
    return t;
  } catch {
    return t;
  }
}

class Tile extends object({ rank: i32, v: i32, sum: i32 }) {
  /** The neighbours' values, by rank. */
  gather(count: number): void {
    const ctx = this.runtime;
    const table = rankTable(ctx, Tile, count);
    let s = 0;
    for (let d = -1; d <= 1; d += 2) {
      const r = this.rank + d;
      if (r >= 0 && r < count) s += ctx.get(Tile, table[r]!).v;
    }
    this.sum = s;
  }

  /** Past the table's end for the last tile. */
  past(count: number): void {
    const ctx = this.runtime;
    this.sum = ctx.get(Tile, rankTable(ctx, Tile, count)[this.rank + 1]!).v;
  }

  /** Writes into its table: its reads keep the block check. */
  spoil(count: number): void {
    const ctx = this.runtime;
    const table = rankTable(ctx, Tile, count);
    table[this.rank] = table[this.rank]!;
    this.sum = ctx.get(Tile, table[this.rank]!).v;
  }

  /** Hands its table to a function: likewise. */
  share(count: number): void {
    const ctx = this.runtime;
    const table = keep(rankTable(ctx, Tile, count));
    this.sum = ctx.get(Tile, table[this.rank]!).v + 1;
  }
}

async function make(compile: boolean, checked = false): Promise<Runtime> {
  const rt = await createRuntime({ classes: [Tile], heap: '4MB', compile, checked, seed: 2 });
  for (let i = 0; i < COUNT; i++) rt.create(Tile);
  // Ranks follow handles, not creation: number the tiles by rank.
  rankTable(rt, Tile, COUNT).forEach((h, r) => {
    const tile = rt.get(Tile, h);
    tile.rank = r;
    tile.v = r * 3 + 1;
  });
  return rt;
}

const sourceOf = (rt: Runtime, name: string): string => {
  const c = (rt.context as unknown as ThreadContext).compileUse.get(name);
  return c !== undefined && c.compiled ? c.source : '';
};

/** The unchecked element form (emit-js.ts) and the block-type check of every other get(). */
const UNCHECKED = /!== undefined \? \$t\d+ : \$get\(ctx/;
const TYPE_CHECK = /\[I32\[BW \+ \(\$t\d+ >>> 5\) \* BWORDS \+ 2\] \+ 1\] === 1/;

test('get() of a rank-table element: the interpreted heap, without the block check', async (t) => {
  const a = await make(false);
  const b = await make(true);
  try {
    for (const rt of [a, b]) rt.doAll(Tile, 'gather', COUNT);
    t.deepEqual(persistentHeapBytes(b), persistentHeapBytes(a));
    let sum = 0;
    b.deviceDo(Tile, (o) => void (sum += o.sum));
    t.is(sum, 2 * ((COUNT * (3 * (COUNT - 1))) / 2 + COUNT) - (1 + 3 * (COUNT - 1) + 1), 'each value counted by its two neighbours');
    const src = sourceOf(b, 'Tile.gather');
    t.regex(src, UNCHECKED);
    t.notRegex(src, TYPE_CHECK);
  } finally {
    await a.close();
    await b.close();
  }
});

test('an index past the rank table: the interpreted InvalidHandleError', async (t) => {
  const errors: string[] = [];
  for (const compile of [false, true]) {
    const rt = await make(compile);
    try {
      const e = t.throws(() => rt.doAll(Tile, 'past', COUNT));
      const cause = (e as Error).cause;
      t.true(cause instanceof InvalidHandleError, String(cause));
      errors.push(String((cause as Error).message));
      if (compile) t.regex(sourceOf(rt, 'Tile.past'), UNCHECKED);
    } finally {
      await rt.close();
    }
  }
  t.is(errors[1], errors[0]);
});

test('a table written to or handed to a function, and checked mode, keep the block check', async (t) => {
  const a = await make(false);
  const b = await make(true);
  const c = await make(true, true);
  try {
    for (const m of ['spoil', 'share'] as const) {
      for (const rt of [a, b]) rt.doAll(Tile, m, COUNT);
      t.deepEqual(persistentHeapBytes(b), persistentHeapBytes(a), m);
      const src = sourceOf(b, `Tile.${m}`);
      t.true(src !== '', `Tile.${m} compiled`);
      t.notRegex(src, UNCHECKED, m);
      t.regex(src, TYPE_CHECK, m);
    }
    c.doAll(Tile, 'gather', COUNT);
    t.notRegex(sourceOf(c, 'Tile.gather'), UNCHECKED, 'checked mode');
  } finally {
    await a.close();
    await b.close();
    await c.close();
  }
});
