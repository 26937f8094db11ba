/**
 * bench/models.ts's options: --warmup W runs W more untimed steps in every configuration,
 * so every row times the same steps (the same digests; the recorded warm-up); a bad
 * --steps, --warmup, --size, --runs, --reorder or --threads is refused with exit 2 and a
 * message naming the option.
 */
import test from 'ava';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeChild, runNode } from './helpers/child.js';

const SCRIPT = fileURLToPath(new URL('../bench/models.js', import.meta.url));

interface Out {
  steps: number;
  warmup: number;
  models: { model: string; digestsEqual: boolean; rows: { kind: string; threads: number; digest: number }[] }[];
}

async function run(args: string[]): Promise<Out> {
  const dir = mkdtempSync(join(tmpdir(), 'smmo-bench-models-'));
  try {
    const out = join(dir, 'm.json');
    const r = await runNode([SCRIPT, '--model', 'epidemic', '--size', '24', '--runs', '1', '--threads', '1,2', '--out', out, ...args]);
    if (r.code !== 0) throw new Error(describeChild(r));
    return JSON.parse(readFileSync(out, 'utf8')) as Out;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('--warmup: every configuration runs the same steps; the warm-up moves the window', async (t) => {
  const warm = await run(['--steps', '3', '--warmup', '2']);
  t.is(warm.warmup, 2);
  t.is(warm.steps, 3);
  const rows = warm.models[0]!.rows;
  t.deepEqual(
    rows.map((r) => `${r.kind}:${r.threads}`),
    ['plain:1', 'interpreted:1', 'compiled:1', 'compiled:2'],
  );
  t.true(warm.models[0]!.digestsEqual);
  t.is(new Set(rows.map((r) => r.digest)).size, 1);
  // Five steps in all: the same state as five steps without a warm-up, not as three.
  const five = await run(['--steps', '5']);
  const three = await run(['--steps', '3']);
  t.is(five.warmup, 0);
  t.is(rows[0]!.digest, five.models[0]!.rows[0]!.digest);
  t.not(rows[0]!.digest, three.models[0]!.rows[0]!.digest);
});

test('a bad --steps, --warmup, --size, --runs, --reorder or --threads is refused with exit 2', async (t) => {
  for (const [flag, value, says] of [
    ['--warmup', '-1', /--warmup -1: expected a whole number ≥ 0 \(steps\)/],
    ['--warmup', '1.5', /--warmup 1\.5: expected a whole number ≥ 0/],
    ['--steps', '1', /--steps 1: expected a whole number ≥ 2 \(the first step is not timed\)/],
    ['--size', 'abc', /--size abc: expected a whole number ≥ 1 \(cells per side\)/],
    ['--runs', '0', /--runs 0: expected a whole number ≥ 1/],
    ['--reorder', '0', /--reorder 0: expected a whole number ≥ 1 \(steps\)/],
    ['--threads', '1,x', /--threads 1,x: expected whole numbers ≥ 1, separated by commas/],
  ] as const) {
    const r = await runNode([SCRIPT, '--model', 'epidemic', flag, value, ...(flag === '--size' ? [] : ['--size', '24'])]);
    t.is(r.code, 2, describeChild(r));
    t.regex(r.stderr, says);
  }
});
