/**
 * Child processes for tests (the CLI, scripts, example programs), without a wall-clock
 * limit that a loaded machine could hit: a child is only killed after CHILD_LIMIT_MS
 * (default 8 minutes, under ava's 10-minute inactivity timeout in package.json;
 * SMMO_TEST_CHILD_LIMIT_MS changes it), a bound against hangs, not a speed requirement
 * (the slowest child, `smmo bench` at tiny sizes, takes about 40 s on the 2-core dev VM).
 * A killed child is reported as such: describeChild() says it was killed, after how long
 * and why, with what it had printed (never a bare "exit 1, empty stderr").
 *
 * smmo(args) runs the CLI (bin/smmo.js) this way, from the repository root; lastJson()
 * reads the object that `--json` prints as the last line of stdout.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The repository root and the CLI (this file is compiled to dist/test/helpers/). */
export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
export const SMMO_BIN = fileURLToPath(new URL('../../../bin/smmo.js', import.meta.url));

export const CHILD_LIMIT_MS = Number(process.env['SMMO_TEST_CHILD_LIMIT_MS']) || 480_000;

export interface ChildResult {
  /** Exit code; -1 when the child was killed or ended by a signal. */
  code: number;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** The test killed it at its time limit. */
  killed: boolean;
  seconds: number;
  command: string;
}

export interface ChildOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Time limit in ms (default CHILD_LIMIT_MS). */
  limitMs?: number;
}

/** Run `command args`, collecting its output; resolves when it ends (or is killed at its limit). */
export function runChild(command: string, args: readonly string[], opts: ChildOptions = {}): Promise<ChildResult> {
  const limitMs = opts.limitMs ?? CHILD_LIMIT_MS;
  const t0 = performance.now();
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: opts.cwd, env: opts.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let killed = false;
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => {
      killed = true;
      child.kill('SIGKILL');
    }, limitMs);
    const done = (code: number | null, signal: NodeJS.Signals | null, error?: Error): void => {
      clearTimeout(timer);
      resolve({
        code: code ?? -1,
        signal,
        stdout,
        stderr: error ? `${stderr}${error.message}` : stderr,
        killed,
        seconds: (performance.now() - t0) / 1000,
        command: [command, ...args].join(' '),
      });
    };
    child.on('error', (e) => done(-1, null, e));
    child.on('close', (code, signal) => done(code, signal));
  });
}

/** Run a Node.js script (this test process's node). */
export function runNode(args: readonly string[], opts: ChildOptions = {}): Promise<ChildResult> {
  return runChild(process.execPath, args, opts);
}

/** Run the CLI, `node bin/smmo.js ...args`, in the repository root (unless `opts.cwd` says otherwise). */
export function smmo(args: readonly string[], opts: ChildOptions = {}): Promise<ChildResult> {
  return runNode([SMMO_BIN, ...args], { cwd: REPO_ROOT, ...opts });
}

/** The JSON object on the last line of `stdout` (what `--json` prints). */
export function lastJson(stdout: string): Record<string, unknown> {
  const lines = stdout.trimEnd().split('\n');
  return JSON.parse(lines[lines.length - 1]!) as Record<string, unknown>;
}

/** What happened to a child, for assertion messages. */
export function describeChild(r: ChildResult): string {
  const tail = (s: string): string => (s.trim() === '' ? '(empty)' : s.length > 4000 ? `…${s.slice(-4000)}` : s);
  const how = r.killed
    ? `KILLED by the test after ${r.seconds.toFixed(0)} s, its time limit (SMMO_TEST_CHILD_LIMIT_MS, default ${CHILD_LIMIT_MS / 1000} s): ` +
      'it had not finished — a hang, or a machine too loaded for the limit'
    : r.signal !== null
      ? `ended by signal ${r.signal} after ${r.seconds.toFixed(1)} s`
      : `exit ${r.code} after ${r.seconds.toFixed(1)} s`;
  return `${r.command}: ${how}\nstderr: ${tail(r.stderr)}\nstdout: ${tail(r.stdout)}`;
}
