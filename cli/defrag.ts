/**
 * `smmo run <app> --defrag N [--defrag-every K | --defrag-above F]`: defragmentation
 * between iterations (runtime/defrag.ts, CompactGpu, ISMM 2019 §3; the thesis's §6
 * benchmarks defragment between iterations the same way).
 *
 *  (R1) Only an app that says what may move (App.defrag) is defragmented; any other
 *       refuses --defrag with the app's reason, before the runtime starts. Only the
 *       app's movable classes are defragmented (the grid apps' cells keep their handles:
 *       apps/grid.ts ranks them by handle).
 *  (R2) When: after every iteration (--defrag alone), after every K-th (--defrag-every
 *       K), or after an iteration that leaves the movable classes' fragmentation (free
 *       slots / slots of their blocks) above F (--defrag-above F). Never after the last
 *       iteration: the digest and the report see the state the iterations left.
 *  (R3) An app that keeps handles outside the heap gets each result (App.defrag.remap).
 *  (R4) An app whose results may change when objects move (a rule or a float sum in
 *       handle order) says why; the run prints it as a warning and --json reports it.
 *  (R5) Time spent defragmenting is part of the run's `seconds`, and reported on its own.
 *  (R6) With --threads > 1 each call is rt.parallelDefrag: the copy and rewrite phases run
 *       on the worker threads too (runtime/defrag-parallel.ts), with the same results as
 *       rt.defrag; --json's defrag.threads says how many threads the calls could use.
 *  (R7) With --backend webgpu each call runs on the heap's GPU copy (rt.parallelDefrag →
 *       runtime/webgpu/gpu-defrag.ts): no download of the objects' data first, the same
 *       results as rt.defrag; --json's defrag.device says where the calls ran ('webgpu' or
 *       'cpu') and defrag.transfer the bytes they moved over the bus.
 *  (R8) With --backend wasm the rewrite phase runs as WebAssembly lanes
 *       (runtime/defrag-wasm.ts), with the same results; --json's defrag.lanes says which
 *       lanes ran the copy and the rewrite of the calls that moved objects ('ts', 'wasm',
 *       or 'ts+wasm' when some calls rewrote on each).
 */
import type { App, AppDefrag } from '../apps/app.js';
import type { DefragResult, DefragStats, Runtime, SmmoClass } from '../index.js';
import { CliUsageError } from './errors.js';
import type { DefragOptions } from './flags.js';

/** What `--json` reports under `defrag`. */
export interface DefragReport {
  n: number;
  /** (R6) Threads the copy and rewrite phases could run on (the run's --threads). */
  threads: number;
  every?: number;
  above?: number;
  /** The concrete classes defragmented. */
  classes: string[];
  /** Calls of rt.defrag, CompactGpu passes, objects whose handle changed, copies, blocks given back. */
  calls: number;
  passes: number;
  objectsMoved: number;
  copies: number;
  blocksFreed: number;
  /** Milliseconds per phase, summed over the calls (runtime/defrag.ts). */
  ms: { scan: number; copy: number; rewrite: number; update: number; total: number };
  /** Free slots / slots of the defragmented classes' blocks: before the first call, after the last, and the means over the calls. */
  fragmentation: { firstBefore: number; lastAfter: number; meanBefore: number; meanAfter: number };
  /** 'exact', or why results may differ from a run without --defrag (App.defrag.results). */
  results: string;
  /** (R7) Where the copy and rewrite phases ran: 'webgpu' (on the heap's GPU copy) or 'cpu'. */
  device: 'cpu' | 'webgpu';
  /** (R7) Backend 'webgpu': bytes over the bus for the calls, summed (metadata and block headers; no object data). */
  transfer?: { downloadBytes: number; uploadBytes: number; fullUploads: number };
  /** (R8) The lanes that ran the copy and rewrite phases of the calls that moved objects (CPU); '' when none moved. */
  lanes: { copy: string; rewrite: string };
}

/** The defragmentation of one run. */
export class RunDefrag {
  private readonly report: DefragReport;
  private readonly spec: AppDefrag;
  private sumBefore = 0;
  private sumAfter = 0;

  private constructor(
    spec: AppDefrag,
    private readonly opts: DefragOptions,
    private readonly iterations: number,
  ) {
    this.spec = spec;
    this.report = {
      n: opts.n,
      threads: 1,
      ...(opts.every !== undefined ? { every: opts.every } : {}),
      ...(opts.above !== undefined ? { above: opts.above } : {}),
      classes: [],
      calls: 0,
      passes: 0,
      objectsMoved: 0,
      copies: 0,
      blocksFreed: 0,
      ms: { scan: 0, copy: 0, rewrite: 0, update: 0, total: 0 },
      fragmentation: { firstBefore: 0, lastAfter: 0, meanBefore: 0, meanAfter: 0 },
      results: spec.results,
      device: 'cpu',
      lanes: { copy: '', rewrite: '' },
    };
  }

  /** (R1) The run's defragmentation, null without --defrag; a CliUsageError for an app that refuses it. */
  static forRun(app: App, opts: DefragOptions | undefined, iterations: number, where: string): RunDefrag | null {
    if (opts === undefined) return null;
    const d = app.defrag;
    if (d === undefined) {
      throw new CliUsageError(
        `${where}: --defrag: ${app.name} does not take part in defragmentation (it does not say which of its classes may move); run it without --defrag`,
      );
    }
    if (typeof d === 'string') throw new CliUsageError(`${where}: --defrag: ${d}; run it without --defrag`);
    return new RunDefrag(d, opts, iterations);
  }

  /** (R4) A warning for the run's summary, when results may differ. */
  get warning(): string | null {
    return this.spec.results === 'exact' ? null : `--defrag: digests may differ from a run without it: ${this.spec.results}`;
  }

  /** The concrete class names the app lets move. */
  private names(rt: Runtime): string[] {
    const out = new Set<string>();
    for (const c of this.spec.classes) {
      const t = rt.table.byClass(c as SmmoClass);
      if (t === undefined) throw new Error(`${c.name} is in App.defrag.classes but not in the app's classes`);
      for (const id of t.concrete) out.add(rt.table.types[id]!.name);
    }
    return [...out];
  }

  /** Free slots / slots of the movable classes' blocks now. */
  private fragmentation(rt: Runtime): number {
    const types = rt.stats().types;
    let slots = 0;
    let objects = 0;
    for (const name of this.names(rt)) {
      const s = types[name]!;
      slots += s.blocks * s.slotsPerBlock;
      objects += s.objects;
    }
    return slots === 0 ? 0 : (slots - objects) / slots;
  }

  /** (R2) After iteration `done` (1-based, of this run): defragment when it is time. */
  async after(rt: Runtime, done: number): Promise<void> {
    if (done >= this.iterations) return;
    const { every, above } = this.opts;
    if (every !== undefined && done % every !== 0) return;
    // (R7) backend 'webgpu': objects move on the GPU copy; only --defrag-above reads the heap on the host first.
    if (rt.backend !== 'webgpu' || above !== undefined) await rt.sync();
    if (above !== undefined && !(this.fragmentation(rt) > above)) return;
    this.add(rt, await rt.parallelDefrag(this.spec.classes as readonly SmmoClass[], this.opts.n)); // (R6) rt.defrag on one thread
  }

  /** Sum one call's statistics into the report; (R3) hand the result to the app. */
  private add(rt: Runtime, r: DefragResult): void {
    this.spec.remap?.(rt, r);
    const s: DefragStats = r.stats;
    const rep = this.report;
    const before = weighted(rt, s, 'fragmentationBefore');
    const after = weighted(rt, s, 'fragmentationAfter');
    if (rep.calls === 0) rep.fragmentation.firstBefore = before;
    rep.fragmentation.lastAfter = after;
    this.sumBefore += before;
    this.sumAfter += after;
    rep.calls++;
    rep.passes += s.passes;
    rep.objectsMoved += s.objectsMoved;
    rep.copies += s.copies;
    rep.blocksFreed += s.blocksFreed;
    if (s.device === 'webgpu') rep.device = 'webgpu';
    if (s.passes > 0 && s.device === undefined) {
      rep.lanes.copy = joinLanes(rep.lanes.copy, s.lanes?.copy ?? 'ts'); // (R8)
      rep.lanes.rewrite = joinLanes(rep.lanes.rewrite, s.lanes?.rewrite ?? 'ts');
    }
    if (s.transfer !== undefined) {
      const t = (rep.transfer ??= { downloadBytes: 0, uploadBytes: 0, fullUploads: 0 });
      t.downloadBytes += s.transfer.downloadBytes;
      t.uploadBytes += s.transfer.uploadBytes;
      t.fullUploads += s.transfer.fullUploads;
    }
    for (const k of ['scan', 'copy', 'rewrite', 'update', 'total'] as const) rep.ms[k] += s.ms[k];
    for (const name of Object.keys(s.classes)) if (!rep.classes.includes(name)) rep.classes.push(name);
    rep.fragmentation.meanBefore = this.sumBefore / rep.calls;
    rep.fragmentation.meanAfter = this.sumAfter / rep.calls;
  }

  /** The report (a copy). */
  result(rt: Runtime): DefragReport {
    const rep: DefragReport = JSON.parse(JSON.stringify(this.report)) as DefragReport;
    rep.threads = rt.threads;
    if (rep.classes.length === 0) rep.classes = this.names(rt);
    return rep;
  }
}

/** (R8) `seen` ('' or lanes joined by '+') with `lanes` added. */
function joinLanes(seen: string, lanes: string): string {
  const all = new Set(seen === '' ? [] : seen.split('+'));
  all.add(lanes);
  return [...all].sort().join('+');
}

/** One call's fragmentation over its classes, weighted by their slots. */
function weighted(rt: Runtime, s: DefragStats, key: 'fragmentationBefore' | 'fragmentationAfter'): number {
  let slots = 0;
  let free = 0;
  for (const [name, c] of Object.entries(s.classes)) {
    const per = rt.table.types.find((t) => t.name === name)!.slots;
    const n = (key === 'fragmentationBefore' ? c.blocksBefore : c.blocksAfter) * per;
    slots += n;
    free += c[key] * n;
  }
  return slots === 0 ? 0 : free / slots;
}

/** One line for the human summary. */
export function formatDefrag(d: DefragReport): string {
  const f = d.fragmentation;
  const when = d.every !== undefined ? `every ${d.every} iterations` : d.above !== undefined ? `above ${d.above}` : 'every iteration';
  return (
    `n=${d.n} (${when}${d.threads > 1 ? `, ${d.threads} threads` : ''}): ${d.calls} calls, ${d.passes} passes, ${d.objectsMoved} objects moved, ${d.blocksFreed} blocks freed, ` +
    `${d.ms.total.toFixed(1)} ms (scan ${d.ms.scan.toFixed(1)}, copy ${d.ms.copy.toFixed(1)}, rewrite ${d.ms.rewrite.toFixed(1)}, ` +
    `update ${d.ms.update.toFixed(1)}); fragmentation ${pct(f.firstBefore)} → ${pct(f.lastAfter)} (mean per call ${pct(f.meanBefore)} → ${pct(f.meanAfter)})`
  );
}

const pct = (x: number): string => `${(x * 100).toFixed(1)} %`;
