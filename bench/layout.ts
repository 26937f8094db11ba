/**
 * What the heap's block layout costs a neighbour lookup, apart from the code that does it:
 * game-of-life's candidate test ("how many of my up to 8 neighbouring cells are alive",
 * counted up to 4, as Agent.aliveNeighbours) over the candidates of a real run, in the order
 * a do-all visits them, with the cells' states read from
 *
 *   - `heap, fused`: the heap's Cell blocks, addressed as a compiled method does
 *     (runtime/rank-table.ts rankForm: the block's byte offset from `bases`, plus the
 *     field's offset, plus the slot);
 *   - `heap, handle`: the same blocks through the handle (`starts`, then the handle's block
 *     and slot), as compiled methods did before the fused form;
 *   - `dense`: one byte per cell in cell order (the SOA baseline's layout), read as
 *     `state[c]`;
 *   - `blocked B`: the same states copied into a layout of 32 states per B-byte block
 *     (16 bytes of header first, as the heap's blocks), read with the fused code and
 *     base table: B = 176 is game-of-life's Cell block, B = 48 a block holding nothing
 *     but the states;
 *   - `dense, sorted`: dense, visiting the candidates in cell order.
 *
 * and the real compiled pass (`Candidate.prepare`) for scale. Every variant must give the
 * same total (checked). The minimum of R passes each, alternating.
 *
 *   node dist/bench/layout.js [--size WxH] [--steps S] [--seed N] [--repeats R] [--machine NAME]
 */
import { cpus } from 'node:os';
import { createRuntime } from '../index.js';
import { rankForm, rankTable } from '../runtime/rank-table.js';
import type { ThreadContext } from '../runtime/thread.js';
import app from '../apps/game-of-life/index.js';
import { Candidate, Cell } from '../apps/game-of-life/model.js';
import { BLOCK_ALLOC_WORD, BLOCK_TYPE_WORD } from '../runtime/layout.js';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1]! : fallback;
}

const [W, H] = arg('size', '1714x1647').split('x').map(Number) as [number, number];
const STEPS = Number(arg('steps', '12'));
const REPEATS = Number(arg('repeats', '5'));
const ALIVE = 2; // CELL_ALIVE and CELL_NEW (3) count as alive

// Three copies of one loop, one per way of reading a state: each stays monomorphic, where a
// shared loop with the read passed in would measure the call as much as the memory.

/** Alive neighbours of each cell in `ids`, counted up to 4, states at arr[base[c >>> 5] + (c & 31)]; the sum over all. */
function countBased(ids: Int32Array, arr: Uint8Array, base: Int32Array): number {
  let total = 0;
  for (let j = 0; j < ids.length; j++) {
    const id = ids[j]!;
    const x = id % W;
    const y = (id - x) / W;
    const x0 = x > 0 ? x - 1 : 0;
    const x1 = x < W - 1 ? x + 1 : x;
    const y0 = y > 0 ? y - 1 : 0;
    const y1 = y < H - 1 ? y + 1 : y;
    let n = 0;
    rows: for (let ny = y0; ny <= y1; ny++) {
      for (let c = ny * W + x0, end = ny * W + x1; c <= end; c++) {
        if (c !== id && arr[base[c >>> 5]! + (c & 31)]! >= ALIVE && ++n > 3) break rows;
      }
    }
    total += n;
  }
  return total;
}

/** As countBased, through the handle: starts[c >>> 5] + (c & 31), then its block and slot. */
function countHandle(
  ids: Int32Array,
  arr: Uint8Array,
  starts: Int32Array,
  blocksOffset: number,
  blockBytes: number,
  offset: number,
): number {
  let total = 0;
  for (let j = 0; j < ids.length; j++) {
    const id = ids[j]!;
    const x = id % W;
    const y = (id - x) / W;
    const x0 = x > 0 ? x - 1 : 0;
    const x1 = x < W - 1 ? x + 1 : x;
    const y0 = y > 0 ? y - 1 : 0;
    const y1 = y < H - 1 ? y + 1 : y;
    let n = 0;
    rows: for (let ny = y0; ny <= y1; ny++) {
      for (let c = ny * W + x0, end = ny * W + x1; c <= end; c++) {
        if (c === id) continue;
        const h = starts[c >>> 5]! + (c & 31);
        if (arr[blocksOffset + (h >>> 5) * blockBytes + offset + (h & 31)]! >= ALIVE && ++n > 3) break rows;
      }
    }
    total += n;
  }
  return total;
}

/** As countBased, one byte per cell: state[c]. */
function countDense(ids: Int32Array, state: Uint8Array): number {
  let total = 0;
  for (let j = 0; j < ids.length; j++) {
    const id = ids[j]!;
    const x = id % W;
    const y = (id - x) / W;
    const x0 = x > 0 ? x - 1 : 0;
    const x1 = x < W - 1 ? x + 1 : x;
    const y0 = y > 0 ? y - 1 : 0;
    const y1 = y < H - 1 ? y + 1 : y;
    let n = 0;
    rows: for (let ny = y0; ny <= y1; ny++) {
      for (let c = ny * W + x0, end = ny * W + x1; c <= end; c++) {
        if (c !== id && state[c]! >= ALIVE && ++n > 3) break rows;
      }
    }
    total += n;
  }
  return total;
}

const rt = await createRuntime({ classes: app.classes, heap: '1GB', threads: 1 });
try {
  const params = { width: W, height: H };
  await app.init(rt, params, Number(arg('seed', '1')));
  for (let s = 0; s < STEPS; s++) await app.step(rt, s);
  const ctx = rt.context as unknown as ThreadContext;
  const heap = ctx.heap;
  const { i32, u8 } = heap;
  const { blocksOffset, blockBytes } = heap.plan;
  const typeOf = (cls: unknown): NonNullable<(typeof ctx.table.types)[number]> => ctx.table.types.find((t) => t.cls === cls)!;
  const cellT = typeOf(Cell);
  const candT = typeOf(Candidate);
  const stateOff = cellT.fields.find((f) => f.name === 'state')!.offsets[0]!;
  const cellIdOff = candT.fields.find((f) => f.name === 'cellId')!.offsets[0]!;
  if (cellT.slots !== 32) throw new Error(`Cell has ${cellT.slots} slots per block; this probe assumes 32`);

  // The candidates' cell ids in visiting order: their blocks ascending, each block's slots ascending.
  const ids: number[] = [];
  for (let b = 0; b < heap.numBlocks; b++) {
    const w = heap.blockWord(b);
    if (i32[w + BLOCK_TYPE_WORD] !== candT.id) continue;
    let bits = i32[w + BLOCK_ALLOC_WORD]! & ~heap.highMask[candT.id]!;
    while (bits !== 0) {
      const slot = 31 - Math.clz32(bits & -bits);
      bits &= bits - 1;
      ids.push(i32[((heap.blockOffset(b) + cellIdOff) >>> 2) + slot]!);
    }
  }
  const order = Int32Array.from(ids);
  const sorted = order.slice().sort();

  const n = W * H;
  const table = rankTable(rt, Cell, n);
  const form = rankForm(table, 32, blocksOffset, blockBytes);
  if (form.n !== n) throw new Error(`the cells' rank table has no block form over all ${n} cells (${form.n}); run on a fresh heap`);
  const heapBase = form.bases.map((b) => b + stateOff);
  const dense = new Uint8Array(n);
  for (let c = 0; c < n; c++) dense[c] = u8[heapBase[c >>> 5]! + (c & 31)]!;
  const blocked = (bytes: number): { arr: Uint8Array; base: Int32Array } => {
    const k = Math.ceil(n / 32);
    const arr = new Uint8Array(k * bytes);
    const base = Int32Array.from({ length: k }, (_, i) => i * bytes + 16);
    for (let c = 0; c < n; c++) arr[base[c >>> 5]! + (c & 31)] = dense[c]!;
    return { arr, base };
  };
  const b48 = blocked(48);
  const b176 = blocked(176);

  const variants: [string, () => number][] = [
    ['heap, fused', () => countBased(order, u8, heapBase)],
    ['heap, handle', () => countHandle(order, u8, form.starts, blocksOffset, blockBytes, stateOff)],
    ['dense', () => countDense(order, dense)],
    ['blocked 176', () => countBased(order, b176.arr, b176.base)],
    ['blocked 48', () => countBased(order, b48.arr, b48.base)],
    ['dense, sorted', () => countDense(sorted, dense)],
  ];
  const best = new Map<string, number>();
  let expected: number | null = null;
  for (let r = 0; r < REPEATS; r++) {
    for (const [name, run] of variants) {
      const t0 = performance.now();
      const total = run();
      const ms = performance.now() - t0;
      if (expected === null) expected = total;
      else if (total !== expected) throw new Error(`${name}: total ${total}, expected ${expected}`);
      best.set(name, Math.min(best.get(name) ?? Infinity, ms));
    }
    const t0 = performance.now();
    rt.doAll(Candidate, 'prepare', W, H);
    best.set(
      'Candidate.prepare (compiled pass)',
      Math.min(best.get('Candidate.prepare (compiled pass)') ?? Infinity, performance.now() - t0),
    );
  }
  const dn = best.get('dense')!;
  console.log(
    `game-of-life ${W}×${H} after ${STEPS} steps: ${order.length} candidates, ${n} cells, ${expected} live neighbours counted; ` +
      `machine: ${arg('machine', `${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}`)}; minimum of ${REPEATS}`,
  );
  for (const [name, ms] of best) console.log(`  ${name.padEnd(36)} ${ms.toFixed(1).padStart(8)} ms  ${(ms / dn).toFixed(2)}× dense`);
} finally {
  await rt.close();
}
