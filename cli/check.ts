/**
 * Cross-check of a backend against the TypeScript reference: `smmo run --check`
 * (cli/run.ts) and, for the WebGPU backend, crossCheck / checkOneStep.
 *
 * crossCheck(app, params, {iterations}) creates two runtimes with the same classes, heap
 * size and seed, one with backend 'ts', one with backend 'webgpu', runs the app's init
 * on both (identical heaps: the initial state is deterministic), then `iterations`
 * steps on each. checkOneStep(app, rt) does the same for a single step from the current
 * state of a 'webgpu' runtime (its heap is copied into a fresh TypeScript runtime), so a
 * long GPU run can be checked without running the CPU reference for all its iterations.
 *
 * What is compared: every object of both runtimes, as the columns a state file would hold
 * (runtime/state.ts captureState), by the one comparator that `smmo compare` uses too
 * (runtime/compare.ts: its header states the rules: object counts per class, objects
 * matched by handle or else by rank, references, NaN and infinities, and what "within
 * tolerance" means). Per field it reports
 *     maxAbs = max |run − ts|,  scale = the field's largest finite |value|,
 *     rel = maxAbs / scale (0 when both are 0),
 * the number of objects beyond the tolerance and the worst object. On top, the app's
 * digest must agree within digestRel relative (|Δ| / max(|digest|, 1)): a state holds
 * no digest, so this is the one thing `smmo compare` cannot judge.
 *
 * Tolerance (DEFAULT_TOLERANCE, documented in docs/webgpu.md; `smmo run --check` takes
 * --tol, --rel, --field-rel and --digest-rel): fieldRel 1e-4 (every |Δ| ≤ 1e-4 × the
 * field's scale), abs and rel 0, the digest within 1e-5. Why these numbers: the
 * WGSL kernels compute in f32 with f32 sums where the TypeScript methods compute in
 * float64 and round once per field store; for nbody the force on a body of N is a sum of
 * N terms, whose f32 rounding error relative to the field's scale grows like √N·2⁻²⁴
 * (< 1e-5 for N = 20 000), and a few steps do not amplify it (the dampened force is
 * smooth). An exception: a body that lands within one f32 ulp of a wall may bounce in
 * one run and not in the other; its velocity then differs by 2|v| — reported as a
 * failure with the object's handle (`worst`), never hidden.
 */
import type { App, AppParams } from '../apps/app.js';
import { createRuntime, type Runtime } from '../index.js';
import {
  compareColumns,
  DEFAULT_CHECK_TOLERANCE,
  formatCheckTolerance,
  formatFieldDiff,
  type CheckTolerance,
  type ColumnSet,
  type MatchKeys,
  type FieldDiff,
  type Tolerance,
} from '../runtime/compare.js';
import { UsageError } from '../runtime/errors.js';
import type { SmmoClass } from '../runtime/schema.js';
import { captureState } from '../runtime/state.js';
import type { GpuContext } from '../runtime/webgpu/device.js';
import type { GpuRunner, GpuRunnerOptions, GpuRunnerStats } from '../runtime/webgpu/runner.js';

export type { CheckTolerance, FieldDiff } from '../runtime/compare.js';

/** The cross-check's default tolerance (runtime/compare.ts DEFAULT_CHECK_TOLERANCE). */
export const DEFAULT_TOLERANCE: Readonly<CheckTolerance> = DEFAULT_CHECK_TOLERANCE;

/** The verdict on two runtimes after the same steps (checkRuntimes). */
export interface CheckVerdict {
  ok: boolean;
  tolerance: CheckTolerance;
  /** Live objects per class in the reference. */
  objects: Record<string, number>;
  /** 'Class.column' → difference (runtime/compare.ts FieldDiff). */
  fields: Record<string, FieldDiff>;
  digest: { reference: number; run: number; rel: number };
  /** Classes whose object counts differ, and classes or columns missing on one side. */
  structure: string[];
  /** Classes whose objects were matched by rank (their handles differ). */
  rank: string[];
  /** Classes whose objects were matched by the app's match key (App.matchKeys), as 'Fish by position'. */
  keyed: string[];
  /** The worst field, e.g. 'Body.velX' ('' when no field differs). */
  worst: string;
}

export interface CrossCheckReport {
  app: string;
  iterations: number;
  objects: Record<string, number>;
  /** 'Class.column' → difference. */
  fields: Record<string, FieldDiff>;
  digest: { ts: number; gpu: number; rel: number };
  tolerance: CheckTolerance;
  /** Object counts differ: class → description. */
  structure: string[];
  /** Classes matched by rank (different handles). */
  rank: string[];
  /** Classes matched by the app's match key, as 'Fish by position'. */
  keyed: string[];
  ok: boolean;
  /** The field that fails first (runtime/compare.ts), e.g. 'Body.velX'; '' when none differs. */
  worst: string;
  adapter: string;
  tsMs: number;
  gpuMs: number;
  gpuStats: GpuRunnerStats;
}

export interface CrossCheckOptions {
  iterations: number;
  seed?: number;
  heap?: number | string;
  /** An acquired context to use (not closed here); default: acquire one (and close it). */
  gpu?: GpuContext;
  runner?: Omit<GpuRunnerOptions, 'gpu'>;
  tolerance?: Partial<CheckTolerance>;
}

/**
 * A view of `rt` whose parallelDo runs through `runner` (the GPU, or the TypeScript
 * fallback). Everything else is the runtime's own; call `await runner.toHost()` before
 * host reads (count, stats, deviceDo, digest).
 */
export function gpuRuntimeView(rt: Runtime, runner: GpuRunner): Runtime {
  const view = Object.create(rt) as Runtime;
  Object.defineProperty(view, 'parallelDo', {
    value: async (cls: SmmoClass, method: string, ...args: unknown[]) => {
      await runner.parallelDo(cls, method, ...args);
    },
  });
  Object.defineProperty(view, 'parallelNew', {
    value: async (...a: Parameters<Runtime['parallelNew']>) => {
      await runner.toHost();
      await rt.parallelNew(...a);
      runner.hostWrote();
    },
  });
  return view;
}

/** The columns of every object of `rt` (current on the host), for the comparator. */
function columnsOf(rt: Runtime): ColumnSet {
  return { classes: captureState(rt), table: rt.table };
}

/**
 * Compare two runtimes of the same classes field by field (both must be current on the
 * host) with the one comparator (runtime/compare.ts, which states the rules): `ref` is
 * side A, the reference.
 */
export function compareHeaps(
  ref: Runtime,
  gpu: Runtime,
  tolerance: Tolerance = DEFAULT_TOLERANCE,
  keys: MatchKeys = {},
): Pick<CrossCheckReport, 'fields' | 'structure' | 'objects' | 'worst' | 'rank' | 'keyed'> & { fieldsOk: boolean } {
  const diff = compareColumns(columnsOf(ref), columnsOf(gpu), tolerance, keys);
  const fields: Record<string, FieldDiff> = {};
  const structure: string[] = [];
  const objects: Record<string, number> = {};
  const rank: string[] = [];
  const keyed: string[] = [];
  for (const [name, c] of Object.entries(diff.classes)) {
    objects[name] = c.objects[0];
    if (c.matchedBy === 'none')
      structure.push(`${name}: ${c.objects[0]} live objects in the reference, ${c.objects[1]} in the run checked against it`);
    if (c.matchedBy === 'rank') rank.push(name);
    if (c.matchedBy === 'key') keyed.push(`${name} by ${[keys[name]!].flat().join(', ')}`);
    for (const [field, d] of Object.entries(c.fields)) fields[`${name}.${field}`] = d;
  }
  for (const m of diff.missing) structure.push(m);
  return { fields, structure, objects, worst: diff.worst, rank, keyed, fieldsOk: diff.ok };
}

/** |a − b| / max(|a|, 1): the digests' relative difference (0 when equal). */
export const digestRel = (a: number, b: number): number => (a === b ? 0 : Math.abs(a - b) / Math.max(Math.abs(a), 1));

/**
 * The verdict of `smmo run --check` on the reference `ref` and the run `run` (both
 * current on the host) whose app digests are `digests`: every field by the comparator,
 * and the digest within tolerance.digestRel.
 */
export function checkRuntimes(
  ref: Runtime,
  run: Runtime,
  digests: { reference: number; run: number },
  tolerance: CheckTolerance = DEFAULT_TOLERANCE,
  keys: MatchKeys = {},
): CheckVerdict {
  const cmp = compareHeaps(ref, run, tolerance, keys);
  const digest = { ...digests, rel: digestRel(digests.reference, digests.run) };
  return {
    ok: cmp.fieldsOk && digest.rel <= tolerance.digestRel,
    tolerance: { ...tolerance },
    objects: cmp.objects,
    fields: cmp.fields,
    digest,
    structure: cmp.structure,
    rank: cmp.rank,
    keyed: cmp.keyed,
    worst: cmp.worst,
  };
}

/**
 * Run `app` for `iterations` steps on the TypeScript reference and with backend 'webgpu'
 * from the same initial state; compare.
 */
export async function crossCheck(app: App, params: AppParams, options: CrossCheckOptions): Promise<CrossCheckReport> {
  const tol = { ...DEFAULT_TOLERANCE, ...options.tolerance };
  const seed = options.seed ?? 1;
  const rtOptions = { classes: app.classes, heap: options.heap ?? app.heapFor(params), seed };
  const ref = await createRuntime(rtOptions);
  let dut: Runtime | null = null;
  try {
    dut = await createRuntime({
      ...rtOptions,
      backend: 'webgpu',
      webgpu: { ...options.runner, ...(options.gpu ? { gpu: options.gpu } : {}) },
    });
    await app.init(ref, params, seed);
    await app.init(dut, params, seed);
    let t0 = performance.now();
    for (let i = 0; i < options.iterations; i++) await app.step(ref, i);
    const tsMs = performance.now() - t0;
    t0 = performance.now();
    for (let i = 0; i < options.iterations; i++) await app.step(dut, i);
    await dut.sync();
    const gpuMs = performance.now() - t0;
    return report(app, options.iterations, ref, dut, dut.gpu!, tol, tsMs, gpuMs);
  } finally {
    await ref.close();
    await dut?.close();
  }
}

/**
 * One step from the current state of `rt` (backend 'webgpu'): the heap is copied into a
 * fresh TypeScript runtime, then both take one step and are compared. `rt` advances by
 * one step.
 */
export async function checkOneStep(app: App, rt: Runtime, iteration = 0, tolerance?: Partial<CheckTolerance>): Promise<CrossCheckReport> {
  const tol = { ...DEFAULT_TOLERANCE, ...tolerance };
  if (rt.gpu === null) throw new UsageError("checkOneStep: the runtime's backend is not 'webgpu'");
  await rt.sync();
  const ref = await createRuntime({ classes: app.classes, heap: rt.heap.plan.heapBytes, seed: 1 });
  try {
    if (ref.heap.buffer.byteLength !== rt.heap.buffer.byteLength) throw new UsageError('checkOneStep: heap sizes differ');
    new Uint8Array(ref.heap.buffer).set(new Uint8Array(rt.heap.buffer));
    ref.heap.blockSetChanged(); // another heap's bitmaps and R (thread.ts L1)
    let t0 = performance.now();
    await app.step(ref, iteration);
    const tsMs = performance.now() - t0;
    t0 = performance.now();
    await app.step(rt, iteration);
    await rt.sync();
    const gpuMs = performance.now() - t0;
    return report(app, 1, ref, rt, rt.gpu, tol, tsMs, gpuMs);
  } finally {
    await ref.close();
  }
}

function report(
  app: App,
  iterations: number,
  ref: Runtime,
  dut: Runtime,
  runner: GpuRunner,
  tol: CheckTolerance,
  tsMs: number,
  gpuMs: number,
): CrossCheckReport {
  const v = checkRuntimes(ref, dut, { reference: app.digest(ref), run: app.digest(dut) }, tol, app.matchKeys);
  return {
    app: app.name,
    iterations,
    objects: v.objects,
    fields: v.fields,
    digest: { ts: v.digest.reference, gpu: v.digest.run, rel: v.digest.rel },
    tolerance: v.tolerance,
    structure: v.structure,
    rank: v.rank,
    keyed: v.keyed,
    ok: v.ok,
    worst: v.worst,
    adapter: runner.gpu.info.description || runner.gpu.info.device,
    tsMs,
    gpuMs,
    gpuStats: runner.stats,
  };
}

/** A few lines describing a report (for the CLI and the benchmark). */
export function formatCrossCheck(r: CrossCheckReport): string {
  const lines = [
    `cross-check ${r.app}, ${r.iterations} iteration(s), adapter ${r.adapter}: ${r.ok ? 'OK' : 'FAILED'} (tolerance: ${formatCheckTolerance(r.tolerance)})`,
    `  digest ts ${r.digest.ts} gpu ${r.digest.gpu} rel ${r.digest.rel.toExponential(2)}`,
  ];
  for (const s of r.structure) lines.push(`  structure: ${s}`);
  for (const c of r.rank) lines.push(`  ${c}: objects matched by rank (the handles differ)`);
  for (const c of r.keyed) lines.push(`  ${c}: objects matched by key (the handles differ)`);
  for (const [name, d] of Object.entries(r.fields)) lines.push(`  ${name.padEnd(16)} ${formatFieldDiff(d, ['ts', 'gpu'])}`);
  return lines.join('\n');
}
