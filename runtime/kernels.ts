/**
 * Kernels: other implementations of class methods, chosen per runtime by its backend
 * ('ts', 'wasm' or 'webgpu': three implementations of one method).
 *
 * A class declares its kernels as a static, next to the methods they implement, one
 * declaration (KernelSpec, runtime/kernel-spec.ts) per method carrying every backend:
 *
 *   export class Body extends object({ ... }) {
 *     static readonly [KERNELS] = gravityKernels(G, DAMPENING); // KernelSpec[] (or () => KernelSpec[])
 *     computeForce(): void { ... }                 // the TypeScript method stays the reference
 *   }
 *
 * A KernelSpec is plain data — method name, wasm export name, how the kernel's parameters
 * are made, and the WGSL kernel if any — so any thread that has the class (the main thread,
 * and every worker, which imports the application's modules) re-creates the same dispatch
 * from the class alone; nothing is registered by side effect. kernelFor() (kernel-spec.ts)
 * is the one lookup of a declaration, for this dispatch and for the GPU runner alike.
 *
 * Which implementation runs (per concrete type T and method M, decided once per thread):
 *  (K1) backend 'ts': the TypeScript method, always.
 *  (K2) backend 'wasm': the kernel for M declared by the nearest class C on T's prototype
 *       chain (T itself first), provided T does not override M below C
 *       (T.prototype[M] === C.prototype[M]); otherwise the TypeScript method. A subclass
 *       without an override runs the kernel with its own field offsets; a subclass that
 *       overrides M runs its TypeScript override (per-method fallback).
 *  (K3) The choice is recorded per "Class.method" (ThreadContext.backendUse) so stats() and
 *       the CLI's --json show what ran where.
 *
 * Kernel call ABI (wasm/src/lib.rs, "kernel contract"): the exported function receives
 *   (block-list byte offset, from, to, blocks byte offset, block bytes, parameter table address)
 * and runs the method on the blocks at positions [from, to) of the pass's block list, each
 * block's lanes masked by its iteration bitmap (the same blocks and bits runBlocks uses).
 * The parameter table (kernel-params.ts: its layout, the generated Rust struct, and the
 * check by name and type when the kernel is bound) holds one entry per declared param:
 *   field     byte offset of the field's SOA array (element `element` of an inline array;
 *             with `elements: n`, the offsets of elements 0…n−1) within a block of T, from
 *             T's TypeLayout (layout.ts, the single source); the field (`name`, default the
 *             param's name) must be of kind `type`. With `class`: the field's offset in the
 *             blocks of that concrete class instead of T's (a kernel that follows a
 *             reference, e.g. an agent reading the cell it stands on; a concrete class,
 *             since an inherited field's offset differs per concrete type);
 *   typeId    the type id of concrete class `class`, as block headers hold it
 *             (BLOCK_TYPE_WORD): with it a kernel tells the concrete type of a referenced
 *             object, as `instanceof` does for a class without subclasses;
 *   arg       argument `index` of the parallelDo call (a number), stored as `type`;
 *   value     a constant, stored as `type`;
 *   deviceDo  (pointer, count) of a table written into the thread's scratch area after the
 *             parameter table, one entry per concrete type S of `class`: [first index,
 *             count] of S's blocks in the pass's block list, then the byte offsets of
 *             `fields` in S's blocks. Inside a pass that is exactly what
 *             ThreadContext.deviceDo visits: the listed blocks and their iteration bitmaps;
 *   allocator the calling thread's allocator state (word index; Allocator.state): the kernel
 *             creates or deletes objects (below, "Allocating kernels");
 *   zero      (pointer, count) of a table in the scratch area: per field element of
 *             concrete class `class`, [byte offset of its SOA array, element bytes]. A
 *             kernel that creates a `class` object zeroes exactly these, as create() does
 *             (ThreadContext.zeroers), so a field added to the class is zeroed without
 *             touching the kernel;
 *   ranks     (pointer, count) of a table in the scratch area that maps a rank r to the
 *             handle of the r-th smallest live object of concrete class `class` (apps/grid.ts:
 *             cell ids), made from the pass's block list of `class` (ascending block
 *             indices): words [first index in the list, blocks, slots per block], then
 *             `count` entries [list position q, rank of q's first object, q's allocation
 *             mask] for the listed blocks that are not full, in list order; every other
 *             listed block is full, its objects slots 0 … slots − 1. Made once per pass and
 *             thread (the objects of `class` must be neither created nor deleted during the
 *             pass). A table that does not fit the scratch area (more than about 300 blocks
 *             that are not full) makes the range run the TypeScript method instead (same
 *             heap: both keep the executor contract; stats() still names the method 'wasm').
 *
 * Allocating kernels (a declaration with an `allocator` parameter). The kernel calls the
 * allocator core (wasm/src/alloc/) on the calling thread's state and keeps its executor
 * contract (wasm/src/alloc/core.rs) exactly as the TypeScript loop does (ThreadContext
 * runnerFor): per block with lanes warp begin, before each lane the lanes left, after the
 * block warp end; so allocations are coalesced into the same slots and the heap after the
 * pass is byte-identical to the TypeScript method's. It creates an object as create() does
 * (allocate, zero every field: `zero`) and deletes one as destroy() does (release: the
 * core clears the object's iteration bit and, in checked mode, bumps its slot generation).
 * It returns 0, or after an allocator error (stopping at once, its warp left open, the
 * error in the state's error words) the handle of the object whose method failed: the
 * host then closes the warp (Allocator.warpEnd, as runBlocks does after a method that
 * threw), names that object as the pass's current one and throws the typed error
 * (Allocator.lastError: HeapExhaustedError for a full heap), so the do-all reports the
 * same MethodError as for the TypeScript method. Checked mode: a kernel
 * deletes only objects it reached as live (the running lane, an object a live reference
 * names), so destroy()'s checks cannot fail there; the generation bump is the core's and
 * happens alike.
 */
import { KernelParamsError, UsageError } from './errors.js';
import type { Allocator } from './allocator.js';
import { popc } from './bits.js';
import type { Heap } from './heap.js';
import { BLOCK_ALLOC_WORD } from './layout.js';
import { checkDescriptor, paramTable, type ParamTable } from './kernel-params.js';
import type { TypeLayout, TypeTable } from './layout.js';
import type { ScalarKind, SmmoObject } from './schema.js';
import { checkBackend, kernelFor, type Backend, type KernelSpec } from './kernel-spec.js';
import type { WasmInstance } from './wasm.js';

export { BACKENDS, checkBackend, declaredMethods, kernelFor, KERNELS, ownKernels } from './kernel-spec.js';
export type { Backend, KernelDeclaration, KernelNumberType, KernelParam, KernelSpec, WgslKernel } from './kernel-spec.js';

/**
 * What kernels need of a thread (ThreadContext implements it; a narrow interface so that
 * thread.ts may import this module without an import cycle): its heap view, the classes,
 * the running pass's block lists, and where to record which backend ran what (K3).
 */
export interface KernelHost {
  readonly heap: Heap;
  readonly table: TypeTable;
  /** The running do-all pass: [first index, count] per type id in the block list; null outside a pass. */
  readonly pass: { readonly lists: Int32Array; current: SmmoObject | null } | null;
  readonly backendUse: Map<string, Backend>;
  /** The thread's allocator (allocating kernels: its state, its errors). */
  readonly allocator: Allocator;
  kernels: KernelDispatch;
}

// ------------------------------------------------------------------ bound kernels

/** Blocks per kernel call (see BoundKernel.run); a call costs about 0.1 µs, a block far more. */
const CALL_BLOCKS = 8;

/** A kernel bound to one concrete type on one thread: its function and its parameter table. */
export class BoundKernel {
  /** The table's fixed words: [byte offset in the table, ABI number type, value]. */
  private readonly fixed: [number, string, number][] = [];
  /** [byte offset in the table, ABI number type, parallelDo argument index]. */
  private readonly argSlots: [number, string, number][] = [];
  /** deviceDo tables: byte offset of (pointer, count) in the table, then per source [type id, ...field offsets]. */
  private readonly tables: { at: number; width: number; sources: number[][] }[] = [];
  /** zero tables: byte offset of (pointer, count) in the table, then [offset, bytes] per field element. */
  private readonly zeros: { at: number; words: number[] }[] = [];
  /** ranks tables: byte offset of (pointer, count) in the table, the class, and the table of the last pass. */
  private readonly ranks: { at: number; t: TypeLayout; pass: object | null; words: number[] | null }[] = [];
  /** The kernel creates or deletes objects (an `allocator` parameter). */
  private allocates = false;
  private readonly table: ParamTable;
  private readonly list: number;
  private readonly blocks: number;
  private readonly blockBytes: number;

  constructor(
    private readonly ctx: KernelHost,
    private readonly wasm: WasmInstance,
    private readonly fn: (...a: number[]) => number,
    readonly label: string,
    t: TypeLayout,
    spec: KernelSpec,
  ) {
    const heap = ctx.heap;
    this.list = heap.plan.blockListOffset;
    this.blocks = heap.plan.blocksOffset;
    this.blockBytes = heap.plan.blockBytes;
    this.table = paramTable(spec, label);
    // The module's table of this export, by name and type (kernel-params.ts P3).
    const describe = wasm.fn(`smmo_params_${spec.export}`);
    if (describe === undefined)
      throw new KernelParamsError(
        label,
        `the wasm module ${wasm.file} does not describe the parameters of ${spec.export} (no export smmo_params_${spec.export}); ` +
          'rebuild it with `node scripts/build-wasm.mjs` (wasm/src/params.rs must declare the kernel)',
      );
    checkDescriptor(label, spec.export, readCString(heap.u8, describe()), this.table);
    for (const e of this.table.entries) {
      const p = e.param;
      switch (p.kind) {
        case 'field': {
          const owner = p.class === undefined ? t : concreteNamed(ctx, p.class, label);
          const elements = p.elements === undefined ? [p.element ?? 0] : [...Array(p.elements).keys()];
          elements.forEach((k, i) => this.fixed.push([e.offset + 4 * i, 'u32', fieldOffset(owner, p.name ?? e.name, p.type, k, label)]));
          break;
        }
        case 'typeId':
          this.fixed.push([e.offset, 'u32', concreteNamed(ctx, p.class, label).id]);
          break;
        case 'arg':
          this.argSlots.push([e.offset, p.type, p.index]);
          break;
        case 'value':
          this.fixed.push([e.offset, p.type, p.value]);
          break;
        case 'deviceDo': {
          const src = ctx.table.types.find((u) => u.name === p.class);
          if (!src) throw new UsageError(`${label}: its kernel iterates over class ${p.class}, which is not registered with this runtime`);
          const sources = src.concrete.map((id) => [id, ...p.fields.map((f) => fieldOffset(ctx.table.types[id]!, f, p.type, 0, label))]);
          this.tables.push({ at: e.offset, width: 2 + p.fields.length, sources });
          break;
        }
        case 'allocator':
          this.allocates = true;
          this.fixed.push([e.offset, 'u32', ctx.allocator.state]);
          break;
        case 'zero': {
          const u = concreteNamed(ctx, p.class, label);
          const words: number[] = [];
          for (const f of u.fields) for (const off of f.offsets) words.push(off, f.elemBytes);
          this.zeros.push({ at: e.offset, words });
          break;
        }
        case 'ranks':
          this.ranks.push({ at: e.offset, t: concreteNamed(ctx, p.class, label), pass: null, words: null });
          break;
      }
    }
    if (fn.length !== 6) {
      throw new KernelParamsError(
        label,
        `wasm export ${spec.export} takes ${fn.length} parameters, not the 6 of the kernel ABI (list, from, to, blocks, block bytes, table); ` +
          'rebuild with `node scripts/build-wasm.mjs`',
      );
    }
  }

  /** Run blocks [from, to); false when a table does not fit the scratch area (the caller runs the TypeScript method). */
  run(from: number, to: number, args: readonly unknown[]): boolean {
    const at = this.writeTable(args);
    if (at < 0) return false;
    // In chunks: V8 runs a wasm function first as baseline (Liftoff) code and swaps in
    // optimised code only for later calls (it has no on-stack replacement for wasm), so one
    // call per pass would run a whole first pass at baseline speed, about half as fast.
    if (!this.allocates) {
      for (let a = from; a < to; a += CALL_BLOCKS) this.fn(this.list, a, Math.min(a + CALL_BLOCKS, to), this.blocks, this.blockBytes, at);
      return true;
    }
    // Allocating kernels (module comment): a status per call; after an error the warp is
    // still open, and closing it gives its cached slots back.
    const alloc = this.ctx.allocator;
    alloc.syncLimits();
    try {
      for (let a = from; a < to; a += CALL_BLOCKS) {
        const failed = this.fn(this.list, a, Math.min(a + CALL_BLOCKS, to), this.blocks, this.blockBytes, at);
        if (failed !== 0) {
          const pass = this.ctx.pass;
          if (pass !== null) pass.current = { __h: failed >>> 0 } as SmmoObject;
          throw alloc.lastError();
        }
      }
    } finally {
      alloc.warpEnd();
    }
    return true;
  }

  /**
   * Write the parameter table, then the deviceDo source tables of the running pass, into
   * this thread's scratch area (rewritten per run: other kernels of the thread use it too);
   * returns the table's address.
   */
  private writeTable(args: readonly unknown[]): number {
    const heap = this.ctx.heap;
    const base = this.wasm.scratch;
    const end = base + this.wasm.scratchBytes;
    for (const [off, type, v] of this.fixed) store(heap, base + off, type, v);
    for (const [off, type, index] of this.argSlots) {
      const x = args[index];
      if (typeof x !== 'number')
        throw new UsageError(`${this.label}: argument ${index} must be a number for the wasm kernel, got ${typeof x}`);
      store(heap, base + off, type, x);
    }
    const u32 = heap.u32;
    let at = base + this.table.bytes;
    for (const z of this.zeros) {
      const bytes = 4 * z.words.length;
      if (at + bytes > end) throw new UsageError(`${this.label}: the zero table of its kernel does not fit the kernel scratch area`);
      u32[(base + z.at) >>> 2] = at;
      u32[(base + z.at + 4) >>> 2] = z.words.length >>> 1;
      u32.set(z.words, at >>> 2);
      at += bytes;
    }
    if (this.tables.length === 0 && this.ranks.length === 0) return base;
    const pass = this.ctx.pass;
    if (pass === null) throw new UsageError(`${this.label}: its kernel uses deviceDo or ranks and can only run inside a do-all pass`);
    for (const r of this.ranks) {
      if (r.pass !== pass) {
        r.words = this.rankTable(r.t, pass.lists);
        r.pass = pass;
      }
      const words = r.words!;
      const bytes = 4 * words.length;
      if (at + bytes > end) return -1;
      u32[(base + r.at) >>> 2] = at;
      u32[(base + r.at + 4) >>> 2] = (words.length - 3) / 3;
      u32.set(words, at >>> 2);
      at += bytes;
    }
    for (const table of this.tables) {
      const bytes = 4 * table.width * table.sources.length;
      if (at + bytes > end)
        throw new UsageError(`${this.label}: deviceDo over ${table.sources.length} classes does not fit the kernel scratch area`);
      u32[(base + table.at) >>> 2] = at;
      u32[(base + table.at + 4) >>> 2] = table.sources.length;
      let w = at >>> 2;
      for (const s of table.sources) {
        const id = s[0]!;
        u32[w++] = pass.lists[2 * id]!;
        u32[w++] = pass.lists[2 * id + 1]!;
        for (let k = 1; k < s.length; k++) u32[w++] = s[k]!;
      }
      at += bytes;
    }
    return base;
  }

  /** The ranks table of concrete type `t` for a pass with block lists `lists` (module comment, `ranks`). */
  private rankTable(t: TypeLayout, lists: Int32Array): number[] {
    const heap = this.ctx.heap;
    const start = lists[2 * t.id]!;
    const count = lists[2 * t.id + 1]!;
    const words = [start, count, t.slots];
    const list = heap.u32;
    const listWord = this.list >>> 2;
    const high = t.highMask;
    let rank = 0;
    for (let q = 0; q < count; q++) {
      const bid = list[listWord + start + q]!;
      const live = heap.i32[heap.blockWord(bid) + BLOCK_ALLOC_WORD]! & ~high;
      const n = popc(live);
      if (n !== t.slots) words.push(q, rank, live >>> 0);
      rank += n;
    }
    return words;
  }
}

/** Store number `v` as ABI type `type` at byte `at` (aligned to its size: kernel-params.ts P2). */
function store(heap: Heap, at: number, type: string, v: number): void {
  if (type === 'f64') heap.f64[at >>> 3] = v;
  else if (type === 'f32') heap.f32[at >>> 2] = v;
  else if (type === 'i32') heap.i32[at >>> 2] = v;
  else heap.u32[at >>> 2] = v;
}

/** The NUL-terminated string at byte `at` (at most 4 KiB: a descriptor). */
function readCString(u8: Uint8Array, at: number): string {
  let end = at;
  while (end < u8.length && end - at < 4096 && u8[end] !== 0) end++;
  return String.fromCharCode(...u8.subarray(at, end));
}

/** The concrete class named `name` among the runtime's classes (kernel parameters `field` with `class`, `typeId`). */
function concreteNamed(ctx: KernelHost, name: string, label: string): TypeLayout {
  const u = ctx.table.types.find((x) => x.name === name);
  if (!u) throw new UsageError(`${label}: its kernel reads class ${name}, which is not registered with this runtime`);
  if (u.abstract)
    throw new UsageError(
      `${label}: its kernel reads class ${name}, which is abstract; name a concrete class (field offsets and type ids are per concrete class)`,
    );
  return u;
}

function fieldOffset(t: TypeLayout, name: string, type: ScalarKind, element: number, label: string): number {
  const f = t.fields.find((x) => x.name === name);
  if (!f) throw new KernelParamsError(label, `its kernel reads field '${name}', which ${t.name} does not have`);
  if (f.kind !== type) throw new KernelParamsError(label, `its kernel reads ${t.name}.${name} as ${type}, but the field is ${f.kind}`);
  const off = f.offsets[element];
  if (off === undefined) throw new KernelParamsError(label, `field ${t.name}.${name} has no element ${element}`);
  return off;
}

// ------------------------------------------------------------------ dispatch

/**
 * One thread's choice of implementation per (concrete type, method), made on first use
 * (K1–K3), and the thread's wasm instance. ThreadContext.runBlocks asks it first (once per
 * type and method: its routes).
 */
export class KernelDispatch {
  /** Per concrete type id: method → bound kernel, or null for the TypeScript method. */
  private readonly cache: Map<string, BoundKernel | null>[] = [];

  constructor(
    private readonly ctx: KernelHost,
    readonly backend: Backend = 'ts',
    private readonly wasm: WasmInstance | null = null,
  ) {}

  /**
   * Choose the implementation of `method` for `typeId` on this thread, once, and record it in
   * backendUse (K3). The calling thread calls this for passes that run on workers, so that
   * its stats() name every method even when the workers ran all of its blocks.
   */
  note(typeId: number, method: string): BoundKernel | null {
    const perType = this.cache[typeId] ?? (this.cache[typeId] = new Map());
    let k = perType.get(method);
    if (k === undefined) {
      k = this.resolve(typeId, method);
      perType.set(method, k);
      this.ctx.backendUse.set(`${this.ctx.table.types[typeId]!.name}.${method}`, k === null ? 'ts' : 'wasm');
    }
    return k;
  }

  /** Which backend runs `method` on concrete type `typeId` (K1, K2). */
  backendFor(typeId: number, method: string): Backend {
    return this.backend === 'ts' || kernelFor(this.ctx.table.types[typeId]!, method) === null ? 'ts' : 'wasm';
  }

  private resolve(typeId: number, method: string): BoundKernel | null {
    if (this.wasm === null) return null;
    const t = this.ctx.table.types[typeId]!;
    const spec = kernelFor(t, method);
    if (spec === null) return null;
    const label = `${t.name}.${method}`;
    const fn = this.wasm.fn(spec.export);
    if (fn === undefined)
      throw new UsageError(
        `${label}: the wasm module ${this.wasm.file} has no export ${spec.export}; rebuild it with \`node scripts/build-wasm.mjs\``,
      );
    return new BoundKernel(this.ctx, this.wasm, fn, label, t, spec);
  }
}

/**
 * Give `ctx` the dispatch for `backend` (the Runtime calls this for its thread, a worker for
 * its own). For 'wasm' the kernels run in the thread's instance of the module, the one its
 * heap view made for the allocator core (Heap.wasm: one instance and thread slot per thread).
 */
export function configureBackend(ctx: KernelHost, backend: unknown): Backend {
  const b = checkBackend(backend);
  if (b === 'ts' || b === 'webgpu') {
    // 'webgpu': the passes that stay on the CPU (no WGSL kernel) run the TypeScript methods.
    ctx.kernels = new KernelDispatch(ctx, 'ts');
  } else {
    ctx.kernels = new KernelDispatch(ctx, 'wasm', ctx.heap.wasm);
  }
  return b;
}
