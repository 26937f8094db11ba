/**
 * The variant study of the DynaSOAr paper (§7, Fig. 13(d)) on smmo: the allocator variants
 * (RuntimeOptions.allocator; wasm/src/alloc/core.rs "Variants")
 *
 *   dynasoar   rotation and per-warp coalescing (the default)
 *   noshift    no bitmap rotation: every search starts at bit 0 (DynaSOAr-NoShift)
 *   nocoal     no request coalescing: one slot per create (DynaSOAr-NoCoal)
 *   bitmap     BitmapAlloc, emulated: one object per block, blocks the size of the largest class
 *
 * × thread counts, on two workloads:
 *   wa-tor           W × H torus, K iterations from the app's init (agents born and killed in
 *                    waves): ms per iteration over all K, the digest (every variant must give
 *                    the same), and the heap's fragmentation at the end;
 *   linux-scalability  L lanes each creating k objects of an 8 × f64 class and deleting them,
 *                    1024 / k times per pass (apps/linux-scalability: the app's classes and
 *                    measurement, timeK, after three untimed passes of every k): ns per
 *                    create + destroy.
 *
 *   node dist/bench/variants.js [--threads 1,2,4,8,16] [--force] [--variants dynasoar,noshift,nocoal,bitmap]
 *        [--width 256] [--height 256] [--iterations 50] [--lanes 1024] [--k 1,32,1024] [--repeats 3]
 *        [--out bench-results/variants.json] [--svg bench-results/variants.svg] [--machine "name"]
 *        [--child-timeout S]
 *
 * Method: every measurement is one fresh child process (`--child <json>`; see
 * bench/scaling.ts for why: a method run on several runtimes' accessor classes goes
 * megamorphic); the repeats are interleaved (every case once, then again), so that a busy
 * phase of a shared machine hits all cases alike; reported are the median and the range.
 * Thread counts above the machine's cores are dropped unless --force. Figures printed and
 * written, never asserted: this is a benchmark, not a test.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { dirname } from 'node:path';
import { pathToFileURL } from 'node:url';
import { CLASSES as WATOR, digest as watorDigest, init as watorInit, step as watorStep } from '../apps/wa-tor/wator.js';
import { createRuntime, type AllocatorOptions, type Runtime } from '../index.js';
import { MAX_HEAP_BYTES, planTypes } from '../runtime/layout.js';
import { barChart, type BarPanel } from './plot.js';
import {
  Allocator8,
  CLASSES as LINUX_CLASSES,
  heapBytes as linuxHeap,
  MODEL_URL as LINUX_URL,
  roundsFor,
  timeK,
  warmUp,
} from '../apps/linux-scalability/linux.js';
import { childTimeoutMs, lastJsonLine, runNodeChild } from './child.js';

const WATOR_MODULE = new URL('../apps/wa-tor/index.js', import.meta.url).href;

export const VARIANTS: Record<string, { label: string; options: AllocatorOptions; color: string }> = {
  dynasoar: { label: 'DynaSOAr', options: {}, color: '#0072B2' },
  noshift: { label: 'DynaSOAr-NoShift', options: { rotation: false }, color: '#E69F00' },
  nocoal: { label: 'DynaSOAr-NoCoal', options: { coalescing: false }, color: '#009E73' },
  bitmap: { label: 'BitmapAlloc', options: { bitmapAlloc: true }, color: '#D55E00' },
};

interface Case {
  kind: 'wator' | 'linux';
  variant: string;
  threads: number;
  width: number;
  height: number;
  iterations: number;
  lanes: number;
  ks: number[];
}

interface WatorResult {
  msPerIteration: number;
  digest: number;
  fragmentation: number;
  objects: number;
  heapBytes: number;
}

interface LinuxResult {
  /** ns per create + destroy, by k. */
  ns: Record<string, number>;
}

// ------------------------------------------------------------------ one measurement (child)

/** The heap of a case: the app's own size, scaled for BitmapAlloc as `smmo run --bitmap-alloc` does. */
function heapFor(bytes: number, classes: Parameters<typeof planTypes>[0], variant: string): number {
  if (variant !== 'bitmap') return bytes;
  const ratio = (planTypes(classes, { bitmapAlloc: true }).blockBytes + 4) / (planTypes(classes).blockBytes / 32);
  return Math.min(MAX_HEAP_BYTES, Math.ceil((bytes * ratio) / 65536) * 65536);
}

async function withRuntime<T>(rt: Runtime, fn: (rt: Runtime) => Promise<T>): Promise<T> {
  try {
    return await fn(rt);
  } finally {
    await rt.close();
  }
}

async function wator(c: Case): Promise<WatorResult> {
  const heap = heapFor((16 << 20) + c.width * c.height * 112, WATOR, c.variant);
  const rt = await createRuntime({
    classes: WATOR,
    heap,
    threads: c.threads,
    modules: [WATOR_MODULE],
    allocator: VARIANTS[c.variant]!.options,
  });
  return withRuntime(rt, async () => {
    await watorInit(rt, c.width, c.height, 42);
    const t0 = performance.now();
    for (let k = 0; k < c.iterations; k++) await watorStep(rt);
    const ms = performance.now() - t0;
    const s = rt.stats();
    let objects = 0;
    for (const t of Object.values(s.types)) objects += t.objects;
    return { msPerIteration: ms / c.iterations, digest: watorDigest(rt), fragmentation: s.heap.fragmentation, objects, heapBytes: heap };
  });
}

async function linux(c: Case): Promise<LinuxResult> {
  const kmax = Math.max(...c.ks);
  const heap = heapFor(linuxHeap(c.lanes, kmax), LINUX_CLASSES, c.variant);
  const rt = await createRuntime({
    classes: LINUX_CLASSES,
    heap,
    threads: c.threads,
    modules: [LINUX_URL],
    inlineBlocks: 0,
    allocator: VARIANTS[c.variant]!.options,
  });
  return withRuntime(rt, async () => {
    await rt.parallelNew(Allocator8, c.lanes);
    for (let i = 0; i < 20; i++) await rt.parallelDo(Allocator8, 'allocFree', 4, 1); // JIT warm-up on every thread
    await warmUp(rt, c.ks, kmax); // then three untimed passes of every k
    const ns: Record<string, number> = {};
    for (const k of c.ks) {
      const rounds = roundsFor(k, kmax);
      ns[String(k)] = ((await timeK(rt, k, rounds, { what: c.variant })) * 1e6) / (c.lanes * k * rounds);
    }
    rt.validateHeap();
    return { ns };
  });
}

// ------------------------------------------------------------------ driver

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1]! : fallback;
}
const list = (s: string): number[] =>
  s
    .split(',')
    .map(Number)
    .filter((n) => Number.isInteger(n) && n >= 1);

function runChild<T>(c: Case): T {
  const r = runNodeChild(process.argv[1]!, ['--child', JSON.stringify(c)], { timeoutMs: childTimeoutMs() });
  if (r.failure !== undefined) throw new Error(`variants: child ${JSON.stringify(c)} ${r.failure}`);
  return lastJsonLine<T>(r.stdout);
}

interface Row {
  variant: string;
  threads: number;
  wator: { msPerIteration: { median: number; min: number; max: number }; digest: number; fragmentation: number; objects: number };
  linux: Record<string, { median: number; min: number; max: number }>;
}

const stat = (xs: number[]): { median: number; min: number; max: number } => ({
  median: median(xs),
  min: Math.min(...xs),
  max: Math.max(...xs),
});

function main(): void {
  const cores = availableParallelism();
  const requested = list(arg('threads', '1,2,4,8,16'));
  const threads = process.argv.includes('--force') ? requested : requested.filter((n) => n <= cores);
  const variants = arg('variants', Object.keys(VARIANTS).join(',')).split(',');
  for (const v of variants) if (!(v in VARIANTS)) throw new Error(`--variants: unknown variant ${v} (${Object.keys(VARIANTS).join(', ')})`);
  const base = {
    width: Number(arg('width', '256')),
    height: Number(arg('height', '256')),
    iterations: Number(arg('iterations', '50')),
    lanes: Number(arg('lanes', '1024')),
    ks: list(arg('k', '1,32,1024')),
  };
  const repeats = Number(arg('repeats', '3'));
  const out = arg('out', 'bench-results/variants.json');
  const svg = arg('svg', 'bench-results/variants.svg');
  const machine = {
    label: arg('machine', ''),
    cpu: cpus()[0]?.model.trim() ?? 'unknown',
    cores,
    node: process.version,
    loadAverage: [loadavg()[0]!],
  };
  console.log(
    `smmo variant study: ${variants.join(', ')} × threads ${threads.join(',')} on ${machine.cpu} (${cores} cores), node ${machine.node}; ` +
      `wa-tor ${base.width}×${base.height}×${base.iterations}, linux-scalability ${base.lanes} lanes, k = ${base.ks.join(', ')}; ${repeats} repeats`,
  );
  const cases: Case[] = [];
  for (const t of threads)
    for (const v of variants) for (const kind of ['wator', 'linux'] as const) cases.push({ kind, variant: v, threads: t, ...base });
  const samples = new Map<string, (WatorResult | LinuxResult)[]>();
  const key = (c: Case): string => `${c.kind}:${c.variant}:${c.threads}`;
  for (let r = 0; r < repeats; r++) {
    for (const c of cases) {
      const res = runChild<WatorResult | LinuxResult>(c);
      samples.set(key(c), [...(samples.get(key(c)) ?? []), res]);
      process.stderr.write(`  repeat ${r + 1}/${repeats}: ${c.kind} ${c.variant} ${c.threads} threads done\n`);
    }
  }
  const rows: Row[] = [];
  for (const t of threads) {
    for (const v of variants) {
      const w = samples.get(`wator:${v}:${t}`) as WatorResult[];
      const l = samples.get(`linux:${v}:${t}`) as LinuxResult[];
      const digests = new Set(w.map((x) => x.digest));
      if (digests.size !== 1) throw new Error(`wa-tor ${v} at ${t} threads: repeats gave different digests ${[...digests].join(', ')}`);
      rows.push({
        variant: v,
        threads: t,
        wator: {
          msPerIteration: stat(w.map((x) => x.msPerIteration)),
          digest: w[0]!.digest,
          fragmentation: median(w.map((x) => x.fragmentation)),
          objects: w[0]!.objects,
        },
        linux: Object.fromEntries(base.ks.map((k) => [String(k), stat(l.map((x) => x.ns[String(k)]!))])),
      });
    }
  }
  const reference = rows.find((r) => r.variant === variants[0])!.wator.digest;
  const mismatch = rows.filter((r) => r.wator.digest !== reference);
  if (mismatch.length > 0) console.log(`WARNING: wa-tor digests differ: ${mismatch.map((r) => `${r.variant}@${r.threads}`).join(', ')}`);
  machine.loadAverage.push(loadavg()[0]!);

  // Table (Markdown, as docs/benchmarks.md shows it).
  const ks = base.ks.map(String);
  console.log('');
  console.log(
    `| variant | threads | wa-tor ms / iteration (min … max) | vs DynaSOAr | fragmentation at the end | linux-scalability ns / create+destroy, k = ${ks.join(' / ')} | vs DynaSOAr (k = ${ks[ks.length - 1]}) |`,
  );
  console.log('| --- | --: | --- | --: | --: | --- | --: |');
  for (const r of rows) {
    const d = rows.find((x) => x.variant === 'dynasoar' && x.threads === r.threads);
    const w = r.wator.msPerIteration;
    const last = ks[ks.length - 1]!;
    console.log(
      `| ${VARIANTS[r.variant]!.label} | ${r.threads} | ${w.median.toFixed(1)} (${w.min.toFixed(1)} … ${w.max.toFixed(1)}) | ` +
        `${d ? (w.median / d.wator.msPerIteration.median).toFixed(2) + '×' : '–'} | ${(100 * r.wator.fragmentation).toFixed(1)} % | ` +
        `${ks.map((k) => r.linux[k]!.median.toFixed(0)).join(' / ')} | ${d ? (r.linux[last]!.median / d.linux[last]!.median).toFixed(2) + '×' : '–'} |`,
    );
  }
  console.log(`\nwa-tor digest ${reference} (${mismatch.length === 0 ? 'every variant and thread count' : 'NOT every case'}).`);

  const report = { date: new Date().toISOString(), machine, params: { ...base, repeats, variants, threads }, rows };
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, JSON.stringify(report, null, 2) + '\n');
  mkdirSync(dirname(svg), { recursive: true });
  writeFileSync(svg, chart(report));
  console.log(`wrote ${out} and ${svg}`);
}

/** One panel per workload and thread count, a bar per variant (median, whiskers min … max). */
function chart(report: {
  date: string;
  machine: { cpu: string; cores: number; node: string };
  params: { ks: number[] };
  rows: Row[];
}): string {
  const threads = [...new Set(report.rows.map((r) => r.threads))];
  const kmax = String(Math.max(...report.params.ks));
  const panels: BarPanel[] = [];
  for (const t of threads) {
    const rows = report.rows.filter((r) => r.threads === t);
    panels.push({
      title: `wa-tor, ${t} thread${t > 1 ? 's' : ''}: ms/iteration`,
      bars: rows.map((r) => ({
        label: VARIANTS[r.variant]!.label,
        value: r.wator.msPerIteration.median,
        low: r.wator.msPerIteration.min,
        high: r.wator.msPerIteration.max,
        color: VARIANTS[r.variant]!.color,
      })),
    });
    panels.push({
      title: `linux k=${kmax}, ${t} thread${t > 1 ? 's' : ''}: ns/alloc`,
      bars: rows.map((r) => ({
        label: VARIANTS[r.variant]!.label,
        value: r.linux[kmax]!.median,
        low: r.linux[kmax]!.min,
        high: r.linux[kmax]!.max,
        color: VARIANTS[r.variant]!.color,
      })),
    });
  }
  const m = report.machine;
  return barChart({
    title: 'Allocator variants (DynaSOAr paper §7, Fig. 13(d)): lower is better',
    subtitle: `${m.cpu}, ${m.cores} cores, Node.js ${m.node}; ${report.date.slice(0, 10)}; median of repeats, whiskers min … max`,
    yLabel: 'ms per iteration / ns per create+destroy',
    panels,
    legend: Object.values(VARIANTS).map((v) => ({ label: v.label, color: v.color })),
    panelWidth: 170,
  });
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const i = process.argv.indexOf('--child');
  if (i >= 0) {
    const c = JSON.parse(process.argv[i + 1]!) as Case;
    console.log(JSON.stringify(c.kind === 'wator' ? await wator(c) : await linux(c)));
  } else {
    main();
  }
}
