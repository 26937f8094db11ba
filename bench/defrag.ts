/**
 * Defragmentation (issue 16): the thesis's CompactGpu table (the DynaSOAr thesis §6;
 * "CompactGpu: Massively Parallel Memory Defragmentation on GPUs", ISMM 2019 §5) on smmo,
 * for the workloads that exist: a synthetic heap made fragmented, collision, wa-tor,
 * generation and structure. Per workload: the factor n, defrag calls, CompactGpu passes,
 * objects moved, blocks freed, milliseconds per phase (scan, copy, rewrite, update), the
 * fragmentation before/after, and the do-all speed-up after defragmentation.
 *
 *   node dist/bench/defrag.js [--only synthetic,collision,wa-tor,generation,structure]
 *        [--threads 1,2,4] [--lanes ts,wasm] [--rounds 1] [--scale 1] [--repeat 5] [--out bench-results/defrag.json]
 *
 * --threads: each workload runs once per thread count T (a runtime of T threads; T > 1:
 * rt.parallelDefrag, the copy and rewrite phases on the worker threads too, and the
 * do-alls on them: runtime/defrag-parallel.ts); at the end one table, workload × T, with
 * the phase times, the copy and rewrite speed-ups over T = 1 and the do-all speed-up
 * after defragmentation. --rounds K runs the whole set K times (the thread counts
 * alternate within each round, so that a shared machine's load drifts over all of them) and
 * keeps, per workload and T, the round whose defragmentation took least in total. The thesis table (synthetic n=3, collision n=10, wa-tor n=9) on
 * the 16-core device host: --only synthetic,collision,wa-tor --threads 1,2,4,8,16.
 *
 * --lanes ts,wasm: each workload and T runs once per lanes choice, right after each other,
 * every run on a runtime of backend 'wasm' (the app's WebAssembly kernels in both): 'wasm'
 * with the rewrite as WebAssembly lanes (runtime/defrag-wasm.ts), 'ts' with the TypeScript
 * lanes (RuntimeOptions.wasm.defragLanes 'ts'), so that only the lanes differ (an app on T > 1
 * threads allocates differently from run to run: the table marks rows whose copies differ).
 * Without --lanes every run is on backend 'ts', as before. The order
 * of the lanes alternates between rounds (the first run of a process warms the JIT for the
 * second). A last table puts the copy and rewrite phases of both side by side, with their
 * ratios; the copy is on TypeScript lanes in both (with 'wasm' they also publish the
 * forwarding handles into the heap: runtime/defrag-wasm.ts), so its ratio is that cost.
 *
 * How each is measured (one process, each workload and thread count after the other):
 *  - synthetic: objects of one class (4 f32 fields and a reference to another object of
 *    the class) fill 93 % of the heap's blocks, then a random 60 % of them are deleted
 *    (fragmentation ≈ 60 %); one rt.parallelDefrag(Item, 3) (rt.defrag on one thread). Speed-up: the
 *    median time of a do-all (parallelDo) that reads every field and follows the
 *    reference (`repeat` passes) before and after.
 *  - apps: the app runs its iterations from the same seed without and with
 *    rt.parallelDefrag(<the app's movable classes>, n) after every `every`-th iteration (the
 *    thesis's n), twice each, alternating (the faster run of each counts). Speed-up: the
 *    iterations' time without defragmentation over the same
 *    iterations' time with it, defragmentation itself left out (the do-all effect) and
 *    included (what a run gains or loses). The digests are compared (exact for the
 *    integer apps; collision sums forces in handle order, README: Defragmentation).
 * Times are wall-clock milliseconds on whatever machine runs it (the JSON names it);
 * nothing here is a test.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import type { App } from '../apps/app.js';
import { isMainThread } from 'node:worker_threads';
import { appModule, loadApp } from '../apps/registry.js';
import { createRuntime, f32, MAX_THREADS, object, ref, type DefragStats, type Runtime, type SmmoClass, type SmmoObject } from '../index.js';
import { machineInfo } from './apps.js';

/** The thesis's table (calls / passes), for the docs. */
export const THESIS: Record<string, { n: number; calls: number; passes: number }> = {
  synthetic: { n: 3, calls: 1, passes: 18 },
  collision: { n: 10, calls: 200, passes: 186 },
  generation: { n: 2, calls: 500, passes: 537 },
  structure: { n: 10, calls: 100, passes: 368 },
  'wa-tor': { n: 9, calls: 38, passes: 43 },
};

interface Row {
  workload: string;
  n: number;
  /** Threads of the runtime (T > 1: parallelDefrag and parallelDo on the workers too). */
  threads: number;
  /** --lanes: 'ts' or 'wasm' (the rewrite on WebAssembly lanes), and the lanes the calls reported. */
  lanes: Lanes;
  rewriteLanes: string;
  params: string;
  calls: number;
  passes: number;
  objectsMoved: number;
  blocksFreed: number;
  ms: { scan: number; copy: number; rewrite: number; update: number; total: number };
  fragmentation: { before: number; after: number };
  /** Do-all time without / with defragmentation (defragmentation left out), and with it included. */
  doAllMs: { without: number; with: number };
  speedup: number;
  speedupWithDefrag: number;
  digests?: { without: number; with: number; equal: boolean };
}

interface ItemLike extends SmmoObject {
  a: number;
  b: number;
  c: number;
  d: number;
  next: ItemLike | null;
}
export class Item extends object({ a: f32, b: f32, c: f32, d: f32, next: ref<ItemLike>('Item') }) {
  touch(): void {
    const n = this.next;
    this.a = this.b + this.c * this.d + (n === null ? 0 : n.a * 1e-9);
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((x, y) => x - y);
  return s[s.length >> 1]!;
}

type Lanes = 'ts' | 'wasm';

/** --lanes given: every run on backend 'wasm', the lanes chosen by RuntimeOptions.wasm.defragLanes; else backend 'ts'. */
let lanesGiven = false;
function backendFor(lanes: Lanes): { backend: 'ts' | 'wasm'; wasm?: { defragLanes: Lanes } } {
  if (!lanesGiven) return { backend: 'ts' };
  return { backend: 'wasm', wasm: { defragLanes: lanes } };
}

function emptyRow(workload: string, n: number, params: string, threads: number, lanes: Lanes): Row {
  return {
    workload,
    n,
    threads,
    lanes,
    rewriteLanes: '',
    params,
    calls: 0,
    passes: 0,
    objectsMoved: 0,
    blocksFreed: 0,
    ms: { scan: 0, copy: 0, rewrite: 0, update: 0, total: 0 },
    fragmentation: { before: 0, after: 0 },
    doAllMs: { without: 0, with: 0 },
    speedup: 0,
    speedupWithDefrag: 0,
  };
}

function addStats(row: Row, s: DefragStats): void {
  row.calls++;
  row.passes += s.passes;
  row.objectsMoved += s.objectsMoved;
  row.blocksFreed += s.blocksFreed;
  for (const k of ['scan', 'copy', 'rewrite', 'update', 'total'] as const) row.ms[k] += s.ms[k];
  if (s.passes === 0) return; // nothing moved: no rewrite ran
  const used = s.lanes?.rewrite ?? 'ts';
  if (!row.rewriteLanes.split('+').includes(used)) row.rewriteLanes = row.rewriteLanes === '' ? used : `${row.rewriteLanes}+${used}`;
}

/** Free slots / slots of the blocks of these concrete classes. */
function fragmentationOf(rt: Runtime, names: readonly string[]): number {
  const types = rt.stats().types;
  let slots = 0;
  let objects = 0;
  for (const name of names) {
    const t = types[name]!;
    slots += t.blocks * t.slotsPerBlock;
    objects += t.objects;
  }
  return slots === 0 ? 0 : (slots - objects) / slots;
}

async function synthetic(scale: number, repeat: number, threads: number, lanes: Lanes): Promise<Row> {
  const heap = Math.round(64 * scale) << 20;
  const rt = await createRuntime({ classes: [Item], heap, threads, ...backendFor(lanes), modules: [import.meta.url] });
  try {
    // From the heap and block sizes alone, not the usable blocks (a runtime of more threads
    // has more allocator states, so a few blocks fewer): the same objects, handles and
    // deletions on every thread count, so the same defragmentation work at every T.
    const count = Math.floor(((heap / rt.heap.plan.blockBytes) * 0.93) | 0) * rt.table.byClass(Item)!.slots;
    let s = 12345;
    const rnd = (): number => (s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32;
    await rt.parallelNew(Item, count, (o) => {
      o.a = rnd();
      o.b = rnd();
      o.c = rnd();
      o.d = rnd();
    });
    const handles = new Uint32Array(count);
    let k = 0;
    rt.deviceDo(Item, (o) => void (handles[k++] = o.handle));
    const keep: number[] = [];
    for (const h of handles) {
      if (rnd() >= 0.6) keep.push(h);
      else rt.destroy(rt.get(Item, h));
    }
    for (const h of keep) rt.get(Item, h).next = rt.get(Item, keep[Math.floor(rnd() * keep.length)]!);
    const row = emptyRow('synthetic', 3, `${count} objects in ${heap >> 20} MiB, 60 % deleted`, threads, lanes);
    const time = async (): Promise<number> => {
      const ts: number[] = [];
      for (let r = 0; r < repeat; r++) {
        const t0 = performance.now();
        await rt.parallelDo(Item, 'touch');
        ts.push(performance.now() - t0);
      }
      return median(ts);
    };
    row.doAllMs.without = await time();
    row.fragmentation.before = fragmentationOf(rt, ['Item']);
    const res = await rt.parallelDefrag(Item, 3); // rt.defrag on one thread
    addStats(row, res.stats);
    row.fragmentation.after = fragmentationOf(rt, ['Item']);
    row.doAllMs.with = await time();
    row.speedup = row.doAllMs.without / row.doAllMs.with;
    row.speedupWithDefrag = (row.doAllMs.without * repeat) / (row.doAllMs.with * repeat + row.ms.total);
    rt.validateHeap();
    return row;
  } finally {
    await rt.close();
  }
}

/** An app's workload: its parameters at this scale, the thesis's n, how often. */
const APP_RUNS: Record<
  string,
  { params: (scale: number) => Record<string, number>; iterations: (scale: number) => number; n: number; every: number }
> = {
  collision: { params: (k) => ({ bodies: Math.round(8000 * k) }), iterations: () => 20, n: 10, every: 1 },
  'wa-tor': { params: (k) => ({ width: Math.round(384 * k), height: Math.round(384 * k) }), iterations: () => 100, n: 9, every: 1 },
  generation: { params: (k) => ({ width: Math.round(768 * k), height: Math.round(768 * k) }), iterations: () => 100, n: 2, every: 1 },
  structure: { params: (k) => ({ nodes: Math.round(40000 * k) }), iterations: () => 100, n: 10, every: 1 },
};

async function appRun(name: string, scale: number, threads: number, lanes: Lanes): Promise<Row> {
  const app = (await loadApp(name)) as App;
  const spec = APP_RUNS[name]!;
  const d = app.defrag;
  if (d === undefined || typeof d === 'string') throw new Error(`${name} refuses --defrag`);
  const params = spec.params(scale);
  const iterations = spec.iterations(scale);
  const row = emptyRow(
    name,
    spec.n,
    `${Object.entries(params)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}, ${iterations} iterations, defrag every ${spec.every}`,
    threads,
    lanes,
  );
  const run = async (defrag: boolean): Promise<{ ms: number; digest: number }> => {
    const rt = await createRuntime({
      classes: app.classes,
      heap: app.heapFor(params),
      threads,
      ...backendFor(lanes),
      modules: [appModule(name)!],
    });
    try {
      await app.init(rt, params, 42);
      const names = [
        ...new Set(d.classes.flatMap((c) => rt.table.byClass(c as SmmoClass)!.concrete.map((id) => rt.table.types[id]!.name))),
      ];
      let ms = 0;
      let fragSum = 0;
      let fragAfterSum = 0;
      for (let k = 0; k < iterations; k++) {
        const t0 = performance.now();
        await app.step(rt, k);
        ms += performance.now() - t0;
        if (defrag && (k + 1) % spec.every === 0 && k + 1 < iterations) {
          fragSum += fragmentationOf(rt, names);
          const r = await rt.parallelDefrag(d.classes as readonly SmmoClass[], spec.n); // rt.defrag on one thread
          d.remap?.(rt, r);
          addStats(row, r.stats);
          fragAfterSum += fragmentationOf(rt, names);
        }
      }
      if (defrag) {
        const calls = Math.max(1, row.calls);
        row.fragmentation.before = fragSum / calls;
        row.fragmentation.after = fragAfterSum / calls;
      }
      return { ms, digest: app.digest(rt) };
    } finally {
      await rt.close();
    }
  };
  // A B A B: the shared VM's load drifts; the faster of two runs per configuration, and
  // the statistics of the first run with defragmentation.
  const without = await run(false);
  const withD = await run(true);
  const stats = JSON.stringify(row);
  const without2 = await run(false);
  const with2 = await run(true);
  Object.assign(row, JSON.parse(stats) as Row);
  without.ms = Math.min(without.ms, without2.ms);
  withD.ms = Math.min(withD.ms, with2.ms);
  row.doAllMs = { without: without.ms, with: withD.ms };
  row.speedup = without.ms / withD.ms;
  row.speedupWithDefrag = without.ms / (withD.ms + row.ms.total);
  row.digests = { without: without.digest, with: withD.digest, equal: without.digest === withD.digest };
  return row;
}

function print(r: Row): void {
  const t = THESIS[r.workload];
  const f = (x: number): string => x.toFixed(0);
  console.log(
    `${r.workload.padEnd(11)} n=${String(r.n).padEnd(3)} T=${String(r.threads).padEnd(3)} ${r.lanes.padEnd(4)} (rewrite ${r.rewriteLanes || '–'}) calls ${String(r.calls).padStart(4)}  passes ${String(r.passes).padStart(5)}  ` +
      `moved ${String(r.objectsMoved).padStart(9)}  freed ${String(r.blocksFreed).padStart(7)}  ` +
      `ms scan ${f(r.ms.scan)} copy ${f(r.ms.copy)} rewrite ${f(r.ms.rewrite)} update ${f(r.ms.update)} total ${f(r.ms.total)}  ` +
      `frag ${(r.fragmentation.before * 100).toFixed(1)} % → ${(r.fragmentation.after * 100).toFixed(1)} %  ` +
      `do-all ${f(r.doAllMs.without)} → ${f(r.doAllMs.with)} ms: ×${r.speedup.toFixed(2)} (×${r.speedupWithDefrag.toFixed(2)} with defrag)` +
      (r.digests ? `  digest ${r.digests.equal ? 'equal' : `differs (${r.digests.without} / ${r.digests.with})`}` : '') +
      (t ? `  [thesis n=${t.n}: ${t.calls} calls / ${t.passes} passes]` : ''),
  );
  console.log(`${''.padEnd(11)} ${r.params}`);
}

/** Rows of cells as text columns: the first left-aligned, the others right-aligned. */
function aligned(lines: readonly (readonly string[])[]): string[] {
  const widths = lines[0]!.map((_, k) => Math.max(...lines.map((l) => l[k]!.length)));
  return lines.map((l) => l.map((c, k) => (k < 1 ? c.padEnd(widths[k]!) : c.padStart(widths[k]!))).join('  '));
}

/**
 * The table of one run: per workload and thread count, the phase times (summed over the
 * calls), the copy and rewrite speed-ups over the same workload's T = 1 row ('*': its
 * copies differ from that row's, so the work differs: an app run on T threads allocates
 * differently), and the do-all speed-up after defragmentation (do-all time without / with).
 */
export function table(rows: readonly Row[]): string[] {
  const f = (x: number, d = 1): string => x.toFixed(d);
  const head = [
    'workload',
    'n',
    'T',
    'lanes',
    'calls',
    'passes',
    'moved',
    'scan',
    'copy',
    'rewrite',
    'update',
    'total',
    'copy×',
    'rewrite×',
    'do-all×',
  ];
  const lines = [head];
  for (const r of rows) {
    const one = rows.find((o) => o.workload === r.workload && o.threads === 1 && o.lanes === r.lanes);
    const same = one !== undefined && one.objectsMoved === r.objectsMoved && one.passes === r.passes;
    const x = (a: number | undefined, b: number): string => (a === undefined || b <= 0 ? '–' : `${f(a / b, 2)}${same ? '' : '*'}`);
    lines.push([
      r.workload,
      String(r.n),
      String(r.threads),
      r.lanes,
      String(r.calls),
      String(r.passes),
      String(r.objectsMoved),
      f(r.ms.scan),
      f(r.ms.copy),
      f(r.ms.rewrite),
      f(r.ms.update),
      f(r.ms.total),
      x(one?.ms.copy, r.ms.copy),
      x(one?.ms.rewrite, r.ms.rewrite),
      f(r.speedup, 2),
    ]);
  }
  return aligned(lines);
}

/**
 * --lanes ts,wasm: per workload and T, the copy and rewrite phases (ms summed over the calls)
 * of the 'ts' row and the 'wasm' row side by side, and ts / wasm ('*': the rows' copies
 * differ, so the work differs).
 */
export function lanesTable(rows: readonly Row[]): string[] {
  const f = (x: number, d = 1): string => x.toFixed(d);
  const head = [
    'workload',
    'T',
    'moved',
    'copy ts',
    'copy wasm',
    'copy ts/wasm',
    'rewrite ts',
    'rewrite wasm',
    'rewrite ts/wasm',
    'wasm rewrite ran',
  ];
  const lines = [head];
  for (const w of rows) {
    if (w.lanes !== 'wasm') continue;
    const t = rows.find((o) => o.workload === w.workload && o.threads === w.threads && o.lanes === 'ts');
    if (t === undefined) continue;
    const same = t.objectsMoved === w.objectsMoved && t.passes === w.passes ? '' : '*';
    const x = (a: number, b: number): string => (b <= 0 ? '–' : `${f(a / b, 2)}${same}`);
    lines.push([
      w.workload,
      String(w.threads),
      String(w.objectsMoved),
      f(t.ms.copy),
      f(w.ms.copy),
      x(t.ms.copy, w.ms.copy),
      f(t.ms.rewrite),
      f(w.ms.rewrite),
      x(t.ms.rewrite, w.ms.rewrite),
      w.rewriteLanes || '–',
    ]);
  }
  return aligned(lines);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      only: { type: 'string' },
      scale: { type: 'string' },
      repeat: { type: 'string' },
      out: { type: 'string' },
      threads: { type: 'string' },
      rounds: { type: 'string' },
      lanes: { type: 'string' },
    },
    strict: true,
  });
  const only = (values.only ?? 'synthetic,collision,wa-tor,generation,structure').split(',');
  const scale = Number(values.scale ?? 1);
  const repeat = Number(values.repeat ?? 5);
  const threads = (values.threads ?? '1').split(',').map(Number);
  const rounds = Number(values.rounds ?? 1);
  const lanes = (values.lanes ?? 'ts').split(',') as Lanes[];
  lanesGiven = values.lanes !== undefined;
  if (lanes.length === 0 || !lanes.every((l) => l === 'ts' || l === 'wasm'))
    throw new Error(`--lanes must be a comma-separated list of 'ts' and 'wasm', e.g. --lanes ts,wasm; got '${values.lanes}'`);
  if (!(Number.isInteger(rounds) && rounds >= 1)) throw new Error('--rounds must be a positive integer');
  if (!(scale > 0) || !(Number.isInteger(repeat) && repeat > 0)) throw new Error('--scale must be > 0, --repeat a positive integer');
  if (!threads.every((t) => Number.isInteger(t) && t >= 1 && t <= MAX_THREADS))
    throw new Error(`--threads must be a comma-separated list of integers in 1 … ${MAX_THREADS}, e.g. --threads 1,2,4`);
  for (const w of only) if (w !== 'synthetic' && APP_RUNS[w] === undefined) throw new Error(`--only: unknown workload '${w}'`);
  const machine = machineInfo();
  console.log(
    `defrag benchmark on ${machine.cpu} (${machine.cores} cores), node ${machine.node}, scale ${scale}, threads ${threads.join(',')}, lanes ${lanes.join(',')}, rounds ${rounds}`,
  );
  const rows: Row[] = [];
  for (let round = 0; round < rounds; round++) {
    for (const w of only) {
      for (const t of threads) {
        for (const l of round % 2 === 0 ? lanes : [...lanes].reverse()) {
          const row = w === 'synthetic' ? await synthetic(scale, repeat, t, l) : await appRun(w, scale, t, l);
          print(row);
          const k = rows.findIndex((r) => r.workload === w && r.threads === t && r.lanes === l);
          if (k < 0) rows.push(row);
          else if (row.ms.total < rows[k]!.ms.total) rows[k] = row;
        }
      }
    }
  }
  console.log(
    `\nper phase: ms summed over the calls; copy× / rewrite×: time at T = 1 over time at T ('*': other work than at T = 1); do-all×: do-all time without / with defragmentation`,
  );
  for (const line of table(rows)) console.log(line);
  if (lanes.includes('ts') && lanes.includes('wasm')) {
    console.log(
      `\n--lanes: the copy and rewrite phases (ms summed over the calls) of backend 'ts' and 'wasm' side by side; ts/wasm > 1: the WebAssembly lanes are faster`,
    );
    for (const line of lanesTable(rows)) console.log(line);
  }
  if (values.out !== undefined) {
    mkdirSync(dirname(values.out), { recursive: true });
    writeFileSync(values.out, JSON.stringify({ machine, scale, repeat, threads, lanes, rounds, rows, thesis: THESIS }, null, 2) + '\n');
  }
}

// The worker threads of a runtime of T > 1 threads import this module for Item: only the main thread runs the benchmark.
if (isMainThread) await main();
