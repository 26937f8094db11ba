/**
 * The SMMO runtime (paper §2.1, slides "Full SMMO Interface"): create it with its
 * classes and a heap size, then create/delete objects and run do-alls.
 *
 *   const rt = await createRuntime({ classes: [Body], heap: '64MB' });
 *   await rt.parallelNew(Body, 1000, (b, i) => { b.posX = i; });
 *   await rt.parallelDo(Body, 'update', 0.02);
 *   await rt.close();
 *
 * parallelDo / parallelNew return promises so that the same user code runs on one
 * thread or on a pool of workers; on one thread the work is done before they return.
 *
 * Threads (paper §3 "Parallel Object Enumeration", §4.2; workers/pool.ts): with
 * `threads: N > 1` the runtime starts N-1 worker threads (piscina) that import
 * `options.modules` once and attach to the heap; every pass then runs on them and on
 * the calling thread. Passes smaller than `inlineBlocks` blocks run on the calling
 * thread alone (a fork-join costs more than they do).
 */
import type { ResourceLimits } from 'node:worker_threads';
import type { Init, SmmoContext } from './context.js';
import { HeapCorruptionError, MethodError, PassTimeoutError, SmmoError, UsageError } from './errors.js';
import { timed, TimedOut } from './timed.js';
import { closestName } from './suggest.js';
import { Heap } from './heap.js';
import { configureBackend } from './kernels.js';
import { checkBackend, type Backend } from './kernel-spec.js';
import { DEFAULT_KEEP_BLOCKS, planTypes, type TypeLayout, type TypeTable } from './layout.js';
import type { SmmoClass, SmmoObject } from './schema.js';
import { ThreadContext } from './thread.js';
import { newObjects } from '../workers/pass.js';
import { WorkerPool } from '../workers/pool.js';
import { ARGS_AREA_BYTES, IN_SMMO_WORKER, KIND_DO, KIND_NEW, oversizeArgs, unclonableArg } from '../workers/protocol.js';
import type { WasmOptions } from './wasm-options.js';
import type { GpuRunnerStats, WebGpuOptions } from './webgpu/options.js';
import type { GpuRunner, GpuRunnerOptions } from './webgpu/runner.js';

export interface RuntimeOptions {
  /** Every class the program uses, abstract ancestors included. */
  classes: readonly SmmoClass[];
  /** Heap size in bytes (number) or with a unit ("64MB", "1GiB"). Default 64 MiB. */
  heap?: number | string;
  /** Checked mode: validate handles on every access, reference and delete. Default false. */
  checked?: boolean;
  /**
   * Threads that run a pass, the calling thread included: N > 1 starts N-1 worker
   * threads (and needs `modules`). Default 1: everything runs on the calling thread.
   * At most MAX_THREADS (64).
   */
  threads?: number;
  /**
   * With threads > 1: URLs of the modules that export the classes (`import.meta.url`
   * of the module that declares them, or an app's module). Each worker imports them
   * once and finds the classes by name (exported directly, in an exported array, or in
   * an exported object's `classes`; abstract bases through their subclasses).
   */
  modules?: readonly (string | URL)[];
  /**
   * Passes over fewer blocks than this (parallelNew: fewer objects than this × 32) run
   * on the calling thread alone, unless the method is heavy (see inlineMicros). 0: every
   * pass uses the workers. Default DEFAULT_INLINE_BLOCKS (measured: see bench/scaling.ts).
   */
  inlineBlocks?: number;
  /**
   * A pass under `inlineBlocks` blocks still goes to the workers when the same class and
   * method, run on the calling thread last time, took more than this many µs for that
   * many blocks (the block count alone cannot tell a light method from one that
   * allocates thousands of objects per call). Such a pass that then takes less than this
   * on the workers, fork-join included, is measured inline again next time (its first
   * inline run may have included compiling the method). Default DEFAULT_INLINE_MICROS.
   */
  inlineMicros?: number;
  /**
   * Blocks a thread keeps per class after emptying them, for its next allocations,
   * instead of returning them to the heap's free bitmap at once (the allocator core,
   * wasm/src/alloc/core.rs K1–K3; they are returned when the thread's share of a pass
   * ends, and reclaimed from any thread before a HeapExhaustedError). 0: the paper's
   * behaviour. Default DEFAULT_KEEP_BLOCKS (0 with allocator.bitmapAlloc, which has no
   * use for them).
   */
  keepBlocks?: number;
  /**
   * The allocator variant (the paper's §7 study, Fig. 13(d)). Default: DynaSOAr with
   * bitmap rotation and per-warp request coalescing.
   */
  allocator?: AllocatorOptions;
  /** A worker thread that has had no pass for this long stops waiting (so an idle process can exit). Default 250 ms. */
  workerIdleMs?: number;
  /**
   * Busy-wait this long for the next pass (workers) and at the barrier (calling thread)
   * before sleeping in Atomics.wait. Default 0: on the 2-core dev VM, shared with other
   * jobs, an empty pass cost 28 µs with 0, 60 µs with 20 and 430 µs with 200 (the
   * spinning threads take the cores the others need). Worth trying on dedicated cores
   * (bench/scaling.ts measures 0, 20 and 200).
   */
  spinMicros?: number;
  /** worker_threads resourceLimits of each worker (e.g. { maxOldGenerationSizeMb: 512 }). */
  resourceLimits?: ResourceLimits;
  /** Longest time a worker thread may take to start (import the modules). Default 30 000 ms. */
  startTimeoutMs?: number;
  /**
   * Longest time one pass of a do-all or parallelNew may run, in ms (a do-all over a
   * class with subclasses is one pass per concrete class). A pass that runs longer — a
   * method that never returns — rejects with PassTimeoutError: stuck worker threads are
   * terminated and replaced, the calling thread's share is interrupted (runtime/timed.ts:
   * node:vm's watchdog, about 0.1 ms per pass on the calling thread), validateHeap() runs,
   * and the runtime stays usable. Default: no limit (and no cost).
   */
  passTimeout?: number;
  /** Seed of the allocator's bitmap rotation (deterministic block choice). Default 1. */
  seed?: number;
  /**
   * Compile do-all methods into specialised loops over the heap (runtime/compiler/;
   * README "Compiled methods"). A method the compiler cannot take runs interpreted;
   * stats().compiled says which and why. Default true.
   */
  compile?: boolean;
  /**
   * Which implementation of each method runs (runtime/kernels.ts): 'ts' (default) the
   * TypeScript methods; 'wasm' the Rust kernels a class declares (static [KERNELS]), the
   * TypeScript method for every method without one. 'webgpu' (needs the optional npm
   * package `webgpu`): the methods with a WGSL kernel run on the GPU and the heap stays
   * there between passes; call `await rt.sync()` before reading objects on the host
   * (docs/webgpu.md).
   */
  backend?: 'ts' | 'wasm' | 'webgpu';
  /** Which build of the WebAssembly module (the allocator core, and the kernels of backend 'wasm'), and where it is (default: simd, the package's wasm/pkg). */
  wasm?: WasmOptions;
  /** Backend 'webgpu': adapter choice and kernel tunables (runtime/webgpu/options.ts WebGpuOptions). */
  webgpu?: WebGpuOptions;
}

/** RuntimeOptions.allocator: the allocator variants of the paper's study (wasm/src/alloc/core.rs "Variants"). */
export interface AllocatorOptions {
  /** Bitmap rotation (§4.2). false: every bitmap and slot search starts at bit 0 (DynaSOAr-NoShift). Default true. */
  rotation?: boolean;
  /**
   * Per-warp request coalescing (§4.2): the objects a warp's lanes create of one class are
   * reserved with one atomic per block. false: one slot per create (DynaSOAr-NoCoal), also
   * in parallelNew. Default true (false with bitmapAlloc).
   */
  coalescing?: boolean;
  /**
   * BitmapAlloc, the paper's baseline allocator, emulated: one object per block, every
   * block the size of the largest class (fields at their natural alignment, no SOA
   * arrays), found through the same hierarchical bitmaps (docs/benchmarks.md "Allocator
   * variants" explains how this differs from the paper's). Needs backend 'ts' (the WASM and
   * WebGPU kernels read SOA arrays). Default false.
   */
  bitmapAlloc?: boolean;
}

/** Check RuntimeOptions.allocator and the options it constrains. */
function checkAllocatorOptions(options: RuntimeOptions): Required<AllocatorOptions> {
  const a = options.allocator ?? {};
  if (typeof a !== 'object' || a === null)
    throw new UsageError(`allocator must be an object such as { rotation: false }, got ${String(a)}`);
  for (const key of Object.keys(a)) {
    if (!['rotation', 'coalescing', 'bitmapAlloc'].includes(key))
      throw new UsageError(`allocator.${key} is not an allocator option (rotation, coalescing, bitmapAlloc)`);
    const v = (a as Record<string, unknown>)[key];
    if (v !== undefined && typeof v !== 'boolean') throw new UsageError(`allocator.${key} must be true or false, got ${String(v)}`);
  }
  const bitmapAlloc = a.bitmapAlloc === true;
  if (bitmapAlloc) {
    if (a.coalescing === true)
      throw new UsageError('allocator: bitmapAlloc has one object per block, so nothing to coalesce; leave coalescing unset');
    if (options.keepBlocks !== undefined && options.keepBlocks !== 0)
      throw new UsageError('allocator: bitmapAlloc keeps no emptied blocks (each holds one object); leave keepBlocks unset or 0');
    if (options.backend === 'wasm' || options.backend === 'webgpu')
      throw new UsageError(
        `allocator: bitmapAlloc lays objects out without SOA arrays, which the ${options.backend} kernels read; use backend 'ts'`,
      );
  }
  return { rotation: a.rotation ?? true, coalescing: !bitmapAlloc && (a.coalescing ?? true), bitmapAlloc };
}

/** Methods of I callable by name (what parallelDo accepts). */
export type MethodName<I> = {
  [K in keyof I]: I[K] extends (...a: never[]) => unknown ? (K extends keyof SmmoObject ? never : K) : never;
}[keyof I] &
  string;
export type MethodArgs<I, K extends keyof I> = I[K] extends (...a: infer A) => unknown ? A : never;

export interface TypeStats {
  objects: number;
  blocks: number;
  slotsPerBlock: number;
}
export interface HeapStats {
  bytes: number;
  blockBytes: number;
  /** Usable blocks (block 0 is reserved for null). */
  blocks: number;
  usedBlocks: number;
  /** Free slots in used blocks / slots in used blocks (thesis slides, seed 003). */
  fragmentation: number;
}
/** How a do-all method ran (compiled, or interpreted and why): stats().compiled["Class.method"]. */
export interface CompiledMethodStats {
  compiled: boolean;
  /** Why it runs interpreted (compiled: false). */
  reason?: string;
  /** Parts that run as JavaScript inside a compiled method (calls of functions the compiler does not take), with why. */
  javascript?: string[];
}
export interface RuntimeStats {
  heap: HeapStats;
  types: Record<string, TypeStats>;
  /** Per "Class.method" run so far on the calling thread's compiler (empty with compile: false). */
  compiled: Record<string, CompiledMethodStats>;
  /** The runtime's backend, and per "Class.method" run so far the backend that ran it. */
  backend: { name: Backend; methods: Record<string, Backend>; webgpu?: GpuRunnerStats };
}

/**
 * Default of RuntimeOptions.inlineBlocks. With T threads a pass of B blocks costs about
 * F + B·c/T on the workers and B·c on the calling thread alone, so the workers pay from
 * B* = F / (c·(1 - 1/T)) blocks. Measured on the 2-core dev VM (bench/scaling.ts; shared
 * with other jobs, load 5–16): an empty pass F ≈ 28 µs back to back (≈ 180 µs when the
 * workers were asleep), nbody's update (a light method) c ≈ 0.75 µs per block, so
 * B* ≈ 75 blocks at T = 2. Heavier methods pay off sooner (computeForce at 1000 bodies:
 * ~1 ms per block); 64 keeps light passes of up to 2048 objects on the calling thread.
 */
export const DEFAULT_INLINE_BLOCKS = 64;

/**
 * Default of RuntimeOptions.inlineMicros: about the cost of an empty pass on 16 threads
 * of the device host (146 µs back to back, bench/scaling.ts); a small pass whose inline
 * run is estimated above it pays for the fork-join on any thread count measured.
 */
export const DEFAULT_INLINE_MICROS = 150;

/**
 * Most threads a runtime may have (RuntimeOptions.threads, CLI --threads). A bound, so that
 * no input starts threads without end (each worker costs tens of MB); and every thread of
 * a runtime with backend 'wasm' needs a kernel thread slot in the reserved memory below
 * the heap: runtime/wasm.ts fits at least MAX_THREADS + 1 slots there (one spare, e.g.
 * for a replacement thread while a dead one's slot is given back), checked by
 * test/wasm-module.test.ts.
 */
export const MAX_THREADS = 64;

/** Every key RuntimeOptions has: anything else is a typo (createRuntime refuses it, naming the closest key). */
const OPTION_KEYS = [
  'classes',
  'heap',
  'checked',
  'threads',
  'modules',
  'inlineBlocks',
  'inlineMicros',
  'keepBlocks',
  'workerIdleMs',
  'spinMicros',
  'resourceLimits',
  'startTimeoutMs',
  'passTimeout',
  'seed',
  'compile',
  'allocator',
  'backend',
  'wasm',
  'webgpu',
] as const satisfies readonly (keyof RuntimeOptions)[];
// Compile-time: OPTION_KEYS lists every key of RuntimeOptions (a new option must be added there).
type MissingOptionKeys = Exclude<keyof RuntimeOptions, (typeof OPTION_KEYS)[number]>;
const _allOptionKeys: [MissingOptionKeys] extends [never] ? true : MissingOptionKeys = true;
void _allOptionKeys;

/** Refuse keys RuntimeOptions does not have and values of the wrong kind (plain JS callers, typos). */
function checkOptions(options: RuntimeOptions): void {
  const known: readonly string[] = OPTION_KEYS;
  for (const key of Object.keys(options)) {
    if (known.includes(key)) continue;
    const guess = closestName(key, known);
    throw new UsageError(
      `createRuntime: unknown option '${key}'${guess ? ` (did you mean '${guess}'?)` : ''}; the options are ${known.join(', ')}`,
    );
  }
  const o = options as unknown as Record<string, unknown>;
  const kind = (key: string, ok: (v: unknown) => boolean, wanted: string): void => {
    const v = o[key];
    if (v !== undefined && !ok(v)) throw new UsageError(`createRuntime: option ${key} must be ${wanted}, got ${describeValue(v)}`);
  };
  const nonNegative = (v: unknown): boolean => typeof v === 'number' && Number.isFinite(v) && v >= 0;
  kind('checked', (v) => typeof v === 'boolean', 'true or false');
  kind('compile', (v) => typeof v === 'boolean', 'true or false');
  kind('heap', (v) => typeof v === 'number' || typeof v === 'string', "a number of bytes or a size such as '64MB'");
  kind('seed', (v) => Number.isInteger(v) && (v as number) >= 0 && (v as number) <= 0xffffffff, 'an integer in 0 … 4294967295');
  kind(
    'modules',
    (v) => Array.isArray(v) && v.every((m) => typeof m === 'string' || m instanceof URL),
    'an array of URLs (strings or URL objects)',
  );
  kind('workerIdleMs', nonNegative, 'a non-negative number of ms');
  kind('spinMicros', nonNegative, 'a non-negative number of µs');
  kind('startTimeoutMs', nonNegative, 'a non-negative number of ms');
  kind('passTimeout', (v) => typeof v === 'number' && v > 0 && v <= 2 ** 31 - 1, 'a number of ms in (0, 2147483647]');
  kind('wasm', (v) => typeof v === 'object' && v !== null, "an object such as { variant: 'scalar' }");
  kind('webgpu', (v) => typeof v === 'object' && v !== null, "an object such as { adapter: 'software' }");
  kind('resourceLimits', (v) => typeof v === 'object' && v !== null, 'an object of worker_threads resource limits');
}

/**
 * Arguments of a pass must fit ARGS_AREA_BYTES serialized (workers read them from shared
 * memory), and be cloneable: checked on one thread too, so that the same program behaves
 * the same on any number of threads.
 */
function checkArgsSize(operation: string, method: string, args: readonly unknown[]): void {
  let size: number | null;
  try {
    size = oversizeArgs(method, args);
  } catch (e) {
    throw new UsageError(`${operation}: arguments are passed by value (structured clone), and these cannot be: ${(e as Error).message}`, {
      cause: e,
    });
  }
  if (size !== null) {
    throw new UsageError(
      `${operation}: arguments take ${size} bytes serialized; at most ${ARGS_AREA_BYTES} (16 KiB) can be passed to a pass, ` +
        'on one thread as on worker threads: keep large data in objects of the heap, or in a module that the methods import',
    );
  }
}

/** Module URLs for the workers: relative paths would resolve against smmo's own worker file, not the caller's. */
function checkModules(modules: readonly (string | URL)[]): void {
  for (const m of modules) {
    if (m instanceof URL) continue;
    const s = String(m);
    if (/^[a-zA-Z][a-zA-Z0-9+.-]*:/.test(s) || s.startsWith('/')) continue; // file:, data:, node: URLs; absolute paths
    if (/^\.\.?[\\/]/.test(s) || /\.(m?js|ts|cjs)$/.test(s)) {
      throw new UsageError(
        `modules: '${s}' is a relative path, which worker threads would resolve against smmo's own worker file, not your module; ` +
          `pass new URL('${s}', import.meta.url) (or an absolute file: URL, e.g. pathToFileURL(path))`,
      );
    }
  }
}

function describeValue(v: unknown): string {
  if (typeof v === 'string') return `'${v}'`;
  if (typeof v === 'object' && v !== null) return Array.isArray(v) ? 'an array' : 'an object';
  return String(v);
}

/** Work per claim of a do-all on the workers that the claim size aims at, when the method's cost is known (µs). */
const CLAIM_MICROS = 500;

const UNITS: Record<string, number> = {
  '': 1,
  b: 1,
  k: 1e3,
  kb: 1e3,
  kib: 1024,
  m: 1e6,
  mb: 1e6,
  mib: 1 << 20,
  g: 1e9,
  gb: 1e9,
  gib: 1 << 30,
};

/** Parse "64MB", "1GiB", "1048576" into bytes. */
export function parseSize(v: number | string): number {
  if (typeof v === 'number') return v;
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(v);
  const unit = m ? UNITS[m[2]!.toLowerCase()] : undefined;
  if (!m || unit === undefined)
    throw new UsageError(`bad size '${v}': use a number of bytes or a number with a unit, e.g. 64MB, 512MiB, 2GB`);
  return Math.round(Number(m[1]) * unit);
}

/**
 * A runtime: its heap, its classes, its threads. Made by createRuntime(); see the module
 * comment above for an example.
 *
 * The members marked internal (heap, table, main, pool, gpu) are used by smmo's apps, CLI
 * and tests but are left out of the published declarations: they name WebAssembly and
 * WebGPU types, and the public declarations must type-check in a strict consumer without
 * the DOM lib or @webgpu/types.
 */
export class Runtime {
  /** @internal The heap's memory and views. */
  readonly heap: Heap;
  /** @internal Every class's block layout. */
  readonly table: TypeTable;
  readonly checked: boolean;
  readonly threads: number;
  readonly backend: Backend;
  /** @internal The calling thread's context (also what methods see as `this.runtime` here). */
  readonly main: ThreadContext;
  /** @internal Worker threads (threads > 1), null on one thread. */
  readonly pool: WorkerPool | null;
  /** See RuntimeOptions.inlineBlocks; may be changed between passes (benchmarks tune it). */
  inlineBlocks: number;
  /** See RuntimeOptions.inlineMicros. */
  inlineMicros: number;
  /** See RuntimeOptions.passTimeout (undefined: no limit). */
  readonly passTimeout: number | undefined;
  /** Per "typeId:method": µs per block of its last run on the calling thread (adaptive inlining; absent = 0, so a first run is inline). */
  private readonly inlineCost = new Map<string, number>();
  /** Per "typeId:method": thread-µs per block of its last pass on the workers (claim sizes). */
  private readonly workerCost = new Map<string, number>();
  private closed = false;
  /**
   * @internal Backend 'webgpu': the GPU side (createRuntime attaches it); null otherwise.
   * Not in the published declarations (they name no WebGPU type): rt.stats().backend.webgpu
   * is the public view of it.
   */
  gpu: GpuRunner | null = null;
  /** Set while a parallelDo / parallelNew runs (they must be awaited one at a time). */
  private inFlight: string | null = null;

  constructor(options: RuntimeOptions) {
    if (options == null || typeof options !== 'object') throw new UsageError('createRuntime: give an options object: { classes: [...] }');
    checkOptions(options);
    checkModules(options.modules ?? []);
    if (!Array.isArray(options.classes)) throw new UsageError('createRuntime: options.classes must be an array of classes');
    const threads = options.threads ?? 1;
    if (!Number.isInteger(threads) || threads < 1 || threads > MAX_THREADS) {
      throw new UsageError(
        `threads must be an integer in 1 … ${MAX_THREADS} (the calling thread and up to ${MAX_THREADS - 1} workers), got ${String(threads)}`,
      );
    }
    if ((globalThis as Record<symbol, unknown>)[IN_SMMO_WORKER] === true) {
      // A worker imports options.modules to find the classes; a module that also creates
      // a runtime when imported would start a runtime (and its workers) in every worker.
      throw new UsageError(
        'createRuntime was called in an smmo worker thread while it imported options.modules: a module listed there must ' +
          'only declare classes; move the code that creates the runtime to another module, or guard it with `if (isMainThread)`',
      );
    }
    const inline = options.inlineBlocks ?? DEFAULT_INLINE_BLOCKS;
    if (!Number.isInteger(inline) || inline < 0) throw new UsageError(`inlineBlocks must be a non-negative integer, got ${inline}`);
    this.inlineBlocks = inline;
    const micros = options.inlineMicros ?? DEFAULT_INLINE_MICROS;
    if (!(typeof micros === 'number' && micros >= 0)) throw new UsageError(`inlineMicros must be a non-negative number, got ${micros}`);
    this.inlineMicros = micros;
    this.threads = threads;
    this.passTimeout = options.passTimeout;
    this.checked = options.checked === true;
    const variant = checkAllocatorOptions(options);
    this.table = planTypes(options.classes, { checked: this.checked, bitmapAlloc: variant.bitmapAlloc });
    const keep = options.keepBlocks ?? (variant.bitmapAlloc ? 0 : DEFAULT_KEEP_BLOCKS);
    if (!Number.isInteger(keep) || keep < 0 || keep > 1024)
      throw new UsageError(`keepBlocks must be an integer from 0 to 1024, got ${keep}`);
    const backend = checkBackend(options.backend);
    const compile = options.compile ?? true;
    this.heap = Heap.create(this.table, parseSize(options.heap ?? 64 << 20), {
      threads,
      keepBlocks: keep,
      rotation: variant.rotation,
      coalescing: variant.coalescing,
      wasm: options.wasm ?? {},
    });
    try {
      this.main = new ThreadContext(this.heap, this.table, this.checked, options.seed ?? 1, compile);
    } catch (e) {
      this.heap.dispose();
      throw e;
    }
    this.main.allocator.setOwnFirstBlock(threads > 1);
    this.backend = configureBackend(this.main, backend);
    this.pool =
      threads === 1
        ? null
        : new WorkerPool(this.heap, this.table, {
            threads,
            modules: (options.modules ?? []).map((m) => String(m)),
            checked: this.checked,
            seed: options.seed ?? 1,
            backend: this.backend,
            wasm: options.wasm ?? {},
            idleMs: options.workerIdleMs ?? 250,
            spinMicros: options.spinMicros ?? 0,
            compile,
            startTimeoutMs: options.startTimeoutMs ?? 30_000,
            ...(options.passTimeout !== undefined ? { passTimeout: options.passTimeout } : {}),
            ...(options.resourceLimits ? { resourceLimits: options.resourceLimits } : {}),
          });
  }

  /** Start the worker threads (createRuntime awaits this; otherwise the first pass does). */
  async start(): Promise<void> {
    await this.pool?.ensureServing();
  }

  /** Mark an async operation in flight; they must not overlap (the pool runs one pass at a time). */
  private enter(what: string): void {
    if (this.inFlight !== null)
      throw new UsageError(`${what}: ${this.inFlight} is still running; await each parallelDo / parallelNew before the next`);
    this.inFlight = what;
  }

  private live(what: string): ThreadContext {
    if (this.closed) throw new UsageError(`${what}: the runtime is closed`);
    if (this.gpu?.gpuNewer) {
      throw new UsageError(
        `${what}: the GPU holds newer object data (backend 'webgpu' keeps the heap on the GPU between passes); call \`await rt.sync()\` first`,
      );
    }
    return this.main;
  }

  /**
   * Backend 'webgpu': bring the GPU's results into the heap; the host may then read and
   * write objects until the next GPU pass (which uploads the heap again). Other backends:
   * nothing to do.
   */
  async sync(): Promise<void> {
    if (this.gpu === null) return;
    await this.gpu.toHost();
    this.gpu.hostWrote();
  }

  /**
   * Backend 'webgpu': compile the GPU kernels of every class's methods now, so that the
   * first pass does not include shader compilation (benchmarks call it after creating
   * their objects). Other backends: nothing to do.
   */
  async prepare(): Promise<void> {
    await this.gpu?.prepareAll();
  }

  /** Backend 'webgpu': acquire a GPU device and attach the runner (createRuntime calls this). */
  async attachGpu(options: WebGpuOptions = {}): Promise<void> {
    if (this.gpu !== null) return;
    const { GpuRunner } = await import('./webgpu/runner.js');
    this.gpu = await GpuRunner.create(this, options as GpuRunnerOptions); // create() checks options.gpu
  }

  /**
   * Backend 'webgpu': run the pass on the GPU if `method` has a WGSL kernel (true); else
   * the heap is brought to the host and the caller runs the pass on the CPU (false).
   */
  private async gpuDo(cls: SmmoClass, method: string, args: readonly unknown[]): Promise<boolean> {
    if (this.closed) throw new UsageError('parallelDo: the runtime is closed');
    if (this.gpu === null) throw new UsageError("backend 'webgpu': create the runtime with createRuntime(), which acquires the GPU");
    const t = this.checkDoAll(this.main, cls, method, args);
    this.enter(`parallelDo(${t.name}, '${method}')`);
    try {
      const onGpu = await this.gpu.tryParallelDo(cls, method, args);
      if (onGpu) for (const id of t.concrete) this.main.backendUse.set(`${this.table.types[id]!.name}.${method}`, 'webgpu');
      return onGpu;
    } finally {
      this.inFlight = null;
    }
  }

  /** The operations methods see as `this.runtime`. */
  get context(): SmmoContext {
    return this.main;
  }

  // ---------------------------------------------------------------- objects

  /** Create an object of concrete class `cls`; unspecified fields are 0 / false / null. */
  create<C extends SmmoClass>(cls: C, init?: Init<InstanceType<C>>): InstanceType<C> {
    return this.live('create').create(cls, init);
  }

  /** Delete an object. Throws InvalidHandleError for an object deleted before. */
  destroy(obj: SmmoObject): void {
    this.live('destroy').destroy(obj);
  }

  /** A view of the object named by `handle` (always checked: live and of class `cls`). */
  get<C extends SmmoClass>(cls: C, handle: number): InstanceType<C> {
    return this.live('get').getChecked(cls, handle);
  }

  /** Live objects of `cls` and its subclasses. */
  count(cls: SmmoClass): number {
    return this.live('count').count(cls);
  }

  // ---------------------------------------------------------------- do-alls

  /**
   * Create `n` objects of `cls` with coalesced allocation (§4.2). `init` is a function
   * `(obj, index) => void`, or the name of a method called as `obj[init](index, ...args)`.
   */
  async parallelNew<C extends SmmoClass>(
    cls: C,
    n: number,
    init?: ((obj: InstanceType<C>, index: number) => void) | MethodName<InstanceType<C>>,
    ...args: unknown[]
  ): Promise<void> {
    if (this.gpu?.gpuNewer) await this.sync(); // new objects go into the host heap: bring it up to date first
    const ctx = this.live('parallelNew');
    const t = ctx.concreteTypeOf(cls, 'parallelNew');
    if (!Number.isInteger(n) || n < 0) throw new UsageError(`parallelNew(${t.name}): n must be a non-negative integer, got ${n}`);
    if (ctx.pass) throw new UsageError('parallelNew cannot be called inside a do-all');
    if (typeof init === 'string' && typeof (t.cls.prototype as unknown as Record<string, unknown>)[init] !== 'function') {
      throw new UsageError(`parallelNew(${t.name}): ${t.name} has no method '${init}'`);
    }
    if (init !== undefined && typeof init !== 'string' && typeof init !== 'function') {
      throw new UsageError(`parallelNew(${t.name}): init must be a function or a method name, got ${typeof init}`);
    }
    const bad = unclonableArg(args);
    if (bad !== null)
      throw new UsageError(`parallelNew(${t.name}): ${bad}; arguments are passed by value (numbers, strings, plain data, smmo objects)`);
    checkArgsSize(`parallelNew(${t.name})`, typeof init === 'string' ? init : '', args);
    ctx.checkArgViews(args, `parallelNew(${t.name})`); // objects of this runtime; checked: live and not stale
    if (n === 0) return;
    const operation = `parallelNew(${t.name}${typeof init === 'string' ? `, '${init}'` : ''})`;
    this.enter(operation);
    try {
      if (typeof init === 'function') {
        // A function cannot cross threads: it runs here, on the calling thread, whatever
        // `threads` is (allocation is still coalesced per block).
        this.timedPass(operation, ctx, () => this.newWithFunction(ctx, t.id, n, init as (obj: SmmoObject, index: number) => void));
        return;
      }
      const call = { method: init ?? '', args };
      if (this.pool !== null && n >= this.inlineBlocks * 32 && n > 32) {
        const chunk = Math.min(4096, Math.max(32, Math.ceil(n / (this.threads * 8) / 32) * 32));
        await this.pool.run({ kind: KIND_NEW, typeId: t.id, from: 0, to: n, chunk, call, lists: null, operation }, ctx);
        return;
      }
      const out = new Uint32Array(Math.min(n, 4096));
      this.timedPass(operation, ctx, () => {
        for (let done = 0; done < n; done += out.length) {
          const failed = newObjects(ctx, t.id, call, out, Math.min(out.length, n - done), done);
          if (failed !== null) throw this.methodError(t.id, call.method, failed.handle, failed.error);
        }
      });
    } finally {
      ctx.allocator.flushKept();
      this.inFlight = null;
    }
  }

  private newWithFunction(ctx: ThreadContext, typeId: number, n: number, init: (obj: SmmoObject, index: number) => void): void {
    const out = new Uint32Array(Math.min(n, 4096));
    for (let done = 0; done < n; done += out.length) {
      const failed = newObjects(ctx, typeId, init, out, Math.min(out.length, n - done), done);
      if (failed !== null) throw this.methodError(typeId, '(init function)', failed.handle, failed.error);
    }
  }

  /** Wrap what an init threw on the calling thread; allocation errors (handle 0) pass through unwrapped. */
  private methodError(typeId: number, method: string, handle: number, error: unknown): Error {
    if (handle === 0 && error instanceof SmmoError) return error;
    return new MethodError(this.table.types[typeId]!.name, method, handle, 0, error);
  }

  /**
   * Run `method` on every object of `cls` and its subclasses that exists now (one pass
   * per concrete class). Objects created during the pass are not visited; a method may
   * delete `this` and objects of other classes.
   */
  async parallelDo<C extends SmmoClass, K extends MethodName<InstanceType<C>>>(
    cls: C,
    method: K,
    ...args: MethodArgs<InstanceType<C>, K>
  ): Promise<void> {
    if (this.backend === 'webgpu' && (await this.gpuDo(cls, method, args))) return;
    if (this.pool === null) {
      this.doAllOnCallingThread(cls, method, args);
      return;
    }
    const ctx = this.live('parallelDo');
    const t = this.checkDoAll(ctx, cls, method, args);
    this.enter(`parallelDo(${t.name}, '${method}')`);
    try {
      const lists = ctx.snapshot();
      const call = { method, args };
      for (const id of t.concrete) {
        const from = lists[2 * id]!;
        const blocks = lists[2 * id + 1]!;
        if (blocks === 0) continue;
        const key = `${id}:${method}`; // of inlineCost and workerCost
        if (blocks < 2 || (blocks < this.inlineBlocks && (this.inlineCost.get(key) ?? 0) * blocks < this.inlineMicros)) {
          this.runInline(ctx, lists, id, method, args, from, from + blocks);
          continue;
        }
        // Several claims per thread balance uneven blocks; ≤ 64 blocks per claim keep the tail short.
        let chunk = Math.max(1, Math.min(64, Math.floor(blocks / (this.threads * 8))));
        // A heavy method claims fewer blocks at a time, so that the last claims end together:
        // about CLAIM_MICROS of work per claim, from the thread-µs per block its last pass on
        // the workers took (nbody's computeForce at 20 000 bodies: ~18 ms per block, so one
        // block per claim instead of four; the idle tail at the end of a pass was up to one claim).
        const perBlock = this.workerCost.get(key);
        if (perBlock !== undefined) chunk = Math.max(1, Math.min(chunk, Math.ceil(CLAIM_MICROS / perBlock)));
        const operation = `parallelDo(${this.table.types[id]!.name}, '${method}')`;
        ctx.kernels.note(id, method); // stats().backend names it even if the workers ran every block
        ctx.compiler?.compile(id, method, ctx.compileUse); // likewise stats().compiled
        const t0 = performance.now();
        await this.pool.run({ kind: KIND_DO, typeId: id, from, to: from + blocks, chunk, call, lists, operation }, ctx);
        const micros = (performance.now() - t0) * 1000;
        this.workerCost.set(key, (micros * this.threads) / blocks);
        // A small pass sent to the workers by its estimate (inlineMicros) that took less
        // than inlineMicros with the fork-join included was over-estimated (e.g. its first
        // run included compiling the method): forget the estimate, measure inline again.
        if (blocks < this.inlineBlocks && micros < this.inlineMicros) this.inlineCost.delete(key);
      }
    } finally {
      ctx.allocator.flushKept();
      this.inFlight = null;
    }
  }

  /**
   * The do-all of parallelDo, synchronously, on the calling thread only (worker threads,
   * if any, take no part): for callers that cannot await, such as a game loop or a
   * benchmark harness. A throw from the method becomes a MethodError naming the class,
   * the method and the object's handle, as on worker threads. Not allowed while a
   * parallelDo or parallelNew is running, nor inside a do-all.
   */
  doAll<C extends SmmoClass, K extends MethodName<InstanceType<C>>>(cls: C, method: K, ...args: MethodArgs<InstanceType<C>, K>): void {
    this.doAllOnCallingThread(cls, method, args);
  }

  /** doAll with the arguments as an array (parallelDo, the GPU runner's fallback). */
  doAllOnCallingThread(cls: SmmoClass, method: string, args: readonly unknown[]): void {
    const ctx = this.live('doAll');
    if (this.inFlight !== null) throw new UsageError(`doAll(${cls.name}, '${method}'): ${this.inFlight} is still running; await it first`);
    const t = this.checkDoAll(ctx, cls, method, args);
    const lists = ctx.snapshot();
    try {
      for (const id of t.concrete) {
        const from = lists[2 * id]!;
        this.runInline(ctx, lists, id, method, args, from, from + lists[2 * id + 1]!);
      }
    } finally {
      ctx.allocator.flushKept();
    }
  }

  private checkDoAll(ctx: ThreadContext, cls: SmmoClass, method: string, args: readonly unknown[]): TypeLayout {
    const t = ctx.typeOf(cls, 'parallelDo');
    if (ctx.pass) throw new UsageError('parallelDo cannot be called inside a do-all (use deviceDo)');
    // Every concrete class the pass visits must implement the method (an abstract
    // method of `cls` exists only on its subclasses' prototypes).
    for (const id of t.concrete) {
      const c = this.table.types[id]!;
      if (typeof (c.cls.prototype as unknown as Record<string, unknown>)[method] !== 'function') {
        throw new UsageError(`parallelDo(${t.name}): ${c.name} has no method '${String(method)}'`);
      }
    }
    const bad = unclonableArg(args);
    if (bad !== null)
      throw new UsageError(
        `parallelDo(${t.name}, '${method}'): ${bad}; arguments are passed by value (numbers, strings, plain data, smmo objects)`,
      );
    checkArgsSize(`parallelDo(${t.name}, '${method}')`, method, args);
    ctx.checkArgViews(args, `parallelDo(${t.name}, '${method}')`); // objects of this runtime; checked: live and not stale
    return t;
  }

  /** One concrete type's pass on the calling thread. */
  private runInline(
    ctx: ThreadContext,
    lists: Int32Array,
    id: number,
    method: string,
    args: readonly unknown[],
    from: number,
    to: number,
  ): void {
    const pass = { lists, typeId: id, current: null as SmmoObject | null };
    ctx.pass = pass;
    const t0 = this.pool === null ? 0 : performance.now();
    try {
      this.timedPass(`parallelDo(${this.table.types[id]!.name}, '${method}')`, ctx, () => ctx.runBlocks(id, method, args, from, to));
      if (this.pool !== null && to > from) this.inlineCost.set(`${id}:${method}`, ((performance.now() - t0) * 1000) / (to - from));
    } catch (e) {
      if (e instanceof PassTimeoutError) throw e;
      throw new MethodError(this.table.types[id]!.name, method, pass.current === null ? 0 : pass.current.__h, 0, e);
    } finally {
      ctx.pass = null;
    }
  }

  /**
   * Run calling-thread work of one pass under passTimeout (runtime/timed.ts; no timeout:
   * a plain call). An interrupted pass ran none of its own cleanup (T2): the pass marker
   * and kept blocks are reset here, the heap is validated, and a PassTimeoutError says so.
   */
  private timedPass<T>(operation: string, ctx: ThreadContext, fn: () => T): T {
    try {
      return timed(fn, this.passTimeout);
    } catch (e) {
      if (!(e instanceof TimedOut)) throw e;
      ctx.pass = null;
      try {
        ctx.allocator.flushKept();
      } catch {
        // an allocator operation cut in half: the check below says what is wrong
      }
      let check: HeapCorruptionError | null = null;
      try {
        this.heap.validate();
      } catch (v) {
        if (!(v instanceof HeapCorruptionError)) throw v;
        check = v;
      }
      throw new PassTimeoutError(operation, this.passTimeout!, [0], check);
    }
  }

  /** Sequential for-each over all objects of `cls` (outside do-alls: all live objects). */
  deviceDo<C extends SmmoClass>(cls: C, fn: (obj: InstanceType<C>) => void): void {
    this.live('deviceDo').deviceDo(cls, fn);
  }

  // ---------------------------------------------------------------- inspection

  /** Objects and blocks per class, heap usage and fragmentation. */
  stats(): RuntimeStats {
    const ctx = this.live('stats');
    ctx.allocator.flushKept(); // blocks kept from create/destroy outside passes are not in use
    const types: Record<string, TypeStats> = {};
    let usedBlocks = 0;
    let slots = 0;
    let objects = 0;
    for (const id of this.table.concreteIds) {
      const t = this.table.types[id]!;
      const o = ctx.occupancy(id);
      types[t.name] = { objects: o.objects, blocks: o.blocks, slotsPerBlock: t.slots };
      usedBlocks += o.blocks;
      slots += o.slots;
      objects += o.objects;
    }
    return {
      heap: {
        bytes: this.heap.plan.heapBytes,
        blockBytes: this.heap.plan.blockBytes,
        blocks: this.heap.numBlocks - 1,
        usedBlocks,
        fragmentation: slots === 0 ? 0 : (slots - objects) / slots,
      },
      types,
      compiled: Object.fromEntries(
        [...ctx.compileUse].map(([k, c]): [string, CompiledMethodStats] => [
          k,
          c.compiled
            ? c.notes.length > 0
              ? { compiled: true, javascript: [...new Set(c.notes)] }
              : { compiled: true }
            : { compiled: false, reason: c.reason },
        ]),
      ),
      backend: { name: this.backend, methods: Object.fromEntries(ctx.backendUse), ...(this.gpu ? { webgpu: this.gpu.stats } : {}) },
    };
  }

  /** Live objects per concrete class, e.g. { Fish: 10, Shark: 3 }. */
  objectCounts(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [name, s] of Object.entries(this.stats().types)) out[name] = s.objects;
    return out;
  }

  /** Check every heap invariant (heap.ts H1–H5); throws HeapCorruptionError. */
  validateHeap(): void {
    const ctx = this.live('validateHeap');
    if (ctx.pass) throw new UsageError('validateHeap cannot run inside a do-all');
    ctx.allocator.flushKept();
    this.heap.validate();
  }

  /** Release the runtime and end its worker threads. Idempotent. */
  async close(): Promise<void> {
    if (!this.closed) this.main.dispose();
    this.closed = true;
    const gpu = this.gpu;
    this.gpu = null;
    await gpu?.close({ download: false });
    await this.pool?.close();
  }
}

/** Create a runtime (with threads > 1: and wait until its worker threads have started). */
export async function createRuntime(options: RuntimeOptions): Promise<Runtime> {
  const rt = new Runtime(options);
  try {
    await rt.start();
    if (rt.backend === 'webgpu') await rt.attachGpu(options.webgpu);
  } catch (e) {
    await rt.close();
    throw e;
  }
  return rt;
}
