/**
 * One thread's side of a runtime: its heap views, its allocator, its generated view
 * classes, and the do-all executor that runs a list of blocks as virtual warps.
 * The main thread has one; every worker has one over the same memory. It implements
 * what methods see as `this.runtime` (SmmoContext).
 *
 * Views (instances of the generated classes, accessors.ts):
 *  (V1) Checked mode: every view this context makes or positions carries the generation of
 *       its object's slot (__g, the hidden per-slot array at the type's genOffset,
 *       allocator.ts G1) and of its block (__b, BLOCK_GEN_WORD), read when it was made or
 *       positioned. Every checked field access, destroy, reference assignment and do-all
 *       argument compares them with the heap: a view of an object that was deleted, whose
 *       slot (or block, for another type) was then reused, is refused with
 *       InvalidHandleError 'stale'. Both are needed: the slot generation changes at every
 *       release; the block generation at every initialisation of the block, after which the
 *       slot's generation word may hold another type's data. A bare handle (get(C, n), a
 *       reference field) carries no generation: it is only checked for liveness and type.
 *  (V2) Every view's class is one of this context's generated classes (__host on the
 *       prototype is this context). destroy, reference assignment and do-all arguments
 *       refuse a view of another runtime (or another thread's context) with
 *       InvalidHandleError 'foreign', in checked and unchecked mode: one property load and
 *       compare. Field accesses through such a view are not checked (each view class reads
 *       its own runtime's heap, so it reads its own object).
 */
import { makeAccessorClass, type AccessorHost, type ViewClass } from './accessors.js';
import { Allocator } from './allocator.js';
import { popc } from './bits.js';
import type { Init, SmmoContext } from './schema.js';
import { InvalidHandleError, UsageError } from './errors.js';
import { LIVE_HANDLES } from './rank-table.js';
import { FREE_TYPE, Heap } from './heap.js';
import { KernelDispatch, type Backend, type BoundKernel } from './kernels.js';
import { MethodCompiler, type CompileOutcome } from './compiler/index.js';
import {
  BLOCK_ALLOC_WORD,
  BLOCK_GEN_WORD,
  BLOCK_ITER_WORD,
  BLOCK_TYPE_WORD,
  S_CACHED,
  S_LANES_LEFT,
  S_WARP,
  SLOT_BITS,
  type TypeLayout,
  type TypeTable,
} from './layout.js';
import type { SmmoClass, SmmoObject } from './schema.js';

/** A generated warp loop (ThreadContext.runnerFor). */
type BlockRunner = (
  cur: SmmoObject,
  list: Uint32Array,
  i32: Int32Array,
  from: number,
  to: number,
  base: number,
  bytes: number,
  blocksWord: number,
  blockWords: number,
  args: readonly unknown[],
  alloc: Allocator,
  st: number,
) => unknown;

/** Per concrete type id: [first index, count] of its blocks in the block list of the running do-all. */
export type PassLists = Int32Array;

/** snapshotLists L4: when a caller's own lists were written, and whether the last call found them current. */
export interface ListsMemo {
  walks: number;
  epoch: number;
  rewrites: number;
  hit: boolean;
}

/** A memo that matches nothing yet (walks start at 0, so -1 is never current). */
export function newListsMemo(): ListsMemo {
  return { walks: -1, epoch: 0, rewrites: 0, hit: false };
}

const EMPTY_LISTS = new Int32Array(0);

/** How runBlocks runs one (type, method) on this thread (ThreadContext.routes). */
export interface Route {
  readonly kernel: BoundKernel | null;
  compiled: CompileOutcome | undefined;
}

export class ThreadContext implements SmmoContext, AccessorHost {
  readonly allocator: Allocator;
  readonly views: (ViewClass | null)[];
  readonly typeIds: Map<SmmoClass, number>;
  /** Block list R of the running do-all (u32 view of the heap's block-list region). */
  readonly blockList: Uint32Array;
  /** Per type id: a generated function that zeroes the fields of slot `s` of the block at byte `o` (see zero()). */
  private readonly zeroers: ((o: number, s: number) => void)[];
  /** The class and type of the last create() (a one-entry cache: a do-all usually creates one class). */
  private createCls: SmmoClass | null = null;
  private createType: TypeLayout | null = null;
  /** Set while a do-all pass runs on this thread. */
  pass: { lists: PassLists; typeId: number; current: SmmoObject | null } | null = null;
  /** Copies of heap geometry for view creation (get/view run per neighbour lookup in grid apps). */
  private readonly i32: Int32Array;
  private readonly blocksWord: number;
  private readonly blockWords: number;
  private readonly blocksOffset: number;
  private readonly blockBytes: number;
  /** numBlocks · 32: the first handle past the heap. */
  private readonly handleLimit: number;
  /** Which implementation runs each method on this thread (runtime/kernels.ts; set by configureBackend). */
  kernels: KernelDispatch;
  /** "Class.method" → the backend that ran it on this thread (kernels.ts K3). */
  readonly backendUse = new Map<string, Backend>();
  /** The method compiler (null: every method runs interpreted). */
  compiler: MethodCompiler | null = null;
  /** "Class.method" → whether it ran compiled on this thread, and why not. */
  readonly compileUse = new Map<string, CompileOutcome>();
  get context(): SmmoContext {
    return this;
  }

  constructor(
    readonly heap: Heap,
    readonly table: TypeTable,
    readonly checked: boolean,
    seed: number,
    compile = false,
  ) {
    this.allocator = new Allocator(heap, seed);
    this.i32 = heap.i32;
    this.blocksWord = heap.blocksWord;
    this.blockWords = heap.blockWords;
    this.blocksOffset = heap.plan.blocksOffset;
    this.blockBytes = heap.plan.blockBytes;
    this.handleLimit = heap.numBlocks * 32;
    this.typeIds = new Map(table.types.map((t) => [t.cls, t.id]));
    this.views = table.types.map((t) => (t.abstract ? null : makeAccessorClass(t, heap, this, checked, this.typeIds)));
    this.blockList = new Uint32Array(heap.buffer, heap.plan.blockListOffset, heap.numBlocks);
    this.listedStart = new Int32Array(table.types.length);
    this.listedCount = new Int32Array(table.types.length).fill(-1);
    this.zeroers = table.types.map((t) => makeZeroer(t, heap));
    this.kernels = new KernelDispatch(this);
    if (compile) this.compiler = new MethodCompiler(this);
  }

  /**
   * Release what this thread holds in shared memory: its allocator state (after giving its
   * kept blocks back) and its module instance's thread slot. Idempotent.
   */
  dispose(): void {
    try {
      this.allocator.dispose();
    } finally {
      this.heap.dispose();
    }
  }

  /**
   * After a pass on this thread was interrupted (timed.ts T2: none of its `finally` blocks
   * ran): no pass marker, the warp the executor had opened closed (its cached slots go
   * back; an open warp would make the next create reserve the lanes it had left), the
   * kept blocks given back (K2). Each step is tried on its own: an allocator operation
   * cut in half may make one fail, and the caller's validateHeap() then says what is wrong.
   */
  abandonPass(): void {
    this.pass = null;
    try {
      this.allocator.warpEnd();
    } catch {
      // see above
    }
    try {
      this.allocator.flushKept();
    } catch {
      // see above
    }
  }

  // ---------------------------------------------------------------- types and handles

  /** The type layout of a registered class, or a UsageError naming the problem. */
  typeOf(cls: SmmoClass, what: string): TypeLayout {
    const t = this.table.byClass(cls);
    if (!t) {
      const name = (cls as { name?: string } | null)?.name ?? String(cls);
      throw new UsageError(`${what}: class ${name} is not registered with this runtime (pass it in options.classes)`);
    }
    return t;
  }

  concreteTypeOf(cls: SmmoClass, what: string): TypeLayout {
    const t = this.typeOf(cls, what);
    if (t.abstract) throw new UsageError(`${what}: ${t.name} is abstract; create one of its subclasses`);
    return t;
  }

  /** A fresh view of `handle`, whose class is the block's concrete type. */
  view(handle: number): SmmoObject {
    // Same code as get()'s unchecked path, kept separate on purpose: each `new View()`
    // site has type feedback of its own, and get()'s usually sees one class.
    const bid = handle >>> SLOT_BITS;
    const t = this.i32[this.blocksWord + bid * this.blockWords + BLOCK_TYPE_WORD]!;
    const View = this.views[t];
    if (View == null) throw new InvalidHandleError(handle, 'free-block', `block ${bid} holds no objects`);
    const v = new View();
    const o = this.blocksOffset + bid * this.blockBytes;
    const s = handle & 31;
    v.__o = o;
    v.__s = s;
    v.__h = handle;
    v.__i = (o >>> 2) + s;
    if (this.checked) this.stamp(v, t);
    return v;
  }

  /** (V1) Checked mode: record in view `v` (positioned, of concrete type `t`) the generations of its slot and block now. */
  stamp(v: SmmoObject, t: number): void {
    v.__g = this.i32[v.__i + (this.heap.genOffset[t]! >> 2)]!;
    v.__b = this.i32[(v.__o >>> 2) + BLOCK_GEN_WORD]!;
  }

  /**
   * (V1) Checked mode: throw InvalidHandleError 'stale' unless view `obj` (of concrete type
   * `t`, whose handle names a live object: checkHandle first) was made since that object
   * was created.
   */
  checkFresh(obj: SmmoObject, t: number, where: string): void {
    if (this.i32[obj.__i + (this.heap.genOffset[t]! >> 2)] !== obj.__g || this.i32[(obj.__o >>> 2) + BLOCK_GEN_WORD] !== obj.__b) {
      const name = this.table.types[t]!.name;
      throw new InvalidHandleError(
        obj.__h,
        'stale',
        `${where}: a stale view: its ${name} was deleted, and slot ${obj.__s} of block ${obj.__h >>> SLOT_BITS} now holds another ` +
          `object; keep a view (or handle) only while its object lives`,
      );
    }
  }

  /**
   * (V2) Throw unless `v` is a view made by this context: InvalidHandleError 'foreign' for
   * an object of another runtime, UsageError for a value that is no smmo object at all.
   */
  checkOwn(v: unknown, where: string): void {
    if (v !== null && typeof v === 'object' && (v as SmmoObject).__host === this) return;
    const view = v as Partial<SmmoObject> | null;
    if (view !== null && typeof view === 'object' && typeof view.__h === 'number' && view.__host !== undefined) {
      throw new InvalidHandleError(
        view.__h,
        'foreign',
        `${where}: this ${view.constructor?.name.replace(/\$View$/, '') ?? 'object'} (handle ${view.__h}) belongs to another runtime; ` +
          'objects cannot move between runtimes: copy its field values, or look its handle up with get() in the runtime it belongs to',
      );
    }
    const what = v === null ? 'null' : typeof v === 'object' ? 'an object that is not an smmo object' : `${typeof v} ${String(v)}`;
    throw new UsageError(`${where}: expected an smmo object of this runtime, got ${what}`);
  }

  /**
   * Throw InvalidHandleError unless `handle` names a live object whose type is
   * `typeId` or one of its subclasses (typeId -1: any type). Returns the block's type.
   */
  checkHandle(handle: number, typeId: number, where: string): number {
    const heap = this.heap;
    // Block 0 is never allocated (handle 0 is null), so handles 1…31 are forged too.
    if (typeof handle !== 'number' || !Number.isInteger(handle) || handle < 32 || handle >= heap.numBlocks * 32) {
      throw new InvalidHandleError(
        handle,
        handle === 0 ? 'null' : 'forged',
        `${where}: not a handle of this heap (32 … ${heap.numBlocks * 32 - 1})`,
      );
    }
    const bid = handle >>> SLOT_BITS;
    const slot = handle & 31;
    const w = heap.blockWord(bid);
    const t = Atomics.load(heap.i32, w + BLOCK_TYPE_WORD);
    if (t === FREE_TYPE) throw new InvalidHandleError(handle, 'free-block', `${where}: block ${bid} is free; the object was deleted`);
    const ty = this.table.types[t];
    if (!ty || ty.abstract) throw new InvalidHandleError(handle, 'forged', `${where}: block ${bid} has no valid type (${t})`);
    if (slot >= ty.slots)
      throw new InvalidHandleError(handle, 'forged', `${where}: slot ${slot} does not exist in a ${ty.name} block (${ty.slots} slots)`);
    if ((Atomics.load(heap.i32, w + BLOCK_ALLOC_WORD) & (1 << slot)) === 0) {
      throw new InvalidHandleError(handle, 'deleted', `${where}: the ${ty.name} in slot ${slot} of block ${bid} was deleted`);
    }
    if (typeId >= 0 && !this.table.types[typeId]!.concrete.includes(t)) {
      throw new InvalidHandleError(handle, 'wrong-type', `${where}: expected a ${this.table.types[typeId]!.name}, found a ${ty.name}`);
    }
    return t;
  }

  checkRef(handle: number, targetTypeId: number, where: string): void {
    this.checkHandle(handle, targetTypeId, where);
  }

  /** A reference field is assigned `v` (not null): it must be a view of this context; checked: live, of the target type, fresh. */
  checkRefValue(v: unknown, targetTypeId: number, where: string): void {
    const what = `${where} = …`;
    if (v === null || typeof v !== 'object' || (v as SmmoObject).__host !== this) {
      if (typeof v === 'number')
        throw new UsageError(
          `${what}: a reference field takes an smmo object or null, not a number (${v}); for a handle, assign rt.get(Class, ${v})`,
        );
      this.checkOwn(v, what);
    }
    if (!this.checked) return;
    const obj = v as SmmoObject;
    const t = this.checkHandle(obj.__h, targetTypeId, what);
    this.checkFresh(obj, t, what);
  }

  /** Do-all and parallelNew arguments: smmo objects among them must be views of this context (V2); checked: live and fresh (V1). */
  checkArgViews(args: readonly unknown[], where: string): void {
    for (let i = 0; i < args.length; i++) {
      const a = args[i] as Partial<SmmoObject> | null;
      if (a === null || typeof a !== 'object' || typeof a.__h !== 'number' || typeof a.__o !== 'number') continue;
      this.checkOwn(a, `${where}: argument ${i}`);
      if (this.checked) this.checkFresh(a as SmmoObject, this.checkHandle(a.__h, -1, `${where}: argument ${i}`), `${where}: argument ${i}`);
    }
  }

  /** A checked access through view `obj` found its object gone (accessors.ts): say how. */
  deadAccess(obj: SmmoObject, field: string): never {
    const own = this.views.indexOf(obj.constructor as ViewClass);
    const name = own >= 0 ? this.table.types[own]!.name : obj.constructor.name;
    const w = obj.__o >>> 2;
    const t = Atomics.load(this.i32, w + BLOCK_TYPE_WORD);
    const where = `access to ${name}.${field}`;
    if (t === FREE_TYPE) throw new InvalidHandleError(obj.__h, 'deleted', `${where} of a deleted object (its block is free)`);
    if ((Atomics.load(this.i32, w + BLOCK_ALLOC_WORD) & (1 << obj.__s)) === 0 || t !== own) {
      throw new InvalidHandleError(obj.__h, 'deleted', `${where} of a deleted object`);
    }
    this.checkFresh(obj, t, where);
    throw new InvalidHandleError(obj.__h, 'deleted', `${where} of a deleted object`); // not reached: checkFresh throws
  }

  // ---------------------------------------------------------------- SmmoContext

  create<C extends SmmoClass>(cls: C, init?: Init<InstanceType<C>>): InstanceType<C> {
    let t = this.createType;
    if (cls !== this.createCls || t === null) {
      t = this.concreteTypeOf(cls, 'create');
      this.createCls = cls;
      this.createType = t;
    }
    const h = this.allocator.allocate(t);
    const bid = h >>> SLOT_BITS;
    const o = this.blocksOffset + bid * this.blockBytes;
    const s = h & 31;
    this.zeroers[t.id]!(o, s);
    // view(), with the type known: no read of the block header.
    const v = new this.views[t.id]!() as InstanceType<C>;
    v.__o = o;
    v.__s = s;
    v.__h = h;
    v.__i = (o >>> 2) + s;
    if (this.checked) this.stamp(v, t.id);
    if (init) {
      try {
        this.applyInit(t, v, init as Record<string, unknown>);
      } catch (e) {
        this.allocator.releaseHandle(h); // a refused init must not leak the new object
        throw e;
      }
    }
    return v;
  }

  /** destroy() of the object named by `handle` (the compiled methods' delete). */
  destroyHandle(handle: number, current: number): void {
    if (this.checked) {
      const t = this.checkHandle(handle, -1, 'destroy');
      const p = this.pass;
      if (p && p.typeId === t && current !== handle) {
        throw new UsageError(
          `destroy: a ${this.table.types[t]!.name} method may delete itself, but not another ${this.table.types[t]!.name} during a do-all over that type`,
        );
      }
    }
    this.allocator.releaseHandle(handle);
  }

  destroy(obj: SmmoObject): void {
    if (obj == null || typeof obj !== 'object' || typeof obj.__h !== 'number') {
      throw new UsageError(`destroy: expected an smmo object, got ${String(obj)}`);
    }
    if (obj.__host !== this) this.checkOwn(obj, 'destroy'); // (V2)
    if (this.checked) {
      const t = this.checkHandle(obj.__h, -1, 'destroy');
      this.checkFresh(obj, t, 'destroy'); // (V1)
      const p = this.pass;
      if (p && p.typeId === t && p.current !== null && p.current.__h !== obj.__h) {
        throw new UsageError(
          `destroy: a ${this.table.types[t]!.name} method may delete itself, but not another ${this.table.types[t]!.name} during a do-all over that type`,
        );
      }
    }
    this.allocator.releaseHandle(obj.__h);
  }

  /**
   * A view of `handle`. In checked mode the handle is fully checked (live, of `cls` or a
   * subclass); otherwise only that it lies in the heap and its block holds objects (a
   * hot path of grid apps: game-of-life looks up neighbour cells by handle).
   */
  get<C extends SmmoClass>(cls: C, handle: number): InstanceType<C> {
    if (this.checked) {
      const t = this.typeOf(cls, 'get');
      this.checkHandle(handle, t.id, `get(${t.name})`);
      return this.view(handle) as InstanceType<C>;
    }
    if (!(handle > 0 && handle < this.handleLimit) || handle !== (handle | 0)) {
      throw new InvalidHandleError(handle, handle === 0 ? 'null' : 'forged', `get: not a handle of this heap`);
    }
    // view(), inlined: this `new View()` site sees the classes apps look up by handle
    // (one, for game-of-life's Cells), so V8 can inline the constructor; view()'s site
    // also serves reference getters of every class (measured in a loop over 512² Cells:
    // 25 → 11 ns per get).
    const bid = handle >>> SLOT_BITS;
    const View = this.views[this.i32[this.blocksWord + bid * this.blockWords + BLOCK_TYPE_WORD]!];
    if (View == null) throw new InvalidHandleError(handle, 'free-block', `get: block ${bid} holds no objects`);
    const v = new View();
    const o = this.blocksOffset + bid * this.blockBytes;
    const s = handle & 31;
    v.__o = o;
    v.__s = s;
    v.__h = handle;
    v.__i = (o >>> 2) + s;
    return v as InstanceType<C>;
  }

  /** get() with every check, whatever the mode (Runtime.get, the user-facing lookup). */
  getChecked<C extends SmmoClass>(cls: C, handle: number): InstanceType<C> {
    const t = this.typeOf(cls, 'get');
    this.checkHandle(handle, t.id, `get(${t.name})`);
    return this.view(handle) as InstanceType<C>;
  }

  count(cls: SmmoClass): number {
    const t = this.typeOf(cls, 'count');
    let n = 0;
    for (const id of t.concrete) n += this.allocator.count(this.table.types[id]!);
    return n;
  }

  deviceDo<C extends SmmoClass>(cls: C, fn: (obj: InstanceType<C>) => void): void {
    const t = this.typeOf(cls, 'deviceDo');
    const heap = this.heap;
    const i32 = heap.i32;
    for (const id of t.concrete) {
      const cur = new this.views[id]!() as InstanceType<C>;
      const pass = this.pass;
      let list: Uint32Array;
      let from: number;
      let to: number;
      let word: number;
      let mask: number;
      if (pass !== null) {
        // Inside a do-all: the objects that existed when the pass started (iteration
        // bitmaps, which deletions keep up to date), in the blocks listed then.
        list = this.blockList;
        from = pass.lists[2 * id]!;
        to = from + pass.lists[2 * id + 1]!;
        word = BLOCK_ITER_WORD;
        mask = -1;
      } else {
        // Outside a pass: the blocks allocated now (allocatedBlocks).
        list = this.allocatedBlocks(id);
        from = 0;
        to = list.length;
        word = BLOCK_ALLOC_WORD;
        mask = ~heap.highMask[id]!;
      }
      const bytes = heap.plan.blockBytes;
      const base = heap.plan.blocksOffset;
      const checked = this.checked;
      const genWord = heap.genOffset[id]! >> 2;
      for (let i = from; i < to; i++) {
        const bid = list[i]!;
        let bits = Atomics.load(i32, heap.blockWord(bid) + word) & mask;
        cur.__o = base + bid * bytes;
        if (checked) cur.__b = i32[heap.blockWord(bid) + BLOCK_GEN_WORD]!;
        while (bits !== 0) {
          const slot = 31 - Math.clz32(bits & -bits);
          bits &= bits - 1;
          cur.__s = slot;
          cur.__h = bid * 32 + slot;
          cur.__i = (cur.__o >>> 2) + slot;
          if (checked) cur.__g = i32[cur.__i + genWord]!; // (V1)
          fn(cur);
        }
      }
    }
  }

  /**
   * The live objects of `cls` (its concrete classes in turn, each in ascending handle order)
   * from the allocation words of their blocks, inside a do-all or not: what rank tables are
   * made of (rank-table.ts R5). Objects created or deleted meanwhile by other threads may or
   * may not be seen; a ranked class has none (R2).
   */
  [LIVE_HANDLES](cls: SmmoClass): Uint32Array {
    const t = this.typeOf(cls, 'rankTable');
    const heap = this.heap;
    const i32 = heap.i32;
    // The blocks of each concrete class, then the handles counted and written in one array.
    const lists: Uint32Array[] = [];
    let total = 0;
    for (const id of t.concrete) {
      const list = this.allocatedBlocks(id);
      const mask = ~heap.highMask[id]!;
      for (let i = 0; i < list.length; i++) total += popc(Atomics.load(i32, heap.blockWord(list[i]!) + BLOCK_ALLOC_WORD) & mask);
      lists.push(list);
    }
    const out = new Uint32Array(total);
    let k = 0;
    t.concrete.forEach((id, j) => {
      const list = lists[j]!;
      const mask = ~heap.highMask[id]!;
      for (let i = 0; i < list.length && k < total; i++) {
        const bid = list[i]!;
        let bits = Atomics.load(i32, heap.blockWord(bid) + BLOCK_ALLOC_WORD) & mask;
        while (bits !== 0 && k < total) {
          const slot = 31 - Math.clz32(bits & -bits);
          bits &= bits - 1;
          out[k++] = bid * 32 + slot;
        }
      }
    });
    return k === total ? out : out.subarray(0, k);
  }

  /**
   * The blocks allocated to concrete type `id` now, in a list sized to them (not to the heap).
   * A bitmap that grew between count() and indices() (a pass still in flight on the workers)
   * cannot make the list run past its length: entries beyond it are dropped.
   */
  private allocatedBlocks(id: number): Uint32Array {
    const bitmap = this.heap.allocated[id]!;
    const list = new Uint32Array(bitmap.count());
    return list.subarray(0, Math.min(bitmap.indices(list), list.length));
  }

  // ---------------------------------------------------------------- do-all executor

  /**
   * Run `method` on the objects of concrete type `typeId` in blocks list[from … to),
   * each block as one virtual warp: lanes are the set bits of its iteration bitmap — or,
   * with `direct`, of its allocation bitmap (R1: only for a pass that readsAllocation()
   * allows, whose snapshot copied no iteration words).
   */
  runBlocks(
    typeId: number,
    method: string,
    args: readonly unknown[],
    from: number,
    to: number,
    direct = false,
    route: Route = this.route(typeId, method),
  ): void {
    // A kernel of the chosen backend, if the method has one for this type (kernels.ts K1–K3).
    if (route.kernel !== null && route.kernel.run(from, to, args)) return;
    if (direct && route.compiled?.compiled !== true) {
      throw new Error(`runBlocks(${this.table.types[typeId]!.name}, '${method}'): direct lanes need a compiled method (R1; a bug in smmo)`);
    }
    const heap = this.heap;
    if (this.compiler !== null) {
      const c = this.compiledOf(route, typeId, method, this.compiler);
      if (c.compiled) {
        const pass = this.pass;
        try {
          c.run(
            this,
            this.blockList,
            from,
            to,
            args,
            pass !== null ? pass.lists : EMPTY_LISTS,
            direct ? BLOCK_ALLOC_WORD : BLOCK_ITER_WORD,
          );
        } catch (e) {
          if (pass) pass.current = { __h: c.state.handle } as SmmoObject;
          throw e;
        } finally {
          // As below: a method that threw leaves its warp open (a direct one that creates nothing, R1,
          // opens none; after a direct pass that creates, every block closed its own: no change).
          if (!direct || c.allocates) this.allocator.warpEnd();
        }
        return;
      }
    }
    const View = this.views[typeId]!;
    const cur = new View();
    const run = this.runnerFor(typeId, method, args.length);
    const pass = this.pass;
    if (pass) pass.current = cur;
    const alloc = this.allocator;
    try {
      run(
        cur,
        this.blockList,
        heap.i32,
        from,
        to,
        heap.plan.blocksOffset,
        heap.plan.blockBytes,
        heap.blocksWord,
        heap.blockWords,
        args,
        alloc,
        alloc.state,
      );
    } finally {
      // A method that threw leaves its warp open: give the slots cached for it back.
      alloc.warpEnd();
    }
    if (pass) pass.current = null;
  }

  /**
   * Per type id and method: what runBlocks runs — the kernel (kernels.ts, chosen once) and
   * the compiled method (compiled on first need: a method whose kernel always runs is never
   * compiled, and stats().compiled does not list it). Saves the two lookups per call that a
   * do-all of many small classes would otherwise repeat per class (an ECS system).
   */
  private routes: (Map<string, Route> | undefined)[] = [];
  private routesOf: KernelDispatch | null = null;

  /** The route of (typeId, method) on this thread; the same object until configureBackend gives another dispatch. */
  route(typeId: number, method: string): Route {
    if (this.routesOf !== this.kernels) {
      this.routes = []; // configureBackend gave this thread another dispatch: choose again
      this.routesOf = this.kernels;
    }
    return this.routes[typeId]?.get(method) ?? this.newRoute(typeId, method);
  }

  /**
   * (R1) Whether a pass of `method` over `typeId` may take its lanes from the allocation
   * words (runBlocks `direct`) — and whether a snapshot's copy may be fused into it
   * (doall.ts F1–F2): its route on this thread is a compiled method (no kernel, no
   * interpreted method, whose effects are not known) that is portable (calls no
   * JavaScript but rankTable, which reads allocation words only: rank-table.ts R5), creates
   * no object — or, for lanes taken on the calling thread alone (`visits`: the
   * concrete type ids the do-all visits), no object of a class it visits —, deletes none
   * but the lane's own (`this.destroy()`: compiler freesOthers), and has no deviceDo.
   * An object of another class goes into a block of that class: the only way a create can
   * touch a listed block is the core's reclaim of empty blocks when no block is free
   * (core.rs K3), which may retire an empty listed block and open it for the created class;
   * the generated runner skips a block whose type is not its own when it reads allocation
   * words (emit-js.ts), as the snapshot's copy would have left it with no lanes. On the
   * workers such a create could do that between another thread's read of a block's
   * allocation word and its lanes, so a fused copy there still needs a method that
   * creates nothing. Then a block's allocation word changes only while its own lanes run —
   * after a runner has read it (the lanes are taken from a local copy of the word, read once
   * per block) and after a fused copy has copied it — and no lane reads an iteration word:
   * until its lanes run, a block's allocation word without the slots its class lacks is the
   * iteration word the snapshot's copy would have written, and its releases clear the same
   * bits in both words (S3). Compiles the method on first need (as the pass itself would,
   * recorded in stats().compiled). The answer: READS_ALLOCATION wherever the pass runs,
   * READS_ALLOCATION_HERE only on the calling thread alone (it creates objects of classes
   * the do-all, which visits `visits`, does not), READS_ITERATION otherwise.
   */
  readsAllocation(typeId: number, method: string, visits: readonly number[], route: Route = this.route(typeId, method)): AllocationReads {
    if (route.kernel !== null || this.compiler === null) return READS_ITERATION;
    const c = this.compiledOf(route, typeId, method, this.compiler);
    if (!c.compiled || !(c.portable || c.ranksOnly) || c.freesOthers || c.iterates.length > 0) return READS_ITERATION;
    if (!c.allocates) return READS_ALLOCATION;
    return c.creates.every((id) => !visits.includes(id)) ? READS_ALLOCATION_HERE : READS_ITERATION;
  }

  /** The route's compiled method, compiled on first need and recorded in stats().compiled. */
  private compiledOf(route: Route, typeId: number, method: string, compiler: MethodCompiler): CompileOutcome {
    return (route.compiled ??= compiler.compile(typeId, method, this.compileUse));
  }

  private newRoute(typeId: number, method: string): Route {
    const route: Route = { kernel: this.kernels.note(typeId, method), compiled: undefined };
    (this.routes[typeId] ??= new Map()).set(method, route);
    return route;
  }

  /** Generated warp loops by "typeId:method:arity" (see runnerFor). */
  private readonly runners = new Map<string, BlockRunner>();

  /**
   * The loop that runs `method` over a range of the block list, generated once per
   * (concrete type, method, arity): each generated function has call sites of its own,
   * so V8 sees one view class and one method there and inlines the method into the
   * loop. A shared loop would see every method of every class and stop inlining.
   * A block is one virtual warp; its lanes are the set bits of the iteration bitmap.
   *
   * It keeps the allocator's executor contract (wasm/src/alloc/core.rs): per block with
   * lanes, warp begin (the state words S_WARP = 1, S_LANES_LEFT = lanes: what
   * Allocator.warpBegin stores), before each lane the lanes left (the current one
   * included) in S_LANES_LEFT, after the block warp end (Allocator.warpEnd when a warp
   * cache holds slots, else the two stores it would make). A block whose lanes were all
   * deleted before the pass reached it has none: an empty warp changes nothing, so it is
   * skipped.
   */
  private runnerFor(typeId: number, method: string, arity: number): BlockRunner {
    const key = `${typeId}:${method}:${arity}`;
    let run = this.runners.get(key);
    if (run === undefined) {
      // (V1) Checked mode: the cursor carries its block's and slot's generations.
      const genWord = this.heap.genOffset[typeId]! >> 2;
      const stampBlock = this.checked ? `    cur.__b = i32[blocksWord + bid * blockWords + ${BLOCK_GEN_WORD}];\n` : '';
      const stampSlot = this.checked ? `      cur.__g = i32[cur.__i + ${genWord}];\n` : '';
      const params = Array.from({ length: Math.min(arity, 4) }, (_, k) => `a${k}`);
      const call = arity <= 4 ? `cur[${JSON.stringify(method)}](${params.join(', ')});` : `fn.apply(cur, args);`;
      const src =
        `'use strict';\n` +
        `return function run_${typeId}(cur, list, i32, from, to, base, bytes, blocksWord, blockWords, args, alloc, st) {\n` +
        `  const fn = cur[${JSON.stringify(method)}];\n` +
        params.map((p, k) => `  const ${p} = args[${k}];\n`).join('') +
        `  const warpWord = st + ${S_WARP};\n` +
        `  const laneWord = st + ${S_LANES_LEFT};\n` +
        `  const cachedWord = st + ${S_CACHED};\n` +
        `  for (let i = from; i < to; i++) {\n` +
        `    const bid = list[i];\n` +
        `    let bits = Atomics.load(i32, blocksWord + bid * blockWords + ${BLOCK_ITER_WORD});\n` +
        `    if (bits === 0) continue;\n` +
        `    cur.__o = base + bid * bytes;\n` +
        `    const hbase = bid * 32;\n` +
        `    const ibase = cur.__o >>> 2;\n` +
        stampBlock +
        `    let left = popc(bits);\n` +
        `    i32[warpWord] = 1;\n` +
        `    while (bits !== 0) {\n` +
        `      const slot = 31 - Math.clz32(bits & -bits);\n` +
        `      bits &= bits - 1;\n` +
        `      cur.__s = slot;\n` +
        `      cur.__h = hbase + slot;\n` +
        `      cur.__i = ibase + slot;\n` +
        stampSlot +
        `      i32[laneWord] = left--;\n` +
        `      ${call}\n` +
        `    }\n` +
        `    if (i32[cachedWord] !== 0) alloc.warpEnd();\n` +
        `    else { i32[warpWord] = 0; i32[laneWord] = 0; }\n` +
        `  }\n` +
        `  return fn;\n` +
        `};`;
      run = (new Function('popc', src) as (p: typeof popc) => BlockRunner)(popc);
      this.runners.set(key, run);
    }
    return run;
  }

  /**
   * Prepare a do-all: write the block lists R of the concrete types `types` (default:
   * every concrete type) into the block-list region (Alg. 5) and set their iteration
   * bitmaps to their allocation bitmaps. Returns [start, count] per type id (0, 0 for a
   * type not in `types`).
   *
   * Invariant kept (the pass-start view), for every concrete type C in `types`: until
   * the next snapshot, the objects of C visited by the pass (runBlocks) and by
   * deviceDo(C) inside it (on any thread) are exactly those that existed when this
   * snapshot ran and have not been deleted since. So `types` must hold every class the
   * pass may reach: the classes it visits and every class a deviceDo inside its method
   * may iterate. Objects created during the pass carry no mark that would tell them
   * apart later (their iteration bit is simply 0), which is why a type cannot be added
   * to the view after the pass started; PassRunner (doall.ts) passes every type unless
   * the compiler proved which classes the method iterates. A type left out keeps
   * iteration words from an earlier snapshot, still ⊆ allocation by (S2, S3) below.
   * It holds because (S1) after this copy, iteration ⊆ allocation (H5) and equal on the
   * listed blocks; (S2) allocation never sets an iteration bit, and a block opened during
   * the pass (new, or reopened: wasm/src/alloc/core.rs K1) starts with iteration 0, so if it is
   * listed (a reopened or recycled block keeps its index) none of its new objects is
   * visited; (S3) a release clears the object's iteration bit, and retiring a block
   * zeroes its word.
   *
   * Cost: O(used blocks) per pass, for every type in `types` (game-of-life: its ~88 000
   * Cell blocks on every pass whose method may reach Cells). Plain loads and stores,
   * not Atomics: this runs on the calling thread between passes, when no other thread
   * touches allocation or iteration words (workers wait for the next pass, whose
   * start is an atomic handoff that publishes these writes). A word already equal is
   * not rewritten, so the cache lines of unchanged blocks stay clean (measured on the
   * 2-core dev VM under load, tm.pgm heap, 88 000 Cell blocks: 4.1–5.2 ms per snapshot
   * with Atomics, 1.7–2.9 ms now).
   */
  snapshot(types: readonly number[] = this.table.concreteIds): PassLists {
    const lists = this.snapshotLists(types);
    this.copyIteration(listedFrom(lists), listedTo(lists));
    return lists;
  }

  /**
   * The snapshot's first half: the block lists of `types`, iteration words untouched.
   * Written into `lists` (2 words per type id; a caller that runs one pass at a time may
   * pass the same array every time) or a new array.
   *
   * Lists reused while the block sets stand still. A do-all of an ECS system over a few
   * small classes spent a fifth of its time walking bitmaps that had not changed since
   * the last do-all. The lists a walk wrote stay in R and are reused when
   *  (L1) the block-set epoch (layout.ts H_BLOCK_SET_EPOCH) and the heap's count of host
   *       rewrites (Heap.hostRewrites) are those read before that walk: the allocator core
   *       bumps the epoch whenever a block joins or leaves any allocated[t], and whatever
   *       else writes R or the bitmaps on the host (a defrag's forwarding masks, a GPU
   *       download or metadata read, a heap snapshot put back: Heap.blockSetChanged)
   *       counts a rewrite — which, unlike the epoch word it may overwrite with an older
   *       value, only grows — so no allocated[t] and no word of R changed since; and
   *  (L2) every type asked for now was walked then (`listedCount` ≥ 0): a do-all over Z
   *       after one over Z's abstract base finds Z's list where the first put it.
   * Then the lists are exactly those a walk would write now: a walk lists allocated[t] in
   * ascending order, a function of the bitmap alone. (L3) Only this method writes lists
   * into R on the CPU, and only the calling thread's context calls it, between passes.
   * The epoch is a u32 counter: reuse would go wrong only if 2³² block changes happened
   * between two snapshots and brought it back to the same value.
   *
   * (L4) A caller that keeps an array of lists per set of types (PassRunner: one per
   * do-all plan) passes it with its memo: when L1 holds against the memo's epoch and
   * rewrites and no walk ran since the memo was stamped (`walks`), the array already holds
   * what reuse would write now (starts and counts change only in a walk) and is returned
   * untouched, with `memo.hit` set. The caller must pass the same types with the same
   * memo and array every time.
   */
  snapshotLists(
    types: readonly number[] = this.table.concreteIds,
    lists: PassLists = new Int32Array(2 * this.table.types.length),
    memo?: ListsMemo,
  ): PassLists {
    const heap = this.heap;
    const epoch = heap.blockSetEpoch();
    const rewrites = heap.hostRewrites;
    if (memo !== undefined) {
      memo.hit = memo.walks === this.walks && memo.epoch === epoch && memo.rewrites === rewrites;
      if (memo.hit) {
        this.listsReused++;
        return lists;
      }
    }
    const start = this.listedStart;
    const count = this.listedCount;
    const reuse = epoch === this.listedEpoch && rewrites === this.listedRewrites && types.every((id) => count[id]! >= 0);
    if (!reuse) count.fill(-1);
    lists.fill(0);
    let at = 0;
    for (let i = 0; i < types.length; i++) {
      const id = types[i]!;
      if (!reuse) {
        start[id] = at;
        count[id] = heap.allocated[id]!.indices(this.blockList, at);
        at += count[id]!;
      }
      lists[2 * id] = start[id]!;
      lists[2 * id + 1] = count[id]!;
    }
    if (reuse) this.listsReused++;
    else this.walks++;
    this.listedEpoch = epoch;
    this.listedRewrites = rewrites;
    if (memo !== undefined) {
      memo.walks = this.walks;
      memo.epoch = epoch;
      memo.rewrites = rewrites;
    }
    return lists;
  }

  /** Walks of snapshotLists that wrote R (L4). */
  private walks = 0;

  /** What the last walk of snapshotLists wrote into R (L1–L3): by type id, first index and count (-1: not walked, as every type at first). */
  private readonly listedStart: Int32Array;
  private readonly listedCount: Int32Array;
  private listedEpoch = 0;
  private listedRewrites = 0;
  /** Snapshots whose block lists were reused (L1–L2), for tests. */
  listsReused = 0;

  /**
   * The snapshot's second half for block-list entries [from, to): each listed block's
   * iteration word := its allocation word without the bits of slots its type does not
   * have. Any thread may run a part of it (a KIND_COPY pass, schedule.ts P7): nothing
   * else runs meanwhile, and the end of that pass publishes the words to the next.
   */
  copyIteration(from: number, to: number): void {
    const list = this.blockList;
    const i32 = this.i32;
    const highMask = this.heap.highMask;
    const blocksWord = this.blocksWord;
    const blockWords = this.blockWords;
    for (let i = from; i < to; i++) {
      const w = blocksWord + list[i]! * blockWords;
      const live = i32[w + BLOCK_ALLOC_WORD]! & ~highMask[i32[w + BLOCK_TYPE_WORD]!]!;
      if (i32[w + BLOCK_ITER_WORD] !== live) i32[w + BLOCK_ITER_WORD] = live;
    }
  }

  // ---------------------------------------------------------------- helpers

  /** Set every field of the object `h` of type `typeId` to 0 (0.0, false, null). */
  zero(typeId: number, h: number): void {
    this.zeroers[typeId]!(this.blocksOffset + (h >>> SLOT_BITS) * this.blockBytes, h & 31);
  }

  applyInit(t: TypeLayout, v: SmmoObject, init: Record<string, unknown>): void {
    const target = v as unknown as Record<string, unknown>;
    for (const key of Object.keys(init)) {
      const f = t.fields.find((x) => x.name === key);
      if (!f) throw new UsageError(`create(${t.name}): ${t.name} has no field '${key}'`);
      const value = init[key];
      if (f.length > 0) {
        if (!Array.isArray(value) || value.length > f.length) {
          throw new UsageError(
            `create(${t.name}): field '${key}' is an inline array of ${f.length}; give an array of at most ${f.length} values`,
          );
        }
        const arr = target[key] as { set(i: number, x: unknown): void };
        value.forEach((x, i) => arr.set(i, x));
      } else {
        target[key] = value;
      }
    }
  }

  /** Live objects in blocks of concrete type `id` and the slots of those blocks. */
  occupancy(id: number): { objects: number; blocks: number; slots: number } {
    const heap = this.heap;
    const list = new Uint32Array(heap.numBlocks);
    const n = heap.allocated[id]!.indices(list);
    let objects = 0;
    for (let i = 0; i < n; i++) objects += popc(Atomics.load(heap.i32, heap.blockWord(list[i]!) + BLOCK_ALLOC_WORD) & ~heap.highMask[id]!);
    return { objects, blocks: n, slots: n * heap.slots[id]! };
  }
}

/**
 * The zeroing function of type `t`: one store per SOA array (field, or element of an inline
 * array), unrolled with constant offsets, so that V8 compiles it to a handful of stores (a
 * loop over a table with a switch on the element size cost about as much as the
 * allocation itself; measured with linux-scalability's create/destroy on the dev VM).
 */
function makeZeroer(t: TypeLayout, heap: Heap): (o: number, s: number) => void {
  const array: Record<number, [string, number]> = { 1: ['u8', 0], 2: ['u16', 1], 4: ['i32', 2], 8: ['f64', 3] };
  const stores: string[] = [];
  for (const f of t.fields) {
    for (const off of f.offsets) {
      const [arr, shift] = array[f.elemBytes]!;
      stores.push(shift === 0 ? `  ${arr}[o + ${off} + s] = 0;` : `  ${arr}[((o + ${off}) >>> ${shift}) + s] = 0;`);
    }
  }
  const src = `'use strict';\nreturn function zero_${t.id}(o, s) {\n${stores.join('\n')}\n};`;
  return (new Function('u8', 'u16', 'i32', 'f64', src) as (...a: unknown[]) => (o: number, s: number) => void)(
    heap.u8,
    heap.u16,
    heap.i32,
    heap.f64,
  );
}

/** ThreadContext.readsAllocation's answers (R1); doall.ts keeps them per class, 0 while not known. */
export const READS_ALLOCATION = 1;
export const READS_ITERATION = 2;
export const READS_ALLOCATION_HERE = 3;
export type AllocationReads = typeof READS_ALLOCATION | typeof READS_ITERATION | typeof READS_ALLOCATION_HERE;

/**
 * Where a snapshot's copy of iteration words runs in R: from the first listed block of
 * `lists` (listedFrom) to one past the last (listedTo); 0 and 0 when nothing is listed.
 * The lists of the types asked for are not always R[0 …): reused lists (snapshotLists L2,
 * L4) stay where an earlier walk of more types put them, and blocks of types not asked for
 * may lie between two of them. Copying those too is harmless: their iteration words become
 * their allocation words, still ⊆ allocation (S1), and no pass reads the iteration words of
 * a type it did not snapshot.
 */
export function listedFrom(lists: PassLists): number {
  let from = -1;
  for (let i = 0; i < lists.length; i += 2) if (lists[i + 1]! > 0 && (from < 0 || lists[i]! < from)) from = lists[i]!;
  return from < 0 ? 0 : from;
}

export function listedTo(lists: PassLists): number {
  let to = 0;
  for (let i = 0; i < lists.length; i += 2) if (lists[i + 1]! > 0) to = Math.max(to, lists[i]! + lists[i + 1]!);
  return to;
}

export { Heap };
