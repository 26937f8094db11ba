/**
 * Smoke test of bench/alloc-bound.ts at a tiny size: the shared heap, the independent
 * processes and the one alone each run and report their creates; a bad flag is refused
 * with what was wrong (exit status 2). No figure is compared (tests never depend on speed).
 */
import test from 'ava';
import type { Sample } from '../bench/alloc-bound.js';
import { describeChild, runNode } from './helpers/child.js';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SCRIPT = fileURLToPath(new URL('../bench/alloc-bound.js', import.meta.url));

test('bench/alloc-bound.js: one heap of 2 threads, 2 heaps of one, one alone; every process creates lanes × 1024 per pass', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'smmo-alloc-bound-'));
  try {
    const out = join(dir, 'bound.json');
    const child = await runNode([SCRIPT, '--threads', '2', '--lanes', '60', '--seconds', '0.2', '--rounds', '1', '--out', out]);
    t.is(child.code, 0, describeChild(child));
    t.regex(child.stdout, /round 1: one heap, 2 threads: [\d.]+ M\/s \| 2 processes, a heap each: [\d.]+ M\/s/);
    const r = JSON.parse(readFileSync(out, 'utf8')) as { rounds: { shared: Sample; independent: Sample[]; alone: Sample }[] };
    t.is(r.rounds.length, 1);
    const { shared, independent, alone } = r.rounds[0]!;
    t.deepEqual([shared.threads, shared.lanes], [2, 60]);
    t.deepEqual(
      independent.map((s) => [s.threads, s.lanes]),
      [
        [1, 30],
        [1, 30],
      ],
    );
    t.deepEqual([alone.threads, alone.lanes], [1, 30]);
    for (const s of [shared, ...independent, alone]) {
      t.true(s.creates > 0 && s.creates % (s.lanes * 1024) === 0, `whole passes: ${JSON.stringify(s)}`);
      t.true(s.ms >= 200, 'timed for --seconds at least');
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('bench/alloc-bound.js: lanes that do not split evenly over the processes are refused', async (t) => {
  const child = await runNode([SCRIPT, '--threads', '3', '--lanes', '100']);
  t.is(child.code, 2, describeChild(child));
  t.regex(child.stderr, /--lanes \(100\) must be a multiple of --threads \(3\)/);
});
