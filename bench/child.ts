/**
 * Benchmarks measure each configuration in a fresh Node.js process (a method that has run
 * on objects of several runtimes in one process turns polymorphic in V8, and a process's
 * heap and caches would carry over). This is the one way they start such a process and
 * wait for it, with a time limit, so that a child that hangs (a deadlock, a pathological
 * size) ends the benchmark with a message instead of hanging it. Two forms:
 *   - runNodeChild: synchronous (spawnSync), for benches that run one child at a time;
 *     it returns the failure already in words (whyFailed);
 *   - spawnNodeChild: asynchronous (spawn), for benches that run children side by side or
 *     keep their event loop going; it resolves to the child's exit code, signal, whether
 *     the limit killed it, and its output, and the caller words the failure.
 *
 * Invariants:
 *   - every wait is bounded: the child is killed (SIGKILL) past `timeoutMs`;
 *   - a failure says which child, why (its exit code, its signal, or the time limit and the
 *     flag that raises it) and the end of what it wrote to stderr when that was captured
 *     (runNodeChild's whyFailed words it; spawnNodeChild's callers word it from its result).
 *
 * The limit is `--child-timeout S` seconds on the benchmark's command line (default
 * CHILD_TIMEOUT_S), read by childTimeoutMs(), for the benches that take that flag;
 * `smmo bench` (bench/apps.ts) and bench/memory.ts take --timeout, and bench/alloc-bound.ts
 * derives its limit from its measuring window.
 */
import { spawn, spawnSync, type SpawnSyncReturns } from 'node:child_process';

/** Default limit of one child, seconds: far above any configuration's run at the documented sizes. */
export const CHILD_TIMEOUT_S = 1800;

/** The flag that sets the limit; benches that pass their flags on to children leave it out. */
export const CHILD_TIMEOUT_FLAG = '--child-timeout';

/** The limit from `--child-timeout S` in `argv` (seconds > 0), else CHILD_TIMEOUT_S; milliseconds. */
export function childTimeoutMs(argv: readonly string[] = process.argv): number {
  const i = argv.indexOf(CHILD_TIMEOUT_FLAG);
  if (i < 0) return CHILD_TIMEOUT_S * 1000;
  const s = Number(argv[i + 1]);
  if (!(s > 0) || !Number.isFinite(s)) {
    throw new Error(`${CHILD_TIMEOUT_FLAG} takes a number of seconds above 0 (got '${argv[i + 1] ?? ''}')`);
  }
  return s * 1000;
}

export interface NodeChildOptions {
  /** Kill the child past this many milliseconds. */
  readonly timeoutMs: number;
  /** Node.js flags before the script (e.g. --cpu-prof). */
  readonly nodeArgs?: readonly string[];
  /** Bytes of stdout (and piped stderr) kept; default 64 MiB. */
  readonly maxBuffer?: number;
  /** 'inherit': the child's stderr goes to ours as it runs (progress lines); 'pipe': kept for the message. Default 'inherit'. */
  readonly stderr?: 'inherit' | 'pipe';
}

export interface NodeChild {
  /** Undefined when the child exited 0; else why not, in words. */
  readonly failure: string | undefined;
  readonly stdout: string;
  /** Empty unless stderr was piped. */
  readonly stderr: string;
}

/** Run `node [nodeArgs] script ...args` and wait for it, at most `timeoutMs`. */
export function runNodeChild(script: string, args: readonly string[], o: NodeChildOptions): NodeChild {
  const r = spawnSync(process.execPath, [...(o.nodeArgs ?? []), script, ...args], {
    encoding: 'utf8',
    maxBuffer: o.maxBuffer ?? 64 << 20,
    stdio: ['ignore', 'pipe', o.stderr ?? 'inherit'],
    timeout: o.timeoutMs,
    killSignal: 'SIGKILL',
  });
  const stdout = r.stdout ?? '';
  const stderr = r.stderr ?? '';
  return { failure: whyFailed(r, o.timeoutMs), stdout, stderr };
}

/** Why a spawnSync child did not succeed, or undefined when it exited 0. */
export function whyFailed(r: SpawnSyncReturns<string>, timeoutMs: number): string | undefined {
  const err = r.error as NodeJS.ErrnoException | undefined;
  if (err?.code === 'ETIMEDOUT') {
    return `did not finish within ${timeoutMs / 1000} s and was killed (raise ${CHILD_TIMEOUT_FLAG} SECONDS or lower the sizes)`;
  }
  if (err !== undefined) return `could not run: ${err.message}`;
  if (r.status === 0) return undefined;
  const tail = (r.stderr ?? '').trim().split('\n').slice(-15).join('\n');
  return `exited with ${r.status ?? r.signal}${tail === '' ? '' : `:\n${tail}`}`;
}

export interface SpawnNodeChildOptions {
  /** Kill the child (SIGKILL) past this many milliseconds. */
  readonly timeoutMs: number;
  /** Node.js flags before the script (e.g. --max-old-space-size=…). */
  readonly nodeArgs?: readonly string[];
  /** 'inherit': the child's stderr goes to ours as it runs (progress lines); 'pipe': kept for the message. Default 'inherit'. */
  readonly stderr?: 'inherit' | 'pipe';
  /** Keep only the last this many characters of piped stderr (a child that writes much); default all. */
  readonly stderrKeepChars?: number;
}

export interface SpawnedNodeChild {
  /** The exit code; null when a signal ended the child. */
  readonly code: number | null;
  /** The signal that ended the child ('SIGKILL' when the limit did), else null. */
  readonly signal: NodeJS.Signals | null;
  /** The limit was reached and the child was sent SIGKILL. */
  readonly timedOut: boolean;
  readonly stdout: string;
  /** Empty unless stderr was piped; at most its last stderrKeepChars characters when that is given. */
  readonly stderr: string;
  /** From the spawn to the close, seconds. */
  readonly seconds: number;
}

/**
 * Run `node [nodeArgs] script ...args` without blocking; past `timeoutMs` the child is sent
 * SIGKILL. Resolves once the child has exited and its output pipes have closed, whatever
 * its end (exit 0, another code, a signal, the limit): the caller decides what is a
 * failure. Rejects only with the child process's 'error' (it could not be spawned). The
 * timer is cleared either way, so that it keeps no process alive. (The wait ends when the
 * pipes close: a child that handed them to processes of its own, which the benches'
 * children do not, would hold it past the kill.)
 */
export function spawnNodeChild(script: string, args: readonly string[], o: SpawnNodeChildOptions): Promise<SpawnedNodeChild> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, [...(o.nodeArgs ?? []), script, ...args], {
      stdio: ['ignore', 'pipe', o.stderr ?? 'inherit'],
    });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    const keep = o.stderrKeepChars;
    // stdio[1] is 'pipe', so stdout is a stream; stderr is one when piped.
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr?.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
      if (keep !== undefined && stderr.length > keep) stderr = stderr.slice(-keep);
    });
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, o.timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, timedOut, stdout, stderr, seconds: (performance.now() - t0) / 1000 });
    });
  });
}

/** The child's last line of output parsed as JSON (the benches' children print their result last). */
export function lastJsonLine<T>(stdout: string): T {
  const lines = stdout.trim().split('\n');
  return JSON.parse(lines[lines.length - 1]!) as T;
}
