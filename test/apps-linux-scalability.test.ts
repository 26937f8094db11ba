/**
 * linux-scalability (apps/linux-scalability): after every repetition no payload object is
 * left and validateHeap() passes; the allocation count is exact (lanes × k × rounds per
 * pass, also for a k that does not divide 1024); the digest shows objects left over; the
 * same digest on 1, 2 and 4 threads; --sweep runs one pass per k = 1 … 1024; bad --k and
 * --lanes are typed errors (UsageError; on the command line exit 2); the CLI (--json
 * results, --sweep's table, --backend wasm, --dump/--init).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import {
  allocations,
  Allocator8,
  Blob8,
  CLASSES,
  digest,
  heapFor,
  init,
  MAX_K,
  results,
  roundsFor,
  step,
  sweepKs,
} from '../apps/linux-scalability/linux.js';
import type { AppParams } from '../apps/app.js';
import { WITHOUT_BASELINES } from '../apps/baselines/index.js';
import { planCases, SIZES } from '../bench/apps.js';
import { createRuntime, UsageError, type Runtime } from '../index.js';
import { MAX_HEAP_BYTES } from '../runtime/layout.js';
import { describeChild, lastJson, smmo } from './helpers/child.js';

const MODULE = new URL('../apps/linux-scalability/index.js', import.meta.url);

async function runtime(params: AppParams, threads = 1): Promise<Runtime> {
  return createRuntime({
    classes: CLASSES,
    heap: heapFor(params),
    threads,
    modules: [MODULE],
    checked: threads === 1,
    ...(threads > 1 ? { startTimeoutMs: 120_000 } : {}),
  });
}

test('rounds: floor(1024 / k), at least 1; the sweep is k = 1, 2, 4, … 1024', (t) => {
  t.is(roundsFor(1), 1024);
  t.is(roundsFor(4), 256);
  t.is(roundsFor(3), 341);
  t.is(roundsFor(1000), 1);
  t.is(roundsFor(1024), 1);
  t.deepEqual(sweepKs(), [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]);
  t.is(MAX_K, 1024);
});

test('the heap holds lanes × k payload objects with room, up to the bounds', (t) => {
  for (const p of [
    { k: 1024, lanes: 1024 },
    { k: 1024, lanes: 16384 },
    { k: 4, lanes: 1, sweep: 1 },
  ]) {
    const live = p.lanes * (p.sweep ? MAX_K : p.k);
    const bytes = heapFor(p);
    t.true(bytes >= 64 * 2 ** 20 + live * 64 * 1.2, JSON.stringify(p));
    t.true(bytes <= MAX_HEAP_BYTES, JSON.stringify(p));
  }
  t.is(heapFor({ k: 1, lanes: 1000, sweep: 1 }), heapFor({ k: 1024, lanes: 1000 }), '--sweep: sized for k = 1024');
});

test('k=4, 2 threads: no object left and validateHeap() after every repetition; the allocation count is exact', async (t) => {
  const lanes = 100;
  const params = { k: 4, lanes, sweep: 0 };
  const rt = await runtime(params, 2);
  try {
    await init(rt, params);
    t.is(rt.count(Allocator8), lanes);
    t.is(rt.count(Blob8), 0);
    t.is(rt.inlineBlocks, 0, 'every pass goes to the workers');
    for (let rep = 1; rep <= 3; rep++) {
      await step(rt);
      t.is(rt.count(Blob8), 0, `repetition ${rep}: objects left`);
      t.notThrows(() => rt.validateHeap(), `repetition ${rep}`);
      t.is(allocations(rt), lanes * 4 * 256 * rep, `repetition ${rep}`);
      t.is(digest(rt), lanes * 1024 * rep);
    }
    // Every lane made its own share: 3 × 1024 creates each.
    rt.deviceDo(Allocator8, (a) => {
      if (a.allocated !== 3 * 1024) t.fail(`lane ${a.handle}: ${a.allocated}`);
    });
    const [r] = results(rt);
    t.is(r!.k, 4);
    t.is(r!.rounds, 256);
    t.is(r!.allocationsPerPass, lanes * 1024);
    t.is(r!.repetitions.length, 3);
    t.true(r!.nsPerAllocation > 0 && Number.isFinite(r!.nsPerAllocation));
    t.true(Math.abs(r!.allocationsPerSecond * r!.nsPerAllocation - 1e9) < 1e-3);
  } finally {
    await rt.close();
  }
});

test('a k that does not divide 1024 (k=3: 341 rounds) counts exactly; the digest is the same on 1, 2 and 4 threads', async (t) => {
  const params = { k: 3, lanes: 70, sweep: 0 };
  const digests: number[] = [];
  for (const threads of [1, 2, 4]) {
    const rt = await runtime(params, threads);
    try {
      await init(rt, params);
      await step(rt);
      await step(rt);
      t.is(rt.count(Blob8), 0);
      rt.validateHeap();
      digests.push(digest(rt));
    } finally {
      await rt.close();
    }
  }
  t.deepEqual(digests, [70 * 3 * 341 * 2, 70 * 3 * 341 * 2, 70 * 3 * 341 * 2]);
});

test('the digest shows payload objects left over (objects · 2³² + creates)', async (t) => {
  const params = { k: 2, lanes: 10, sweep: 0 };
  const rt = await runtime(params);
  try {
    await init(rt, params);
    await step(rt);
    t.is(digest(rt), 10 * 1024);
    rt.context.create(Blob8);
    rt.context.create(Blob8);
    t.is(digest(rt), 2 * 2 ** 32 + 10 * 1024);
  } finally {
    await rt.close();
  }
});

test('--sweep: one pass per k = 1 … 1024 in every repetition, lanes × 1024 creates each', async (t) => {
  const params = { k: MAX_K, lanes: 20, sweep: 1 };
  const rt = await runtime(params, 2);
  try {
    await init(rt, params);
    await step(rt);
    t.is(rt.count(Blob8), 0);
    rt.validateHeap();
    await step(rt);
    rt.validateHeap();
    t.is(allocations(rt), 20 * 1024 * 11 * 2);
    const rs = results(rt);
    t.deepEqual(
      rs.map((r) => r.k),
      sweepKs(),
    );
    for (const r of rs) {
      t.is(r.allocationsPerPass, 20 * 1024);
      t.is(r.repetitions.length, 2);
    }
  } finally {
    await rt.close();
  }
});

test('bad --k and --lanes are UsageErrors', async (t) => {
  for (const p of [{ k: 0 }, { k: -1 }, { k: 1025 }, { k: 2.5 }, { lanes: 0 }, { lanes: 16385 }]) {
    const params = { k: 4, lanes: 4, ...p };
    const rt = await runtime({ k: 4, lanes: 4 });
    try {
      const e = await t.throwsAsync(init(rt, params), { instanceOf: UsageError }, JSON.stringify(p));
      t.regex(e?.message ?? '', p.k !== undefined ? /--k must be an integer in 1 … 1024/ : /--lanes must be an integer in 1 … 16384/);
    } finally {
      await rt.close();
    }
  }
  await t.throwsAsync(step({} as Runtime), { instanceOf: UsageError, message: /init .* has not run/ });
});

test('smmo run linux-scalability: bad --k is exit 2 with the range', async (t) => {
  const runs = await Promise.all(
    [['--k', '0'], ['--k=-4'], ['--k', '-4'], ['--k', '1025'], ['--lanes', '16385']].map((a) => smmo(['run', 'linux-scalability', ...a])),
  );
  for (const r of runs) {
    t.is(r.code, 2, describeChild(r));
    t.notRegex(r.stderr, /\n\s+at /, 'no stack trace');
  }
  t.regex(runs[0]!.stderr, /--k must be an integer in 1 … 1024, got '0'/);
  t.regex(runs[1]!.stderr, /--k must be an integer in 1 … 1024, got '-4'/);
  t.regex(runs[2]!.stderr, /--k needs a value but is followed by '-4'/);
  t.regex(runs[3]!.stderr, /--k must be an integer in 1 … 1024, got '1025'/);
  t.regex(runs[4]!.stderr, /--lanes must be an integer in 1 … 16384/);
});

test('smmo run linux-scalability: --json results, --sweep table, --backend wasm, --dump/--init', async (t) => {
  const work = mkdtempSync(join(tmpdir(), 'smmo-linux-'));
  try {
    const base = ['run', 'linux-scalability', '--lanes', '64', '--threads', '2'];
    const dir = join(work, 'state');
    const [one, sweep, sweepJson, wasm, half, full] = await Promise.all([
      smmo([...base, '--k', '4', '--iterations', '3', '--json', '--checked']),
      smmo([...base, '--sweep', '--iterations', '2']),
      smmo([...base, '--sweep', '--iterations', '1', '--json']),
      smmo([...base, '--k', '4', '--iterations', '3', '--json', '--backend', 'wasm']),
      smmo([...base, '--k', '8', '--iterations', '2', '--json', '--dump', dir]),
      smmo([...base, '--k', '8', '--iterations', '4', '--json']),
    ]);
    for (const r of [one, sweep, sweepJson, wasm, half, full]) t.is(r.code, 0, describeChild(r));
    const j = lastJson(one.stdout);
    t.is(j['digest'], 64 * 1024 * 3);
    t.deepEqual(j['objects'], { Blob8: 0, Allocator8: 64 });
    t.true(j['heapValidated']);
    t.deepEqual(j['kernels'], { 'Allocator8.allocFree': 'ts' });
    t.true((j['compiled'] as Record<string, { compiled: boolean }>)['Allocator8.allocFree']?.compiled);
    const res = j['results'] as {
      lanes: number;
      k: number;
      sweep: boolean;
      perK: { k: number; nsPerAllocation: number; allocationsPerSecond: number }[];
    };
    t.is(res.lanes, 64);
    t.is(res.k, 4);
    t.false(res.sweep);
    t.is(res.perK.length, 1);
    t.true(res.perK[0]!.nsPerAllocation > 0);

    // The table: a header, then one row per k, in order.
    const rows = [...sweep.stdout.matchAll(/^\s+(\d+)\s+(\d+\.\d)\s+(\d+\.\d\d)$/gm)].map((m) => Number(m[1]));
    t.deepEqual(rows, sweepKs(), sweep.stdout);
    t.regex(sweep.stdout, /^sweep\s+k\s+ns\/alloc\s+M allocs\/s/m);
    t.regex(sweep.stdout, /^digest\s+1441792$/m); // 64 lanes × 1024 × 11 k × 2
    const sj = lastJson(sweepJson.stdout)['results'] as { sweep: boolean; k: null; perK: { k: number }[] };
    t.true(sj.sweep);
    t.is(sj.k, null);
    t.deepEqual(
      sj.perK.map((r) => r.k),
      sweepKs(),
    );

    const w = lastJson(wasm.stdout);
    t.is(w['backend'], 'wasm');
    t.is(w['digest'], j['digest']);
    t.deepEqual(w['kernels'], { 'Allocator8.allocFree': 'ts' }, 'on --backend wasm the pass runs as TypeScript, and says so');

    const resumed = await smmo(['run', 'linux-scalability', '--init', dir, '--iterations', '2', '--threads', '2', '--json']);
    t.is(resumed.code, 0, describeChild(resumed));
    t.is(lastJson(resumed.stdout)['digest'], lastJson(full.stdout)['digest']);
    t.is(lastJson(full.stdout)['digest'], 64 * 1024 * 4);
    t.is((lastJson(resumed.stdout)['results'] as { k: number })['k'], 8, 'k comes from the state file');
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});

test('smmo bench: linux-scalability at both sizes; its AOS/SOA cases are skipped with the reason, not silently left out', async (t) => {
  t.deepEqual(SIZES.small['linux-scalability']?.params, { lanes: 2048, k: 64 });
  t.deepEqual(SIZES.medium['linux-scalability']?.params, { lanes: 8192, k: 64 });
  const { cases, skipped } = await planCases({
    apps: ['linux-scalability'],
    backends: ['ts', 'wasm'],
    threads: [1, 2],
    baselines: ['aos', 'soa'],
    size: 'small',
    params: {},
    iterations: undefined,
    warmup: 1,
    repeat: 1,
    seed: 42,
    timeoutMs: 60_000,
  });
  t.deepEqual(
    cases.map((c) => `${c.impl} ${c.backend} ${c.threads}`),
    ['smmo ts 1', 'smmo ts 2'],
  );
  t.deepEqual(cases[0]!.params, { k: 64, lanes: 2048 }); // --sweep has no default: off
  const reason = WITHOUT_BASELINES.get('linux-scalability')!;
  t.deepEqual(
    skipped.filter((s) => s.c.impl !== 'smmo').map((s) => s.why),
    [`linux-scalability has no AOS baseline: ${reason}`, `linux-scalability has no SOA baseline: ${reason}`],
  );
});

test('--sweep survives --dump/--init: the state says sweep = 1, the resumed run sweeps again', async (t) => {
  const work = mkdtempSync(join(tmpdir(), 'smmo-linux-'));
  try {
    const dir = join(work, 'state');
    const first = await smmo(['run', 'linux-scalability', '--lanes', '16', '--sweep', '--iterations', '1', '--dump', dir, '--quiet']);
    t.is(first.code, 0, describeChild(first));
    const [resumed, clash] = await Promise.all([
      smmo(['run', 'linux-scalability', '--init', dir, '--iterations', '1', '--json']),
      smmo(['run', 'linux-scalability', '--init', dir, '--k', '4']),
    ]);
    t.is(resumed.code, 0, describeChild(resumed));
    const j = lastJson(resumed.stdout);
    t.deepEqual(j['params'], { k: 1024, lanes: 16, sweep: 1 });
    t.is(j['digest'], 16 * 1024 * 11 * 2);
    t.is((j['results'] as { perK: unknown[] }).perK.length, 11);
    t.is(clash.code, 2, describeChild(clash));
    t.regex(clash.stderr, /--k 4 disagrees with the state/);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});
