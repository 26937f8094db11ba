/**
 * Memory efficiency (paper §7.2, Fig. 11; issue 6 and issue 15 acceptance): for each of
 * the nine object apps with baselines, the largest problem that runs N iterations within
 * a memory budget B, with smmo and with the plain-JS-objects baseline (AOS,
 * apps/<app>/baseline_aos.ts).
 *
 *   node dist/bench/memory.js [--apps wa-tor,game-of-life | all] [--budgets 64,128] (MiB)
 *        [--iterations-<app> N] [--precision 0.02] [--jobs 1]
 *        [--smmo-old-space 32] [--semi-space 1] [--timeout 600] [--seed 42]
 *        [--out bench-results/memory.json] [--plot bench-results/memory.svg]
 *
 * "Fits in B" means, as the paper gives every allocator the same heap:
 *  - AOS: a child `node --max-old-space-size=B --max-semi-space-size=1` completes
 *    the N iterations (V8's old space holds every object; the young generation is
 *    kept to 3 MiB so it cannot add a second budget); running out is V8's fatal
 *    "heap out of memory" (or a GC death spiral past --timeout);
 *  - smmo: a child with the runtime's heap = B bytes (WebAssembly.Memory: blocks,
 *    bitmaps, block list) and `--max-old-space-size=<smmo-old-space>` for the JS side
 *    (code, the app's start list and cell table) completes them; running out is a
 *    HeapExhaustedError (or V8's, if the JS side outgrows its cap — recorded as such).
 *    The JS side's peak is reported, so the comparison's fine print is visible.
 *
 * The size parameter (SPECS below): the grid's side for the grid apps (wa-tor,
 * game-of-life, generation, sugarscape: square grids, "units" = cells), --bodies for
 * nbody, collision and barnes-hut, --intersections for traffic, --nodes for structure.
 *
 * N must cover each app's allocation peak (the default --iterations-<app>; measured with
 * the AOS baseline's counts() at the calibration size, seed 42):
 *  - wa-tor 80: agents and blocks peak in the first wave (iterations ~50–70 at seed 42:
 *    bench/fragmentation.ts shows it);
 *  - game-of-life 10: the population only falls from a 25 % random field;
 *  - nbody 0 (the init only): no object is allocated or destroyed after the init, and a
 *    step is O(n²) (10¹² pair interactions for one step at the million bodies that fit);
 *  - collision 0 (the init only): bodies only merge (are destroyed) after the init; the
 *    steps are O(n²) as nbody's;
 *  - barnes-hut 1: the init builds the quadtree; a step re-inserts the bodies that left
 *    their slot (new TreeNodes) before it deletes the emptied TreeNodes, so its peak is
 *    above the init's. The TreeNode count stays within 0.2 % of the init's over 10 steps
 *    at 2000 bodies, so one step shows that peak; a step's work grows as n² (fixed
 *    opening distance), so one step only;
 *  - generation 30 (crosses with arms of 20 cells, as `smmo bench --size small`): the
 *    crosses fill the grid by step ~20 (the cross lattice's spacing does not grow with
 *    the grid, so neither does that step), after which the counts stay flat;
 *  - structure 3: springs and nodes are only destroyed after the init (fracture);
 *  - sugarscape 5: the random start (27 % of cells with an agent) is the population's
 *    peak; most agents starve in the first steps. Its later boom (step ~160 at 128²)
 *    reaches ~80 % of the start's agents, and is not run (too slow at these sizes);
 *  - traffic 300: cars are only created (producers, probability 0.02 a step) and their
 *    number still grows at 1000 steps; at 300 they are ~4 % of the objects (Cells
 *    dominate), at 1000 ~9 %. N = 300 is a compromise with the run time, so traffic's
 *    figures hold for a network 300 steps in, not for its steady state.
 *
 * Search, per app × implementation × budget: a calibration run at the app's calibration
 * size (no limits) measures bytes per unit; the size it predicts for B is probed, then
 * stepped by 4 % until one size fits and the next does not, then bisected until the two
 * differ by less than --precision (relative, in the size parameter). Every probe is a
 * fresh child process; --jobs searches run side by side (default 1: one probe at a time).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { loadBaseline } from '../apps/baselines/index.js';
import type { AppParams } from '../apps/app.js';
import { loadApp } from '../apps/registry.js';
import { createRuntime, HeapExhaustedError, type Runtime } from '../index.js';
import { machineInfo, paramsFor, type Machine } from './apps.js';
import { spawnNodeChild } from './child.js';
import { barChart, PALETTE } from './plot.js';

type Impl = 'smmo' | 'aos';
const MiB = 2 ** 20;
const RESULT_TAG = 'SMMO-MEMORY-RESULT ';

/** How one app's problem size is given, and its default N (the file header says why). */
export interface SizeSpec {
  /** What the size counts: 'side' (a square grid: units = side²) or the app's flag ('bodies', …). */
  param: 'side' | 'bodies' | 'intersections' | 'nodes';
  /** Size of the calibration run. */
  calibration: number;
  /** Default N (--iterations-<app>). */
  iterations: number;
  /** Parameters besides the size (defaults of the app's flags otherwise). */
  extra?: AppParams;
  /** What one unit is, for the tables: 'cells', 'bodies', … */
  unit: string;
}

export const SPECS: Readonly<Record<string, SizeSpec>> = {
  nbody: { param: 'bodies', calibration: 2000, iterations: 0, unit: 'bodies' },
  collision: { param: 'bodies', calibration: 2000, iterations: 0, unit: 'bodies' },
  'wa-tor': { param: 'side', calibration: 128, iterations: 80, unit: 'cells' },
  'game-of-life': { param: 'side', calibration: 128, iterations: 10, unit: 'cells' },
  generation: { param: 'side', calibration: 128, iterations: 30, extra: { cross: 20 }, unit: 'cells' },
  traffic: { param: 'intersections', calibration: 100, iterations: 300, unit: 'intersections' },
  structure: { param: 'nodes', calibration: 5000, iterations: 3, unit: 'nodes' },
  sugarscape: { param: 'side', calibration: 128, iterations: 5, unit: 'cells' },
  'barnes-hut': { param: 'bodies', calibration: 2000, iterations: 1, unit: 'bodies' },
};

/** The app's parameters for problem size `size` (flag defaults for the rest). */
export function paramsAt(spec: SizeSpec, size: number): AppParams {
  return spec.param === 'side' ? { ...spec.extra, width: size, height: size } : { ...spec.extra, [spec.param]: size };
}

/** Units (cells, bodies, …) of problem size `size`. */
export function unitsOf(spec: SizeSpec, size: number): number {
  return spec.param === 'side' ? size * size : size;
}

/** '393²', '12 000 bodies'. */
export function sizeText(spec: SizeSpec, size: number): string {
  return spec.param === 'side' ? `${size}²` : `${size} ${spec.unit}`;
}

interface Probe {
  app: string;
  impl: Impl;
  /** The size parameter: a grid's side, or bodies / intersections / nodes. */
  size: number;
  iterations: number;
  seed: number;
  /** smmo: heap bytes; aos: ignored (the limit is V8's flag). 0: unlimited (calibration). */
  heapBytes: number;
}

interface ProbeResult {
  fits: boolean;
  /** Why it did not fit: 'HeapExhaustedError …', 'V8 heap out of memory', 'timeout'. */
  reason?: string;
  /** Iterations completed (init = 0). */
  completed?: number;
  seconds: number;
  /** Peak of the V8 heap in use (MiB), sampled after init and after every iteration. */
  peakJsHeapMiB?: number;
  /** When the V8 heap and (smmo) the heap blocks peaked: 0 after the init, k after iteration k. */
  peakJsHeapAt?: number;
  peakBlocksAt?: number;
  /** JS heap in use before the app's state was created (MiB). */
  baseJsHeapMiB?: number;
  /** Peak of the ArrayBuffer memory (MiB) the app made, outside the smmo heap (smmo: the cell table). */
  peakExtraBuffersMiB?: number;
  /** smmo: peak heap blocks in use × block bytes (MiB), and the heap's fixed part (bitmaps, block list). */
  peakBlocksMiB?: number;
  fixedMiB?: number;
  /** The child's peak resident set (MiB; process.resourceUsage().maxRSS): everything, transient init data and Node itself included. */
  maxRssMiB?: number;
  digest?: number;
}

// ------------------------------------------------------------------ child

async function child(p: Probe): Promise<ProbeResult> {
  const t0 = performance.now();
  // Calibration and smmo probes run with --expose-gc: collect first, so that garbage does not count as data.
  const gc = (globalThis as { gc?: () => void }).gc;
  const used = (): number => (gc?.(), process.memoryUsage().heapUsed / MiB);
  // ArrayBuffers made by the app (smmo: the cell table; the start list). process.memoryUsage()
  // does not count the smmo heap (a WebAssembly.Memory) among them.
  const buffers0 = process.memoryUsage().arrayBuffers;
  let peakBuffers = 0;
  const buffers = (): void => void (peakBuffers = Math.max(peakBuffers, (process.memoryUsage().arrayBuffers - buffers0) / MiB));
  const app = await loadApp(p.app);
  if (app === undefined) throw new Error(`no app ${p.app}`);
  const params = paramsFor(app, paramsAt(SPECS[p.app]!, p.size));
  let peak = used();
  let peakAt = 0;
  const sample = (at: number): void => {
    const u = used();
    if (u > peak) [peak, peakAt] = [u, at];
    buffers();
  };
  const base = peak;
  if (p.impl === 'aos') {
    const b = (await loadBaseline(p.app, 'aos'))!;
    const run = b.create(params, p.seed);
    sample(0);
    for (let k = 0; k < p.iterations; k++) {
      run.step(k);
      sample(k + 1);
    }
    return {
      fits: true,
      completed: p.iterations,
      seconds: (performance.now() - t0) / 1000,
      peakJsHeapMiB: peak,
      peakJsHeapAt: peakAt,
      baseJsHeapMiB: base,
      peakExtraBuffersMiB: peakBuffers,
      maxRssMiB: process.resourceUsage().maxRSS / 1024,
      digest: run.digest(),
    };
  }
  const rt: Runtime = await createRuntime({ classes: app.classes, heap: p.heapBytes > 0 ? p.heapBytes : app.heapFor(params) });
  let k = -1; // -1: in the app's init
  let peakBlocks = 0;
  let peakBlocksAt = 0;
  const s0 = rt.stats();
  const fixedMiB = (s0.heap.bytes - s0.heap.blocks * s0.heap.blockBytes) / MiB;
  try {
    await app.init(rt, params, p.seed);
    peakBlocks = rt.stats().heap.usedBlocks;
    sample(0);
    for (k = 0; k < p.iterations; k++) {
      await app.step(rt, k);
      const blocks = rt.stats().heap.usedBlocks;
      if (blocks > peakBlocks) [peakBlocks, peakBlocksAt] = [blocks, k + 1];
      sample(k + 1);
    }
    return {
      fits: true,
      completed: p.iterations,
      seconds: (performance.now() - t0) / 1000,
      peakJsHeapMiB: peak,
      peakJsHeapAt: peakAt,
      baseJsHeapMiB: base,
      peakExtraBuffersMiB: peakBuffers,
      peakBlocksMiB: (peakBlocks * s0.heap.blockBytes) / MiB,
      peakBlocksAt,
      fixedMiB,
      maxRssMiB: process.resourceUsage().maxRSS / 1024,
      digest: app.digest(rt),
    };
  } catch (e) {
    // A method that runs out of heap throws a MethodError whose cause is the HeapExhaustedError.
    let cause: unknown = e;
    for (let depth = 0; depth < 8 && cause instanceof Error && !(cause instanceof HeapExhaustedError); depth++) cause = cause.cause;
    if (!(cause instanceof HeapExhaustedError)) throw e;
    return {
      fits: false,
      reason: `${cause.name} in ${k < 0 ? 'init' : `iteration ${k}`}`,
      completed: Math.max(0, k),
      seconds: (performance.now() - t0) / 1000,
      peakJsHeapMiB: peak,
      fixedMiB,
    };
  } finally {
    await rt.close();
  }
}

// ------------------------------------------------------------------ parent

interface Settings {
  smmoOldSpaceMiB: number;
  /** Added to the AOS child's old space: what an empty process's V8 heap holds (Node, our modules), so both get B for the app's data. */
  nodeBaseMiB: number;
  semiSpaceMiB: number;
  timeoutMs: number;
}

function v8Flags(p: Probe, budgetMiB: number, s: Settings): string[] {
  if (budgetMiB === 0) return ['--expose-gc']; // calibration
  if (p.impl === 'aos') return [`--max-old-space-size=${budgetMiB + s.nodeBaseMiB}`, `--max-semi-space-size=${s.semiSpaceMiB}`];
  // smmo: gc() before every sample, so that the JS side's figure is live data, not garbage
  // that the cap would have let pile up (the smmo heap, which decides the fit, is not V8's).
  return [`--max-old-space-size=${s.smmoOldSpaceMiB}`, `--max-semi-space-size=${s.semiSpaceMiB}`, '--expose-gc'];
}

/** Run one probe in a child; V8's out-of-memory and the timeout count as "does not fit". */
async function probe(p: Probe, budgetMiB: number, s: Settings): Promise<ProbeResult & { v8Flags: string[] }> {
  const flags = v8Flags(p, budgetMiB, s);
  const r = await spawnNodeChild(fileURLToPath(import.meta.url), ['--child', JSON.stringify(p)], {
    timeoutMs: s.timeoutMs,
    nodeArgs: flags,
    stderr: 'pipe',
    stderrKeepChars: 1e5,
  });
  const { seconds, stderr } = r;
  const line = r.stdout.split('\n').find((l) => l.startsWith(RESULT_TAG));
  if (r.code === 0 && line) return { ...(JSON.parse(line.slice(RESULT_TAG.length)) as ProbeResult), v8Flags: flags };
  if (r.timedOut)
    return {
      fits: false,
      reason: `timeout after ${s.timeoutMs / 1000} s (GC thrashing near the limit)`,
      seconds,
      v8Flags: flags,
    };
  if (/heap out of memory|Reached heap limit|Allocation failed/i.test(stderr))
    return {
      fits: false,
      reason: `V8 heap out of memory (${p.impl === 'smmo' ? 'the JS side, capped at --smmo-old-space' : 'old space'})`,
      seconds,
      v8Flags: flags,
    };
  throw new Error(
    `probe ${JSON.stringify(p)} with ${flags.join(' ')} exited with ${r.code ?? r.signal}:\n${stderr.trim().split('\n').slice(-20).join('\n')}`,
  );
}

interface SearchResult {
  app: string;
  impl: Impl;
  budgetMiB: number;
  iterations: number;
  /** The size parameter (SizeSpec.param) and its unit. */
  param: SizeSpec['param'];
  unit: string;
  /** Largest size that fit, and the smallest that did not. */
  maxSize: number;
  failSize: number;
  /** Units (cells, bodies, …) of maxSize. */
  maxUnits: number;
  atMax: ProbeResult & { v8Flags: string[] };
  atFail: ProbeResult & { v8Flags: string[] };
  probes: { size: number; fits: boolean; reason?: string; seconds: number }[];
  calibration: { size: number; bytesPerUnit: number; fixedBytes: number; peakJsHeapAt?: number; peakBlocksAt?: number };
}

async function search(
  app: string,
  impl: Impl,
  budgetMiB: number,
  iterations: number,
  seed: number,
  precision: number,
  s: Settings,
  log: (l: string) => void,
): Promise<SearchResult> {
  const spec = SPECS[app]!;
  const square = spec.param === 'side';
  // Calibration: bytes per unit at a small size, without limits.
  const calSize = spec.calibration;
  const cal = await probe({ app, impl, size: calSize, iterations, seed, heapBytes: 0 }, 0, s);
  if (!cal.fits) throw new Error(`calibration of ${app} ${impl} at ${sizeText(spec, calSize)} did not complete: ${cal.reason}`);
  const units0 = unitsOf(spec, calSize);
  const bytesPerUnit = impl === 'aos' ? ((cal.peakJsHeapMiB! - cal.baseJsHeapMiB!) * MiB) / units0 : (cal.peakBlocksMiB! * MiB) / units0;
  // AOS: the old space is budget + nodeBase, of which the empty process takes baseJsHeap.
  const dataBytes = impl === 'aos' ? (budgetMiB + s.nodeBaseMiB - cal.baseJsHeapMiB!) * MiB : (budgetMiB - cal.fixedMiB!) * MiB;
  const fixedBytes = budgetMiB * MiB - dataBytes;
  const predictedUnits = Math.max(1, dataBytes) / Math.max(1, bytesPerUnit);
  let guess = Math.max(8, Math.floor(square ? Math.sqrt(predictedUnits) : predictedUnits));
  log(
    `${app} ${impl} ${budgetMiB} MiB: calibration ${bytesPerUnit.toFixed(1)} bytes per ${spec.unit === 'bodies' ? 'body' : spec.unit.replace(/s$/, '')} → first probe ${sizeText(spec, guess)}`,
  );

  const probes: SearchResult['probes'] = [];
  const results = new Map<number, ProbeResult & { v8Flags: string[] }>();
  const run = async (size: number): Promise<boolean> => {
    const r = await probe({ app, impl, size, iterations, seed, heapBytes: budgetMiB * MiB }, budgetMiB, s);
    results.set(size, r);
    probes.push({ size, fits: r.fits, ...(r.reason ? { reason: r.reason } : {}), seconds: Math.round(r.seconds * 10) / 10 });
    log(`  ${app} ${impl} ${sizeText(spec, size)}: ${r.fits ? 'fits' : `does not fit (${r.reason})`} [${r.seconds.toFixed(1)} s]`);
    return r.fits;
  };
  let lo = 0;
  let hi = 0;
  // Step from the guess until the boundary is bracketed: by 4 %, then by squares of the
  // previous factor (1.04, 1.08, 1.17, 1.37, …), so a poor guess costs a few probes only.
  let factor = 1.04;
  if (await run(guess)) lo = guess;
  else hi = guess;
  for (let n = 0; n < 12 && (lo === 0 || hi === 0); n++, factor *= factor) {
    if (hi === 0) {
      guess = Math.max(guess + 1, Math.ceil(guess * factor));
      if (await run(guess)) lo = guess;
      else hi = guess;
    } else {
      guess = Math.min(guess - 1, Math.floor(guess / factor));
      if (guess < 2) throw new Error(`${app} ${impl}: not even size 2 fits in ${budgetMiB} MiB`);
      if (await run(guess)) lo = guess;
      else hi = guess;
    }
  }
  if (lo === 0 || hi === 0) throw new Error(`${app} ${impl} ${budgetMiB} MiB: no bracket found within 12 growing steps`);
  while (hi - lo > 1 && (hi - lo) / lo > precision) {
    const mid = Math.floor((lo + hi) / 2);
    if (await run(mid)) lo = mid;
    else hi = mid;
  }
  return {
    app,
    impl,
    budgetMiB,
    iterations,
    param: spec.param,
    unit: spec.unit,
    maxSize: lo,
    failSize: hi,
    maxUnits: unitsOf(spec, lo),
    atMax: results.get(lo)!,
    atFail: results.get(hi)!,
    probes,
    calibration: {
      size: calSize,
      bytesPerUnit,
      fixedBytes,
      peakJsHeapAt: cal.peakJsHeapAt,
      ...(cal.peakBlocksAt !== undefined ? { peakBlocksAt: cal.peakBlocksAt } : {}),
    },
  };
}

async function main(): Promise<void> {
  const iterationOptions = Object.fromEntries(
    Object.entries(SPECS).map(([app, spec]) => [`iterations-${app}`, { type: 'string' as const, default: String(spec.iterations) }]),
  );
  const { values } = parseArgs({
    options: {
      apps: { type: 'string', default: 'wa-tor,game-of-life' },
      budgets: { type: 'string', default: '64,128' },
      ...iterationOptions,
      precision: { type: 'string', default: '0.02' },
      jobs: { type: 'string', default: '1' },
      'smmo-old-space': { type: 'string', default: '32' },
      'node-base': { type: 'string', default: '8' },
      'semi-space': { type: 'string', default: '1' },
      timeout: { type: 'string', default: '600' },
      seed: { type: 'string', default: '42' },
      out: { type: 'string', default: 'bench-results/memory.json' },
      plot: { type: 'string', default: 'bench-results/memory.svg' },
    },
    strict: true,
  });
  const opt = values as Record<string, string | undefined>;
  const number = (name: string, raw: string, min: number): number => {
    const n = Number(raw);
    if (!(n >= min) || !Number.isFinite(n) || (min === 0 && raw.trim() === '')) {
      process.stderr.write(`bench/memory: --${name} must be a ${min > 0 ? 'positive' : 'non-negative'} number, got '${raw}'\n`);
      process.exit(2);
    }
    return n;
  };
  const positive = (name: string, raw: string): number => number(name, raw, Number.MIN_VALUE);
  const apps = opt['apps'] === 'all' ? Object.keys(SPECS) : opt['apps']!.split(',');
  for (const a of apps)
    if (SPECS[a] === undefined) {
      process.stderr.write(`bench/memory: --apps: '${a}' is not one of ${Object.keys(SPECS).join(', ')} (or 'all')\n`);
      process.exit(2);
    }
  const budgets = opt['budgets']!.split(',').map((b) => positive('budgets', b));
  const iterations: Record<string, number> = Object.fromEntries(
    apps.map((a) => [a, Math.floor(number(`iterations-${a}`, opt[`iterations-${a}`]!, 0))]),
  );
  const settings: Settings = {
    smmoOldSpaceMiB: positive('smmo-old-space', opt['smmo-old-space']!),
    nodeBaseMiB: Number(opt['node-base']),
    semiSpaceMiB: positive('semi-space', opt['semi-space']!),
    timeoutMs: positive('timeout', opt['timeout']!) * 1000,
  };
  const precision = positive('precision', opt['precision']!);
  const jobs = Math.floor(positive('jobs', opt['jobs']!));
  const seed = positive('seed', opt['seed']!);
  const machine: Machine = machineInfo();
  const t0 = performance.now();
  const log = (l: string): void => void process.stdout.write(`${l}\n`);
  log(`machine: ${machine.cpu}, ${machine.cores} cores, load average ${machine.loadStart.join(' ')}`);
  // Every search (app × budget × implementation); --jobs of them run side by side.
  const tasks = apps.flatMap((app) => budgets.flatMap((budget) => (['aos', 'smmo'] as const).map((impl) => ({ app, budget, impl }))));
  const results: SearchResult[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(jobs, tasks.length) }, async () => {
      while (next < tasks.length) {
        const t = tasks[next++]!;
        results.push(await search(t.app, t.impl, t.budget, iterations[t.app]!, seed, precision, settings, log));
      }
    }),
  );
  const order = (r: SearchResult): number => tasks.findIndex((t) => t.app === r.app && t.budget === r.budgetMiB && t.impl === r.impl);
  results.sort((x, y) => order(x) - order(y));

  machine.loadEnd = machineInfo().loadStart;
  const summary = apps.flatMap((app) =>
    budgets.map((budgetMiB) => {
      const spec = SPECS[app]!;
      const a = results.find((r) => r.app === app && r.impl === 'aos' && r.budgetMiB === budgetMiB)!;
      const m = results.find((r) => r.app === app && r.impl === 'smmo' && r.budgetMiB === budgetMiB)!;
      // smmo's JS side at its largest size: V8 heap above the empty process's, plus array buffers besides the heap.
      const jsSideMiB = m.atMax.peakJsHeapMiB! - m.atMax.baseJsHeapMiB! + m.atMax.peakExtraBuffersMiB!;
      return {
        app,
        budgetMiB,
        iterations: a.iterations,
        param: spec.param,
        unit: spec.unit,
        aos: { maxSize: a.maxSize, maxUnits: a.maxUnits, failSize: a.failSize, maxRssMiB: a.atMax.maxRssMiB },
        smmo: { maxSize: m.maxSize, maxUnits: m.maxUnits, failSize: m.failSize, jsSideMiB, maxRssMiB: m.atMax.maxRssMiB },
        /** Why smmo's next size failed: its heap (the budget) or its JS side (--smmo-old-space). */
        smmoFailReason: m.atFail.reason,
        ratio: m.maxUnits / a.maxUnits,
        /** As if smmo's JS side had to fit in the budget too (memory scales with units). */
        ratioCountingJsSide: (m.maxUnits * (budgetMiB / (budgetMiB + jsSideMiB))) / a.maxUnits,
      };
    }),
  );
  const units = (n: number, unit: string): string => (unit === 'cells' ? `${(n / 1e6).toFixed(3)} M` : `${n} ${unit}`);
  log('');
  log(
    'app            budget  iterations  AOS largest              smmo largest             smmo/AOS units  smmo JS side  ratio counting it',
  );
  for (const s of summary) {
    const spec = SPECS[s.app]!;
    const text = (size: number, n: number): string => (spec.param === 'side' ? `${size}² = ${units(n, s.unit)}` : sizeText(spec, size));
    log(
      `${s.app.padEnd(14)} ${String(s.budgetMiB).padStart(3)} MiB  ${String(s.iterations).padStart(10)}  ` +
        `${text(s.aos.maxSize, s.aos.maxUnits).padEnd(24)} ${text(s.smmo.maxSize, s.smmo.maxUnits).padEnd(24)} ` +
        `${s.ratio.toFixed(2).padStart(14)}×  ${s.smmo.jsSideMiB.toFixed(1).padStart(8)} MiB  ${s.ratioCountingJsSide.toFixed(2).padStart(16)}×`,
    );
  }
  log(`load average at the end ${machine.loadEnd.join(' ')}; ${((performance.now() - t0) / 1000).toFixed(0)} s in all`);
  const report = {
    kind: 'smmo-bench-memory',
    date: new Date().toISOString(),
    command: `node dist/bench/memory.js ${process.argv.slice(2).join(' ')}`.trim(),
    machine,
    settings: { ...settings, precision, jobs, seed, iterations },
    summary,
    results,
    seconds: (performance.now() - t0) / 1000,
  };
  mkdirSync(dirname(opt['out']!), { recursive: true });
  writeFileSync(opt['out']!, JSON.stringify(report, null, 1) + '\n');
  mkdirSync(dirname(opt['plot']!), { recursive: true });
  const scale = (unit: string): [number, string] => (unit === 'cells' ? [1e6, 'M cells'] : [1e3, `k ${unit}`]);
  writeFileSync(
    opt['plot']!,
    barChart({
      title: 'Largest problem that runs within a memory budget (paper Fig. 11)',
      subtitle: `${machine.cpu}, ${machine.cores} cores, Node.js ${machine.node}; AOS: V8 old space = budget; smmo: heap = budget; label: smmo units / AOS units`,
      yLabel: 'problem size (unit in the panel title)',
      panels: summary.map((s) => {
        const spec = SPECS[s.app]!;
        const [div, name] = scale(s.unit);
        return {
          title: `${s.app}, ${s.budgetMiB} MiB (${name})`,
          bars: [
            { label: `AOS ${sizeText(spec, s.aos.maxSize)}`, value: s.aos.maxUnits / div, color: '#999999' },
            {
              label: `smmo ${sizeText(spec, s.smmo.maxSize)}`,
              value: s.smmo.maxUnits / div,
              color: PALETTE[0],
              note: `${s.ratio.toFixed(1)}×`,
            },
          ],
        };
      }),
      legend: [
        { label: 'baseline AOS (plain JS objects)', color: '#999999' },
        { label: 'smmo', color: PALETTE[0] },
      ],
      panelWidth: 140,
    }),
  );
  log(`wrote ${opt['out']} and ${opt['plot']}`);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  if (process.argv[2] === '--child') {
    const res = await child(JSON.parse(process.argv[3]!) as Probe);
    process.stdout.write(`${RESULT_TAG}${JSON.stringify(res)}\n`);
  } else await main();
}
