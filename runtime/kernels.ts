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
 *   (block-list byte offset, from, to, blocks byte offset, block bytes, ...params)
 * and runs the method on the blocks at positions [from, to) of the pass's block list, each
 * block's lanes masked by its iteration bitmap (the same blocks and bits runBlocks uses).
 * Then one or two numbers per KernelParam, in order:
 *   field     byte offset of the field's SOA array (element `element` of an inline array)
 *             within a block of T, from T's TypeLayout (layout.ts, the single source); the
 *             field must be of kind `type`. With `class`: the field's offset in the blocks of
 *             that concrete class instead of T's (a kernel that follows a reference, e.g. an
 *             agent reading the cell it stands on; a concrete class, since an inherited
 *             field's offset differs per concrete type);
 *   typeId    the type id of concrete class `class`, as block headers hold it
 *             (BLOCK_TYPE_WORD): with it a kernel tells the concrete type of a referenced
 *             object, as `instanceof` does for a class without subclasses;
 *   arg       argument `index` of the parallelDo call (a number);
 *   value     a constant;
 *   deviceDo  two numbers (pointer, count) to a table written into the thread's scratch area,
 *             one entry per concrete type S of `class`: [first index, count] of S's blocks in
 *             the pass's block list, then the byte offsets of `fields` in S's blocks.
 *             Inside a pass that is exactly what ThreadContext.deviceDo visits: the listed
 *             blocks and their iteration bitmaps.
 */
import { UsageError } from './errors.js';
import type { Heap } from './heap.js';
import type { TypeLayout, TypeTable } from './layout.js';
import type { ScalarKind } from './schema.js';
import { checkBackend, kernelFor, type Backend, type KernelSpec } from './kernel-spec.js';
import type { WasmInstance } from './wasm.js';

export { BACKENDS, checkBackend, declaredMethods, kernelFor, KERNELS, ownKernels } from './kernel-spec.js';
export type { Backend, KernelDeclaration, KernelParam, KernelSpec, WgslKernel } from './kernel-spec.js';

/**
 * What kernels need of a thread (ThreadContext implements it; a narrow interface so that
 * thread.ts may import this module without an import cycle): its heap view, the classes,
 * the running pass's block lists, and where to record which backend ran what (K3).
 */
export interface KernelHost {
  readonly heap: Heap;
  readonly table: TypeTable;
  /** The running do-all pass: [first index, count] per type id in the block list; null outside a pass. */
  readonly pass: { readonly lists: Int32Array } | null;
  readonly backendUse: Map<string, Backend>;
  kernels: KernelDispatch;
}

// ------------------------------------------------------------------ bound kernels

/** Blocks per kernel call (see BoundKernel.run); a call costs about 0.1 µs, a block far more. */
const CALL_BLOCKS = 8;

/** A kernel bound to one concrete type on one thread: its function and its argument vector. */
class BoundKernel {
  /** Argument vector; positions 1, 2 (from, to), args and nothing else change per call. */
  private readonly argv: number[];
  /** [position in argv, parallelDo argument index]. */
  private readonly argSlots: [number, number][] = [];
  /** deviceDo tables: position in argv of the pointer, then per source [type id, ...field offsets]. */
  private readonly tables: { at: number; width: number; sources: number[][] }[] = [];

  constructor(
    private readonly ctx: KernelHost,
    private readonly wasm: WasmInstance,
    private readonly fn: (...a: number[]) => number,
    readonly label: string,
    t: TypeLayout,
    spec: KernelSpec,
  ) {
    const heap = ctx.heap;
    this.argv = [heap.plan.blockListOffset, 0, 0, heap.plan.blocksOffset, heap.plan.blockBytes];
    for (const p of spec.params) {
      switch (p.kind) {
        case 'field':
          this.argv.push(
            fieldOffset(p.class === undefined ? t : concreteNamed(ctx, p.class, label), p.name, p.type, p.element ?? 0, label),
          );
          break;
        case 'typeId':
          this.argv.push(concreteNamed(ctx, p.class, label).id);
          break;
        case 'arg':
          this.argSlots.push([this.argv.length, p.index]);
          this.argv.push(0);
          break;
        case 'value':
          this.argv.push(p.value);
          break;
        case 'deviceDo': {
          const src = ctx.table.types.find((u) => u.name === p.class);
          if (!src) throw new UsageError(`${label}: its kernel iterates over class ${p.class}, which is not registered with this runtime`);
          const sources = src.concrete.map((id) => [id, ...p.fields.map((f) => fieldOffset(ctx.table.types[id]!, f, p.type, 0, label))]);
          this.tables.push({ at: this.argv.length, width: 2 + p.fields.length, sources });
          this.argv.push(0, 0);
          break;
        }
        default:
          throw new UsageError(`${label}: unknown kernel parameter ${JSON.stringify(p)}`);
      }
    }
    if (fn.length !== this.argv.length) {
      throw new UsageError(
        `${label}: wasm export ${spec.export} takes ${fn.length} parameters but its kernel spec makes ${this.argv.length}; ` +
          'the spec and wasm/src disagree (rebuild with `node scripts/build-wasm.mjs` after changing either)',
      );
    }
  }

  run(from: number, to: number, args: readonly unknown[]): void {
    const v = this.argv;
    v[1] = from;
    v[2] = to;
    for (const [at, index] of this.argSlots) {
      const x = args[index];
      if (typeof x !== 'number')
        throw new UsageError(`${this.label}: argument ${index} must be a number for the wasm kernel, got ${typeof x}`);
      v[at] = x;
    }
    if (this.tables.length > 0) this.writeTables();
    // In chunks: V8 runs a wasm function first as baseline (Liftoff) code and swaps in
    // optimised code only for later calls (it has no on-stack replacement for wasm), so one
    // call per pass would run a whole first pass at baseline speed, about half as fast.
    for (let a = from; a < to; a += CALL_BLOCKS) {
      v[1] = a;
      v[2] = Math.min(a + CALL_BLOCKS, to);
      this.fn(...v);
    }
  }

  /** Write the deviceDo source tables of the running pass into this thread's scratch area. */
  private writeTables(): void {
    const pass = this.ctx.pass;
    if (pass === null) throw new UsageError(`${this.label}: its kernel uses deviceDo and can only run inside a do-all pass`);
    const u32 = this.ctx.heap.u32;
    let at = this.wasm.scratch;
    const end = at + this.wasm.scratchBytes;
    for (const table of this.tables) {
      const bytes = 4 * table.width * table.sources.length;
      if (at + bytes > end)
        throw new UsageError(`${this.label}: deviceDo over ${table.sources.length} classes does not fit the kernel scratch area`);
      this.argv[table.at] = at;
      this.argv[table.at + 1] = table.sources.length;
      let w = at >>> 2;
      for (const s of table.sources) {
        const id = s[0]!;
        u32[w++] = pass.lists[2 * id]!;
        u32[w++] = pass.lists[2 * id + 1]!;
        for (let k = 1; k < s.length; k++) u32[w++] = s[k]!;
      }
      at += bytes;
    }
  }
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
  if (!f) throw new UsageError(`${label}: its kernel reads field '${name}', which ${t.name} does not have`);
  if (f.kind !== type) throw new UsageError(`${label}: its kernel reads ${t.name}.${name} as ${type}, but the field is ${f.kind}`);
  const off = f.offsets[element];
  if (off === undefined) throw new UsageError(`${label}: field ${t.name}.${name} has no element ${element}`);
  return off;
}

// ------------------------------------------------------------------ dispatch

/**
 * One thread's choice of implementation per (concrete type, method), made on first use
 * (K1–K3), and the thread's wasm instance. ThreadContext.runBlocks asks it first.
 */
export class KernelDispatch {
  /** Per concrete type id: method → bound kernel, or null for the TypeScript method. */
  private readonly cache: Map<string, BoundKernel | null>[] = [];

  constructor(
    private readonly ctx: KernelHost,
    readonly backend: Backend = 'ts',
    private readonly wasm: WasmInstance | null = null,
  ) {}

  /** Run the pass's blocks [from, to) with a kernel if there is one; false: run the TypeScript method. */
  run(typeId: number, method: string, args: readonly unknown[], from: number, to: number): boolean {
    let k = this.cache[typeId]?.get(method);
    if (k === undefined) k = this.note(typeId, method);
    if (k === null) return false;
    k.run(from, to, args);
    return true;
  }

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
