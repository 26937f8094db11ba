/**
 * One thread's side of a runtime: its heap views, its allocator, its generated view
 * classes, and the do-all executor that runs a list of blocks as virtual warps.
 * The main thread has one; every worker has one over the same memory. It implements
 * what methods see as `this.runtime` (SmmoContext).
 */
import { makeAccessorClass, type AccessorHost, type ViewClass } from './accessors.js';
import { Allocator, DEFAULT_KEEP_BLOCKS } from './allocator.js';
import { popc } from './bits.js';
import type { Init, SmmoContext } from './context.js';
import { InvalidHandleError, UsageError } from './errors.js';
import { FREE_TYPE, Heap } from './heap.js';
import { KernelDispatch, type Backend } from './kernels.js';
import { BLOCK_ALLOC_WORD, BLOCK_ITER_WORD, BLOCK_TYPE_WORD, SLOT_BITS, type TypeLayout, type TypeTable } from './layout.js';
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
) => unknown;

/** Per concrete type id: [first index, count] of its blocks in the block list of the running do-all. */
export type PassLists = Int32Array;

export class ThreadContext implements SmmoContext, AccessorHost {
  readonly allocator: Allocator;
  readonly views: (ViewClass | null)[];
  readonly typeIds: Map<SmmoClass, number>;
  /** Block list R of the running do-all (u32 view of the heap's block-list region). */
  readonly blockList: Uint32Array;
  /** Zeroing plan per type id: pairs (byte offset of an SOA array, element bytes). */
  private readonly zeroPlan: Int32Array[];
  /** Set while a do-all pass runs on this thread. */
  pass: { lists: PassLists; typeId: number; current: SmmoObject | null } | null = null;
  /** Which implementation runs each method on this thread (runtime/kernels.ts; set by configureBackend). */
  kernels: KernelDispatch;
  /** "Class.method" → the backend that ran it on this thread (kernels.ts K3). */
  readonly backendUse = new Map<string, Backend>();
  get context(): SmmoContext {
    return this;
  }

  constructor(
    readonly heap: Heap,
    readonly table: TypeTable,
    readonly checked: boolean,
    seed: number,
    keepBlocks = DEFAULT_KEEP_BLOCKS,
  ) {
    this.allocator = new Allocator(heap, seed, keepBlocks);
    this.typeIds = new Map(table.types.map((t) => [t.cls, t.id]));
    this.views = table.types.map((t) => (t.abstract ? null : makeAccessorClass(t, heap, this, checked, this.typeIds)));
    this.blockList = new Uint32Array(heap.buffer, heap.plan.blockListOffset, heap.numBlocks);
    this.zeroPlan = table.types.map((t) => {
      const pairs: number[] = [];
      for (const f of t.fields) for (const off of f.offsets) pairs.push(off, f.elemBytes);
      return Int32Array.from(pairs);
    });
    this.kernels = new KernelDispatch(this);
  }

  /** Release what this thread holds outside the JS heap (its wasm thread slot). */
  dispose(): void {
    this.kernels.dispose();
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
    const heap = this.heap;
    const bid = handle >>> SLOT_BITS;
    const t = heap.i32[heap.blockWord(bid) + BLOCK_TYPE_WORD]!;
    const View = this.views[t];
    if (View == null) throw new InvalidHandleError(handle, 'free-block', `block ${bid} holds no objects`);
    const v = new View();
    v.__o = heap.blockOffset(bid);
    v.__s = handle & 31;
    v.__h = handle;
    v.__i = (v.__o >>> 2) + v.__s;
    return v;
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

  deadAccess(obj: SmmoObject, field: string): never {
    throw new InvalidHandleError(obj.__h, 'deleted', `access to ${obj.constructor.name}.${field} of a deleted object`);
  }

  // ---------------------------------------------------------------- SmmoContext

  create<C extends SmmoClass>(cls: C, init?: Init<InstanceType<C>>): InstanceType<C> {
    const t = this.concreteTypeOf(cls, 'create');
    const h = this.allocator.allocate(t);
    this.zero(t.id, h);
    const v = this.view(h) as InstanceType<C>;
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

  destroy(obj: SmmoObject): void {
    if (obj == null || typeof obj !== 'object' || typeof obj.__h !== 'number') {
      throw new UsageError(`destroy: expected an smmo object, got ${String(obj)}`);
    }
    if (this.checked) {
      const t = this.checkHandle(obj.__h, -1, 'destroy');
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
    } else if (!(handle > 0 && handle < this.heap.numBlocks * 32) || handle !== (handle | 0)) {
      throw new InvalidHandleError(handle, handle === 0 ? 'null' : 'forged', `get: not a handle of this heap`);
    }
    return this.view(handle) as InstanceType<C>;
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
        list = new Uint32Array(heap.numBlocks);
        from = 0;
        to = heap.allocated[id]!.indices(list);
        word = BLOCK_ALLOC_WORD;
        mask = ~heap.highMask[id]!;
      }
      const bytes = heap.plan.blockBytes;
      const base = heap.plan.blocksOffset;
      for (let i = from; i < to; i++) {
        const bid = list[i]!;
        let bits = Atomics.load(i32, heap.blockWord(bid) + word) & mask;
        cur.__o = base + bid * bytes;
        while (bits !== 0) {
          const slot = 31 - Math.clz32(bits & -bits);
          bits &= bits - 1;
          cur.__s = slot;
          cur.__h = bid * 32 + slot;
          cur.__i = (cur.__o >>> 2) + slot;
          fn(cur);
        }
      }
    }
  }

  // ---------------------------------------------------------------- do-all executor

  /**
   * Run `method` on the objects of concrete type `typeId` in blocks list[from … to),
   * each block as one virtual warp: lanes are the set bits of its iteration bitmap.
   */
  runBlocks(typeId: number, method: string, args: readonly unknown[], from: number, to: number): void {
    // A kernel of the chosen backend, if the method has one for this type (kernels.ts K1–K3).
    if (this.kernels.run(typeId, method, args, from, to)) return;
    const heap = this.heap;
    const View = this.views[typeId]!;
    const cur = new View();
    const run = this.runnerFor(typeId, method, args.length);
    const pass = this.pass;
    if (pass) pass.current = cur;
    run(cur, this.blockList, heap.i32, from, to, heap.plan.blocksOffset, heap.plan.blockBytes, heap.blocksWord, heap.blockWords, args);
    if (pass) pass.current = null;
  }

  /** Generated warp loops by "typeId:method:arity" (see runnerFor). */
  private readonly runners = new Map<string, BlockRunner>();

  /**
   * The loop that runs `method` over a range of the block list, generated once per
   * (concrete type, method, arity): each generated function has call sites of its own,
   * so V8 sees one view class and one method there and inlines the method into the
   * loop. A shared loop would see every method of every class and stop inlining.
   * A block is one virtual warp; its lanes are the set bits of the iteration bitmap.
   */
  private runnerFor(typeId: number, method: string, arity: number): BlockRunner {
    const key = `${typeId}:${method}:${arity}`;
    let run = this.runners.get(key);
    if (run === undefined) {
      const params = Array.from({ length: Math.min(arity, 4) }, (_, k) => `a${k}`);
      const call = arity <= 4 ? `cur[${JSON.stringify(method)}](${params.join(', ')});` : `fn.apply(cur, args);`;
      const src =
        `'use strict';\n` +
        `return function run_${typeId}(cur, list, i32, from, to, base, bytes, blocksWord, blockWords, args) {\n` +
        `  const fn = cur[${JSON.stringify(method)}];\n` +
        params.map((p, k) => `  const ${p} = args[${k}];\n`).join('') +
        `  for (let i = from; i < to; i++) {\n` +
        `    const bid = list[i];\n` +
        `    let bits = Atomics.load(i32, blocksWord + bid * blockWords + ${BLOCK_ITER_WORD});\n` +
        `    cur.__o = base + bid * bytes;\n` +
        `    const hbase = bid * 32;\n` +
        `    const ibase = cur.__o >>> 2;\n` +
        `    while (bits !== 0) {\n` +
        `      const slot = 31 - Math.clz32(bits & -bits);\n` +
        `      bits &= bits - 1;\n` +
        `      cur.__s = slot;\n` +
        `      cur.__h = hbase + slot;\n` +
        `      cur.__i = ibase + slot;\n` +
        `      ${call}\n` +
        `    }\n` +
        `  }\n` +
        `  return fn;\n` +
        `};`;
      run = (new Function(src) as () => BlockRunner)();
      this.runners.set(key, run);
    }
    return run;
  }

  /**
   * Prepare a do-all over `t`: write the block lists R of *every* concrete type into the
   * block-list region (Alg. 5) and snapshot their iteration bitmaps, so that the pass,
   * and deviceDo inside it, see exactly the objects that exist now. Returns
   * [start, count] per type id.
   */
  snapshot(): PassLists {
    const heap = this.heap;
    const lists = new Int32Array(2 * this.table.types.length);
    let at = 0;
    const i32 = heap.i32;
    for (const id of this.table.concreteIds) {
      const n = heap.allocated[id]!.indices(this.blockList.subarray(at));
      lists[2 * id] = at;
      lists[2 * id + 1] = n;
      const valid = ~heap.highMask[id]!;
      for (let i = at; i < at + n; i++) {
        const w = heap.blockWord(this.blockList[i]!);
        Atomics.store(i32, w + BLOCK_ITER_WORD, Atomics.load(i32, w + BLOCK_ALLOC_WORD) & valid);
      }
      at += n;
    }
    return lists;
  }

  // ---------------------------------------------------------------- helpers

  /** Set every field of the object `h` of type `typeId` to 0 (0.0, false, null). */
  zero(typeId: number, h: number): void {
    const heap = this.heap;
    const plan = this.zeroPlan[typeId]!;
    const o = heap.blockOffset(h >>> SLOT_BITS);
    const s = h & 31;
    for (let k = 0; k < plan.length; k += 2) {
      const at = o + plan[k]!;
      switch (plan[k + 1]) {
        case 1:
          heap.u8[at + s] = 0;
          break;
        case 2:
          heap.u16[(at >>> 1) + s] = 0;
          break;
        case 4:
          heap.i32[(at >>> 2) + s] = 0;
          break;
        default:
          heap.f64[(at >>> 3) + s] = 0;
      }
    }
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

export { Heap };
