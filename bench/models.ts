/**
 * User-style models against plain JavaScript: the models of bench/models/ (walkers,
 * epidemic, particles; each written against the public API as a new user would) with
 * compiled and with interpreted methods, on 1 … N threads, beside the same rules written
 * as plain single-threaded typed-array JavaScript (walkers-plain.ts, epidemic-plain.ts,
 * particles-plain.ts). Every run prints the digest; within a model they must agree.
 *
 *   node dist/bench/models.js [--model walkers|epidemic|particles|all] [--size 1024]
 *        [--steps 10] [--warmup 0] [--threads 1,2,4,8,16] [--runs 3] [--out bench-results/models.json]
 *        [--machine "name"] [--largest] [--reorder K] [--passes] [--webgpu [--no-gpu-validation] [--gpu-floats f32]]
 *        [--child-timeout S]
 *
 * --webgpu adds the row 'webgpu': the model on backend 'webgpu', one thread, every method
 * as WGSL generated from its compiled form (a pass left in TypeScript is an error here);
 * the timed steps end with `rt.sync()`, so the GPU's queued work is inside the time.
 * --warmup W runs W more untimed steps after the first, in every configuration (plain
 * JavaScript too), so the timed steps are the same steps of the model for every row: on
 * several threads every worker is a V8 isolate of its own that reaches its optimised code
 * separately, and the models' rare branches (an infection, a death) deoptimise each
 * worker's compiled loop the first time that worker takes them (--trace-deopt: about a
 * hundred such deoptimisations over epidemic's first 30 steps on 16 threads), so the first
 * steps on many threads are slower than the later ones (docs/benchmarks.md, "Sixteen
 * threads after the workers' warm-up").
 * --passes also times every do-all of the timed steps (the `parallelDo` calls of the
 * model's step, per Class.method) and prints ms per step per pass for each smmo row: which
 * pass scales and which does not.
 * --largest adds the rows 'largest': compiled, with RuntimeOptions.blockSize 'largest'
 * (every class 32 slots per block), on the same thread counts.
 * --reorder K adds the rows 'reorder': compiled, the model's agents put into the order of
 * their cell or tile (Runtime.reorder) after every K-th step, the reorder inside the step's
 * time, on the same thread counts.
 *
 * Each configuration runs in a fresh child process (a class registered with several
 * runtimes in one process makes V8's property accesses polymorphic), `--runs` times, in
 * turn (plain, interpreted, compiled × threads, plain, …) so that a busy phase of a
 * shared machine hits all of them alike; reported: the median ms per step (the first
 * step, which compiles the methods, is not timed) and ratios to plain JS on one thread.
 * Targets (issue "Compiled methods"): compiled on 1 thread ≤ 1.5× plain; on the 16-core
 * machine, 16 threads ≥ 5× faster than plain on one thread.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRuntime, type Runtime, type SmmoClass } from '../index.js';
import * as Walkers from './models/walkers.js';
import { PlainWalkers } from './models/walkers-plain.js';
import * as Epidemic from './models/epidemic.js';
import { PlainEpidemic } from './models/epidemic-plain.js';
import * as Particles from './models/particles.js';
import { PlainParticles } from './models/particles-plain.js';
import { childTimeoutMs, lastJsonLine, runNodeChild } from './child.js';

/** One model: its smmo side (the world is whatever init returns) and its plain side. */
interface Model {
  readonly classes: readonly SmmoClass[];
  readonly moduleUrl: string;
  /** What the grid's squares are called, and the class whose objects are counted. */
  readonly grid: string;
  readonly counted: SmmoClass;
  /**
   * Whether the GPU must give the CPU's digest (--webgpu): an integer model; a model whose
   * f32 fields take sums computed in f64 (JavaScript) gets them in double-single (48 bits,
   * runtime/compiler/emit-wgsl.ts W10) or with --gpu-floats f32 in f32 (W2) on the GPU, so
   * a float's last bit, and the hash of the bits, may differ.
   */
  readonly exactOnGpu: boolean;
  /** --reorder: the agents' class and the reference to their place. */
  readonly reorder: { cls: SmmoClass; by: string };
  init(rt: Runtime, width: number, height: number): Promise<unknown>;
  step(rt: Runtime, world: unknown): Promise<void>;
  digest(rt: Runtime, world: unknown): number;
  plain(width: number, height: number): { step(): void; digest(): number; population(): number };
}

const MODELS: Record<string, Model> = {
  walkers: {
    classes: Walkers.CLASSES,
    moduleUrl: Walkers.MODULE_URL,
    grid: 'tiles',
    counted: Walkers.Walker,
    exactOnGpu: false,
    reorder: { cls: Walkers.Walker, by: 'tile' },
    init: Walkers.init,
    step: (rt) => Walkers.step(rt),
    digest: (rt, w) => Walkers.digest(rt, w as number[]),
    plain: (w, h) => {
      const p = new PlainWalkers(w, h);
      return { step: () => p.step(), digest: () => p.digest(), population: () => p.walkers() };
    },
  },
  epidemic: {
    classes: Epidemic.CLASSES,
    moduleUrl: Epidemic.MODULE_URL,
    grid: 'cells',
    counted: Epidemic.Person,
    exactOnGpu: true,
    reorder: { cls: Epidemic.Person, by: 'cell' },
    init: Epidemic.init,
    step: (rt, w) => Epidemic.step(rt, w as Epidemic.World),
    digest: (rt, w) => Epidemic.digest(rt, w as Epidemic.World),
    plain: (w, h) => new PlainEpidemic(w, h),
  },
  particles: {
    classes: Particles.CLASSES,
    moduleUrl: Particles.MODULE_URL,
    grid: 'cells',
    counted: Particles.Particle,
    exactOnGpu: false,
    reorder: { cls: Particles.Particle, by: 'cell' },
    init: Particles.init,
    step: (rt, w) => Particles.step(rt, w as Particles.World),
    digest: (rt, w) => Particles.digest(rt, w as Particles.World),
    plain: (w, h) => new PlainParticles(w, h),
  },
};

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1]! : fallback;
}

/** A whole-number option ≥ min, or exit 2 with a message naming it. */
function wholeArg(name: string, fallback: string, min: number, what: string): number {
  const v = Number(arg(name, fallback));
  if (!(Number.isInteger(v) && v >= min)) {
    console.error(`--${name} ${arg(name, fallback)}: expected a whole number ≥ ${min}${what}`);
    process.exit(2);
  }
  return v;
}

const SIZE = wholeArg('size', '1024', 1, ' (cells per side)');
const STEPS = wholeArg('steps', '10', 2, ' (the first step is not timed)');
/** --warmup W: untimed steps after the first one, before the timed ones (every configuration). */
const WARMUP = wholeArg('warmup', '0', 0, ' (steps)');
const RUNS = wholeArg('runs', '3', 1, '');
const LARGEST = process.argv.includes('--largest');
/** --reorder K: rows with the agents reordered after every K-th step (0: without --reorder). */
const REORDER = process.argv.includes('--reorder') ? wholeArg('reorder', '', 1, ' (steps)') : 0;
const PASSES = process.argv.includes('--passes');
/** --webgpu: also run each model on backend 'webgpu' (its methods as generated WGSL); --no-gpu-validation: Dawn's validation off. */
const WEBGPU = process.argv.includes('--webgpu');
const GPU_VALIDATION = !process.argv.includes('--no-gpu-validation');
/** --gpu-floats f32: the generated kernels' non-integers in f32 (RuntimeOptions.webgpu.floats; default double-single). */
const GPU_F32 = process.argv.includes('--gpu-floats') && process.argv[process.argv.indexOf('--gpu-floats') + 1] === 'f32';
const THREAD_LIST = arg('threads', '1,2,4,8,16').split(',').map(Number);
if (!THREAD_LIST.every((n) => Number.isInteger(n) && n >= 1)) {
  console.error(`--threads ${arg('threads', '')}: expected whole numbers ≥ 1, separated by commas (e.g. 1,2,4,8,16)`);
  process.exit(2);
}
/** Thread counts above the machine's cores are left out (a 16-thread row means nothing on 2 cores). */
const THREADS = THREAD_LIST.filter((n) => process.argv.includes('--child') || n <= availableParallelism());
const OUT = arg('out', 'bench-results/models.json');
const MODEL = arg('model', 'all');
if (MODEL !== 'all' && !(MODEL in MODELS)) {
  console.error(`--model ${MODEL}: expected ${Object.keys(MODELS).join(', ')} or all`);
  process.exit(2);
}
const CHOSEN = MODEL === 'all' ? Object.keys(MODELS) : [MODEL];

interface Sample {
  msPerStep: number;
  digest: number;
  /** Objects of the counted class at the end (walkers, persons, particles). */
  population: number;
  /** --passes: ms per timed step spent in each do-all, by "Class.method". */
  passes?: Record<string, number>;
}

/** Time every parallelDo of `rt` into `into` (ms, by "Class.method") from now on. */
function timePasses(rt: Runtime, into: Record<string, number>): void {
  const run = rt.parallelDo.bind(rt);
  const timed: Runtime['parallelDo'] = async (cls, method, ...args) => {
    const t0 = performance.now();
    await run(cls, method, ...args);
    const key = `${cls.name}.${String(method)}`;
    into[key] = (into[key] ?? 0) + performance.now() - t0;
  };
  Object.defineProperty(rt, 'parallelDo', { value: timed, configurable: true });
}

async function child(m: Model, kind: string, threads: number): Promise<Sample> {
  if (kind === 'plain') {
    const p = m.plain(SIZE, SIZE);
    for (let i = 0; i <= WARMUP; i++) p.step();
    const t0 = performance.now();
    for (let i = 1; i < STEPS; i++) p.step();
    return { msPerStep: (performance.now() - t0) / (STEPS - 1), digest: p.digest(), population: p.population() };
  }
  const rt = await createRuntime({
    classes: m.classes,
    heap: Math.max(64 << 20, SIZE * SIZE * 160),
    compile: kind !== 'interpreted',
    blockSize: kind === 'largest' ? 'largest' : 'smallest',
    threads,
    modules: [m.moduleUrl],
    ...(kind === 'webgpu'
      ? { backend: 'webgpu' as const, webgpu: { validation: GPU_VALIDATION, ...(GPU_F32 ? { floats: 'f32' as const } : {}) } }
      : {}),
  });
  try {
    const world = await m.init(rt, SIZE, SIZE);
    await m.step(rt, world); // compiles the methods (compiled runs; the GPU's kernels) and warms up
    // Step i (1, 2, …): --warmup untimed steps, then the timed ones; a reorder after every K-th.
    const run = async (i: number): Promise<void> => {
      await m.step(rt, world);
      if (kind === 'reorder' && i % REORDER === 0) rt.reorder(m.reorder.cls, m.reorder.by); // the models keep no agent handles outside the heap
    };
    for (let i = 1; i <= WARMUP; i++) await run(i);
    await rt.sync(); // backend 'webgpu': the GPU's work done, the heap on the host (no-op elsewhere)
    const passes: Record<string, number> = {};
    if (PASSES) timePasses(rt, passes);
    const t0 = performance.now();
    for (let i = 1; i < STEPS; i++) await run(WARMUP + i);
    await rt.sync(); // the GPU's queued passes belong to the timed steps
    const ms = (performance.now() - t0) / (STEPS - 1);
    if (kind === 'webgpu') {
      const w = rt.stats().backend.webgpu!;
      if (w.fallbackPasses > 0) throw new Error(`passes in TypeScript on backend webgpu: ${JSON.stringify(w.fallbacks)}`);
    }
    for (const k of Object.keys(passes)) passes[k]! /= STEPS - 1;
    if (kind !== 'interpreted') {
      const c = rt.stats().compiled;
      const fell = Object.entries(c).filter(([, s]) => !s.compiled);
      if (fell.length > 0) throw new Error(`not compiled: ${fell.map(([k, s]) => `${k} (${s.reason})`).join('; ')}`);
    }
    return { msPerStep: ms, digest: m.digest(rt, world), population: rt.count(m.counted), ...(PASSES ? { passes } : {}) };
  } finally {
    await rt.close();
  }
}

const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

interface Row {
  kind: string;
  threads: number;
  msPerStep: number;
  min: number;
  max: number;
  vsPlain: number;
  digest: number;
  population: number;
  /** --passes: median ms per step of each do-all. */
  passes?: Record<string, number>;
}

/** Run one model's configurations `RUNS` times in turn; print its table; returns its rows. */
function bench(name: string, machine: { name: string; cpu: string; cores: number }): { rows: Row[]; digestsEqual: boolean } {
  const configs: { kind: string; threads: number }[] = [
    { kind: 'plain', threads: 1 },
    { kind: 'interpreted', threads: 1 },
    ...THREADS.map((threads) => ({ kind: 'compiled', threads })),
    ...(LARGEST ? THREADS.map((threads) => ({ kind: 'largest', threads })) : []),
    ...(REORDER > 0 ? THREADS.map((threads) => ({ kind: 'reorder', threads })) : []),
    ...(WEBGPU ? [{ kind: 'webgpu', threads: 1 }] : []),
  ];
  const samples = new Map<string, Sample[]>();
  const self = fileURLToPath(import.meta.url);
  for (let r = 0; r < RUNS; r++) {
    for (const c of configs) {
      const key = `${c.kind}:${c.threads}`;
      const res = runNodeChild(
        self,
        [
          '--child',
          c.kind,
          '--model',
          name,
          '--threads',
          String(c.threads),
          '--size',
          String(SIZE),
          '--steps',
          String(STEPS),
          '--warmup',
          String(WARMUP),
          ...(PASSES ? ['--passes'] : []),
          ...(REORDER > 0 ? ['--reorder', String(REORDER)] : []),
          ...(GPU_VALIDATION ? [] : ['--no-gpu-validation']),
          ...(GPU_F32 ? ['--gpu-floats', 'f32'] : []),
        ],
        { timeoutMs: childTimeoutMs(), stderr: 'pipe' },
      );
      if (res.failure !== undefined) throw new Error(`${name} ${key} ${res.failure}`);
      const s = lastJsonLine<Sample>(res.stdout);
      (samples.get(key) ?? samples.set(key, []).get(key)!).push(s);
      process.stderr.write(`${name} run ${r + 1}/${RUNS} ${key.padEnd(14)} ${s.msPerStep.toFixed(2)} ms/step digest ${s.digest}\n`);
    }
  }
  const plain = median(samples.get('plain:1')!.map((s) => s.msPerStep));
  const digests = new Set(
    [...samples.entries()]
      .filter(([k]) => !k.startsWith('webgpu:'))
      .flatMap(([, v]) => v)
      .map((s) => s.digest),
  );
  const gpuDigests = new Set((samples.get('webgpu:1') ?? []).map((s) => s.digest));
  const rows = configs.map((c): Row => {
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
      population: list[0]!.population,
      ...(list[0]!.passes
        ? { passes: Object.fromEntries(Object.keys(list[0]!.passes).map((k) => [k, median(list.map((s) => s.passes?.[k] ?? NaN))])) }
        : {}),
    };
  });
  console.log(
    `${name} model, ${SIZE}×${SIZE} ${MODELS[name]!.grid}, ${STEPS - 1} timed steps${WARMUP > 0 ? ` after ${WARMUP + 1} untimed` : ''}, median of ${RUNS} runs; ${machine.cpu}, ${machine.cores} cores${machine.name ? ` (${machine.name})` : ''}`,
  );
  console.log('kind          threads   ms/step (min–max)        × plain JS, 1 thread');
  for (const r of rows) {
    console.log(
      `${r.kind.padEnd(13)} ${String(r.threads).padStart(7)}   ${r.msPerStep.toFixed(2).padStart(8)} (${r.min.toFixed(2)}–${r.max.toFixed(2)})   ${r.vsPlain.toFixed(2)}`,
    );
  }
  if (PASSES) {
    console.log('ms per step in each do-all (median):');
    for (const r of rows) {
      if (r.passes === undefined) continue;
      const cells = Object.entries(r.passes).map(([k, v]) => `${k} ${v.toFixed(2)}`);
      console.log(`  ${r.kind.padEnd(11)} ${String(r.threads).padStart(2)}: ${cells.join(' | ')}`);
    }
  }
  console.log(
    digests.size === 1
      ? `digests: all equal (${[...digests][0]}); ${MODELS[name]!.counted.name} objects at the end: ${rows[0]!.population}`
      : `DIGESTS DIFFER: ${[...digests].join(', ')}`,
  );
  let gpuOk = true;
  if (WEBGPU) {
    const same = gpuDigests.size === 1 && digests.has([...gpuDigests][0]!);
    gpuOk = same || !MODELS[name]!.exactOnGpu;
    console.log(
      same
        ? 'webgpu: the same digest'
        : MODELS[name]!.exactOnGpu
          ? `WEBGPU DIGEST DIFFERS: ${[...gpuDigests].join(', ')}`
          : `webgpu: digest ${[...gpuDigests].join(', ')} (${GPU_F32 ? 'f32 arithmetic on the GPU where JavaScript sums in f64' : "double-single arithmetic on the GPU: 48 bits, not f64's 53"}: docs/webgpu.md, "Generated kernels")`,
    );
  }
  console.log('');
  return { rows, digestsEqual: digests.size === 1 && gpuOk };
}

async function main(): Promise<void> {
  if (process.argv.includes('--child')) {
    const s = await child(MODELS[MODEL]!, arg('child', 'plain'), Number(arg('threads', '1')));
    process.stdout.write(JSON.stringify(s) + '\n');
    return;
  }
  const c = cpus();
  const machine = { name: arg('machine', ''), cpu: c[0]?.model ?? '?', cores: c.length, node: process.version, load: loadavg() };
  const models = CHOSEN.map((name) => ({ model: name, ...bench(name, machine) }));
  machine.load = loadavg();
  console.log(`load average after the runs: ${machine.load.map((l) => l.toFixed(2)).join(' ')}`);
  mkdirSync(dirname(OUT), { recursive: true });
  writeFileSync(OUT, JSON.stringify({ size: SIZE, steps: STEPS, warmup: WARMUP, runs: RUNS, machine, models }, null, 2) + '\n');
  if (models.some((m) => !m.digestsEqual)) process.exitCode = 1;
}

await main();
