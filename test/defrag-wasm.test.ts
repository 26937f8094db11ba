/**
 * The rewrite phase on WebAssembly lanes (runtime/defrag-wasm.ts V1–V5, wasm/src/defrag.rs):
 * a runtime of backend 'wasm' — Runtime.defrag, and Runtime.parallelDefrag on 1, 2 and 4
 * threads, with every phase on the executor (inlineBlocks 0) and with the default placement —
 * leaves the same heap bytes (bitmaps, type table, the calling thread's allocator state,
 * every block: free ones included, so the published forwarding handles and marks are put
 * back exactly), the same remap for every handle and the same statistics (but the times,
 * `threads` and `lanes`) as Runtime.defrag on a runtime of backend 'ts' built the same way;
 * validateHeap() holds after every call and stats.lanes says the WebAssembly lanes ran.
 * Random heaps (fast-check, seeded by the suite) with references across classes and
 * subclasses, inline arrays of references, dangling references; several calls on the same
 * pair of runtimes. Also: checked mode, a forwarding column of 8-byte elements, a class
 * without a forwarding column (the rewrite stays on the TypeScript lanes, lanes absent),
 * the wasm.defragLanes option, and a call stopped after its copies (V6: the published words go back).
 */
import test from 'ava';
import { createRuntime, UsageError, type DefragResult, type DefragStats, type Runtime } from '../index.js';
import { defragSteps, defragTypes, runLanes } from '../runtime/defrag.js';
import { DefragScratch } from '../runtime/defrag-lanes.js';
import { forwardingColumn } from '../runtime/defrag-wasm.js';
import {
  build,
  buildColumns,
  clear,
  deleteEverySecondFish,
  CLASSES,
  COLUMN_CLASSES,
  DEFRAG_FIXTURES,
  firstDifference,
  Fish,
  heapBytes,
  Link,
  Node,
  type Shape,
} from './defrag.fixtures.js';
import { comparedOnRandomHeaps, remapAndHeapProblems } from './helpers/defrag-shapes.js';

/** A runtime of `backend`; backend 'wasm' opts in to the WebAssembly rewrite lanes (RuntimeOptions.wasm.defragLanes). */
async function runtime(backend: 'ts' | 'wasm', threads: number, extra: Record<string, unknown> = {}): Promise<Runtime> {
  const lanes = backend === 'wasm' ? { wasm: { defragLanes: 'wasm' as const } } : {};
  return createRuntime({ classes: CLASSES, heap: '8MB', threads, backend, modules: [DEFRAG_FIXTURES], ...lanes, ...extra });
}

function withoutTimes(s: DefragStats): Omit<DefragStats, 'ms' | 'threads' | 'lanes'> {
  const { ms: _ms, threads: _threads, lanes: _lanes, ...rest } = s;
  return rest;
}

/** Differences between the reference (backend 'ts', defrag) and a WebAssembly result, as text (empty: none). */
function compare(ref: Runtime, wasm: Runtime, r: DefragResult, w: DefragResult, wantLanes: boolean): string[] {
  const out: string[] = [];
  const d = firstDifference(heapBytes(ref), heapBytes(wasm));
  if (d !== null) out.push(`heap differs: ${d}`);
  if (JSON.stringify(withoutTimes(r.stats)) !== JSON.stringify(withoutTimes(w.stats)))
    out.push(`stats differ: ${JSON.stringify(withoutTimes(r.stats))} vs ${JSON.stringify(withoutTimes(w.stats))}`);
  if (r.stats.lanes !== undefined) out.push(`backend 'ts': stats.lanes ${JSON.stringify(r.stats.lanes)}, want none`);
  const lanes = JSON.stringify(w.stats.lanes);
  const want = wantLanes ? JSON.stringify({ copy: 'ts', rewrite: 'wasm' }) : undefined;
  if (lanes !== want) out.push(`backend 'wasm': stats.lanes ${lanes}, want ${want}`);
  out.push(...remapAndHeapProblems(r, w, ref.heap.numBlocks * 32, [ref, wasm]));
  return out;
}

/** Build `shape` on both, defrag the reference and the wasm runtime (parallelDefrag, or defrag) with factor n; delete every second Fish and again. */
async function twice(
  ref: Runtime,
  wasm: Runtime,
  shape: Shape,
  n: number,
  parallel = true,
): Promise<{ problems: string[]; moved: number }> {
  const problems: string[] = [];
  let moved = 0;
  build(ref, shape);
  build(wasm, shape);
  const d0 = firstDifference(heapBytes(ref), heapBytes(wasm));
  if (d0 !== null) return { problems: [`the heaps differ before defrag (test setup): ${d0}`], moved };
  for (let call = 0; call < 2; call++) {
    const r = ref.defrag(undefined, n);
    const w = parallel ? await wasm.parallelDefrag(undefined, n) : wasm.defrag(undefined, n);
    moved += r.stats.objectsMoved;
    problems.push(...compare(ref, wasm, r, w, r.stats.passes > 0).map((x) => `call ${call}: ${x}`));
    if (problems.length > 0) break;
    for (const rt of [ref, wasm]) deleteEverySecondFish(rt);
  }
  clear(ref);
  clear(wasm);
  return { problems, moved };
}

const SHAPE: Shape = { seed: 11, fish: 3000, sharks: 700, holders: 500, kill: 0.6, density: 0.8 };

test('the fixtures have the forwarding columns the tests rely on (V1): i32, f64, none', (t) => {
  t.deepEqual(
    [Fish, Node, Link].map((c) => {
      const col = forwardingColumn(rtTable.byClass(c)!);
      return col === null ? null : col.wide;
    }),
    [false, true, null],
  );
});

// The layouts of the fixtures' classes, for the test above (no runtime needed beyond one).
let rtTable: Runtime['table'];
test.before(async () => {
  const rt = await createRuntime({ classes: [...CLASSES, ...COLUMN_CLASSES], heap: '2MB' });
  rtTable = rt.table;
  await rt.close();
});

test("Runtime.defrag on backend 'wasm' (one thread): the same heap, remap and stats as on backend 'ts'", async (t) => {
  const ref = await runtime('ts', 1);
  const wasm = await runtime('wasm', 1);
  try {
    for (const n of [1, 3]) {
      const { problems, moved } = await twice(ref, wasm, SHAPE, n, false);
      t.deepEqual(problems, [], `n=${n}`);
      t.true(moved > 500, `n=${n}: ${moved} objects moved`);
    }
  } finally {
    await ref.close();
    await wasm.close();
  }
});

for (const threads of [1, 2, 4]) {
  for (const inline of [0, undefined]) {
    test(`parallelDefrag on backend 'wasm', ${threads} thread(s), inlineBlocks ${inline ?? 'default'}: the same heap, remap and stats as defrag on 'ts'`, async (t) => {
      const opts = inline === undefined ? {} : { inlineBlocks: inline };
      const ref = await runtime('ts', threads, opts);
      const wasm = await runtime('wasm', threads, opts);
      try {
        for (const n of [1, 3]) {
          const { problems, moved } = await twice(ref, wasm, SHAPE, n);
          t.deepEqual(problems, [], `n=${n}`);
          t.true(moved > 500, `n=${n}: ${moved} objects moved`);
        }
      } finally {
        await ref.close();
        await wasm.close();
      }
    });
  }
}

test("property: random heaps, backend 'wasm' on 1, 2 and 4 threads against 'ts' (fast-check; seeded by the suite)", async (t) => {
  const { runs, moved } = await comparedOnRandomHeaps(
    t,
    async (threads) => [await runtime('ts', threads, { inlineBlocks: 0 }), await runtime('wasm', threads, { inlineBlocks: 0 })],
    (ref, wasm, s, n) => twice(ref, wasm, s, n),
  );
  t.log(`${runs} random heaps, ${moved} objects moved`);
  t.true(moved > 1000);
});

test("checked mode on 2 threads, backend 'wasm': the same bytes (slot generations bumped alike) as defrag on 'ts'", async (t) => {
  const ref = await runtime('ts', 2, { checked: true, inlineBlocks: 0 });
  const wasm = await runtime('wasm', 2, { checked: true, inlineBlocks: 0 });
  try {
    const { problems, moved } = await twice(ref, wasm, { ...SHAPE, seed: 5 }, 2);
    t.deepEqual(problems, []);
    t.true(moved > 1000);
  } finally {
    await ref.close();
    await wasm.close();
  }
});

test('an f64 forwarding column, and a class without one (the rewrite on the TypeScript lanes), on 2 threads', async (t) => {
  const make = (backend: 'ts' | 'wasm'): Promise<Runtime> =>
    createRuntime({
      classes: COLUMN_CLASSES,
      heap: '8MB',
      threads: 2,
      backend,
      inlineBlocks: 0,
      modules: [DEFRAG_FIXTURES],
      ...(backend === 'wasm' ? { wasm: { defragLanes: 'wasm' as const } } : {}),
    });
  const ref = await make('ts');
  const wasm = await make('wasm');
  try {
    const shape = { seed: 3, nodes: 4000, links: 2000, kill: 0.6 };
    buildColumns(ref, shape);
    buildColumns(wasm, shape);
    t.is(firstDifference(heapBytes(ref), heapBytes(wasm)), null, 'the same heaps before (test setup)');
    // Node alone: its f64 column holds the forwarding handles (V1), the WebAssembly lanes run.
    const r1 = ref.defrag(Node, 2);
    const w1 = await wasm.parallelDefrag(Node, 2);
    t.true(r1.stats.objectsMoved > 500, `${r1.stats.objectsMoved} Nodes moved`);
    t.deepEqual(compare(ref, wasm, r1, w1, true), []);
    // Every class: Link has no forwarding column, so the call rewrites on the TypeScript lanes.
    const r2 = ref.defrag(undefined, 1);
    const w2 = await wasm.parallelDefrag(undefined, 1);
    t.true(r2.stats.classes['Link']!.objectsMoved > 200, `${r2.stats.classes['Link']!.objectsMoved} Links moved`);
    t.deepEqual(compare(ref, wasm, r2, w2, false), []);
  } finally {
    await ref.close();
    await wasm.close();
  }
});

test("wasm.defragLanes: backend 'wasm' without it (the default) rewrites on the TypeScript lanes; a bad value, or 'wasm' on another backend, is a UsageError", async (t) => {
  const ref = await runtime('ts', 1);
  const plain = await createRuntime({ classes: CLASSES, heap: '8MB', threads: 1, backend: 'wasm', modules: [DEFRAG_FIXTURES] });
  try {
    build(ref, SHAPE);
    build(plain, SHAPE);
    const r = ref.defrag(undefined, 2);
    const w = plain.defrag(undefined, 2);
    t.true(r.stats.objectsMoved > 500);
    t.is(w.stats.lanes, undefined, 'no WebAssembly lanes ran');
    t.deepEqual(compare(ref, plain, r, w, false), []);
  } finally {
    await ref.close();
    await plain.close();
  }
  await t.throwsAsync(
    createRuntime({ classes: CLASSES, heap: '8MB', backend: 'wasm', wasm: { defragLanes: 'fast' as 'wasm' }, modules: [DEFRAG_FIXTURES] }),
    { instanceOf: UsageError, message: /wasm\.defragLanes must be 'ts' or 'wasm', got "fast"/ },
  );
  await t.throwsAsync(
    createRuntime({ classes: CLASSES, heap: '8MB', backend: 'ts', wasm: { defragLanes: 'wasm' }, modules: [DEFRAG_FIXTURES] }),
    {
      instanceOf: UsageError,
      message: /needs backend 'wasm'/,
    },
  );
});

test('(V6) a call stopped after its copies (a failed phase) puts the published words back: the same bytes as the TypeScript lanes stopped there', async (t) => {
  const ref = await runtime('ts', 1);
  const wasm = await runtime('wasm', 1);
  try {
    build(ref, SHAPE);
    build(wasm, SHAPE);
    const stopped: string[] = [];
    for (const [rt, lanes] of [
      [ref, 'ts'],
      [wasm, 'wasm'],
    ] as const) {
      const host = { heap: rt.heap, table: rt.table, allocator: rt.main.allocator, lanes };
      const sc = new DefragScratch(rt.heap.numBlocks);
      const steps = defragSteps(host, defragTypes(rt.table, undefined), 2, sc, 1);
      let r = steps.next();
      while (r.done !== true && r.value.kind === 'copy') {
        runLanes(rt.heap, sc, r.value, 0, r.value.lanes);
        r = steps.next();
      }
      t.false(r.done, 'the call reached its rewrite');
      stopped.push(r.done === true ? 'done' : r.value.kind);
      steps.return(undefined as never); // as the drivers do when a phase throws
    }
    t.deepEqual(stopped, ['rewrite', 'rewrite']);
    t.is(firstDifference(heapBytes(ref), heapBytes(wasm)), null);
    wasm.validateHeap();
  } finally {
    await ref.close();
    await wasm.close();
  }
});
