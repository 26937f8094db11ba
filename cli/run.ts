/**
 * `smmo run <app>`: create a runtime for the app's classes, create the initial objects,
 * run K iterations (each the app's list of do-alls), then report what happened: a
 * human summary, or with --json one JSON object as the last line of stdout.
 *
 * Timing: `seconds` covers the K iterations only; runtime creation plus the app's init
 * are `initSeconds`; the digest, the statistics and (with --checked) the final
 * validateHeap() are outside both.
 *
 * State files and pictures (cli/state.ts, cli/render.ts): --init replaces the app's
 * init (part of initSeconds), --dump runs after the digest (outside both timings),
 * --render frames are drawn between iterations and their time is left out of `seconds`.
 *
 * Errors: a UsageError while setting up (runtime options such as --threads, or an
 * app's parameters and input files) is the command line's fault: it becomes a
 * CliUsageError (exit 2). Everything the runtime throws later (HeapExhaustedError, …)
 * propagates to main.ts (exit 1).
 */
import { cpus } from 'node:os';
import type { App } from '../apps/app.js';
import { appModule } from '../apps/registry.js';
import {
  createRuntime,
  UsageError,
  type CompiledMethodStats,
  type Runtime,
  type RuntimeOptions,
  type RuntimeStats,
  type WebGpuOptions,
} from '../index.js';
import type { CheckTolerance, FieldDiff } from '../runtime/compare.js';
import { formatCheckTolerance, formatFieldDiff } from '../runtime/compare.js';
import { MAX_HEAP_BYTES, planTypes } from '../runtime/layout.js';
import { formatDefrag, RunDefrag, type DefragReport } from './defrag.js';
import { formatReorder, RunReorder, type ReorderReport } from './reorder.js';
import { CliUsageError } from './errors.js';
import type { RunOptions } from './flags.js';
import { progressBar } from './progress.js';
import { FrameWriter } from './render.js';
import { dumpState, heapForState, prepareDump, readInitState, restoreInto, type InitState } from './state.js';
import { divergenceRows, type DivergenceReport } from './divergence.js';

/**
 * `--check`: this run against the TypeScript reference from the same initial state
 * (cli/check.ts checkRuntimes; the comparator and its rules: runtime/compare.ts).
 */
export interface CheckReport {
  ok: boolean;
  /** abs, rel, fieldRel (the comparator's) and digestRel: --tol, --rel, --field-rel, --digest-rel. */
  tolerance: CheckTolerance;
  digest: { reference: number; run: number; rel: number };
  /** 'Class.column' → largest |difference|, its scale and their ratio, objects beyond the tolerance, the worst object. */
  fields: Record<string, FieldDiff>;
  /** Classes whose object counts differ (or missing on one side). */
  structure: string[];
  /** Classes whose objects were matched by rank (their handles differ). */
  rank: string[];
  /** Classes matched by the app's match key (App.matchKeys), as 'Fish by position'. */
  keyed: string[];
  worst: string;
  referenceSeconds: number;
}

/** What `--json` prints (one object, the last line of stdout). */
export interface RunReport {
  app: string;
  backend: string;
  /**
   * --backend webgpu: the adapter the passes ran on, whether Dawn validated the API calls
   * (--no-gpu-validation), the passes that ran as generated WGSL (by 'Class.method') and
   * why the passes that ran in TypeScript had no WGSL kernel.
   */
  gpu?: {
    adapter: string;
    software: boolean;
    validation: boolean;
    /** How generated kernels computed non-integers (--gpu-floats). */
    floats: 'double-single' | 'f32';
    generated: Record<string, number>;
    fallbacks: Record<string, { passes: number; reason: string }>;
    /** Whole-heap copies between host and GPU in the run (creation and the final read for the digest included). */
    transfers: { uploads: number; downloads: number };
  };
  threads: number;
  iterations: number;
  /** Seconds spent in the K iterations. */
  seconds: number;
  /** Seconds spent creating the runtime and the initial objects. */
  initSeconds: number;
  iterationsPerSecond: number;
  digest: number;
  /** Live objects per concrete class. */
  objects: Record<string, number>;
  heap: { bytes: number; blockBytes: number; blockSize: 'smallest' | 'largest'; blocks: number; usedBlocks: number; fragmentation: number };
  params: Record<string, number | string | null>;
  seed: number;
  /** With --check: the comparison with the TypeScript reference run. */
  check?: CheckReport;
  /** With --check-every: the divergence finder's report (cli/check-every.ts); `check` is then its last comparison. */
  divergence?: DivergenceReport;
  /** With --init: the state started from, and its iteration count (this run's iterations continue from it). */
  init?: string;
  startIteration?: number;
  /** With --dump: the files written. */
  dump?: string[];
  /** With --render: the PNG files written. */
  frames?: string[];
  /** Things the run went on despite (with --init: float columns of the state holding NaN or ±Infinity). */
  warnings?: string[];
  /** The app's own figures (App.results; linux-scalability: ns per allocation). */
  results?: Record<string, unknown>;
  /** With --defrag: calls, passes, objects moved, time per phase, fragmentation before/after (cli/defrag.ts). */
  defrag?: DefragReport;
  /** With --reorder: calls, objects moved, time per phase (cli/reorder.ts). */
  reorder?: ReorderReport;
  /** The same figures as rows of the human summary. */
  resultRows?: [string, string][];
  /** Which implementation ran each do-all method ("Body.update": "wasm" | "ts" | "webgpu"). */
  kernels: Record<string, string>;
  /** Per method that ran as TypeScript: compiled, or interpreted and why (runtime stats().compiled). */
  compiled: Record<string, CompiledMethodStats>;
  checked: boolean;
  /** With --checked: validateHeap() passed after the last iteration. */
  heapValidated: boolean;
  /** The allocator variant (--no-rotation, --no-coalescing, --bitmap-alloc, --own-first-block). */
  allocator: { rotation: boolean; coalescing: boolean; bitmapAlloc: boolean; ownFirstBlock: boolean };
  version: string;
  node: string;
  machine: { cpu: string; cores: number; platform: string; arch: string };
}

/**
 * The default heap for the allocator variant: the app's size, and with --bitmap-alloc that
 * size scaled by the bytes a block of one object takes over the bytes per slot of a
 * DynaSOAr block of the smallest class (every object gets a block of the largest class);
 * with --block-size largest scaled by the ratio of the two block sizes.
 */
function variantHeap(app: App, opts: RunOptions, bytes: number): number {
  if (!opts.allocator.bitmapAlloc && opts.blockSize === 'smallest') return bytes;
  const soa = planTypes(app.classes);
  // --block-size largest: at most every object in blocks that many times larger (the same slots or more per block).
  const ratio = opts.allocator.bitmapAlloc
    ? (planTypes(app.classes, { bitmapAlloc: true }).blockBytes + 4) / (soa.blockBytes / 32)
    : planTypes(app.classes, { blockSize: 'largest' }).blockBytes / soa.blockBytes;
  return Math.min(MAX_HEAP_BYTES, Math.ceil((bytes * ratio) / 65536) * 65536);
}

/**
 * Run `app` as `opts` says; `version` is smmo's (for the report). The steps: read the
 * --init state (readInit), choose the heap (heapFor), start the runtime (startRuntime),
 * fill it (fill), run the iterations with progress bar and frames (iterate), then check,
 * dump and report (report).
 */
export async function runApp(app: App, opts: RunOptions, version: string): Promise<RunReport> {
  const where = `smmo run ${app.name}`;
  const t0 = performance.now();
  const init = await readInit(app, opts, where);
  // --init: the state's parameters and seed replace the command line's (cli/state.ts).
  if (init) opts = { ...opts, params: init.params, seed: init.seed };
  if (opts.dump !== undefined) await prepareDump(app, opts.dump, where);
  const lockstep = opts.checkEvery === undefined ? null : await import('./check-every.js');
  lockstep?.checkLockstepOptions(app, opts, where);
  if (lockstep && opts.defrag !== undefined)
    throw new CliUsageError(
      `${where}: --check-every runs its reference without defragmenting it, so their handles would part after the first --defrag; use --check with --defrag`,
    );
  if (lockstep && opts.reorder !== undefined)
    throw new CliUsageError(
      `${where}: --check-every runs its reference without reordering it, so their handles would part after the first --reorder; use --check with --reorder`,
    );
  const defrag = RunDefrag.forRun(app, opts.defrag, opts.iterations, where);
  const reorder = RunReorder.forRun(app, opts.reorder, opts.iterations, where);
  const heapBytes = heapFor(app, opts, init, where);
  const rt = await startRuntime(app, opts, heapBytes, where);
  try {
    // The report names the backend the runtime says it uses, never just the one asked for.
    if (rt.backend !== opts.backend) {
      throw new CliUsageError(
        `${where}: --backend ${opts.backend} is not available in this build (it runs the ${rt.backend} kernels); use --backend ${rt.backend}`,
      );
    }
    // A software adapter (SwiftShader, llvmpipe) runs the GPU passes on this CPU: said before the run, not only after it.
    const software = softwareAdapterNote(rt.stats());
    if (software !== null) process.stderr.write(`${where}: note: ${software}\n`);
    await fill(app, rt, opts, init, where);
    await rt.prepare(); // backend 'webgpu': compile the GPU kernels outside the timing; others: no-op
    const t1 = performance.now();
    const first = init?.state.info.iterations ?? 0;
    if (lockstep) {
      // --check-every: the reference in lockstep; on a divergence the run stops there (no --dump).
      const lock = await lockstep.runLockstep(app, rt, opts, { heapBytes, init, first, version, where });
      const found = lock.divergence.found;
      const r = await report(
        app,
        rt,
        { ...opts, check: false, iterations: lock.iterations, ...(found ? { dump: undefined } : {}) },
        version,
        {
          heapBytes,
          init,
          first,
          frames: null,
          initSeconds: (t1 - t0) / 1000,
          seconds: lock.seconds,
        },
      );
      return { ...r, check: lock.check, divergence: lock.divergence };
    }
    const { frames, t2 } = await iterate(app, rt, opts, first, defrag, reorder);
    return await report(app, rt, opts, version, {
      defrag,
      reorder,
      heapBytes,
      init,
      first,
      frames,
      initSeconds: (t1 - t0) / 1000,
      seconds: (t2 - t1) / 1000,
    });
  } finally {
    await rt.close();
  }
}

/** --init: the state to start from (undefined without --init); its problems are CliUsageErrors. */
async function readInit(app: App, opts: RunOptions, where: string): Promise<InitState | undefined> {
  if (opts.init === undefined) return undefined;
  try {
    return await readInitState(app, opts, where);
  } catch (e) {
    if (e instanceof UsageError) throw new CliUsageError(`${where}: --init: ${e.message}`);
    throw e;
  }
}

/** The heap: --heap, else what the app (or the --init state) needs, scaled for --bitmap-alloc; too large is a CliUsageError naming the flags. */
function heapFor(app: App, opts: RunOptions, init: InitState | undefined, where: string): number {
  const appHeap = init ? heapForState(app, init) : app.heapFor(opts.params);
  if (opts.heapBytes === undefined && !(appHeap <= MAX_HEAP_BYTES)) {
    // The heap the app asks for: the parameters that made it so large are the problem, not --heap.
    const given = app.flags.filter((f) => (opts.given ?? []).includes(f.name)).map((f) => `--${f.name} ${String(opts.params[f.name])}`);
    const which = given.length > 0 ? given.join(' ') : `the parameters (${JSON.stringify(opts.params)})`;
    throw new CliUsageError(
      `${where}: ${which} would need a heap of ${appHeap} bytes, more than the largest heap (${MAX_HEAP_BYTES} bytes, ` +
        `${formatBytes(MAX_HEAP_BYTES)}): choose smaller values`,
    );
  }
  return opts.heapBytes ?? variantHeap(app, opts, appHeap);
}

/** createRuntime with the run's options; its UsageErrors become CliUsageErrors. */
async function startRuntime(app: App, opts: RunOptions, heapBytes: number, where: string): Promise<Runtime> {
  try {
    // --no-gpu-validation, --gpu-kernels, --gpu-floats: the WebGPU options that differ from the defaults.
    const webgpu: WebGpuOptions = {};
    if (!opts.gpuValidation) webgpu.validation = false;
    if (opts.gpuKernels !== 'auto') webgpu.generate = opts.gpuKernels === 'generated' ? 'always' : false;
    if (opts.gpuFloats !== 'double-single') webgpu.floats = opts.gpuFloats;
    const options: RuntimeOptions = {
      classes: app.classes,
      heap: heapBytes,
      checked: opts.checked,
      compile: !opts.interpret,
      ...(opts.passTimeout !== undefined ? { passTimeout: opts.passTimeout } : {}),
      threads: opts.threads,
      backend: opts.backend,
      allocator: opts.allocator,
      blockSize: opts.blockSize,
      ...(Object.keys(webgpu).length > 0 ? { webgpu } : {}),
      ...(opts.defrag?.lanes === 'wasm' ? { wasm: { defragLanes: 'wasm' } } : {}),
      // Worker threads import the app's module to find its classes.
      modules: [appModule(app.name) ?? new URL(`../apps/${app.name}/index.js`, import.meta.url)],
    };
    return await createRuntime(options);
  } catch (e) {
    if (e instanceof UsageError) throw new CliUsageError(`${where}: ${e.message}`);
    throw e;
  }
}

/** The first state: restored from --init, or the app's own init. */
async function fill(app: App, rt: Runtime, opts: RunOptions, init: InitState | undefined, where: string): Promise<void> {
  try {
    if (init) await restoreInto(app, rt, init);
    else await app.init(rt, opts.params, opts.seed);
  } catch (e) {
    // An app's own messages start with its name ("game-of-life: …"): said once.
    if (e instanceof UsageError) throw new CliUsageError(`${where}: ${e.message.replace(new RegExp(`^${app.name}: `), '')}`);
    throw e;
  }
}

/**
 * The iterations, with the progress bar and --render's frames; ends with rt.sync() (backend
 * 'webgpu': the iterations are done when their results are on the host). Returns the frame
 * writer and when the iterations ended, less the time spent drawing (not run time).
 */
async function iterate(
  app: App,
  rt: Runtime,
  opts: RunOptions,
  first: number,
  defrag: RunDefrag | null = null,
  reorder: RunReorder | null = null,
): Promise<{ frames: FrameWriter | null; t2: number }> {
  const render = opts.render;
  const frames = render ? new FrameWriter(render.path, render.every, render.scale, first + opts.iterations) : null;
  let renderMs = 0;
  const draw = async (done: number): Promise<void> => {
    const r0 = performance.now();
    await rt.sync(); // backend 'webgpu': the picture is read on the host
    frames!.write(app.picture!(rt), done);
    renderMs += performance.now() - r0;
  };
  const every = render?.every;
  if (every !== undefined) await draw(first);
  const bar = progressBar(process.stderr, app.name, opts.iterations, !opts.json && !opts.quiet);
  try {
    for (let k = 0; k < opts.iterations; k++) {
      await app.step(rt, first + k);
      await defrag?.after(rt, k + 1);
      await reorder?.after(rt, k + 1);
      bar?.update(k + 1);
      if (every !== undefined && ((k + 1) % every === 0 || k + 1 === opts.iterations)) await draw(first + k + 1);
    }
  } finally {
    bar?.finish();
  }
  await rt.sync();
  const t2 = performance.now() - renderMs;
  if (frames && every === undefined) await draw(first + opts.iterations); // after the timing
  return { frames, t2 };
}

/** After the iterations: digest, --checked validation, --check, --dump, and the report. */
async function report(
  app: App,
  rt: Runtime,
  opts: RunOptions,
  version: string,
  run: {
    heapBytes: number;
    init: InitState | undefined;
    first: number;
    frames: FrameWriter | null;
    initSeconds: number;
    seconds: number;
    defrag?: RunDefrag | null;
    reorder?: RunReorder | null;
  },
): Promise<RunReport> {
  const { heapBytes, init, first, frames, seconds } = run;
  const digest = app.digest(rt);
  const results = app.results?.(rt);
  const stats = rt.stats();
  if (opts.checked) rt.validateHeap();
  const check = opts.check ? await checkAgainstReference(app, opts, heapBytes, rt, digest, init) : undefined;
  const dump =
    opts.dump === undefined
      ? undefined
      : await dumpState(app, rt, opts.dump, { iterations: first + opts.iterations, seed: opts.seed, params: paramsOf(opts), version });
  const cpu = cpus();
  const software = softwareAdapterNote(stats);
  const warnings = [
    ...(init?.warnings ?? []),
    ...(run.defrag?.warning ? [run.defrag.warning] : []),
    ...(software !== null ? [software] : []),
  ];
  return {
    app: app.name,
    backend: rt.backend,
    threads: opts.threads,
    iterations: opts.iterations,
    seconds,
    initSeconds: run.initSeconds,
    iterationsPerSecond: seconds > 0 ? opts.iterations / seconds : 0,
    digest,
    objects: rt.objectCounts(),
    heap: {
      bytes: stats.heap.bytes,
      blockBytes: stats.heap.blockBytes,
      blockSize: opts.blockSize,
      blocks: stats.heap.blocks,
      usedBlocks: stats.heap.usedBlocks,
      fragmentation: stats.heap.fragmentation,
    },
    params: paramsOf(opts),
    seed: opts.seed,
    checked: opts.checked,
    heapValidated: opts.checked,
    allocator: { ...opts.allocator },
    ...(check ? { check } : {}),
    ...(results ? { results: results.json, resultRows: results.summary } : {}),
    ...(init ? { init: opts.init!, startIteration: first } : {}),
    ...(dump ? { dump } : {}),
    ...(frames ? { frames: frames.written } : {}),
    ...(warnings.length > 0 ? { warnings } : {}),
    ...(run.defrag ? { defrag: run.defrag.result(rt) } : {}),
    ...(run.reorder ? { reorder: run.reorder.result() } : {}),
    ...(stats.backend.webgpu ? { gpu: gpuOf(stats.backend.webgpu) } : {}),
    kernels: { ...stats.backend.methods },
    compiled: stats.compiled,
    version,
    node: process.version,
    machine: { cpu: cpu[0]?.model.trim() ?? 'unknown', cores: cpu.length, platform: process.platform, arch: process.arch },
  };
}

/**
 * What a run on a software WebGPU adapter is told (a warning in the report, a note on stderr
 * before the iterations), or null on a GPU and on the CPU backends: the "GPU" passes then run
 * on this machine's CPU through a Vulkan emulator, far slower than on a GPU and than
 * `--backend ts` itself, so an app's default size can take many minutes.
 */
export function softwareAdapterNote(stats: RuntimeStats): string | null {
  const a = stats.backend.webgpu?.adapter;
  if (a === undefined || !a.software) return null;
  return (
    `the WebGPU adapter is a software renderer (${a.description || a.device}): its passes run on this machine's CPU, ` +
    `many times slower than on a GPU, and an app's default size can take many minutes; try a smaller size first`
  );
}

/** The report's `gpu`: what RuntimeStats says of the adapter. */
function gpuOf(w: NonNullable<RuntimeStats['backend']['webgpu']>): NonNullable<RunReport['gpu']> {
  const a = w.adapter;
  return {
    adapter: a.description || a.device,
    software: a.software,
    validation: a.validation,
    floats: w.floats,
    generated: w.generated,
    fallbacks: w.fallbacks,
    transfers: { uploads: w.uploads, downloads: w.downloads },
  };
}

/** The app's parameters for reports and state files (unset: null). */
function paramsOf(opts: RunOptions): Record<string, number | string | null> {
  const params: Record<string, number | string | null> = {};
  for (const [k, v] of Object.entries(opts.params)) params[k] = v ?? null;
  return params;
}

/**
 * Run the TypeScript reference (one thread, same seed and parameters, or the same --init
 * state) for the same iterations and judge `rt` against it with the tolerance of
 * --tol/--rel/--field-rel/--digest-rel: cli/check.ts checkRuntimes, the comparator that
 * `smmo compare` uses too, loaded only when asked for.
 */
async function checkAgainstReference(
  app: App,
  opts: RunOptions,
  heapBytes: number,
  rt: Runtime,
  digest: number,
  init: InitState | undefined,
): Promise<CheckReport> {
  const { checkRuntimes } = await import('./check.js');
  const ref = await createRuntime({ classes: app.classes, heap: heapBytes, backend: 'ts' });
  try {
    if (init) await restoreInto(app, ref, init);
    else await app.init(ref, opts.params, opts.seed);
    const first = init?.state.info.iterations ?? 0;
    // --defrag: the reference is defragmented on the same schedule, so that objects compare by handle as without it.
    const refDefrag = RunDefrag.forRun(app, opts.defrag, opts.iterations, `smmo run ${app.name}`);
    const refReorder = RunReorder.forRun(app, opts.reorder, opts.iterations, `smmo run ${app.name}`); // (cli/reorder.ts Q5)
    const t0 = performance.now();
    for (let k = 0; k < opts.iterations; k++) {
      await app.step(ref, first + k);
      await refDefrag?.after(ref, k + 1);
      await refReorder?.after(ref, k + 1);
    }
    const referenceSeconds = (performance.now() - t0) / 1000;
    const v = checkRuntimes(ref, rt, { reference: app.digest(ref), run: digest }, opts.tolerance, app.matchKeys);
    return {
      ok: v.ok,
      tolerance: v.tolerance,
      digest: v.digest,
      fields: v.fields,
      structure: v.structure,
      rank: v.rank,
      keyed: v.keyed,
      worst: v.worst,
      referenceSeconds,
    };
  } finally {
    await ref.close();
  }
}

/** The human summary printed at the end of a run. */
export function formatSummary(r: RunReport): string {
  const params = Object.entries(r.params)
    .map(([k, v]) => `${k}=${v ?? '-'}`)
    .join(' ');
  const objects = Object.entries(r.objects)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  const rows: [string, string][] = [
    ['app', r.app],
    ['backend', r.gpu ? `${r.backend} (${r.gpu.adapter}${r.gpu.validation ? '' : ', without API validation'})` : r.backend],
    ['threads', String(r.threads)],
    ['parameters', `${params}${params ? ' ' : ''}seed=${r.seed}${r.checked ? ' checked' : ''}`],
    ['iterations', String(r.iterations)],
    ['seconds', `${r.seconds.toFixed(3)} (${r.iterationsPerSecond.toFixed(1)} iterations/s; init ${r.initSeconds.toFixed(3)} s)`],
    ['digest', String(r.digest)],
    ['objects', objects || 'none'],
    [
      'heap',
      `${r.heap.usedBlocks} / ${r.heap.blocks} blocks used (${formatBytes(r.heap.bytes)}, ${r.heap.blockBytes}-byte blocks` +
        `${r.heap.blockSize === 'largest' ? ' sized for the largest class' : ''}), ` +
        `fragmentation ${(r.heap.fragmentation * 100).toFixed(1)} %`,
    ],
  ];
  const methods = Object.entries(r.compiled);
  if (methods.length > 0) {
    const fell = methods.filter(([, m]) => !m.compiled);
    rows.push([
      'compiled',
      `${methods.length - fell.length} of ${methods.length} methods${fell.length > 0 ? `; interpreted: ${fell.map(([k, m]) => `${k} (${m.reason})`).join('; ')}` : ''}`,
    ]);
  }
  if (r.checked) rows.push(['checks', r.heapValidated ? 'validateHeap() passed' : 'not run']);
  const a = r.allocator;
  if (!a.rotation || !a.coalescing || a.bitmapAlloc) {
    const name = a.bitmapAlloc ? 'BitmapAlloc' : `DynaSOAr${a.rotation ? '' : '-NoShift'}${a.coalescing ? '' : '-NoCoal'}`;
    rows.push(['allocator', `${name} (the paper's §7 variant)${a.ownFirstBlock ? ', own first blocks' : ''}`]);
  } else if (a.ownFirstBlock) rows.push(['allocator', 'DynaSOAr, own first blocks (--own-first-block)']);
  rows.push(...(r.resultRows ?? []));
  if (r.init !== undefined)
    rows.push(['init', `${r.init} (after ${r.startIteration} iterations; now ${(r.startIteration ?? 0) + r.iterations})`]);
  if (r.defrag) rows.push(['defrag', formatDefrag(r.defrag)]);
  if (r.reorder) rows.push(['reorder', formatReorder(r.reorder)]);
  if (r.dump) rows.push(['dump', r.dump.join(', ')]);
  for (const [i, w] of (r.warnings ?? []).entries()) rows.push([i === 0 ? 'warnings' : '', w]);
  if (r.frames)
    rows.push([
      'pictures',
      r.frames.length <= 3 ? r.frames.join(', ') : `${r.frames.length} frames: ${r.frames[0]} … ${r.frames[r.frames.length - 1]}`,
    ]);
  const c = r.check;
  if (c) {
    rows.push([
      'check',
      `${c.ok ? 'OK' : 'BEYOND TOLERANCE'} against the TypeScript reference (${c.referenceSeconds.toFixed(3)} s): ` +
        `digest rel ${c.digest.rel.toExponential(2)}, worst field ${c.worst || '-'} (tolerance: ${formatCheckTolerance(c.tolerance)})`,
    ]);
    for (const [name, d] of Object.entries(c.fields)) rows.push(['', `${name.padEnd(22)} ${formatFieldDiff(d, ['reference', 'run'])}`]);
    for (const s of c.structure) rows.push(['', `objects differ: ${s}`]);
    for (const s of c.rank) rows.push(['', `${s}: objects matched by rank (the handles differ)`]);
    for (const s of c.keyed) rows.push(['', `${s}: objects matched by key (the handles differ)`]);
  }
  if (r.divergence) rows.push(...divergenceRows(r.divergence, r.check ? formatCheckTolerance(r.check.tolerance) : ''));
  return rows.map(([k, v]) => `${k.padEnd(12)}${v}`).join('\n');
}

/** 64 MiB, 1.5 GiB, 900 KiB. */
export function formatBytes(n: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB'];
  let u = 0;
  let v = n;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${Number.isInteger(v) ? v : v.toFixed(1)} ${units[u]}`;
}
