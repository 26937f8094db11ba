/**
 * Fragmentation of wa-tor over the iterations (issue 6 acceptance; paper §7.3, Fig. 12b/c:
 * "fragmentation is independent of the problem size and constant at around 18 % after
 * 500 Wa-Tor iterations"; target ≤ 18 %).
 *
 *   node dist/bench/fragmentation.js [--sizes 256,512] [--iterations 500] [--threads 1] [--keep N]
 *        [--variant dynasoar|noshift|nocoal|bitmap]  (the allocator variant, bench/variants.ts)
 *        [--own-first]  (RuntimeOptions.allocator.ownFirstBlock)
 *        [--seed 42] [--out bench-results/fragmentation.json] [--plot bench-results/fragmentation.svg]
 *        [--slots-plot bench-results/wator-slots.svg]
 *
 * Fragmentation here is the paper's: among the blocks in use, the share of object slots
 * that hold no object, (Σ slots of used blocks − objects) / Σ slots, i.e.
 * rt.stats().heap.fragmentation. It counts every class, the Cells included (one per grid
 * cell, never deleted: their blocks are full, which lowers the heap-wide figure); the
 * figure for the agents alone (Fish and Shark blocks) is recorded next to it, since that is
 * where allocation and deletion happen. Both are sampled after the init (iteration 0) and
 * after every iteration; per class the objects and blocks are kept, so the "allocated vs
 * used slots" picture of Fig. 12(b,c) can be drawn (--slots-plot, largest size).
 *
 * Each size runs in the same process, one after the other; the JSON's seconds are for
 * information only (the timed benchmark is `smmo bench`).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import app from '../apps/wa-tor/index.js';
import { appModule } from '../apps/registry.js';
import { createRuntime, type RuntimeStats } from '../index.js';
import { machineInfo } from './apps.js';
import { lineChart, PALETTE, type Series } from './plot.js';
import { VARIANTS } from './variants.js';

/** The paper's figure (§7.3) and the issue's target. */
export const PAPER_FRAGMENTATION = 0.18;

interface ClassSample {
  objects: number;
  blocks: number;
}
interface Sample {
  iteration: number;
  heap: number;
  agents: number;
  usedBlocks: number;
  classes: Record<string, ClassSample>;
}

/** Agents-only fragmentation: free slots / slots over the Fish and Shark blocks. */
function agentFragmentation(s: RuntimeStats): number {
  let slots = 0;
  let objects = 0;
  for (const name of ['Fish', 'Shark']) {
    const t = s.types[name]!;
    slots += t.blocks * t.slotsPerBlock;
    objects += t.objects;
  }
  return slots === 0 ? 0 : (slots - objects) / slots;
}

function summarise(samples: readonly Sample[], key: 'heap' | 'agents', from: number) {
  const tail = samples.filter((s) => s.iteration >= from).map((s) => s[key]);
  const all = samples.map((s) => s[key]);
  const peak = Math.max(...all);
  return {
    final: samples.at(-1)![key],
    tailFrom: from,
    tailMean: tail.reduce((a, b) => a + b, 0) / tail.length,
    tailMax: Math.max(...tail),
    peak,
    peakIteration: samples[all.indexOf(peak)]!.iteration,
  };
}

async function runSize(
  side: number,
  iterations: number,
  threads: number,
  seed: number,
  keepBlocks: number | undefined,
  variant: string,
  ownFirstBlock: boolean,
) {
  const params = { width: side, height: side };
  const allocator = { ...VARIANTS[variant]!.options, ...(ownFirstBlock ? { ownFirstBlock } : {}) };
  const rt = await createRuntime({
    classes: app.classes,
    heap: allocator.bitmapAlloc ? 8 * app.heapFor(params) : app.heapFor(params),
    threads,
    modules: [appModule('wa-tor')!],
    allocator,
    ...(keepBlocks === undefined ? {} : { keepBlocks }),
  });
  try {
    const t0 = performance.now();
    await app.init(rt, params, seed);
    const samples: Sample[] = [];
    const record = (iteration: number): void => {
      const s = rt.stats();
      const classes: Record<string, ClassSample> = {};
      for (const [name, t] of Object.entries(s.types)) classes[name] = { objects: t.objects, blocks: t.blocks };
      samples.push({ iteration, heap: s.heap.fragmentation, agents: agentFragmentation(s), usedBlocks: s.heap.usedBlocks, classes });
    };
    record(0);
    for (let k = 0; k < iterations; k++) {
      await app.step(rt, k);
      record(k + 1);
      if ((k + 1) % 100 === 0)
        process.stdout.write(`  ${side}×${side}: iteration ${k + 1}, fragmentation ${(samples.at(-1)!.heap * 100).toFixed(1)} %\n`);
    }
    const s = rt.stats();
    const slotsPerBlock: Record<string, number> = {};
    for (const [name, t] of Object.entries(s.types)) slotsPerBlock[name] = t.slotsPerBlock;
    rt.validateHeap();
    const from = Math.max(0, iterations - 100);
    return {
      side,
      cells: side * side,
      iterations,
      threads,
      seconds: (performance.now() - t0) / 1000,
      blockBytes: s.heap.blockBytes,
      slotsPerBlock,
      digest: app.digest(rt),
      heap: summarise(samples, 'heap', from),
      agents: summarise(samples, 'agents', from),
      samples,
    };
  } finally {
    await rt.close();
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      sizes: { type: 'string', default: '256,512' },
      iterations: { type: 'string', default: '500' },
      threads: { type: 'string', default: '1' },
      keep: { type: 'string' }, // RuntimeOptions.keepBlocks (default: the runtime's)
      variant: { type: 'string', default: 'dynasoar' }, // RuntimeOptions.allocator (bench/variants.ts VARIANTS)
      'own-first': { type: 'boolean', default: false }, // RuntimeOptions.allocator.ownFirstBlock
      seed: { type: 'string', default: '42' },
      out: { type: 'string', default: 'bench-results/fragmentation.json' },
      plot: { type: 'string', default: 'bench-results/fragmentation.svg' },
      'slots-plot': { type: 'string', default: 'bench-results/wator-slots.svg' },
      from: { type: 'string' },
    },
    strict: true,
  });
  const int = (name: string, raw: string): number => {
    if (!/^\d+$/.test(raw) || Number(raw) < 1) {
      process.stderr.write(`bench/fragmentation: --${name} must be a positive integer, got '${raw}'\n`);
      process.exit(2);
    }
    return Number(raw);
  };
  if (values.from !== undefined) {
    // Draw the plots again from a report written earlier (no simulation).
    const report = JSON.parse(readFileSync(values.from, 'utf8')) as Report;
    writePlots(report, values.plot!, values['slots-plot']!);
    process.stdout.write(`wrote ${values.plot} and ${values['slots-plot']} from ${values.from}\n`);
    return;
  }
  const sizes = values.sizes!.split(',').map((s) => int('sizes', s));
  const iterations = int('iterations', values.iterations!);
  const threads = int('threads', values.threads!);
  const keep = values.keep === undefined ? undefined : Number(values.keep);
  if (keep !== undefined && !(Number.isInteger(keep) && keep >= 0))
    throw new Error(`--keep must be a non-negative integer, got ${values.keep}`);
  const seed = Number(values.seed);
  const variant = values.variant!;
  if (!(variant in VARIANTS)) throw new Error(`--variant must be one of ${Object.keys(VARIANTS).join(', ')}, got ${variant}`);
  const machine = machineInfo();
  process.stdout.write(`machine: ${machine.cpu}, ${machine.cores} cores, load average ${machine.loadStart.join(' ')}\n`);
  const runs = [];
  const ownFirst = values['own-first'] === true;
  for (const side of sizes) runs.push(await runSize(side, iterations, threads, seed, keep, variant, ownFirst));
  machine.loadEnd = machineInfo().loadStart;

  const pct = (v: number): string => `${(v * 100).toFixed(1)} %`;
  process.stdout.write(
    `\nwa-tor fragmentation, ${iterations} iterations, ${threads} thread(s), keepBlocks ${keep ?? 'default'}, allocator ${VARIANTS[variant]!.label}${ownFirst ? ' (own first blocks)' : ''}, seed ${seed}\n`,
  );
  process.stdout.write(
    'grid        heap: final  mean/max last 100  peak (iteration)   agents: final  mean/max last 100  peak (iteration)\n',
  );
  for (const r of runs) {
    const h = r.heap;
    const a = r.agents;
    process.stdout.write(
      `${`${r.side}×${r.side}`.padEnd(10)}  ${pct(h.final).padStart(11)}  ${`${pct(h.tailMean)} / ${pct(h.tailMax)}`.padStart(17)}  ${`${pct(h.peak)} (${h.peakIteration})`.padStart(16)}   ` +
        `${pct(a.final).padStart(13)}  ${`${pct(a.tailMean)} / ${pct(a.tailMax)}`.padStart(17)}  ${`${pct(a.peak)} (${a.peakIteration})`.padStart(16)}\n`,
    );
  }
  process.stdout.write(`load average at the end ${machine.loadEnd.join(' ')}\n`);

  const report: Report = {
    kind: 'smmo-bench-fragmentation',
    date: new Date().toISOString(),
    machine,
    seed,
    threads,
    paper: PAPER_FRAGMENTATION,
    runs,
  };
  mkdirSync(dirname(values.out!), { recursive: true });
  writeFileSync(values.out!, JSON.stringify(report) + '\n');
  writePlots(report, values.plot!, values['slots-plot']!);
  process.stdout.write(`wrote ${values.out}, ${values.plot} and ${values['slots-plot']}\n`);
}

type Run = Awaited<ReturnType<typeof runSize>>;
interface Report {
  kind: 'smmo-bench-fragmentation';
  date: string;
  machine: ReturnType<typeof machineInfo>;
  seed: number;
  threads: number;
  paper: number;
  runs: Run[];
}

function writePlots(report: Report, plot: string, slotsPlot: string): void {
  const { machine, runs, seed } = report;
  const threads = report.threads ?? runs[0]!.threads;

  const series: Series[] = [];
  runs.forEach((r, i) => {
    series.push({
      name: `${r.side}×${r.side}, all blocks (heap)`,
      color: PALETTE[i % PALETTE.length]!,
      points: r.samples.map((s) => [s.iteration, s.heap * 100]),
    });
    series.push({
      name: `${r.side}×${r.side}, agent blocks only`,
      color: PALETTE[i % PALETTE.length]!,
      dashed: true,
      points: r.samples.map((s) => [s.iteration, s.agents * 100]),
    });
  });
  mkdirSync(dirname(plot), { recursive: true });
  writeFileSync(
    plot,
    lineChart({
      title: 'wa-tor: fragmentation over iterations (free slots in used blocks)',
      subtitle: `${machine.cpu}, ${machine.cores} cores; ${threads} thread(s), seed ${seed}; ${report.date.slice(0, 10)}`,
      xLabel: 'iteration',
      yLabel: 'fragmentation (%)',
      series,
      guides: [{ y: PAPER_FRAGMENTATION * 100, label: 'paper: ~18 % after 500 iterations (target ≤ 18 %)' }],
    }),
  );

  // Fig. 12(b,c)-style: allocated slots (blocks × slots per block) vs objects, per agent class, largest size.
  const big = runs.at(-1)!;
  const slots: Series[] = [];
  ['Fish', 'Shark'].forEach((name, i) => {
    const per = big.slotsPerBlock[name]!;
    slots.push({
      name: `${name}: allocated slots`,
      color: PALETTE[i + 1]!,
      dashed: true,
      points: big.samples.map((s) => [s.iteration, s.classes[name]!.blocks * per]),
    });
    slots.push({
      name: `${name}: objects`,
      color: PALETTE[i + 1]!,
      points: big.samples.map((s) => [s.iteration, s.classes[name]!.objects]),
    });
  });
  mkdirSync(dirname(slotsPlot), { recursive: true });
  writeFileSync(
    slotsPlot,
    lineChart({
      title: `wa-tor ${big.side}×${big.side}: allocated slots vs objects (gap = fragmentation)`,
      subtitle: `${machine.cpu}, ${machine.cores} cores; ${threads} thread(s), seed ${seed}`,
      xLabel: 'iteration',
      yLabel: 'objects / slots',
      series: slots,
    }),
  );
}

await main();
