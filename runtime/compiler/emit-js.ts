/**
 * The JavaScript backend of the method compiler: the intermediate form (ir.ts) of one
 * (concrete class, method) → the source of a warp loop over the heap's typed arrays.
 *
 * The emitted runner has the shape of the interpreted executor's loop (thread.ts
 * runnerFor) with the method inlined into it:
 *
 *   for each block b of the pass's block list [from, to):     a virtual warp
 *     bits = iteration bitmap of b                              (a plain load: see emit())
 *     warp hooks (allocation coalescing, when the method allocates)
 *     lanes: while (bits) { slot = lowest bit; self = b·32 + slot; <method body> }
 *       (a full block: for (slot = 0; slot < N_T; slot++), the same lanes in the same order;
 *        a short body four lanes per iteration, one labelled copy per lane)
 *
 * Field of the lane's own object:   F32[b4 + K + slot]           (K: the field's word offset in T)
 * Field of another object h:        F32[BW + (h >>> 5)·BWORDS + K + (h & 31)]
 *   where the static class has several concrete classes, K comes from a per-type table
 *   indexed by the block's type id. 8-, 2- and 1-byte fields the same with byte offsets.
 * These are the addresses the generated accessors (accessors.ts) use, from the same
 * TypeLayout: one layout, every executor.
 *
 * Everything else keeps JavaScript's meaning: the operators are emitted as written, a
 * bool field reads `!== 0` and stores `v ? 1 : 0` as the accessors do, a null
 * dereference throws TypeError, an inline-array index outside 0 … length-1 throws
 * RangeError as the accessors' switch does, ctx.get() checks its handle as the unchecked
 * get() does. Checked mode adds the checked accessors' tests (live object of the right
 * class, references checked on read and write, destroy's rules).
 */
import { BLOCK_ALLOC_WORD, BLOCK_ITER_WORD, BLOCK_TYPE_WORD, TS_WORDS, type FieldLayout, type TypeLayout } from '../layout.js';
import { rankTableReads, type RankInfo } from './emit-wgsl.js';
import type { Expr, FieldRef, MethodIR, Stmt, Ty } from './ir.js';

/** Heap geometry and helpers the emitted code is made with (one object per thread context). */
export interface EmitHost {
  readonly blocksWord: number;
  readonly blockWords: number;
  readonly blocksOffset: number;
  readonly blockBytes: number;
  readonly handleLimit: number;
  readonly typeCount: number;
  /** Every type of the runtime, by id. */
  readonly types: readonly TypeLayout[];
  readonly checked: boolean;
  /** Whether destroys call FastRelease first (runtime/alloc-fast-path.ts F2: a heap of one thread); else Allocator.releaseHandle. */
  readonly fastRelease?: boolean;
  /**
   * Int32Array indices of this thread's allocator-state warp words (layout.ts S_WARP,
   * S_LANES_LEFT, S_CACHED): the executor contract of per-warp coalescing
   * (wasm/src/alloc/core.rs C1), kept exactly as the interpreted executor keeps it.
   */
  readonly warpWords: { readonly warp: number; readonly lanes: number; readonly cached: number; readonly cacheMask0?: number };
}

const ARRAYS: Record<FieldLayout['kind'], { arr: string; shift: number }> = {
  f32: { arr: 'F32', shift: 2 },
  f64: { arr: 'F64', shift: 3 },
  i8: { arr: 'I8', shift: 0 },
  u8: { arr: 'U8', shift: 0 },
  bool: { arr: 'U8', shift: 0 },
  i16: { arr: 'I16', shift: 1 },
  u16: { arr: 'U16', shift: 1 },
  i32: { arr: 'I32', shift: 2 },
  u32: { arr: 'U32', shift: 2 },
  ref: { arr: 'U32', shift: 2 },
};

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** The heap's typed arrays as the emitted code names them; helper H holds each under its name in lower case. */
const ARRAY_NAMES = ['I8', 'U8', 'I16', 'U16', 'I32', 'U32', 'F32', 'F64'] as const;
/** `const I8 = H.i8, …, F64 = H.f64;`: the factory binds them once, and the runner again as its locals. */
const BIND_ARRAYS = `const ${ARRAY_NAMES.map((a) => `${a} = H.${a.toLowerCase()}`).join(', ')};`;

/**
 * The parts of a rank table's block form (runtime/rank-table.ts RankForm) that the runner keeps
 * beside a rank local (lX$s, …) and a rankTable memo ($rKs, …): the suffix, the RankForm
 * property it copies, its value before any form.
 */
const FORM_PARTS = [
  ['s', 'starts', '$NO_BLOCKS'],
  ['b', 'bases', '$NO_BLOCKS'],
  ['n', 'n', '0'],
  ['x', 'e', '0'],
  ['p', 'p', '0'],
] as const;
/** `${to}s = ${from('s', 'starts', '$NO_BLOCKS')}, …` over FORM_PARTS. */
function formCopy(to: string, from: (suffix: string, prop: string, initial: string) => string): string {
  return FORM_PARTS.map(([k, prop, initial]) => `${to}${k} = ${from(k, prop, initial)}`).join(', ');
}

/** Lanes per iteration of an unrolled full-block loop, and the longest body (characters of emitted code) unrolled. */
const UNROLL = 4;
const UNROLL_MAX_BODY = 600;

/** What emitJs makes of one method. */
export interface EmittedJs {
  /** The source of a factory `(H, S) => runner` (H: helpers, S: the method's statics). */
  readonly source: string;
  /**
   * Whether the method's only JavaScript is rankTable(ctx, C, n) calls and element reads of
   * their tables (emit-wgsl.ts rankTableReads, W7's subset), with at least one such call:
   * JavaScript that creates nothing, deletes nothing and reads no do-all snapshot.
   */
  readonly ranksOnly: boolean;
  /** Whether the method deletes an object other than the lane's own (freesOthers). */
  readonly freesOthers: boolean;
  /** Concrete type ids of the objects the method creates (createdTypes), ascending. */
  readonly creates: readonly number[];
  /** The generated function's name (run_Class_method), which appears once in `source`. */
  readonly name: string;
}

/** A running deviceDo loop (E1): its concrete class and the number that suffixes its names ($b<n>, $s<n>, $q4_<n>, …). */
interface EachLoop {
  readonly typeId: number;
  readonly n: number;
}

/** An object operand as code: its handle `h`, what must run first, and the deviceDo loop whose object it is, if any. */
interface Operand {
  readonly h: string;
  readonly pre: string[];
  readonly each: EachLoop | null;
}

export function emitJs(ir: MethodIR, host: EmitHost): EmittedJs {
  const e = new Emitter(ir, host);
  return { source: e.emit(), name: e.name, ranksOnly: e.ranksOnly, freesOthers: e.freesOthers, creates: createdTypes(ir) };
}

class Emitter {
  private readonly tables: string[] = [];
  private readonly tableIndex = new Map<string, string>();
  private readonly allocated = new Set<number>();
  private temps = 0;
  private readonly selfT: TypeLayout;
  /** EmittedJs.name. */
  get name(): string {
    return `run_${safeName(this.selfT.name)}_${safeName(this.ir.method)}`;
  }
  /** What a lane's early exit (returnLane) emits: leave the lane, in the loop or in an unrolled copy. */
  private laneExit = 'continue lanes;';

  /** Rank tables whose elements need no block check (unchecked mode only; see 'checkHandle'). */
  private readonly ranks: RankInfo | null;
  /**
   * Rank-table locals read through the table's block form (runtime/rank-table.ts rankForm):
   * local id → the one concrete class every value of the local ranks. Beside local lX the
   * runner keeps lX$s and lX$b (the form's starts and block byte offsets, empty without a
   * form), lX$n (the ranks the form covers: 0 without one) and lX$x, lX$p (the form's padding:
   * ranks from lX$x are read lX$p further on), set at every assignment of lX.
   */
  private readonly rankCls = new Map<number, TypeLayout>();
  /**
   * deviceDo objects (E1): the variable of a ForEach that nothing in the body assigns holds,
   * while its loop's body runs, the object the loop is at — a live object of the loop's
   * concrete class, never null. Its fields are addressed from the loop's block (the block's
   * byte offset per element size, computed once per block, and the slot), not re-derived
   * from the handle on every access, and its null checks are left out. Local id → the
   * running loop's names; set while that loop's body is emitted.
   */
  private readonly eachVars = new Map<number, EachLoop>();
  /** Locals that a setLocal or updateLocal writes (a ForEach's own assignment is not one of them). */
  private readonly assigned = new Set<number>();
  /**
   * Whether a field of a ranked object may be addressed from the form's block offsets
   * (rankedOperand): every block offset of the heap fits an int32, as rankForm requires.
   */
  private readonly fusable: boolean;
  /** EmittedJs.ranksOnly: the method's JavaScript allocates nothing, so it needs no warp bookkeeping of its own. */
  readonly ranksOnly: boolean;
  /**
   * Deferred self-deletion: a lane's `this.destroy()` marks its slot in `dead`, and the
   * block's marked objects are released together when the lanes leave the block (one call
   * into the core, core.rs release_many, instead of one release per object). Only where
   * no one can tell the difference: unchecked; the method deletes nothing but the lane's
   * own object, iterates no class (deviceDo would see the objects not yet released) and
   * runs no JavaScript (which could ask the heap). Where it creates objects, the marked
   * ones are released before every call into the core's allocation (take), the only
   * place where the allocator reads what a release changed: a slot taken from the warp's
   * cache was reserved by such a call. A second destroy of the same object releases the
   * marked ones and then fails as an immediate release would (deleted twice); a lane that
   * throws releases the marked ones before the error leaves the runner, and the block's
   * are released before its warp closes (warpEnd), as they were before it in an
   * interpreted run. On one thread the heap is the one immediate releases leave: core.rs
   * `released` makes the block's FIRST and EMPTY transitions once each for the mask.
   */
  private readonly deferFree: boolean;
  /**
   * Deferred deletion of other objects (G1–G4): the deletions a block's lanes make — of
   * other objects, and of their own where the method also deletes others — are gathered
   * while they fall in one block and made together (core.rs release_many), so a lane that
   * deletes a run of objects it made (linux-scalability; a node deleting its children), or
   * lanes that each delete a neighbour of one block, pay one release per block, not one per
   * object. Where no one can tell the difference: unchecked, no deviceDo, no JavaScript (as
   * deferFree), and
   *  (G1) Pending: `omask` holds deletions not yet made, all in block `obid` (omask = 0:
   *       none). A deletion is marked only if its handle lies in the heap and its slot's
   *       allocation bit is set (a plain read: the object is live until this deletion; another
   *       thread freeing it meanwhile would be a race in the user's program, which
   *       release_many reports). Otherwise — a deletion in another block, one already marked
   *       (deleted twice), a handle the check refuses — the pending ones are released first
   *       and the deletion is then marked or made at once, so an error comes from the
   *       deletion that causes it, with the error an immediate release gives, after the
   *       deletions made before it.
   *  (G2) The pending ones are released when the block's lanes end (before warpEnd), before
   *       every call into the core's allocation (take), and before an error leaves the
   *       runner. Between two lanes of a block nothing reads what a release changes: the
   *       block's lanes were read from its word before its first lane (an interpreted run,
   *       too, visits an object of the block that an earlier lane deleted), the warp's cached
   *       slots are reserved, and nothing else runs (no deviceDo, no JavaScript). So the next
   *       block finds the deleted objects' iteration bits cleared, as in an interpreted run,
   *       and so does the core and any code after the pass.
   *  (G3) The releases are made in the order of the blocks as the lanes deleted in them, one
   *       release_many per run of deletions in one block: on one thread the block
   *       transitions (FIRST, EMPTY with K4, the kept stack) happen in the order immediate
   *       releases make them, so the heap is the interpreted one byte for byte; a slot
   *       taken from the warp's cache meanwhile reads nothing a release changes.
   *  (G4) A mask the core refuses before writing (a forged slot: Allocator.releaseDeferred) is
   *       released slot by slot, so the valid deletions are made and the error is the one
   *       of the bad handle.
   */
  private readonly deferOthers: boolean;
  /** EmittedJs.freesOthers. */
  readonly freesOthers: boolean;

  constructor(
    private readonly ir: MethodIR,
    private readonly host: EmitHost,
  ) {
    this.selfT = ir.cls;
    const classOf = (v: unknown): TypeLayout | undefined => host.types.find((t) => t.cls === v);
    const ranks = ir.portable ? null : rankTableReads(ir, { classOf });
    this.ranksOnly = ranks !== null;
    this.ranks = host.checked ? null : ranks;
    if (this.ranks !== null) {
      const ranks = this.ranks;
      const classesOf = (id: number, seen: Set<number>): Set<TypeLayout | undefined> => {
        const out = new Set<TypeLayout | undefined>();
        if (seen.has(id)) return out;
        seen.add(id);
        for (const [l, v] of ranks.assigns) {
          if (l !== id) continue;
          if (v.op === 'local') for (const c of classesOf(v.id, seen)) out.add(c);
          else out.add(ranks.isCall(v) ? ranks.classOf(v) : undefined);
        }
        return out;
      };
      for (const id of ranks.locals) {
        const cs = [...classesOf(id, new Set())];
        const c = cs.length === 1 ? cs[0] : undefined;
        if (c !== undefined && !c.abstract && c.slots > 0) this.rankCls.set(id, c);
      }
    }
    this.fusable = host.blocksOffset + (host.handleLimit / 32) * host.blockBytes <= 0x7fffffff;
    this.freesOthers = freesOthers(ir);
    walk(ir.body, (n) => {
      if ('op' in n && (n.op === 'setLocal' || n.op === 'updateLocal')) this.assigned.add(n.id);
    });
    this.deferFree = !host.checked && ir.frees && !this.freesOthers && ir.iterates.length === 0 && (ir.portable || this.ranksOnly);
    this.deferOthers = !host.checked && this.freesOthers && ir.iterates.length === 0 && (ir.portable || this.ranksOnly);
  }

  /** Whether the runner takes a new object's slot and passes it to alloc_<id> (the deferrals release before the core allocates). */
  private get callerTakes(): boolean {
    return this.deferFree || this.deferOthers;
  }

  emit(): string {
    const body = this.stmts(this.ir.body, '        ');
    const h = this.host;
    // Per-warp coalescing (core.rs C1): a warp per block, the lanes left before each lane,
    // the warp closed after the block — as thread.ts runnerFor does — whenever the method may
    // allocate (it creates objects, or calls JavaScript that might: not rankTable, ranksOnly).
    const warps = this.ir.allocates || (!this.ir.portable && !this.ranksOnly);
    const w = h.warpWords;
    const warpBegin = warps ? `let left = popc(bits); I32[${w.warp}] = 1;` : '';
    const laneMark = warps ? `I32[${w.lanes}] = left--;` : '';
    const warpEnd = warps ? `if (I32[${w.cached}] !== 0) A.warpEnd(); else { I32[${w.warp}] = 0; I32[${w.lanes}] = 0; }` : '';
    // A block whose every slot is live (the common case in a dense heap) runs as a counted
    // loop over its slots: the same lanes in the same order (lowest slot first) without
    // the bit search per lane. The iteration word is read as an int32 (`| 0`) so that V8
    // keeps the lane arithmetic on small integers.
    const slots = this.selfT.slots;
    const full = slots === 32 ? -1 : (1 << slots) - 1;
    // The lane's handle (`self`) is kept for the catch below, which names the object whose
    // lane threw, and for bodies that use it as a value. A body that cannot throw and does
    // not use it skips the store (measured on the dev VM: packed_5 ×1.05–1.07).
    const laneSelf = needsSelf(this.ir, this.host.checked, body) ? 'self = hb + slot;' : '';
    // A short body (an ECS system's `this.a *= 2`) is unrolled four lanes per iteration of
    // the counted loop: V8 does not unroll, and for such a body the loop's own compare and
    // branch are a large part of the work (measured on the dev VM: 4.1 → 3.4 µs for five
    // do-alls over 1 000 objects). Each copy is one lane in a labelled block; a lane's
    // early exit (returnLane) leaves its copy.
    let fullLoop = `        lanes: for (let slot = 0; slot < ${slots}; slot++) {
          ${laneSelf}
          ${laneMark}
${body}
        }`;
    if (slots % UNROLL === 0 && body.length <= UNROLL_MAX_BODY) {
      const copies: string[] = [];
      for (let k = 0; k < UNROLL; k++) {
        this.laneExit = `break lane${k};`;
        copies.push(`          lane${k}: {
            const slot = s0 + ${k};
            ${laneSelf}
            ${laneMark}
${this.stmts(this.ir.body, '            ')}
          }`);
      }
      this.laneExit = 'continue lanes;';
      fullLoop = `        for (let s0 = 0; s0 < ${slots}; s0 += ${UNROLL}) {
${copies.join('\n')}
        }`;
    }
    // The block's lanes: its iteration word, or (word = BLOCK_ALLOC_WORD, a do-all that
    // changes no allocation word but its own block's, after this read: thread.ts runBlocks
    // R1) its allocation word without the slots the class does not have. Both are ⊆ that
    // mask, so one expression serves.
    // A plain load, not Atomics.load: the word was written before the pass started (the
    // snapshot, published by the pass's start), and the only writes during the pass are
    // releases clearing bits of objects deleted meanwhile, on any thread. Whether this
    // read sees such a clear or not is a race an atomic load does not decide either (the
    // deletion and the visit are unordered in the user's program), and nothing read
    // afterwards depends on which value it saw. An aligned Int32Array read does not tear.
    // V8 keeps the loop's other loads movable around a plain load, not around an atomic
    // one: packed_5 290 → 335 k ops/s, frag_iter 272 → 328 k (dev VM, three runs each).
    // The heap's typed arrays are bound again as locals of the runner (its first line): read
    // from the factory's scope (a context slot), every access in the loop reloaded the array
    // and its bounds; as locals TurboFan keeps them out of the loop. Measured on the dev VM,
    // simple_iter's AB.swapAB alone over 1 000 objects: 0.90–0.94 → 0.66–0.69 ns per object.
    const liveMask = ~this.selfT.highMask;
    const live = liveMask === -1 ? `I32[bw + word] | 0` : `I32[bw + word] & ${liveMask}`;
    // A method that creates objects, run with its lanes from the allocation words (a pass on
    // the calling thread that creates only objects of classes it does not visit: thread.ts
    // readsAllocation R1): a create may find no free block and make the core give back the
    // empty blocks of every class (core.rs K3), a listed block of this class among them,
    // which may then open for the created class. Its allocation word then holds another
    // class's objects: the block is skipped, as the snapshot's copy (0 for an empty block)
    // would have had it skipped.
    const typeCheck = this.ir.allocates
      ? `if (word === ${BLOCK_ALLOC_WORD} && I32[bw + ${BLOCK_TYPE_WORD}] !== ${this.selfT.id}) continue;`
      : '';
    const locals = this.ir.locals.map((l) => `l${l.id}`);
    for (let i = 0; i < this.temps; i++) locals.push(`$t${i}`);
    const initial = (_k: string, _prop: string, init: string): string => init;
    const rankForms = [...this.rankCls.keys()].map((id) => formCopy(`l${id}$`, initial));
    const memos = [...this.rankMemos.values()].map((m) => `${m} = $NO_TABLE, ${m}e = NaN, ${formCopy(m, initial)}`);
    const args = Array.from({ length: this.ir.arity }, (_, i) => `const a${i} = args[${i}];`).join(' ');
    const statics = this.ir.statics.map((_, i) => `const S${i} = S[${i}];`).join('\n');
    const allocs = [...this.allocated].map((id) => this.allocFunction(id)).join('\n');
    return `'use strict';
${BIND_ARRAYS}
const BW = ${h.blocksWord}, BWORDS = ${h.blockWords}, BB = ${h.blocksOffset}, BBYTES = ${h.blockBytes}, LIMIT = ${h.handleLimit};
const A = H.allocator, TL = H.types, state = H.state, F = A.fast;
const $null = H.nullDeref, $range = H.range, $get = H.get, $view = H.view, $boxArr = H.boxArr, $unbox = H.unbox, $destroyNull = H.destroyNull;
const $chk = H.check, $chkRef = H.checkRef, $free = H.free;
const popc = H.popc, $take = H.takeCachedSlot, $rankForm = H.rankForm, $NO_BLOCKS = H.noRankBlocks, $NO_TABLE = H.noRankTable;
${statics}
${this.tables.join('\n')}
${allocs}
return function ${this.name}(ctx, list, from, to, args, lists, word) {
  ${BIND_ARRAYS}
  ${args}
  ${locals.length > 0 ? `let ${locals.join(', ')};` : ''}
  ${rankForms.length > 0 ? `let ${rankForms.join(', ')};` : ''}
  ${memos.length > 0 ? `let ${memos.join(', ')};` : ''}
  let self = 0;${this.deferFree ? ' let dead = 0, dbid = 0;' : ''}${this.deferOthers ? ' let obid = 0, omask = 0;' : ''}
  try {
    for (let i = from; i < to; i++) {
      const bid = list[i];
      const bw = BW + bid * BWORDS;
      let bits = ${live};
      if (bits === 0) continue;
      ${typeCheck}
      const b1 = BB + bid * BBYTES, b2 = b1 >>> 1, b4 = b1 >>> 2, b8 = b1 >>> 3, hb = bid * 32;
      ${this.deferFree ? 'dbid = bid;' : ''}
      ${warpBegin}
      if (bits === ${full}) {
${fullLoop}
      } else {
        lanes: while (bits !== 0) {
          const slot = 31 - Math.clz32(bits & -bits);
          bits &= bits - 1;
          ${laneSelf}
          ${laneMark}
${body}
        }
      }
      ${this.deferFree ? `${releaseDead('bid')};` : ''}
      ${this.deferOthers ? `${releasePending()};` : ''}
      ${warpEnd}
    }
  } catch (e) {
    ${this.deferFree ? `${releaseDead('dbid')};` : ''}
    ${this.deferOthers ? `${releasePending()};` : ''}
    state.handle = self;
    throw e;
  }
};`;
  }

  /**
   * Assign a rank-table local and its block form (rankCls): the table, the form's starts and
   * block offsets, the ranks it covers. A copy of another rank local of the same class (a
   * table passed to an inlined method) copies that local's form instead of asking again.
   */
  private rankAssign(id: number, value: Expr): string {
    const l = `l${id}`;
    const cls = this.rankCls.get(id)!;
    if (value.op === 'local' && this.rankCls.get(value.id) === cls) {
      const r = `l${value.id}`;
      return `${l} = ${r}, ${formCopy(`${l}$`, (k) => `${r}$${k}`)}`;
    }
    const f = this.formTemp();
    if (value.op === 'dynCall' && this.ranks!.isCall(value) && value.args[0]!.op === 'ctx') {
      // rankTable(ctx, C, n) with the runner's own context: the same (C, n) gives the same table
      // for the whole call of the runner (rank-table.ts R1, R2: nothing else runs on this thread
      // meanwhile, and the method runs no JavaScript but rankTable), so the table and its form are
      // asked for once per call of the runner and per n, not once per object. A first call that
      // throws leaves the memo empty, as it found it.
      // One memo per call in the method, shared by every copy of the lane code the runner has
      // (the full-block loop, its unrolled lanes, the loop over set bits).
      let m = this.rankMemos.get(value);
      if (m === undefined) this.rankMemos.set(value, (m = `$r${this.rankMemos.size}`));
      const n = this.temp();
      const call = `${this.expr(value.callee)}(ctx, ${this.expr(value.args[1]!)}, ${n})`;
      return (
        `${l} = ((${n} = ${this.expr(value.args[2]!)}) === ${m}e ? ${m} : ` +
        `(${m} = ${call}, ${f} = $rankForm(${m}, ${cls.slots}), ${formCopy(m, (_, prop) => `${f}.${prop}`)}, ${m}e = ${n}, ${m})), ` +
        formCopy(`${l}$`, (k) => `${m}${k}`)
      );
    }
    return `${l} = ${this.expr(value)}, ${f} = $rankForm(${l}, ${cls.slots}), ${formCopy(`${l}$`, (_, prop) => `${f}.${prop}`)}`;
  }

  /** rankTable calls memoised by rankAssign, by their node in the method: $rK (table), $rKe (its n), $rKs, $rKb, $rKn, $rKx, $rKp (its form). */
  private readonly rankMemos = new Map<Expr, string>();

  private form: string | null = null;
  /** The temporary that holds a rankForm result while its parts are copied (one per method). */
  private formTemp(): string {
    return (this.form ??= this.temp());
  }

  // ---------------------------------------------------------------- tables

  /** A constant table (emitted once before the runner), by its contents. */
  private table(kind: 'Int32Array' | 'Uint8Array', values: readonly number[]): string {
    const key = `${kind}:${values.join(',')}`;
    let name = this.tableIndex.get(key);
    if (name === undefined) {
      name = `T${this.tables.length}`;
      this.tables.push(`const ${name} = ${kind}.of(${values.join(', ')});`);
      this.tableIndex.set(key, name);
    }
    return name;
  }

  private temp(): string {
    return `$t${this.temps++}`;
  }

  // ---------------------------------------------------------------- addressing

  /**
   * Address (index into the field's typed array) of field `f`, element `elem`, of the object
   * of operand `o`. Where its block is at hand — the lane's own (b1 … b8 and `slot`) or a
   * deviceDo loop's (E1: $q1_n … $q8_n and $s_n) — from that block; otherwise from the handle.
   */
  private address(f: FieldRef, o: Operand, elemCode: string | null, elemConst: number | null): string {
    const { shift } = ARRAYS[f.kind];
    const { h, each } = o;
    const layouts = f.layouts;
    const own =
      h === 'self'
        ? { typeId: this.selfT.id, base: `b${1 << shift}`, slot: 'slot' }
        : each !== null
          ? { typeId: each.typeId, base: `$q${1 << shift}_${each.n}`, slot: `$s${each.n}` }
          : null;
    const fromBlock = own === null ? undefined : layouts.get(own.typeId);
    const single = fromBlock ?? (layouts.size === 1 ? layouts.values().next().value! : null);
    let off: string;
    if (single !== null) off = offsetIn(single, shift, elemCode, elemConst);
    else {
      // Per type (several layouts): tables of the element's offset and stride, indexed by the block's type.
      const typeOf = `I32[BW + (${h} >>> 5) * BWORDS + ${BLOCK_TYPE_WORD}]`;
      const offs = new Array<number>(this.host.typeCount).fill(0);
      const strides = new Array<number>(this.host.typeCount).fill(0);
      for (const [id, fl] of layouts) {
        offs[id] = fl.offsets[elemConst ?? 0]! >>> shift;
        strides[id] = strideOf(fl) >>> shift;
      }
      const t = this.table('Int32Array', offs);
      off = `${t}[${typeOf}]`;
      if (elemCode !== null) off = `(${off} + ${elemCode} * ${this.table('Int32Array', strides)}[${typeOf}])`;
    }
    if (own !== null && fromBlock !== undefined) return `${own.base} + ${off} + ${own.slot}`;
    if (shift === 2) return `BW + (${h} >>> 5) * BWORDS + ${off} + (${h} & 31)`;
    if (shift === 0) return `BB + (${h} >>> 5) * BBYTES + ${off} + (${h} & 31)`;
    // 2- and 8-byte arrays: byte offset of the block, in elements, plus the element offset.
    return `((BB + (${h} >>> 5) * BBYTES) >>> ${shift}) + ${off} + (${h} & 31)`;
  }

  /**
   * An object operand as a simple handle (self, a local, or a temporary it is first
   * stored in), with its null check (nonNull) and, in checked mode, its liveness check.
   */
  private operand(obj: Expr, cls: TypeLayout | null, field = ''): Operand {
    const pre: string[] = [];
    let inner = obj;
    let what: string | null = null;
    if (inner.op === 'nonNull') {
      what = inner.what;
      inner = inner.obj;
    }
    let h: string;
    if (inner.op === 'self') h = 'self';
    else if (inner.op === 'local') h = `l${inner.id}`;
    else {
      h = this.temp();
      pre.push(`(${h} = ${this.expr(inner)})`);
    }
    // A deviceDo loop's object (E1) is never null.
    const each = inner.op === 'local' ? (this.eachVars.get(inner.id) ?? null) : null;
    if (what !== null && each === null) pre.push(`(${h} !== 0 || $null(${JSON.stringify(what)}))`);
    if (this.host.checked && cls !== null) {
      // The checked accessors' message names the object's concrete class: the one of `cls` if it has one.
      const name = cls.concrete.length === 1 ? this.typeById(cls.concrete[0]!).name : cls.name;
      pre.push(`$chk(${h}, ${this.typeSet(cls.concrete)}, ${JSON.stringify(field)}, ${JSON.stringify(name)})`);
    }
    return { h, pre, each };
  }

  /** A Uint8Array table t with t[typeId + 1] === 1 for the given type ids (index 0: a free block). */
  private typeSet(ids: readonly number[]): string {
    const v = new Array<number>(this.host.typeCount + 1).fill(0);
    for (const id of ids) v[id + 1] = 1;
    return this.table('Uint8Array', v);
  }

  /** The element index as code, with a bounds check (as the accessors' switch); `null` for a scalar. */
  private element(f: FieldRef, elem: Expr | null, inBounds: boolean): { code: string | null; konst: number | null; check: string } {
    if (elem === null) return { code: null, konst: null, check: '' };
    if (elem.op === 'const' && typeof elem.value === 'number' && Number.isInteger(elem.value) && elem.value >= 0 && elem.value < f.length) {
      return { code: null, konst: elem.value, check: '' };
    }
    if (inBounds) return { code: `(${this.expr(elem)})`, konst: null, check: '' };
    const t = this.temp();
    const what = JSON.stringify(`${f.cls.name}.${f.name}[`);
    return {
      code: t,
      konst: null,
      check: `((${t} = ${this.expr(elem)}) >>> 0 === ${t} && ${t} < ${f.length} || $range(${what}, ${t}, ${f.length}))`,
    };
  }

  // ---------------------------------------------------------------- expressions

  private expr(e: Expr): string {
    switch (e.op) {
      case 'const':
        return constant(e.value);
      case 'local':
        return `l${e.id}`;
      case 'self':
        return 'self';
      case 'arg':
        return `a${e.index}`;
      case 'ctx':
        return 'ctx';
      case 'static':
        return `S${e.index}`;
      case 'global':
        return `globalThis[${JSON.stringify(e.name)}]`;
      case 'unary':
        return e.o === 'typeof' || e.o === 'void' || e.o === 'delete' ? `(${e.o} ${this.expr(e.a)})` : `(${e.o}${this.expr(e.a)})`;
      case 'binary':
        return `(${this.expr(e.a)} ${e.o} ${this.expr(e.b)})`;
      case 'logical':
        return `(${this.expr(e.a)} ${e.o} ${this.expr(e.b)})`;
      case 'cond':
        return `(${this.expr(e.c)} ? ${this.expr(e.a)} : ${this.expr(e.b)})`;
      case 'setLocal':
        if (this.rankCls.has(e.id)) return `(${this.rankAssign(e.id, e.value)}, l${e.id})`;
        return `(l${e.id} = ${this.expr(e.value)})`;
      case 'updateLocal':
        return e.prefix ? `(${e.delta === 1 ? '++' : '--'}l${e.id})` : `(l${e.id}${e.delta === 1 ? '++' : '--'})`;
      case 'seq':
        return e.items.length === 1 ? this.expr(e.items[0]!) : `(${e.items.map((x) => this.expr(x)).join(', ')})`;
      case 'load':
        return this.load(e.field, e.obj, e.elem, e.inBounds === true);
      case 'store':
        return this.store(e.field, e.obj, e.elem, e.value, true, e.inBounds === true);
      case 'typeOf': {
        const o = this.operand(e.obj, null);
        return `(${[...o.pre, `I32[BW + (${o.h} >>> 5) * BWORDS + ${BLOCK_TYPE_WORD}]`].join(', ')})`;
      }
      case 'isA': {
        if (e.typeIds.length === 0) return `(${this.expr(e.obj)}, false)`;
        const t = this.temp();
        const type = `I32[BW + (${t} >>> 5) * BWORDS + ${BLOCK_TYPE_WORD}]`;
        const test = e.typeIds.length === 1 ? `${type} === ${e.typeIds[0]}` : `${this.typeSet(e.typeIds)}[${type} + 1] === 1`;
        return `((${t} = ${this.expr(e.obj)}) !== 0 && ${test})`;
      }
      case 'alloc':
        this.allocated.add(e.cls.id);
        // (deferFree, deferOthers) the slot is taken here, so that a call into the core releases the deferred deletions first.
        return `alloc_${e.cls.id}(${[...(this.callerTakes ? [this.take(e.cls.id)] : []), ...this.allocArrays(e.cls.id)].join(', ')})`;
      case 'free': {
        const h = this.expr(e.obj);
        if (this.host.checked) return `$free(ctx, ${h}, self)`;
        if (this.deferOthers) {
          // (G1) Marked while it falls in the pending block; otherwise the pending released, then marked or made at once.
          const [t, tb, tm] = [this.temp(), this.temp(), this.temp()];
          const live = `(I32[BW + ${tb} * BWORDS + ${BLOCK_ALLOC_WORD}] & ${tm}) !== 0`;
          return (
            `((${t} = ${h}) !== 0 || $destroyNull(), ${tb} = ${t} >>> 5, ${tm} = 1 << (${t} & 31), ` +
            `${tb} === obid && (omask & ${tm}) === 0 && ${live} ? (omask |= ${tm}) : ` +
            `(${releasePending()}, ${t} < LIMIT && ${live} ? (obid = ${tb}, omask = ${tm}) : A.releaseHandle(${t})))`
          );
        }
        // F2 where it applies (a heap of one thread); otherwise every release is the core's, through the binding.
        const rel = (x: string): string =>
          this.host.fastRelease === true
            ? `(${this.relTemp()} = F.release(${x})) === 0 || A.releaseRest(${x}, ${this.relTemp()})`
            : `A.releaseHandle(${x})`;
        if (e.obj.op === 'self') {
          // (deferFree) marked for the block's release; a slot marked already: release the marked, then fail as an immediate release does.
          if (this.deferFree) return `((dead & (1 << slot)) === 0 ? (dead |= 1 << slot) : (${releaseDead('bid')}, A.releaseHandle(self)))`;
          return `(${rel('self')})`;
        }
        const t = this.temp();
        return `((${t} = ${h}) !== 0 || $destroyNull(), ${rel(t)})`;
      }
      case 'math':
        return `Math.${e.name}(${e.args.map((a) => this.expr(a)).join(', ')})`;
      case 'nonNull': {
        const o = this.operand(e, null);
        return `(${[...o.pre, o.h].join(', ')})`;
      }
      case 'checkHandle':
        if (this.host.checked) return `$get(ctx, ${this.expr(e.value)}, ${e.cls.id})`;
        {
          // Unchecked get(): the helper's tests inline (an integer in the heap, in a block
          // of a concrete class); only a failing handle calls it, to throw its error.
          const t = this.temp();
          const h = e.value;
          if (this.ranks !== null && h.op === 'dynIndex' && !h.optional && this.ranks.isValue(h.obj)) {
            // An element of a rank table (rankTableReads): a live object's handle, or
            // undefined past the table's end. The block's type word, a load from another
            // cache line per lookup (game-of-life: 8 per agent), is not read.
            const ri = this.rankIndex(h);
            if (ri !== null) {
              // Through the table's block form where it has one (rank-table.ts rankForm): an
              // integer index below lX$n reads starts[⌊i' / N⌋] + i' mod N (i' the index padded
              // past a partly used block), the same handle as the table's element; anything
              // else reads the element itself.
              return `(${ri.inForm} ? ${ri.l}$s[${ri.q}] + (${ri.r}) : (${t} = ${ri.l}[${ri.i}]) !== undefined ? ${t} : $get(ctx, ${t}, -1))`;
            }
            return `((${t} = ${this.expr(h)}) !== undefined ? ${t} : $get(ctx, ${t}, -1))`;
          }
          const viewable = new Array<number>(this.host.typeCount + 1).fill(0);
          for (const ty of this.host.types) if (!ty.abstract) viewable[ty.id + 1] = 1;
          const v = this.table('Uint8Array', viewable);
          return (
            `((${t} = ${this.expr(e.value)}), (${t} | 0) === ${t} && ${t} > 0 && ${t} < LIMIT && ` +
            `${v}[I32[BW + (${t} >>> 5) * BWORDS + ${BLOCK_TYPE_WORD}] + 1] === 1 ? ${t} : $get(ctx, ${t}, -1))`
          );
        }
      case 'dynMember':
        return `${this.expr(e.obj)}${e.optional ? '?.' : ''}${memberName(e.name, e.optional)}`;
      case 'dynIndex':
        return `${this.expr(e.obj)}${e.optional ? '?.' : ''}[${this.expr(e.index)}]`;
      case 'dynCall':
        return `${this.expr(e.callee)}${e.optional ? '?.' : ''}(${e.args.map((a) => this.expr(a)).join(', ')})`;
      case 'dynMethodCall':
        return `${this.expr(e.obj)}${e.optional ? '?.' : ''}${memberName(e.name, e.optional)}(${e.args.map((a) => this.expr(a)).join(', ')})`;
      case 'dynNew':
        return `(new (${this.expr(e.callee)})(${e.args.map((a) => this.expr(a)).join(', ')}))`;
      case 'dynArray': {
        // A trailing hole needs its own comma: [a, ,] has length 2.
        const last = e.items[e.items.length - 1];
        return `[${e.items.map((a) => this.expr(a)).join(', ')}${last?.op === 'hole' ? ',' : ''}]`;
      }
      case 'dynObject':
        return `({ ${e.entries.map(([k, v]) => (v.op === 'spread' ? this.expr(v) : `${JSON.stringify(k)}: ${this.expr(v)}`)).join(', ')} })`;
      case 'spread':
        return `...${this.expr(e.arg)}`;
      case 'closure': {
        // ((captures) => (params) => { own locals; label: { body } return result; })(values):
        // the captured values are bound where the function is made; its own variables, and
        // the emitter's temporaries of its body, are declared inside it (fresh per call).
        const t0 = this.temps;
        const body = this.stmts(e.body, '  ');
        const own = [...e.locals.map((id) => `l${id}`), ...Array.from({ length: this.temps - t0 }, (_, i) => `$t${t0 + i}`)];
        const ps = e.params.map((id, i) => `${e.rest && i === e.params.length - 1 ? '...' : ''}l${id}`).join(', ');
        const inner = `{ ${own.length > 0 ? `let ${own.join(', ')};` : ''}\n${e.label}: {\n${body}\n}\nreturn l${e.result}; }`;
        const fn = e.arrow ? `(${ps}) => ${inner}` : `function (${ps}) ${inner}`;
        return `((${e.captures.map(([id]) => `l${id}`).join(', ')}) => ${fn})(${e.captures.map(([, x]) => this.expr(x)).join(', ')})`;
      }
      case 'hole':
        return '';
      case 'dynTemplate': {
        let s = '`' + templateText(e.quasis[0]!);
        e.exprs.forEach((x, i) => (s += '${' + this.expr(x) + '}' + templateText(e.quasis[i + 1]!)));
        return s + '`';
      }
      case 'dynAssign':
        return `(${this.expr(e.target)} ${e.o} ${this.expr(e.value)})`;
      case 'dynUpdate':
        return e.prefix
          ? `(${e.delta === 1 ? '++' : '--'}${this.expr(e.target)})`
          : `(${this.expr(e.target)}${e.delta === 1 ? '++' : '--'})`;
      case 'box':
        return `$view(ctx, ${this.expr(e.obj)})`;
      case 'boxArr':
        return `$boxArr(ctx, ${this.expr(e.obj)}, ${JSON.stringify(e.field)})`;
      case 'unbox':
        return `$unbox(ctx, ${this.expr(e.value)}, ${e.cls.id})`;
    }
  }

  /**
   * `table[index]` where `table` is a rank local read through its block form (rankCls): the
   * local, and code for the pieces of rank i: the test that i is an integer the form covers
   * (it evaluates the index into temporary `i`, and where the test passes pads `i` past a
   * partly used block: rank-table.ts RankForm e, p), its block within the form (q) and its
   * slot (r), both of the padded `i`. Where the test fails `i` is the index as it was.
   */
  private rankIndex(h: Expr): { l: string; cls: TypeLayout; i: string; inForm: string; q: string; r: string } | null {
    if (this.ranks === null || h.op !== 'dynIndex' || h.optional || h.obj.op !== 'local' || !this.ranks.isValue(h.obj)) return null;
    const cls = this.rankCls.get(h.obj.id);
    if (cls === undefined) return null;
    const per = cls.slots;
    const l = `l${h.obj.id}`;
    const i = this.temp();
    const p2 = (per & (per - 1)) === 0;
    return {
      l,
      cls,
      i,
      inForm: `(${i} = ${this.expr(h.index)}) >>> 0 === ${i} && ${i} < ${l}$n && (${i} < ${l}$x || (${i} += ${l}$p) >= 0)`,
      q: p2 ? `${i} >>> ${Math.log2(per)}` : `(${i} / ${per}) | 0`,
      r: p2 ? `${i} & ${per - 1}` : `${i} % ${per}`,
    };
  }

  /**
   * A field read through a rank, `ctx.get(C, table[i]).f` (unchecked mode): the object as
   * its block's byte offset and its slot, without forming its handle. Inside the block form
   * both come from the form (`bases[⌊i / N⌋]`, i mod N; a live object of C, so no null test);
   * outside it the element is read and checked as 'checkHandle' does, then split.
   * game-of-life's neighbour counts take 13–19 % less time per pass than through the handle
   * (device host; bench/layout.ts isolates the lookup). Null where the operand is
   * not such a read, or field f has no layout in C. (A store never sees one: the lowering
   * keeps the object of an assignment in a local: lower.ts place.)
   */
  private rankedOperand(obj: Expr, f: FieldRef): { pre: string[]; base: string; slot: string; cls: TypeLayout } | null {
    if (!this.fusable) return null;
    let inner = obj;
    let what: string | null = null;
    if (inner.op === 'nonNull') {
      what = inner.what;
      inner = inner.obj;
    }
    if (inner.op !== 'checkHandle') return null;
    const h = inner.value;
    if (h.op !== 'dynIndex' || h.obj.op !== 'local') return null;
    const cls = this.rankCls.get(h.obj.id);
    if (cls === undefined || !f.layouts.has(cls.id)) return null;
    const ri = this.rankIndex(h);
    if (ri === null) return null;
    const [t, base, slot] = [this.temp(), this.temp(), this.temp()];
    const slow = [
      `(${t} = ${ri.l}[${ri.i}]) !== undefined || $get(ctx, ${t}, -1)`,
      ...(what !== null ? [`${t} !== 0 || $null(${JSON.stringify(what)})`] : []),
      `${base} = BB + (${t} >>> 5) * BBYTES`,
      `${slot} = ${t} & 31`,
    ];
    return {
      pre: [`(${ri.inForm} ? (${base} = ${ri.l}$b[${ri.q}], ${slot} = ${ri.r}) : (${slow.join(', ')}))`],
      base,
      slot,
      cls,
    };
  }

  /** Index into field f's typed array of element `elem` of the object of class `cls` at block byte offset `base`, slot `slot`. */
  private addressAt(f: FieldRef, cls: TypeLayout, base: string, slot: string, elemCode: string | null, elemConst: number | null): string {
    const { shift } = ARRAYS[f.kind];
    const off = offsetIn(f.layouts.get(cls.id)!, shift, elemCode, elemConst);
    return `${shift === 0 ? base : `(${base} >>> ${shift})`} + ${off} + ${slot}`;
  }

  private load(f: FieldRef, obj: Expr, elem: Expr | null, inBounds: boolean): string {
    const ranked = this.rankedOperand(obj, f);
    if (ranked !== null) {
      const el = this.element(f, elem, inBounds);
      const pre = [...ranked.pre, el.check].filter((x) => x !== '');
      let read = `${ARRAYS[f.kind].arr}[${this.addressAt(f, ranked.cls, ranked.base, ranked.slot, el.code, el.konst)}]`;
      if (f.kind === 'bool') read = `(${read} !== 0)`;
      return `(${pre.join(', ')}, ${read})`;
    }
    const o = this.operand(obj, f.cls, f.name);
    const el = this.element(f, elem, inBounds);
    const pre = [...o.pre, el.check].filter((x) => x !== '');
    const { arr } = ARRAYS[f.kind];
    let read = `${arr}[${this.address(f, o, el.code, el.konst)}]`;
    if (f.kind === 'bool') read = `(${read} !== 0)`;
    if (f.kind === 'ref' && this.host.checked) {
      const t = this.temp();
      read = `((${t} = ${read}) !== 0 && $chkRef(ctx, ${t}, ${this.refTargetId(f)}, ${JSON.stringify(`${f.cls.name}.${f.name}`)}), ${t})`;
    }
    return pre.length > 0 ? `(${pre.join(', ')}, ${read})` : read;
  }

  private refTargetId(f: FieldRef): number {
    return f.target?.id ?? -1;
  }

  /** A store; `asValue`: the expression's value is the value assigned (JavaScript assignment). */
  private store(f: FieldRef, obj: Expr, elem: Expr | null, value: Expr, asValue: boolean, inBounds: boolean): string {
    const o = this.operand(obj, f.cls, f.name);
    const el = this.element(f, elem, inBounds);
    const pre = [...o.pre, el.check].filter((x) => x !== '');
    const { arr } = ARRAYS[f.kind];
    const place = `${arr}[${this.address(f, o, el.code, el.konst)}]`;
    let code: string;
    if (f.kind === 'bool') {
      if (asValue) {
        const t = this.temp();
        code = `(${t} = ${this.expr(value)}, ${place} = ${t} ? 1 : 0, ${t})`;
      } else code = `${place} = ${this.expr(value)} ? 1 : 0`;
    } else if (f.kind === 'ref' && this.host.checked) {
      const t = this.temp();
      code = `((${t} = ${this.expr(value)}) !== 0 && $chkRef(ctx, ${t}, ${this.refTargetId(f)}, ${JSON.stringify(`${f.cls.name}.${f.name}`)}), ${place} = ${t})`;
    } else code = `${place} = ${this.expr(value)}`;
    return pre.length > 0 ? `(${pre.join(', ')}, ${code})` : `(${code})`;
  }

  private allocFunction(id: number): string {
    const t = this.typeById(id);
    const zero: string[] = [];
    for (const f of t.fields) {
      const { arr, shift } = ARRAYS[f.kind];
      for (const off of f.offsets) {
        const idx = shift === 0 ? `b + ${off} + s` : `((b + ${off}) >>> ${shift}) + s`;
        zero.push(`${arr === 'U8' ? 'U8' : arr}[${idx}] = 0;`);
      }
    }
    // With deferFree the caller takes the slot (take) and passes it in. The typed arrays come
    // in as arguments, the runner's locals (allocArrays): read from this function's scope
    // instead, they were reloaded from the factory's context at every allocation even where
    // V8 inlined the function into the runner's loop.
    const params = [...(this.callerTakes ? ['h'] : []), ...this.allocArrays(id)];
    return `function alloc_${id}(${params.join(', ')}) {
  ${this.callerTakes ? '' : `const h = ${this.take(id)};`}
  const b = BB + (h >>> 5) * BBYTES, s = h & 31;
  ${zero.join(' ')}
  return h;
}`;
  }

  /** The typed arrays alloc_<id> reads or writes: those of its zeroing stores, and I32 where it takes a cached slot. */
  private allocArrays(id: number): string[] {
    const used = new Set<string>();
    if (!this.callerTakes && this.host.warpWords.cacheMask0 !== undefined) used.add('I32');
    for (const f of this.typeById(id).fields) used.add(ARRAYS[f.kind].arr);
    return ARRAY_NAMES.filter((a) => used.has(a));
  }

  /**
   * A new object's handle: (runtime/alloc-fast-path.ts F1) the warp's cached slot without a
   * call into the binding, else the core's allocation. With deferFree the marked objects of
   * the block (with deferOthers the pending deletions, G2) are released before that
   * call: every deletion made before it in the pass has then reached the core, as it had in
   * an interpreted run, so the core allocates from the same state (a cached slot was
   * reserved by such a call too).
   */
  private take(id: number): string {
    const core = this.deferFree
      ? `(${releaseDead('bid')}, A.allocate(TL[${id}]))`
      : this.deferOthers
        ? `(${releasePending()}, A.allocate(TL[${id}]))`
        : `A.allocate(TL[${id}])`;
    const mw = this.host.warpWords.cacheMask0;
    return mw === undefined
      ? core
      : `(I32[${mw + id * TS_WORDS}] !== 0 ? $take(I32, ${mw + id * TS_WORDS}, ${this.host.warpWords.cached}) : ${core})`;
  }

  private rel: string | null = null;
  /** The temporary that holds FastRelease.release's result (one per method). */
  private relTemp(): string {
    return (this.rel ??= this.temp());
  }

  private typeById(id: number): TypeLayout {
    return this.host.types[id]!;
  }

  // ---------------------------------------------------------------- statements

  private stmts(list: readonly Stmt[], indent: string): string {
    const out: string[] = [];
    for (let k = 0; k < list.length; k++) {
      const s = list[k]!;
      // `let x = e` lowers to a reset (x = undefined) and the assignment; the reset is
      // dead when the assignment follows at once, and writing undefined into a local that
      // otherwise holds numbers would make V8 keep it tagged (boxed doubles, checks).
      const next = list[k + 1];
      if (s.s === 'let' && s.init === null && next?.s === 'expr' && next.e.op === 'setLocal' && next.e.id === s.id) continue;
      out.push(this.stmt(s, indent));
    }
    return out.join('\n');
  }

  private stmt(s: Stmt, ind: string): string {
    switch (s.s) {
      case 'let': {
        const ty = this.ir.locals[s.id]!.ty;
        if (this.rankCls.has(s.id))
          return s.init !== null ? `${ind}${this.rankAssign(s.id, s.init)};` : `${ind}l${s.id} = undefined; l${s.id}$n = 0;`;
        return `${ind}l${s.id} = ${s.init !== null ? this.expr(s.init) : initial(ty)};`;
      }
      case 'expr': {
        const e = s.e;
        if (e.op === 'store') return `${ind}${this.store(e.field, e.obj, e.elem, e.value, false, e.inBounds === true)};`;
        return `${ind}${this.expr(e)};`;
      }
      case 'if':
        return `${ind}if (${this.expr(s.c)}) {\n${this.stmts(s.then, ind + '  ')}\n${ind}}${s.else.length > 0 ? ` else {\n${this.stmts(s.else, ind + '  ')}\n${ind}}` : ''}`;
      case 'block':
        return `${ind}${s.label}: {\n${this.stmts(s.body, ind + '  ')}\n${ind}}`;
      case 'loop':
        return `${ind}${s.label}: for (;;) {\n${this.stmts(s.body, ind + '  ')}\n${ind}}`;
      case 'forOf':
        return `${ind}${s.label}: for (l${s.id} of ${this.expr(s.iterable)}) {\n${this.stmts(s.body, ind + '  ')}\n${ind}}`;
      case 'try': {
        let out = `${ind}try {\n${this.stmts(s.body, ind + '  ')}\n${ind}}`;
        if (s.handler !== null) {
          const take = s.param !== null ? `\n${ind}  l${s.param} = $thrown;` : '';
          out += ` catch${s.param !== null ? ' ($thrown)' : ''} {${take}\n${this.stmts(s.handler, ind + '  ')}\n${ind}}`;
        }
        if (s.finalizer !== null) out += ` finally {\n${this.stmts(s.finalizer, ind + '  ')}\n${ind}}`;
        return out;
      }
      case 'break':
        return `${ind}break ${s.label};`;
      case 'continue':
        return `${ind}continue ${s.label};`;
      case 'switch': {
        const cases = s.cases.map(
          (c) => `${ind}  ${c.test === null ? 'default:' : `case ${this.expr(c.test)}:`}\n${this.stmts(c.body, ind + '    ')}`,
        );
        return `${ind}${s.label}: switch (${this.expr(s.on)}) {\n${cases.join('\n')}\n${ind}}`;
      }
      case 'forEach': {
        const n = this.temps++;
        const [i, e, b, m, h, sl] = ['$i', '$e', '$b', '$m', '$h', '$s'].map((p) => `${p}${n}`);
        // E1: the object's block offset per element size, for its field accesses (eachVars).
        const stable = !this.assigned.has(s.var);
        if (stable) this.eachVars.set(s.var, { typeId: s.typeId, n });
        const body = this.stmts(s.body, ind + '    ');
        this.eachVars.delete(s.var);
        const q = stable
          ? `, $q1_${n} = BB + ${b} * BBYTES, $q2_${n} = $q1_${n} >>> 1, $q4_${n} = $q1_${n} >>> 2, $q8_${n} = $q1_${n} >>> 3`
          : '';
        return (
          `${ind}for (let ${i} = lists[${2 * s.typeId}], ${e} = ${i} + lists[${2 * s.typeId + 1}]; ${i} < ${e}; ${i}++) {\n` +
          `${ind}  const ${b} = list[${i}];\n` +
          // A plain load, as the runner's own (emit()): set by the snapshot, only cleared during the pass.
          `${ind}  let ${m} = I32[BW + ${b} * BWORDS + ${BLOCK_ITER_WORD}] | 0;\n` +
          `${ind}  const ${h} = ${b} * 32${q};\n` +
          `${ind}  ${s.label}: while (${m} !== 0) {\n` +
          `${ind}    const ${sl} = 31 - Math.clz32(${m} & -${m});\n` +
          `${ind}    ${m} &= ${m} - 1;\n` +
          `${ind}    l${s.var} = ${h} + ${sl};\n` +
          `${body}\n` +
          `${ind}  }\n` +
          `${ind}}`
        );
      }
      case 'throw':
        return `${ind}throw ${this.expr(s.e)};`;
      case 'returnLane':
        return `${ind}${this.laneExit}`;
    }
  }
}

/**
 * Whether the body deletes an object other than the lane's own: a `destroy()` whose receiver
 * is not `this` of the method itself (an inlined callee's `this` is its receiver, so
 * `this.die()` whose die() calls `this.destroy()` deletes the lane's own object; any other
 * receiver, a reference or a local that may hold one, counts as another object).
 */
function freesOthers(ir: MethodIR): boolean {
  let others = false;
  walk(ir.body, (n) => {
    if ('op' in n && n.op === 'free' && n.obj.op !== 'self') others = true;
  });
  return others;
}

/** The concrete type ids of the objects the body creates (its inlined callees' included), ascending. */
export function createdTypes(ir: MethodIR): number[] {
  const ids = new Set<number>();
  walk(ir.body, (n) => {
    if ('op' in n && n.op === 'alloc') ids.add(n.cls.id);
  });
  return [...ids].sort((a, b) => a - b);
}

/** Visit every statement and expression of a body. */
export function walk(body: readonly Stmt[], visit: (node: Expr | Stmt) => void): void {
  const expr = (e: Expr): void => {
    visit(e);
    if (e.op === 'closure') e.body.forEach(stmt);
    for (const v of Object.values(e)) {
      if (v !== null && typeof v === 'object') {
        if (Array.isArray(v)) {
          for (const x of v) {
            if (x !== null && typeof x === 'object' && 'op' in x) expr(x as Expr);
            else if (Array.isArray(x) && x[1] !== null && typeof x[1] === 'object' && 'op' in x[1]) expr(x[1] as Expr);
          }
        } else if ('op' in v) expr(v as Expr);
      }
    }
  };
  const stmt = (s: Stmt): void => {
    visit(s);
    switch (s.s) {
      case 'let':
        if (s.init !== null) expr(s.init);
        return;
      case 'expr':
      case 'throw':
        expr(s.e);
        return;
      case 'if':
        expr(s.c);
        s.then.forEach(stmt);
        s.else.forEach(stmt);
        return;
      case 'block':
      case 'loop':
      case 'forEach':
        s.body.forEach(stmt);
        return;
      case 'forOf':
        expr(s.iterable);
        s.body.forEach(stmt);
        return;
      case 'try':
        s.body.forEach(stmt);
        s.handler?.forEach(stmt);
        s.finalizer?.forEach(stmt);
        return;
      case 'switch':
        expr(s.on);
        for (const c of s.cases) {
          if (c.test !== null) expr(c.test);
          c.body.forEach(stmt);
        }
        return;
      default:
        return;
    }
  };
  body.forEach(stmt);
}

/** (deferFree) Release the objects marked in `dead` in block `b` (an expression), if any. */
function releaseDead(b: string): string {
  return `dead !== 0 && (A.releaseMany(${b}, dead), dead = 0)`;
}

/** (deferOthers G2) Make the pending deletions, if any. */
function releasePending(): string {
  return `omask !== 0 && (A.releaseDeferred(obid, omask), omask = 0)`;
}

/** Bytes between two elements of an inline array field in layout `fl` (0 for a scalar). */
function strideOf(fl: FieldLayout): number {
  return fl.offsets.length > 1 ? fl.offsets[1]! - fl.offsets[0]! : 0;
}

/**
 * Code for the offset, in elements of a typed array of element size 1 << shift, of a field's
 * element within a block of layout `fl`: element `elemConst` (0 for a scalar), or element
 * `elemCode` computed at run time.
 */
function offsetIn(fl: FieldLayout, shift: number, elemCode: string | null, elemConst: number | null): string {
  const off = String(fl.offsets[elemConst ?? 0]! >>> shift);
  return elemCode === null ? off : `(${off} + ${elemCode} * ${strideOf(fl) >>> shift})`;
}

function initial(ty: Ty): string {
  return ty.k === 'obj' || ty.k === 'arr' ? '0' : 'undefined';
}

function constant(v: number | boolean | string | null | undefined): string {
  if (v === undefined) return 'undefined';
  if (typeof v === 'number') {
    if (Number.isNaN(v)) return 'NaN';
    if (v === Infinity) return 'Infinity';
    if (v === -Infinity) return '-Infinity';
    if (Object.is(v, -0)) return '-0';
    return v < 0 ? `(${v})` : String(v);
  }
  return JSON.stringify(v);
}

function memberName(name: string, optional: boolean): string {
  if (IDENT.test(name)) return optional ? name : `.${name}`;
  return `[${JSON.stringify(name)}]`;
}

function templateText(s: string): string {
  return s.replace(/\\/g, '\\\\').replace(/`/g, '\\`').replace(/\$\{/g, '\\${');
}

/**
 * Whether a lane must record its handle in `self`: the body uses it, or may throw (then the
 * catch names the object). A body may throw unless it is portable (no JavaScript values or
 * calls), neither allocates nor frees, is not checked, contains no `throw` and calls
 * nothing but Math functions and popc — null dereferences, index checks and ctx.get() are
 * all calls of helpers ($null, $range, $get), so they count.
 */
function needsSelf(ir: MethodIR, checked: boolean, body: string): boolean {
  if (checked || !ir.portable || ir.allocates || ir.frees) return true;
  if (/\bself\b/.test(body) || /\bthrow\b/.test(body)) return true;
  const rest = body.replace(/\b(?:if|for|while|switch|catch|return|typeof|void)\s*\(/g, ' ').replace(/\b(?:Math\.\w+|popc)\s*\(/g, ' ');
  return /[\w$\])]\s*\(/.test(rest);
}

function safeName(s: string): string {
  return s.replace(/[^A-Za-z0-9_$]/g, '_');
}
