/**
 * Match keys (App.matchKeys, runtime/compare.ts): the agents an app creates on several
 * threads get their handles in the order the threads allocated, so `--check` against the
 * one-thread reference, and `smmo compare` of a one-thread and a two-thread state, pair
 * them by their cell instead of by rank — and pass, where matching by rank failed.
 */
import test from 'ava';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeChild, lastJson, smmo } from './helpers/child.js';

// Which agent classes end up with other handles depends on how the two threads interleave
// (a class whose handles happen to agree is matched by handle): the tests require that no
// agent class is matched by rank, and that the run passes.
test('run --check on two threads: wa-tor and game-of-life pass, their agents never matched by rank', async (t) => {
  const grid = ['--width', '128', '--height', '128', '--iterations', '10', '--threads', '2', '--check', '--json'];
  const [wa, gol] = await Promise.all([smmo(['run', 'wa-tor', ...grid]), smmo(['run', 'game-of-life', ...grid])]);
  for (const [r, keys] of [
    [wa, ['Fish by position', 'Shark by position']],
    [gol, ['Alive by cellId', 'Candidate by cellId']],
  ] as const) {
    t.is(r.code, 0, describeChild(r));
    const check = lastJson(r.stdout)['check'] as { ok: boolean; keyed: string[]; rank: string[] };
    t.true(check.ok);
    t.deepEqual(
      check.rank.filter((c) => c !== 'Cell'),
      [],
      'only the cells (never created in a run) by rank',
    );
    for (const k of check.keyed) t.true((keys as readonly string[]).includes(k), k);
    t.log(`keyed: ${check.keyed.join(', ') || 'none (the handles agreed)'}`);
  }
});

test('run --check on two threads: barnes-hut passes, its TreeNodes matched by their squares', async (t) => {
  const r = await smmo(['run', 'barnes-hut', '--bodies', '2000', '--iterations', '6', '--threads', '2', '--check', '--json']);
  t.is(r.code, 0, describeChild(r));
  const check = lastJson(r.stdout)['check'] as { ok: boolean; keyed: string[]; rank: string[] };
  t.true(check.ok);
  t.deepEqual(check.rank, []);
  for (const k of check.keyed) t.is(k, 'TreeNode by p1X, p1Y, p2X, p2Y');
});

test('smmo compare: a one-thread and a two-thread state of wa-tor are equal, agents matched by key', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'smmo-keys-'));
  try {
    const common = ['run', 'wa-tor', '--width', '128', '--height', '128', '--iterations', '10', '--quiet'];
    const [one, two] = await Promise.all([
      smmo([...common, '--dump', join(dir, 'one')]),
      smmo([...common, '--threads', '2', '--dump', join(dir, 'two')]),
    ]);
    t.is(one.code, 0, describeChild(one));
    t.is(two.code, 0, describeChild(two));
    const cmp = await smmo(['compare', join(dir, 'one'), join(dir, 'two'), '--json']);
    t.is(cmp.code, 0, describeChild(cmp));
    const report = lastJson(cmp.stdout) as { ok: boolean; classes: Record<string, { matchedBy: string }> };
    t.true(report.ok);
    for (const c of ['Fish', 'Shark']) t.true(['key', 'handle'].includes(report.classes[c]!.matchedBy), c);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
