/**
 * Scaling benchmark of the worker-thread executor (issue 3; paper §6, Fig. 13a):
 *
 *   1. fork-join: the cost of an empty parallelDo (2 blocks of a no-op method, every
 *      pass on the workers), back to back ("hot": workers still spinning) and after a
 *      pause ("cold": workers asleep in Atomics.wait);
 *   2. inline threshold: nbody's `update` (a light method) over B blocks, on the
 *      workers vs on the calling thread alone, to find the B where the workers start to
 *      pay (DEFAULT_INLINE_BLOCKS comes from this);
 *   3. nbody, 20 000 bodies: ms per step and speedup over 1 thread;
 *   4. linux-scalability: D lanes each allocate k objects of an 8×f64 class and free
 *      them again, kmax / k times (every pass makes lanes × kmax allocations), k = 1 …
 *      kmax: ns per allocation (alloc + free, over all threads) and throughput, after a
 *      warm-up of 30 small passes and three untimed passes of every k. The classes and the
 *      measurement of one k (timeK) are the app's (apps/linux-scalability, `smmo run
 *      linux-scalability --sweep`).
 *
 *   node dist/bench/scaling.js [--threads 1,2,4,8,16] [--force] [--bodies 20000]
 *        [--iterations 2] [--lanes 2048] [--kmax 1024] [--skip nbody,linux,…]
 *        [--keep 0,4] [--own-first] [--machine "name"] [--out bench-results/scaling.json]
 *        [--baseline DIR] [--repeats R] [--child-timeout S]
 *
 * --baseline DIR: another built checkout of smmo (e.g. the commit before a change, with its
 * dist/): the linux sections run its bench/scaling.js children as well, alternating with
 * this build's, R times each (--repeats, default 1; the median per k is reported), and
 * print both side by side ("before → after"), so that a busy phase of a shared machine
 * hits both builds alike. The JSON gets the baseline's rows under `…Baseline`.
 *
 * Thread counts above the machine's cores are dropped unless --force. "threads"
 * counts the calling thread: threads = N runs N-1 workers plus the caller.
 * Timings are medians of repeated runs; the machine is named in the JSON.
 *
 * --keep: RuntimeOptions.keepBlocks values for the linux sections (each a row set; 0 = the
 * paper's allocator, every emptied block back to `free` at once).
 * Sections: forkjoin, inline, nbody (TypeScript methods), nbody-wasm (WASM SIMD kernels), linux
 * (create/destroy in methods), linux-raw (the same through the allocator alone).
 * Every measurement runs in a fresh child process (`--child <section> --threads N`; killed,
 * and the run failed, past --child-timeout seconds, default 1800):
 * each runtime generates its own accessor classes, so a method that has run on
 * objects of several runtimes in one process becomes polymorphic, then megamorphic,
 * in V8 (measured: nbody's update pass 54 µs on the first runtime of a process,
 * 2.5 ms on the sixth), which would make later configurations look slower.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { dirname } from 'node:path';
import { createRuntime, type Runtime, type RuntimeOptions } from '../index.js';
import { DEFAULT_KEEP_BLOCKS } from '../runtime/layout.js';
import { CLASSES as NBODY_CLASSES, init as nbodyInit, step as nbodyStep, digest as nbodyDigest } from '../apps/nbody/nbody.js';
import { Body, DT } from '../apps/nbody/body.js';
import { Empty, SCALING_CLASSES_URL } from './scaling-classes.js';
import {
  Allocator8,
  CLASSES as LINUX_CLASSES,
  heapBytes as linuxHeap,
  MODEL_URL as LINUX_URL,
  timeK,
  sweepKs,
  warmUp,
} from '../apps/linux-scalability/linux.js';
import { CHILD_TIMEOUT_FLAG, childTimeoutMs, lastJsonLine, runNodeChild } from './child.js';

const NBODY_URL = new URL('../apps/nbody/nbody.js', import.meta.url).href;

// ------------------------------------------------------------------ arguments

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1]! : fallback;
}
const flag = (name: string): boolean => process.argv.includes(`--${name}`);

const cores = availableParallelism();
const requested = arg('threads', '1,2,4,8,16')
  .split(',')
  .map(Number)
  .filter((n) => Number.isInteger(n) && n >= 1);
// A child runs exactly the thread count it is given.
const THREADS = flag('force') || process.argv.includes('--child') ? requested : requested.filter((n) => n <= cores);
const BODIES = Number(arg('bodies', '20000'));
const ITERATIONS = Number(arg('iterations', '2'));
const LANES = Number(arg('lanes', '2048'));
const KMAX = Number(arg('kmax', '1024'));
// k runs over the powers of two up to kmax, each lane making kmax / k rounds of k: the same
// number of allocations per pass for every k only if kmax is a power of two.
if (!(Number.isInteger(KMAX) && KMAX >= 1 && (KMAX & (KMAX - 1)) === 0)) {
  throw new Error(`--kmax must be a power of two (1, 2, 4, … 1024), got ${arg('kmax', '1024')}`);
}
const SKIP = new Set(arg('skip', '').split(','));
const OUT = arg('out', 'bench-results/scaling.json');
const BASELINE = arg('baseline', '');
const REPEATS = Math.max(1, Number(arg('repeats', '1')));
const KEEP = arg('keep', `0,${DEFAULT_KEEP_BLOCKS}`).split(',').map(Number);
/** --own-first: RuntimeOptions.allocator.ownFirstBlock in the linux sections (passed on to the children). */
const OWN_FIRST = process.argv.includes('--own-first');

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}
const sleepCell = new Int32Array(new SharedArrayBuffer(4));
const sleep = (ms: number): void => void Atomics.wait(sleepCell, 0, 0, ms);

async function withRuntime<T>(options: RuntimeOptions, fn: (rt: Runtime) => Promise<T>): Promise<T> {
  const rt = await createRuntime(options);
  try {
    return await fn(rt);
  } finally {
    await rt.close();
  }
}

// ------------------------------------------------------------------ 1. fork-join

interface ForkJoin {
  threads: number;
  /** RuntimeOptions.spinMicros of this row. */
  spinMicros: number;
  hotMicros: number;
  hotP90Micros: number;
  coldMicros: number;
}

const percentile = (xs: number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * p)]!;

async function forkJoin(threads: number): Promise<ForkJoin[]> {
  const rows: ForkJoin[] = [];
  // One runtime per spin setting is fine here: Empty.nop has no field access to go megamorphic.
  for (const spinMicros of [0, 20, 200]) {
    rows.push(
      await withRuntime(
        { classes: [Empty], threads, heap: '4MB', modules: [SCALING_CLASSES_URL], inlineBlocks: 0, spinMicros },
        async (rt) => {
          await rt.parallelNew(Empty, 64); // 2 blocks: the smallest pass that goes to the workers
          for (let i = 0; i < 500; i++) await rt.parallelDo(Empty, 'nop');
          const hot: number[] = [];
          for (let i = 0; i < 2000; i++) {
            const t0 = performance.now();
            await rt.parallelDo(Empty, 'nop');
            hot.push(performance.now() - t0);
          }
          const cold: number[] = [];
          for (let i = 0; i < 30; i++) {
            sleep(3);
            const t0 = performance.now();
            await rt.parallelDo(Empty, 'nop');
            cold.push(performance.now() - t0);
          }
          return {
            threads,
            spinMicros,
            hotMicros: median(hot) * 1000,
            hotP90Micros: percentile(hot, 0.9) * 1000,
            coldMicros: median(cold) * 1000,
          };
        },
      ),
    );
  }
  return rows;
}

// ------------------------------------------------------------------ 2. inline threshold

interface InlineRow {
  threads: number;
  blocks: number;
  inlineMicros: number;
  workersMicros: number;
}

async function inlineThreshold(threads: number): Promise<InlineRow[]> {
  // One runtime (see the header: no second runtime in this process), grown block by block.
  return withRuntime({ classes: NBODY_CLASSES, threads, heap: '16MB', modules: [NBODY_URL] }, async (rt) => {
    const rows: InlineRow[] = [];
    let have = 0;
    for (const blocks of [2, 4, 8, 16, 32, 64, 128, 256, 512]) {
      await nbodyInit(rt, blocks * 32 - have, blocks);
      have = blocks * 32;
      const reps = Math.max(50, Math.min(2000, Math.floor(20000 / blocks)));
      const micros: number[] = [];
      for (const inlineBlocks of [1 << 30, 0]) {
        rt.inlineBlocks = inlineBlocks;
        for (let i = 0; i < reps; i++) await rt.parallelDo(Body, 'update', DT);
        const ts: number[] = [];
        for (let i = 0; i < reps; i++) {
          const t0 = performance.now();
          await rt.parallelDo(Body, 'update', DT);
          ts.push(performance.now() - t0);
        }
        micros.push(median(ts) * 1000);
      }
      rows.push({ threads, blocks, inlineMicros: micros[0]!, workersMicros: micros[1]! });
    }
    return rows;
  });
}

// ------------------------------------------------------------------ 3. nbody

interface NbodyRow {
  threads: number;
  backend: 'ts' | 'wasm';
  bodies: number;
  msPerStep: number;
  speedup: number;
  digest: number;
}

async function nbody(threads: number, backend: 'ts' | 'wasm'): Promise<Omit<NbodyRow, 'speedup'>> {
  return withRuntime(
    { classes: NBODY_CLASSES, threads, backend, heap: Math.max(16 << 20, (2 << 20) + BODIES * 64), modules: [NBODY_URL] },
    async (rt) => {
      await nbodyInit(rt, BODIES, 1);
      await nbodyStep(rt); // warm-up: every thread compiles computeForce
      const ts: number[] = [];
      // WASM steps are ~50× shorter: time more of them for the same confidence.
      for (let i = 0; i < (backend === 'wasm' ? 5 * ITERATIONS : ITERATIONS); i++) {
        const t0 = performance.now();
        await nbodyStep(rt);
        ts.push(performance.now() - t0);
      }
      return { threads, backend, bodies: BODIES, msPerStep: median(ts), digest: nbodyDigest(rt) };
    },
  );
}

// ------------------------------------------------------------------ 4. linux-scalability

interface LinuxRow {
  threads: number;
  keepBlocks: number;
  k: number;
  lanes: number;
  nsPerAlloc: number;
  allocsPerSec: number;
  speedup: number;
}

async function linux(threads: number, method: 'allocFree' | 'allocFreeRaw'): Promise<Omit<LinuxRow, 'speedup'>[]> {
  const heap = linuxHeap(LANES, KMAX);
  // inlineBlocks 0: Allocator8 has 30 slots per block, so --lanes 1024 is 35 blocks, which the default threshold
  // (64) would run on the calling thread alone: the measured scaling must come from the workers at any lane count.
  const keepBlocks = KEEP[0]!; // a child gets one value
  const options = {
    classes: LINUX_CLASSES,
    threads,
    heap,
    modules: [LINUX_URL],
    inlineBlocks: 0,
    keepBlocks,
    allocator: { ownFirstBlock: OWN_FIRST },
  };
  return withRuntime(options, async (rt) => {
    await rt.parallelNew(Allocator8, LANES);
    for (let i = 0; i < 30; i++) await rt.parallelDo(Allocator8, method, 4, 1); // JIT warm-up on every thread
    await warmUp(rt, sweepKs(KMAX), KMAX, method); // then three untimed passes of every k
    const rows: Omit<LinuxRow, 'speedup'>[] = [];
    // Every pass makes LANES × KMAX allocations: each lane runs KMAX / k rounds of k.
    const total = LANES * KMAX;
    for (let k = 1; k <= KMAX; k *= 2) {
      // One untimed pass (the first touch of these blocks), the median of 3 timed; no objects left.
      const ms = await timeK(rt, k, KMAX / k, { method });
      rows.push({ threads, keepBlocks, k, lanes: LANES, nsPerAlloc: (ms * 1e6) / total, allocsPerSec: total / (ms / 1000) });
    }
    rt.validateHeap();
    return rows;
  });
}

// ------------------------------------------------------------------ main

/** Per k, the repeat with the median time (repeats of one section, same k order). */
function medianRows(repeats: Omit<LinuxRow, 'speedup'>[][]): Omit<LinuxRow, 'speedup'>[] {
  return repeats[0]!.map((_, i) => {
    const sorted = repeats.map((r) => r[i]!).sort((a, b) => a.nsPerAlloc - b.nsPerAlloc);
    return sorted[Math.floor(sorted.length / 2)]!;
  });
}

/**
 * Run one section at one thread count in a fresh process; returns what it printed as JSON.
 * `script`: another build's scaling.js (--baseline) instead of this one.
 */
function child<T>(section: string, threads: number, keep = KEEP[0]!, script = process.argv[1]!): T {
  const own = ['--threads', '--child', '--keep', '--baseline', '--repeats', CHILD_TIMEOUT_FLAG];
  const passthrough = process.argv.slice(2).filter((_, i, a) => !own.includes(a[i]!) && !own.includes(a[i - 1]!));
  const argv = ['--child', section, '--threads', String(threads), '--keep', String(keep), ...passthrough];
  const r = runNodeChild(script, argv, { timeoutMs: childTimeoutMs() });
  if (r.failure !== undefined) throw new Error(`bench child ${section} at ${threads} threads ${r.failure}`);
  return lastJsonLine<T>(r.stdout);
}

async function runChild(section: string, threads: number): Promise<unknown> {
  switch (section) {
    case 'forkjoin':
      return forkJoin(threads);
    case 'inline':
      return inlineThreshold(threads);
    case 'nbody':
      return nbody(threads, 'ts');
    case 'nbody-wasm':
      return nbody(threads, 'wasm');
    case 'linux':
      return linux(threads, 'allocFree');
    case 'linux-raw':
      return linux(threads, 'allocFreeRaw');
    default:
      throw new Error(`unknown section ${section}`);
  }
}

function main(): void {
  const machine = {
    label: arg('machine', ''),
    cpu: cpus()[0]?.model ?? 'unknown',
    cores,
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    /** 1-minute load average at the start and the end: other jobs on the machine skew every figure. */
    loadAverage: [loadavg()[0]!],
  };
  console.log(`smmo scaling benchmark: threads ${THREADS.join(',')} on ${machine.cpu} (${cores} cores), node ${machine.node}`);
  const out: Record<string, unknown> = {
    date: new Date().toISOString(),
    machine,
    threads: THREADS,
    params: { bodies: BODIES, iterations: ITERATIONS, lanes: LANES, kmax: KMAX },
  };
  const multi = THREADS.filter((x) => x > 1);

  if (!SKIP.has('forkjoin')) {
    const rows: ForkJoin[] = [];
    for (const t of multi) {
      for (const r of child<ForkJoin[]>('forkjoin', t)) {
        rows.push(r);
        console.log(
          `empty parallelDo, ${t} threads, spin ${r.spinMicros} µs: ${r.hotMicros.toFixed(1)} µs back to back (p90 ${r.hotP90Micros.toFixed(1)}), ` +
            `${r.coldMicros.toFixed(1)} µs after a 3 ms pause`,
        );
      }
    }
    out['emptyParallelDo'] = rows;
  }

  if (!SKIP.has('inline')) {
    const rows: InlineRow[] = [];
    for (const t of multi) {
      const r = child<InlineRow[]>('inline', t);
      rows.push(...r);
      const cross = r.find((x) => x.workersMicros < x.inlineMicros);
      console.log(
        `update pass, ${t} threads (µs, calling thread alone / with workers): ` +
          r.map((x) => `${x.blocks} blocks ${x.inlineMicros.toFixed(1)}/${x.workersMicros.toFixed(1)}`).join(', '),
      );
      console.log(`  the workers are first faster at ${cross ? `${cross.blocks} blocks` : 'no size measured'}`);
    }
    out['inlineThreshold'] = rows;
  }

  for (const [section, key] of [
    ['nbody', 'nbody'],
    ['nbody-wasm', 'nbodyWasm'],
  ] as const) {
    if (SKIP.has(section)) continue;
    const rows: NbodyRow[] = [];
    for (const t of THREADS) {
      const r = child<Omit<NbodyRow, 'speedup'>>(section, t);
      const base = rows[0]?.msPerStep ?? r.msPerStep;
      rows.push({ ...r, speedup: base / r.msPerStep });
      console.log(
        `nbody (${r.backend}) ${BODIES} bodies, ${t} threads: ${r.msPerStep.toFixed(1)} ms/step, speedup ${(base / r.msPerStep).toFixed(2)}, digest ${r.digest}`,
      );
    }
    if (new Set(rows.map((r) => r.digest)).size > 1) console.log(`WARNING: ${section} digests differ between thread counts`);
    out[key] = rows;
  }

  for (const [section, key, what] of [
    ['linux', 'linuxScalability', 'create/destroy'],
    ['linux-raw', 'linuxScalabilityRaw', 'allocator only'],
  ] as const) {
    if (SKIP.has(section)) continue;
    const rows: LinuxRow[] = [];
    const baseRows: LinuxRow[] = [];
    const baselineScript = BASELINE === '' ? '' : `${BASELINE.replace(/\/$/, '')}/dist/bench/scaling.js`;
    for (const keep of KEEP) {
      for (const t of THREADS) {
        const mine: Omit<LinuxRow, 'speedup'>[][] = [];
        const theirs: Omit<LinuxRow, 'speedup'>[][] = [];
        for (let rep = 0; rep < REPEATS; rep++) {
          if (baselineScript !== '') theirs.push(child<Omit<LinuxRow, 'speedup'>[]>(section, t, keep, baselineScript));
          mine.push(child<Omit<LinuxRow, 'speedup'>[]>(section, t, keep));
        }
        const r = medianRows(mine);
        const b = theirs.length > 0 ? medianRows(theirs) : null;
        for (const [list, into] of [
          [r, rows],
          [b ?? [], baseRows],
        ] as const) {
          for (const x of list) {
            const base = into.find((y) => y.keepBlocks === keep && y.threads === THREADS[0] && y.k === x.k)?.allocsPerSec ?? x.allocsPerSec;
            into.push({ ...x, speedup: x.allocsPerSec / base });
          }
        }
        const last = r[r.length - 1]!;
        console.log(
          `linux-scalability (${what}), keepBlocks ${keep}, ${t} threads, ${LANES} lanes: ns/alloc ` +
            r.map((x, i) => `k=${x.k}:${b ? `${b[i]!.nsPerAlloc.toFixed(0)}→` : ''}${x.nsPerAlloc.toFixed(0)}`).join(' ') +
            `; at k=${last.k}: ${b ? `${(b[b.length - 1]!.allocsPerSec / 1e6).toFixed(2)} → ` : ''}${(last.allocsPerSec / 1e6).toFixed(2)} M allocs/s` +
            (b ? ` (baseline → this build, median of ${REPEATS})` : ''),
        );
      }
    }
    out[key] = rows;
    if (baseRows.length > 0) out[`${key}Baseline`] = { dir: BASELINE, rows: baseRows };
  }

  machine.loadAverage.push(loadavg()[0]!);
  mkdirSync(dirname(OUT), { recursive: true });
  writeFileSync(OUT, JSON.stringify(out, null, 2) + '\n');
  console.log(`wrote ${OUT}`);
}

const childSection = process.argv.indexOf('--child') >= 0 ? arg('child', '') : null;
if (childSection !== null) {
  const threads = Number(arg('threads', '1'));
  console.log(JSON.stringify(await runChild(childSection, threads)));
} else {
  main();
}
