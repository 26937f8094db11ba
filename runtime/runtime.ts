/**
 * The SMMO runtime (paper §2.1, slides "Full SMMO Interface"): create it with its
 * classes and a heap size, then create/delete objects and run do-alls.
 *
 *   const rt = await createRuntime({ classes: [Body], heapBytes: 64 << 20 });
 *   await rt.parallelNew(Body, 1000, (b, i) => { b.posX = i; });
 *   await rt.parallelDo(Body, 'update', 0.02);
 *   rt.close();
 *
 * parallelDo / parallelNew return promises so that the same user code runs on one
 * thread or on a pool of workers; on one thread the work is done before they return.
 */
import type { Init, SmmoContext } from './context.js';
import { UsageError } from './errors.js';
import { Heap } from './heap.js';
import { planTypes, type TypeTable } from './layout.js';
import type { SmmoClass, SmmoObject } from './schema.js';
import { ThreadContext } from './thread.js';

export interface RuntimeOptions {
  /** Every class the program uses, abstract ancestors included. */
  classes: readonly SmmoClass[];
  /** Heap size in bytes (number) or with a unit ("64MB", "1GiB"). Default 64 MiB. */
  heap?: number | string;
  /** Checked mode: validate handles on every access, reference and delete. Default false. */
  checked?: boolean;
  /** Worker threads. This release runs every pass on the calling thread; only 1 is accepted. */
  threads?: number;
  /** Seed of the allocator's bitmap rotation (deterministic block choice). Default 1. */
  seed?: number;
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
export interface RuntimeStats {
  heap: HeapStats;
  types: Record<string, TypeStats>;
}

const UNITS: Record<string, number> = { '': 1, b: 1, k: 1e3, kb: 1e3, kib: 1024, m: 1e6, mb: 1e6, mib: 1 << 20, g: 1e9, gb: 1e9, gib: 1 << 30 };

/** Parse "64MB", "1GiB", "1048576" into bytes. */
export function parseSize(v: number | string): number {
  if (typeof v === 'number') return v;
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(v);
  const unit = m ? UNITS[m[2]!.toLowerCase()] : undefined;
  if (!m || unit === undefined) throw new UsageError(`bad size '${v}': use a number of bytes or a number with a unit, e.g. 64MB, 512MiB, 2GB`);
  return Math.round(Number(m[1]) * unit);
}

export class Runtime {
  readonly heap: Heap;
  readonly table: TypeTable;
  readonly checked: boolean;
  readonly threads: number;
  /** The calling thread's context (also what methods see as `this.runtime` here). */
  readonly main: ThreadContext;
  private closed = false;

  constructor(options: RuntimeOptions) {
    if (options == null || !Array.isArray(options.classes)) throw new UsageError('createRuntime: options.classes must be an array of classes');
    const threads = options.threads ?? 1;
    if (!Number.isInteger(threads) || threads < 1) throw new UsageError(`threads must be a positive integer, got ${threads}`);
    if (threads !== 1) {
      throw new UsageError(`threads: ${threads} requested, but this build of smmo runs do-alls on the calling thread only; use threads: 1`);
    }
    this.threads = threads;
    this.checked = options.checked === true;
    this.table = planTypes(options.classes);
    this.heap = Heap.create(this.table, parseSize(options.heap ?? 64 << 20));
    this.main = new ThreadContext(this.heap, this.table, this.checked, options.seed ?? 1);
  }

  private live(what: string): ThreadContext {
    if (this.closed) throw new UsageError(`${what}: the runtime is closed`);
    return this.main;
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
    return this.live('get').get(cls, handle);
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
  async parallelNew<C extends SmmoClass>(cls: C, n: number, init?: ((obj: InstanceType<C>, index: number) => void) | MethodName<InstanceType<C>>, ...args: unknown[]): Promise<void> {
    const ctx = this.live('parallelNew');
    const t = ctx.concreteTypeOf(cls, 'parallelNew');
    if (!Number.isInteger(n) || n < 0) throw new UsageError(`parallelNew(${t.name}): n must be a non-negative integer, got ${n}`);
    if (ctx.pass) throw new UsageError('parallelNew cannot be called inside a do-all');
    if (typeof init === 'string' && typeof (t.cls.prototype as unknown as Record<string, unknown>)[init] !== 'function') {
      throw new UsageError(`parallelNew(${t.name}): ${t.name} has no method '${init}'`);
    }
    const chunk = new Uint32Array(Math.min(n, 4096));
    const cur = new ctx.views[t.id]!() as InstanceType<C>;
    const heap = this.heap;
    for (let done = 0; done < n; ) {
      const k = Math.min(chunk.length, n - done);
      ctx.allocator.allocateMany(t, k, chunk, 0);
      for (let j = 0; j < k; j++) {
        const h = chunk[j]!;
        ctx.zero(t.id, h);
        if (init !== undefined) {
          cur.__o = heap.blockOffset(h >>> 5);
          cur.__s = h & 31;
          cur.__h = h;
          if (typeof init === 'function') init(cur, done + j);
          else (cur as unknown as Record<string, (...a: unknown[]) => void>)[init]!(done + j, ...args);
        }
      }
      done += k;
    }
  }

  /**
   * Run `method` on every object of `cls` and its subclasses that exists now (one pass
   * per concrete class). Objects created during the pass are not visited; a method may
   * delete `this` and objects of other classes.
   */
  async parallelDo<C extends SmmoClass, K extends MethodName<InstanceType<C>>>(cls: C, method: K, ...args: MethodArgs<InstanceType<C>, K>): Promise<void> {
    this.doAll(cls, method, args);
  }

  /** Synchronous do-all on the calling thread (what parallelDo does with threads = 1). */
  doAll(cls: SmmoClass, method: string, args: readonly unknown[]): void {
    const ctx = this.live('parallelDo');
    const t = ctx.typeOf(cls, 'parallelDo');
    if (ctx.pass) throw new UsageError('parallelDo cannot be called inside a do-all (use deviceDo)');
    if (typeof (t.cls.prototype as unknown as Record<string, unknown>)[method] !== 'function') {
      throw new UsageError(`parallelDo(${t.name}): ${t.name} has no method '${String(method)}'`);
    }
    const lists = ctx.snapshot();
    try {
      for (const id of t.concrete) {
        ctx.pass = { lists, typeId: id, current: null };
        const from = lists[2 * id]!;
        ctx.runBlocks(id, method, args, from, from + lists[2 * id + 1]!);
      }
    } finally {
      ctx.pass = null;
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
    this.heap.validate();
  }

  /** Release the runtime (and, with threads, its workers). Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
  }
}

/** Create a runtime. */
export async function createRuntime(options: RuntimeOptions): Promise<Runtime> {
  return new Runtime(options);
}
