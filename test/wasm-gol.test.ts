/**
 * game-of-life's WASM kernels (wasm/src/gol.rs, declared in apps/game-of-life/kernels.ts)
 * against the TypeScript methods they implement: all five passes, three of which create
 * and delete agents through the allocator core (runtime/kernels.ts, "Allocating kernels").
 *
 *  - pass by pass, the heap (every byte past the reserved region: blocks, allocator
 *    bitmaps and states, less the block list and iteration words: helpers/heap-bytes.ts)
 *    is byte-identical after each of the five do-alls of a step on backend ts and on both
 *    builds of the module (simd128 and scalar): one thread, so the allocator hands out the
 *    same handles; sizes whose agents span several blocks, with births and deaths on every
 *    step, and a grid whose Cell blocks are not all full (the ranks table's breaks);
 *  - Cell blocks with holes (cells created one by one, some deleted): the ranks table
 *    with breaks inside it, and with more breaks than the scratch area holds (the ranges
 *    then run the TypeScript methods): heaps byte-identical to ts all the same;
 *  - checked mode: the same heap as ts (the slot generations a deletion bumps);
 *  - whole runs: the same digest on ts and wasm, on 1, 2 and 4 threads; validateHeap();
 *  - a heap too small for the agents: the allocating kernel fails with the same
 *    HeapExhaustedError as the method (wrapped alike in the do-all's MethodError), and the
 *    heap stays valid; on worker threads too (the failing object named, the heap valid).
 */
import test from 'ava';
import { adoptGrid, CLASSES, digest, init, randomStart, startFromCells, step, type GolStart } from '../apps/game-of-life/gol.js';
import { Alive, Candidate, Cell, CELL_NEW, newAlive } from '../apps/game-of-life/model.js';
import { cellTable, resetCellTable } from '../apps/grid.js';
import { createRuntime, HeapExhaustedError, MethodError, type Runtime, type SmmoClass } from '../index.js';
import type { WasmVariant } from '../runtime/wasm.js';
import { persistentHeapBytes } from './helpers/heap-bytes.js';

const MODULE = new URL('../apps/game-of-life/index.js', import.meta.url);
const THREADED = { inlineBlocks: 0, startTimeoutMs: 120_000 };

async function runtimeFor(start: GolStart, backend: 'ts' | 'wasm', threads = 1, variant?: WasmVariant, heap?: number): Promise<Runtime> {
  const rt = await createRuntime({
    classes: CLASSES,
    heap: heap ?? (2 << 20) + start.width * start.height * 24,
    backend,
    threads,
    modules: [MODULE],
    ...(variant ? { wasm: { variant } } : {}),
    ...(threads > 1 ? THREADED : {}),
  });
  await init(rt, start);
  return rt;
}

const PASSES: readonly [SmmoClass, string][] = [
  [Candidate, 'prepare'],
  [Alive, 'prepare'],
  [Candidate, 'update'],
  [Alive, 'update'],
  [Alive, 'createCandidates'],
];

function firstDiff(a: Uint8Array, b: Uint8Array): number {
  if (a.length !== b.length) return Math.min(a.length, b.length);
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return i;
  return -1;
}

for (const [label, start, steps] of [
  ['48 × 40, density 0.3', randomStart(48, 40, 0.3, 7), 12],
  ['7 × 5, density 0.5', randomStart(7, 5, 0.5, 3), 8], // Cell blocks not all full: the ranks table's breaks
  [
    'a glider and a blinker, 20 × 13',
    startFromCells(20, 13, [
      [1, 0],
      [2, 1],
      [0, 2],
      [1, 2],
      [2, 2],
      [10, 8],
      [11, 8],
      [12, 8],
    ]),
    16,
  ],
] as const) {
  test(`each pass leaves the heap byte-identical on ts, wasm simd and wasm scalar (${label}, ${steps} steps)`, async (t) => {
    const ts = await runtimeFor(start, 'ts');
    const simd = await runtimeFor(start, 'wasm', 1, 'simd');
    const scalar = await runtimeFor(start, 'wasm', 1, 'scalar');
    const changed = new Set<number>();
    try {
      t.is(firstDiff(persistentHeapBytes(simd), persistentHeapBytes(ts)), -1, 'identical heaps after init');
      for (let k = 0; k < steps; k++) {
        for (const [p, [cls, method]] of PASSES.entries()) {
          const before = persistentHeapBytes(ts);
          for (const rt of [ts, simd, scalar]) await rt.parallelDo(cls as typeof Alive, method as 'prepare', start.width, start.height);
          const want = persistentHeapBytes(ts);
          if (firstDiff(before, want) !== -1) changed.add(p);
          const where = `step ${k}, ${cls.name}.${method}`;
          t.is(firstDiff(persistentHeapBytes(simd), want), -1, `${where}: simd`);
          t.is(firstDiff(persistentHeapBytes(scalar), want), -1, `${where}: scalar`);
        }
      }
      t.deepEqual([...changed].sort(), [0, 1, 2, 3, 4], 'every pass changed the heap at least once');
      t.deepEqual(simd.stats().backend.methods, {
        'Alive.createCandidates': 'wasm',
        'Candidate.prepare': 'wasm',
        'Alive.prepare': 'wasm',
        'Candidate.update': 'wasm',
        'Alive.update': 'wasm',
      });
      t.is(digest(simd), digest(ts));
      for (const rt of [simd, scalar]) rt.validateHeap();
    } finally {
      for (const rt of [ts, simd, scalar]) await rt.close();
    }
  });
}

test('the same digest on ts and wasm, 1, 2 and 4 threads (96 × 80, 30 steps)', async (t) => {
  const start = randomStart(96, 80, 0.3, 42);
  const digests: number[] = [];
  for (const [backend, threads] of [
    ['ts', 1],
    ['wasm', 1],
    ['wasm', 2],
    ['wasm', 4],
  ] as const) {
    const rt = await runtimeFor(start, backend, threads);
    try {
      for (let k = 0; k < 30; k++) await step(rt);
      rt.validateHeap();
      digests.push(digest(rt));
      if (backend === 'wasm') t.is(rt.stats().backend.methods['Candidate.update'], 'wasm');
    } finally {
      await rt.close();
    }
  }
  t.true(digests[0]! > 0);
  t.deepEqual(digests, [digests[0], digests[0], digests[0], digests[0]]);
});

test('a full heap inside an allocating kernel: HeapExhaustedError as on ts, and a valid heap', async (t) => {
  // Room for the cells and the start's agents, not for the first step's (measured: Alive.update fails).
  const start = randomStart(96, 96, 0.5, 5);
  const errors: string[] = [];
  const heaps: Uint8Array[] = [];
  for (const backend of ['ts', 'wasm'] as const) {
    const rt = await createRuntime({ classes: CLASSES, heap: 1179648, backend, modules: [MODULE] });
    try {
      await init(rt, start);
      let e: unknown = null;
      try {
        for (let k = 0; k < 50; k++) await step(rt);
      } catch (err) {
        e = err;
      }
      t.true(e instanceof MethodError, `${backend}: expected a MethodError, got ${String(e)}`);
      const cause = (e as MethodError).cause;
      t.true(cause instanceof HeapExhaustedError, `${backend}: expected a HeapExhaustedError cause, got ${String(cause)}`);
      errors.push((e as MethodError).message);
      rt.validateHeap();
      heaps.push(persistentHeapBytes(rt));
    } finally {
      await rt.close();
    }
  }
  t.regex(errors[0]!, /^Alive\.update threw on object \d+ \(calling thread\): HeapExhaustedError: .*Candidate/);
  t.is(errors[1], errors[0]);
  t.is(firstDiff(heaps[1]!, heaps[0]!), -1, 'the same heap after the failed pass');
});

/**
 * A grid whose Cell blocks have holes: cells created one by one with `spare` extra cells,
 * then one cell deleted in every `every`-th block (slot 5), so cell i is not slot i mod 32
 * of a full block; then the start's live cells, adopted as a grid (gol.ts adoptGrid) and
 * their Candidates created.
 */
async function holedGrid(start: GolStart, backend: 'ts' | 'wasm', every: number): Promise<Runtime> {
  const n = start.width * start.height;
  const rt = await createRuntime({ classes: CLASSES, heap: (4 << 20) + n * 48, backend, modules: [MODULE] });
  const slots = rt.stats().types['Cell']!.slotsPerBlock;
  const extra = Math.ceil(n / (slots - 1) / every) + 1;
  const made: Cell[] = [];
  for (let i = 0; i < n + extra; i++) made.push(rt.create(Cell));
  let deleted = 0;
  for (const c of made) {
    if (deleted < extra && (c.handle & 31) === 5 && (c.handle >>> 5) % every === 0) {
      rt.destroy(c);
      deleted++;
    }
  }
  // Drop what is left over past the grid, from the highest handles.
  let excess = rt.count(Cell) - n;
  for (let i = made.length - 1; excess > 0; i--) {
    const c = made[i]!;
    if ((c.handle & 31) === 5 && (c.handle >>> 5) % every === 0) continue; // deleted above
    rt.destroy(c);
    excess--;
  }
  resetCellTable(rt.context);
  const cells = cellTable(rt.context, Cell, n);
  for (const id of start.alive) {
    const cell = rt.get(Cell, cells[id]!);
    cell.agent = newAlive(rt.context, id);
    cell.state = CELL_NEW;
  }
  resetCellTable(rt.context);
  adoptGrid(rt, start.width, start.height);
  await rt.parallelDo(Alive, 'createCandidates', start.width, start.height);
  return rt;
}

for (const [label, start, every] of [
  ['holes in every 3rd Cell block: breaks inside the ranks table', randomStart(40, 30, 0.35, 9), 3],
  ['a hole in every Cell block of 130 × 110: the ranks table does not fit, the TypeScript methods run', randomStart(130, 110, 0.3, 9), 1],
] as const) {
  test(`${label}; heaps byte-identical to ts`, async (t) => {
    const ts = await holedGrid(start, 'ts', every);
    const wasm = await holedGrid(start, 'wasm', every);
    try {
      t.is(firstDiff(persistentHeapBytes(wasm), persistentHeapBytes(ts)), -1, 'after init');
      for (let k = 0; k < 6; k++) {
        for (const [cls, method] of PASSES) {
          for (const rt of [ts, wasm]) await rt.parallelDo(cls as typeof Alive, method as 'prepare', start.width, start.height);
          t.is(firstDiff(persistentHeapBytes(wasm), persistentHeapBytes(ts)), -1, `step ${k}, ${cls.name}.${method}`);
        }
      }
      wasm.validateHeap();
    } finally {
      await ts.close();
      await wasm.close();
    }
  });
}

test('Cell blocks: the kernels read cells through the pass ranks table whatever their layout', async (t) => {
  const start = randomStart(33, 17, 0.4, 11);
  const rt = await runtimeFor(start, 'wasm', 2);
  const ref = await runtimeFor(start, 'ts', 1);
  try {
    for (let k = 0; k < 10; k++) {
      await step(rt);
      await step(ref);
    }
    t.is(rt.count(Cell), 33 * 17);
    t.is(digest(rt), digest(ref));
  } finally {
    await rt.close();
    await ref.close();
  }
});

test('checked mode: the allocating kernels bump the slot generations as destroy() does (heaps byte-identical to ts)', async (t) => {
  const start = randomStart(40, 24, 0.35, 4);
  const rts: Runtime[] = [];
  for (const backend of ['ts', 'wasm'] as const) {
    const rt = await createRuntime({ classes: CLASSES, heap: 4 << 20, backend, checked: true, modules: [MODULE] });
    await init(rt, start);
    rts.push(rt);
  }
  const [ts, wasm] = rts as [Runtime, Runtime];
  try {
    for (let k = 0; k < 8; k++) {
      await step(ts);
      await step(wasm);
      t.is(firstDiff(persistentHeapBytes(wasm), persistentHeapBytes(ts)), -1, `step ${k}`);
    }
    t.is(wasm.stats().backend.methods['Alive.update'], 'wasm');
    wasm.validateHeap();
  } finally {
    await ts.close();
    await wasm.close();
  }
});

test('a full heap inside an allocating kernel on worker threads: MethodError with the HeapExhaustedError, a valid heap', async (t) => {
  const start = randomStart(96, 96, 0.5, 5);
  const rt = await createRuntime({ classes: CLASSES, heap: 1179648, backend: 'wasm', threads: 2, modules: [MODULE], ...THREADED });
  try {
    await init(rt, start);
    let e: unknown = null;
    try {
      for (let k = 0; k < 50; k++) await step(rt);
    } catch (err) {
      e = err;
    }
    t.true(e instanceof MethodError, `expected a MethodError, got ${String(e)}`);
    t.regex((e as MethodError).message, /threw on object [1-9]\d* .*HeapExhaustedError/);
    rt.validateHeap();
  } finally {
    await rt.close();
  }
});
