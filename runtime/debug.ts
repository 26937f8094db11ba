/**
 * Debug tiers (after mimalloc's MI_DEBUG): the environment variable SMMO_DEBUG, read once
 * per thread (workers inherit the environment).
 *
 *   0  (default) no extra checks;
 *   1  the allocator core checks each block's header against its bitmap bits at every
 *      block transition (wasm/src/alloc/core.rs "Block transitions"): a HeapCorruptionError
 *      names the block, the transition and what disagreed;
 *   2  also validateHeap() after every pass: every do-all, doAll and parallelNew
 *      (runtime/doall.ts).
 *
 * CI runs the whole test suite once with SMMO_DEBUG=2 (.ci/run).
 */
export const DEBUG_LEVEL = debugLevel(process.env['SMMO_DEBUG']);

/** SMMO_DEBUG's value as a tier 0 … 2 (anything else: 0). */
export function debugLevel(v: string | undefined): number {
  const n = v === undefined || v === '' ? 0 : Number(v);
  return Number.isInteger(n) && n >= 0 ? Math.min(n, 2) : 0;
}
