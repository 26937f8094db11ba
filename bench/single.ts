/**
 * Single-thread benchmark (issue 2, Acceptance): in one run, side by side,
 *
 *   (a) allocate + free throughput of the runtime: create()/destroy() one at a time,
 *       and parallelNew(n) followed by a do-all in which every object deletes itself;
 *   (b) a do-all over 1 M objects of a 7×f32 class with an nbody-style `update(dt)`
 *       (v += F·dt/m; p += v·dt), against the same class as plain JS objects in an
 *       array, and against hand-written Float32Arrays;
 *   (c) bytes per object of each representation.
 *
 * Method: every variant runs `--passes` times per run, `--runs` runs after one warm-up
 * run; the variants of (b) are interleaved within each run, so that a slow phase of a
 * shared machine hits them alike. Reported: median, min and max over the runs of the
 * per-pass (or per-object) figure. The state after the last pass is compared across
 * the variants (smmo and typed arrays compute the same f32 operations, so their sums
 * agree exactly; plain JS computes in f64).
 *
 * Usage: npm run bench  (= node --expose-gc dist/bench/single.js)
 *        node --expose-gc dist/bench/single.js --objects 100000 --runs 3 --out FILE
 * Writes bench-results/single.json. Targets (issue 2): alloc+free ≥ 10 M objects/s;
 * do-all ≤ 1.5× typed arrays and not slower than plain JS objects; ≤ 32 bytes/object.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { arch, cpus, loadavg, platform, totalmem } from 'node:os';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { Random } from '../apps/random.js';
import { createRuntime, f32, object, type Runtime } from '../index.js';

// ------------------------------------------------------------------ the three representations

/** The smmo class: 7 f32 fields, SOA in the heap. */
class Body extends object({ posX: f32, posY: f32, velX: f32, velY: f32, forceX: f32, forceY: f32, mass: f32 }) {
  update(dt: number): void {
    this.velX += (this.forceX * dt) / this.mass;
    this.velY += (this.forceY * dt) / this.mass;
    this.posX += this.velX * dt;
    this.posY += this.velY * dt;
  }

  /** For the alloc/free benchmark: a do-all in which every object deletes itself. */
  kill(): void {
    this.destroy();
  }
}

/**
 * The same class for the checked-mode runtime. A class registered with two runtimes gets
 * two generated view classes, which makes the property accesses in its methods
 * polymorphic and the do-all several times slower; a separate class keeps both
 * measurements clean (and is what a program with one runtime sees).
 */
class CheckedBody extends object({ posX: f32, posY: f32, velX: f32, velY: f32, forceX: f32, forceY: f32, mass: f32 }) {
  update(dt: number): void {
    this.velX += (this.forceX * dt) / this.mass;
    this.velY += (this.forceY * dt) / this.mass;
    this.posX += this.velX * dt;
    this.posY += this.velY * dt;
  }
}

/**
 * The same class as a plain JS object. Fields are `declare`d and assigned in the
 * constructor, so V8 sees doubles from the first store and keeps each field in a
 * mutable double box that updates in place (the fast case for plain JS).
 */
class PlainBody {
  declare posX: number;
  declare posY: number;
  declare velX: number;
  declare velY: number;
  declare forceX: number;
  declare forceY: number;
  declare mass: number;

  constructor(posX: number, posY: number, velX: number, velY: number, forceX: number, forceY: number, mass: number) {
    this.posX = posX;
    this.posY = posY;
    this.velX = velX;
    this.velY = velY;
    this.forceX = forceX;
    this.forceY = forceY;
    this.mass = mass;
  }

  update(dt: number): void {
    this.velX += (this.forceX * dt) / this.mass;
    this.velY += (this.forceY * dt) / this.mass;
    this.posX += this.velX * dt;
    this.posY += this.velY * dt;
  }
}

/**
 * The same again as most TypeScript is written (constructor parameter properties). With
 * `useDefineForClassFields` (the ES2022 default) each field is first defined as
 * `undefined`, V8 then stores it as a tagged value, and every double store allocates a
 * new heap number: shown because it is what a typical TS class gets.
 */
class ParamPropsBody {
  constructor(
    public posX: number,
    public posY: number,
    public velX: number,
    public velY: number,
    public forceX: number,
    public forceY: number,
    public mass: number,
  ) {}

  update(dt: number): void {
    this.velX += (this.forceX * dt) / this.mass;
    this.velY += (this.forceY * dt) / this.mass;
    this.posX += this.velX * dt;
    this.posY += this.velY * dt;
  }
}

/** Hand-written structure of arrays. */
interface Soa {
  posX: Float32Array;
  posY: Float32Array;
  velX: Float32Array;
  velY: Float32Array;
  forceX: Float32Array;
  forceY: Float32Array;
  mass: Float32Array;
}

function updateSoa(s: Soa, n: number, dt: number): void {
  const { posX, posY, velX, velY, forceX, forceY, mass } = s;
  for (let i = 0; i < n; i++) {
    velX[i]! += (forceX[i]! * dt) / mass[i]!;
    velY[i]! += (forceY[i]! * dt) / mass[i]!;
    posX[i]! += velX[i]! * dt;
    posY[i]! += velY[i]! * dt;
  }
}

const DT = 0.02;
const FIELDS = ['posX', 'posY', 'velX', 'velY', 'forceX', 'forceY', 'mass'] as const;

/** The same initial state for every representation (f32-rounded). */
function initialState(n: number): Soa {
  const rng = new Random(42);
  const s = Object.fromEntries(FIELDS.map((f) => [f, new Float32Array(n)])) as unknown as Soa;
  for (let i = 0; i < n; i++) {
    s.posX[i] = 2 * rng.next() - 1;
    s.posY[i] = 2 * rng.next() - 1;
    s.velX[i] = (rng.next() - 0.5) / 1000;
    s.velY[i] = (rng.next() - 0.5) / 1000;
    s.forceX[i] = rng.next() - 0.5;
    s.forceY[i] = rng.next() - 0.5;
    s.mass[i] = (rng.next() / 2 + 0.5) * 1000;
  }
  return s;
}

function copySoa(s: Soa): Soa {
  return Object.fromEntries(FIELDS.map((f) => [f, s[f].slice()])) as unknown as Soa;
}

// ------------------------------------------------------------------ statistics

interface Stat {
  median: number;
  min: number;
  max: number;
  samples: number[];
}

function stat(samples: number[]): Stat {
  const s = [...samples].sort((a, b) => a - b);
  const mid = s.length >> 1;
  const median = s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
  return { median, min: s[0]!, max: s[s.length - 1]!, samples };
}

const gc = (globalThis as { gc?: () => void }).gc;

/**
 * One measurement: wall-clock time and the process's CPU time, in ms. On a shared
 * machine the CPU time leaves out the time spent waiting for a core, so the targets are
 * judged on it; both are reported. (CPU time counts every thread of the process, V8's
 * GC helpers too: for the variants that allocate, it is the fuller cost.)
 */
interface Sample {
  wall: number;
  cpu: number;
}

const cpuNow = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

async function measure(fn: () => unknown): Promise<Sample> {
  const w0 = performance.now();
  const c0 = cpuNow();
  await fn();
  return { wall: performance.now() - w0, cpu: cpuNow() - c0 };
}

// ------------------------------------------------------------------ (a) allocate + free

/** create() n objects one at a time (views kept in batches), then destroy() them. */
function createDestroy(rt: Runtime, n: number, views: Body[]): void {
  for (let done = 0; done < n;) {
    const k = Math.min(views.length, n - done);
    for (let i = 0; i < k; i++) views[i] = rt.create(Body);
    for (let i = 0; i < k; i++) rt.destroy(views[i]!);
    done += k;
  }
}

/** parallelNew(n), then a do-all in which each object deletes itself. */
async function newAndKill(rt: Runtime, n: number): Promise<void> {
  await rt.parallelNew(Body, n);
  await rt.parallelDo(Body, 'kill');
}

// ------------------------------------------------------------------ main

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      objects: { type: 'string', default: '1000000' },
      runs: { type: 'string', default: '7' },
      passes: { type: 'string', default: '10' },
      out: { type: 'string', default: 'bench-results/single.json' },
    },
    strict: true,
  });
  const n = Number(values.objects);
  const runs = Number(values.runs);
  const passes = Number(values.passes);
  for (const [k, v] of [
    ['objects', n],
    ['runs', runs],
    ['passes', passes],
  ] as const) {
    if (!Number.isInteger(v) || v < 1) throw new Error(`--${k} must be a positive integer, got ${values[k]}`);
  }

  const cpu = cpus();
  const machine = {
    cpu: cpu[0]?.model.trim() ?? 'unknown',
    cores: cpu.length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    platform: `${platform()} ${arch()}`,
  };
  console.log(`smmo single-thread benchmark: ${n} objects, ${runs} runs × ${passes} passes after 1 warm-up run`);
  console.log(`machine: ${machine.cpu}, ${machine.cores} cores, ${machine.memoryGiB} GiB, node ${machine.node}, ${machine.platform}`);
  console.log(
    `load average at the start: ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')} (other processes share the cores)`,
  );
  if (!gc) console.log('note: run with node --expose-gc for the plain-JS bytes/object figure');

  // Heap: 1 M Body objects take 31 250 blocks of 912 bytes (28.5 MB); leave room.
  const heap = Math.max(64 << 20, Math.ceil(n / 32) * 1024 * 2 + (4 << 20));
  const rt = await createRuntime({ classes: [Body], heap });
  const rtChecked = await createRuntime({ classes: [CheckedBody], heap, checked: true });

  // ---- (a) allocate + free
  const batch: Body[] = new Array(Math.min(n, 65536));
  const allocRuns = { createDestroy: [] as Sample[], parallelNew: [] as Sample[] };
  for (let r = 0; r <= runs; r++) {
    const a = await measure(() => createDestroy(rt, n, batch));
    const b = await measure(() => newAndKill(rt, n));
    if (r === 0) continue; // warm-up
    allocRuns.createDestroy.push(a);
    allocRuns.parallelNew.push(b);
  }
  batch.length = 0;
  rt.validateHeap();

  // ---- (b) do-all over n objects
  const init = initialState(n);
  const fill = async (r: Runtime, cls: typeof Body | typeof CheckedBody): Promise<void> => {
    await r.parallelNew(cls, n, (b, i) => {
      b.posX = init.posX[i]!;
      b.posY = init.posY[i]!;
      b.velX = init.velX[i]!;
      b.velY = init.velY[i]!;
      b.forceX = init.forceX[i]!;
      b.forceY = init.forceY[i]!;
      b.mass = init.mass[i]!;
    });
  };
  await fill(rt, Body);
  await fill(rtChecked, CheckedBody);

  gc?.();
  const before = process.memoryUsage().heapUsed;
  const plain: PlainBody[] = [];
  for (let i = 0; i < n; i++) {
    plain.push(new PlainBody(init.posX[i]!, init.posY[i]!, init.velX[i]!, init.velY[i]!, init.forceX[i]!, init.forceY[i]!, init.mass[i]!));
  }
  gc?.();
  const plainBytes = gc ? (process.memoryUsage().heapUsed - before) / n : NaN;
  const soa = copySoa(init);
  const paramProps: ParamPropsBody[] = [];
  for (let i = 0; i < n; i++) {
    paramProps.push(
      new ParamPropsBody(init.posX[i]!, init.posY[i]!, init.velX[i]!, init.velY[i]!, init.forceX[i]!, init.forceY[i]!, init.mass[i]!),
    );
  }

  const variants: [string, () => Promise<void> | void][] = [
    ['smmo parallelDo', () => rt.parallelDo(Body, 'update', DT)],
    ['smmo parallelDo, checked mode', () => rtChecked.parallelDo(CheckedBody, 'update', DT)],
    [
      'plain JS objects',
      () => {
        for (let i = 0; i < plain.length; i++) plain[i]!.update(DT);
      },
    ],
    ['typed arrays (hand-written SOA)', () => updateSoa(soa, n, DT)],
    [
      'plain JS, TS parameter properties',
      () => {
        for (let i = 0; i < paramProps.length; i++) paramProps[i]!.update(DT);
      },
    ],
  ];
  const doAll = new Map<string, Sample[]>(variants.map(([name]) => [name, []]));
  for (let r = 0; r <= runs; r++) {
    for (const [name, run] of variants) {
      const m = await measure(async () => {
        for (let p = 0; p < passes; p++) await run();
      });
      if (r > 0) doAll.get(name)!.push({ wall: m.wall / passes, cpu: m.cpu / passes });
    }
  }

  // Same state everywhere? (smmo sums in heap order, the others in index order.)
  const sums: Record<string, number> = {};
  const digest = (b: { posX: number; posY: number; velX: number; velY: number }): number => b.posX + 2 * b.posY + 3 * b.velX + 4 * b.velY;
  let s1 = 0;
  rt.deviceDo(Body, (b) => (s1 += digest(b)));
  sums['smmo'] = s1;
  let s2 = 0;
  rtChecked.deviceDo(CheckedBody, (b) => (s2 += digest(b)));
  sums['smmo checked'] = s2;
  sums['plain JS'] = plain.reduce((s, b) => s + digest(b), 0);
  let t = 0;
  for (let i = 0; i < n; i++) t += soa.posX[i]! + 2 * soa.posY[i]! + 3 * soa.velX[i]! + 4 * soa.velY[i]!;
  sums['typed arrays'] = t;
  // smmo and typed arrays do the same f32 operations: equal up to summation order.
  // Plain JS keeps f64 fields: equal to a few digits.
  const close = (a: number, rel: number): boolean => Math.abs(a - t) <= rel * Math.max(1, Math.abs(t));
  const agree = close(sums['smmo']!, 1e-9) && close(sums['smmo checked']!, 1e-9) && close(sums['plain JS']!, 1e-3);

  // ---- (c) bytes per object
  const st = rt.stats().heap;
  const p = rt.heap.plan;
  // Bitmaps (free, allocated, active, all levels) and the block list, shared by all blocks.
  const metaPerBlock = (p.blocksOffset - p.freeBitmapWord * 4) / p.numBlocks;
  const smmoBytes = (st.usedBlocks * (st.blockBytes + metaPerBlock)) / n;

  // ---- report
  const rate = (xs: Sample[], k: keyof Sample): Stat => stat(xs.map((x) => n / (x[k] / 1000)));
  const ms = (xs: Sample[], k: keyof Sample): Stat => stat(xs.map((x) => x[k]));
  const alloc = Object.fromEntries(
    Object.entries(allocRuns).map(([k, v]) => [k, { cpu: rate(v, 'cpu'), wall: rate(v, 'wall') }]),
  ) as Record<keyof typeof allocRuns, { cpu: Stat; wall: Stat }>;
  const doAllStats = Object.fromEntries([...doAll].map(([k, v]) => [k, { cpu: ms(v, 'cpu'), wall: ms(v, 'wall') }]));
  const typed = doAllStats['typed arrays (hand-written SOA)']!.cpu.median;
  const plainMs = doAllStats['plain JS objects']!.cpu.median;
  const smmoMs = doAllStats['smmo parallelDo']!.cpu.median;
  const bytes = { smmo: smmoBytes, smmoData: (st.usedBlocks * st.blockBytes) / n, plainJs: plainBytes, typedArrays: 28 };

  const range = (s: Stat, f: (x: number) => string): string => `${f(s.median)} (${f(s.min)} … ${f(s.max)})`;
  const mps = (x: number): string => (x / 1e6).toFixed(2);
  const fms = (x: number): string => x.toFixed(1);
  console.log('\n(a) allocate + free, M objects/s: CPU time median (min … max); wall-clock median');
  console.log(
    `  create() + destroy(), one at a time       ${range(alloc.createDestroy.cpu, mps).padEnd(24)} wall ${mps(alloc.createDestroy.wall.median)}`,
  );
  console.log(
    `  parallelNew(n) + do-all self-delete       ${range(alloc.parallelNew.cpu, mps).padEnd(24)} wall ${mps(alloc.parallelNew.wall.median)}`,
  );
  console.log(
    `\n(b) do-all update(dt) over ${n} objects, ms per pass: CPU time median (min … max); wall-clock median; CPU ratio to typed arrays`,
  );
  for (const [name, s] of Object.entries(doAllStats)) {
    console.log(
      `  ${name.padEnd(36)} ${range(s.cpu, fms).padEnd(26)} wall ${fms(s.wall.median).padStart(6)}   ${(s.cpu.median / typed).toFixed(2)}×`,
    );
  }
  console.log(
    `  final states agree: ${agree ? 'yes' : 'NO'} (${Object.entries(sums)
      .map(([k, v]) => `${k} ${v.toPrecision(12)}`)
      .join(', ')})`,
  );
  console.log('\n(c) bytes per object (7 × f32 = 28 bytes of data)');
  console.log(`  smmo            ${bytes.smmo.toFixed(1)} (blocks ${bytes.smmoData.toFixed(1)}, + bitmaps and block list)`);
  console.log(
    `  plain JS        ${Number.isNaN(plainBytes) ? 'n/a (needs --expose-gc)' : plainBytes.toFixed(1)} (JS heap growth after gc, array slot included)`,
  );
  console.log(`  typed arrays    ${bytes.typedArrays}`);

  const bestAlloc = Math.max(alloc.createDestroy.cpu.median, alloc.parallelNew.cpu.median);
  const targets = {
    allocFree10M: bestAlloc >= 10e6,
    doAllWithin1p5xTypedArrays: smmoMs <= 1.5 * typed,
    doAllNotSlowerThanPlainJs: smmoMs <= plainMs,
    bytesPerObjectAtMost32: smmoBytes <= 32,
  };
  const verdict = (ok: boolean): string => (ok ? 'met   ' : 'MISSED');
  console.log('\ntargets (issue 2), on CPU-time medians:');
  console.log(`  alloc+free ≥ 10 M objects/s        ${verdict(targets.allocFree10M)} (${mps(bestAlloc)} M/s)`);
  console.log(`  do-all ≤ 1.5× typed arrays         ${verdict(targets.doAllWithin1p5xTypedArrays)} (${(smmoMs / typed).toFixed(2)}×)`);
  console.log(`  do-all no slower than plain JS     ${verdict(targets.doAllNotSlowerThanPlainJs)} (${(smmoMs / plainMs).toFixed(2)}×)`);
  console.log(`  ≤ 32 bytes per object              ${verdict(targets.bytesPerObjectAtMost32)} (${smmoBytes.toFixed(1)})`);

  const result = {
    date: new Date().toISOString(),
    machine,
    loadAverage: loadavg(),
    config: { objects: n, runs, passes, heapBytes: heap },
    allocFree: { unit: 'objects/s', ...alloc },
    doAll: { unit: 'ms per pass', objects: n, variants: doAllStats, ratioToTypedArrays: smmoMs / typed, ratioToPlainJs: smmoMs / plainMs },
    finalSums: sums,
    statesAgree: agree,
    bytesPerObject: bytes,
    targets,
  };
  mkdirSync(dirname(values.out), { recursive: true });
  writeFileSync(values.out, `${JSON.stringify(result, null, 2)}\n`);
  console.log(`\nwrote ${values.out}`);
  await rt.close();
  await rtChecked.close();
}

await main();
