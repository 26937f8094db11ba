/**
 * test/helpers/child.ts: a child process that outlives its limit is killed, and the
 * assertion message says so — who killed it, after how long, why — instead of a bare exit
 * code; a child that ends on its own is described by its exit code and output. smmo() and
 * lastJson(), the CLI helpers every CLI test uses.
 */
import test from 'ava';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describeChild, lastJson, REPO_ROOT, runNode, smmo } from './helpers/child.js';

test('a child killed at its limit is described as killed by the test, with its output so far', async (t) => {
  // Never ends on its own; whether it printed before the kill depends on the machine's load.
  const r = await runNode(['-e', "console.log('started'); setInterval(() => {}, 1000);"], { limitMs: 300 });
  t.true(r.killed);
  t.is(r.code, -1);
  t.regex(
    describeChild(r),
    /: KILLED by the test after \d+ s, its time limit \(SMMO_TEST_CHILD_LIMIT_MS, default \d+ s\): it had not finished — a hang, or a machine too loaded for the limit/,
  );
  // The output so far is part of the description (a result as the helper makes it).
  t.regex(describeChild({ ...r, stdout: 'started\n', stderr: '' }), /stderr: \(empty\)\nstdout: started/);
});

test('a child that ends is described by its exit code and output', async (t) => {
  const r = await runNode(['-e', "console.error('bad'); process.exit(3);"]);
  t.false(r.killed);
  t.is(r.code, 3);
  t.regex(describeChild(r), /: exit 3 after [\d.]+ s\nstderr: bad\n/);
});

test('smmo() runs bin/smmo.js from the repository root; lastJson() reads the last stdout line', async (t) => {
  const version = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  const r = await smmo(['--version']);
  t.is(r.code, 0, describeChild(r));
  t.is(r.stdout.trim(), `smmo ${version}`);
  t.regex(r.command, /bin\/smmo\.js --version$/);
  t.deepEqual(lastJson('progress\n{"a":1}\n{"b":[2]}\n'), { b: [2] });
  t.throws(() => lastJson('not json\n'), { instanceOf: SyntaxError });
});
