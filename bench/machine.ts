/**
 * What the machine itself gives N threads, with no smmo code involved: the ceiling that
 * any multi-threaded JavaScript runtime meets on it. Four loops, each run alone on 1, 2,
 * 4, … N worker threads at once (each thread its own copy of the loop, no sharing but the
 * read-only array of the memory loops):
 *
 *   latency   one dependent chain of integer multiplies (one instruction at a time: leaves
 *             the core's other units idle, so two hardware threads on one core barely meet)
 *   ilp       six independent add/xor/shift chains (fills the core's integer units: what
 *             an arithmetic-heavy method does; two hardware threads on one core share them)
 *   random    a dependent chain of loads at random positions of a 64 MiB array (cache and
 *             memory latency: reference-chasing methods)
 *   stream    loads with a 64-byte stride through the array (memory bandwidth)
 *
 * Printed per loop and thread count: operations per µs per thread and in all, and the
 * speed-up of all threads over one. The first thread count is measured again after the
 * rest of the series, and the speed-ups divide by the faster of its two measurements
 * (printed: the second one and the divisor; in the JSON: `baselines`). A machine whose 16
 * "cores" are 8 cores with two hardware threads each shows it in `ilp` (about 8–10× at 16
 * threads) but not in `latency` (about 15×); docs/benchmarks.md "What the device host gives
 * 16 threads" reads the device host's figures this way.
 *
 *   node dist/bench/machine.js [--threads 1,2,4,8,16] [--ms 400] [--loops latency,ilp,random,stream] [--out FILE]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';

const LOOPS = ['latency', 'ilp', 'random', 'stream'] as const;
type Loop = (typeof LOOPS)[number];

interface Job {
  readonly loop: Loop;
  readonly memory: SharedArrayBuffer;
  readonly ms: number;
  readonly index: number;
}

/** One thread's loop for `ms` milliseconds, after a quarter of that untimed (V8 optimises the loop first): operations per µs. */
function work(job: Job): number {
  run({ ...job, ms: job.ms / 4 });
  return run(job);
}

function run(job: Job): number {
  const u = new Uint32Array(job.memory);
  const mask = u.length - 1;
  const batch = 100_000;
  let x = job.index * 7919 + 1;
  let sink = 0;
  let ops = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < job.ms) {
    if (job.loop === 'latency') {
      for (let i = 0; i < batch; i++) x = (Math.imul(x ^ (x >>> 15), 0x2c1b3c6d) + i) | 0;
      sink ^= x;
    } else if (job.loop === 'ilp') {
      let a = x, b = x + 1, c = x + 2, d = x + 3, e = x + 5, f = x + 7; // prettier-ignore
      for (let i = 0; i < batch; i++) {
        a = ((a + i) ^ (a << 1)) | 0;
        b = ((b + i) ^ (b << 1)) | 0;
        c = ((c + i) ^ (c << 1)) | 0;
        d = ((d + i) ^ (d << 1)) | 0;
        e = ((e + i) ^ (e << 1)) | 0;
        f = ((f + i) ^ (f << 1)) | 0;
      }
      x = (a + b + c + d + e + f) | 0;
      sink ^= x;
    } else if (job.loop === 'random') {
      for (let i = 0; i < batch; i++) x = u[(x + i) & mask]!;
      sink ^= x;
    } else {
      const base = (job.index * 1_000_003) & mask;
      for (let i = 0; i < batch; i++) sink = (sink + u[(base + i * 16) & mask]!) | 0;
    }
    ops += batch;
  }
  const us = (performance.now() - t0) * 1000;
  return ops / us + (sink === 0.5 ? 1 : 0); // sink keeps the loops alive
}

async function measure(loop: Loop, threads: number, memory: SharedArrayBuffer, ms: number): Promise<number[]> {
  const url = new URL(import.meta.url);
  const workers = Array.from({ length: threads }, (_, index) => new Worker(url, { workerData: { loop, memory, ms, index } satisfies Job }));
  try {
    return await Promise.all(
      workers.map(
        (w) =>
          new Promise<number>((resolve, reject) => {
            w.once('message', (v: number) => resolve(v));
            w.once('error', reject);
          }),
      ),
    );
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      threads: { type: 'string', default: '' },
      ms: { type: 'string', default: '400' },
      loops: { type: 'string', default: LOOPS.join(',') },
      out: { type: 'string', default: 'bench-results/machine.json' },
      machine: { type: 'string', default: '' },
    },
  });
  const cores = availableParallelism();
  const threads = (values.threads || [1, 2, 4, 8, 16, 32].filter((n) => n <= cores).join(','))
    .split(',')
    .map(Number)
    .filter((n) => Number.isInteger(n) && n >= 1 && n <= 256);
  const ms = Number(values.ms);
  if (!(ms >= 10 && ms <= 10_000)) throw new Error(`--ms ${values.ms}: give 10 … 10000 milliseconds per measurement`);
  const loops = values.loops.split(',').map((l) => {
    if (!(LOOPS as readonly string[]).includes(l)) throw new Error(`--loops: '${l}' is not one of ${LOOPS.join(', ')}`);
    return l as Loop;
  });
  // 64 MiB of pseudo-random positions for `random` (a permutation is not needed: the chain mixes in i).
  const memory = new SharedArrayBuffer(64 << 20);
  const u = new Uint32Array(memory);
  for (let i = 0; i < u.length; i++) u[i] = (Math.imul(i, 0x9e3779b1) >>> 0) & (u.length - 1);
  const cpu = cpus()[0]?.model.trim() ?? 'unknown';
  console.log(`${cpu}, ${cores} logical cores${values.machine ? ` (${values.machine})` : ''}; ${ms} ms per measurement`);
  console.log('loop      threads   ops/µs per thread (min–max)   all threads   × one thread');
  const rows: { loop: Loop; threads: number; perThread: number; min: number; max: number; total: number; speedup: number }[] = [];
  const baselines: { loop: Loop; threads: number; first: number; last: number }[] = [];
  for (const loop of loops) {
    // The first thread count is measured again after the others, and the ratios divide by
    // the faster of the two: a host whose single thread runs at one of two speeds from one
    // run to the next (the device host: ilp 200 and 406 ops/µs a minute apart) would
    // otherwise make every ratio of the series depend on that draw.
    const measured: { n: number; r: number[] }[] = [];
    for (const n of threads) measured.push({ n, r: await measure(loop, n, memory, ms) });
    const sum = (r: number[]): number => r.reduce((a, b) => a + b, 0);
    const n0 = threads[0]!;
    const first = sum(measured[0]!.r) / n0;
    const last = threads.length > 1 ? sum(await measure(loop, n0, memory, ms)) / n0 : first;
    baselines.push({ loop, threads: n0, first, last });
    const one = Math.max(first, last);
    for (const { n, r } of measured) {
      const total = sum(r);
      const row = { loop, threads: n, perThread: total / n, min: Math.min(...r), max: Math.max(...r), total, speedup: total / one };
      rows.push(row);
      console.log(
        `${loop.padEnd(9)} ${String(n).padStart(7)}   ${row.perThread.toFixed(1).padStart(8)} (${row.min.toFixed(1)}–${row.max.toFixed(1)})`.padEnd(
          45,
        ) + `${total.toFixed(0).padStart(11)}   ${row.speedup.toFixed(2).padStart(12)}`,
      );
    }
    if (threads.length > 1)
      console.log(
        `${''.padEnd(9)} ${String(n0).padStart(7)}   ${last.toFixed(1).padStart(8)} per thread again after the series; ratios divide by ${one.toFixed(1)}`,
      );
  }
  mkdirSync(dirname(values.out), { recursive: true });
  writeFileSync(
    values.out,
    JSON.stringify(
      { machine: { name: values.machine, cpu, cores, node: process.version, load: loadavg() }, ms, rows, baselines },
      null,
      2,
    ) + '\n',
  );
}

if (isMainThread) await main();
else parentPort!.postMessage(work(workerData as Job));
