/**
 * The method compiler: one TypeScript method → a specialised warp loop, per concrete
 * class, per thread (DynaSOAr's do-all, paper §3 "Parallel Object Enumeration", runs the
 * same method over every object of a class; here the method is specialised to the
 * class's heap layout instead of being called through views).
 *
 *   scope.ts    what the method's free names are (closure resolution through V8)
 *   parse.ts    its source → syntax tree (acorn)
 *   lower.ts    syntax tree → the intermediate form (ir.ts): objects as handles, fields
 *               as loads and stores, calls inlined, deviceDo as loops
 *   emit-js.ts  intermediate form → JavaScript over the heap's typed arrays
 *
 * What is compiled and what falls back: README "Compiled methods". A method outside the
 * subset runs as the interpreted TypeScript method, visibly (CompileOutcome.reason, in
 * stats() and the CLI's --json).
 *
 * Invariants:
 *  (C1) A compiled method does what the interpreted one does to the heap, byte for byte,
 *       with the same calls of the allocator in the same order (test/compiler*.test.ts
 *       compare heaps after every pass; compiler-fuzz.test.ts on random programs). The
 *       one exception is a NaN's bits, which JavaScript leaves to the engine: V8 may
 *       store a NaN computed by different code with the other sign bit.
 *  (C2) Compilation is deterministic and per thread: every worker compiles the same
 *       methods from the same classes to the same code (no code crosses threads).
 *  (C3) Compiling never runs user code (scope.ts S1); a compile error of the compiler
 *       itself is a fallback with the error as the reason, never a failed pass.
 *  (C4) One function per distinct generated code on a thread (MethodCompiler.runnerOf):
 *       classes whose compiled method is the same code share its runner.
 */
import { takeCachedSlot } from '../alloc-fast-path.js';
import { NO_RANK_BLOCKS, rankForm } from '../rank-table.js';
import { popc } from '../bits.js';
import { InvalidHandleError, UsageError } from '../errors.js';
import type { Heap } from '../heap.js';
import {
  BLOCK_ALLOC_WORD,
  BLOCK_TYPE_WORD,
  FREE_TYPE,
  S_CACHED,
  S_TYPES,
  TS_CACHE_MASK,
  S_LANES_LEFT,
  S_WARP,
  SLOT_BITS,
  type TypeLayout,
  type TypeTable,
} from '../layout.js';
import type { SmmoObject } from '../schema.js';
import { emitJs, type EmitHost, type EmittedJs } from './emit-js.js';
import { CompileFallback, lowerMethod } from './lower.js';
import { ClosureResolver } from './scope.js';

export { CompileFallback } from './lower.js';
export type { MethodIR } from './ir.js';
import type { MethodIR } from './ir.js';

/** What the compiled code calls back into: the thread's context (what methods see as `this.runtime`). */
export interface CompilerContext {
  readonly heap: Heap;
  readonly table: TypeTable;
  readonly checked: boolean;
  readonly allocator: {
    /** Word index of this thread's allocator state in the heap (layout.ts). */
    readonly state: number;
    allocate(t: TypeLayout): number;
    releaseHandle(h: number): void;
    warpEnd(): void;
    /** runtime/alloc-fast-path.ts F2 (Allocator.fast), with releaseRest for what it leaves to the core; absent: releaseHandle. */
    readonly fast?: { readonly enabled: boolean; release(h: number): number };
    releaseRest?(h: number, r: number): void;
  };
  view(handle: number): SmmoObject;
  checkHandle(handle: number, typeId: number, where: string): number;
  checkRef(handle: number, targetTypeId: number, where: string): void;
  /** A value assigned to a reference: a view of this context (any mode); checked mode: live, of the target type, fresh. */
  checkRefValue(v: unknown, targetTypeId: number, where: string): void;
  /** destroy() by handle, with checked mode's rules (`current`: the handle of the lane's own object). */
  destroyHandle(handle: number, current: number): void;
  count(cls: unknown): number;
}

/**
 * A compiled warp loop: runs the method on the blocks list[from … to) of the running pass,
 * each block's lanes read from its header word `word` (BLOCK_ITER_WORD, or BLOCK_ALLOC_WORD
 * for a do-all that changes no allocation word but its own block's, after reading it:
 * runtime/thread.ts runBlocks R1).
 */
export type Runner = (
  ctx: CompilerContext,
  list: Uint32Array,
  from: number,
  to: number,
  args: readonly unknown[],
  lists: Int32Array,
  word: number,
) => void;

export type CompileOutcome =
  | {
      readonly compiled: true;
      readonly run: Runner;
      /** Handle of the object whose lane threw, after a throw. */
      readonly state: { handle: number };
      /** Parts of the method that run as JavaScript (calls of functions that do not compile). */
      readonly notes: readonly string[];
      /** Whether the method compiled entirely to portable form (no JavaScript calls or values). */
      readonly portable: boolean;
      /**
       * Whether the method's only JavaScript is rankTable() calls and reads of their elements
       * (emit-wgsl.ts W7's subset): such JavaScript creates and deletes nothing and reads no
       * do-all snapshot (runtime/rank-table.ts R5), so the method is treated as portable by
       * the do-all's snapshot (runtime/doall.ts computeReach) and its lanes (thread.ts R1).
       */
      readonly ranksOnly: boolean;
      /** Concrete type ids the method's deviceDo loops iterate (the inlined callees' included). */
      readonly iterates: readonly number[];
      /** Whether the method (with what it inlines) creates or deletes objects. */
      readonly allocates: boolean;
      readonly frees: boolean;
      /** Whether it deletes an object other than the lane's own (emit-js.ts freesOthers): false when it deletes none. */
      readonly freesOthers: boolean;
      /** Concrete type ids of the objects it creates (emit-js.ts createdTypes), ascending; empty when it creates none. */
      readonly creates: readonly number[];
      readonly source: string;
    }
  | { readonly compiled: false; readonly reason: string };

/** What the JavaScript emitter needs of a thread context: its heap's geometry, types, mode and allocator state words. */
export function emitHostOf(ctx: CompilerContext): EmitHost {
  const heap = ctx.heap;
  return {
    blocksWord: heap.blocksWord,
    blockWords: heap.blockWords,
    blocksOffset: heap.plan.blocksOffset,
    blockBytes: heap.plan.blockBytes,
    handleLimit: heap.numBlocks * 32,
    typeCount: ctx.table.types.length,
    types: ctx.table.types,
    checked: ctx.checked,
    fastRelease: ctx.allocator.fast?.enabled === true && ctx.allocator.releaseRest !== undefined,
    warpWords: {
      warp: ctx.allocator.state + S_WARP,
      lanes: ctx.allocator.state + S_LANES_LEFT,
      cached: ctx.allocator.state + S_CACHED,
      cacheMask0: ctx.allocator.state + S_TYPES + TS_CACHE_MASK,
    },
  };
}

/** Process-wide: one resolver serves every thread context of this thread. */
let resolver: ClosureResolver | null = null;

export class MethodCompiler {
  private readonly cache: Map<string, CompileOutcome>[] = [];
  private readonly helpers: Record<string, unknown>;

  constructor(private readonly ctx: CompilerContext) {
    const heap = ctx.heap;
    const i32 = heap.i32;
    const table = ctx.table;
    const blocksWord = heap.blocksWord;
    const blockWords = heap.blockWords;
    const limit = heap.numBlocks * 32;
    const viewable = new Uint8Array(table.types.length + 1);
    for (const t of table.types) if (!t.abstract) viewable[t.id + 1] = 1;
    this.helpers = {
      i8: heap.i8,
      u8: heap.u8,
      i16: heap.i16,
      u16: heap.u16,
      i32: heap.i32,
      u32: heap.u32,
      f32: heap.f32,
      f64: heap.f64,
      allocator: ctx.allocator,
      types: table.types,
      popc,
      takeCachedSlot,
      rankForm: (table: Uint32Array, per: number) => rankForm(table, per, heap.plan.blocksOffset, heap.plan.blockBytes),
      noRankBlocks: NO_RANK_BLOCKS,
      noRankTable: new Uint32Array(0),
      nullDeref(what: string): never {
        const field = what.slice(what.lastIndexOf('.') + 1);
        throw new TypeError(`Cannot read properties of null (reading '${field}')`);
      },
      range(what: string, i: unknown, length: number): never {
        throw new RangeError(`${what}${String(i)}] is out of bounds (length ${length})`);
      },
      get(c: CompilerContext, h: number, typeId: number): number {
        if (typeId >= 0) {
          c.checkHandle(h, typeId, `get(${table.types[typeId]!.name})`);
          return h;
        }
        // As the unchecked ThreadContext.get: in the heap, in a block that holds objects.
        if (!(h > 0 && h < limit) || h !== (h | 0))
          throw new InvalidHandleError(h, h === 0 ? 'null' : 'forged', 'get: not a handle of this heap');
        const bid = h >>> SLOT_BITS;
        if (viewable[i32[blocksWord + bid * blockWords + BLOCK_TYPE_WORD]! + 1] !== 1) {
          throw new InvalidHandleError(h, 'free-block', `get: block ${bid} holds no objects`);
        }
        return h;
      },
      view(c: CompilerContext, h: number): SmmoObject | null {
        return h === 0 ? null : c.view(h);
      },
      boxArr(c: CompilerContext, h: number, field: string): unknown {
        return (c.view(h) as unknown as Record<string, unknown>)[field];
      },
      unbox(c: CompilerContext, v: unknown, typeId: number): number {
        // As a reference setter: null/undefined → 0, a view of this runtime → its handle (V2; checked: V1).
        if (v == null) return 0;
        c.checkRefValue(v, typeId, 'reference');
        return (v as { __h: number }).__h;
      },
      destroyNull(): never {
        throw new UsageError('destroy: expected an smmo object, got null');
      },
      check(h: number, typeSet: Uint8Array, field: string, cls: string): void {
        // Checked mode: as the checked accessors, the slot must be allocated and the block of the
        // class; the message is theirs (ThreadContext.deadAccess), naming the object's class as
        // its block still says, else `cls` (the class the access was typed against, concrete
        // where the compiler knows it).
        const w = blocksWord + (h >>> SLOT_BITS) * blockWords;
        const t = i32[w + BLOCK_TYPE_WORD]!;
        if ((i32[w + BLOCK_ALLOC_WORD]! & (1 << (h & 31))) === 0 || typeSet[t + 1] !== 1) {
          const name = t === FREE_TYPE || typeSet[t + 1] !== 1 ? cls : table.types[t]!.name;
          const free = t === FREE_TYPE ? ' (its block is free)' : '';
          throw new InvalidHandleError(h, 'deleted', `access to ${name}.${field} of a deleted object${free}`);
        }
      },
      checkRef(c: CompilerContext, h: number, targetTypeId: number, where: string): boolean {
        c.checkRef(h, targetTypeId, where);
        return true;
      },
      free(c: CompilerContext, h: number, current: number): void {
        if (h === 0) throw new UsageError('destroy: expected an smmo object, got null');
        c.destroyHandle(h, current);
      },
      state: null,
    };
  }

  /**
   * The compiled runner of `method` for concrete type `typeId`, or why there is none
   * (cached per type and method); a first compile is recorded in `record` under "Class.method".
   */
  compile(typeId: number, method: string, record?: Map<string, CompileOutcome>): CompileOutcome {
    let perType = this.cache[typeId];
    if (perType === undefined) perType = this.cache[typeId] = new Map();
    let out = perType.get(method);
    if (out === undefined) {
      out = this.compileUncached(typeId, method);
      perType.set(method, out);
      record?.set(`${this.ctx.table.types[typeId]!.name}.${method}`, out);
    }
    return out;
  }

  /**
   * (C4) The runner of emitted code: made once per distinct code. Methods of different
   * classes whose code is the same but for the function's name (an inherited method over
   * fields laid out alike: ECS components that extend one base) and whose statics are the
   * same values get the same function and the same state object. Their passes then differ
   * in nothing but their blocks, which is what lets a do-all over their base run them as
   * one pass (doall.ts spans) and lets V8 optimise one loop instead of one per class.
   * The function keeps the name of the first class it was made for.
   */
  private runnerOf(emitted: EmittedJs, statics: readonly unknown[]): { run: Runner; state: { handle: number } } {
    const header = `return function ${emitted.name}(`;
    const at = emitted.source.indexOf(header);
    const key = at < 0 ? emitted.source : emitted.source.slice(0, at) + emitted.source.slice(at + header.length);
    let made = this.runners.get(key);
    if (made === undefined) this.runners.set(key, (made = []));
    for (const m of made) {
      if (m.statics.length === statics.length && m.statics.every((v, i) => v === statics[i])) return m;
    }
    const state = { handle: 0 };
    const factory = new Function('H', 'S', emitted.source) as (h: unknown, s: readonly unknown[]) => Runner;
    const m = { statics, run: factory({ ...this.helpers, state }, statics), state };
    made.push(m);
    return m;
  }

  /** runnerOf's functions by their code without its name, each with the statics it was made with. */
  private readonly runners = new Map<string, { statics: readonly unknown[]; run: Runner; state: { handle: number } }[]>();

  private compileUncached(typeId: number, method: string): CompileOutcome {
    const ctx = this.ctx;
    const t = ctx.table.types[typeId]!;
    let source = '';
    try {
      resolver ??= new ClosureResolver();
      const ir = lowerMethod(ctx.table, t, method, resolver);
      const emitted = emitJs(ir, emitHostOf(ctx));
      source = emitted.source;
      const { run, state } = this.runnerOf(emitted, ir.statics);
      return {
        compiled: true,
        run,
        state,
        notes: ir.notes,
        portable: ir.portable,
        ranksOnly: emitted.ranksOnly,
        iterates: ir.iterates,
        allocates: ir.allocates,
        frees: ir.frees,
        freesOthers: emitted.freesOthers,
        creates: emitted.creates,
        source,
      };
    } catch (e) {
      if (e instanceof CompileFallback) return { compiled: false, reason: e.reason };
      // (C3) a fault of the compiler: the method still runs, interpreted; the reason says what happened.
      const what =
        e instanceof SyntaxError ? `the generated code does not parse (${e.message})` : `${(e as Error)?.name}: ${(e as Error)?.message}`;
      return { compiled: false, reason: `compiler error: ${what}${source !== '' ? '' : ''}` };
    }
  }
}

/**
 * The intermediate form of `method` for concrete type `t` (for the WGSL backend: the
 * runner's generated kernels, runtime/compiler/emit-wgsl.ts), with the arguments that are
 * smmo objects typed by `argClasses` (lowerMethod), or why the method does not compile.
 * Compiling never runs user code (C3).
 */
export function lowerForBackend(
  table: TypeTable,
  t: TypeLayout,
  method: string,
  argClasses: readonly (TypeLayout | null)[] = [],
): MethodIR | { reason: string } {
  try {
    resolver ??= new ClosureResolver();
    return lowerMethod(table, t, method, resolver, argClasses);
  } catch (e) {
    if (e instanceof CompileFallback) return { reason: e.reason };
    return { reason: `compiler error: ${(e as Error)?.name}: ${(e as Error)?.message}` };
  }
}
