/**
 * Cross-check of the WebGPU backend against the TypeScript reference.
 *
 * crossCheck(app, params, {iterations}) creates two runtimes with the same classes, heap
 * size and seed, one with backend 'ts', one with backend 'webgpu', runs the app's init
 * on both (identical heaps: the initial state is deterministic), then `iterations`
 * steps on each. checkOneStep(app, rt) does the same for a single step from the current
 * state of a 'webgpu' runtime (its heap is copied into a fresh TypeScript runtime), so a
 * long GPU run can be checked without running the CPU reference for all its iterations.
 *
 * What is compared: the set of live objects (handles) per class must be identical, and
 * for every numeric field the largest difference over all objects:
 *     maxAbs = max |gpu − ts|,  scale = max |ts| (over the objects, for that field),
 *     rel = maxAbs / scale (0 when both are 0).
 * Tolerance (DEFAULT_TOLERANCE, documented in docs/webgpu.md): rel ≤ 1e-4 per field, and
 * the app's digest within 1e-5 relative (|Δ| / max(|digest|, 1)). Why these numbers: the
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
import type { FieldLayout } from '../runtime/layout.js';
import type { GpuContext } from '../runtime/webgpu/device.js';
import type { GpuRunner, GpuRunnerOptions, GpuRunnerStats } from '../runtime/webgpu/runner.js';
import { UsageError } from '../runtime/errors.js';
import type { SmmoClass } from '../runtime/schema.js';

export const DEFAULT_TOLERANCE = { fieldRel: 1e-4, digestRel: 1e-5 } as const;

export interface FieldDiff {
  maxAbs: number;
  scale: number;
  rel: number;
  /** Handle of the object with the largest difference (0 if none). */
  handle: number;
  ts: number;
  gpu: number;
}

export interface CrossCheckReport {
  app: string;
  iterations: number;
  objects: Record<string, number>;
  /** 'Class.field' → difference. */
  fields: Record<string, FieldDiff>;
  digest: { ts: number; gpu: number; rel: number };
  tolerance: { fieldRel: number; digestRel: number };
  /** Live-object sets differ: class → description. */
  structure: string[];
  ok: boolean;
  /** The field with the largest rel, e.g. 'Body.velX'. */
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
  tolerance?: Partial<typeof DEFAULT_TOLERANCE>;
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

function readField(rt: Runtime, f: FieldLayout, elem: number, handle: number): number {
  const heap = rt.heap;
  const at = heap.blockOffset(handle >>> 5) + f.offsets[elem]!;
  const s = handle & 31;
  switch (f.kind) {
    case 'f32':
      return heap.f32[(at >>> 2) + s]!;
    case 'f64':
      return heap.f64[(at >>> 3) + s]!;
    case 'i32':
      return heap.i32[(at >>> 2) + s]!;
    case 'u32':
    case 'ref':
      return heap.u32[(at >>> 2) + s]!;
    case 'i16':
      return heap.i16[(at >>> 1) + s]!;
    case 'u16':
      return heap.u16[(at >>> 1) + s]!;
    case 'i8':
      return heap.i8[at + s]!;
    default:
      return heap.u8[at + s]!;
  }
}

function liveHandles(rt: Runtime, typeId: number): number[] {
  const out: number[] = [];
  const t = rt.table.types[typeId]!;
  rt.main.deviceDo(t.cls, (o) => {
    if (rt.heap.blockType(o.handle >>> 5) === typeId) out.push(o.handle);
  });
  return out;
}

/** Compare two runtimes of the same classes field by field (both must be current on the host). */
export function compareHeaps(
  ref: Runtime,
  gpu: Runtime,
  tolerance = DEFAULT_TOLERANCE,
): Pick<CrossCheckReport, 'fields' | 'structure' | 'objects' | 'worst'> & { fieldsOk: boolean } {
  const fields: Record<string, FieldDiff> = {};
  const structure: string[] = [];
  const objects: Record<string, number> = {};
  let worst = '';
  let worstRel = -1;
  for (const id of ref.table.concreteIds) {
    const t = ref.table.types[id]!;
    const a = liveHandles(ref, id);
    const b = liveHandles(gpu, id);
    objects[t.name] = a.length;
    if (a.length !== b.length || a.some((h, i) => h !== b[i])) {
      structure.push(
        `${t.name}: ${a.length} live objects in the reference, ${b.length} on the GPU side${a.length === b.length ? ' (different handles)' : ''}`,
      );
      continue;
    }
    for (const f of t.fields) {
      if (f.kind === 'ref') continue; // handles are compared through the structure
      for (let e = 0; e < Math.max(1, f.length); e++) {
        const name = `${t.name}.${f.name}${f.length ? `[${e}]` : ''}`;
        const d: FieldDiff = { maxAbs: 0, scale: 0, rel: 0, handle: 0, ts: 0, gpu: 0 };
        for (const h of a) {
          const x = readField(ref, f, e, h);
          const y = readField(gpu, f, e, h);
          d.scale = Math.max(d.scale, Math.abs(x));
          const diff = Number.isNaN(x) !== Number.isNaN(y) ? Infinity : Number.isNaN(x) ? 0 : Math.abs(x - y);
          if (diff > d.maxAbs) Object.assign(d, { maxAbs: diff, handle: h, ts: x, gpu: y });
        }
        d.rel = d.maxAbs === 0 ? 0 : d.scale === 0 ? Infinity : d.maxAbs / d.scale;
        fields[name] = d;
        if (d.rel > worstRel) {
          worstRel = d.rel;
          worst = name;
        }
      }
    }
  }
  const fieldsOk = structure.length === 0 && Object.values(fields).every((d) => d.rel <= tolerance.fieldRel);
  return { fields, structure, objects, worst, fieldsOk };
}

const relDiff = (a: number, b: number): number => (a === b ? 0 : Math.abs(a - b) / Math.max(Math.abs(a), 1));

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
export async function checkOneStep(
  app: App,
  rt: Runtime,
  iteration = 0,
  tolerance?: Partial<typeof DEFAULT_TOLERANCE>,
): Promise<CrossCheckReport> {
  const tol = { ...DEFAULT_TOLERANCE, ...tolerance };
  if (rt.gpu === null) throw new UsageError("checkOneStep: the runtime's backend is not 'webgpu'");
  await rt.sync();
  const ref = await createRuntime({ classes: app.classes, heap: rt.heap.plan.heapBytes, seed: 1 });
  try {
    if (ref.heap.buffer.byteLength !== rt.heap.buffer.byteLength) throw new UsageError('checkOneStep: heap sizes differ');
    new Uint8Array(ref.heap.buffer).set(new Uint8Array(rt.heap.buffer));
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
  tol: typeof DEFAULT_TOLERANCE,
  tsMs: number,
  gpuMs: number,
): CrossCheckReport {
  const cmp = compareHeaps(ref, dut, tol);
  const dRef = app.digest(ref);
  const dGpu = app.digest(dut);
  const digest = { ts: dRef, gpu: dGpu, rel: relDiff(dRef, dGpu) };
  return {
    app: app.name,
    iterations,
    objects: cmp.objects,
    fields: cmp.fields,
    digest,
    tolerance: tol,
    structure: cmp.structure,
    ok: cmp.fieldsOk && digest.rel <= tol.digestRel,
    worst: cmp.worst,
    adapter: runner.gpu.info.description || runner.gpu.info.device,
    tsMs,
    gpuMs,
    gpuStats: runner.stats,
  };
}

/** A few lines describing a report (for the CLI and the benchmark). */
export function formatCrossCheck(r: CrossCheckReport): string {
  const lines = [
    `cross-check ${r.app}, ${r.iterations} iteration(s), adapter ${r.adapter}: ${r.ok ? 'OK' : 'FAILED'} (tolerance: field rel ≤ ${r.tolerance.fieldRel}, digest rel ≤ ${r.tolerance.digestRel})`,
    `  digest ts ${r.digest.ts} gpu ${r.digest.gpu} rel ${r.digest.rel.toExponential(2)}`,
  ];
  for (const s of r.structure) lines.push(`  structure: ${s}`);
  for (const [name, d] of Object.entries(r.fields)) {
    lines.push(
      `  ${name.padEnd(16)} max |Δ| ${d.maxAbs.toExponential(2)}  scale ${d.scale.toExponential(2)}  rel ${d.rel.toExponential(2)}${d.maxAbs > 0 ? `  (handle ${d.handle}: ts ${d.ts}, gpu ${d.gpu})` : ''}`,
    );
  }
  return lines.join('\n');
}
