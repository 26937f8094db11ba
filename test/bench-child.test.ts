/**
 * bench/child.ts: how the benchmarks run a measuring process. A child past its time limit
 * is killed and the failure says so and names the flag that raises the limit; a failing
 * child's exit code and the end of its stderr are in the message; the limit comes from
 * --child-timeout and a bad value is refused. (No timing is compared: the 0.3 s limit is
 * only far below the child's 60 s sleep.)
 */
import test from 'ava';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHILD_TIMEOUT_S, childTimeoutMs, lastJsonLine, runNodeChild } from '../bench/child.js';

function script(body: string): { file: string; done: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'smmo-bench-child-'));
  const file = join(dir, 'child.mjs');
  writeFileSync(file, body);
  return { file, done: () => rmSync(dir, { recursive: true, force: true }) };
}

test('a child that exits 0 gives its last line as JSON and no failure', (t) => {
  const s = script("console.log('progress'); console.log(JSON.stringify({ ok: 1, args: process.argv.slice(2) }));");
  try {
    const r = runNodeChild(s.file, ['--child', 'x'], { timeoutMs: 60_000, stderr: 'pipe' });
    t.is(r.failure, undefined);
    t.deepEqual(lastJsonLine(r.stdout), { ok: 1, args: ['--child', 'x'] });
  } finally {
    s.done();
  }
});

test('a child past its limit is killed, and the failure names the limit and the flag', (t) => {
  const s = script('setTimeout(() => {}, 60_000);');
  try {
    const r = runNodeChild(s.file, [], { timeoutMs: 300, stderr: 'pipe' });
    t.truthy(r.failure);
    t.regex(r.failure!, /did not finish within 0\.3 s and was killed \(raise --child-timeout SECONDS/);
  } finally {
    s.done();
  }
});

test('a failing child: its exit code and the end of its stderr', (t) => {
  const s = script("console.error('first'); console.error('the reason'); process.exit(3);");
  try {
    const r = runNodeChild(s.file, [], { timeoutMs: 60_000, stderr: 'pipe' });
    t.regex(r.failure ?? '', /^exited with 3:\nfirst\nthe reason$/);
  } finally {
    s.done();
  }
});

test('--child-timeout sets the limit in seconds; absent, the default; a bad value is refused', (t) => {
  t.is(childTimeoutMs(['node', 'x.js']), CHILD_TIMEOUT_S * 1000);
  t.is(childTimeoutMs(['node', 'x.js', '--child-timeout', '2.5']), 2500);
  for (const bad of ['0', '-1', 'soon', undefined]) {
    const argv = ['node', 'x.js', '--child-timeout', ...(bad === undefined ? [] : [bad])];
    t.throws(() => childTimeoutMs(argv), { message: /--child-timeout takes a number of seconds above 0/ });
  }
});
