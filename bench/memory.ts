/**
 * Memory efficiency (issue 6 acceptance; paper §7.2, Fig. 11): for wa-tor and
 * game-of-life, the largest square grid that runs N iterations within a memory budget
 * B, with smmo and with the plain-JS-objects baseline (AOS, apps/<app>/baseline_aos.ts).
 *
 *   node dist/bench/memory.js [--apps wa-tor,game-of-life] [--budgets 64,128] (MiB)
 *        [--iterations-wa-tor 80] [--iterations-game-of-life 10] [--precision 0.02]
 *        [--smmo-old-space 32] [--semi-space 1] [--timeout 600] [--seed 42]
 *        [--out bench-results/memory.json] [--plot bench-results/memory.svg]
 *
 * "Fits in B" means, as the paper gives every allocator the same heap:
 *  - AOS: a child `node --max-old-space-size=B --max-semi-space-size=1` completes
 *    the N iterations (V8's old space holds every cell object; the young generation is
 *    kept to 3 MiB so it cannot add a second budget); running out is V8's fatal
 *    "heap out of memory" (or a GC death spiral past --timeout);
 *  - smmo: a child with the runtime's heap = B bytes (WebAssembly.Memory: blocks,
 *    bitmaps, block list) and `--max-old-space-size=<smmo-old-space>` for the JS side
 *    (code, the app's start list and cell table) completes them; running out is a
 *    HeapExhaustedError (or V8's, if the JS side outgrows its cap — recorded as such).
 *    The JS side's peak is reported, so the comparison's fine print is visible.
 *
 * N must cover each app's allocation peak: wa-tor's agents and blocks peak in the first
 * wave (iterations ~50–70 at seed 42: bench/fragmentation.ts shows it), game-of-life's at
 * the start (the population only falls from a 25 % random field).
 *
 * Search, per app × implementation × budget: a calibration run at 128×128 (no limits)
 * measures bytes per cell; the side it predicts for B is probed, then stepped by 4 %
 * until one side fits and the next does not, then bisected until the two differ by less
 * than --precision (relative). Every probe is a fresh child process, run one at a time.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { loadBaseline } from '../apps/baselines/index.js';
import { loadApp } from '../apps/registry.js';
import { createRuntime, HeapExhaustedError, type Runtime } from '../index.js';
import { machineInfo, paramsFor, type Machine } from './apps.js';
import { barChart, PALETTE } from './plot.js';

type Impl = 'smmo' | 'aos';
const MiB = 2 ** 20;
const RESULT_TAG = 'SMMO-MEMORY-RESULT ';

interface Probe {
  app: string;
  impl: Impl;
  side: number;
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
  /** JS heap in use before the app's state was created (MiB). */
  baseJsHeapMiB?: number;
  /** Peak of the ArrayBuffer memory (MiB) the app made, outside the smmo heap (smmo: the cell table). */
  peakExtraBuffersMiB?: number;
  /** smmo: peak heap blocks in use × block bytes (MiB), and the heap's fixed part (bitmaps, block list). */
  peakBlocksMiB?: number;
  fixedMiB?: number;
  digest?: number;
}

// ------------------------------------------------------------------ child

async function child(p: Probe): Promise<ProbeResult> {
  const t0 = performance.now();
  // Calibration runs with --expose-gc: collect first, so that garbage does not count as data.
  const gc = (globalThis as { gc?: () => void }).gc;
  const used = (): number => (gc?.(), process.memoryUsage().heapUsed / MiB);
  // ArrayBuffers made by the app (smmo: the cell table; the start list). process.memoryUsage()
  // does not count the smmo heap (a WebAssembly.Memory) among them.
  const buffers0 = process.memoryUsage().arrayBuffers;
  let peakBuffers = 0;
  const buffers = (): void => void (peakBuffers = Math.max(peakBuffers, (process.memoryUsage().arrayBuffers - buffers0) / MiB));
  const app = await loadApp(p.app);
  if (app === undefined) throw new Error(`no app ${p.app}`);
  const params = paramsFor(app, { width: p.side, height: p.side });
  let peak = used();
  const base = peak;
  if (p.impl === 'aos') {
    const b = (await loadBaseline(p.app, 'aos'))!;
    const run = b.create(params, p.seed);
    peak = Math.max(peak, used());
    buffers();
    for (let k = 0; k < p.iterations; k++) {
      run.step(k);
      peak = Math.max(peak, used());
      buffers();
    }
    return {
      fits: true,
      completed: p.iterations,
      seconds: (performance.now() - t0) / 1000,
      peakJsHeapMiB: peak,
      baseJsHeapMiB: base,
      peakExtraBuffersMiB: peakBuffers,
      digest: run.digest(),
    };
  }
  const rt: Runtime = await createRuntime({ classes: app.classes, heap: p.heapBytes > 0 ? p.heapBytes : app.heapFor(params) });
  let k = -1; // -1: in the app's init
  let peakBlocks = 0;
  const s0 = rt.stats();
  const fixedMiB = (s0.heap.bytes - s0.heap.blocks * s0.heap.blockBytes) / MiB;
  try {
    await app.init(rt, params, p.seed);
    peakBlocks = rt.stats().heap.usedBlocks;
    peak = Math.max(peak, used());
    buffers();
    for (k = 0; k < p.iterations; k++) {
      await app.step(rt, k);
      peakBlocks = Math.max(peakBlocks, rt.stats().heap.usedBlocks);
      peak = Math.max(peak, used());
      buffers();
    }
    return {
      fits: true,
      completed: p.iterations,
      seconds: (performance.now() - t0) / 1000,
      peakJsHeapMiB: peak,
      baseJsHeapMiB: base,
      peakExtraBuffersMiB: peakBuffers,
      peakBlocksMiB: (peakBlocks * s0.heap.blockBytes) / MiB,
      fixedMiB,
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
  const old = p.impl === 'aos' ? budgetMiB + s.nodeBaseMiB : s.smmoOldSpaceMiB;
  return [`--max-old-space-size=${old}`, `--max-semi-space-size=${s.semiSpaceMiB}`];
}

/** Run one probe in a child; V8's out-of-memory and the timeout count as "does not fit". */
function probe(p: Probe, budgetMiB: number, s: Settings): Promise<ProbeResult & { v8Flags: string[] }> {
  const flags = v8Flags(p, budgetMiB, s);
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const c = spawn(process.execPath, [...flags, fileURLToPath(import.meta.url), '--child', JSON.stringify(p)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    c.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    c.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d.length > 1e5 ? d.slice(-1e5) : d));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      c.kill('SIGKILL');
    }, s.timeoutMs);
    c.on('error', reject);
    c.on('close', (code, signal) => {
      clearTimeout(timer);
      const seconds = (performance.now() - t0) / 1000;
      const line = stdout.split('\n').find((l) => l.startsWith(RESULT_TAG));
      if (code === 0 && line) return resolve({ ...(JSON.parse(line.slice(RESULT_TAG.length)) as ProbeResult), v8Flags: flags });
      if (timedOut)
        return resolve({
          fits: false,
          reason: `timeout after ${s.timeoutMs / 1000} s (GC thrashing near the limit)`,
          seconds,
          v8Flags: flags,
        });
      if (/heap out of memory|Reached heap limit|Allocation failed/i.test(stderr))
        return resolve({
          fits: false,
          reason: `V8 heap out of memory (${p.impl === 'smmo' ? 'the JS side, capped at --smmo-old-space' : 'old space'})`,
          seconds,
          v8Flags: flags,
        });
      reject(
        new Error(
          `probe ${JSON.stringify(p)} with ${flags.join(' ')} exited with ${code ?? signal}:\n${stderr.trim().split('\n').slice(-20).join('\n')}`,
        ),
      );
    });
  });
}

interface SearchResult {
  app: string;
  impl: Impl;
  budgetMiB: number;
  iterations: number;
  /** Largest side that fit, and the smallest that did not. */
  maxSide: number;
  failSide: number;
  maxCells: number;
  atMax: ProbeResult & { v8Flags: string[] };
  atFail: ProbeResult & { v8Flags: string[] };
  probes: { side: number; fits: boolean; reason?: string; seconds: number }[];
  calibration: { side: number; bytesPerCell: number; fixedBytes: number };
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
  // Calibration: bytes per cell at a small size, without limits.
  const calSide = 128;
  const cal = await probe({ app, impl, side: calSide, iterations, seed, heapBytes: 0 }, 0, s);
  if (!cal.fits) throw new Error(`calibration of ${app} ${impl} at ${calSide}² did not complete: ${cal.reason}`);
  const cells0 = calSide * calSide;
  const bytesPerCell = impl === 'aos' ? ((cal.peakJsHeapMiB! - cal.baseJsHeapMiB!) * MiB) / cells0 : (cal.peakBlocksMiB! * MiB) / cells0;
  // AOS: the old space is budget + nodeBase, of which the empty process takes baseJsHeap.
  const dataBytes = impl === 'aos' ? (budgetMiB + s.nodeBaseMiB - cal.baseJsHeapMiB!) * MiB : (budgetMiB - cal.fixedMiB!) * MiB;
  const fixedBytes = budgetMiB * MiB - dataBytes;
  let guess = Math.max(8, Math.floor(Math.sqrt(Math.max(1, dataBytes) / bytesPerCell)));
  log(`${app} ${impl} ${budgetMiB} MiB: calibration ${bytesPerCell.toFixed(1)} bytes/cell → first probe ${guess}²`);

  const probes: SearchResult['probes'] = [];
  const results = new Map<number, ProbeResult & { v8Flags: string[] }>();
  const run = async (side: number): Promise<boolean> => {
    const r = await probe({ app, impl, side, iterations, seed, heapBytes: budgetMiB * MiB }, budgetMiB, s);
    results.set(side, r);
    probes.push({ side, fits: r.fits, ...(r.reason ? { reason: r.reason } : {}), seconds: Math.round(r.seconds * 10) / 10 });
    log(`  ${side}×${side}: ${r.fits ? 'fits' : `does not fit (${r.reason})`} [${r.seconds.toFixed(1)} s]`);
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
      if (guess < 2) throw new Error(`${app} ${impl}: not even a 2×2 grid fits in ${budgetMiB} MiB`);
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
    maxSide: lo,
    failSide: hi,
    maxCells: lo * lo,
    atMax: results.get(lo)!,
    atFail: results.get(hi)!,
    probes,
    calibration: { side: calSide, bytesPerCell, fixedBytes },
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      apps: { type: 'string', default: 'wa-tor,game-of-life' },
      budgets: { type: 'string', default: '64,128' },
      'iterations-wa-tor': { type: 'string', default: '80' },
      'iterations-game-of-life': { type: 'string', default: '10' },
      precision: { type: 'string', default: '0.02' },
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
  const positive = (name: string, raw: string): number => {
    const n = Number(raw);
    if (!(n > 0) || !Number.isFinite(n)) {
      process.stderr.write(`bench/memory: --${name} must be a positive number, got '${raw}'\n`);
      process.exit(2);
    }
    return n;
  };
  const apps = values.apps!.split(',');
  for (const a of apps)
    if (a !== 'wa-tor' && a !== 'game-of-life') {
      process.stderr.write(`bench/memory: --apps: '${a}' is not one of wa-tor, game-of-life\n`);
      process.exit(2);
    }
  const budgets = values.budgets!.split(',').map((b) => positive('budgets', b));
  const iterations: Record<string, number> = {
    'wa-tor': positive('iterations-wa-tor', values['iterations-wa-tor']!),
    'game-of-life': positive('iterations-game-of-life', values['iterations-game-of-life']!),
  };
  const settings: Settings = {
    smmoOldSpaceMiB: positive('smmo-old-space', values['smmo-old-space']!),
    nodeBaseMiB: Number(values['node-base']),
    semiSpaceMiB: positive('semi-space', values['semi-space']!),
    timeoutMs: positive('timeout', values.timeout!) * 1000,
  };
  const precision = positive('precision', values.precision!);
  const seed = positive('seed', values.seed!);
  const machine: Machine = machineInfo();
  const t0 = performance.now();
  const results: SearchResult[] = [];
  const log = (l: string): void => void process.stdout.write(`${l}\n`);
  log(`machine: ${machine.cpu}, ${machine.cores} cores, load average ${machine.loadStart.join(' ')}`);
  for (const app of apps)
    for (const budget of budgets)
      for (const impl of ['aos', 'smmo'] as const)
        results.push(await search(app, impl, budget, iterations[app]!, seed, precision, settings, log));

  machine.loadEnd = machineInfo().loadStart;
  const summary = apps.flatMap((app) =>
    budgets.map((budgetMiB) => {
      const a = results.find((r) => r.app === app && r.impl === 'aos' && r.budgetMiB === budgetMiB)!;
      const m = results.find((r) => r.app === app && r.impl === 'smmo' && r.budgetMiB === budgetMiB)!;
      // smmo's JS side at its largest grid: V8 heap above the empty process's, plus array buffers besides the heap.
      const jsSideMiB = m.atMax.peakJsHeapMiB! - m.atMax.baseJsHeapMiB! + m.atMax.peakExtraBuffersMiB!;
      return {
        app,
        budgetMiB,
        iterations: a.iterations,
        aos: { maxSide: a.maxSide, maxCells: a.maxCells, failSide: a.failSide },
        smmo: { maxSide: m.maxSide, maxCells: m.maxCells, failSide: m.failSide, jsSideMiB },
        ratio: m.maxCells / a.maxCells,
        /** As if smmo's JS side had to fit in the budget too (memory scales with cells). */
        ratioCountingJsSide: (m.maxCells * (budgetMiB / (budgetMiB + jsSideMiB))) / a.maxCells,
      };
    }),
  );
  log('');
  log('app            budget  iterations  AOS max grid       smmo max grid       smmo/AOS cells  smmo JS side  ratio counting it');
  for (const s of summary)
    log(
      `${s.app.padEnd(14)} ${String(s.budgetMiB).padStart(3)} MiB  ${String(s.iterations).padStart(10)}  ` +
        `${`${s.aos.maxSide}² = ${(s.aos.maxCells / 1e6).toFixed(3)} M`.padEnd(18)} ${`${s.smmo.maxSide}² = ${(s.smmo.maxCells / 1e6).toFixed(3)} M`.padEnd(19)} ` +
        `${s.ratio.toFixed(2).padStart(14)}×  ${s.smmo.jsSideMiB.toFixed(1).padStart(8)} MiB  ${s.ratioCountingJsSide.toFixed(2).padStart(16)}×`,
    );
  log(`load average at the end ${machine.loadEnd.join(' ')}; ${((performance.now() - t0) / 1000).toFixed(0)} s in all`);
  const report = {
    kind: 'smmo-bench-memory',
    date: new Date().toISOString(),
    machine,
    settings: { ...settings, precision, seed, iterations },
    summary,
    results,
    seconds: (performance.now() - t0) / 1000,
  };
  mkdirSync(dirname(values.out!), { recursive: true });
  writeFileSync(values.out!, JSON.stringify(report, null, 1) + '\n');
  mkdirSync(dirname(values.plot!), { recursive: true });
  writeFileSync(
    values.plot!,
    barChart({
      title: 'Largest square grid that runs within a memory budget (paper Fig. 11)',
      subtitle: `${machine.cpu}, ${machine.cores} cores, Node.js ${machine.node}; AOS: V8 old space = budget; smmo: heap = budget; label: smmo cells / AOS cells`,
      yLabel: 'million cells',
      panels: summary.map((s) => ({
        title: `${s.app}, ${s.budgetMiB} MiB`,
        bars: [
          { label: `AOS ${s.aos.maxSide}²`, value: s.aos.maxCells / 1e6, color: '#999999' },
          { label: `smmo ${s.smmo.maxSide}²`, value: s.smmo.maxCells / 1e6, color: PALETTE[0], note: `${s.ratio.toFixed(1)}×` },
        ],
      })),
      legend: [
        { label: 'baseline AOS (plain JS objects)', color: '#999999' },
        { label: 'smmo', color: PALETTE[0] },
      ],
      panelWidth: 140,
    }),
  );
  log(`wrote ${values.out} and ${values.plot}`);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  if (process.argv[2] === '--child') {
    const res = await child(JSON.parse(process.argv[3]!) as Probe);
    process.stdout.write(`${RESULT_TAG}${JSON.stringify(res)}\n`);
  } else await main();
}
