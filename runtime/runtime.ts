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
import type { Init, SmmoContext } from './schema.js';
import { PassRunner } from './doall.js';
import { checkDefragFactor, defragment, defragTypes } from './defrag.js';
import { DEFAULT_DEFRAG_FACTOR, type DefragResult, type ReorderResult } from './defrag-result.js';
import { keyField, reorder } from './reorder.js';
import { DefragScratch } from './defrag-lanes.js';
import { parallelDefragment } from './defrag-parallel.js';
import { defragLanesOption, type DefragLanes } from './defrag-wasm.js';
import { UsageError } from './errors.js';
import { IN_SMMO_WORKER, MAX_ARG_BYTES, oversizeArgs, unclonableArg, type ExecutorFactory, type PassExecutor } from './executor.js';
import { Heap } from './heap.js';
import { configureBackend } from './kernels.js';
import { checkBackend, type Backend } from './kernel-spec.js';
import { DEFAULT_KEEP_BLOCKS, planTypes, SLOT_BITS, type FieldLayout, type TypeLayout, type TypeTable } from './layout.js';
import { checkAllocatorOptions, checkModules, checkOptions, MAX_THREADS, parseSize, type RuntimeOptions } from './options.js';
import { DEFAULT_INLINE_BLOCKS, DEFAULT_INLINE_MICROS, PassScheduler } from './schedule.js';
import type { SmmoClass, SmmoObject } from './schema.js';
import { ThreadContext } from './thread.js';
import { LIVE_HANDLES } from './rank-table.js';
import type { GpuRunnerStats, WebGpuOptions } from './webgpu/options.js';
import type { GpuRunner, GpuRunnerOptions } from './webgpu/runner.js';

export type { AllocatorOptions, RuntimeOptions } from './options.js';
export { MAX_THREADS, parseSize } from './options.js';
export { DEFAULT_INLINE_BLOCKS, DEFAULT_INLINE_MICROS } from './schedule.js';

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
 * Arguments of a pass must fit MAX_ARG_BYTES serialized (workers read them from shared
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
      `${operation}: arguments take ${size} bytes serialized; at most ${MAX_ARG_BYTES} (16 KiB) can be passed to a pass, ` +
        'on one thread as on worker threads: keep large data in objects of the heap, or in a module that the methods import',
    );
  }
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
  /** Which lanes rewrite references in defrag (RuntimeOptions.wasm.defragLanes; 'ts' unless backend 'wasm' opts in). */
  private readonly defragLanes: DefragLanes;
  /** @internal The calling thread's context (also what methods see as `this.runtime` here). */
  readonly main: ThreadContext;
  /** @internal The executor of passes on several threads (threads > 1: the worker pool), null on one thread. */
  readonly pool: PassExecutor | null;
  /** See RuntimeOptions.passTimeout (undefined: no limit). */
  readonly passTimeout: number | undefined;
  /** Where each pass runs (schedule.ts). */
  private readonly scheduler: PassScheduler;
  /** Per type id: the methods checkDoAll found on every concrete class of the type. */
  private readonly methodsChecked: Set<string>[] = [];

  /** How passes run (doall.ts). */
  private readonly passes: PassRunner;
  private closed = false;
  /**
   * @internal Backend 'webgpu': the GPU side (createRuntime attaches it); null otherwise.
   * Not in the published declarations (they name no WebGPU type): rt.stats().backend.webgpu
   * is the public view of it.
   */
  gpu: GpuRunner | null = null;
  /** Set while a parallelDo / parallelNew runs (they must be awaited one at a time). */
  private inFlight: string | null = null;
  /** parallelDefrag's scratch buffer, shared with the workers (runtime/defrag-lanes.ts); null with one thread. */
  private readonly defragScratch: DefragScratch | null;
  /** reorder's scratch buffer on a runtime of one thread (made by the first call, then reused). */
  private reorderScratch: DefragScratch | null = null;

  /**
   * @internal Use createRuntime(). `executors` makes the executor of a runtime with
   * threads > 1 (the package's createRuntime passes the worker pool's); without it only
   * threads: 1 is possible.
   */
  constructor(options: RuntimeOptions, executors: ExecutorFactory | null = null) {
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
    if (threads > 1 && executors === null) {
      throw new UsageError(`threads: ${threads} needs worker threads: create the runtime with createRuntime() from 'smmo'`);
    }
    const inline = options.inlineBlocks ?? DEFAULT_INLINE_BLOCKS;
    if (!Number.isInteger(inline) || inline < 0) throw new UsageError(`inlineBlocks must be a non-negative integer, got ${inline}`);
    const micros = options.inlineMicros ?? DEFAULT_INLINE_MICROS;
    if (!(typeof micros === 'number' && micros >= 0)) throw new UsageError(`inlineMicros must be a non-negative number, got ${micros}`);
    this.scheduler = new PassScheduler(threads, inline, micros);
    this.threads = threads;
    this.passTimeout = options.passTimeout;
    this.checked = options.checked === true;
    const variant = checkAllocatorOptions(options);
    this.table = planTypes(options.classes, {
      checked: this.checked,
      bitmapAlloc: variant.bitmapAlloc,
      blockSize: options.blockSize ?? 'smallest',
    });
    const keep = options.keepBlocks ?? (variant.bitmapAlloc ? 0 : DEFAULT_KEEP_BLOCKS);
    if (!Number.isInteger(keep) || keep < 0 || keep > 1024)
      throw new UsageError(`keepBlocks must be an integer from 0 to 1024, got ${keep}`);
    const backend = checkBackend(options.backend);
    this.defragLanes = defragLanesOption(options.wasm?.defragLanes, backend);
    const compile = options.compile ?? true;
    this.heap = Heap.create(this.table, parseSize(options.heap ?? 64 << 20), {
      threads,
      keepBlocks: keep,
      rotation: variant.rotation,
      coalescing: variant.coalescing,
      ownFirstBlock: variant.ownFirstBlock,
      wasm: options.wasm ?? {},
    });
    try {
      this.main = new ThreadContext(this.heap, this.table, this.checked, options.seed ?? 1, compile);
    } catch (e) {
      this.heap.dispose();
      throw e;
    }
    this.main.allocator.setOwnFirstBlock(threads > 1 && variant.ownFirstBlock);
    this.backend = configureBackend(this.main, backend);
    this.defragScratch = threads === 1 || executors === null ? null : new DefragScratch(this.heap.numBlocks);
    this.pool =
      threads === 1 || executors === null
        ? null
        : executors(this.heap, this.table, {
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
            ...(this.defragScratch !== null ? { defragScratch: this.defragScratch.buffer } : {}),
          });
    this.passes = new PassRunner(this.heap, this.table, this.main, this.scheduler, this.pool, this.passTimeout);
  }

  /** See RuntimeOptions.inlineBlocks; may be changed between passes (benchmarks tune it). */
  get inlineBlocks(): number {
    return this.scheduler.inlineBlocks;
  }
  set inlineBlocks(v: number) {
    this.scheduler.inlineBlocks = v;
  }

  /**
   * Blocks listed by a do-all's snapshot from which the workers copy its iteration words
   * (runtime/schedule.ts P7; default 8192); tests and benchmarks may change it between passes.
   */
  get snapshotCopyBlocks(): number {
    return this.scheduler.copyBlocks;
  }
  set snapshotCopyBlocks(v: number) {
    if (!Number.isInteger(v) || v < 2) throw new UsageError(`snapshotCopyBlocks must be an integer ≥ 2, got ${String(v)}`);
    this.scheduler.copyBlocks = v;
  }

  /** See RuntimeOptions.inlineMicros. */
  get inlineMicros(): number {
    return this.scheduler.inlineMicros;
  }
  set inlineMicros(v: number) {
    this.scheduler.inlineMicros = v;
  }

  /** Start the worker threads (createRuntime awaits this; otherwise the first pass does). */
  async start(): Promise<void> {
    await this.pool?.start();
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

  /**
   * One field of one object (an inline array's element `index`), read without bringing
   * the whole heap to the host: on backend 'webgpu', while the GPU holds newer data, only
   * the object's block is copied back (a host loop that tests a flag between GPU passes
   * reads a few hundred bytes, not the heap); elsewhere the field itself. A reference reads
   * as its handle, or null. The handle is checked as get() checks it (InvalidHandleError);
   * an unknown field, or an index missing, extra or out of range, is a UsageError.
   */
  async readField(cls: SmmoClass, handle: number, field: string, index?: number): Promise<number | boolean | null> {
    const { obj, f } = await this.fieldAccess('readField', cls, handle, field, index);
    const v = f.length === 0 ? obj[field] : (obj[field] as { get(i: number): unknown }).get(index!);
    return v !== null && typeof v === 'object' ? (v as SmmoObject).handle : (v as number | boolean | null);
  }

  /**
   * One field of one object := value, without a whole-heap download or upload (backend
   * 'webgpu': the object's block read back while the GPU holds newer data, and the
   * changed word written to the GPU's copy). A number or a boolean, as the field's setter
   * takes it; a reference field is a UsageError here (set it through the object after
   * `await rt.sync()`). Checks as readField.
   */
  async writeField(cls: SmmoClass, handle: number, field: string, value: number | boolean, index?: number): Promise<void> {
    const { obj, f, at } = await this.fieldAccess('writeField', cls, handle, field, index);
    if (f.kind === 'ref')
      throw new UsageError(
        `writeField: ${f.declaredIn}.${field} is a reference; set it through the object (get()) after \`await rt.sync()\``,
      );
    if (f.length === 0) obj[field] = value;
    else (obj[field] as { set(i: number, v: unknown): void }).set(index!, value);
    this.gpu?.pushBytes(at, at + f.elemBytes);
  }

  /** readField's and writeField's checks; on 'webgpu' with newer GPU data, the object's block fetched first. */
  private async fieldAccess(
    where: string,
    cls: SmmoClass,
    handle: number,
    field: string,
    index: number | undefined,
  ): Promise<{ obj: Record<string, unknown>; f: FieldLayout; at: number }> {
    if (this.closed) throw new UsageError(`${where}: the runtime is closed`);
    const ctx = this.main;
    const t = ctx.typeOf(cls, where);
    const heap = this.heap;
    const inHeap = typeof handle === 'number' && Number.isInteger(handle) && handle >= 32 && handle < heap.numBlocks * 32;
    // Out of range: checkHandle below says so, without a GPU read.
    if (this.gpu?.gpuNewer && inHeap) await this.gpu.fetchBlock(handle >>> SLOT_BITS);
    const ct = this.table.types[ctx.checkHandle(handle, t.id, `${where}(${t.name})`)]!;
    const f = ct.fields.find((x) => x.name === field);
    if (f === undefined)
      throw new UsageError(`${where}: ${ct.name} has no field '${field}' (its fields: ${ct.fields.map((x) => x.name).join(', ')})`);
    if (f.length === 0 && index !== undefined) throw new UsageError(`${where}: ${ct.name}.${field} is not an inline array; pass no index`);
    if (f.length > 0 && !(Number.isInteger(index) && index! >= 0 && index! < f.length))
      throw new UsageError(
        `${where}: ${ct.name}.${field} is an inline array of ${f.length}; pass an index 0 … ${f.length - 1}, got ${String(index)}`,
      );
    const at = heap.blockOffset(handle >>> SLOT_BITS) + f.offsets[index ?? 0]! + (handle & 31) * f.elemBytes;
    return { obj: ctx.view(handle) as unknown as Record<string, unknown>, f, at };
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
      // An init function cannot cross threads: it runs on the calling thread (doall.ts).
      const how = typeof init === 'function' ? (init as (obj: SmmoObject, index: number) => void) : { method: init ?? '', args };
      await this.passes.parallelNew(t, n, how, operation);
    } finally {
      this.inFlight = null;
    }
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
      await this.passes.parallelDo(t, method, args);
    } finally {
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
    this.passes.doAllHere(t, method, args);
  }

  private checkDoAll(ctx: ThreadContext, cls: SmmoClass, method: string, args: readonly unknown[]): TypeLayout {
    const t = ctx.typeOf(cls, 'parallelDo');
    if (ctx.pass) throw new UsageError('parallelDo cannot be called inside a do-all (use deviceDo)');
    // Every concrete class the pass visits must implement the method (an abstract
    // method of `cls` exists only on its subclasses' prototypes). Checked once per class
    // and method: a do-all is often called thousands of times a second (an ECS system).
    const known = this.methodsChecked[t.id] ?? (this.methodsChecked[t.id] = new Set());
    if (!known.has(method)) {
      for (const id of t.concrete) {
        const c = this.table.types[id]!;
        if (typeof (c.cls.prototype as unknown as Record<string, unknown>)[method] !== 'function') {
          throw new UsageError(`parallelDo(${t.name}): ${c.name} has no method '${String(method)}'`);
        }
      }
      known.add(method);
    }
    if (args.length === 0) return t; // nothing to clone, to size or to check
    const bad = unclonableArg(args);
    if (bad !== null)
      throw new UsageError(
        `parallelDo(${t.name}, '${method}'): ${bad}; arguments are passed by value (numbers, strings, plain data, smmo objects)`,
      );
    checkArgsSize(`parallelDo(${t.name}, '${method}')`, method, args);
    ctx.checkArgViews(args, `parallelDo(${t.name}, '${method}')`); // objects of this runtime; checked: live and not stale
    return t;
  }

  /** The live objects of `cls` by handle, from the allocation words (rank-table.ts R5). */
  [LIVE_HANDLES](cls: SmmoClass): Uint32Array {
    return this.live('rankTable')[LIVE_HANDLES](cls);
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

  /**
   * CompactGpu defragmentation (runtime/defrag.ts): merge the blocks of `cls` (omitted: every
   * concrete class; abstract: its concrete subclasses; an array: each of them) that are at most n/(n+1) full,
   * stop-the-world on the calling thread, between do-alls only. Objects move: apply the
   * result's remap() to every handle kept outside the heap; views made before are stale.
   */
  defrag(cls?: SmmoClass | readonly SmmoClass[], n: number = DEFAULT_DEFRAG_FACTOR): DefragResult {
    const ctx = this.live('defrag');
    if (ctx.pass) throw new UsageError('defrag cannot be called inside a do-all: call it between do-alls');
    if (this.inFlight !== null) throw new UsageError(`defrag: ${this.inFlight} is still running; await it first`);
    checkDefragFactor(n);
    const t = cls === undefined ? undefined : (Array.isArray(cls) ? cls : [cls]).map((c: SmmoClass) => ctx.typeOf(c, 'defrag'));
    const lanes = this.defragLanes; // 'wasm': the rewrite on WebAssembly lanes (runtime/defrag-wasm.ts)
    const result = defragment({ heap: this.heap, table: this.table, allocator: ctx.allocator, lanes }, defragTypes(this.table, t), n);
    this.gpu?.hostWrote(); // objects moved in the host heap
    return result;
  }

  /**
   * Put the objects of `cls` (abstract: each of its concrete subclasses; an array: each of
   * them) into the order of their field `by` — a reference (objects ordered by the handle
   * they name, null last) or an integer field — packed into the class's first blocks, on
   * the calling thread, between do-alls only (runtime/reorder.ts). A do-all then visits them
   * in that order: reordering agents by their cell makes a pass over them read the cells in
   * memory order. Equal keys keep their order; field values and references are kept
   * (every reference to a moved object is rewritten). Objects move: apply the result's
   * remap() to every handle kept outside the heap; views made before are stale.
   */
  reorder(cls: SmmoClass | readonly SmmoClass[], by: string): ReorderResult {
    const ctx = this.live('reorder');
    if (ctx.pass) throw new UsageError('reorder cannot be called inside a do-all: call it between do-alls');
    if (this.inFlight !== null) throw new UsageError(`reorder: ${this.inFlight} is still running; await it first`);
    if (cls === undefined || cls === null) throw new UsageError('reorder(cls, by): give the class (or classes) to reorder');
    const named = (Array.isArray(cls) ? cls : [cls]).map((c: SmmoClass) => ctx.typeOf(c, 'reorder'));
    const types = defragTypes(this.table, named);
    for (const t of types) keyField(t, by); // every class checked before the scratch is made (reorder() checks again before anything moves)
    // The workers' scratch is idle between do-alls; a runtime of one thread keeps one for reorder.
    const scratch = this.defragScratch ?? (this.reorderScratch ??= new DefragScratch(this.heap.numBlocks));
    const result = reorder({ heap: this.heap, table: this.table, allocator: ctx.allocator, scratch }, types, by);
    this.gpu?.hostWrote(); // objects moved in the host heap
    return result;
  }

  /**
   * defrag with its copy and rewrite phases on the worker threads too (runtime/defrag-parallel.ts):
   * the same heap, remap and statistics as defrag (but the times and `stats.threads`). As
   * parallelDo to doAll: it must be awaited, and nothing else may run until it resolves; on a
   * runtime of one thread it is defrag. Phases of fewer than inlineBlocks lanes (source blocks
   * to copy, blocks to rewrite) run on the calling thread.
   */
  async parallelDefrag(cls?: SmmoClass | readonly SmmoClass[], n: number = DEFAULT_DEFRAG_FACTOR): Promise<DefragResult> {
    const onGpu = this.gpu !== null; // backend 'webgpu': on the heap's GPU copy
    if (onGpu) return this.gpuDefrag(cls, n);
    if (this.pool === null || this.defragScratch === null) return this.defrag(cls, n);
    const ctx = this.live('parallelDefrag');
    if (ctx.pass) throw new UsageError('parallelDefrag cannot be called inside a do-all: call it between do-alls');
    checkDefragFactor(n, 'parallelDefrag');
    const t = cls === undefined ? undefined : (Array.isArray(cls) ? cls : [cls]).map((c: SmmoClass) => ctx.typeOf(c, 'parallelDefrag'));
    this.enter('parallelDefrag');
    try {
      const lanes = this.defragLanes; // 'wasm': the rewrite on WebAssembly lanes (runtime/defrag-wasm.ts)
      const host = { heap: this.heap, table: this.table, allocator: ctx.allocator, lanes } as const;
      const types = defragTypes(this.table, t);
      return await parallelDefragment(host, types, n, this.defragScratch, this.pool, ctx, this.scheduler.inlineBlocks);
    } finally {
      this.inFlight = null;
      this.gpu?.hostWrote(); // objects moved in the host heap
    }
  }

  /**
   * Backend 'webgpu': parallelDefrag on the heap's GPU copy (runtime/webgpu/gpu-defrag.ts):
   * the host plans and reserves over the downloaded block headers, the GPU copies and
   * rewrites; the same heap, remap and statistics as defrag (but the times, `device` and
   * `transfer`). The GPU may hold newer data: no sync() needed.
   */
  private async gpuDefrag(cls: SmmoClass | readonly SmmoClass[] | undefined, n: number): Promise<DefragResult> {
    if (this.closed) throw new UsageError('parallelDefrag: the runtime is closed');
    const ctx = this.main;
    if (ctx.pass) throw new UsageError('parallelDefrag cannot be called inside a do-all: call it between do-alls');
    if (this.inFlight !== null) throw new UsageError(`parallelDefrag: ${this.inFlight} is still running; await it first`);
    checkDefragFactor(n, 'parallelDefrag');
    const t = cls === undefined ? undefined : (Array.isArray(cls) ? cls : [cls]).map((c: SmmoClass) => ctx.typeOf(c, 'parallelDefrag'));
    this.enter('parallelDefrag');
    try {
      const { gpuDefragment } = await import('./webgpu/gpu-defrag.js');
      const host = { heap: this.heap, table: this.table, allocator: ctx.allocator };
      return await gpuDefragment(this.gpu!, host, defragTypes(this.table, t), n);
    } finally {
      this.inFlight = null;
    }
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

/**
 * @internal Create a runtime and wait until it is ready (its worker threads started, its
 * GPU acquired). The package's entry (index.ts) gives it the worker pool as `executors`.
 */
export async function createRuntimeWith(options: RuntimeOptions, executors: ExecutorFactory | null): Promise<Runtime> {
  const rt = new Runtime(options, executors);
  try {
    await rt.start();
    if (rt.backend === 'webgpu') await rt.attachGpu(options.webgpu);
  } catch (e) {
    await rt.close();
    throw e;
  }
  return rt;
}
