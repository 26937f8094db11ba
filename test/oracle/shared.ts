/**
 * TEST ORACLE — not part of the runtime. The shared-memory operations and the bounded
 * retry pause of the TypeScript allocator smmo used before the allocator core moved to
 * Rust (wasm/src/alloc/mem.rs, bits.rs); used by the oracle allocator and bitmap only.
 */
import { ContentionError } from '../../runtime/errors.js';
import { retryLimits, type Words } from '../../runtime/shared.js';

export type { Words };

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

const sleepCell = new Int32Array(new SharedArrayBuffer(4));

/** Called by a retry loop before its attempt `attempt` (1-based): spins, then sleeps up to 1 ms, then throws. */
export function retryPause(attempt: number, what: string): void {
  if (attempt < retryLimits.spinAttempts) return;
  if (attempt >= retryLimits.maxAttempts) {
    throw new ContentionError(`${what}: gave up after ${attempt} attempts.`);
  }
  Atomics.wait(sleepCell, 0, 0, Math.min(1, attempt / 1000));
}
