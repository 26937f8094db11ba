/**
 * Failures on worker threads (workers/pool.ts "Failure modes"): a method that throws,
 * an init method that throws, a worker that calls process.exit or runs out of memory in
 * the middle of a pass, a script that forgets close(), and configuration mistakes.
 * Each must end in a typed error, never a hang (every test has a timeout), and leave
 * the pool usable with a consistent heap. The timeouts guard against hangs; they are not
 * speed requirements (generous, for a loaded machine).
 */
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { describeChild, runNode } from './helpers/child.js';
import { createRuntime, HeapExhaustedError, InvalidHandleError, MethodError, Runtime, UsageError, WorkerCrashedError } from '../index.js';
import { Driver, FIXTURES, Item, Probe } from './workers.fixtures.js';

/** Per-test bound against hangs (a loaded machine runs these in seconds; a hang would never end). */
const HANG_GUARD_MS = 120_000;

const N = 640; // 20 blocks of Probes

async function probes(threads = 2, extra: Partial<Parameters<typeof createRuntime>[0]> = {}): Promise<Runtime> {
  const rt = await createRuntime({ classes: [Probe], threads, heap: '4MB', modules: [FIXTURES], inlineBlocks: 0, ...extra });
  await rt.parallelNew(Probe, N, 'setValue');
  return rt;
}

/** The pool still works: its workers take part in a pass that visits every object exactly once. */
async function assertUsable(t: { is(a: unknown, b: unknown, m?: string): void }, rt: Runtime): Promise<void> {
  rt.validateHeap();
  const before = new Map<number, number>();
  rt.deviceDo(Probe, (p) => void before.set(p.handle, p.hits));
  const work = rt.pool!.work();
  await rt.parallelDo(Probe, 'incSlowOnMain');
  const after = rt.pool!.work();
  t.is(
    after.slice(1).some((w, k) => w > work[k + 1]!),
    true,
    'the worker threads take part again',
  );
  let ok = 0;
  rt.deviceDo(Probe, (p) => {
    if (p.hits === before.get(p.handle)! + 1) ok++;
  });
  t.is(ok, before.size, 'after the failure, a pass must visit every object exactly once');
  rt.validateHeap();
}

test.serial('a method that throws rejects with MethodError naming class, method and handle; the pool stays usable', async (t) => {
  t.timeout(HANG_GUARD_MS);
  const rt = await probes(2);
  try {
    let target = 0;
    let i = 0;
    rt.deviceDo(Probe, (p) => {
      if (i++ === 400) target = p.handle;
    });
    const err = await t.throwsAsync(() => rt.parallelDo(Probe, 'throwAt', target), { instanceOf: MethodError });
    t.is(err!.typeName, 'Probe');
    t.is(err!.method, 'throwAt');
    t.is(err!.handle, target);
    t.true(err!.cause instanceof TypeError, 'a built-in error keeps its class across threads');
    t.is((err!.cause as Error).message, `boom at ${target}`);
    t.regex(err!.message, new RegExp(`Probe\\.throwAt threw on object ${target}`));
    await assertUsable(t, rt);
  } finally {
    await rt.close();
  }
});

test.serial('an error thrown on a worker thread names that thread and keeps its message and stack', async (t) => {
  t.timeout(HANG_GUARD_MS);
  const rt = await probes(2);
  try {
    const err = await t.throwsAsync(() => rt.parallelDo(Probe, 'throwOnWorker'), { instanceOf: MethodError });
    t.is(err!.thread, 1);
    t.true(err!.cause instanceof RangeError);
    t.regex((err!.cause as Error).message, new RegExp(`thrown on a worker by ${err!.handle}`));
    t.regex(String((err!.cause as Error).stack), /throwOnWorker/);
    await assertUsable(t, rt);
  } finally {
    await rt.close();
  }
});

test.serial('an smmo error thrown on a worker keeps its class (InvalidHandleError as the cause)', async (t) => {
  t.timeout(HANG_GUARD_MS);
  const rt = await probes(2);
  try {
    const err = await t.throwsAsync(() => rt.parallelDo(Probe, 'destroyTwiceOnWorker'), { instanceOf: MethodError });
    t.true(err!.cause instanceof InvalidHandleError, `cause: ${String(err!.cause)}`);
    t.is((err!.cause as InvalidHandleError).reason, 'deleted');
    t.is((err!.cause as InvalidHandleError).handle, err!.handle);
    rt.validateHeap();
    t.true(rt.count(Probe) < N, 'the worker deleted the object once');
  } finally {
    await rt.close();
  }
});

test.serial('a full heap in a parallelNew on workers rejects with HeapExhaustedError itself; the heap stays valid', async (t) => {
  t.timeout(HANG_GUARD_MS);
  const rt = await createRuntime({ classes: [Probe], threads: 2, heap: '4MB', modules: [FIXTURES], inlineBlocks: 0 });
  try {
    await t.throwsAsync(() => rt.parallelNew(Probe, 2_000_000, 'setValue'), { instanceOf: HeapExhaustedError, message: /Probe/ });
    rt.validateHeap();
    t.true(rt.count(Probe) < 2_000_000);
    await rt.parallelDo(Probe, 'inc');
  } finally {
    await rt.close();
  }
});

test.serial('an init method that throws in parallelNew rejects with MethodError; objects not yet initialised are deleted', async (t) => {
  t.timeout(HANG_GUARD_MS);
  const rt = await createRuntime({ classes: [Probe], threads: 2, heap: '4MB', modules: [FIXTURES], inlineBlocks: 0 });
  try {
    const err = await t.throwsAsync(() => rt.parallelNew(Probe, 5000, 'initThrowAt', 1234), { instanceOf: MethodError });
    t.is(err!.method, 'initThrowAt');
    t.regex((err!.cause as Error).message, /init failed at index 1234/);
    // The failing object stays (its init ran), with the index it was given.
    t.is(rt.get(Probe, err!.handle).value, 1234);
    t.true(rt.count(Probe) < 5000, 'the pass stopped');
    // Every remaining object had its init run: none is left zeroed except index 0's.
    let zero = 0;
    rt.deviceDo(Probe, (p) => void (p.value === 0 && zero++));
    t.true(zero <= 1, `${zero} objects were left uninitialised`);
    await assertUsable(t, rt);
  } finally {
    await rt.close();
  }
});

test.serial('a worker calling process.exit mid-pass rejects with WorkerCrashedError, no hang; a new worker replaces it', async (t) => {
  t.timeout(HANG_GUARD_MS);
  const rt = await probes(2);
  try {
    const err = await t.throwsAsync(() => rt.parallelDo(Probe, 'exitOnWorker'), { instanceOf: WorkerCrashedError });
    t.is(err!.thread, 1);
    t.is(err!.operation, "parallelDo(Probe, 'exitOnWorker')");
    t.regex(String((err!.cause as Error).message), /code: 7/);
    t.is(err!.heapCheck, null, 'process.exit runs between heap operations: the heap must be consistent');
    await assertUsable(t, rt); // the replacement worker runs blocks
  } finally {
    await rt.close();
  }
});

test.serial('a worker that runs out of memory (resourceLimits) mid-pass rejects with WorkerCrashedError', async (t) => {
  t.timeout(HANG_GUARD_MS);
  const rt = await probes(2, { resourceLimits: { maxOldGenerationSizeMb: 24, maxYoungGenerationSizeMb: 4 } });
  try {
    const err = await t.throwsAsync(() => rt.parallelDo(Probe, 'oomOnWorker'), { instanceOf: WorkerCrashedError });
    t.regex(String((err!.cause as Error).message), /memory/i);
    t.log(err!.message);
    await assertUsable(t, rt);
  } finally {
    await rt.close();
  }
});

test.serial('a script that forgets close() still exits', async (t) => {
  const script = `
    import { createRuntime } from ${JSON.stringify(new URL('../index.js', import.meta.url).href)};
    import { Probe, FIXTURES } from ${JSON.stringify(FIXTURES)};
    const rt = await createRuntime({ classes: [Probe], threads: 3, heap: '4MB', modules: [FIXTURES], inlineBlocks: 0 });
    await rt.parallelNew(Probe, 1000, 'setValue');
    await rt.parallelDo(Probe, 'inc');
    console.log('done', rt.count(Probe));
  `;
  const t0 = performance.now();
  const r = await runNode(['--input-type=module', '-e', script]);
  const ms = performance.now() - t0;
  t.is(r.code, 0, describeChild(r));
  t.is(r.stdout.trim(), 'done 1000');
  t.log(`exited ${ms.toFixed(0)} ms after start`);
});

test.serial('configuration mistakes are UsageErrors that say what to do', async (t) => {
  t.timeout(HANG_GUARD_MS);
  const noModules = await t.throwsAsync(() => createRuntime({ classes: [Probe], threads: 2, heap: '4MB' }), { instanceOf: UsageError });
  t.regex(noModules!.message, /options\.modules/);
  const here = new URL('../apps/random.js', import.meta.url).href; // exports no smmo class
  const missing = await t.throwsAsync(() => createRuntime({ classes: [Probe], threads: 2, heap: '4MB', modules: [here] }), {
    instanceOf: UsageError,
  });
  t.regex(missing!.message, /Probe not found in options\.modules/);
  const nofile = await t.throwsAsync(
    () => createRuntime({ classes: [Probe], threads: 2, heap: '4MB', modules: [fileURLToPath(FIXTURES) + '.nope'] }),
    {
      instanceOf: UsageError,
    },
  );
  t.regex(nofile!.message, /could not import/);
  const rt = await probes(2);
  try {
    const fnArg = await t.throwsAsync(() => rt.parallelDo(Probe, 'throwAt', (() => 1) as unknown as number), { instanceOf: UsageError });
    t.regex(fnArg!.message, /argument 0 is a function/);
    // Overlapping passes are refused (they share the pool's control block).
    const a = rt.parallelDo(Probe, 'inc');
    await t.throwsAsync(() => rt.parallelDo(Probe, 'inc'), { instanceOf: UsageError, message: /still running/ });
    await a;
    await assertUsable(t, rt);
  } finally {
    await rt.close();
  }
  await t.throwsAsync(() => rt.parallelDo(Probe, 'inc'), { instanceOf: UsageError, message: /closed/ });
});

test.serial('a class module that creates a runtime when imported is refused in the workers (no thread explosion)', async (t) => {
  t.timeout(HANG_GUARD_MS);
  const selfstart = new URL('./workers.selfstart.js', import.meta.url).href;
  const err = await t.throwsAsync(() => createRuntime({ classes: [Probe], threads: 2, heap: '4MB', modules: [selfstart] }), {
    instanceOf: UsageError,
  });
  t.regex(err!.message, /createRuntime was called in an smmo worker thread/);
});

test.serial('close() during a pass ends it with a UsageError instead of waiting for the workers', async (t) => {
  t.timeout(HANG_GUARD_MS);
  const rt = await probes(2);
  // A worker block takes 32 × 50 ms; the calling thread's share (1 ms per object) ends long before.
  const pass = rt.parallelDo(Probe, 'spinOnWorker', 50_000);
  const closing = new Promise<void>((resolve) => setTimeout(() => void rt.close().then(resolve), 20));
  const t0 = performance.now();
  await t.throwsAsync(pass, { instanceOf: UsageError, message: /closed while the pass was running/ });
  await closing;
  t.true(performance.now() - t0 < 5000, 'no wait for the spinning worker');
});

test.serial('a function init of parallelNew runs on the calling thread, also with workers', async (t) => {
  const rt = await createRuntime({ classes: [Driver, Item], threads: 2, heap: '4MB', modules: [FIXTURES], inlineBlocks: 0 });
  try {
    const order: number[] = [];
    await rt.parallelNew(Driver, 300, (d, i) => {
      d.index = i;
      order.push(i);
    });
    t.deepEqual(
      order,
      Array.from({ length: 300 }, (_, i) => i),
      'indices in order, on this thread',
    );
    t.is(
      rt
        .pool!.work()
        .slice(1)
        .reduce((a, b) => a + b, 0),
      0,
      'no worker took part',
    );
  } finally {
    await rt.close();
  }
});
