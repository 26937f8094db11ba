/**
 * Named operations on shared memory.
 *
 * Every access of the heap's control words (bitmaps, block headers) goes through these
 * functions, so the memory order of each is visible at the call site. JavaScript's
 * Atomics are sequentially consistent; that is the order the paper's correctness
 * argument (§5) assumes for CUDA atomics plus its one thread fence
 * (initialize_block). Field data of objects is read and written with plain typed-array
 * accesses: a do-all gives each object to exactly one lane, so no two threads touch
 * the same field word within a pass, and the pass's barrier publishes the writes.
 *
 * Retry loops: every loop that waits for another thread calls `retryPause(attempt)`.
 * The first attempts spin; later ones sleep briefly with Atomics.wait; after
 * `retryLimits.maxAttempts` the operation throws ContentionError. No loop is unbounded.
 */
import { ContentionError } from './errors.js';

export type Words = Int32Array;

export function loadWord(m: Words, i: number): number {
  return Atomics.load(m, i);
}
export function storeWord(m: Words, i: number, v: number): void {
  Atomics.store(m, i, v);
}
/** Atomic OR; returns the word before the change. */
export function orWord(m: Words, i: number, v: number): number {
  return Atomics.or(m, i, v);
}
/** Atomic AND; returns the word before the change. */
export function andWord(m: Words, i: number, v: number): number {
  return Atomics.and(m, i, v);
}
/** Atomic ADD; returns the word before the change. */
export function addWord(m: Words, i: number, v: number): number {
  return Atomics.add(m, i, v);
}
/** Strong compare-and-swap; returns the word found (equal to `expected` on success). */
export function casWord(m: Words, i: number, expected: number, replacement: number): number {
  return Atomics.compareExchange(m, i, expected, replacement);
}

/** Bounds of every retry loop. Tests lower them to make a stuck loop fail fast. */
export const retryLimits = {
  /** Attempts that spin without sleeping. */
  spinAttempts: 256,
  /** After this many attempts the operation gives up with ContentionError (~5 s). */
  maxAttempts: 6000,
};

const sleepCell = new Int32Array(new SharedArrayBuffer(4));

/**
 * Called by a retry loop before its attempt number `attempt` (1-based). Spins at
 * first, then sleeps up to 1 ms per attempt, and throws after the budget.
 */
export function retryPause(attempt: number, what: string): void {
  if (attempt < retryLimits.spinAttempts) return;
  if (attempt >= retryLimits.maxAttempts) {
    throw new ContentionError(
      `${what}: gave up after ${attempt} attempts. Another thread may have died in the ` +
        `middle of a heap operation, or the heap's control words were overwritten; ` +
        `run validateHeap() to see which invariant is broken.`,
    );
  }
  // The cell stays 0, so this always sleeps for the timeout: a bounded pause.
  Atomics.wait(sleepCell, 0, 0, Math.min(1, attempt / 1000));
}
