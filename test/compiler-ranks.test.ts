/**
 * get() of a rank-table element in compiled code (runtime/compiler/emit-js.ts
 * 'checkHandle', emit-wgsl.ts rankTableReads): in a method whose only JavaScript is
 * rankTable(ctx, C, n) and reads of its elements, `ctx.get(C, table[i])` skips the read
 * of the block's type word (the element is a live object's handle by rank-table.ts R2, or
 * undefined past the end). Checked here:
 *  - the same heap as the interpreted method, and the unchecked form in the source;
 *  - an index past the end throws the interpreted error;
 *  - a method that writes into its table, or passes it to a function, keeps the check;
 *  - checked mode keeps every check;
 *  - the table's block form (rank-table.ts rankBlocks, rankForm): it covers exactly the ranks
 *    where every element is starts[⌊i' / N⌋] + i' mod N (i' padded past one partly used
 *    block anywhere in handle order), each start slot 0 of its block, and ends at a second
 *    partly used block or a block that begins elsewhere; compiled reads through it — a field
 *    of the ranked object read at an address from the form's block offsets, and a handle
 *    formed from its starts (kept in a local, read or written through) — give the
 *    interpreted heap for N = 32 and for a class of fewer slots, with a partly used block in
 *    the middle, and ranks outside the form (after a hole, the left-out last block) are read
 *    element by element; an index that is not an integer throws as the interpreted method
 *    does; on a heap whose block offsets do not fit an int32 no field is addressed from the
 *    form;
 *  - a method whose only JavaScript is rankTable (onlyRanks): its do-all snapshots only the
 *    classes it visits (the ranked class's iteration words are not written; its table is
 *    made from allocation words, rank-table.ts R5), it keeps no warp words, and its heap
 *    is the interpreted one.
 */
import test, { type ExecutionContext } from 'ava';
import { array, createRuntime, f64, i32, object, rankTable, resetRankTable, type Runtime } from '../index.js';
import { InvalidHandleError } from '../runtime/errors.js';
import { BLOCK_ITER_WORD } from '../runtime/layout.js';
import { emitJs } from '../runtime/compiler/emit-js.js';
import { emitHostOf, lowerForBackend } from '../runtime/compiler/index.js';
import { NO_RANK_BLOCKS, NO_RANK_FORM, rankBlocks, rankForm, type RankForm } from '../runtime/rank-table.js';
import type { ThreadContext } from '../runtime/thread.js';
import { compiledSource as sourceOf } from './helpers/compiled.js';
import { heapDifference } from './helpers/heap-bytes.js';

const COUNT = 100;

/** A function the compiler leaves as JavaScript (for…in is outside the subset): it could write into a table it is given. */
function keep(t: Uint32Array): Uint32Array {
  for (const k in {}) void k;
  return t;
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

  /** A rank that is not an integer (undefined in the table) for every tile. */
  half(count: number): void {
    const ctx = this.runtime;
    const table = rankTable(ctx, Tile, count);
    this.sum = ctx.get(Tile, table[this.rank + 0.5]!).v;
  }

  /** Writes into its table: its reads keep the block check. */
  spoil(count: number): void {
    const ctx = this.runtime;
    const table = rankTable(ctx, Tile, count);
    table[this.rank] = table[this.rank]!;
    this.sum = ctx.get(Tile, table[this.rank]!).v;
  }

  /** A neighbour's handle formed from the table (kept in a local), then two of its fields. */
  pair(count: number): void {
    const ctx = this.runtime;
    const table = rankTable(ctx, Tile, count);
    const r = this.rank + 1 < count ? this.rank + 1 : 0;
    const o = ctx.get(Tile, table[r]!);
    this.sum = o.v * 2 + o.rank;
  }

  /** Writes a field of the next tile by rank (one thread: the interpreted order, so the same heap); the assignment keeps the handle in a local. */
  push(count: number): void {
    const ctx = this.runtime;
    const table = rankTable(ctx, Tile, count);
    if (this.rank + 1 < count) ctx.get(Tile, table[this.rank + 1]!).sum = this.v * 7 + this.sum;
  }

  /** Asks for its table with the right count for the first `good` tiles, then with one too many. */
  recount(count: number, good: number): void {
    const ctx = this.runtime;
    const table = rankTable(ctx, Tile, this.rank < good ? count : count + 1);
    this.sum = ctx.get(Tile, table[this.rank]!).v + good;
  }

  /** Hands its table to a function: likewise. */
  share(count: number): void {
    const ctx = this.runtime;
    const table = keep(rankTable(ctx, Tile, count));
    this.sum = ctx.get(Tile, table[this.rank]!).v + 1;
  }
}

/** Number the `count` tiles by rank (ranks follow handles, not creation), with values r · k + c. */
function numberTiles(rt: Runtime, count: number, k: number, c: number): void {
  rankTable(rt, Tile, count).forEach((h, r) => {
    const tile = rt.get(Tile, h);
    tile.rank = r;
    tile.v = r * k + c;
  });
}

async function make(compile: boolean, checked = false): Promise<Runtime> {
  const rt = await createRuntime({ classes: [Tile], heap: '4MB', compile, checked, seed: 2 });
  for (let i = 0; i < COUNT; i++) rt.create(Tile);
  numberTiles(rt, COUNT, 3, 1);
  return rt;
}

/** The unchecked element form (emit-js.ts; as a handle or, for a field access, as a test) and the block-type check of every other get(). */
const UNCHECKED = /!== undefined (\? \$t\d+ :|\|\|) \$get\(ctx/;
const TYPE_CHECK = /\[I32\[BW \+ \(\$t\d+ >>> 5\) \* BWORDS \+ 2\] \+ 1\] === 1/;

test('get() of a rank-table element: the interpreted heap, without the block check', async (t) => {
  const a = await make(false);
  const b = await make(true);
  try {
    for (const rt of [a, b]) rt.doAll(Tile, 'gather', COUNT);
    t.is(heapDifference(b, a), null);
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

/**
 * doAll(Tile, method) throws the same InvalidHandleError interpreted and compiled; the
 * compiled source matches `form`, and `before` runs on the compiled runtime first.
 */
async function sameInvalidHandle(
  t: ExecutionContext,
  method: 'past' | 'half',
  form: RegExp,
  before?: (rt: Runtime) => void,
): Promise<void> {
  const errors: string[] = [];
  for (const compile of [false, true]) {
    const rt = await make(compile);
    try {
      if (compile) before?.(rt);
      const e = t.throws(() => rt.doAll(Tile, method, COUNT));
      const cause = (e as Error).cause;
      t.true(cause instanceof InvalidHandleError, String(cause));
      errors.push(String((cause as Error).message));
      if (compile) t.regex(sourceOf(rt, `Tile.${method}`), form);
    } finally {
      await rt.close();
    }
  }
  t.is(errors[1], errors[0]);
}

test('an index past the rank table: the interpreted InvalidHandleError', (t) => sameInvalidHandle(t, 'past', UNCHECKED));

test('rankTable asked once per call of the runner and count (emit-js.ts rankAssign): a changed count asks again, as the interpreted method does', async (t) => {
  const a = await make(false);
  const b = await make(true);
  try {
    // Every tile asks with the right count: one table, the interpreted heap.
    for (const rt of [a, b]) rt.doAll(Tile, 'recount', COUNT, COUNT);
    t.is(heapDifference(b, a), null);
    const src = sourceOf(b, 'Tile.recount');
    t.regex(src, /=== \$r0e \? \$r0 :/, 'the call is memoised on its count');
    // From rank 10 on (in the first block, so in the same copy of the lane code as the ranks before it), the count is one too many: the memo must not answer with the table of the right count.
    const messages: string[] = [];
    for (const rt of [a, b]) {
      const e = t.throws(() => rt.doAll(Tile, 'recount', COUNT, 10));
      messages.push(String(((e as Error).cause as Error)?.message));
    }
    t.regex(messages[0]!, /rankTable: expected 101 Tile objects, found 100/);
    t.is(messages[1], messages[0]);
    t.is(heapDifference(b, a), null, 'the tiles before rank 10 were written, the others not, alike');
  } finally {
    await a.close();
    await b.close();
  }
});

test('a table written to or handed to a function, and checked mode, keep the block check', async (t) => {
  const a = await make(false);
  const b = await make(true);
  const c = await make(true, true);
  try {
    for (const m of ['spoil', 'share'] as const) {
      for (const rt of [a, b]) rt.doAll(Tile, m, COUNT);
      t.is(heapDifference(b, a), null, m);
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

/** A class of fewer than 32 slots per block beside a small one (blocks are sized for the smallest class). */
class Wide extends object({ rank: i32, v: i32, sum: i32, pad: array(f64, 2) }) {
  gather(count: number): void {
    const ctx = this.runtime;
    const table = rankTable(ctx, Wide, count);
    let s = 0;
    for (let d = -3; d <= 3; d++) {
      const r = this.rank + d;
      if (d !== 0 && r >= 0 && r < count) s += ctx.get(Wide, table[r]!).v * (d + 4);
    }
    this.sum = s;
  }
}
class Small extends object({ a: i32, b: i32, c: i32 }) {
  /** Reads the Wide of rank a: the only JavaScript is rankTable. */
  look(count: number): void {
    const w = this.runtime.get(Wide, rankTable(this.runtime, Wide, count)[this.a]!);
    this.b = w.v + this.c;
  }

  /** As look, and creates a Small now and then: its do-all copies iteration words. */
  grow(count: number): void {
    this.look(count);
    if (this.c % 10 === 0) this.runtime.create(Small).a = this.a;
  }
}

/** Reads through the block form: a field addressed from `bases`, a handle formed from `starts`. */
const FIELD_FORM = /l\d+\$b\[\(?\$t\d+ (>>> \d+|\/ \d+)/;
const HANDLE_FORM = /l\d+\$s\[\(?\$t\d+ (>>> \d+|\/ \d+)/;

test('rankBlocks: the block form exactly where every element is starts[i / N] + i mod N', (t) => {
  const dense = Uint32Array.from({ length: 70 }, (_, i) => 64 + 32 * Math.floor(i / 32) * 3 + (i % 32));
  t.deepEqual([...rankBlocks(dense, 32)], [64, 160, 256], 'blocks 2, 5, 8; the last one partly used');
  const twenty = Uint32Array.from({ length: 45 }, (_, i) => 32 * (1 + Math.floor(i / 20)) + (i % 20));
  t.deepEqual([...rankBlocks(twenty, 20)], [32, 64, 96]);
  // The same table for 32 slots per block: every block partly used. The form pads the ranks
  // past the first and ends after the second.
  t.deepEqual([...rankBlocks(twenty, 32)], [32, 64], 'the same table for another slot count');
  const gap = dense.slice();
  gap[40] = gap[40]! + 1; // an object missing in the middle of a block: the form ends there
  t.deepEqual([...rankBlocks(gap, 32)], [64, 160]);
  const late = twenty.slice(1); // a block's objects not from its first slot
  t.is(rankBlocks(late, 20), NO_RANK_BLOCKS);
  t.is(rankBlocks(new Uint32Array(0), 32), NO_RANK_BLOCKS);
  // A last block that does not begin at slot 0 is left out: its ranks are read from the table.
  const tail = Uint32Array.from({ length: 44 }, (_, i) => (i < 40 ? 32 * (1 + Math.floor(i / 20)) + (i % 20) : 96 + 3 + (i - 40)));
  t.deepEqual([...rankBlocks(tail, 20)], [32, 64]);
  t.is(rankBlocks(tail.slice(40), 20), NO_RANK_BLOCKS, 'the only block');
});

test('rankForm: block byte offsets beside the starts, the ranks covered, per heap geometry', (t) => {
  const twenty = Uint32Array.from({ length: 45 }, (_, i) => 32 * (1 + Math.floor(i / 20)) + (i % 20));
  const f = rankForm(twenty, 20, 1000, 176);
  t.deepEqual([...f.starts], [32, 64, 96]);
  t.deepEqual([...f.bases], [1000 + 176, 1000 + 2 * 176, 1000 + 3 * 176]);
  t.is(f.n, 45);
  t.is(rankForm(twenty, 20, 1000, 176), f, 'kept');
  t.deepEqual([...rankForm(twenty, 20, 64, 100).bases], [164, 264, 364], 'made again for another geometry');
  const tail = Uint32Array.from({ length: 44 }, (_, i) => (i < 40 ? 32 * (1 + Math.floor(i / 20)) + (i % 20) : 96 + 3 + (i - 40)));
  t.is(rankForm(tail, 20, 0, 64).n, 40, 'the left-out last block is not covered');
  const other = rankForm(twenty, 32, 0, 64);
  t.deepEqual([other.n, other.e, other.p], [40, 20, 12], 'two partly used blocks of 32: padded past the first, ending after the second');
  t.is(rankForm(new Uint32Array(0), 32, 0, 64), NO_RANK_FORM);
  t.is(rankForm(twenty.slice(1), 20, 0, 64), NO_RANK_FORM, 'the first object not in slot 0');
});

/** Whether every rank below form.n of `table` is where the form says (RankForm: padded past e by p). */
function formHolds(table: Uint32Array, per: number, form: RankForm): boolean {
  for (let i = 0; i < form.n; i++) {
    const j = i < form.e ? i : i + form.p;
    if (table[i] !== form.starts[Math.floor(j / per)]! + (j % per)) return false;
  }
  return true;
}

test('rankForm: one partly used block anywhere in handle order, the ranks after it padded; a second one ends the form', (t) => {
  // Blocks (32 slots, handle = block · 32 + slot) in handle order with how many objects each
  // holds from slot 0; the objects are the table.
  const tableOf = (blocks: [number, number][]): Uint32Array =>
    Uint32Array.from(blocks.flatMap(([b, k]) => Array.from({ length: k }, (_, s) => b * 32 + s)));
  for (const per of [32, 20, 7]) {
    // parallelNew's last claim on several threads: its block anywhere among the full ones.
    const middle = tableOf([
      [2, per],
      [3, per],
      [5, 3],
      [9, per],
      [12, per - 1],
    ]);
    const f = rankForm(middle, per, 0, 64);
    t.deepEqual([f.n, f.e, f.p], [middle.length, 2 * per + 3, per - 3], `per ${per}: every rank covered`);
    t.deepEqual([...f.starts], [64, 96, 160, 288, 384]);
    t.true(formHolds(middle, per, f));
    // Two partly used blocks with ranks after each: the form ends after the second.
    const two = tableOf([
      [2, per],
      [4, 2],
      [6, per],
      [7, 1],
      [8, per],
    ]);
    const g = rankForm(two, per, 0, 64);
    t.deepEqual([g.n, g.e, g.p], [2 * per + 3, per + 2, per - 2], `per ${per}: two partly used blocks`);
    t.true(formHolds(two, per, g));
  }
  // Random tables: blocks filled from slot 0, some partly, some with an object missing inside;
  // the form holds wherever it claims to, and covers every rank when at most one block is
  // partly used before the last.
  let seed = 12345;
  const rnd = (n: number): number => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) % n;
  for (let round = 0; round < 300; round++) {
    const per = [32, 20, 7][round % 3]!;
    let b = 1 + rnd(3);
    let partly = 0;
    const handles: number[] = [];
    for (let k = 0, count = 1 + rnd(12); k < count; k++, b += 1 + rnd(3)) {
      const fill = rnd(4) === 0 ? 1 + rnd(per) : per;
      if (fill < per && k < count - 1) partly++;
      for (let s = 0; s < fill; s++) if (!(round % 7 === 0 && s === 2 && fill > 3)) handles.push(b * 32 + s);
    }
    const table = Uint32Array.from(handles);
    const f = rankForm(table, per, 0, 64);
    if (!formHolds(table, per, f)) return t.fail(`round ${round}: a rank the form covers is not where it says`);
    if (round % 7 !== 0 && partly <= 1 && f.n !== table.length) return t.fail(`round ${round}: ${f.n} of ${table.length} ranks covered`);
  }
  t.pass();
});

test('rank tables read through their block form: the interpreted heap, N = 32 and N < 32, with and without the form', async (t) => {
  const makeWide = async (compile: boolean, holes: boolean): Promise<{ rt: Runtime; slots: number }> => {
    const rt = await createRuntime({ classes: [Wide, Small], heap: '8MB', compile, seed: 3 });
    const made = Array.from({ length: COUNT + (holes ? 9 : 0) }, () => rt.create(Wide));
    // Deleted before the first rankTable (R2 allows it): the table then has holes in blocks.
    if (holes) for (let k = 0; k < 9; k++) rt.destroy(made[5 + 11 * k]!);
    rankTable(rt, Wide, COUNT).forEach((h, r) => {
      const w = rt.get(Wide, h);
      w.rank = r;
      w.v = r * 7 + 2;
    });
    const slots = (rt.context as unknown as ThreadContext).table.types.find((ty) => ty.cls === Wide)!.slots;
    return { rt, slots };
  };
  for (const holes of [false, true]) {
    const a = await makeWide(false, holes);
    const b = await makeWide(true, holes);
    try {
      t.true(b.slots < 32 && (b.slots & (b.slots - 1)) !== 0, `Wide has ${b.slots} slots per block: not a power of two`);
      const form = rankForm(rankTable(b.rt, Wide, COUNT), b.slots, b.rt.heap.plan.blocksOffset, b.rt.heap.plan.blockBytes);
      // Without holes the form covers every rank but those of a last block that may not begin at slot 0.
      t.is(
        form.n > COUNT - b.slots,
        !holes,
        `${holes ? 'holes: a form over the ranks before the first hole only' : 'a form over every full block'} (n ${form.n}, ${b.slots} slots)`,
      );
      for (const { rt } of [a, b]) {
        rt.doAll(Wide, 'gather', COUNT);
        rt.doAll(Wide, 'gather', COUNT);
      }
      t.is(heapDifference(b.rt, a.rt), null, holes ? 'with holes' : 'block form');
      t.regex(sourceOf(b.rt, 'Wide.gather'), FIELD_FORM);
      let sum = 0;
      b.rt.deviceDo(Wide, (o) => void (sum += o.sum));
      t.true(sum > 0);
    } finally {
      await a.rt.close();
      await b.rt.close();
    }
  }
  // N = 32: Tile's table has the block form (one class, created in order).
  const a = await make(false);
  const b = await make(true);
  try {
    t.not(rankBlocks(rankTable(b, Tile, COUNT), 32), NO_RANK_BLOCKS);
    for (const m of ['gather', 'pair', 'push'] as const) {
      for (const rt of [a, b]) rt.doAll(Tile, m, COUNT);
      t.is(heapDifference(b, a), null, m);
    }
    t.regex(sourceOf(b, 'Tile.gather'), FIELD_FORM);
    for (const m of ['pair', 'push']) {
      t.regex(sourceOf(b, `Tile.${m}`), HANDLE_FORM, m);
      t.notRegex(sourceOf(b, `Tile.${m}`), FIELD_FORM, `${m}: fields of a handle in a local, through the handle`);
    }
  } finally {
    await a.close();
    await b.close();
  }
});

test('a rank that is not an integer: the interpreted error with the block form', (t) =>
  sameInvalidHandle(t, 'half', FIELD_FORM, (rt) => t.not(rankBlocks(rankTable(rt, Tile, COUNT), 32), NO_RANK_BLOCKS)));

test('a last block that does not begin at slot 0: its ranks read from the table, the interpreted heap', async (t) => {
  const makeTail = async (compile: boolean): Promise<Runtime> => {
    const rt = await createRuntime({ classes: [Tile], heap: '4MB', compile, seed: 5 });
    for (let i = 0; i < COUNT + 3; i++) rt.create(Tile);
    // The three lowest objects of the last block go before the first rankTable of COUNT tiles.
    const all = rankTable(rt, Tile, COUNT + 3);
    const last = all[COUNT + 2]! >>> 5;
    const low = [...all].filter((h) => h >>> 5 === last).slice(0, 3);
    t.is(low.length, 3, 'the last block holds at least three objects');
    for (const h of low) rt.destroy(rt.get(Tile, h));
    numberTiles(rt, COUNT, 5, 3);
    return rt;
  };
  const a = await makeTail(false);
  const b = await makeTail(true);
  try {
    const table = rankTable(b, Tile, COUNT);
    const covered = rankForm(table, 32, b.heap.plan.blocksOffset, b.heap.plan.blockBytes).n;
    t.true(covered > 0 && covered < COUNT && covered % 32 === 0, `the form covers ${covered} of ${COUNT} ranks`);
    for (const m of ['gather', 'pair', 'push'] as const) {
      for (const rt of [a, b]) rt.doAll(Tile, m, COUNT);
      t.is(heapDifference(b, a), null, m);
    }
    t.regex(sourceOf(b, 'Tile.gather'), FIELD_FORM);
  } finally {
    await a.close();
    await b.close();
  }
});

test('a partly used block in the middle of handle order (parallelNew on several threads): the ranks after it padded, the interpreted heap', async (t) => {
  // Three full blocks of tiles; the ten highest of the middle one go before the first
  // rankTable, as parallelNew's last claim leaves a block of n mod 32 objects wherever its
  // thread found a block.
  const N = 3 * 32 - 10;
  const makeMiddle = async (compile: boolean): Promise<Runtime> => {
    const rt = await createRuntime({ classes: [Tile], heap: '4MB', compile, seed: 6 });
    for (let i = 0; i < 3 * 32; i++) rt.create(Tile);
    const all = rankTable(rt, Tile, 3 * 32);
    t.is(all[0]! & 31, 0, 'the tiles fill three blocks from slot 0');
    t.is(all[95]! - all[64]!, 31);
    for (const h of all.slice(54, 64)) rt.destroy(rt.get(Tile, h));
    resetRankTable(rt);
    numberTiles(rt, N, 7, 5);
    return rt;
  };
  const a = await makeMiddle(false);
  const b = await makeMiddle(true);
  try {
    const f = rankForm(rankTable(b, Tile, N), 32, b.heap.plan.blocksOffset, b.heap.plan.blockBytes);
    t.deepEqual([f.n, f.e, f.p], [N, 54, 10], 'every rank in the form, those from 54 padded by 10');
    for (const m of ['gather', 'pair', 'push'] as const) {
      for (const rt of [a, b]) rt.doAll(Tile, m, N);
      t.is(heapDifference(b, a), null, m);
    }
    t.regex(sourceOf(b, 'Tile.gather'), FIELD_FORM);
    t.regex(sourceOf(b, 'Tile.pair'), HANDLE_FORM);
    let sum = 0;
    b.deviceDo(Tile, (o) => void (sum += o.sum));
    t.true(sum > 0);
  } finally {
    await a.close();
    await b.close();
  }
});

test('a heap whose block offsets do not fit an int32: no field addressed from the form', async (t) => {
  const rt = await make(true);
  try {
    const ctx = rt.context as unknown as ThreadContext;
    const ty = ctx.table.types.find((x) => x.cls === Tile)!;
    const ir = lowerForBackend(ctx.table, ty, 'gather');
    if ('reason' in ir) throw new Error(ir.reason);
    const heap = ctx.heap;
    const host = emitHostOf(ctx);
    t.regex(emitJs(ir, host).source, FIELD_FORM, 'this heap');
    const big = emitJs(ir, { ...host, blocksOffset: 2 ** 31 - heap.numBlocks * heap.plan.blockBytes }).source;
    t.notRegex(big, FIELD_FORM);
    t.regex(big, HANDLE_FORM, 'handles still from the starts');
  } finally {
    await rt.close();
  }
});

test('a method whose only JavaScript is rankTable: its do-all snapshots only its class, no warp words, the interpreted heap', async (t) => {
  const make2 = async (compile: boolean): Promise<Runtime> => {
    const rt = await createRuntime({ classes: [Wide, Small], heap: '8MB', compile, seed: 4 });
    for (let i = 0; i < COUNT; i++) rt.create(Wide, { v: i * 5 + 1 });
    for (let i = 0; i < 40; i++) rt.create(Small, { a: (i * 37) % COUNT, c: i });
    return rt;
  };
  const a = await make2(false);
  const b = await make2(true);
  try {
    const wideWords = (rt: Runtime): number[] => {
      const words = new Set<number>();
      rt.deviceDo(Wide, (o) => void words.add(rt.heap.blockWord(o.handle >>> 5) + BLOCK_ITER_WORD));
      return [...words];
    };
    // An allocating do-all copies the iteration words of the classes its snapshot reaches.
    for (const rt of [a, b]) for (const w of wideWords(rt)) rt.heap.i32[w] = 0;
    for (const rt of [a, b]) rt.doAll(Small, 'grow', COUNT);
    t.true(
      wideWords(a).every((w) => a.heap.i32[w] !== 0),
      'interpreted: every class snapshotted',
    );
    t.true(
      wideWords(b).every((w) => b.heap.i32[w] === 0),
      'compiled: Wide not snapshotted',
    );
    t.is(heapDifference(b, a), null);
    t.is(b.count(Small), 44);
    for (const rt of [a, b]) rt.doAll(Small, 'look', COUNT);
    t.is(heapDifference(b, a), null);
    const c = (b.context as unknown as ThreadContext).compileUse.get('Small.look');
    t.true(c !== undefined && c.compiled && c.ranksOnly && !c.portable, 'Small.look: onlyRanks');
    t.notRegex(sourceOf(b, 'Small.look'), /= left--/, 'no warp words');
    t.regex(sourceOf(b, 'Small.grow'), /= left--/, 'warp words where the method creates objects');
    const table = rankTable(b, Wide, COUNT);
    let wrong = 0;
    b.deviceDo(Small, (o) => void (o.b !== b.get(Wide, table[o.a]!).v + o.c && wrong++));
    t.is(wrong, 0);
  } finally {
    await a.close();
    await b.close();
  }
});
