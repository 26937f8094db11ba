/**
 * test/helpers/seed.ts: the suite's seed is SMMO_SEED when set, else a fixed default (the
 * same on every run); a bad value is an error, not a silent NaN; the variable reaches a
 * test process; fast-check takes the same seed (test/helpers/fc.ts); and no test draws
 * from Math.random, whose seed nobody could replay.
 */
import test from 'ava';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { lastJson, REPO_ROOT, runNode } from './helpers/child.js';
import { FC_SEED, fcParams } from './helpers/fc.js';
import { DEFAULT_TEST_SEED, seedNote, testSeed } from './helpers/seed.js';

test('testSeed(): SMMO_SEED when set, else the fixed default', (t) => {
  t.is(testSeed({}), DEFAULT_TEST_SEED);
  t.is(testSeed({ SMMO_SEED: '' }), DEFAULT_TEST_SEED);
  t.is(testSeed({}), testSeed({}), 'the same on every call');
  t.is(testSeed({ SMMO_SEED: '123' }), 123);
  t.is(testSeed({ SMMO_SEED: '0' }), 0);
  t.is(testSeed({ SMMO_SEED: '4294967295' }), 4294967295);
  for (const bad of ['abc', '-1', '1.5', '4294967296', '0x10', '1e3']) {
    t.throws(() => testSeed({ SMMO_SEED: bad }), { message: `SMMO_SEED must be an integer in 0 … 4294967295, got '${bad}'` }, bad);
  }
  t.is(seedNote(7), 'seed 7 (replay: SMMO_SEED=7)');
});

test('the environment variable reaches a test process, and fast-check takes the same seed', async (t) => {
  const helpers = pathToFileURL(join(REPO_ROOT, 'dist', 'test', 'helpers')).href;
  const script =
    `const s = await import('${helpers}/seed.js'); const f = await import('${helpers}/fc.js');` +
    'console.log(JSON.stringify({ seed: s.testSeed(), fc: f.fcParams(1).seed }));';
  const env = { ...process.env };
  delete env['SMMO_SEED'];
  delete env['SMMO_FC_SEED'];
  const [unset, set, fcOnly] = await Promise.all([
    runNode(['--input-type=module', '-e', script], { env }),
    runNode(['--input-type=module', '-e', script], { env: { ...env, SMMO_SEED: '31337' } }),
    runNode(['--input-type=module', '-e', script], { env: { ...env, SMMO_SEED: '31337', SMMO_FC_SEED: '5' } }),
  ]);
  t.deepEqual(lastJson(unset.stdout), { seed: DEFAULT_TEST_SEED, fc: DEFAULT_TEST_SEED });
  t.deepEqual(lastJson(set.stdout), { seed: 31337, fc: 31337 });
  t.deepEqual(lastJson(fcOnly.stdout), { seed: 31337, fc: 5 }, 'SMMO_FC_SEED overrides it for fast-check alone');
  // In this process: whatever the environment says.
  t.is(fcParams(1).seed, FC_SEED);
  if (process.env['SMMO_FC_SEED'] === undefined) t.is(FC_SEED, testSeed());
});

test('no test draws from Math.random (seeds come from test/helpers/seed.ts)', (t) => {
  const call = ['Math', 'random'].join('.');
  const files: string[] = [];
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(d, e.name));
      else if (e.name.endsWith('.ts')) files.push(join(d, e.name));
    }
  };
  walk(join(REPO_ROOT, 'test'));
  t.true(files.length > 50, `${files.length} files`);
  const offenders = files.filter((f) => readFileSync(f, 'utf8').includes(`${call}(`));
  t.deepEqual(offenders, []);
});
