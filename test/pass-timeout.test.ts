/**
 * passTimeout (RuntimeOptions, CLI --pass-timeout): a pass whose method never returns ends
 * with PassTimeoutError — on one thread (the calling thread is interrupted by node:vm's
 * watchdog, runtime/timed.ts) and on several (stuck workers are terminated and replaced,
 * workers/pool.ts) — the heap is validated (the error carries the result), and the runtime
 * stays usable: the same runtime then runs passes on every thread again.
 *
 * "Within the bound": the error comes no earlier than the timeout and long before a hang
 * would end (BOUND_MS, a generous allowance for a loaded machine, not a speed requirement).
 */
import test from 'ava';
import { createRuntime, PassTimeoutError, type Runtime, type RuntimeOptions } from '../index.js';
import { popc } from '../runtime/bits.js';
import { H_STATE_CLAIM, HEADER_OFFSET, MAX_ALLOC_STATES } from '../runtime/layout.js';
import { SLOT_CLAIM_OFFSET } from '../runtime/wasm.js';
import { describeChild, smmo } from './helpers/child.js';
import { Spinner, TIMEOUT_FIXTURES } from './timeout.fixtures.js';

const TIMEOUT_MS = 2000;
/** How long the thread that returns waits for the other to start (well below TIMEOUT_MS). */
const START_WAIT_MS = 1500;
const BOUND_MS = 60_000;

async function runtime(threads: number, extra: Partial<RuntimeOptions> = {}): Promise<Runtime> {
  return createRuntime({
    classes: [Spinner],
    heap: '4MB',
    threads,
    passTimeout: TIMEOUT_MS,
    inlineBlocks: 0, // every pass on every thread
    ...(threads > 1 ? { modules: [TIMEOUT_FIXTURES] } : {}),
    ...extra,
  });
}

async function expectTimeout(
  t: import('ava').ExecutionContext,
  pass: () => Promise<unknown>,
  threads: number[],
): Promise<PassTimeoutError | undefined> {
  const t0 = performance.now();
  const e = await t.throwsAsync(pass(), { instanceOf: PassTimeoutError });
  const ms = performance.now() - t0;
  t.true(ms >= TIMEOUT_MS - 5, `not before the timeout (${ms.toFixed(0)} ms)`);
  t.true(ms < TIMEOUT_MS + BOUND_MS, `within the bound (${ms.toFixed(0)} ms)`);
  if (e) {
    t.deepEqual([...e.threads].sort(), threads, e.message);
    t.is(e.timeoutMs, TIMEOUT_MS);
    t.is(e.heapCheck, null, 'validateHeap() passed after the stop');
    t.regex(
      e.message,
      new RegExp(
        `did not finish within passTimeout \\(${TIMEOUT_MS} ms\\).*validateHeap\\(\\) passed afterwards; the runtime stays usable`,
      ),
    );
  }
  return e;
}

/** The runtime is usable: objects come and go, a pass visits every object (on every thread), the heap is valid. */
async function usable(t: import('ava').ExecutionContext, rt: Runtime, n: number): Promise<void> {
  // First, before any pass: the interrupted pass left no warp open on the calling
  // thread (an open warp would reserve its remaining lanes for this one create).
  rt.destroy(rt.create(Spinner));
  t.is(rt.count(Spinner), n, 'a create and a destroy straight after the stop leave the count alone');
  const before: number[] = [];
  rt.deviceDo(Spinner, (s) => before.push(s.count));
  await rt.parallelDo(Spinner, 'inc');
  const after: number[] = [];
  rt.deviceDo(Spinner, (s) => after.push(s.count));
  t.is(after.length, n);
  t.deepEqual(
    after,
    before.map((c) => c + 1),
    'one more visit for every object',
  );
  rt.validateHeap();
  const extra = rt.create(Spinner);
  rt.destroy(extra);
  t.is(rt.count(Spinner), n);
}

test('1 thread: a method that never returns ends with PassTimeoutError; the runtime stays usable', async (t) => {
  t.timeout(4 * BOUND_MS);
  const rt = await runtime(1);
  try {
    await rt.parallelNew(Spinner, 100);
    await expectTimeout(t, () => rt.parallelDo(Spinner, 'forever'), [0]);
    await usable(t, rt, 100);
    // Again: the mechanism is not used up.
    await expectTimeout(t, () => rt.parallelDo(Spinner, 'forever'), [0]);
    await usable(t, rt, 100);
    // parallelNew: an init method and an init function that never return.
    await expectTimeout(t, () => rt.parallelNew(Spinner, 10, 'hang'), [0]);
    await expectTimeout(
      t,
      () =>
        rt.parallelNew(Spinner, 10, () => {
          for (;;);
        }),
      [0],
    );
    await usable(t, rt, rt.count(Spinner));
  } finally {
    await rt.close();
  }
});

test('2 threads: stuck workers are terminated and replaced; the runtime runs passes on both threads again', async (t) => {
  t.timeout(4 * BOUND_MS);
  const rt = await runtime(2);
  try {
    await rt.parallelNew(Spinner, 2000);
    await expectTimeout(t, () => rt.parallelDo(Spinner, 'forever'), [0, 1]);
    await usable(t, rt, 2000);
    await rt.parallelDo(Spinner, 'visit', 7, START_WAIT_MS);
    let marked = 0;
    rt.deviceDo(Spinner, (s) => (marked += s.mark === 7 ? 1 : 0));
    t.true(marked > 0, 'the replacement worker thread takes part in passes');

    await expectTimeout(t, () => rt.parallelDo(Spinner, 'foreverOnWorkers', 1, START_WAIT_MS), [1]);
    await usable(t, rt, 2000);
    await expectTimeout(t, () => rt.parallelDo(Spinner, 'foreverOnMain', 2, START_WAIT_MS), [0]);
    await usable(t, rt, 2000);
    await expectTimeout(t, () => rt.parallelNew(Spinner, 4000, 'hang'), [0, 1]);
    await usable(t, rt, rt.count(Spinner));
  } finally {
    await rt.close();
  }
});

/** Allocator states claimed in the heap (layout.ts H_STATE_CLAIM). */
function claimedStates(rt: Runtime): number {
  const w = (HEADER_OFFSET >> 2) + H_STATE_CLAIM;
  let n = 0;
  for (let i = 0; i < MAX_ALLOC_STATES / 32; i++) n += popc(rt.heap.i32[w + i]!);
  return n;
}

test('2 threads: a worker stopped inside a warp that allocated gives back its reserved slots and its allocator state', async (t) => {
  t.timeout(4 * BOUND_MS);
  const rt = await runtime(2);
  try {
    await rt.parallelNew(Spinner, 2000);
    await rt.parallelDo(Spinner, 'inc'); // both threads have claimed their states
    const states = claimedStates(rt);
    for (let i = 0; i < 3; i++) {
      const n = rt.count(Spinner);
      await expectTimeout(t, () => rt.parallelDo(Spinner, 'createThenForeverOnWorkers', 10 + i, START_WAIT_MS), [1]);
      // The worker created one object and reserved slots for the rest of its warp: only the one stays.
      t.is(rt.count(Spinner), n + 1, `stop ${i + 1}: the created object stays, the reserved slots went back`);
      await usable(t, rt, n + 1);
      t.is(claimedStates(rt), states, `stop ${i + 1}: the dead thread's allocator state was given back`);
    }
  } finally {
    await rt.close();
  }
});

test('2 threads, backend wasm: the WASM kernel slots of terminated workers are given back', async (t) => {
  t.timeout(4 * BOUND_MS);
  const rt = await runtime(2, { backend: 'wasm' });
  try {
    await rt.parallelNew(Spinner, 2000);
    const claimed = (): number => popc(rt.heap.i32[SLOT_CLAIM_OFFSET >> 2]!);
    t.is(claimed(), 2, 'the calling thread and one worker');
    for (let i = 0; i < 3; i++) {
      await expectTimeout(t, () => rt.parallelDo(Spinner, 'foreverOnWorkers', i + 1, START_WAIT_MS), [1]);
      await rt.parallelDo(Spinner, 'inc'); // starts the replacement, which claims a slot
      t.is(claimed(), 2, `after stop ${i + 1}: no slot leaked`);
    }
  } finally {
    await rt.close();
  }
});

test('passTimeout is validated; smmo run --pass-timeout stops a pass that runs longer (exit 1)', async (t) => {
  for (const passTimeout of [0, -1, Number.NaN, 2 ** 31]) {
    await t.throwsAsync(createRuntime({ classes: [Spinner], heap: '2MB', passTimeout }), {
      message: /option passTimeout must be a number of ms/,
    });
  }
  const bad = await smmo(['run', 'nbody', '--pass-timeout', '0']);
  t.is(bad.code, 2, describeChild(bad));
  t.regex(bad.stderr, /--pass-timeout must be an integer in 1 … 2147483647/);
  // nbody's computeForce over 4000 bodies (16 M interactions) takes far more than 1 ms.
  const r = await smmo(['run', 'nbody', '--bodies', '4000', '--iterations', '1', '--pass-timeout', '1', '--json']);
  t.is(r.code, 1, describeChild(r));
  t.regex(r.stderr, /^smmo run nbody: PassTimeoutError: parallel(New|Do)\(Body.*\) did not finish within passTimeout \(1 ms\)/);
});
