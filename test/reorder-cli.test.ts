/**
 * `smmo run <app> --reorder K` and `smmo bench --reorder K` (cli/reorder.ts, bench/apps.ts):
 * wa-tor's and game-of-life's digests are the same with and without it (one thread and
 * two), --check still compares every object by handle (its reference reorders on the same
 * schedule), --json reports the calls (after every K-th iteration but the last), an app
 * without App.reorder refuses the flag, --check-every refuses it, and bad values are usage
 * errors (exit 2); the bench adds a reorder row with the same digest.
 */
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import type { ReorderReport } from '../cli/reorder.js';
import { describeChild, lastJson, smmo } from './helpers/child.js';

type ReorderJson = ReorderReport;

const WATOR = ['run', 'wa-tor', '--width', '120', '--height', '100', '--iterations', '14', '--json'];
const GOL = ['run', 'game-of-life', '--width', '150', '--height', '130', '--iterations', '21', '--json'];

test('wa-tor and game-of-life: the digest with --reorder equals the one without; --json reports the calls', async (t) => {
  const [wPlain, wSorted, w2, wCheck, gPlain, gSorted, gCheck] = await Promise.all([
    smmo(WATOR),
    smmo([...WATOR, '--reorder', '3']),
    smmo([...WATOR, '--reorder', '2', '--threads', '2', '--checked']),
    smmo([...WATOR, '--reorder', '4', '--check']),
    smmo(GOL),
    smmo([...GOL, '--reorder', '5']),
    smmo([...GOL, '--reorder', '1', '--check']),
  ]);
  for (const r of [wPlain, wSorted, w2, wCheck, gPlain, gSorted, gCheck]) t.is(r.code, 0, describeChild(r));
  for (const [plain, others] of [
    [wPlain, [wSorted, w2, wCheck]],
    [gPlain, [gSorted, gCheck]],
  ] as const) {
    const digest = lastJson(plain.stdout)['digest'];
    for (const o of others) t.is(lastJson(o.stdout)['digest'], digest);
    t.is(lastJson(plain.stdout)['reorder'], undefined);
  }
  for (const c of [wCheck, gCheck]) t.is((lastJson(c.stdout)['check'] as { ok: boolean }).ok, true);
  t.is(lastJson(w2.stdout)['heapValidated'], true);
  const w = lastJson(wSorted.stdout)['reorder'] as ReorderJson;
  t.is(w.every, 3);
  t.is(w.by, 'position');
  t.deepEqual([...w.classes].sort(), ['Fish', 'Shark']);
  t.is(w.calls, 4, 'after iterations 3, 6, 9, 12 (not 14: the last)');
  t.true(w.objectsMoved > 0);
  for (const k of ['sort', 'copy', 'rewrite', 'total'] as const) t.true(w.ms[k] >= 0, k);
  const g = lastJson(gSorted.stdout)['reorder'] as ReorderJson;
  t.is(g.by, 'cellId');
  t.deepEqual([...g.classes].sort(), ['Alive', 'Candidate']);
  t.is(g.calls, 4, 'after iterations 5, 10, 15, 20');
  t.is((lastJson(gCheck.stdout)['reorder'] as ReorderJson).calls, 20, 'after every iteration but the last');
});

test('--reorder: refused by an app without App.reorder, with --check-every, and for bad values (exit 2)', async (t) => {
  const cases: [string[], RegExp][] = [
    [
      ['run', 'nbody', '--iterations', '2', '--reorder', '1'],
      /--reorder: nbody does not say what to order its objects by; run it without --reorder/,
    ],
    [
      ['run', 'wa-tor', '--width', '64', '--height', '64', '--iterations', '4', '--threads', '2', '--check-every', '1', '--reorder', '2'],
      /--check-every runs its reference without reordering it/,
    ],
    [['run', 'wa-tor', '--iterations', '4', '--reorder', '0'], /--reorder must be an integer in 1 … 1000000, got '0'/],
    [['run', 'wa-tor', '--iterations', '4', '--reorder', 'x'], /--reorder must be an integer/],
  ];
  const results = await Promise.all(cases.map(([args]) => smmo(args)));
  results.forEach((r, i) => {
    t.is(r.code, 2, describeChild(r));
    t.regex(r.stderr, cases[i]![1]);
  });
});

test('smmo bench --reorder: a reorder row beside each smmo case of wa-tor, the same digest; apps without it say so', async (t) => {
  const out = join(tmpdir(), `smmo-bench-reorder-${process.pid}.json`);
  const r = await smmo([
    'bench',
    '--apps',
    'wa-tor,nbody',
    '--backends',
    'ts',
    '--threads',
    '1',
    '--baselines',
    'none',
    '--wa-tor-size',
    '96x80',
    '--nbody-bodies',
    '200',
    '--iterations',
    '6',
    '--warmup',
    '1',
    '--repeat',
    '1',
    '--reorder',
    '2',
    '--quiet',
    '--out',
    out,
    '--plot',
    out.replace(/json$/, 'svg'),
  ]);
  t.is(r.code, 0, describeChild(r));
  const rep = JSON.parse(readFileSync(out, 'utf8')) as {
    rows: { app: string; label: string; reorder?: number; digest?: number; digestAgrees?: boolean; skipped?: string }[];
  };
  const wator = rep.rows.filter((x) => x.app === 'wa-tor');
  t.deepEqual(
    wator.map((x) => x.label),
    ['smmo ts ×1', 'smmo ts ×1 reorder 2'],
  );
  t.is(wator[1]!.reorder, 2);
  t.is(wator[1]!.digest, wator[0]!.digest);
  t.is(wator[1]!.digestAgrees, true);
  const nbody = rep.rows.find((x) => x.app === 'nbody' && x.label === 'smmo ts ×1 reorder 2');
  t.regex(nbody?.skipped ?? '', /nbody does not take part in --reorder/);
});
