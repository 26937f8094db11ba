/**
 * Pass timeouts on the calling thread (RuntimeOptions.passTimeout).
 *
 * A thread cannot interrupt its own synchronous JavaScript: a method stuck in
 * `while (true) {}` never returns to anything that could check a clock. node:vm can:
 * `script.runInThisContext({ timeout })` starts a watchdog thread that terminates the
 * isolate's execution when the time is up (V8 TerminateExecution), whatever function is
 * running — also one defined outside the script, also WebAssembly and Atomics.wait — and
 * turns that into an ordinary exception at the runInThisContext call
 * (ERR_SCRIPT_EXECUTION_TIMEOUT). Worker threads are not run this way: the calling thread
 * terminates a stuck worker (workers/pool.ts).
 *
 * Invariants:
 *  (T1) Only code run by `timed` can be interrupted; without a timeout `timed` calls `fn`
 *       directly (no cost).
 *  (T2) An interrupted `fn` ran none of its own `finally` blocks and catch handlers
 *       between the interruption and `timed`: callers restore their state after `timed`
 *       (runtime.ts, workers/pool.ts) and validate the heap, which an allocator operation
 *       cut in half may have left inconsistent.
 *  (T3) Cost: one watchdog thread per call (measured on the 2-core dev VM: an empty pass
 *       over 32 objects 7 µs without, 106–124 µs with a timeout; up to 0.6 ms per call under
 *       heavy load; README "Pass timeouts"): passes, not objects, are timed.
 */
import { Script } from 'node:vm';

const KEY = '__smmoTimedCall';
const script = new Script(`globalThis.${KEY}()`, { filename: 'smmo-pass-timeout' });

/** What `timed` throws when `fn` ran out of time (the caller turns it into a PassTimeoutError). */
export class TimedOut extends Error {
  constructor(readonly ms: number) {
    super(`timed out after ${ms} ms`);
  }
}

/** Run `fn`, interrupted after `ms` ms (T1–T3); throws TimedOut then. `ms` undefined: run it plainly. */
export function timed<T>(fn: () => T, ms: number | undefined): T {
  if (ms === undefined) return fn();
  const g = globalThis as unknown as Record<string, unknown>;
  const outer = g[KEY]; // timed() may nest (a pass started from within a timed call)
  g[KEY] = fn;
  try {
    return script.runInThisContext({ timeout: Math.max(1, Math.ceil(ms)) }) as T;
  } catch (e) {
    if ((e as { code?: string })?.code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') throw new TimedOut(ms);
    throw e;
  } finally {
    g[KEY] = outer;
  }
}
