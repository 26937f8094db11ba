/**
 * Named operations on shared memory, and the bounds of every retry loop.
 *
 * The heap's control words (bitmaps, block headers) are changed only by the allocator
 * core (wasm/src/alloc/, sequentially consistent atomics in multi-threaded runtimes, the
 * order the paper's correctness argument, §5, assumes). Host code reads them between
 * passes through loadWord, an atomic load, so that the memory order of each read is
 * visible at the call site. Field data of objects is read and written with plain
 * typed-array accesses: a do-all gives each object to exactly one lane, so no two threads
 * touch the same field word within a pass, and the pass's barrier publishes the writes.
 *
 * Retry loops (all in the allocator core): the first `retryLimits.spinAttempts` attempts
 * spin; later ones sleep briefly in the host (env.smmo_pause, runtime/wasm.ts W3); after
 * `retryLimits.maxAttempts` the operation gives up and the binding throws ContentionError
 * naming it. No loop is unbounded. Each thread's allocator copies these limits into its
 * state before every call that may retry (runtime/allocator.ts), so a test that lowers
 * them affects the allocator of the thread it runs on.
 */

export type Words = Int32Array;

export function loadWord(m: Words, i: number): number {
  return Atomics.load(m, i);
}
export function storeWord(m: Words, i: number, v: number): void {
  Atomics.store(m, i, v);
}

/** Bounds of every retry loop. Tests lower them to make a stuck loop fail fast. */
export const retryLimits = {
  /** Attempts that spin without sleeping. */
  spinAttempts: 256,
  /** After this many attempts the operation gives up with ContentionError (~5 s). */
  maxAttempts: 6000,
};
