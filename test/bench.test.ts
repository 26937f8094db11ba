/**
 * Smoke test of the single-thread benchmark (bench/single.ts) at a tiny size: it runs,
 * writes its JSON, and its variants compute the same final state.
 */
import test from 'ava';
import { describeChild, runNode } from './helpers/child.js';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

test('bench/single.js: runs, agrees across representations, writes its JSON', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'smmo-bench-'));
  try {
    const out = join(dir, 'single.json');
    const script = fileURLToPath(new URL('../bench/single.js', import.meta.url));
    const args = ['--expose-gc', script, '--objects', '5000', '--runs', '1', '--passes', '1', '--out', out];
    const child = await runNode(args);
    t.is(child.code, 0, describeChild(child));
    const stdout = child.stdout;
    t.regex(stdout, /machine: .+, \d+ cores/);
    t.regex(stdout, /final states agree: yes/);
    const r = JSON.parse(readFileSync(out, 'utf8')) as {
      statesAgree: boolean;
      bytesPerObject: { smmo: number; smmoData: number; typedArrays: number };
      doAll: { objects: number; variants: Record<string, { cpu: { median: number }; wall: { median: number } }> };
      allocFree: { createDestroy: { cpu: { median: number } }; parallelNew: { cpu: { median: number } } };
    };
    t.true(r.statesAgree);
    t.is(r.doAll.objects, 5000);
    t.deepEqual(Object.keys(r.doAll.variants).sort(), [
      'plain JS objects',
      'plain JS, TS parameter properties',
      'smmo parallelDo',
      'smmo parallelDo, checked mode',
      'typed arrays (hand-written SOA)',
    ]);
    // 5000 objects of 7 × f32 at 32 per block: 157 blocks of 912 bytes.
    t.is(r.bytesPerObject.smmoData, (157 * 912) / 5000);
    t.true(r.bytesPerObject.smmo > r.bytesPerObject.smmoData);
    t.true(r.allocFree.createDestroy.cpu.median > 0 && r.allocFree.parallelNew.cpu.median > 0);
    for (const v of Object.values(r.doAll.variants)) t.true(v.cpu.median > 0 && v.wall.median > 0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
