/**
 * One thread's share of a pass: claim chunks of the pass's index range from the shared
 * cursor until it is exhausted (load balance, protocol P4), and run them on this
 * thread's ThreadContext. The same code runs on the calling thread and in every worker.
 *
 *  - KIND_DO: indices are positions in the block list R (written by snapshot(), Alg. 5);
 *    each block runs as one virtual warp (ThreadContext.runBlocks) over the lanes set in
 *    its iteration bitmap, so the pass sees exactly the objects live when it started.
 *  - KIND_DO_COPY: as KIND_DO, each claim first setting the iteration words of its own
 *    blocks (the snapshot's copy fused into the pass: runtime/doall.ts F1–F2).
 *  - KIND_COPY: indices are positions in the block list; each claim sets the iteration
 *    words of its blocks (ThreadContext.copyIteration: the snapshot's copy, schedule.ts
 *    P7). Not counted as work in the per-thread statistics.
 *  - KIND_DEFRAG_COPY / KIND_DEFRAG_REWRITE: indices are defragmentation lanes
 *    (runtime/defrag-lanes.ts L1–L4): copy records of one pass of the descriptor's type,
 *    or blocks whose references are rewritten (args: [moved type ids]); their work lists
 *    are in the scratch buffer `scratch`. Not counted as work.
 *  - KIND_NEW: indices are object indices 0 … n-1 of a parallelNew; each claim reserves
 *    its objects with one coalesced allocation per block (Allocator.allocateMany, §4.2),
 *    zeroes them and calls the init method with the object's index.
 *
 * A throw stops this thread's share, records the first error of the pass (C_ERROR_OWNER)
 * and sets C_STOP so the other threads stop claiming; it never escapes: the thread still
 * arrives at the barrier, so the pass ends and the pool stays usable.
 */
import type { ThreadContext } from '../runtime/thread.js';
import { newObjects } from '../runtime/doall.js';
import { UsageError } from '../runtime/errors.js';
import { columnsFor, copyLanes, rewriteLanes, type DefragScratch } from '../runtime/defrag-lanes.js';
import { KIND_COPY, KIND_DEFRAG_COPY, KIND_DEFRAG_REWRITE, KIND_DO, KIND_DO_COPY, KIND_NEW, type PassCall } from '../runtime/executor.js';
import {
  C_CURSOR,
  C_STOP,
  D_CHUNK,
  D_LISTS,
  D_TO,
  D_TYPE,
  S_WORK,
  recordError,
  slotWord,
  type ControlPlan,
  type ErrorRecord,
} from './protocol.js';

/**
 * Run this thread's share of the pass described in `ctl`. `thread` is 0 for the calling
 * thread. Returns the error this thread caught (with the original thrown value, which
 * the calling thread reports as is), or null.
 */
export function runShare(
  ctx: ThreadContext,
  ctl: Int32Array,
  plan: ControlPlan,
  kind: number,
  call: PassCall,
  thread: number,
  scratch: DefragScratch | null = null,
): ErrorRecord | null {
  const typeId = ctl[D_TYPE]!; // descriptor words: plain reads, published by the C_EPOCH bump (P1)
  const to = ctl[D_TO]!;
  const chunk = ctl[D_CHUNK]!;
  let caught: ErrorRecord | null = null;
  let done = 0;
  if (kind === KIND_DO || kind === KIND_DO_COPY) {
    const copyFirst = kind === KIND_DO_COPY;
    const lists = ctl.subarray(D_LISTS, D_LISTS + 2 * ctx.table.types.length);
    ctx.pass = { lists, typeId, current: null };
    try {
      for (;;) {
        if (Atomics.load(ctl, C_STOP) !== 0) break;
        const i = Atomics.add(ctl, C_CURSOR, chunk);
        if (i >= to) break;
        const end = Math.min(i + chunk, to);
        if (copyFirst) ctx.copyIteration(i, end);
        ctx.runBlocks(typeId, call.method, call.args, i, end);
        done += end - i;
      }
    } catch (error) {
      const cur = ctx.pass.current;
      caught = { typeId, method: call.method, handle: cur === null ? 0 : cur.__h, thread, error };
      recordError(ctl, plan, caught);
    } finally {
      ctx.pass = null;
    }
  } else if (kind === KIND_COPY) {
    for (;;) {
      if (Atomics.load(ctl, C_STOP) !== 0) break;
      const i = Atomics.add(ctl, C_CURSOR, chunk);
      if (i >= to) break;
      ctx.copyIteration(i, Math.min(i + chunk, to));
    }
  } else if (kind === KIND_DEFRAG_COPY || kind === KIND_DEFRAG_REWRITE) {
    const t = ctx.table.types[typeId]!;
    const columns = kind === KIND_DEFRAG_REWRITE ? columnsFor(ctx.table, call.args[0] as number[]) : null;
    try {
      if (scratch === null)
        throw new UsageError('a defragmentation pass reached a thread without the defrag scratch buffer (ExecutorConfig.defragScratch)');
      for (;;) {
        if (Atomics.load(ctl, C_STOP) !== 0) break;
        const i = Atomics.add(ctl, C_CURSOR, chunk);
        if (i >= to) break;
        const end = Math.min(i + chunk, to);
        if (columns === null) copyLanes(ctx.heap, scratch, t, i, end);
        else rewriteLanes(ctx.heap, scratch, columns, i, end);
      }
    } catch (error) {
      // (defrag-lanes.ts L4) not expected on a consistent heap: reported like a method's throw.
      caught = { typeId, method: kind === KIND_DEFRAG_COPY ? '(defrag copy)' : '(defrag rewrite)', handle: 0, thread, error };
      recordError(ctl, plan, caught);
    }
  } else if (kind === KIND_NEW) {
    const t = ctx.table.types[typeId]!;
    const out = new Uint32Array(chunk);
    for (;;) {
      if (Atomics.load(ctl, C_STOP) !== 0) break;
      const i = Atomics.add(ctl, C_CURSOR, chunk);
      if (i >= to) break;
      const k = Math.min(chunk, to - i);
      const failed = newObjects(ctx, t.id, call, out, k, i);
      if (failed !== null) {
        caught = { typeId, method: call.method, handle: failed.handle, thread, error: failed.error };
        recordError(ctl, plan, caught);
        break;
      }
      done += k;
    }
  }
  // Kept blocks (wasm/src/alloc/core.rs K1) do not outlive this thread's share of the pass.
  ctx.allocator.flushKept();
  const w = slotWord(plan, thread) + S_WORK;
  Atomics.store(ctl, w, Atomics.load(ctl, w) + done);
  return caught;
}
