/**
 * Debug tiers (runtime/debug.ts): with SMMO_DEBUG=1 the allocator core catches a block
 * whose bitmap bits disagree with its header at the block's next transition; with
 * SMMO_DEBUG=2 validateHeap() runs after every pass; without, neither check runs (the
 * corruption goes unnoticed until validateHeap() is called); a pass stopped by passTimeout
 * ends in its PassTimeoutError, which carries the heap check, at every tier. Each case is a child
 * process, since the tier is read when the modules load.
 */
import test from 'ava';
import { fileURLToPath } from 'node:url';
import { describeChild, runChild } from './helpers/child.js';

const FIXTURE = fileURLToPath(new URL('./debug-tiers.fixture.js', import.meta.url));

async function run(debug: string, what: 'transition' | 'pass' | 'stop'): Promise<{ error: string | null; problems?: string[] }> {
  const r = await runChild(process.execPath, [FIXTURE, what], { env: { ...process.env, SMMO_DEBUG: debug } });
  if (r.code !== 0) throw new Error(describeChild(r));
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as { error: string | null; problems?: string[] };
}

test('SMMO_DEBUG=1: ACTIVE → FULL on a block that lost its allocated[T] bit is a HeapCorruptionError naming both', async (t) => {
  const off = await run('0', 'transition');
  t.is(off.error, null, 'tier 0 does not look');
  const on = await run('1', 'transition');
  t.is(on.error, 'HeapCorruptionError');
  t.regex(on.problems?.[0] ?? '', /transition ACTIVE → FULL \(SMMO_DEBUG check\): its allocated\[T\] bit disagree/);
});

test('SMMO_DEBUG=2: a pass is followed by validateHeap(), which reports the block marked free', async (t) => {
  const one = await run('1', 'pass');
  t.is(one.error, null, 'tier 1 has no transition on this block');
  const two = await run('2', 'pass');
  t.is(two.error, 'HeapCorruptionError');
  t.true(two.problems?.some((p) => /free bit set but type is/.test(p)) ?? false, JSON.stringify(two.problems));
});

test('a pass stopped by passTimeout ends in PassTimeoutError carrying the heap check, also when SMMO_DEBUG=2 validates after every pass', async (t) => {
  for (const debug of ['0', '2']) {
    const r = await run(debug, 'stop');
    t.is(r.error, 'PassTimeoutError', `SMMO_DEBUG=${debug}`);
    t.true(r.problems?.some((p) => /free bit set but type is/.test(p)) ?? false, `SMMO_DEBUG=${debug}: ${JSON.stringify(r.problems)}`);
  }
});
