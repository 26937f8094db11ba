/**
 * Paired measurement for the ECS comparison (`bench/ecs.ts --paired ROUNDS`).
 *
 * Why: on a shared host whose speed drifts (the 16-core device host ran whole processes at
 * half speed now and then, and a library's own figure moved by up to 2× between runs), the
 * default method — every case in a child process of its own, one after the other — compares
 * figures taken up to minutes apart, and the ratio smmo / best peer of one run says more
 * about the host than about the code.
 *
 * How: for one suite, one child process per implementation (a fresh JavaScript context per
 * case, as in the default method) sets its case up and warms it up with the harness's
 * doubling runs, which also estimate the op count that takes `targetMs`. Then, round after
 * round, the parent asks each child in turn to run its count and report the wall-clock time
 * (the order rotates every round, so no implementation always follows another). The ratio
 * smmo / best peer is taken within each round — figures a few hundred milliseconds apart —
 * and the table gives its median over the rounds, with the lowest and highest. At the end
 * every child checks its case against all the ops it ran (harness.ts E2); a case that fails
 * its check, exits or stops answering (PAIRED_TIMEOUT_MS beyond its expected time) has no
 * figure and the run exits 1.
 *
 * Protocol (one JSON object per line on the child's stdout; requests on its stdin):
 *   child → {"ready":true,"msPerOp":x}        after setup and warm-up
 *   "run N" → {"ms":x,"cpuMs":y}               N ops in a row
 *   "check" → {"checked":true,"totalOps":n}    or {"error":"…"} (the child then exits 1)
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import { setupCase, type Impl, PEERS } from './cases.js';
import { measure, median, timeOps, type Suite } from './harness.js';

/** How long past its expected time a child may take to answer before it counts as stuck. */
export const PAIRED_TIMEOUT_MS = 60_000;

/** One round: ops/s of each implementation that answered. */
export type PairedRound = Partial<Record<Impl, number>>;

export interface PairedSuite {
  suite: Suite;
  /** Ops per `run` request of each implementation (from its warm-up). */
  counts: Partial<Record<Impl, number>>;
  rounds: PairedRound[];
  /** Implementations whose child failed (setup, a run, its check, or a timeout), with why. */
  failed: { impl: Impl; error: string }[];
}

/** In a child (`--serve IMPL --suite S`): the case, warmed up, running what stdin asks (see the file's header). */
export async function serve(impl: Impl, suite: Suite, targetMs: number): Promise<void> {
  const send = (o: object): void => void process.stdout.write(JSON.stringify(o) + '\n');
  const c = await setupCase(impl, suite);
  const step = (): void => c.step();
  const warm = measure(step, targetMs);
  let totalOps = warm.totalOps;
  send({ ready: true, msPerOp: warm.msPerOp });
  for await (const line of createInterface({ input: process.stdin })) {
    const [cmd, arg] = line.trim().split(' ');
    if (cmd === 'run') {
      const n = Number(arg);
      if (!(Number.isInteger(n) && n > 0)) throw new Error(`serve: bad request '${line}'`);
      const cpu0 = process.cpuUsage();
      const ms = timeOps(step, n);
      const cpu = process.cpuUsage(cpu0);
      totalOps += n;
      send({ ms, cpuMs: (cpu.user + cpu.system) / 1000 });
    } else if (cmd === 'check') {
      try {
        c.check(totalOps);
      } catch (e) {
        send({ error: (e as Error).message });
        process.exitCode = 1;
        break;
      }
      await c.close?.();
      send({ checked: true, totalOps });
      break;
    } else throw new Error(`serve: unknown request '${line}'`);
  }
}

/** A child of the parent's, with its replies as a queue of lines. */
class Child {
  private readonly lines: AsyncIterator<string>;
  private readonly proc: ChildProcessWithoutNullStreams;
  private stderr = '';

  constructor(
    readonly impl: Impl,
    script: string,
    args: readonly string[],
  ) {
    this.proc = spawn(process.execPath, [script, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    this.proc.stderr.on('data', (d: Buffer) => void (this.stderr = (this.stderr + d.toString()).slice(-4000)));
    this.lines = createInterface({ input: this.proc.stdout })[Symbol.asyncIterator]();
  }

  /** The next reply, within `ms`; throws with the child's stderr when it ended, failed or took too long. */
  async reply(ms: number): Promise<Record<string, unknown>> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${Math.round(ms)} ms`)), ms);
    });
    try {
      const next = await Promise.race([this.lines.next(), late]);
      if (next.done === true) throw new Error(`the child ended: ${this.stderr.trim() || `exit ${this.proc.exitCode}`}`);
      const o = JSON.parse(next.value) as Record<string, unknown>;
      if (typeof o.error === 'string') throw new Error(o.error);
      return o;
    } finally {
      clearTimeout(timer);
    }
  }

  send(line: string): void {
    this.proc.stdin.write(line + '\n');
  }

  close(): void {
    this.proc.stdin.end();
    if (this.proc.exitCode === null) this.proc.kill();
  }
}

/**
 * One suite, paired: children for `impls`, `rounds` rounds, then the checks. Never throws
 * for a failing child: it is listed in `failed` and left out of the rounds after.
 */
export async function runPaired(
  script: string,
  suite: Suite,
  impls: readonly Impl[],
  rounds: number,
  targetMs: number,
): Promise<PairedSuite> {
  const out: PairedSuite = { suite, counts: {}, rounds: [], failed: [] };
  const children = impls.map((impl) => new Child(impl, script, ['--serve', impl, '--suite', suite, '--ms', String(targetMs)]));
  const alive = new Set<Child>();
  const fail = (c: Child, e: unknown): void => {
    out.failed.push({ impl: c.impl, error: (e as Error).message });
    alive.delete(c);
    c.close();
  };
  try {
    // Setup and warm-up (the doubling runs, about 2 × targetMs) in parallel: nothing is timed yet.
    await Promise.all(
      children.map(async (c) => {
        try {
          const r = await c.reply(PAIRED_TIMEOUT_MS + 4 * targetMs);
          out.counts[c.impl] = Math.max(1, Math.round(targetMs / (r.msPerOp as number)));
          alive.add(c);
        } catch (e) {
          fail(c, e);
        }
      }),
    );
    for (let round = 0; round < rounds; round++) {
      const figures: PairedRound = {};
      for (let k = 0; k < children.length; k++) {
        const c = children[(k + round) % children.length]!;
        if (!alive.has(c)) continue;
        const n = out.counts[c.impl]!;
        try {
          c.send(`run ${n}`);
          const r = await c.reply(PAIRED_TIMEOUT_MS + 10 * targetMs);
          figures[c.impl] = (n / (r.ms as number)) * 1000;
        } catch (e) {
          fail(c, e);
        }
      }
      out.rounds.push(figures);
    }
    for (const c of children) {
      if (!alive.has(c)) continue;
      try {
        c.send('check');
        await c.reply(PAIRED_TIMEOUT_MS);
      } catch (e) {
        fail(c, e);
      }
    }
  } finally {
    for (const c of children) c.close();
  }
  // A failed case's figures must not be reported: drop them from every round.
  for (const { impl } of out.failed) for (const r of out.rounds) delete r[impl];
  return out;
}

/** Per implementation, the median ops/s over the rounds; and smmo / best peer per round (null where it has no figure), with its median, lowest and highest. */
export function pairedSummary(
  rounds: readonly PairedRound[],
  impls: readonly Impl[],
): {
  opsPerSecond: Partial<Record<Impl, number>>;
  ratios: (number | null)[];
  ratio: { median: number; min: number; max: number } | null;
  bestPeer: Impl | null;
} {
  const opsPerSecond: Partial<Record<Impl, number>> = {};
  for (const impl of impls) {
    const xs = rounds.map((r) => r[impl]).filter((x): x is number => x !== undefined);
    if (xs.length > 0) opsPerSecond[impl] = median(xs);
  }
  const peers = PEERS.filter((p) => impls.includes(p));
  const ratios = rounds.map((r) => {
    const best = Math.max(...peers.map((p) => r[p] ?? -Infinity));
    return r.smmo === undefined || !(best > 0) ? null : r.smmo / best;
  });
  const known = ratios.filter((x): x is number => x !== null);
  const bestMedian = Math.max(...peers.map((p) => opsPerSecond[p] ?? -Infinity));
  return {
    opsPerSecond,
    ratios,
    ratio: known.length === 0 ? null : { median: median(known), min: Math.min(...known), max: Math.max(...known) },
    bestPeer: bestMedian > 0 ? peers.find((p) => opsPerSecond[p] === bestMedian)! : null,
  };
}
