/**
 * The pieces every case of the ECS comparison (bench/ecs.ts) shares: the five suites of
 * noctjs/ecs-benchmark with their entity counts, the interface a case implements, the
 * measuring method, and the checks a case runs on its own result.
 *
 * The measuring method is the one noctjs/ecs-benchmark's README and harness describe:
 * one case per fresh JavaScript context (there a worker thread, here a child process, so
 * that `node --cpu-prof` can profile it); the op — one update of the whole world — runs
 * 1, 2, 4, … times in a row until these runs add up to 500 ms; the time per op of the
 * last of them gives a count estimated to take 500 ms; that count runs once more, and
 * ops/s = count / its wall-clock time. The doubling runs are the warm-up. One change: the
 * estimated count is rounded to an integer and the figure divides by the ops that really
 * ran (a loop `i < 1234.5` runs 1235 times).
 *
 * Invariants of a case (checked by test/bench-ecs.test.ts for every case):
 *  (E1) `step()` does the suite's whole update and nothing else that grows with the
 *       entity count (a per-pass counter is allowed: it lets `check` count the passes).
 *  (E2) `check(ops)` throws a CaseCheckError unless the world is what `ops` calls of
 *       `step()` after the setup leave: field values, entity counts, and, where the
 *       final state cannot tell, what each system does (see the case's own comments).
 *       It may run further updates itself (a case is not measured after its check).
 */

/** The five suites and their `count` parameter (noctjs/ecs-benchmark, its benchmark script src/bench). */
export const SUITES = {
  packed_5: 1000,
  simple_iter: 1000,
  frag_iter: 100,
  entity_cycle: 1000,
  add_remove: 1000,
} as const;
export type Suite = keyof typeof SUITES;
export const SUITE_NAMES = Object.keys(SUITES) as Suite[];

/** One suite set up in one library. */
export interface EcsCase {
  /** One op: every system of the suite once (what is timed). */
  step(): void;
  /** Throw a CaseCheckError unless the world is what `ops` steps leave (E2). */
  check(ops: number): void;
  /** Release what the case holds (a runtime's heap). */
  close?(): Promise<void> | void;
}

/** A case's module exports one of these per suite. */
export type CaseSetup = (count: number) => EcsCase | Promise<EcsCase>;

/** A case computed something else than the suite asks for: its figure must not be reported. */
export class CaseCheckError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CaseCheckError';
  }
}

export function expect(ok: boolean, what: () => string): asserts ok {
  if (!ok) throw new CaseCheckError(what());
}

/** `value` after `ops` doublings in a field of this kind (u32 wraps to 0 after 32, i32 through -2^31). */
export function doubled(value: number, ops: number, kind: 'u32' | 'i32'): number {
  let v = value;
  for (let i = 0; i < Math.min(ops, 33); i++) v = kind === 'u32' ? (v * 2) >>> 0 : (v * 2) | 0;
  return v;
}

export interface Measurement {
  /** Ops per second of the final run (wall clock): the figure noctjs/ecs-benchmark reports. */
  opsPerSecond: number;
  /** Milliseconds per op of the final run. */
  msPerOp: number;
  /** Ops of the final run and its wall-clock milliseconds. */
  count: number;
  ms: number;
  /** Process CPU milliseconds per op of the final run (all threads of the process: GC helpers too). */
  cpuMsPerOp: number;
  /** Every op run, the doubling phase included (what `check` is given). */
  totalOps: number;
}

/** Wall-clock milliseconds of `n` ops in a row. */
export function timeOps(step: () => void, n: number): number {
  const t0 = performance.now();
  for (let i = 0; i < n; i++) step();
  return performance.now() - t0;
}

/** The measuring method above, with a target of `targetMs` (500 in the original). */
export function measure(step: () => void, targetMs = 500): Measurement {
  let n = 1;
  let spent = 0;
  let perOp = 0;
  let totalOps = 0;
  while (spent < targetMs) {
    const ms = timeOps(step, n);
    perOp = ms / n;
    totalOps += n;
    spent += ms;
    n *= 2;
  }
  const count = Math.max(1, Math.round(targetMs / perOp));
  const cpu0 = process.cpuUsage();
  const ms = timeOps(step, count);
  const cpu = process.cpuUsage(cpu0);
  totalOps += count;
  return {
    opsPerSecond: (count / ms) * 1000,
    msPerOp: ms / count,
    count,
    ms,
    cpuMsPerOp: (cpu.user + cpu.system) / 1000 / count,
    totalOps,
  };
}

/** The median of `xs` (the mean of the middle two for an even count). */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}
