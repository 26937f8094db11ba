/**
 * User-style models against plain JavaScript: the walkers model (bench/models/walkers.ts,
 * written against the public API as a new user would) with compiled and with interpreted
 * methods, on 1 … N threads, beside the same rules written as plain single-threaded
 * typed-array JavaScript (walkers-plain.ts). Every run prints the digest; they must agree.
 *
 *   node dist/bench/models.js [--size 1024] [--steps 10] [--threads 1,2,4,8,16]
 *        [--runs 3] [--out bench-results/models.json] [--machine "name"]
 *
 * Each configuration runs in a fresh child process (a class registered with several
 * runtimes in one process makes V8's property accesses polymorphic), `--runs` times, in
 * turn (plain, interpreted, compiled × threads, plain, …) so that a busy phase of a
 * shared machine hits all of them alike; reported: the median ms per step (the first
 * step, which compiles the methods, is not timed) and ratios to plain JS on one thread.
 * Targets (issue "Compiled methods"): compiled on 1 thread ≤ 1.5× plain; on the 16-core
 * machine, 16 threads ≥ 5× faster than plain on one thread.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRuntime } from '../index.js';
import { CLASSES, MODULE_URL, Walker, digest, init, step } from './models/walkers.js';
import { PlainWalkers } from './models/walkers-plain.js';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1]! : fallback;
}

const SIZE = Number(arg('size', '1024'));
const STEPS = Number(arg('steps', '10'));
const RUNS = Number(arg('runs', '3'));
const THREADS = arg('threads', '1,2,4,8,16')
  .split(',')
  .map(Number)
  .filter((n) => Number.isInteger(n) && n >= 1 && (process.argv.includes('--child') || n <= availableParallelism()));
const OUT = arg('out', 'bench-results/models.json');

interface Sample {
  msPerStep: number;
  digest: number;
  walkers: number;
}

async function child(kind: string, threads: number): Promise<Sample> {
  if (kind === 'plain') {
    const p = new PlainWalkers(SIZE, SIZE);
    p.step();
    const t0 = performance.now();
    for (let i = 1; i < STEPS; i++) p.step();
    return { msPerStep: (performance.now() - t0) / (STEPS - 1), digest: p.digest(), walkers: p.walkers() };
  }
  const rt = await createRuntime({
    classes: CLASSES,
    heap: Math.max(64 << 20, SIZE * SIZE * 160),
    compile: kind === 'compiled',
    threads,
    modules: [MODULE_URL],
  });
  try {
    const tiles = await init(rt, SIZE, SIZE);
    await step(rt); // compiles the methods (compiled runs) and warms up
    const t0 = performance.now();
    for (let i = 1; i < STEPS; i++) await step(rt);
    const ms = (performance.now() - t0) / (STEPS - 1);
    if (kind === 'compiled') {
      const c = rt.stats().compiled;
      const fell = Object.entries(c).filter(([, s]) => !s.compiled);
      if (fell.length > 0) throw new Error(`not compiled: ${fell.map(([k, s]) => `${k} (${s.reason})`).join('; ')}`);
    }
    return { msPerStep: ms, digest: digest(rt, tiles), walkers: rt.count(Walker) };
  } finally {
    await rt.close();
  }
}

const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  if (process.argv.includes('--child')) {
    const s = await child(arg('child', 'plain'), Number(arg('threads', '1')));
    process.stdout.write(JSON.stringify(s) + '\n');
    return;
  }
  const configs: { kind: string; threads: number }[] = [
    { kind: 'plain', threads: 1 },
    { kind: 'interpreted', threads: 1 },
    ...THREADS.map((threads) => ({ kind: 'compiled', threads })),
  ];
  const samples = new Map<string, Sample[]>();
  const self = fileURLToPath(import.meta.url);
  for (let r = 0; r < RUNS; r++) {
    for (const c of configs) {
      const key = `${c.kind}:${c.threads}`;
      const res = spawnSync(
        process.execPath,
        [self, '--child', c.kind, '--threads', String(c.threads), '--size', String(SIZE), '--steps', String(STEPS)],
        {
          encoding: 'utf8',
          maxBuffer: 1 << 20,
        },
      );
      if (res.status !== 0) throw new Error(`${key} failed (exit ${res.status ?? res.signal}):\n${res.stderr}`);
      const s = JSON.parse(res.stdout.trim().split('\n').pop()!) as Sample;
      (samples.get(key) ?? samples.set(key, []).get(key)!).push(s);
      process.stderr.write(`run ${r + 1}/${RUNS} ${key.padEnd(14)} ${s.msPerStep.toFixed(2)} ms/step digest ${s.digest}\n`);
    }
  }
  const plain = median(samples.get('plain:1')!.map((s) => s.msPerStep));
  const digests = new Set([...samples.values()].flat().map((s) => s.digest));
  const rows = configs.map((c) => {
    const list = samples.get(`${c.kind}:${c.threads}`)!;
    const ms = median(list.map((s) => s.msPerStep));
    return {
      kind: c.kind,
      threads: c.threads,
      msPerStep: ms,
      min: Math.min(...list.map((s) => s.msPerStep)),
      max: Math.max(...list.map((s) => s.msPerStep)),
      vsPlain: ms / plain,
      digest: list[0]!.digest,
      walkers: list[0]!.walkers,
    };
  });
  const c = cpus();
  const machine = { name: arg('machine', ''), cpu: c[0]?.model ?? '?', cores: c.length, node: process.version, load: loadavg() };
  console.log(
    `walkers model, ${SIZE}×${SIZE} tiles, ${STEPS - 1} timed steps, median of ${RUNS} runs; ${machine.cpu}, ${machine.cores} cores${machine.name ? ` (${machine.name})` : ''}`,
  );
  console.log('kind          threads   ms/step (min–max)        × plain JS, 1 thread');
  for (const r of rows) {
    console.log(
      `${r.kind.padEnd(13)} ${String(r.threads).padStart(7)}   ${r.msPerStep.toFixed(2).padStart(8)} (${r.min.toFixed(2)}–${r.max.toFixed(2)})   ${r.vsPlain.toFixed(2)}`,
    );
  }
  console.log(digests.size === 1 ? `digests: all equal (${[...digests][0]})` : `DIGESTS DIFFER: ${[...digests].join(', ')}`);
  mkdirSync(dirname(OUT), { recursive: true });
  writeFileSync(
    OUT,
    JSON.stringify({ model: 'walkers', size: SIZE, steps: STEPS, runs: RUNS, machine, rows, digestsEqual: digests.size === 1 }, null, 2) +
      '\n',
  );
  if (digests.size !== 1) process.exitCode = 1;
}

await main();
