/**
 * The application benchmark behind `smmo bench` (issue 6, item 7; paper §7.1, Fig. 10):
 * every app × backend × thread count with smmo, and the app's AOS and SOA baselines
 * (apps/baselines), at the same parameters, seed and iteration count.
 *
 * Method (our own statistics, not benchmark.js; docs/apps-benchmarks.md says why):
 *  - a measurement ("case") is one fresh child process (`node dist/bench/apps.js
 *    --child <json>`): create the runtime (or the baseline), the app's init, W warm-up
 *    iterations, then K timed iterations, each timed alone (performance.now), plus the
 *    process's CPU time over the K (process.cpuUsage: all threads of the process). A
 *    fresh process per case because V8 makes a method that has run on the accessor
 *    classes of several runtimes polymorphic, then megamorphic (bench/scaling.ts
 *    measured 54 µs vs 2.5 ms for the same pass), which would penalise later cases;
 *  - every case is repeated R times, the repeats interleaved (case 1, 2, …, n, then
 *    again), so that a busy phase of a shared machine hits all cases alike;
 *  - a case's figure is ms per iteration = (sum of its K iteration times) / K; reported:
 *    the median over the R repeats and the min … max range, the median of all R·K
 *    single iterations, and CPU ms per iteration (median over repeats);
 *  - correctness rides along: every case reports its digest; all repeats of a case must
 *    agree (determinism), and every case of an app must agree with the app's first smmo
 *    TypeScript case (exactly for integer digests, else within DIGEST_REL).
 *
 * benchmark.js does not fit: it decides itself how many times to call the function
 * (calibration cycles, then samples until maxTime), but a step changes the simulation's
 * state, so cases would time different iterations of a simulation whose cost changes as
 * it runs (wa-tor's waves); its minimum of 5 samples of ≥ 1 cycle each after
 * calibration would also take minutes per case for steps of 0.1–1 s; and it runs every
 * benchmark in one process (see above).
 */
import { availableParallelism, cpus, loadavg, platform, arch, totalmem } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { App, AppParams } from '../apps/app.js';
import { loadBaseline, WITHOUT_BASELINES } from '../apps/baselines/index.js';
import { appModule, loadApp } from '../apps/registry.js';
import { createRuntime, SmmoError, type Runtime } from '../index.js';
import { ownKernels } from '../runtime/kernels.js';
import { barChart, PALETTE, type Bar, type BarPanel } from './plot.js';
import { spawnNodeChild } from './child.js';

export type Impl = 'smmo' | 'aos' | 'soa';
export type BenchBackend = 'ts' | 'wasm' | 'webgpu';
export type SizeName = 'small' | 'medium';

/** Relative tolerance of float digests (nbody, collision) across backends; as `smmo run --check`. */
export const DIGEST_REL = 1e-5;

/** One measurement: what a child process runs. */
export interface BenchCase {
  app: string;
  impl: Impl;
  /** The smmo backend; baselines: 'ts' (they are plain TypeScript on one thread). */
  backend: BenchBackend;
  threads: number;
  /** The app's parameters, defaults applied (as the CLI passes them). */
  params: AppParams;
  iterations: number;
  warmup: number;
  seed: number;
  /** smmo: rt.reorder(App.reorder) after every `reorder`-th iteration, timed with the iteration (--reorder K). */
  reorder?: number;
}

/** What one child measured. */
export interface Sample {
  initMs: number;
  /** Wall-clock ms of each timed iteration. */
  iterationMs: number[];
  /** Process CPU ms (user + system, every thread) over the timed iterations. */
  cpuMs: number;
  digest: number;
  objects: Record<string, number>;
  /** smmo: which backend ran each method ("Class.method": "wasm"). */
  kernels?: Record<string, string>;
  /** smmo: heap blocks in use and fragmentation after the last iteration. */
  heap?: { bytes: number; usedBlocks: number; fragmentation: number };
}

export type ChildResult = { ok: true; sample: Sample } | { ok: false; skipped: string };

// ------------------------------------------------------------------ sizes

/**
 * Per app: its parameters and iterations at each size. small: 71 s in all for the
 * default cases on the 2-core dev VM (docs/apps-benchmarks.md); every app gets more than
 * DEFAULT_INLINE_BLOCKS (64) blocks, so that its passes go to the worker threads at all
 * (below that, a pass runs on the calling thread alone, whatever --threads says).
 * medium: about 4× the work per iteration.
 */
export const SIZES: Readonly<Record<SizeName, Readonly<Record<string, { params: AppParams; iterations: number }>>>> = {
  small: {
    nbody: { params: { bodies: 3000 }, iterations: 5 },
    collision: { params: { bodies: 3000 }, iterations: 5 },
    'wa-tor': { params: { width: 256, height: 256 }, iterations: 30 },
    'game-of-life': { params: { width: 256, height: 256 }, iterations: 20 },
    generation: { params: { width: 256, height: 256, cross: 20 }, iterations: 20 },
    traffic: { params: { intersections: 500 }, iterations: 200 },
    'linux-scalability': { params: { lanes: 2048, k: 64 }, iterations: 20 },
    structure: { params: { nodes: 5000 }, iterations: 10 },
    sugarscape: { params: { width: 256, height: 256 }, iterations: 20 },
    'barnes-hut': { params: { bodies: 5000 }, iterations: 10 },
  },
  medium: {
    nbody: { params: { bodies: 6000 }, iterations: 5 },
    collision: { params: { bodies: 6000 }, iterations: 5 },
    'wa-tor': { params: { width: 512, height: 512 }, iterations: 30 },
    'game-of-life': { params: { width: 512, height: 512 }, iterations: 20 },
    generation: { params: { width: 512, height: 512, cross: 40 }, iterations: 20 },
    traffic: { params: { intersections: 2000 }, iterations: 200 },
    'linux-scalability': { params: { lanes: 8192, k: 64 }, iterations: 20 },
    structure: { params: { nodes: 20000 }, iterations: 10 },
    sugarscape: { params: { width: 512, height: 512 }, iterations: 20 },
    'barnes-hut': { params: { bodies: 10000 }, iterations: 10 },
  },
};

/** The app's parameters: its flag defaults, then `given` on top. */
export function paramsFor(app: App, given: AppParams): AppParams {
  const p: AppParams = {};
  for (const fl of app.flags) if (fl.default !== undefined) p[fl.name] = fl.default;
  for (const [k, v] of Object.entries(given)) if (v !== undefined) p[k] = v;
  return p;
}

/** '1000 bodies', '128×128', '500 intersections'. */
export function sizeLabel(params: AppParams): string {
  if (params['bodies'] !== undefined) return `${params['bodies']} bodies`;
  if (params['intersections'] !== undefined) return `${params['intersections']} intersections`;
  if (params['lanes'] !== undefined) return `${params['lanes']} lanes, k=${params['k']}`;
  if (params['nodes'] !== undefined) return `${params['nodes']} nodes`;
  if (params['width'] !== undefined) return `${params['width']}×${params['height']}`;
  return Object.entries(params)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');
}

/** Whether any class of the app declares WASM kernels (otherwise --backend wasm runs the TypeScript methods). */
export function hasWasmKernels(app: App): boolean {
  return app.classes.some((c) => ownKernels(c).length > 0);
}

// ------------------------------------------------------------------ the child

const RESULT_TAG = 'SMMO-BENCH-RESULT ';

/** Run one case in this process (the child's work). */
export async function measure(c: BenchCase): Promise<ChildResult> {
  if (c.impl !== 'smmo') {
    const b = await loadBaseline(c.app, c.impl);
    if (b === undefined) return { ok: false, skipped: `${c.app} has no ${c.impl.toUpperCase()} baseline` };
    const t0 = performance.now();
    const run = b.create(c.params, c.seed);
    const initMs = performance.now() - t0;
    for (let k = 0; k < c.warmup; k++) run.step(k);
    const iterationMs: number[] = [];
    const cpu0 = process.cpuUsage();
    for (let k = c.warmup; k < c.warmup + c.iterations; k++) {
      const t = performance.now();
      run.step(k);
      iterationMs.push(performance.now() - t);
    }
    const cpu = process.cpuUsage(cpu0);
    return {
      ok: true,
      sample: { initMs, iterationMs, cpuMs: (cpu.user + cpu.system) / 1000, digest: run.digest(), objects: run.counts() },
    };
  }

  const app = await loadApp(c.app);
  if (app === undefined) throw new Error(`bench: no app '${c.app}'`);
  const t0 = performance.now();
  let rt: Runtime;
  try {
    rt = await createRuntime({
      classes: app.classes,
      heap: app.heapFor(c.params),
      threads: c.threads,
      backend: c.backend,
      modules: [appModule(app.name)!],
    });
  } catch (e) {
    // A backend this machine or build cannot provide (no GPU adapter, WASM not built) is
    // a skipped case, not a failed benchmark; a TypeScript runtime that cannot start is a bug.
    if (c.backend !== 'ts' && e instanceof SmmoError) return { ok: false, skipped: `${e.name}: ${e.message}` };
    throw e;
  }
  try {
    if (rt.backend !== c.backend) return { ok: false, skipped: `asked for backend ${c.backend}, the runtime runs ${rt.backend}` };
    await app.init(rt, c.params, c.seed);
    await rt.prepare();
    const initMs = performance.now() - t0;
    // --reorder K: after every K-th iteration, inside its time (the cost of the order is part of its gain).
    const spec = c.reorder !== undefined && typeof app.reorder === 'object' ? app.reorder : null;
    const reorder = async (k: number): Promise<void> => {
      if (spec === null || (k + 1) % c.reorder! !== 0) return;
      await rt.sync();
      spec.remap?.(rt, rt.reorder(spec.classes, spec.by));
    };
    for (let k = 0; k < c.warmup; k++) {
      await app.step(rt, k);
      await reorder(k);
    }
    await rt.sync();
    const iterationMs: number[] = [];
    const cpu0 = process.cpuUsage();
    for (let k = c.warmup; k < c.warmup + c.iterations; k++) {
      const t = performance.now();
      await app.step(rt, k);
      await reorder(k);
      // Backend 'webgpu': the last iteration is done when its results are on the host.
      if (k === c.warmup + c.iterations - 1) await rt.sync();
      iterationMs.push(performance.now() - t);
    }
    const cpu = process.cpuUsage(cpu0);
    const stats = rt.stats();
    return {
      ok: true,
      sample: {
        initMs,
        iterationMs,
        cpuMs: (cpu.user + cpu.system) / 1000,
        digest: app.digest(rt),
        objects: rt.objectCounts(),
        kernels: { ...stats.backend.methods },
        heap: { bytes: stats.heap.bytes, usedBlocks: stats.heap.usedBlocks, fragmentation: stats.heap.fragmentation },
      },
    };
  } finally {
    await rt.close();
  }
}

/** A case's process failed or ran out of time (`smmo bench` exits 1 with this message). */
export class BenchCaseError extends SmmoError {}

/** Run `c` in a fresh child process; rejects (BenchCaseError) when the child fails (its stderr in the message) or exceeds `timeoutMs`. */
export async function runChild(c: BenchCase, timeoutMs: number): Promise<ChildResult> {
  const script = fileURLToPath(import.meta.url);
  const r = await spawnNodeChild(script, ['--child', JSON.stringify(c)], { timeoutMs, stderr: 'pipe' });
  const line = r.stdout.split('\n').find((l) => l.startsWith(RESULT_TAG));
  if (r.code === 0 && line !== undefined) return JSON.parse(line.slice(RESULT_TAG.length)) as ChildResult;
  const why = r.timedOut
    ? `did not finish within ${timeoutMs / 1000} s (raise --timeout or lower the sizes)`
    : `exited with ${r.code ?? r.signal}`;
  throw new BenchCaseError(`case ${caseName(c)} ${why}:\n${r.stderr.trim().split('\n').slice(-15).join('\n')}`);
}

// ------------------------------------------------------------------ the plan and the report

export interface BenchPlan {
  apps: string[];
  backends: BenchBackend[];
  threads: number[];
  baselines: ('aos' | 'soa')[];
  size: SizeName;
  /** Per app: parameters replacing the size's (e.g. { 'wa-tor': { width: 256, height: 256 } }). */
  params: Record<string, AppParams>;
  /** Iterations of every app; undefined: the size's per app. */
  iterations: number | undefined;
  warmup: number;
  repeat: number;
  seed: number;
  timeoutMs: number;
  /** --reorder K: each smmo case also with App.reorder after every K-th iteration (apps that have one). */
  reorder?: number;
}

export interface BenchRow {
  app: string;
  impl: Impl;
  backend: BenchBackend;
  threads: number;
  /** --reorder K: this smmo row reordered after every K-th iteration. */
  reorder?: number;
  /** E.g. 'smmo wasm ×2', 'smmo ts ×1 reorder 5', 'baseline AOS'. */
  label: string;
  params: AppParams;
  iterations: number;
  warmup: number;
  skipped?: string;
  /** Per repeat: ms per iteration, CPU ms per iteration, init ms, digest. */
  repeats: { msPerIteration: number; cpuMsPerIteration: number; initMs: number; digest: number }[];
  /** Over the repeats' ms per iteration. */
  median: number;
  min: number;
  max: number;
  /** Median of every single timed iteration of every repeat. */
  iterationMedian: number;
  cpuMedian: number;
  /** This row's median / the app's SOA baseline median (undefined without that baseline). */
  vsSoa?: number;
  digest?: number;
  /** All repeats gave the same digest. */
  deterministic?: boolean;
  /** Agrees with the app's reference row (its first smmo ts row). */
  digestAgrees?: boolean;
  digestRel?: number;
  objects?: Record<string, number>;
  kernels?: Record<string, string>;
}

export interface Machine {
  cpu: string;
  cores: number;
  memoryGiB: number;
  platform: string;
  arch: string;
  node: string;
  /** 1, 5, 15-minute load averages when the benchmark started and ended. */
  loadStart: number[];
  loadEnd: number[];
}

export interface BenchReport {
  kind: 'smmo-bench-apps';
  date: string;
  machine: Machine;
  method: string;
  plan: BenchPlan;
  rows: BenchRow[];
  seconds: number;
}

export function caseName(c: Pick<BenchCase, 'app' | 'impl' | 'backend' | 'threads'>): string {
  return `${c.app} ${labelOf(c)}`;
}

function labelOf(c: Pick<BenchCase, 'impl' | 'backend' | 'threads' | 'reorder'>): string {
  if (c.impl !== 'smmo') return `baseline ${c.impl.toUpperCase()}`;
  return `smmo ${c.backend} ×${c.threads}${c.reorder !== undefined ? ` reorder ${c.reorder}` : ''}`;
}

export function machineInfo(): Machine {
  const c = cpus();
  return {
    cpu: c[0]?.model.trim() ?? 'unknown',
    cores: availableParallelism(),
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    platform: platform(),
    arch: arch(),
    node: process.version,
    loadStart: loadavg().map((x) => Math.round(x * 100) / 100),
    loadEnd: [],
  };
}

function median(xs: readonly number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

function digestsAgree(a: number, b: number): { agrees: boolean; rel: number } {
  if (a === b) return { agrees: true, rel: 0 };
  const rel = Math.abs(a - b) / Math.max(Math.abs(a), 1);
  // Integer digests (wa-tor, game-of-life, generation, traffic, structure: counts plus a hash) must be equal.
  return { agrees: !(Number.isInteger(a) && Number.isInteger(b)) && rel <= DIGEST_REL, rel };
}

/** The cases of a plan, in report order: per app the smmo cases (backend, threads), then the baselines. */
export async function planCases(plan: BenchPlan): Promise<{ cases: BenchCase[]; skipped: { c: BenchCase; why: string }[] }> {
  const cases: BenchCase[] = [];
  const skipped: { c: BenchCase; why: string }[] = [];
  for (const name of plan.apps) {
    const app = await loadApp(name);
    if (app === undefined) throw new Error(`bench: no app '${name}'`);
    const size = SIZES[plan.size][name];
    const params = paramsFor(app, { ...(size?.params ?? {}), ...(plan.params[name] ?? {}) });
    const iterations = plan.iterations ?? size?.iterations ?? app.iterations;
    const base = { app: name, params, iterations, warmup: plan.warmup, seed: plan.seed };
    for (const backend of plan.backends) {
      for (const threads of plan.threads) {
        const c: BenchCase = { ...base, impl: 'smmo', backend, threads };
        const r: BenchCase | null = plan.reorder === undefined ? null : { ...c, reorder: plan.reorder };
        const why =
          backend === 'wasm' && !hasWasmKernels(app) ? `${name} declares no WASM kernels (every method would run its TypeScript)` : null;
        if (why !== null) skipped.push({ c, why });
        else cases.push(c);
        if (r === null) continue;
        if (why !== null || typeof app.reorder !== 'object') skipped.push({ c: r, why: why ?? `${name} does not take part in --reorder` });
        else cases.push(r);
      }
    }
    for (const layout of plan.baselines) {
      const c: BenchCase = { ...base, impl: layout, backend: 'ts', threads: 1 };
      const none = WITHOUT_BASELINES.get(name);
      if (none !== undefined) skipped.push({ c, why: `${name} has no ${layout.toUpperCase()} baseline: ${none}` });
      else cases.push(c);
    }
  }
  return { cases, skipped };
}

/** Run every case of `plan` `plan.repeat` times (interleaved); `log` gets one line per measurement. */
export async function runBench(plan: BenchPlan, log: (line: string) => void): Promise<BenchReport> {
  const t0 = performance.now();
  const machine = machineInfo();
  const { cases, skipped } = await planCases(plan);
  const results: (ChildResult[] | undefined)[] = cases.map(() => []);
  let done = 0;
  const total = cases.length * plan.repeat;
  for (let r = 0; r < plan.repeat; r++) {
    for (let i = 0; i < cases.length; i++) {
      const c = cases[i]!;
      const prior = results[i]!;
      if (prior.length > 0 && !prior[0]!.ok) {
        done++; // skipped once: skipped for good (no adapter now means no adapter later)
        continue;
      }
      const res = await runChild(c, plan.timeoutMs);
      prior.push(res);
      done++;
      const what = res.ok
        ? `${(res.sample.iterationMs.reduce((a, b) => a + b, 0) / res.sample.iterationMs.length).toFixed(2)} ms/iteration`
        : `skipped: ${res.skipped.split('\n')[0]}`;
      log(`[${done}/${total}] ${caseName(c)} (${sizeLabel(c.params)}, repeat ${r + 1}/${plan.repeat}): ${what}`);
    }
  }

  const rows: BenchRow[] = [];
  for (const { c, why } of skipped) rows.push(emptyRow(c, why));
  cases.forEach((c, i) => {
    const res = results[i]!;
    const first = res[0];
    if (first !== undefined && !first.ok) {
      rows.push(emptyRow(c, first.skipped));
      return;
    }
    const samples = res.filter((x): x is { ok: true; sample: Sample } => x.ok).map((x) => x.sample);
    const per = samples.map((s) => s.iterationMs.reduce((a, b) => a + b, 0) / s.iterationMs.length);
    rows.push({
      app: c.app,
      impl: c.impl,
      backend: c.backend,
      threads: c.threads,
      ...(c.reorder !== undefined ? { reorder: c.reorder } : {}),
      label: labelOf(c),
      params: c.params,
      iterations: c.iterations,
      warmup: c.warmup,
      repeats: samples.map((s, k) => ({
        msPerIteration: per[k]!,
        cpuMsPerIteration: s.cpuMs / s.iterationMs.length,
        initMs: s.initMs,
        digest: s.digest,
      })),
      median: median(per),
      min: Math.min(...per),
      max: Math.max(...per),
      iterationMedian: median(samples.flatMap((s) => s.iterationMs)),
      cpuMedian: median(samples.map((s) => s.cpuMs / s.iterationMs.length)),
      digest: samples[0]!.digest,
      deterministic: samples.every((s) => s.digest === samples[0]!.digest),
      objects: samples[0]!.objects,
      ...(samples[0]!.kernels ? { kernels: samples[0]!.kernels } : {}),
    });
  });
  // Report order: as planned (skipped wasm rows in their place), then compare within each app.
  const order = (r: BenchRow): number =>
    plan.apps.indexOf(r.app) * 1e6 +
    (r.impl === 'smmo' ? 0 : r.impl === 'aos' ? 5e5 : 6e5) +
    plan.backends.indexOf(r.backend) * 1e3 +
    r.threads * 2 +
    (r.reorder !== undefined ? 1 : 0);
  rows.sort((a, b) => order(a) - order(b));
  for (const name of plan.apps) {
    const mine = rows.filter((r) => r.app === name && r.skipped === undefined);
    const soa = mine.find((r) => r.impl === 'soa');
    const ref = mine.find((r) => r.impl === 'smmo' && r.backend === 'ts' && r.reorder === undefined) ?? mine[0];
    for (const r of mine) {
      if (soa) r.vsSoa = r.median / soa.median;
      if (ref?.digest !== undefined && r.digest !== undefined) {
        const a = digestsAgree(ref.digest, r.digest);
        r.digestAgrees = a.agrees;
        r.digestRel = a.rel;
      }
    }
  }
  machine.loadEnd = loadavg().map((x) => Math.round(x * 100) / 100);
  return {
    kind: 'smmo-bench-apps',
    date: new Date().toISOString(),
    machine,
    method:
      `each case in a fresh child process: init, ${plan.warmup} warm-up iterations, then K timed iterations; ` +
      `${plan.repeat} repeats interleaved; ms per iteration = sum of the K iteration times / K; median and min … max over the repeats`,
    plan,
    rows,
    seconds: (performance.now() - t0) / 1000,
  };
}

function emptyRow(c: BenchCase, why: string): BenchRow {
  return {
    app: c.app,
    impl: c.impl,
    backend: c.backend,
    threads: c.threads,
    label: labelOf(c),
    params: c.params,
    iterations: c.iterations,
    warmup: c.warmup,
    skipped: why,
    repeats: [],
    median: NaN,
    min: NaN,
    max: NaN,
    iterationMedian: NaN,
    cpuMedian: NaN,
  };
}

// ------------------------------------------------------------------ output

const fix = (v: number, d = 2): string => (Number.isFinite(v) ? v.toFixed(d) : '-');

/** The text table: one block per app, one row per case. */
export function formatTable(report: BenchReport): string {
  const head = ['case', 'ms/iter median', 'min … max', 'iter median', 'cpu ms/iter', 'vs SOA', 'digest'];
  const lines: string[] = [];
  for (const name of report.plan.apps) {
    const rows = report.rows.filter((r) => r.app === name);
    if (rows.length === 0) continue;
    const r0 = rows[0]!;
    lines.push(`${name} (${sizeLabel(r0.params)}, ${r0.iterations} iterations after ${r0.warmup} warm-up, ${report.plan.repeat} repeats)`);
    const table = rows.map((r) =>
      r.skipped !== undefined
        ? [r.label, 'skipped', r.skipped.split('\n')[0]!.slice(0, 90), '', '', '', '']
        : [
            r.label,
            fix(r.median),
            `${fix(r.min)} … ${fix(r.max)}`,
            fix(r.iterationMedian),
            fix(r.cpuMedian),
            r.vsSoa !== undefined ? `${r.vsSoa.toFixed(2)}×` : '-',
            `${r.digestAgrees === false ? `DIFFERS (rel ${r.digestRel!.toExponential(1)})` : 'same'}${r.deterministic === false ? ', NOT deterministic' : ''}`,
          ],
    );
    const widths = head.map((h, i) => Math.max(h.length, ...table.filter((row) => row[1] !== 'skipped').map((row) => row[i]!.length)));
    const fmt = (row: string[]): string =>
      row[1] === 'skipped'
        ? `  ${row[0]!.padEnd(widths[0]!)}  skipped: ${row[2]}`
        : '  ' + row.map((c, i) => (i === 0 || i === row.length - 1 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
    lines.push(fmt(head).trimEnd(), ...table.map((row) => fmt(row).trimEnd()), '');
  }
  const m = report.machine;
  lines.push(
    `machine: ${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB, ${m.platform} ${m.arch}, Node.js ${m.node}; ` +
      `load average ${m.loadStart.join(' ')} at the start, ${m.loadEnd.join(' ')} at the end; ${report.seconds.toFixed(0)} s in all`,
  );
  return lines.join('\n');
}

const COLORS: Record<string, string> = { aos: '#999999', soa: '#555555', ts: PALETTE[0], wasm: PALETTE[1], webgpu: PALETTE[2] };

/** The bar chart: one panel per app, a bar per case (median, whisker min … max). */
export function plotReport(report: BenchReport): string {
  const panels: BarPanel[] = report.plan.apps
    .map((name) => {
      const rows = report.rows.filter((r) => r.app === name);
      const r0 = rows[0];
      return {
        title: r0 ? `${name} (${sizeLabel(r0.params)})` : name,
        bars: rows
          .filter((r) => r.skipped === undefined)
          .map((r): Bar => ({
            label: r.label,
            value: r.median,
            low: r.min,
            high: r.max,
            color: COLORS[r.impl === 'smmo' ? r.backend : r.impl]!,
            ...(r.vsSoa !== undefined && r.impl !== 'soa' ? { note: `${r.vsSoa.toFixed(1)}×` } : {}),
          })),
      };
    })
    .filter((p) => p.bars.length > 0);
  const m = report.machine;
  return barChart({
    title: 'smmo bench: ms per iteration (median of repeats; whiskers min … max; label: × SOA baseline)',
    subtitle: `${m.cpu}, ${m.cores} cores, Node.js ${m.node}, load average ${m.loadStart[0]} … ${m.loadEnd[0]}; ${report.date.slice(0, 10)}`,
    yLabel: 'ms per iteration',
    panels,
    legend: [
      { label: 'smmo ts', color: COLORS['ts']! },
      { label: 'smmo wasm', color: COLORS['wasm']! },
      { label: 'smmo webgpu', color: COLORS['webgpu']! },
      { label: 'baseline AOS (JS objects)', color: COLORS['aos']! },
      { label: 'baseline SOA (typed arrays)', color: COLORS['soa']! },
    ],
    panelWidth: 200,
  });
}

// ------------------------------------------------------------------ child entry point

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href && process.argv[2] === '--child') {
  const c = JSON.parse(process.argv[3]!) as BenchCase;
  const res = await measure(c);
  process.stdout.write(`${RESULT_TAG}${JSON.stringify(res)}\n`);
}
