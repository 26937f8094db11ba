/// <reference types="@webgpu/types" />
/**
 * GpuRunner: runs do-alls of a Runtime on the GPU through WGSL kernels, keeping the heap
 * on the GPU across consecutive GPU passes. A runtime created with backend 'webgpu' has
 * one (rt.gpu) and routes parallelDo through tryParallelDo(); it can also be used on its
 * own over a 'ts' runtime (tests, custom kernels):
 *
 *   const gpu = await GpuRunner.create(rt);           // acquires a device (device.ts)
 *   await gpu.parallelDo(Body, 'computeForce');       // WGSL kernel: runs on the GPU
 *   await gpu.parallelDo(Body, 'update', 0.02);
 *   await gpu.toHost();                               // host reads (digest, stats) after this
 *   rt.deviceDo(Body, …);                             // after host writes: gpu.hostWrote()
 *   await gpu.close();
 *
 * Pass semantics (paper §2.1, thread.ts): a do-all visits the objects that exist when it
 * starts: the block list R (block-list region of the heap) and the iteration bitmaps
 * written by ThreadContext.snapshot(). The runner takes that snapshot on the host and
 * uploads it. It stays valid for later GPU passes as long as no object is created or
 * deleted: WGSL kernels that do not allocate (`allocates` unset) keep it, so consecutive
 * GPU passes reuse it without any transfer. The snapshot is taken again when the host
 * changed the heap (hostWrote(), a TypeScript pass: on the host) or an allocating kernel
 * ran (on the GPU, gpu-snapshot.ts, unless option snapshot is 'host'; kernels that
 * declare `gpuLists` then run without any read-back, dispatched indirectly — or, with
 * Dawn's validation on, directly with workgroups for every block of the heap: runKernel;
 * split-reduce kernels directly over an upper bound of blocks, their SPLIT chosen from the
 * block count of a snapshot SPLIT_LAG generations back: runSplitOnGpuLists, S1–S2).
 *
 * Allocating kernels get a status buffer (binding 4) that is read at every download and
 * list read-back (GpuHeapError); kernels that declare `ranks` get a rank table
 * (binding 3, ranks.ts).
 *
 * Coherence (gpu-heap.ts): before a GPU pass the heap is uploaded if the host is newer;
 * before host access (toHost(), a TypeScript fallback pass) it is downloaded if the GPU
 * is newer. A method without a WGSL kernel falls back to TypeScript after a download
 * (stats.fallbackPasses, stats.fallbacks by method).
 *
 * Submission: dispatches go into one open compute pass; it is submitted every
 * `passesPerSubmit` do-alls and whenever the host needs data. At most MAX_IN_FLIGHT
 * submissions are outstanding (parallelDo awaits the oldest), so the queue is bounded.
 */
import { UsageError } from '../errors.js';
import type { Heap } from '../heap.js';
import type { TypeTable } from '../layout.js';
import type { ThreadContext } from '../thread.js';

/**
 * What the runner needs of its runtime (Runtime implements it): the heap, the classes,
 * the calling thread's context, and a CPU do-all for methods without a WGSL kernel.
 */
export interface GpuHost {
  readonly heap: Heap;
  readonly table: TypeTable;
  readonly main: Pick<ThreadContext, 'occupancy' | 'snapshot'>;
  doAllOnCallingThread(cls: SmmoClass, method: string, args: readonly unknown[]): void;
}
import { SmmoObject, type SmmoClass } from '../schema.js';
import { SLOT_BITS } from '../layout.js';
import type { TypeLayout } from '../layout.js';
import { BufferUsage, GpuContext } from './device.js';
import type { GpuRunnerStats, WebGpuOptions } from './options.js';
import { GpuError, statusError } from './errors.js';
import { GpuRanks, rankHandles } from './ranks.js';
import { GpuSnapshot } from './gpu-snapshot.js';
import { GpuHeap } from './gpu-heap.js';
import { declaredMethods, kernelFor, type WgslKernel } from '../kernel-spec.js';
import { gpuDeclaredMethods, gpuKernelFor, type WgslSpec } from '../kernel-spec.js';
import { kernelClassMismatch, kernelKey, kernelMismatch, kernelValues } from './wgsl-kernels.js';
import { arrayOffsets, kernelArrayMismatch } from './wgsl-kernels.js'; // array fields (WgslKernel.arrays)
import { GPU_BASE_BYTES, loadWgsl, overridesOf, wgslPrelude } from './wgsl.js';
import { lowerForBackend } from '../compiler/index.js';
import { doubleSingle, emitWgsl, PARAM_WORDS, wgslArgKind, WgslUnsupported, type WgslArg, type WgslMethod } from '../compiler/emit-wgsl.js';

const MAX_IN_FLIGHT = 3;
/** SPLIT = 0 (auto): aim at this many workgroups per dispatch, with at most AUTO_SPLIT_MAX parts (measured on an H100: docs/webgpu.md). */
export const AUTO_SPLIT_GROUPS = 4096;
export const AUTO_SPLIT_MAX = 32;
/** SPLIT = 0 on the GPU's lists: the block count of the snapshot this many generations back decides (runSplitOnGpuLists, tunable SPLIT_LAG). */
export const DEFAULT_SPLIT_LAG = 8;
const MAX_SPLIT_LAG = 64;

/**
 * Automatic SPLIT for a split-reduce kernel over `blocks` listed blocks at workgroup size
 * `wg`: enough parts that the dispatch has about `groups` workgroups, at most `max`;
 * `pow2`: rounded down to a power of two (fewer distinct values, so fewer pipelines to
 * compile as the count changes).
 */
export function autoSplit(blocks: number, wg: number, groups: number, max: number, pow2: boolean): number {
  const have = Math.max(1, Math.ceil((blocks * 32) / wg));
  const s = Math.max(1, Math.min(max, Math.floor(groups / have)));
  return pow2 ? 2 ** Math.floor(Math.log2(s)) : s;
}

/** A read of the lists' block counts per type id, for the split-reduce kernels some generations later (runSplitOnGpuLists). */
interface CountRead {
  /** Blocks per type id, once known. */
  counts: Int32Array | null;
  /** The staging buffer while the read is under way. */
  staging: GPUBuffer | null;
  /** Settles when counts (or error) is set; null until the copy is submitted. */
  done: Promise<void> | null;
  error: unknown;
}
/** Compiled pipelines per device, keyed by source + entry + constants. */
const PIPELINES = new WeakMap<GpuContext, Map<string, Promise<GPUComputePipeline>>>();
const PARAMS_BYTES = 4 * PARAM_WORDS;
const MAX_PARAM_CACHE = 512;

/** WebGpuOptions with the internal `gpu` option typed (the public declaration has no WebGPU types). */
export interface GpuRunnerOptions extends WebGpuOptions {
  /** Use this acquired context (the runner will not close it); default: acquire one. */
  gpu?: GpuContext;
}

export type { GpuRunnerStats } from './options.js';

interface Resolved {
  kernel: WgslKernel;
  type: TypeLayout;
  spec: WgslSpec;
  /** 'Class.method' */
  label: string;
}

interface ParamEntry {
  buffer: GPUBuffer;
  bindGroups: Map<string, GPUBindGroup>;
}

export class GpuRunner {
  readonly gheap: GpuHeap;
  readonly prelude: string;
  private readonly ownsGpu: boolean;
  private readonly tunables: Record<string, Record<string, number>>;
  private readonly passesPerSubmit: number;
  /** pipeline() by its arguments (file, libraries, entry, constants). */
  private readonly pipelineMemo = new Map<string, Promise<GPUComputePipeline>>();
  /** A number per pipeline, for bindGroup()'s cache key. */
  private readonly pipelineIds = new WeakMap<GPUComputePipeline, number>();
  private pipelineCount = 0;
  private readonly params = new Map<string, ParamEntry>();
  private encoder: GPUCommandEncoder | null = null;
  private pass: GPUComputePassEncoder | null = null;
  private encodedPasses = 0;
  private readonly inFlight: Promise<unknown>[] = [];
  /** [start, count] per type id of the snapshot in the heap's block-list region; null: take one. */
  private lists: Int32Array | null = null;
  private scratch: GPUBuffer;
  private scratchGeneration = 0;
  private closed = false;
  private readonly counters = {
    gpuPasses: 0,
    fallbackPasses: 0,
    dispatches: 0,
    submits: 0,
    snapshots: 0,
    gpuSnapshots: 0,
    listReadbacks: 0,
  };
  private readonly fallbacks: Record<string, { passes: number; reason: string }> = {};
  /** options.generate; generated kernels (per concrete type, method and argument kinds) and their sources by file name. */
  private readonly generate: boolean | 'always';
  /** options.floats: how generated kernels compute non-integers (emit-wgsl.ts W2, W10). */
  readonly floats: 'double-single' | 'f32';
  private readonly genKernels = new Map<string, Resolved | { reason: string }>();
  private readonly genSources = new Map<string, string>();
  private readonly generatedPasses: Record<string, number> = {};
  private readonly tunablesUsed: Record<string, Record<string, number>> = {};
  /** Rank tables by type id (kernels that declare `ranks`: ranks.ts). */
  private readonly ranked = new Map<number, GpuRanks>();
  /** Host snapshots taken so far (a rank table made at an older one is remade at the next host snapshot). */
  private hostSnapshots = 0;
  private readonly ranksMadeAt = new Map<number, number>();
  /** Status words [STATUS_* bits, failed invocations] of allocating kernels (binding 4), and whether one ran since the last check. */
  private statusBuffer: GPUBuffer | null = null;
  private statusUnchecked = false;
  /** options.snapshot; the GPU snapshot's buffers (gpu-snapshot.ts), made on first use. */
  private readonly snapshotWhere: 'gpu' | 'gpu-readback' | 'host';
  private snapshotter: GpuSnapshot | null = null;
  /** The lists buffer of the GPU snapshot holds the current pass snapshot's lists (G4). */
  private gpuListsValid = false;
  /** Pass snapshots taken (host or GPU): the generation of the current lists (runSplitOnGpuLists). */
  private generation = 0;
  /** Block counts per type id by generation, where known: host snapshots, list read-backs, count reads. */
  private readonly blockCounts = new Map<number, CountRead>();
  /** Count reads encoded but not yet submitted (their mapAsync starts right after the submit). */
  private readonly unsubmittedReads: CountRead[] = [];
  /** The latest generation during which objects may have been created (kernel, host write, defragmentation); -1: none. */
  private grewAt = -1;
  /** Submit at the end of the current pass (a count read was encoded: its mapAsync can start). */
  private submitAfterPass = false;
  /** Count reads issued, and those awaited before they had arrived (a stall: SPLIT_LAG too small for the queue). */
  private readonly countReadStats = { issued: 0, waited: 0 };

  private constructor(
    readonly rt: GpuHost,
    readonly gpu: GpuContext,
    options: GpuRunnerOptions,
  ) {
    this.ownsGpu = options.gpu === undefined;
    this.tunables = options.tunables ?? {};
    this.passesPerSubmit = Math.max(1, options.passesPerSubmit ?? 32);
    if (options.snapshot !== undefined && !['gpu', 'gpu-readback', 'host'].includes(options.snapshot))
      throw new UsageError(`webgpu.snapshot must be 'gpu', 'gpu-readback' or 'host', got ${String(options.snapshot)}`);
    this.snapshotWhere = options.snapshot ?? 'gpu';
    if (options.generate !== undefined && typeof options.generate !== 'boolean' && options.generate !== 'always')
      throw new UsageError(`webgpu.generate must be true, false or 'always', got ${String(options.generate)}`);
    this.generate = options.generate ?? true;
    if (options.floats !== undefined && options.floats !== 'double-single' && options.floats !== 'f32')
      throw new UsageError(`webgpu.floats must be 'double-single' or 'f32', got ${String(options.floats)}`);
    this.floats = options.floats ?? 'double-single';
    this.gheap = new GpuHeap(gpu, rt.heap);
    this.prelude = wgslPrelude(rt.heap);
    this.scratch = gpu.device.createBuffer({ size: 256, usage: BufferUsage.STORAGE, label: 'smmo scratch' });
  }

  /** A runner for `rt` on a device acquired with `options` (or options.gpu). */
  static async create(rt: GpuHost, options: GpuRunnerOptions = {}): Promise<GpuRunner> {
    if (options.gpu !== undefined && !(options.gpu instanceof GpuContext)) {
      throw new UsageError('webgpu.gpu must be a GpuContext (runtime/webgpu/device.ts acquireGpu()), or left out');
    }
    const gpu = options.gpu ?? (await GpuContext.acquire(options));
    try {
      return new GpuRunner(rt, gpu, options);
    } catch (e) {
      if (options.gpu === undefined) await gpu.close();
      throw e;
    }
  }

  get stats(): GpuRunnerStats {
    const t = this.gheap.stats;
    return {
      adapter: { ...this.gpu.info },
      ...this.counters,
      fallbacks: structuredClone(this.fallbacks),
      generated: { ...this.generatedPasses },
      floats: this.floats,
      tunables: structuredClone(this.tunablesUsed),
      uploads: t.uploads,
      uploadBytes: t.uploadBytes,
      downloads: t.downloads,
      downloadBytes: t.downloadBytes,
    };
  }

  /** Whether the GPU copy holds changes the host heap lacks (call toHost() before reading the heap). */
  get gpuNewer(): boolean {
    return this.gheap.gpuNewer;
  }

  // ---------------------------------------------------------------- kernels

  /** The WGSL kernel that would run `cls.method`, or why none can. */
  resolve(cls: SmmoClass, method: string): Resolved | { reason: string } {
    const t = this.rt.table.byClass(cls);
    if (!t)
      throw new UsageError(`parallelDo: class ${(cls as { name?: string })?.name ?? String(cls)} is not registered with this runtime`);
    if (t.abstract || t.concrete.length !== 1) {
      return {
        reason: t.abstract
          ? `${t.name} is abstract (the GPU runs one concrete class per pass)`
          : `${t.name} has subclasses (the GPU runs one concrete class per pass)`,
      };
    }
    // [KERNELS] first, then the WebGPU-only declarations (kernel-spec.ts GPU_KERNELS).
    const spec = kernelFor(t, method) ?? gpuKernelFor(t, method);
    if (spec === null) return { reason: `${t.name} declares no kernel for ${method} (static [KERNELS])` };
    const kernel = spec.wgsl;
    if (!kernel) return { reason: `the kernel declaration of ${t.name}.${method} has no WGSL kernel` };
    const why =
      kernelMismatch(kernel, t, spec) ?? kernelClassMismatch(kernel, this.rt.table) ?? kernelArrayMismatch(kernel, t, this.rt.table);
    return why === null
      ? { kernel, type: t, spec, label: kernelKey(t.name, method) }
      : { reason: `WGSL kernel ${kernel.file} does not fit: ${why}` };
  }

  hasKernel(cls: SmmoClass, method: string): boolean {
    return 'kernel' in this.resolve(cls, method);
  }

  /**
   * Run `method` on every object of `cls` that exists now: on the GPU if it has a WGSL
   * kernel, else in TypeScript on the calling thread (rt.doAllOnCallingThread) after bringing the heap
   * to the host. Returns where it ran.
   */
  async parallelDo(cls: SmmoClass, method: string, ...args: unknown[]): Promise<'gpu' | 'ts'> {
    if (await this.tryParallelDo(cls, method, args)) return 'gpu';
    this.rt.doAllOnCallingThread(cls, method, args);
    return 'ts';
  }

  /**
   * The GPU half of a do-all: run `method` on the GPU and return true, or, when it has no
   * usable WGSL kernel, bring the heap to the host, count the fallback and return false;
   * the caller then runs the pass on the CPU (Runtime.parallelDo with backend 'webgpu'
   * does, on its worker threads if it has them).
   */
  async tryParallelDo(cls: SmmoClass, method: string, args: readonly unknown[]): Promise<boolean> {
    this.live('parallelDo');
    const key = `${(cls as { name: string }).name}.${method}`;
    // Why the generated kernel did not run, once tried.
    let notGenerated: string | undefined;
    // 'always': the generated kernel even where a hand-written one is declared (to compare them).
    if (this.generate === 'always') {
      const why = await this.tryGenerated(cls, method, args, key);
      if (why === null) return true;
      notGenerated = why;
    }
    const r = this.resolve(cls, method);
    if ('kernel' in r) {
      await this.runKernel(r, args);
      return true;
    }
    if (this.generate === true && !this.declaresWgsl(cls, method)) {
      const why = await this.tryGenerated(cls, method, args, key);
      if (why === null) return true;
      notGenerated = why;
    }
    const reason = notGenerated === undefined ? r.reason : `${r.reason}; generated WGSL: ${notGenerated}`;
    await this.toHost();
    this.hostWrote();
    const f = (this.fallbacks[key] ??= { passes: 0, reason });
    f.passes++;
    this.counters.fallbackPasses++;
    return false;
  }

  /** Run the pass as generated kernels (null), or say why they cannot run it. */
  private async tryGenerated(cls: SmmoClass, method: string, args: readonly unknown[], key: string): Promise<string | null> {
    const g = this.generatedFor(cls, method, args);
    if (!Array.isArray(g)) return g.reason;
    const failed = await this.compileGenerated(g);
    if (failed !== null) return failed;
    await this.runGenerated(g, args);
    this.generatedPasses[key] = (this.generatedPasses[key] ?? 0) + 1;
    return null;
  }

  /** Compile the pipelines of `cls.method` now (so that a timed run does not include compilation); false if it has no kernel. */
  async prepare(cls: SmmoClass, method: string): Promise<boolean> {
    const r = this.resolve(cls, method);
    if (!('kernel' in r)) return false;
    const consts = this.constantsFor(r, this.rt.main.occupancy(r.type.id).blocks);
    await this.pipeline(r.kernel.file, r.kernel.libraries ?? [], 'main', consts);
    // An allocating kernel is followed by a GPU snapshot (gpu-snapshot.ts): compile it too.
    if (r.kernel.allocates && this.snapshotWhere !== 'host') await this.snap().prepare();
    if (r.kernel.dispatch === 'split-reduce' && (consts['SPLIT'] ?? 1) > 1)
      await this.pipeline(r.kernel.file, r.kernel.libraries ?? [], 'reduce', consts);
    // Automatic SPLIT in powers of two: every value it can take as the count changes, so that none compiles mid-run.
    const auto = r.kernel.dispatch === 'split-reduce' && this.tunable(r, 'SPLIT', 0) === 0 && consts['SPLIT_POW2'] === 1;
    if (auto && !this.softwareSplitOne(r.label)) {
      const all: Promise<GPUComputePipeline>[] = [];
      for (let split = 1; split <= (consts['SPLIT_MAX'] ?? AUTO_SPLIT_MAX); split *= 2) {
        for (const entry of split > 1 ? ['main', 'reduce'] : ['main'])
          all.push(this.pipeline(r.kernel.file, r.kernel.libraries ?? [], entry, { ...consts, SPLIT: split }));
      }
      await Promise.all(all);
    }
    return true;
  }

  /** Compile the pipelines of every (concrete class, method) of the runtime that has a usable WGSL kernel; returns their names. */
  async prepareAll(): Promise<string[]> {
    const done: string[] = [];
    for (const id of this.rt.table.concreteIds) {
      const t = this.rt.table.types[id]!;
      for (const m of new Set([...declaredMethods(t), ...gpuDeclaredMethods(t)]))
        if (await this.prepare(t.cls, m)) done.push(kernelKey(t.name, m));
    }
    return done;
  }

  private async runKernel(r: Resolved, args: readonly unknown[]): Promise<void> {
    const { kernel: k, label } = r;
    if (args.length !== k.args.length + (k.unusedArgs ?? 0)) {
      throw new UsageError(
        `parallelDo(${label}): the WGSL kernel takes ${k.args.length} argument(s) (${k.args.join(', ')})` +
          `${k.unusedArgs ? ` and ${k.unusedArgs} it does not read` : ''}, got ${args.length}`,
      );
    }
    await this.ensureSnapshot(k.gpuLists === true);
    if (k.ranks !== undefined) await this.ensureRanks(this.typeNamed(k.ranks)!);
    if (this.lists === null && k.dispatch === 'split-reduce') return this.runSplitOnGpuLists(r, args);
    await this.dispatchPass(r, args);
    return this.afterKernel(k);
  }

  /** Encode the dispatch of a per-object kernel over the current pass snapshot (runKernel; runGenerated, once per concrete type). */
  private async dispatchPass(r: Resolved, args: readonly unknown[]): Promise<void> {
    const { kernel: k, type: t, label } = r;
    const lists = this.lists;
    if (lists === null) {
      // The lists are on the GPU only (gpu-snapshot.ts G4): an indirect dispatch sized there.
      const consts = this.constantsFor(r, 0);
      this.tunablesUsed[label] = Object.fromEntries(Object.keys(k.tunables).map((n) => [n, consts[n]!]));
      const main = await this.pipeline(k.file, k.libraries ?? [], 'main', consts);
      const entry = this.paramEntry(r, 0, 0, args);
      if (this.gpu.info.validation && !this.gpu.info.software) {
        // With Dawn's validation on, an indirect dispatch costs about 0.4 ms of CPU (Dawn
        // validates its arguments with a dispatch of its own; measured on the H100 host:
        // game-of-life tm.pgm × 300 1.14–1.25 s indirect, 0.59–0.67 s this way). So
        // dispatch directly, enough workgroups for every block of the heap: the kernel
        // reads its list's length from the GPU (o_object) and the rest return at once.
        // Not on a software adapter (SwiftShader): there the empty workgroups cost more
        // than the validation (traffic, 100 intersections, a 20 113-block heap: ~110 ms
        // per pass against ~10 ms indirect, 2-core dev VM).
        // Fewer when an arrived count read bounds the list (S2: collision's frees-only steps; the
        // dispatch size does not change what the kernel does, so it may depend on what has arrived).
        const blocks = this.arrivedBound(t.id) ?? this.rt.heap.numBlocks;
        this.dispatch(main, this.bindGroup(entry, main, 'main', false, k), Math.ceil((blocks * 32) / consts['WG']!), 1);
      } else {
        const where = await this.snap().encodeArgs(t.id, consts['WG']!, this.gpu.info.maxComputeWorkgroupsPerDimension);
        this.dispatchIndirect(main, this.bindGroup(entry, main, 'main', false, k), where.buffer, where.offset);
      }
      if (k.allocates || k.status) this.noteStatus(label);
      return;
    }
    const start = lists[2 * t.id]!;
    const count = lists[2 * t.id + 1]!;
    const consts = this.constantsFor(r, count);
    this.tunablesUsed[label] = Object.fromEntries(Object.keys(k.tunables).map((n) => [n, consts[n]!]));
    const main = await this.pipeline(k.file, k.libraries ?? [], 'main', consts);
    const reduce =
      k.dispatch === 'split-reduce' && (consts['SPLIT'] ?? 1) > 1 ? await this.pipeline(k.file, k.libraries ?? [], 'reduce', consts) : null;
    if (count > 0) {
      const wg = consts['WG']!;
      const invocations = count * 32;
      const groups = Math.ceil(invocations / wg);
      const split = k.dispatch === 'split-reduce' ? (consts['SPLIT'] ?? 1) : 1;
      if (split > 1) this.ensureScratch(split * invocations * 8);
      const entry = this.paramEntry(r, start, count, args);
      this.dispatch(main, this.bindGroup(entry, main, 'main', k.dispatch === 'split-reduce', k), groups, split);
      if (k.allocates || k.status) this.noteStatus(label);
      if (reduce) this.dispatch(reduce, this.bindGroup(entry, reduce, 'reduce', true, listsOnly(k)), groups, 1);
    }
  }

  /** Whether some concrete class of `cls` declares a kernel for `method` (a hand-written one is never replaced by a generated one). */
  private declaresWgsl(cls: SmmoClass, method: string): boolean {
    const t = this.rt.table.byClass(cls)!;
    return t.concrete.some((id) => {
      const ct = this.rt.table.types[id]!;
      return (kernelFor(ct, method) ?? gpuKernelFor(ct, method))?.wgsl !== undefined;
    });
  }

  /**
   * The generated kernels of a pass of `method` over `cls`: one per concrete class
   * (runtime/compiler/emit-wgsl.ts), for the argument kinds of this call; or why not.
   * Cached per (type, method, argument kinds).
   */
  private generatedFor(cls: SmmoClass, method: string, args: readonly unknown[]): Resolved[] | { reason: string } {
    const kinds: WgslArg[] = [];
    const classes: (TypeLayout | null)[] = [];
    for (const a of args) {
      if (a instanceof SmmoObject) {
        // An smmo object: its handle, typed by its block's class (the form types the argument).
        const at = this.rt.table.types[this.rt.heap.blockType((a as unknown as { __h: number }).__h >>> SLOT_BITS)];
        if (at === undefined || at.abstract)
          return { reason: `argument ${kinds.length} is an object of no concrete class of this runtime` };
        kinds.push('h');
        classes.push(at);
        continue;
      }
      const k = wgslArgKind(a);
      if (typeof k !== 'string') return k;
      kinds.push(k);
      classes.push(null);
    }
    const t = this.rt.table.byClass(cls)!;
    const out: Resolved[] = [];
    const sig = kinds.map((k, i) => (k === 'h' ? `${classes[i]!.name}` : k)).join(',');
    for (const id of t.concrete) {
      const ct = this.rt.table.types[id]!;
      const key = `${id}.${method}(${sig})`;
      let g = this.genKernels.get(key);
      if (g === undefined) {
        g = this.generateKernel(ct, method, kinds, classes, sig);
        this.genKernels.set(key, g);
      }
      if (!('kernel' in g)) return { reason: `${ct.name}.${method}: ${g.reason}` };
      out.push(g);
    }
    return out;
  }

  private generateKernel(
    t: TypeLayout,
    method: string,
    kinds: readonly WgslArg[],
    classes: readonly (TypeLayout | null)[],
    sig: string,
  ): Resolved | { reason: string } {
    const ir = lowerForBackend(this.rt.table, t, method, classes);
    if ('reason' in ir) return { reason: `it does not compile (${ir.reason})` };
    let m: WgslMethod;
    try {
      m = emitWgsl(
        ir,
        kinds,
        { classOf: (v) => (typeof v === 'function' ? this.rt.table.byClass(v as SmmoClass) : undefined) },
        this.floats,
      );
    } catch (e) {
      if (e instanceof WgslUnsupported) return { reason: e.message };
      throw e;
    }
    const { source, allocates, frees, reports, ranks } = m;
    if (ranks !== null) {
      // runtime/webgpu/ranks.ts R2: a ranked class is one concrete class whose objects no kernel creates or deletes.
      if (ranks.abstract || ranks.concrete.length !== 1)
        return { reason: `it reads the rank table of ${ranks.name}, which has subclasses` };
      if (m.creates.includes(ranks)) return { reason: `it creates ${ranks.name} objects, whose rank table it reads` };
    }
    const file = `generated:${t.name}.${method}(${sig})`;
    this.genSources.set(file, source);
    const kernel: WgslKernel = {
      file,
      libraries: ['objects.wgsl', 'alloc.wgsl'],
      fields: {},
      args: m.args,
      tunables: { WG: 64 },
      dispatch: 'per-object',
      gpuLists: true,
      ...(reports ? { status: true } : {}),
      ...(ranks !== null ? { ranks: ranks.name } : {}),
      ...(allocates || frees ? { allocates: true } : {}),
      ...(frees && !allocates ? { freesOnly: true } : {}),
    };
    return { kernel, type: t, spec: { params: {} } as unknown as WgslSpec, label: kernelKey(t.name, method) };
  }

  /**
   * Compile the pipelines of a pass's generated kernels before any of them is dispatched;
   * a kernel the shader compiler rejects is remembered as not generated (its reason: the
   * compiler's message), so the pass — and later ones — run in TypeScript instead. That is
   * the emitter's fault, never the user's: the message says so.
   */
  private async compileGenerated(rs: readonly Resolved[]): Promise<string | null> {
    for (const r of rs) {
      try {
        await this.pipeline(r.kernel.file, r.kernel.libraries ?? [], 'main', this.constantsFor(r, 0));
      } catch (e) {
        if (!(e instanceof GpuError)) throw e;
        const reason = `the generated WGSL of ${r.label} does not compile (a fault of smmo's WGSL emitter; please report it): ${e.message}`;
        for (const [key, g] of this.genKernels) if ('kernel' in g && g.kernel.file === r.kernel.file) this.genKernels.set(key, { reason });
        return reason;
      }
    }
    return null;
  }

  /**
   * A pass of generated kernels: one dispatch per concrete class, all over the snapshot of
   * the pass's start (what a do-all visits: paper §2.1), then the lists are stale if any
   * of them created or deleted objects.
   */
  private async runGenerated(rs: readonly Resolved[], args: readonly unknown[]): Promise<void> {
    const values = args.map((a) => (a instanceof SmmoObject ? (a as unknown as { __h: number }).__h : a));
    await this.ensureSnapshot(true);
    for (const r of rs) if (r.kernel.ranks !== undefined) await this.ensureRanks(this.typeNamed(r.kernel.ranks)!);
    for (const r of rs) await this.dispatchPass(r, values);
    const allocates = rs.some((r) => r.kernel.allocates);
    const freesOnly = rs.every((r) => !r.kernel.allocates || r.kernel.freesOnly);
    return this.afterKernel({ ...rs[0]!.kernel, allocates, freesOnly: allocates && freesOnly });
  }

  /**
   * A split-reduce kernel (gpuLists) right after a GPU snapshot whose lists stay on the
   * GPU (gpu-snapshot.ts G4, G5): no read-back. The kernel reads its list's start and count
   * from binding 5 in `main` and `reduce`; the host needs two numbers it does not have:
   *  - SPLIT (automatic when the tunable is 0): from the class's block count of the
   *    snapshot SPLIT_LAG generations back (splitCountsFor), a count read started then
   *    (mapAsync) and normally arrived long since: no stall. A fixed lag, not "whatever has
   *    arrived", so that the choice — and with it computeForce's f32 sums — does not depend
   *    on timing (S1).
   *  - the dispatch: workgroups for an upper bound of the list's blocks (invocations past
   *    the list return at once, as the direct dispatch of per-object kernels): that older
   *    count when no object can have been created since (S2), else every block of the heap.
   *    Direct, validation on or off: the snapshot's `args` writes z = 1, and these kernels
   *    need z = SPLIT. The scratch buffer (partials) is sized by the same bound.
   */
  private async runSplitOnGpuLists(r: Resolved, args: readonly unknown[]): Promise<void> {
    const { kernel: k, label } = r;
    const { blocks, bound } = await this.splitCountsFor(r);
    const consts = this.constantsFor(r, blocks);
    this.tunablesUsed[label] = Object.fromEntries(Object.keys(k.tunables).map((n) => [n, consts[n]!]));
    const split = consts['SPLIT'] ?? 1;
    const main = await this.pipeline(k.file, k.libraries ?? [], 'main', consts);
    const reduce = split > 1 ? await this.pipeline(k.file, k.libraries ?? [], 'reduce', consts) : null;
    if (bound > 0) {
      const invocations = bound * 32;
      const groups = Math.ceil(invocations / consts['WG']!);
      if (split > 1) this.ensureScratch(split * invocations * 8);
      const entry = this.paramEntry(r, 0, 0, args);
      this.dispatch(main, this.bindGroup(entry, main, 'main', true, k), groups, split);
      if (reduce) this.dispatch(reduce, this.bindGroup(entry, reduce, 'reduce', true, listsOnly(k)), groups, 1);
    }
    return this.afterKernel(k);
  }

  /**
   * The block count that decides SPLIT for kernel r at the current generation g, and an
   * upper bound of its list's length now (runSplitOnGpuLists):
   *  (S1) the counts of generation h = the newest generation ≤ g − SPLIT_LAG with known
   *       counts, else the oldest known (the first generations of a run: its host
   *       snapshot). Which generations have counts depends only on the sequence of passes
   *       (every host snapshot; every GPU snapshot a split-reduce kernel ran after), never
   *       on when a read arrived: h, and so SPLIT, is the same in every run of a program.
   *  (S2) that count bounds the list now if no object was created since snapshot h
   *       (grewAt < h: only kernels that declare `freesOnly` ran among the allocating ones,
   *       no host write, no defragmentation); else the heap's block count does.
   */
  private async splitCountsFor(r: Resolved): Promise<{ blocks: number; bound: number }> {
    const lag = this.splitLag(r);
    const g = this.generation;
    if (!this.blockCounts.has(g)) this.readCountsLater();
    for (const gen of [...this.blockCounts.keys()]) if (gen < g - MAX_SPLIT_LAG) this.blockCounts.delete(gen);
    let h = -1;
    let oldest = g;
    for (const gen of this.blockCounts.keys()) {
      if (gen <= g - lag && gen > h) h = gen;
      oldest = Math.min(oldest, gen);
    }
    if (h < 0) h = oldest;
    const blocks = (await this.countsAt(h))[r.type.id]!;
    return { blocks, bound: this.grewAt < h ? blocks : this.rt.heap.numBlocks };
  }

  /**
   * An upper bound of type `id`'s list now from counts already on the host: the newest
   * generation h with known counts and no object created since (grewAt < h, S2); null if
   * none. For dispatch sizes only (per-object kernels on the GPU's lists, validation on).
   */
  private arrivedBound(id: number): number | null {
    let best = -1;
    let bound: number | null = null;
    for (const [gen, e] of this.blockCounts) {
      if (e.counts !== null && gen > this.grewAt && gen > best) {
        best = gen;
        bound = e.counts[id]!;
      }
    }
    return bound;
  }

  /** A tunable of kernel r: the options', else the declaration's, else `fallback`. */
  private tunable(r: Resolved, name: string, fallback: number): number {
    return this.tunables[r.label]?.[name] ?? r.kernel.tunables[name] ?? fallback;
  }

  /** Tunable SPLIT_LAG of kernel r (S1), checked. */
  private splitLag(r: Resolved): number {
    const lag = this.tunable(r, 'SPLIT_LAG', DEFAULT_SPLIT_LAG);
    if (!Number.isInteger(lag) || lag < 0 || lag > MAX_SPLIT_LAG)
      throw new UsageError(`${r.label}: SPLIT_LAG=${lag} must be an integer in 0…${MAX_SPLIT_LAG}`);
    return lag;
  }

  /** Whether automatic SPLIT stays 1 for kernel `label`: a software adapter, unless the options set SPLIT_GROUPS (tests). */
  private softwareSplitOne(label: string): boolean {
    return this.gpu.info.software && this.tunables[label]?.['SPLIT_GROUPS'] === undefined;
  }

  /** Copy the current lists' counts (the snapshot's lists buffer) to the host, mapped after the next submit (G5). */
  private readCountsLater(): void {
    const bytes = 16 * this.rt.table.types.length;
    const staging = this.gpu.device.createBuffer({
      size: bytes,
      usage: BufferUsage.MAP_READ | BufferUsage.COPY_DST,
      label: 'smmo list counts',
    });
    this.copy(this.snap().meta, 0, staging, 0, bytes);
    const e: CountRead = { counts: null, staging, done: null, error: null };
    this.blockCounts.set(this.generation, e);
    this.unsubmittedReads.push(e);
    this.countReadStats.issued++;
    this.submitAfterPass = true;
  }

  /** Start the mapping of the count reads just submitted. */
  private mapCountReads(): void {
    const n = this.rt.table.types.length;
    for (const e of this.unsubmittedReads.splice(0)) {
      const staging = e.staging!;
      e.done = staging
        .mapAsync(0x1)
        .then(
          () => {
            const words = new Uint32Array(staging.getMappedRange().slice(0));
            staging.unmap();
            e.counts = countsOfMeta(words, n);
          },
          (err: unknown) => void (e.error = err),
        )
        .finally(() => {
          staging.destroy();
          e.staging = null;
        });
    }
  }

  /** The block counts of generation `gen` (known there: splitCountsFor), waiting for their read if it has not arrived. */
  private async countsAt(gen: number): Promise<Int32Array> {
    const e = this.blockCounts.get(gen)!;
    if (e.counts === null) {
      if (e.done === null) this.submitNow();
      this.countReadStats.waited++;
      await e.done;
      if (e.counts === null) throw new GpuError(`reading the pass lists' block counts back failed: ${String(e.error)}`, { cause: e.error });
    }
    return e.counts;
  }

  /** Count reads issued and awaited before they had arrived (tests; docs/webgpu.md). */
  get countReads(): { issued: number; waited: number } {
    return { ...this.countReadStats };
  }

  /** Record the block counts of the current generation from lists the host has ([start, count] per type id). */
  private knownCounts(lists: Int32Array): void {
    if (this.blockCounts.get(this.generation)?.counts != null) return;
    const counts = new Int32Array(lists.length / 2);
    for (let t = 0; t < counts.length; t++) counts[t] = lists[2 * t + 1]!;
    this.blockCounts.set(this.generation, { counts, staging: null, done: null, error: null });
  }

  private async afterKernel(k: WgslKernel): Promise<void> {
    this.gheap.gpuNewer = true;
    if (k.allocates) {
      this.lists = null;
      this.gpuListsValid = false;
      if (!k.freesOnly) this.grewAt = this.generation;
    }
    this.counters.gpuPasses++;
    if (++this.encodedPasses >= this.passesPerSubmit || this.submitAfterPass) await this.submit();
  }

  /**
   * Override constants of kernel k for type t over `blocks` listed blocks: tunables
   * (defaults, then options) and field offsets. SPLIT = 0 means automatic: enough parts
   * that the dispatch has about AUTO_SPLIT_GROUPS workgroups (few bodies leave most of a
   * large GPU idle otherwise), at most AUTO_SPLIT_MAX.
   */
  private constantsFor(r: Resolved, blocks: number): Record<string, number> {
    const { kernel: k, type: t, spec, label } = r;
    const consts: Record<string, number> = { ...k.tunables, ...(this.tunables[label] ?? {}), ...kernelValues(k, spec) };
    for (const name of Object.keys(k.fields)) consts[`F_${name}`] = t.fields.find((f) => f.name === name)!.offsets[0]!;
    for (const [name, c] of Object.entries(k.classFields ?? {}))
      consts[`F_${name}`] = this.typeNamed(c.class)!.fields.find((f) => f.name === c.field)!.offsets[0]!;
    for (const [name, cls] of Object.entries(k.typeIds ?? {})) consts[name] = this.typeNamed(cls)!.id;
    Object.assign(consts, arrayOffsets(k, t, this.rt.table)); // array fields (WgslKernel.arrays)
    const wg = consts['WG'];
    if (wg === undefined || !Number.isInteger(wg) || wg < 1 || wg > this.gpu.info.maxComputeInvocationsPerWorkgroup) {
      throw new UsageError(`${label}: WG=${wg} must be an integer in 1…${this.gpu.info.maxComputeInvocationsPerWorkgroup}`);
    }
    if (k.dispatch === 'split-reduce') {
      // SPLIT_GROUPS / SPLIT_MAX / SPLIT_POW2: autoSplit's; set in the options, SPLIT_GROUPS applies on a software adapter too (tests).
      const groupsAim = consts['SPLIT_GROUPS'] ?? AUTO_SPLIT_GROUPS;
      const maxSplit = consts['SPLIT_MAX'] ?? AUTO_SPLIT_MAX;
      const pow2 = consts['SPLIT_POW2'] ?? 0;
      if (!Number.isInteger(groupsAim) || groupsAim < 1)
        throw new UsageError(`${label}: SPLIT_GROUPS=${groupsAim} must be a positive integer`);
      if (!Number.isInteger(maxSplit) || maxSplit < 1 || maxSplit > 64)
        throw new UsageError(`${label}: SPLIT_MAX=${maxSplit} must be an integer in 1…64`);
      if (pow2 !== 0 && pow2 !== 1) throw new UsageError(`${label}: SPLIT_POW2=${pow2} must be 0 or 1`);
      this.splitLag(r); // checked here too, so that a bad value fails before any dispatch
      if (consts['SPLIT'] === 0 && this.softwareSplitOne(label)) {
        // A CPU adapter runs a handful of workgroups at a time: parts only repeat the tile loads (measured on SwiftShader).
        consts['SPLIT'] = 1;
      } else if (consts['SPLIT'] === 0) {
        consts['SPLIT'] = autoSplit(blocks, wg, groupsAim, maxSplit, pow2 === 1);
      }
      const split = consts['SPLIT'] ?? 1;
      if (wg % 32 !== 0) throw new UsageError(`${label}: WG=${wg} must be a multiple of 32 (a tile is WG/32 blocks)`);
      if (!Number.isInteger(split) || split < 1 || split > 64) throw new UsageError(`${label}: SPLIT=${split} must be an integer in 1…64`);
    }
    return consts;
  }

  /**
   * Make the pass snapshot current (block lists + iteration bitmaps). On the GPU
   * (gpu-snapshot.ts) when the GPU copy is the newer one and no host write is pending
   * (G2); the lists are then read back unless the kernel reads them on the GPU
   * (`gpuListsOk`, G4) and option snapshot is 'gpu'. Otherwise on the host: download if
   * needed, ThreadContext.snapshot(), upload, and the lists written to the GPU's copy.
   */
  private async ensureSnapshot(gpuListsOk = false): Promise<void> {
    const noReadback = gpuListsOk && this.snapshotWhere === 'gpu';
    if (!this.gheap.hostNewer) {
      if (this.lists !== null) return;
      if (this.gpuListsValid) return noReadback ? undefined : this.readGpuLists();
      if (this.snapshotWhere !== 'host' && this.gheap.gpuNewer) {
        await this.snap().encode();
        this.generation++;
        this.gpuListsValid = true;
        this.counters.snapshots++;
        this.counters.gpuSnapshots++;
        return noReadback ? undefined : this.readGpuLists();
      }
    }
    if (this.gheap.gpuNewer) await this.gheap.download(() => this.submitNow());
    await this.checkStatus();
    this.lists = this.rt.main.snapshot();
    this.generation++;
    this.knownCounts(this.lists);
    this.counters.snapshots++;
    this.hostSnapshots++;
    this.gheap.upload();
    this.snap().writeHostLists(this.lists);
    this.gpuListsValid = true;
  }

  /** The GPU snapshot's buffers and pipelines (gpu-snapshot.ts), made on first use. */
  private snap(): GpuSnapshot {
    this.snapshotter ??= new GpuSnapshot({
      device: this.gpu.device,
      heapBuffer: this.gheap.buffer,
      numTypes: this.rt.table.types.length,
      numBlocks: this.rt.heap.numBlocks,
      pipeline: (entry, consts) => this.pipeline('snapshot.wgsl', [], entry, consts),
      dispatch: (p, bg, groups) => this.dispatch(p, bg, groups),
      clear: (buffer) => {
        this.endPass();
        this.encoder ??= this.gpu.device.createCommandEncoder();
        this.encoder.clearBuffer(buffer);
      },
      copy: (src, so, dst, dso, bytes) => this.copy(src, so, dst, dso, bytes),
      readBuffer: (src, bytes) => this.readBuffer(src, bytes),
    });
    return this.snapshotter;
  }

  /** Read the GPU snapshot's lists back (G3), checking the allocator status and the rank tables' object counts on the way. */
  private async readGpuLists(): Promise<void> {
    const r = await this.snap().read(this.statusUnchecked ? this.statusBuffer : null);
    this.statusUnchecked = false;
    this.counters.listReadbacks++;
    if (r.status[0] !== 0) {
      this.gpu.device.queue.writeBuffer(this.statusBuffer!, 0, new Uint32Array(4));
      throw statusError(r.status[0], r.status[1], this.takeStatusPasses());
    }
    this.statusPasses = [];
    for (const [id, table] of this.ranked) {
      if (this.ranksCurrent(id) && r.objects[id] !== table.handles.length) {
        throw new GpuError(
          `${table.t.name} objects were created or deleted on the GPU (${table.handles.length} → ${r.objects[id]}), but a WGSL kernel ranks them ` +
            '(runtime/webgpu/ranks.ts R2): kernels must not create or delete objects of a class they rank',
        );
      }
    }
    this.lists = r.lists;
    this.knownCounts(r.lists);
  }

  /** The pass lists [start, count] per type id (tests): read back if only the GPU has them; null when a new snapshot is due. */
  async readPassLists(): Promise<Int32Array | null> {
    if (this.lists === null && this.gpuListsValid && !this.gheap.hostNewer) await this.readGpuLists();
    return this.lists === null ? null : this.lists.slice();
  }

  /** The type named `name` (a concrete class of the runtime), or undefined. */
  private typeNamed(name: string): TypeLayout | undefined {
    return this.rt.table.types.find((t) => t.name === name);
  }

  /** The rank table of `t` (ranks.ts), remade from the host heap if a host snapshot was taken since it was made (R1, R2). */
  private async ensureRanks(t: TypeLayout): Promise<void> {
    let r = this.ranked.get(t.id);
    if (r === undefined) this.ranked.set(t.id, (r = new GpuRanks(this.gpu, t)));
    if (this.ranksMadeAt.get(t.id) === this.hostSnapshots && r.buffer !== null) return;
    // The host heap is current right after a host snapshot; otherwise (a table first needed after GPU passes) bring it.
    if (this.gheap.gpuNewer) {
      await this.gheap.download(() => this.submitNow());
      await this.checkStatus();
    }
    const destroyOld = r.refresh(this.rt.heap);
    if (destroyOld) this.afterSubmit(destroyOld);
    this.ranksMadeAt.set(t.id, this.hostSnapshots);
  }

  /** Whether the rank table of type `id` was made at the latest host snapshot (only then does R2 say its objects are unchanged). */
  private ranksCurrent(id: number): boolean {
    return this.ranked.get(id)?.buffer != null && this.ranksMadeAt.get(id) === this.hostSnapshots;
  }

  /** Passes of kernels that report through the status buffer since it was last read (GpuLaneError names them). */
  private statusPasses: string[] = [];

  private noteStatus(label: string): void {
    this.statusUnchecked = true;
    if (this.statusPasses[this.statusPasses.length - 1] !== label && this.statusPasses.length < 64) this.statusPasses.push(label);
  }

  private takeStatusPasses(): string[] {
    const p = this.statusPasses;
    this.statusPasses = [];
    return p;
  }

  /** The status buffer of allocating kernels (binding 4), created on first use. */
  private status(): GPUBuffer {
    this.statusBuffer ??= this.gpu.device.createBuffer({
      size: 16,
      usage: BufferUsage.STORAGE | BufferUsage.COPY_SRC | BufferUsage.COPY_DST,
      label: 'smmo allocator status',
    });
    return this.statusBuffer;
  }

  /**
   * After allocating kernels ran: read their status words (8 bytes) and raise GpuHeapError
   * if an invocation failed (heap full, retry cap, bad free). Called whenever the heap is
   * brought to the host or a host snapshot is taken, so a failure is reported before the
   * host reads or re-lists the heap.
   */
  private async checkStatus(): Promise<void> {
    if (!this.statusUnchecked || this.statusBuffer === null) return;
    this.statusUnchecked = false;
    const st = new Uint32Array(await this.readBuffer(this.statusBuffer, 8));
    if (st[0] !== 0) {
      this.gpu.device.queue.writeBuffer(this.statusBuffer, 0, new Uint32Array(4));
      throw statusError(st[0]!, st[1]!, this.takeStatusPasses());
    }
    this.statusPasses = [];
  }

  private ensureScratch(bytes: number): void {
    if (this.scratch.size >= bytes) return;
    // Bind groups of the old buffer stay valid for work already encoded; new ones use the new buffer.
    const old = this.scratch;
    this.scratch = this.gpu.device.createBuffer({ size: Math.max(bytes, old.size * 2), usage: BufferUsage.STORAGE, label: 'smmo scratch' });
    this.scratchGeneration++;
    this.afterSubmit(() => old.destroy());
  }

  private pendingDestroys: (() => void)[] = [];
  private afterSubmit(fn: () => void): void {
    this.pendingDestroys.push(fn);
  }

  private paramEntry(r: Resolved, start: number, count: number, args: readonly unknown[]): ParamEntry {
    const { kernel: k, type: t, label } = r;
    const key = `${label}|${t.id}|${start}|${count}|${args.map(String).join(',')}`;
    let e = this.params.get(key);
    if (e === undefined) {
      if (this.params.size >= MAX_PARAM_CACHE) {
        const old = [...this.params.values()];
        this.params.clear();
        this.afterSubmit(() => old.forEach((o) => o.buffer.destroy()));
      }
      const data = new ArrayBuffer(PARAMS_BYTES);
      const dv = new DataView(data);
      dv.setUint32(0, start, true);
      dv.setUint32(4, count, true);
      dv.setUint32(8, t.id, true); // Params word 2: the type id (gpuLists kernels: gpu-snapshot.ts G4)
      dv.setFloat32(12, 1, true); // word 3: 1.0, the generated kernels' P.one (emit-wgsl.ts W10); the hand-written ones leave it unread
      let at = 16;
      k.args.forEach((kind, i) => {
        const v = Number(args[i]);
        if (!Number.isFinite(v))
          throw new UsageError(`parallelDo(${label}): argument ${i} must be a finite number, got ${String(args[i])}`);
        if (kind === 'df64') {
          // Two words, hi and lo (runtime/compiler/emit-wgsl.ts W10).
          const [hi, lo] = doubleSingle(v);
          dv.setFloat32(at, hi, true);
          dv.setFloat32(at + 4, lo, true);
          at += 8;
          return;
        }
        if (kind === 'f32') dv.setFloat32(at, v, true);
        else if (kind === 'u32') dv.setUint32(at, v >>> 0, true);
        else dv.setInt32(at, v | 0, true);
        at += 4;
      });
      const buffer = this.gpu.device.createBuffer({
        size: PARAMS_BYTES,
        usage: BufferUsage.UNIFORM | BufferUsage.COPY_DST,
        label: `params ${key}`,
      });
      this.gpu.device.queue.writeBuffer(buffer, 0, data);
      e = { buffer, bindGroups: new Map() };
      this.params.set(key, e);
    }
    return e;
  }

  private bindGroup(e: ParamEntry, pipeline: GPUComputePipeline, entry: string, withScratch: boolean, k?: WgslKernel): GPUBindGroup {
    const ranks = k?.ranks === undefined ? undefined : this.ranked.get(this.typeNamed(k.ranks)!.id);
    // By pipeline too: one Params entry serves pipelines of several SPLIT values on the GPU's lists (runSplitOnGpuLists), and a bind group fits its pipeline's layout only.
    let pid = this.pipelineIds.get(pipeline);
    if (pid === undefined) this.pipelineIds.set(pipeline, (pid = this.pipelineCount++));
    const key = `${entry}|${pid}|${this.scratchGeneration}|${ranks?.generation ?? -1}`;
    let bg = e.bindGroups.get(key);
    if (bg === undefined) {
      const entries: GPUBindGroupEntry[] = [
        { binding: 0, resource: { buffer: this.gheap.buffer } },
        { binding: 1, resource: { buffer: e.buffer } },
      ];
      if (withScratch) entries.push({ binding: 2, resource: { buffer: this.scratch } });
      if (ranks?.buffer) entries.push({ binding: 3, resource: { buffer: ranks.buffer } });
      if (k?.allocates || k?.status) entries.push({ binding: 4, resource: { buffer: this.status() } });
      if (k?.gpuLists) entries.push({ binding: 5, resource: { buffer: this.snap().meta } });
      bg = this.gpu.device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries });
      e.bindGroups.set(key, bg);
    }
    return bg;
  }

  // ---------------------------------------------------------------- low level (also for tests)

  /**
   * A compute pipeline for `file` (+ libraries) after the prelude, entry point `entry`,
   * with these override constants (only those the source declares are passed).
   */
  pipeline(file: string, libraries: readonly string[], entry: string, constants: Record<string, number>): Promise<GPUComputePipeline> {
    // Every pass asks for its pipeline: answer from a per-runner memo by the call's own
    // arguments, before the source is assembled, scanned for overrides and hashed (tens of
    // KB per call; measured: a quarter of the CPU time of game-of-life on the GPU machine).
    const quick = `${file}|${libraries.join(',')}|${entry}|${JSON.stringify(constants)}`;
    const known = this.pipelineMemo.get(quick);
    if (known !== undefined) return known;
    const p = this.pipelineFor(file, libraries, entry, constants);
    this.pipelineMemo.set(quick, p);
    p.catch(() => this.pipelineMemo.delete(quick));
    return p;
  }

  /** pipeline()'s work: the full source, its declared overrides, the per-device cache. */
  private pipelineFor(
    file: string,
    libraries: readonly string[],
    entry: string,
    constants: Record<string, number>,
  ): Promise<GPUComputePipeline> {
    const parts: [string, string][] = [
      ['prelude', this.prelude],
      [file, this.genSources.get(file) ?? loadWgsl(file)],
      ...libraries.map((l): [string, string] => [l, loadWgsl(l)]),
    ];
    const source = parts.map((p) => p[1]).join('\n');
    const declared = overridesOf(source);
    const consts: Record<string, number> = {};
    for (const [k, v] of Object.entries(constants)) if (declared.has(k)) consts[k] = v;
    const key = `${file}|${libraries.join(',')}|${entry}|${JSON.stringify(consts)}`;
    // Cached per device and full source: runners of heaps with the same plan share pipelines.
    let cache = PIPELINES.get(this.gpu);
    if (cache === undefined) PIPELINES.set(this.gpu, (cache = new Map()));
    const full = `${source}\n//${key}`;
    let p = cache.get(full);
    if (p === undefined) {
      p = this.compile(file, source, parts, entry, consts);
      cache.set(full, p);
      const c = cache;
      p.catch(() => c.delete(full));
    }
    return p;
  }

  private async compile(
    file: string,
    source: string,
    parts: readonly [string, string][],
    entry: string,
    constants: Record<string, number>,
  ): Promise<GPUComputePipeline> {
    const device = this.gpu.device;
    const module = device.createShaderModule({ code: source, label: file });
    const info = await module.getCompilationInfo();
    const errors = info.messages.filter((m) => m.type === 'error');
    if (errors.length > 0) {
      // Map the line of the concatenated source back to its file.
      const where = (line: number): string => {
        let first = 1;
        for (const [name, text] of parts) {
          const n = text.split('\n').length;
          if (line < first + n) return `${name}:${line - first + 1}`;
          first += n;
        }
        return `line ${line}`;
      };
      const lines = errors.map((m) => `${where(m.lineNum)}:${m.linePos}: ${m.message}`);
      throw new GpuError(`WGSL compilation failed:\n  ${lines.join('\n  ')}`);
    }
    try {
      return await device.createComputePipelineAsync({
        layout: 'auto',
        compute: { module, entryPoint: entry, constants },
        label: `${file}:${entry}`,
      });
    } catch (e) {
      throw new GpuError(`${file}: creating the compute pipeline for '${entry}' failed: ${(e as Error).message}`, { cause: e });
    }
  }

  /** Encode a dispatch of `groups` workgroups (2-D when over the per-dimension limit) × z. */
  dispatch(pipeline: GPUComputePipeline, bindGroup: GPUBindGroup, groups: number, z = 1): void {
    if (groups <= 0) return;
    const max = this.gpu.info.maxComputeWorkgroupsPerDimension;
    const x = Math.min(groups, max);
    const y = Math.ceil(groups / x);
    if (y > max || z > max)
      throw new UsageError(`dispatch of ${groups}×${z} workgroups exceeds the adapter's limit of ${max} per dimension`);
    if (this.pass === null) {
      this.encoder ??= this.gpu.device.createCommandEncoder();
      this.pass = this.encoder.beginComputePass();
    }
    this.pass.setPipeline(pipeline);
    this.pass.setBindGroup(0, bindGroup);
    this.pass.dispatchWorkgroups(x, y, z);
    this.counters.dispatches++;
  }

  /** Encode an indirect dispatch (arguments at `offset` of `indirect`: x, y, z). */
  private dispatchIndirect(pipeline: GPUComputePipeline, bindGroup: GPUBindGroup, indirect: GPUBuffer, offset: number): void {
    if (this.pass === null) {
      this.encoder ??= this.gpu.device.createCommandEncoder();
      this.pass = this.encoder.beginComputePass();
    }
    this.pass.setPipeline(pipeline);
    this.pass.setBindGroup(0, bindGroup);
    this.pass.dispatchWorkgroupsIndirect(indirect, offset);
    this.counters.dispatches++;
  }

  /** A bind group for group 0 of `pipeline` with these buffers at bindings 0, 1, 2, … */
  bindBuffers(pipeline: GPUComputePipeline, buffers: readonly GPUBuffer[]): GPUBindGroup {
    return this.gpu.device.createBindGroup({
      layout: pipeline.getBindGroupLayout(0),
      entries: buffers.map((buffer, binding) => ({ binding, resource: { buffer } })),
    });
  }

  /** Submit pending work, then copy `bytes` of `src` (COPY_SRC usage) from byte `from` back to the host. */
  async readBuffer(src: GPUBuffer, bytes = src.size, from = 0): Promise<ArrayBuffer> {
    this.live('readBuffer');
    const staging = this.gpu.device.createBuffer({ size: bytes, usage: BufferUsage.MAP_READ | BufferUsage.COPY_DST });
    try {
      this.copy(src, from, staging, 0, bytes);
      this.submitNow();
      await staging.mapAsync(0x1);
      const out = staging.getMappedRange().slice(0); // copy out before unmap detaches it
      staging.unmap();
      this.gpu.checkErrors('readBuffer');
      return out;
    } finally {
      staging.destroy();
    }
  }

  /** Encode a buffer copy (ends the open compute pass). */
  copy(src: GPUBuffer, srcOffset: number, dst: GPUBuffer, dstOffset: number, bytes: number): void {
    this.endPass();
    this.encoder ??= this.gpu.device.createCommandEncoder();
    this.encoder.copyBufferToBuffer(src, srcOffset, dst, dstOffset, bytes);
  }

  private endPass(): void {
    if (this.pass !== null) {
      this.pass.end();
      this.pass = null;
    }
  }

  /** Submit what is encoded (no wait). */
  private submitNow(): void {
    this.endPass();
    if (this.encoder !== null) {
      this.gpu.device.queue.submit([this.encoder.finish()]);
      this.encoder = null;
      this.counters.submits++;
      this.submitAfterPass = false;
      if (this.unsubmittedReads.length > 0) this.mapCountReads();
      // A lost device rejects this; checkErrors() reports the loss, so the rejection is not left unhandled.
      this.inFlight.push(this.gpu.device.queue.onSubmittedWorkDone().catch(() => undefined));
    }
    this.encodedPasses = 0;
    if (this.pendingDestroys.length > 0) {
      // Destroying after submit is safe: WebGPU keeps a destroyed buffer alive for work already submitted.
      const fns = this.pendingDestroys.splice(0);
      for (const fn of fns) fn();
    }
  }

  /** Submit what is encoded; wait while too many submissions are outstanding. */
  async submit(): Promise<void> {
    this.submitNow();
    while (this.inFlight.length > MAX_IN_FLIGHT) await this.inFlight.shift();
    this.gpu.checkErrors('GPU pass');
  }

  /** Submit and wait until the GPU has finished everything (for timing). */
  async finish(): Promise<void> {
    this.live('finish');
    this.submitNow();
    await this.gpu.device.queue.onSubmittedWorkDone();
    this.inFlight.length = 0;
    this.gpu.checkErrors('GPU pass');
  }

  // ---------------------------------------------------------------- coherence

  /** Bring GPU results into the host heap (no-op when the host is current). Call before host reads. */
  async toHost(): Promise<void> {
    this.live('toHost');
    const downloaded = this.gheap.gpuNewer;
    if (downloaded) await this.gheap.download(() => this.submitNow());
    else this.submitNow();
    await this.checkStatus();
    if (downloaded) this.checkRanks();
  }

  /** ranks.ts R2 on the downloaded heap: the ranked classes' objects are those of their tables. */
  private checkRanks(): void {
    for (const [id, table] of this.ranked) {
      if (!this.ranksCurrent(id)) continue;
      const now = rankHandles(this.rt.heap, table.t);
      if (now.length !== table.handles.length || now.some((h, i) => h !== table.handles[i])) {
        throw new GpuError(
          `${table.t.name} objects were created or deleted on the GPU (${table.handles.length} → ${now.length}), but a WGSL kernel ranks them ` +
            '(runtime/webgpu/ranks.ts R2): kernels must not create or delete objects of a class they rank',
        );
      }
    }
  }

  /** Tell the runner the host changed the heap (objects created/deleted, fields written): re-upload and re-snapshot before the next GPU pass. */
  hostWrote(): void {
    if (this.gheap.gpuNewer) {
      throw new UsageError('the heap was changed on the host while the GPU held newer data; call `await toHost()` before host writes');
    }
    this.gheap.hostNewer = true;
    this.grewAt = this.generation; // the host may have created objects (splitCountsFor S2)
  }

  /** Defragmentation on the GPU copy (gpu-defrag.ts): submit what is encoded and report a failed allocating kernel first. */
  async beforeDefrag(): Promise<void> {
    this.live('defrag');
    this.submitNow();
    await this.checkStatus();
  }

  /**
   * gpu-defrag.ts changed the GPU copy: objects of the type ids `moved` moved there
   * (`gpuWrote`: the host's copy of their data is stale) and block headers changed on both
   * sides. The pass snapshot is taken again, and so are the rank tables of moved classes.
   */
  afterDefrag(moved: readonly number[], gpuWrote: boolean): void {
    if (gpuWrote) this.gheap.gpuNewer = true;
    this.lists = null;
    this.gpuListsValid = false;
    this.grewAt = this.generation; // block counts may change (splitCountsFor S2)
    for (const id of moved) this.ranksMadeAt.delete(id);
  }

  /**
   * Block `bid` of the GPU's copy into the host heap's copy of that block only (the work
   * encoded so far submitted, a failed kernel reported first, as toHost does): one object's
   * fields read or written (Runtime.readField / writeField) without a whole-heap download.
   * The rest of the host copy stays as stale as it was (gpuNewer unchanged).
   */
  async fetchBlock(bid: number): Promise<void> {
    const heap = this.rt.heap;
    const at = heap.blockOffset(bid);
    const bytes = heap.plan.blockBytes; // a multiple of 16, as block offsets are (layout.ts)
    const data = new Uint8Array(await this.readBuffer(this.gheap.buffer, bytes, at - GPU_BASE_BYTES));
    await this.checkStatus();
    heap.u8.set(data, at);
  }

  /**
   * Host heap bytes [from, to) into the GPU's copy, after the work encoded so far, when the
   * GPU's copy is otherwise current (writeField); a newer host heap is uploaded whole anyway.
   */
  pushBytes(from: number, to: number): void {
    this.live('pushBytes');
    if (this.gheap.hostNewer) return;
    const a = from & ~3;
    const b = (to + 3) & ~3;
    this.submitNow();
    this.gpu.device.queue.writeBuffer(this.gheap.buffer, a - GPU_BASE_BYTES, this.rt.heap.u8.slice(a, b)); // a copy: the heap may be shared memory
  }

  /** Upload the host heap now if it is newer (tests and custom kernels). */
  toGpu(): void {
    this.live('toGpu');
    if (this.gheap.hostNewer) this.gheap.upload();
  }

  /** Mark the GPU copy as changed by a custom dispatch (tests and custom kernels). */
  gpuWrote(allocated = false): void {
    this.gheap.gpuNewer = true;
    if (allocated) {
      this.lists = null;
      this.gpuListsValid = false; // the snapshot's lists buffer is stale too
      this.grewAt = this.generation; // the custom kernel may have created objects (splitCountsFor S2)
    }
  }

  private live(what: string): void {
    if (this.closed) throw new UsageError(`${what}: the GPU runner is closed`);
  }

  /** Bring results to the host, free GPU buffers and (if the runner acquired it) destroy the device. */
  async close(options: { download?: boolean } = {}): Promise<void> {
    if (this.closed) return;
    try {
      if (options.download !== false && !this.gpu.isClosed) await this.toHost();
    } finally {
      this.closed = true;
      this.pass = null;
      this.encoder = null;
      if (!this.gpu.isClosed) {
        await this.gpu.device.queue.onSubmittedWorkDone().catch(() => undefined);
        for (const e of this.params.values()) e.buffer.destroy();
        this.scratch.destroy();
        for (const r of this.ranked.values()) r.destroy();
        this.statusBuffer?.destroy();
        for (const e of this.unsubmittedReads.splice(0)) e.staging?.destroy();
        for (const e of this.blockCounts.values()) if (e.done !== null) await e.done; // mapped or failed; the staging buffer is gone then
        this.snapshotter?.destroy();
        this.gheap.destroy();
      }
      if (this.ownsGpu) await this.gpu.close();
    }
  }
}

/** Kernel k as seen by its `reduce` entry point's bind group: binding 5 (lists) only, none of ranks and status (binding 3, 4). */
function listsOnly(k: WgslKernel): WgslKernel {
  return {
    file: k.file,
    fields: k.fields,
    args: k.args,
    tunables: k.tunables,
    dispatch: k.dispatch,
    ...(k.gpuLists ? { gpuLists: true } : {}),
  };
}

/** Blocks per type id from the snapshot's lists buffer words (gpu-snapshot.ts: [4t] count). */
function countsOfMeta(words: Uint32Array, numTypes: number): Int32Array {
  const counts = new Int32Array(numTypes);
  for (let t = 0; t < numTypes; t++) counts[t] = words[4 * t]!;
  return counts;
}
