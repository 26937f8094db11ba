/**
 * The options of createRuntime: what each means (RuntimeOptions), and the checks that
 * turn a typo or a value of the wrong kind into a UsageError naming it.
 */
import type { ResourceLimits } from 'node:worker_threads';
import { UsageError } from './errors.js';
import type { SmmoClass } from './schema.js';
import { closestName } from './suggest.js';
import type { WasmOptions } from './wasm-options.js';
import type { WebGpuOptions } from './webgpu/options.js';

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
  /**
   * Which class a block is sized for. 'smallest' (default, the paper's §3): the smallest
   * class fills the block's 32 slots and larger classes get fewer, so every block is
   * densely used. 'largest': the largest class fills 32 slots, so every class gets 32 —
   * a full virtual warp per block, fewer blocks per pass — and the blocks of smaller
   * classes leave part of their bytes unused (memory for speed; docs/benchmarks.md
   * "Block size" has the measurements). Not with allocator.bitmapAlloc, whose blocks hold
   * one object each.
   */
  blockSize?: 'smallest' | 'largest';
  /** A worker thread that has had no pass for this long stops waiting (so an idle process can exit). Default 250 ms. */
  workerIdleMs?: number;
  /**
   * Busy-wait this long for the next pass (workers) and at the barrier (calling thread)
   * before sleeping in Atomics.wait. Default 0: on cores shared with other jobs the
   * spinning threads take the cores the others need. Worth trying on dedicated cores:
   * bench/scaling.ts measures 0, 20 and 200 (figures in docs/benchmarks.md, "Scaling").
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
  /**
   * Each thread of a multi-threaded runtime takes a block of its own (a new one from the
   * free blocks) for its first allocation of a class in every pass, instead of the partly
   * filled blocks every thread searches (the allocator core's K5). Threads then never share
   * a block they are filling: allocation-only passes with few partly filled blocks get
   * faster (linux-scalability at 16 threads: about 2×, docs/benchmarks.md), but every
   * pass opens threads × classes new blocks, and programs that delete objects spread them
   * over more blocks (wa-tor's agent fragmentation after 500 iterations at 16 threads: 71 %
   * with it, 16 % without). Ignored on one thread; not with bitmapAlloc (whose every
   * object takes a block from the free blocks already). Default false.
   */
  ownFirstBlock?: boolean;
}

/** Check RuntimeOptions.allocator and the options it constrains. */
export function checkAllocatorOptions(options: RuntimeOptions): Required<AllocatorOptions> {
  const a = options.allocator ?? {};
  if (typeof a !== 'object' || a === null)
    throw new UsageError(`allocator must be an object such as { rotation: false }, got ${String(a)}`);
  for (const key of Object.keys(a)) {
    if (!['rotation', 'coalescing', 'bitmapAlloc', 'ownFirstBlock'].includes(key))
      throw new UsageError(`allocator.${key} is not an allocator option (rotation, coalescing, bitmapAlloc, ownFirstBlock)`);
    const v = (a as Record<string, unknown>)[key];
    if (v !== undefined && typeof v !== 'boolean') throw new UsageError(`allocator.${key} must be true or false, got ${String(v)}`);
  }
  const bitmapAlloc = a.bitmapAlloc === true;
  if (bitmapAlloc) {
    if (a.coalescing === true)
      throw new UsageError('allocator: bitmapAlloc has one object per block, so nothing to coalesce; leave coalescing unset');
    if (options.keepBlocks !== undefined && options.keepBlocks !== 0)
      throw new UsageError('allocator: bitmapAlloc keeps no emptied blocks (each holds one object); leave keepBlocks unset or 0');
    if (a.ownFirstBlock === true)
      throw new UsageError("allocator: bitmapAlloc takes every object's block from the free blocks already; leave ownFirstBlock unset");
    if (options.blockSize === 'largest')
      throw new UsageError("blockSize 'largest': bitmapAlloc blocks hold one object of the largest class already; leave blockSize unset");
    if (options.backend === 'wasm' || options.backend === 'webgpu')
      throw new UsageError(
        `allocator: bitmapAlloc lays objects out without SOA arrays, which the ${options.backend} kernels read; use backend 'ts'`,
      );
  }
  return {
    rotation: a.rotation ?? true,
    coalescing: !bitmapAlloc && (a.coalescing ?? true),
    bitmapAlloc,
    ownFirstBlock: a.ownFirstBlock === true,
  };
}

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
  'blockSize',
  'backend',
  'wasm',
  'webgpu',
] as const satisfies readonly (keyof RuntimeOptions)[];
// Compile-time: OPTION_KEYS lists every key of RuntimeOptions (a new option must be added there).
type MissingOptionKeys = Exclude<keyof RuntimeOptions, (typeof OPTION_KEYS)[number]>;
const _allOptionKeys: [MissingOptionKeys] extends [never] ? true : MissingOptionKeys = true;
void _allOptionKeys;

/** Refuse keys RuntimeOptions does not have and values of the wrong kind (plain JS callers, typos). */
export function checkOptions(options: RuntimeOptions): void {
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
  kind('blockSize', (v) => v === 'smallest' || v === 'largest', "'smallest' or 'largest'");
  kind('wasm', (v) => typeof v === 'object' && v !== null, "an object such as { variant: 'scalar' }");
  kind('webgpu', (v) => typeof v === 'object' && v !== null, "an object such as { adapter: 'software' }");
  kind('resourceLimits', (v) => typeof v === 'object' && v !== null, 'an object of worker_threads resource limits');
}

/** Module URLs for the workers: relative paths would resolve against smmo's own worker file, not the caller's. */
export function checkModules(modules: readonly (string | URL)[]): void {
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
