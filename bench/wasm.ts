/**
 * Benchmark: one thread, nbody (apps/nbody), side by side in one run —
 *   TypeScript methods · WASM scalar · WASM SIMD (runtime/kernels.ts, wasm/src/nbody.rs) ·
 *   native C compiled on the spot (bench/nbody.c): gcc -O3 -march=native and gcc -O3 -msse4.2
 *   (the same 4 × f32 vector width as wasm SIMD), each with -fno-math-errno -fopenmp-simd, and
 *   for reference gcc -O3 -msse4.2 alone (gcc then leaves the loop scalar; bench/nbody.c says why).
 *
 * Every variant starts from the same initial state (apps/nbody init, same seed; the C file
 * ports apps/random.ts), runs one untimed iteration (JIT/tier-up warm-up; its digest is
 * compared across variants), then times `iterations` more. TypeScript times fewer
 * iterations (about 20 s each at 20 000 bodies). Targets (issue 4): WASM SIMD ≥ 3× the
 * TypeScript methods, and ≤ 1.5× the time of the -msse4.2 C build.
 *
 *   npm run build && node scripts/build-wasm.mjs && node dist/bench/wasm.js
 *     [--bodies 20000] [--iterations 3] [--ts-iterations 1] [--seed 42] [--out bench-results/wasm.json]
 *     [--child-timeout S]  (limit of gcc and of the compiled C program, seconds)
 *
 * Not a test: it asserts nothing and exits 0; the JSON records whether the targets were met.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import app from '../apps/nbody/index.js';
import { createRuntime, type RuntimeOptions } from '../index.js';
import { defaultWasmDir } from '../runtime/wasm.js';
import { childTimeoutMs } from './child.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

function arg(name: string, fallback: number): number;
function arg(name: string, fallback: string): string;
function arg(name: string, fallback: number | string): number | string {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const v = process.argv[i + 1];
  if (v === undefined) throw new Error(`--${name} needs a value`);
  return typeof fallback === 'number' ? Number(v) : v;
}

const BODIES = arg('bodies', 20000);
const ITERATIONS = arg('iterations', 3);
const TS_ITERATIONS = arg('ts-iterations', 1);
const SEED = arg('seed', 42);
const OUT = arg('out', join(ROOT, 'bench-results', 'wasm.json'));
const log = (s: string): void => void process.stderr.write(`${s}\n`);

interface Row {
  variant: string;
  how: string;
  secondsPerIteration: number;
  timedIterations: number;
  /** Digest after the first (untimed) iteration. */
  digest1: number;
}

async function smmo(variant: string, options: Partial<RuntimeOptions>, timed: number): Promise<Row> {
  log(`${variant}: ${BODIES} bodies, 1 + ${timed} iterations …`);
  const rt = await createRuntime({ classes: app.classes, heap: app.heapFor({ bodies: BODIES }), threads: 1, ...options });
  try {
    await app.init(rt, { bodies: BODIES }, SEED);
    await app.step(rt, 0);
    const digest1 = app.digest(rt);
    const t0 = performance.now();
    for (let k = 1; k <= timed; k++) await app.step(rt, k);
    const seconds = (performance.now() - t0) / 1000;
    const methods = rt.stats().backend.methods;
    const how = Object.entries(methods)
      .map(([m, b]) => `${m}:${b}`)
      .join(' ');
    return { variant, how, secondsPerIteration: seconds / timed, timedIterations: timed, digest1 };
  } finally {
    await rt.close();
  }
}

function native(variant: string, flags: string[], dir: string, timed: number): Row {
  const exe = join(dir, variant.replace(/\W+/g, '_'));
  const timeout = childTimeoutMs();
  execFileSync('gcc', [...flags, join(ROOT, 'bench', 'nbody.c'), '-o', exe, '-lm'], { timeout, killSignal: 'SIGKILL' });
  log(`${variant}: gcc ${flags.join(' ')}; ${BODIES} bodies, 1 + ${timed} iterations …`);
  const r = JSON.parse(
    execFileSync(exe, [String(BODIES), String(timed + 1), String(SEED)], { encoding: 'utf8', timeout, killSignal: 'SIGKILL' }),
  ) as {
    digest1: number;
    seconds: number;
  };
  return { variant, how: `gcc ${flags.join(' ')}`, secondsPerIteration: r.seconds / timed, timedIterations: timed, digest1: r.digest1 };
}

function version(cmd: string, args: string[]): string {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', timeout: 10_000, killSignal: 'SIGKILL' }).split('\n')[0]!.trim();
  } catch {
    return 'unknown';
  }
}

const rows: Row[] = [];
rows.push(await smmo('TypeScript methods', { backend: 'ts' }, TS_ITERATIONS));
rows.push(await smmo('WASM scalar', { backend: 'wasm', wasm: { variant: 'scalar' } }, ITERATIONS));
rows.push(await smmo('WASM SIMD', { backend: 'wasm', wasm: { variant: 'simd' } }, ITERATIONS));
const tmp = mkdtempSync(join(tmpdir(), 'smmo-bench-'));
try {
  const extra = ['-fno-math-errno', '-fopenmp-simd'];
  rows.push(native('C -march=native', ['-O3', '-march=native', ...extra], tmp, ITERATIONS));
  rows.push(native('C -msse4.2', ['-O3', '-msse4.2', ...extra], tmp, ITERATIONS));
  rows.push(native('C -msse4.2 (plain)', ['-O3', '-msse4.2'], tmp, ITERATIONS));
} finally {
  rmSync(tmp, { recursive: true, force: true });
}

const by = (v: string): Row => rows.find((r) => r.variant === v)!;
const ts = by('TypeScript methods');
const simd = by('WASM SIMD');
const sse = by('C -msse4.2');
const simdVsTs = ts.secondsPerIteration / simd.secondsPerIteration;
const simdVsSse = simd.secondsPerIteration / sse.secondsPerIteration;

const table = [
  ['variant', 's / iteration', 'speed vs TS', 'time vs C -msse4.2', 'digest after iteration 1', 'rel. diff vs TS'],
  ...rows.map((r) => [
    r.variant,
    r.secondsPerIteration.toFixed(3),
    `${(ts.secondsPerIteration / r.secondsPerIteration).toFixed(1)}×`,
    `${(r.secondsPerIteration / sse.secondsPerIteration).toFixed(2)}×`,
    r.digest1.toPrecision(12),
    (Math.abs(r.digest1 - ts.digest1) / Math.abs(ts.digest1)).toExponential(1),
  ]),
];
const widths = table[0]!.map((_, c) => Math.max(...table.map((row) => row[c]!.length)));
const cpu = cpus();
const machine = `${cpu[0]?.model.trim() ?? 'unknown'}, ${cpu.length} cores`;
console.log(`nbody, ${BODIES} bodies, one thread — ${machine}, Node ${process.version}`);
for (const row of table) console.log(row.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('  '));
console.log(`WASM SIMD vs TypeScript: ${simdVsTs.toFixed(1)}× faster (target ≥ 3×): ${simdVsTs >= 3 ? 'met' : 'NOT met'}`);
console.log(`WASM SIMD vs C -msse4.2: ${simdVsSse.toFixed(2)}× the time (target ≤ 1.5×): ${simdVsSse <= 1.5 ? 'met' : 'NOT met'}`);

let wasmBuild: unknown = null;
try {
  wasmBuild = JSON.parse(readFileSync(join(defaultWasmDir(), 'build.json'), 'utf8'));
} catch {
  // not built by scripts/build-wasm.mjs
}
mkdirSync(dirname(OUT), { recursive: true });
writeFileSync(
  OUT,
  JSON.stringify(
    {
      benchmark: 'nbody, one thread: TypeScript vs WASM scalar vs WASM SIMD vs native C',
      date: new Date().toISOString(),
      machine: { cpu: cpu[0]?.model.trim() ?? 'unknown', cores: cpu.length, platform: process.platform, arch: process.arch },
      node: process.version,
      gcc: version('gcc', ['--version']),
      wasmBuild,
      bodies: BODIES,
      seed: SEED,
      method: 'one untimed iteration (warm-up; digest1), then timedIterations timed; time per iteration = computeForce + update',
      results: rows,
      targets: {
        simdVsTsSpeedup: simdVsTs,
        simdVsTsMet: simdVsTs >= 3,
        simdVsSse42TimeRatio: simdVsSse,
        simdVsSse42Met: simdVsSse <= 1.5,
      },
    },
    null,
    2,
  ) + '\n',
);
console.log(`wrote ${OUT}`);
