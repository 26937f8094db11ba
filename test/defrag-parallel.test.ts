/**
 * Runtime.parallelDefrag (runtime/defrag-parallel.ts, Q1–Q3; lanes: runtime/defrag-lanes.ts
 * L1–L4): on 1, 2 and 4 threads, with every phase on the executor (inlineBlocks 0) and with
 * the default placement, it leaves the same heap bytes (bitmaps, type table, the calling
 * thread's allocator state, every block), the same remap for every handle and the same
 * statistics (but the times and `threads`) as Runtime.defrag on a runtime built the same
 * way; validateHeap() holds after every call. Random heaps (fast-check, seeded by the
 * suite's seed: SMMO_SEED / SMMO_FC_SEED) with references across classes and subclasses,
 * inline arrays of references, dangling references; several calls on the same pair of
 * runtimes (the scratch buffer is reused). Also: checked mode, and the refusals (F4, Q3).
 */
import test, { type ExecutionContext } from 'ava';
import { createRuntime, DefragStoppedError, UsageError, type DefragResult, type DefragStats, type Runtime } from '../index.js';
import { DefragScratch } from '../runtime/defrag-lanes.js';
import { failAllocation } from './helpers/fail-allocation.js';
import {
  build,
  clear,
  deleteEverySecondFish,
  CLASSES,
  firstDifference,
  heapBytes,
  DEFRAG_FIXTURES,
  Fish,
  Holder,
  Shark,
  type Shape,
} from './defrag.fixtures.js';
import { comparedOnRandomHeaps, remapAndHeapProblems } from './helpers/defrag-shapes.js';

async function runtime(threads: number, extra: Record<string, unknown> = {}): Promise<Runtime> {
  return createRuntime({ classes: CLASSES, heap: '8MB', threads, modules: [DEFRAG_FIXTURES], ...extra });
}

function withoutTimes(s: DefragStats): Omit<DefragStats, 'ms' | 'threads'> {
  const { ms: _ms, threads: _threads, ...rest } = s;
  return rest;
}

/** Differences between a reference result (defrag) and a parallel one, as text (empty: none). */
function compare(ref: Runtime, par: Runtime, r: DefragResult, p: DefragResult, threads: number): string[] {
  const out: string[] = [];
  const d = firstDifference(heapBytes(ref), heapBytes(par));
  if (d !== null) out.push(`heap differs: ${d}`);
  if (JSON.stringify(withoutTimes(r.stats)) !== JSON.stringify(withoutTimes(p.stats)))
    out.push(`stats differ: ${JSON.stringify(withoutTimes(r.stats))} vs ${JSON.stringify(withoutTimes(p.stats))}`);
  if (p.stats.threads !== threads) out.push(`stats.threads ${p.stats.threads}, want ${threads}`);
  if (r.stats.threads !== 1) out.push(`defrag's stats.threads ${r.stats.threads}, want 1`);
  out.push(...remapAndHeapProblems(r, p, ref.heap.numBlocks * 32, [ref, par]));
  return out;
}

/** Build `shape` on both, defrag(ref) and parallelDefrag(par) with factor n; then delete every second Fish and do it again. */
async function twice(ref: Runtime, par: Runtime, shape: Shape, n: number, threads: number): Promise<{ problems: string[]; moved: number }> {
  const problems: string[] = [];
  let moved = 0;
  build(ref, shape);
  build(par, shape);
  const d0 = firstDifference(heapBytes(ref), heapBytes(par));
  if (d0 !== null) return { problems: [`the heaps differ before defrag (test setup): ${d0}`], moved };
  for (let call = 0; call < 2; call++) {
    const r = ref.defrag(undefined, n);
    const p = await par.parallelDefrag(undefined, n);
    moved += r.stats.objectsMoved;
    problems.push(...compare(ref, par, r, p, threads).map((x) => `call ${call}: ${x}`));
    if (problems.length > 0) break;
    for (const rt of [ref, par]) deleteEverySecondFish(rt);
  }
  clear(ref);
  clear(par);
  return { problems, moved };
}

const SHAPE: Shape = { seed: 11, fish: 3000, sharks: 700, holders: 500, kill: 0.6, density: 0.8 };

for (const threads of [1, 2, 4]) {
  for (const inline of [0, undefined]) {
    test(`${threads} thread(s), inlineBlocks ${inline ?? 'default'}: the same heap, remap and stats as defrag; validateHeap holds`, async (t) => {
      const opts = inline === undefined ? {} : { inlineBlocks: inline };
      const ref = await runtime(threads, opts);
      const par = await runtime(threads, opts);
      try {
        for (const n of [1, 3]) {
          const { problems, moved } = await twice(ref, par, SHAPE, n, threads);
          t.deepEqual(problems, [], `n=${n}`);
          t.true(moved > 500, `n=${n}: ${moved} objects moved`);
        }
      } finally {
        await ref.close();
        await par.close();
      }
    });
  }
}

test('property: random heaps on 1, 2 and 4 threads, every phase on the executor (fast-check; seeded by the suite)', async (t) => {
  const { runs, moved } = await comparedOnRandomHeaps(
    t,
    async (threads) => [await runtime(threads, { inlineBlocks: 0 }), await runtime(threads, { inlineBlocks: 0 })],
    twice,
  );
  t.log(`${runs} random heaps, ${moved} objects moved`);
  t.true(moved > 1000);
});

// Serial: DefragScratch.prototype.beginPass is patched across an await, which a concurrent test of this file would meet.
test.serial(
  'a pass that cannot be planned (F5) stops parallelDefrag as it stops defrag: the same heap, stats and remap in the error',
  async (t) => {
    const ref = await runtime(2, { inlineBlocks: 0 });
    const par = await runtime(2, { inlineBlocks: 0 }); // every phase on the executor
    let oom: ReturnType<typeof failAllocation> | null = null;
    try {
      build(ref, SHAPE);
      build(par, SHAPE);
      t.is(firstDifference(heapBytes(ref), heapBytes(par)), null, 'the same heap before');
      oom = failAllocation(DefragScratch.prototype, 'beginPass', (call) => call % 3 === 0); // the third pass of each call
      const r = t.throws(() => ref.defrag(undefined, 1), { instanceOf: DefragStoppedError });
      const p = await t.throwsAsync(par.parallelDefrag(undefined, 1), { instanceOf: DefragStoppedError });
      oom.restore();
      t.is(r.result.stats.passes, 2);
      ref.validateHeap();
      par.validateHeap();
      t.deepEqual(compare(ref, par, r.result, p.result, 2), []);
    } finally {
      oom?.restore();
      await ref.close();
      await par.close();
    }
  },
);

test('checked mode on 2 threads: the same bytes (slot generations bumped alike) as defrag', async (t) => {
  const ref = await runtime(2, { checked: true, inlineBlocks: 0 });
  const par = await runtime(2, { checked: true, inlineBlocks: 0 });
  try {
    const { problems, moved } = await twice(ref, par, { ...SHAPE, seed: 5 }, 2, 2);
    t.deepEqual(problems, []);
    t.true(moved > 1000);
  } finally {
    await ref.close();
    await par.close();
  }
});

async function refusals(t: ExecutionContext, rt: Runtime): Promise<void> {
  for (const n of [0, 1.5, NaN]) await t.throwsAsync(rt.parallelDefrag(Fish, n), { instanceOf: UsageError, message: /integer ≥ 1/ });
  const running = rt.parallelDo(Holder, 'touch');
  await t.throwsAsync(rt.parallelDefrag(Shark), { instanceOf: UsageError, message: /still running/ });
  await running;
  const defragging = rt.parallelDefrag(undefined, 1);
  t.throws(() => rt.defrag(), { instanceOf: UsageError, message: /parallelDefrag is still running/ });
  await t.throwsAsync(rt.parallelDo(Holder, 'touch'), { instanceOf: UsageError, message: /parallelDefrag is still running/ });
  t.true((await defragging).stats.objectsMoved > 0);
  rt.validateHeap();
}

test('refusals: a bad n, an overlapping parallelDo, a defrag while parallelDefrag runs (typed errors)', async (t) => {
  const rt = await runtime(2, { inlineBlocks: 0 });
  try {
    build(rt, SHAPE);
    await refusals(t, rt);
  } finally {
    await rt.close();
  }
});
