/**
 * Runtime.parallelDefrag: defragmentation (runtime/defrag.ts, CompactGpu, "CompactGpu:
 * Massively Parallel Memory Defragmentation on GPUs", ISMM 2019, §3 and §4) with its copy
 * and rewrite phases on the runtime's executor (the worker threads and the calling thread,
 * as a do-all's passes: runtime/executor.ts, workers/pass.ts). The scan, the reservations
 * and the block-state updates stay on the calling thread (F1: every block transition goes
 * through its allocator state).
 *
 * Invariants (besides defrag.ts F1–F4 and defrag-lanes.ts L1–L4):
 *  (Q1) The same steps (defragSteps) and lanes as Runtime.defrag: for the same heap the
 *       heap afterwards, the remap and the statistics (but the times and `threads`) are the
 *       same, whatever the thread count and however the lanes are split into claims.
 *  (Q2) A phase of fewer than max(2, inlineBlocks) lanes runs on the calling thread (a
 *       fork-join costs more than it does, schedule.ts P3); a larger one is one executor
 *       pass (KIND_DEFRAG_COPY / KIND_DEFRAG_REWRITE), its lanes claimed in chunks of about
 *       8 claims per thread, at most MAX_CHUNK lanes.
 *  (Q3) Asynchronous (the calling thread must await the workers, as parallelDo): Runtime
 *       marks the call in flight, so no do-all, parallelNew or defrag overlaps it (F4).
 */
import { defragSteps, runLanes, type DefragHost } from './defrag.js';
import type { DefragScratch } from './defrag-lanes.js';
import type { DefragResult } from './defrag-result.js';
import { KIND_DEFRAG_COPY, KIND_DEFRAG_REWRITE, type PassExecutor } from './executor.js';
import type { TypeLayout } from './layout.js';
import type { ThreadContext } from './thread.js';

/** (Q2) Most lanes per claim. */
const MAX_CHUNK = 64;

/** Defragment `types` with factor `n` (checked), the copy and rewrite lanes on `executor` (see the top of this file). */
export async function parallelDefragment(
  host: DefragHost,
  types: readonly TypeLayout[],
  n: number,
  sc: DefragScratch,
  executor: PassExecutor,
  main: ThreadContext,
  inlineLanes: number,
): Promise<DefragResult> {
  const steps = defragSteps(host, types, n, sc, executor.threads);
  try {
    return await drive(host, steps, sc, executor, main, inlineLanes);
  } finally {
    steps.return(undefined as never); // after a failed phase: the steps' cleanup (defrag-wasm.ts restore) runs; a no-op when done
  }
}

async function drive(
  host: DefragHost,
  steps: ReturnType<typeof defragSteps>,
  sc: DefragScratch,
  executor: PassExecutor,
  main: ThreadContext,
  inlineLanes: number,
): Promise<DefragResult> {
  for (let r = steps.next(); ; r = steps.next()) {
    if (r.done === true) return r.value;
    const req = r.value;
    if (req.lanes < Math.max(2, inlineLanes)) {
      runLanes(host.heap, sc, req, 0, req.lanes);
      continue;
    }
    const chunk = Math.max(1, Math.min(MAX_CHUNK, Math.ceil(req.lanes / (executor.threads * 8))));
    await executor.run(
      {
        kind: req.kind === 'copy' ? KIND_DEFRAG_COPY : KIND_DEFRAG_REWRITE,
        typeId: req.kind === 'copy' ? req.type.id : 0,
        from: 0,
        to: req.lanes,
        chunk,
        call: { method: '', args: req.kind === 'rewrite' ? [[...req.moved]] : [] },
        lists: null,
        operation: `parallelDefrag (${req.kind === 'copy' ? `copy ${req.type.name}` : req.restore === true ? 'restore' : 'rewrite'})`,
      },
      main,
    );
  }
}
