/**
 * `smmo run <app> --defrag N` (cli/defrag.ts): the integer apps' digests are the same with
 * and without it (game-of-life on one thread, wa-tor on two: the workers' allocator hints
 * may name blocks that defrag retired), --check still compares every object by handle,
 * --json reports what it did, the flags' bad values
 * and combinations are usage errors (exit 2); --json's defrag.threads is the run's --threads (parallelDefrag), an app that refuses --defrag says why, and
 * one whose results may change says so; with --backend wasm --defrag-lanes wasm, --json's defrag.lanes names the WebAssembly rewrite.
 */
import test from 'ava';
import { describeChild, lastJson, smmo } from './helpers/child.js';

interface DefragJson {
  n: number;
  threads: number;
  every?: number;
  above?: number;
  classes: string[];
  calls: number;
  passes: number;
  objectsMoved: number;
  blocksFreed: number;
  ms: Record<string, number>;
  fragmentation: { firstBefore: number; lastAfter: number; meanBefore: number; meanAfter: number };
  results: string;
  lanes: { copy: string; rewrite: string };
}

const GOL = ['run', 'game-of-life', '--width', '160', '--height', '160', '--iterations', '24', '--json'];

test('game-of-life: the digest with --defrag equals the one without; --json reports the defragmentation', async (t) => {
  const [plain, every, sparse, check] = await Promise.all([
    smmo(GOL),
    smmo([...GOL, '--defrag', '2']),
    smmo([...GOL, '--defrag', '3', '--defrag-every', '5', '--checked']),
    smmo([...GOL, '--defrag', '2', '--check']),
  ]);
  for (const r of [plain, every, sparse, check]) t.is(r.code, 0, describeChild(r));
  // --check defragments the reference on the same schedule: every object compares by handle.
  t.is((lastJson(check.stdout)['check'] as { ok: boolean }).ok, true);
  const digest = lastJson(plain.stdout)['digest'];
  t.is(lastJson(every.stdout)['digest'], digest);
  t.is(lastJson(sparse.stdout)['digest'], digest);
  t.is(lastJson(plain.stdout)['defrag'], undefined);
  const d = lastJson(every.stdout)['defrag'] as DefragJson;
  t.is(d.n, 2);
  t.is(d.threads, 1);
  t.deepEqual(d.classes.sort(), ['Alive', 'Candidate']);
  t.is(d.calls, 23, 'after every iteration but the last');
  t.true(d.passes >= d.calls && d.objectsMoved > 0 && d.blocksFreed > 0);
  t.true(d.fragmentation.lastAfter < d.fragmentation.firstBefore);
  t.true(d.fragmentation.meanAfter < d.fragmentation.meanBefore);
  for (const k of ['scan', 'copy', 'rewrite', 'update', 'total']) t.true(d.ms[k]! >= 0, k);
  t.is(d.results, 'exact');
  const s = lastJson(sparse.stdout)['defrag'] as DefragJson;
  t.is(s.every, 5);
  t.is(s.calls, 4, 'after iterations 5, 10, 15, 20');
  t.is(lastJson(sparse.stdout)['heapValidated'], true);
});

test('wa-tor on two threads: the digest with --defrag (and --defrag-above) equals the one without', async (t) => {
  const args = ['run', 'wa-tor', '--width', '96', '--height', '96', '--iterations', '30', '--threads', '2', '--json'];
  const [plain, d1, d2] = await Promise.all([
    smmo(args),
    smmo([...args, '--defrag', '1']),
    // 15 %: well above what a defragmentation leaves here (6–10 %), so the run both skips calls and makes
    // them on any schedule of the two threads (at 5 % some schedules stay above it after every iteration).
    smmo([...args, '--defrag', '4', '--defrag-above', '0.15']),
  ]);
  for (const r of [plain, d1, d2]) t.is(r.code, 0, describeChild(r));
  const digest = lastJson(plain.stdout)['digest'];
  t.is(lastJson(d1.stdout)['digest'], digest);
  t.is(lastJson(d2.stdout)['digest'], digest);
  const a = lastJson(d1.stdout)['defrag'] as DefragJson;
  t.is(a.threads, 2, "rt.parallelDefrag on the run's two threads");
  t.deepEqual(a.classes.sort(), ['Fish', 'Shark']);
  t.true(a.objectsMoved > 0);
  const b = lastJson(d2.stdout)['defrag'] as DefragJson;
  t.is(b.above, 0.15);
  t.true(b.calls > 0 && b.calls < 29, `${b.calls} calls: only when above 15 %`);
  // Every call was made above the threshold, so their mean fragmentation before is too.
  t.true(b.fragmentation.meanBefore > 0.15, `mean fragmentation before a call ${b.fragmentation.meanBefore}`);
});

test("--backend wasm --defrag-lanes wasm (one and two threads): the rewrite on WebAssembly lanes, --json's defrag.lanes says so; the digest of the run without --defrag", async (t) => {
  const args = ['run', 'wa-tor', '--width', '96', '--height', '96', '--iterations', '30', '--json'];
  const [plain, plain2, ts, wasm1, wasm2] = await Promise.all([
    smmo(args),
    smmo([...args, '--threads', '2']),
    smmo([...args, '--defrag', '1']),
    smmo([...args, '--defrag', '1', '--backend', 'wasm', '--defrag-lanes', 'wasm']),
    smmo([...args, '--defrag', '1', '--backend', 'wasm', '--defrag-lanes', 'wasm', '--threads', '2']),
  ]);
  for (const r of [plain, plain2, ts, wasm1, wasm2]) t.is(r.code, 0, describeChild(r));
  const d = (r: typeof ts): DefragJson => lastJson(r.stdout)['defrag'] as DefragJson;
  t.deepEqual(d(ts).lanes, { copy: 'ts', rewrite: 'ts' });
  for (const [r, p] of [
    [wasm1, plain],
    [wasm2, plain2],
  ] as const) {
    t.is(lastJson(r.stdout)['digest'], lastJson(p.stdout)['digest']);
    t.deepEqual(d(r).lanes, { copy: 'ts', rewrite: 'wasm' });
    t.true(d(r).objectsMoved > 0);
  }
  // One thread: the same calls and moves as backend 'ts' (the same heap, only the lanes differ).
  t.is(d(wasm1).objectsMoved, d(ts).objectsMoved);
  t.is(d(wasm1).passes, d(ts).passes);
});

test('--defrag flags: bad values and combinations are usage errors; refusals and warnings', async (t) => {
  const base = ['run', 'game-of-life', '--width', '32', '--height', '32', '--iterations', '2'];
  const cases: [string[], RegExp][] = [
    [['--defrag', '0'], /--defrag must be an integer in 1 … 1024/],
    [['--defrag', '2.5'], /--defrag must be an integer/],
    [['--defrag-every', '3'], /--defrag-every 3 says when to defragment; add --defrag N/],
    [['--defrag-above', '0.3'], /add --defrag N/],
    [['--defrag', '2', '--defrag-every', '3', '--defrag-above', '0.2'], /not both/],
    [['--defrag', '2', '--defrag-above', '1.5'], /--defrag-above must be a fraction between 0 and 1/],
    [['--defrag', '2', '--defrag-above', 'x'], /--defrag-above must be a finite number/],
    [['--defrag-lanes', 'wasm'], /--defrag-lanes wasm says how to defragment; add --defrag N/],
    [
      ['--defrag', '2', '--defrag-lanes', 'wasm'],
      /--defrag-lanes wasm runs the rewrite on the WebAssembly lanes of --backend wasm; add --backend wasm/,
    ],
    [['--defrag', '2', '--defrag-lanes', 'gpu', '--backend', 'wasm'], /--defrag-lanes/],
    [
      ['--defrag', '2', '--check-every', '1', '--backend', 'wasm'],
      /--check-every runs its reference without defragmenting.*use --check with --defrag/,
    ],
  ];
  const runs = await Promise.all(cases.map(([extra]) => smmo([...base, ...extra])));
  runs.forEach((r, i) => {
    t.is(r.code, 2, describeChild(r));
    t.regex(r.stderr, cases[i]![1]);
  });
  // barnes-hut takes part since it remaps its root (test/barnes-hut-defrag.test.ts).
  const [ls, coll] = await Promise.all([
    smmo(['run', 'linux-scalability', '--iterations', '1', '--defrag', '2']),
    smmo(['run', 'collision', '--bodies', '300', '--iterations', '3', '--defrag', '2', '--json']),
  ]);
  t.is(ls.code, 2, describeChild(ls));
  t.regex(ls.stderr, /nothing to defragment/);
  t.is(coll.code, 0, describeChild(coll));
  const warnings = lastJson(coll.stdout)['warnings'] as string[];
  t.true(
    warnings.some((w) => /digests may differ from a run without it: collision sums forces over the other bodies in handle order/.test(w)),
  );
});
