/**
 * Smoke test of the layout probe (bench/layout.ts) at a tiny size: it runs, every variant
 * counts the same live neighbours (the probe throws otherwise), and it prints each.
 */
import test from 'ava';
import { fileURLToPath } from 'node:url';
import { describeChild, runNode } from './helpers/child.js';

test('bench/layout.js: every layout counts the same neighbours, each printed', async (t) => {
  const script = fileURLToPath(new URL('../bench/layout.js', import.meta.url));
  const child = await runNode([script, '--size', '96x64', '--steps', '3', '--repeats', '1', '--machine', 'test']);
  t.is(child.code, 0, describeChild(child));
  const head = /after 3 steps: (\d+) candidates, 6144 cells, (\d+) live neighbours counted; machine: test/.exec(child.stdout);
  t.truthy(head, child.stdout);
  t.true(Number(head![1]) > 0 && Number(head![2]) > 0, 'candidates and neighbours found');
  for (const name of [
    'heap, fused',
    'heap, handle',
    'dense',
    'blocked 176',
    'blocked 48',
    'dense, sorted',
    'Candidate.prepare (compiled pass)',
  ]) {
    t.regex(child.stdout, new RegExp(`\\n  ${name.replace(/[().]/g, '\\$&')} +\\d+\\.\\d ms +\\d+\\.\\d\\d× dense`), name);
  }
});
