/**
 * bench/child.ts: how the benchmarks run a measuring process. A child past its time limit
 * is killed and the failure says so and names the flag that raises the limit; a failing
 * child's exit code and the end of its stderr are in the message; the limit comes from
 * --child-timeout and a bad value is refused. The asynchronous form (spawnNodeChild)
 * resolves for every end of the child: its stdout, code and node flags; a failing child's
 * code and piped stderr; a child past its limit killed (SIGKILL, timedOut) long before
 * its own end; only the tail of stderr kept when asked. (No timing is compared: the 0.3 s
 * limit is only far below the child's 60 s sleep, and ava's per-test timeout is between.)
 */
import test from 'ava';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHILD_TIMEOUT_S, childTimeoutMs, lastJsonLine, runNodeChild, spawnNodeChild } from '../bench/child.js';

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

test('spawnNodeChild: a child that exits 0 resolves with its stdout, code 0, node flags before the script', async (t) => {
  const s = script('console.log(JSON.stringify({ args: process.argv.slice(2), flags: process.execArgv }));');
  try {
    const r = await spawnNodeChild(s.file, ['--child', 'x'], { timeoutMs: 60_000, nodeArgs: ['--max-old-space-size=123'], stderr: 'pipe' });
    t.is(r.code, 0);
    t.is(r.signal, null);
    t.false(r.timedOut);
    t.is(r.stderr, '');
    t.deepEqual(lastJsonLine(r.stdout), { args: ['--child', 'x'], flags: ['--max-old-space-size=123'] });
  } finally {
    s.done();
  }
});

test('spawnNodeChild: a failing child resolves with its exit code and its piped stderr', async (t) => {
  const s = script("console.log('out'); console.error('first'); console.error('the reason'); process.exit(3);");
  try {
    const r = await spawnNodeChild(s.file, [], { timeoutMs: 60_000, stderr: 'pipe' });
    t.is(r.code, 3);
    t.is(r.signal, null);
    t.false(r.timedOut);
    t.is(r.stdout, 'out\n');
    t.is(r.stderr, 'first\nthe reason\n');
  } finally {
    s.done();
  }
});

test('spawnNodeChild: a child past its limit is killed (SIGKILL) and the promise resolves', async (t) => {
  // The child would sleep 60 s; ava's own 10 s timeout per test fails a helper that waits
  // for its end. (What it wrote is not checked: under load the limit may come before the
  // child has started.)
  const s = script("setTimeout(() => console.log('ended'), 60_000);");
  try {
    const r = await spawnNodeChild(s.file, [], { timeoutMs: 300, stderr: 'pipe' });
    t.true(r.timedOut);
    t.is(r.signal, 'SIGKILL');
    t.is(r.code, null);
  } finally {
    s.done();
  }
});

test('spawnNodeChild: stderrKeepChars keeps only the tail of stderr; without it, all', async (t) => {
  // 64 writes of 4 KiB, then the end: several chunks reach the parent.
  const s = script("for (let i = 0; i < 64; i++) process.stderr.write('x'.repeat(4096)); process.stderr.write('the end\\n');");
  try {
    const tail = await spawnNodeChild(s.file, [], { timeoutMs: 60_000, stderr: 'pipe', stderrKeepChars: 20 });
    t.is(tail.code, 0);
    t.is(tail.stderr, 'x'.repeat(12) + 'the end\n');
    const all = await spawnNodeChild(s.file, [], { timeoutMs: 60_000, stderr: 'pipe' });
    t.is(all.stderr, 'x'.repeat(64 * 4096) + 'the end\n');
  } finally {
    s.done();
  }
});
