/**
 * The mechanism of do-alls and parallelNew (paper §3 "Parallel Object Enumeration",
 * §4.2): what a pass does, given where schedule.ts says it runs.
 *
 * The life of a do-all, `await rt.parallelDo(C, 'm', ...args)`:
 *   1. runtime.ts     Runtime.parallelDo: checks (class, method, arguments), one pass at a time;
 *                     backend 'webgpu' first tries the GPU (webgpu/runner.ts).
 *   2. doall.ts       PassRunner.parallelDo: the snapshot (thread.ts) of the classes the method
 *                     can reach (plan().reach): block lists, then iteration words (on the workers
 *                     when large, schedule.ts P7); then one pass per concrete class of C, placed by
 *   3. schedule.ts    PassScheduler.doAll: on the calling thread, or on the executor in claims;
 *   4a. doall.ts      inline: runInline → ThreadContext.runBlocks (thread.ts);
 *   4b. workers/      on the executor: pool.ts wakes the worker threads, every thread (the
 *                     calling one too) runs pass.ts runShare, claiming chunks of blocks and
 *                     running each with ThreadContext.runBlocks;
 *   5. thread.ts      runBlocks runs a chunk of blocks, each block a virtual warp: a WASM
 *                     kernel (kernels.ts) if the backend has one, else the compiled method
 *                     (compiler/), else the interpreted method through views (accessors.ts);
 *   6. doall.ts       afterwards every thread returns its kept blocks (allocator core K2) —
 *                     on a heap of several threads, where the calling thread also returns
 *                     those of creates and deletes outside passes before step 2 (K2',
 *                     flushBeforeFork); a runtime of one thread keeps them from pass to pass
 *                     (afterPass) —; a throw becomes a MethodError naming the class, method
 *                     and object.
 *
 * Debug tier 2 (SMMO_DEBUG=2, debug.ts) validates the heap after every pass.
 *
 * The snapshot's copy fused into the pass (KIND_DO_COPY). On the executor the copy of
 * iteration words is a pass of its own (a fork-join, 0.2–0.6 ms at 16 threads on the device
 * host) so that every listed block is snapshotted before any lane runs. It may instead be
 * done by each claim for its own blocks, just before running them, when:
 *  (F1) no lane of the do-all can change an allocation word but that of its own block —
 *       every concrete class's route is a compiled method (no WASM kernel, no interpreted
 *       method, whose effects are not known) that is portable (calls no JavaScript),
 *       creates no object and deletes none but the lane's own (`this.destroy()`) — so an
 *       iteration word computed at any moment of the pass before the block's own lanes
 *       run, as its claim computes it, is the one computed before the pass; the lanes'
 *       releases then clear the same bits in both words (thread.ts S3); and
 *  (F2) no lane reads another block's iteration word: the method has no deviceDo
 *       (`iterates` is empty), so the do-all reaches only its own concrete classes.
 * Then the do-all visits exactly the objects it visits with the separate copy; after it
 * every listed block's iteration word is the same (test/fused-copy.test.ts).
 *
 * On the calling thread such a do-all copies nothing at all: its passes take their lanes
 * from the allocation words (thread.ts runBlocks R1; a runner reads a block's word once,
 * before its lanes run), which F1 keeps equal to what the copy would have written until
 * then. There F1 also admits methods that create objects of classes the do-all does not
 * visit (epidemic's births, a cell that emits particles): such objects go into blocks of
 * their own class, and the one way a create reaches a listed block — the core's reclaim of
 * empty blocks when none is free (core.rs K3) — is met by the runner, which skips a block
 * whose type is no longer its class (emit-js.ts); on the executor, where that reclaim
 * could run on another thread between a claim's read of a block and its lanes, they keep
 * the separate copy; the iteration words keep an earlier snapshot's values, still ⊆
 * allocation (thread.ts S2, S3), and no later pass reads them before its own snapshot.
 * Its block lists come from the last walk while no block joined or left a class
 * (thread.ts snapshotLists L1–L3). With both, a do-all of an ECS system over classes
 * whose blocks did not change costs its passes and little else (test/pass-lists.test.ts).
 */
import { DEBUG_LEVEL } from './debug.js';
import { HeapCorruptionError, MethodError, PassTimeoutError, SmmoError, WorkerCrashedError } from './errors.js';
import { KIND_COPY, KIND_DO, KIND_DO_COPY, KIND_NEW, type PassCall, type PassExecutor } from './executor.js';
import type { Heap } from './heap.js';
import { BLOCK_TYPE_WORD, SLOT_BITS, type TypeLayout, type TypeTable } from './layout.js';
import type { PassScheduler } from './schedule.js';
import type { SmmoObject } from './schema.js';
import type { KernelDispatch } from './kernels.js';
import {
  listedFrom,
  listedTo,
  newListsMemo,
  READS_ALLOCATION,
  READS_ALLOCATION_HERE,
  type ListsMemo,
  type PassLists,
  type Route,
  type ThreadContext,
} from './thread.js';
import { timed, TimedOut } from './timed.js';

/** PassRunner.plan: what every do-all of one (type, method) needs. */
interface DoAllPlan {
  /** The calling thread's dispatch the plan was made for. */
  readonly kernels: KernelDispatch;
  /** The concrete types to snapshot. */
  readonly reach: readonly number[];
  /** The concrete types visited (t.concrete) and, by index there, their routes (made on first need). */
  readonly ids: readonly number[];
  readonly routes: Route[];
  /** By index in ids: thread.ts readsAllocation's answer for the class's pass (R1), 0 not yet known. */
  readonly direct: Uint8Array;
  /** The plan's block lists (thread.ts snapshotLists L4: kept while no walk and no block change happened). */
  readonly lists: PassLists;
  readonly memo: ListsMemo;
  /**
   * For these lists: copyFusable's answers (1 yes, 0 no, -1 not known) for passes on the
   * executor and for passes on the calling thread alone (`fusableHere`), and, by index in
   * ids, spanEnd's (0: not known). Derivable on every do-all, but kept: working the spans
   * out again each time cost ecs-benchmark's frag_iter about 6 % per op (dev VM).
   */
  fusable: number;
  fusableHere: number;
  readonly spans: Int32Array;
}

/** A parallelNew init: a method name (with arguments) or a function (calling thread only). */
export type NewInit = PassCall | ((obj: SmmoObject, index: number) => void);

export class PassRunner {
  constructor(
    private readonly heap: Heap,
    private readonly table: TypeTable,
    private readonly main: ThreadContext,
    readonly scheduler: PassScheduler,
    private readonly executor: PassExecutor | null,
    private readonly passTimeout: number | undefined,
  ) {
    this.sharedHeap = heap.flags.atomic;
  }

  /** Whether the heap serves several threads (formatted for atomics): only then do kept blocks go back after every pass (K2). */
  private readonly sharedHeap: boolean;

  /** parallelDo's passes: one per concrete class of `t`, each where the scheduler says. */
  async parallelDo(t: TypeLayout, method: string, args: readonly unknown[]): Promise<void> {
    const ctx = this.main;
    // (K2') Blocks the calling thread kept from creates and deletes outside passes go back
    // before the snapshot, not at the end of its share: see flushBeforeFork.
    this.flushBeforeFork();
    const plan = this.plan(t, method);
    const lists = this.listsOf(plan);
    const call = { method, args };
    let failure: unknown;
    try {
      const fused = this.fusable(plan, method, lists, this.executor === null);
      if (fused && this.executor !== null) this.counters.fusedCopies++;
      else await this.copyIteration(lists, `parallelDo(${t.name}, '${method}')`);
      const ids = plan.ids;
      for (let i = 0; i < ids.length; i++) {
        const id = ids[i]!;
        const from = lists[2 * id]!;
        const blocks = lists[2 * id + 1]!;
        if (blocks === 0) continue;
        const key = `${id}:${method}`;
        const where = this.scheduler.doAll(key, blocks);
        if (where.inline || this.executor === null) {
          this.runInline(lists, id, method, args, from, from + blocks, fused, this.routeOf(plan, i, method));
          continue;
        }
        const operation = `parallelDo(${this.table.types[id]!.name}, '${method}')`;
        ctx.kernels.note(id, method); // stats().backend names it even if the workers ran every block
        ctx.compiler?.compile(id, method, ctx.compileUse); // likewise stats().compiled
        const t0 = performance.now();
        const kind = fused ? KIND_DO_COPY : KIND_DO;
        await this.executor.run({ kind, typeId: id, from, to: from + blocks, chunk: where.chunk, call, lists, operation }, ctx);
        this.scheduler.ranOnWorkers(key, blocks, (performance.now() - t0) * 1000);
      }
    } catch (e) {
      failure = e;
      throw e;
    } finally {
      this.afterPass(failure);
    }
  }

  /** The plan's block lists for this do-all (L4); what was worked out from the last ones is forgotten when they change. */
  private listsOf(plan: DoAllPlan): PassLists {
    const lists = this.main.snapshotLists(plan.reach, plan.lists, plan.memo);
    if (!plan.memo.hit) {
      plan.fusable = -1;
      plan.fusableHere = -1;
      plan.spans.fill(0);
    }
    return lists;
  }

  /** copyFusable, once per lists (L4); `here`: every pass runs on the calling thread (no executor, or doAll). */
  private fusable(plan: DoAllPlan, method: string, lists: PassLists, here: boolean): boolean {
    if (here) {
      if (plan.fusableHere < 0) plan.fusableHere = this.copyFusable(plan, method, lists, true) ? 1 : 0;
      return plan.fusableHere === 1;
    }
    if (plan.fusable < 0) plan.fusable = this.copyFusable(plan, method, lists, false) ? 1 : 0;
    return plan.fusable === 1;
  }

  /**
   * (K2') On a heap of several threads, the calling thread's kept blocks and its empty open
   * hint blocks (core.rs K1, K4: left by creates and deletes outside passes, which may also
   * have emptied a worker's hint block) go back to `free` before a do-all lists its blocks.
   * Every thread gives its kept blocks and its empty hint blocks back at the end of its
   * share of a pass (core.rs K2, workers/pass.ts), when the cursor is exhausted but other
   * threads may still be copying the iteration words of their last claim (a KIND_COPY
   * pass, or a claim's fused copy, F1). Giving a block back locks it first (Alg. 7: every
   * bit of its allocation word set) while its type is still its class: a copy that read
   * the word then would give an empty listed block every slot as a lane. A block emptied
   * during the pass is safe — its claim copied it before its lanes emptied it —; one
   * emptied before the pass is not, so none may be left kept or open when the pass starts:
   * the calling thread's are flushed here, and a worker's hint emptied outside passes was
   * emptied by the calling thread, which then retired it or kept it (flushed here too).
   */
  private flushBeforeFork(): void {
    if (this.sharedHeap && this.executor !== null) this.main.allocator.flushKept();
  }

  /** Passes counted for tests: snapshot copies run as passes of their own, and do-alls that fused the copy (F1–F2). */
  readonly counters = { copyPasses: 0, fusedCopies: 0 };

  /**
   * Whether every pass of the do-all of `method` over `t` that has blocks reads no
   * iteration word and changes no allocation word but its own block's, after its lanes
   * were read (F1–F2 in the file header; thread.ts readsAllocation R1): its snapshot's
   * copy may then be fused into its passes, or left out where the passes read the
   * allocation words (runInline `direct`). With `here` (every pass on the calling thread)
   * a pass may also create objects of classes the do-all does not visit (R1).
   */
  private copyFusable(plan: DoAllPlan, method: string, lists: Int32Array, here: boolean): boolean {
    const ctx = this.main;
    if (ctx.compiler === null) return false;
    const ids = plan.ids;
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]!;
      if (lists[2 * id + 1] === 0) continue; // no pass: nothing to copy or to decide
      let known = plan.direct[i]!;
      if (known === 0) {
        // Known once per route: its kernel and its compiled method do not change.
        try {
          known = ctx.readsAllocation(id, method, ids, this.routeOf(plan, i, method));
        } catch (e) {
          // Choosing the route (a kernel that does not fit, …) fails as the pass would: runInline.
          throw new MethodError(this.table.types[id]!.name, method, 0, 0, e);
        }
        plan.direct[i] = known;
      }
      if (known !== READS_ALLOCATION && !(here && known === READS_ALLOCATION_HERE)) return false;
    }
    return true;
  }

  /**
   * (S1) Spans: where one pass may run several classes. On the calling thread, the passes of
   * consecutive concrete classes i … j-1 of a do-all run as one call of the compiled
   * runner over their block lists when
   *  - the do-all reads the allocation words (copyFusable: every class with blocks compiled,
   *    creating nothing, deleting nothing but its own objects, no deviceDo, no JavaScript
   *    but rankTable), and every class of the span has blocks;
   *  - their compiled methods are one function (compiler C4: the same code, the same statics);
   *  - their block lists follow each other in R (snapshotLists lists the reach in the order
   *    of concreteIds, and a direct do-all's reach is its own classes, in that order).
   * Then the call visits the same objects in the same order, running the same code, as the
   * classes' passes one after the other: nothing runs between two of them but the pass
   * marker's update and, for a pass that reads allocation words, no warp end. A lane that
   * throws is named with its own class (runInline). Returns j (≥ i + 1).
   */
  private spanEnd(plan: DoAllPlan, i: number, lists: Int32Array): number {
    const known = plan.spans[i]!;
    return known !== 0 ? known : (plan.spans[i] = this.computeSpanEnd(plan, i, lists));
  }

  private computeSpanEnd(plan: DoAllPlan, i: number, lists: Int32Array): number {
    const ids = plan.ids;
    const first = plan.routes[i]?.compiled;
    if (first === undefined || !first.compiled) return i + 1;
    let end = lists[2 * ids[i]!]! + lists[2 * ids[i]! + 1]!;
    let j = i + 1;
    for (; j < ids.length; j++) {
      const id = ids[j]!;
      const blocks = lists[2 * id + 1]!;
      if (blocks === 0 || plan.direct[j] !== READS_ALLOCATION || lists[2 * id] !== end) break;
      const c = plan.routes[j]?.compiled;
      if (c === undefined || !c.compiled || c.run !== first.run) break;
      end += blocks;
    }
    return j;
  }

  /** The end in R of the block list of the plan's (j-1)-th class. */
  private endOf(plan: DoAllPlan, j: number, lists: Int32Array): number {
    const id = plan.ids[j - 1]!;
    return lists[2 * id]! + lists[2 * id + 1]!;
  }

  /** The route of the plan's i-th concrete class (made on first need: stats() names only classes that ran). */
  private routeOf(plan: DoAllPlan, i: number, method: string): Route {
    return (plan.routes[i] ??= this.main.route(plan.ids[i]!, method));
  }

  /** The snapshot's copy of iteration words (thread.ts), on the executor when it is large (schedule.ts P7). */
  private async copyIteration(lists: Int32Array, operation: string): Promise<void> {
    const from = listedFrom(lists);
    const to = listedTo(lists);
    const chunk = this.executor === null ? null : this.scheduler.snapshotCopy(to - from);
    if (chunk === null || this.executor === null) {
      this.main.copyIteration(from, to);
      return;
    }
    this.counters.copyPasses++;
    const call = { method: '', args: [] };
    await this.executor.run(
      { kind: KIND_COPY, typeId: 0, from, to, chunk, call, lists: null, operation: `${operation} (snapshot)` },
      this.main,
    );
  }

  /**
   * doAll: every pass on the calling thread. A do-all that changes no allocation word but
   * its own block's, after reading it (F1–F2), copies no iteration word: its passes read
   * the allocation words (R1).
   */
  doAllHere(t: TypeLayout, method: string, args: readonly unknown[]): void {
    const plan = this.plan(t, method);
    const lists = this.listsOf(plan);
    let failure: unknown;
    try {
      const direct = this.fusable(plan, method, lists, true);
      if (!direct) this.main.copyIteration(listedFrom(lists), listedTo(lists));
      const ids = plan.ids;
      for (let i = 0; i < ids.length; i++) {
        const id = ids[i]!;
        const from = lists[2 * id]!;
        const blocks = lists[2 * id + 1]!;
        // A class without blocks was not checked by copyFusable: it reads nothing either way.
        const lanes = direct && blocks !== 0;
        // Classes that share their compiled code run as one pass (S1).
        const j = lanes ? this.spanEnd(plan, i, lists) : i + 1;
        this.runInline(lists, id, method, args, from, this.endOf(plan, j, lists), lanes, this.routeOf(plan, i, method), j - i > 1);
        i = j - 1;
      }
    } catch (e) {
      failure = e;
      throw e;
    } finally {
      this.afterPass(failure);
    }
  }

  /** parallelNew: `n` objects of concrete type `t`, initialised by `init`. */
  async parallelNew(t: TypeLayout, n: number, init: NewInit, operation: string): Promise<void> {
    const ctx = this.main;
    let failure: unknown;
    try {
      const chunk = typeof init === 'function' ? null : this.scheduler.parallelNew(n);
      if (chunk !== null && this.executor !== null && typeof init !== 'function') {
        await this.executor.run({ kind: KIND_NEW, typeId: t.id, from: 0, to: n, chunk, call: init, lists: null, operation }, ctx);
        return;
      }
      const method = typeof init === 'function' ? '(init function)' : init.method;
      const out = new Uint32Array(Math.min(n, 4096));
      this.timedPass(
        () => operation,
        () => {
          for (let done = 0; done < n; done += out.length) {
            const failed = newObjects(ctx, t.id, init, out, Math.min(out.length, n - done), done);
            if (failed !== null) throw this.methodError(t.id, method, failed.handle, failed.error);
          }
        },
      );
    } catch (e) {
      failure = e;
      throw e;
    } finally {
      this.afterPass(failure);
    }
  }

  /** The calling thread's pass marker (ThreadContext.pass) while runInline runs a pass. */
  private readonly inlinePass: { lists: Int32Array; typeId: number; current: SmmoObject | null } = {
    lists: new Int32Array(0),
    typeId: 0,
    current: null,
  };

  /** plan()'s answers by type id, then method. */
  private readonly plans: Map<string, DoAllPlan>[] = [];

  /**
   * What every do-all of `method` over `t` needs, worked out once (per dispatch: a new
   * KernelDispatch on the calling thread makes a new plan): the concrete classes it
   * visits, what it must snapshot (reach) and each class's route, so that a do-all of an
   * ECS system over 26 small classes does no per-class lookup by name.
   *
   * The reach: the concrete types a do-all of `method` over `t` must snapshot (thread.ts
   * snapshot's invariant): the classes it visits and those its method's deviceDo loops
   * iterate — known when the method compiled with nothing left as JavaScript but
   * rankTable (which reads no snapshot: rank-table.ts R5), for every concrete class of `t`.
   * Otherwise (interpreted, a hand-written kernel, a JavaScript call that might enumerate
   * anything) every concrete type. Skipping the others is what
   * makes a do-all over a few small classes cheap in a heap with many.
   */
  private plan(t: TypeLayout, method: string): DoAllPlan {
    const perType = this.plans[t.id] ?? (this.plans[t.id] = new Map());
    let p = perType.get(method);
    if (p === undefined || p.kernels !== this.main.kernels) {
      const ids = t.concrete;
      p = {
        kernels: this.main.kernels,
        reach: this.computeReach(t, method),
        ids,
        routes: [],
        direct: new Uint8Array(ids.length),
        lists: new Int32Array(2 * this.table.types.length),
        memo: newListsMemo(),
        fusable: -1,
        fusableHere: -1,
        spans: new Int32Array(ids.length),
      };
      perType.set(method, p);
    }
    return p;
  }

  private computeReach(t: TypeLayout, method: string): readonly number[] {
    const ctx = this.main;
    const all = this.table.concreteIds;
    if (ctx.compiler === null) return all;
    const ids = new Set<number>();
    for (const id of t.concrete) {
      if (ctx.kernels.backendFor(id, method) !== 'ts') return all;
      const c = ctx.compiler.compile(id, method, ctx.compileUse);
      // JavaScript the method calls may do-all or deviceDo over any class; rankTable reads no
      // snapshot (rank-table.ts R5).
      if (!c.compiled || (c.notes.length > 0 && !c.ranksOnly)) return all;
      ids.add(id);
      for (const j of c.iterates) ids.add(j);
    }
    // In the order of concreteIds, as a full snapshot lists them.
    return all.filter((id) => ids.has(id));
  }

  /**
   * After every pass: on a heap of several threads the calling thread's kept blocks go back
   * (K2), as every worker's do at the end of its share (workers/pass.ts). A runtime of one
   * thread keeps them: no other thread can need them, and the next pass that creates objects
   * of their class opens them again instead of retiring them here and taking blocks from
   * `free` there (entity_cycle's 32 blocks per op; docs/benchmarks.md "Kept blocks from pass
   * to pass"). They stay used blocks that satisfy H1–H5 (core.rs K1, K4), at most keepBlocks
   * per class plus the hint blocks; stats(), validateHeap(), defragmentation and close() give
   * them back, and a heap that runs out reclaims them (K3). Multi-threaded runs keep the
   * flush: a scratch build without it raised wa-tor's agent fragmentation at 16 threads
   * from 15.5 to 29.9 % (docs/benchmarks.md, "Deferred self-deletion"). Debug tier 2
   * validates the heap, except after a stop (`failure`: what the pass threw, if anything).
   */
  private afterPass(failure: unknown): void {
    // A stop (PassTimeoutError, WorkerCrashedError) carries its own validateHeap() result
    // (heapCheck): an allocator operation cut in half may have broken the heap, which that
    // error reports. Nothing here may replace it: a throw from this `finally` would.
    const stopped = failure instanceof PassTimeoutError || failure instanceof WorkerCrashedError;
    try {
      if (this.sharedHeap) this.main.allocator.flushKept();
      if (DEBUG_LEVEL >= 2 && !stopped) this.heap.validate();
    } catch (e) {
      if (!stopped) throw e;
    }
  }

  /** Wrap what an init threw on the calling thread; allocation errors (handle 0) pass through unwrapped. */
  private methodError(typeId: number, method: string, handle: number, error: unknown): Error {
    if (handle === 0 && error instanceof SmmoError) return error;
    return new MethodError(this.table.types[typeId]!.name, method, handle, 0, error);
  }

  /** One concrete type's pass on the calling thread. */
  private runInline(
    lists: Int32Array,
    id: number,
    method: string,
    args: readonly unknown[],
    from: number,
    to: number,
    direct: boolean,
    route: Route,
    span = false,
  ): void {
    const ctx = this.main;
    // One pass at a time on the calling thread (Runtime.enter): its marker object is reused.
    const pass = this.inlinePass;
    pass.lists = lists;
    pass.typeId = id;
    pass.current = null;
    ctx.pass = pass;
    const t0 = this.executor === null ? 0 : performance.now();
    try {
      if (this.passTimeout === undefined) ctx.runBlocks(id, method, args, from, to, direct, route);
      else
        this.timedPass(
          () => `parallelDo(${this.table.types[id]!.name}, '${method}')`,
          () => ctx.runBlocks(id, method, args, from, to, direct, route),
        );
      if (this.executor !== null) this.scheduler.ranInline(`${id}:${method}`, to - from, (performance.now() - t0) * 1000);
    } catch (e) {
      if (e instanceof PassTimeoutError) throw e;
      const failed = pass.current as SmmoObject | null; // set by runBlocks when a method threw
      const h = failed === null ? 0 : failed.__h;
      // A span (S1) runs several classes: the lane's own class, from its block (a span deletes nothing).
      const cls = span && h !== 0 ? this.heap.i32[this.heap.blockWord(h >>> SLOT_BITS) + BLOCK_TYPE_WORD]! : id;
      throw new MethodError(this.table.types[cls]!.name, method, h, 0, e);
    } finally {
      ctx.pass = null;
    }
  }

  /**
   * Run calling-thread work of one pass under passTimeout (timed.ts; no timeout: a plain
   * call). An interrupted pass ran none of its own cleanup (T2): the pass marker, the open
   * warp and the kept blocks are reset here (ThreadContext.abandonPass), the heap is validated, and a PassTimeoutError says so.
   */
  private timedPass<T>(operation: () => string, fn: () => T): T {
    try {
      return this.passTimeout === undefined ? fn() : timed(fn, this.passTimeout);
    } catch (e) {
      if (!(e instanceof TimedOut)) throw e;
      this.main.abandonPass();
      let check: HeapCorruptionError | null = null;
      try {
        this.heap.validate();
      } catch (v) {
        if (!(v instanceof HeapCorruptionError)) throw v;
        check = v;
      }
      throw new PassTimeoutError(operation(), this.passTimeout!, [0], check);
    }
  }
}

/**
 * Create `k` objects of type `typeId` with one coalesced allocation, zero them and run
 * `init` on each, indices first … first+k-1: the method `init.method(index, ...args)`
 * (none if its name is ''), or a function `init(obj, index)` (parallelNew with an init
 * function, on the calling thread). On a throw, the objects whose init had not started
 * are deleted again (they were never seen by user code); the one whose init threw and
 * those before it stay. Returns null, or the failing object's handle and the thrown
 * value. Allocation errors (a full heap) are reported the same way with handle 0.
 * Runs on the calling thread and in workers (workers/pass.ts).
 */
export function newObjects(
  ctx: ThreadContext,
  typeId: number,
  init: NewInit,
  out: Uint32Array,
  k: number,
  first: number,
): { handle: number; error: unknown } | null {
  const t = ctx.table.types[typeId]!;
  try {
    ctx.allocator.allocateMany(t, k, out, 0);
  } catch (error) {
    return { handle: 0, error };
  }
  for (let j = 0; j < k; j++) ctx.zero(typeId, out[j]!);
  if (typeof init !== 'function' && init.method === '') return null;
  const cur = ctx.view(out[0]!);
  let run: (obj: SmmoObject, index: number) => void;
  if (typeof init === 'function') run = init;
  else {
    const fn = (cur as unknown as Record<string, (...a: unknown[]) => void>)[init.method]!;
    const args = init.args;
    run = args.length === 0 ? (obj, index) => fn.call(obj, index) : (obj, index) => fn.call(obj, index, ...args);
  }
  const heap = ctx.heap;
  let j = 0;
  try {
    for (; j < k; j++) {
      const h = out[j]!;
      cur.__o = heap.blockOffset(h >>> 5);
      cur.__s = h & 31;
      cur.__h = h;
      cur.__i = (cur.__o >>> 2) + cur.__s;
      if (ctx.checked) ctx.stamp(cur, typeId); // thread.ts V1
      run(cur, first + j);
    }
  } catch (error) {
    for (let r = j + 1; r < k; r++) ctx.allocator.releaseHandle(out[r]!);
    return { handle: out[j]!, error };
  }
  return null;
}
