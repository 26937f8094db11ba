/**
 * linux-scalability's classes: the payload (8 × f64, the original's DummyClass) and the
 * allocating lanes (one per GPU thread of the original). In their own module because
 * worker threads import it (RuntimeOptions.modules); bench/scaling.ts and
 * bench/variants.ts run the same classes.
 */
import { array, f64, object, u32 } from '../../runtime/index.js';
import type { ThreadContext } from '../../runtime/thread.js';

/** URL of this module, for RuntimeOptions.modules. */
export const MODEL_URL = import.meta.url;

/** Handles held by allocFreeRaw (per thread: module state is per worker). */
let held = new Uint32Array(1024);

/** The payload: 8 × f64 = 64 bytes (the smallest class: it sets the block size, 32 slots per block). */
export class Blob8 extends object({ a: f64, b: f64, c: f64, d: f64, e: f64, f: f64, g: f64, h: f64 }) {}

/**
 * One allocating lane: `rounds` times, creates k Blob8 and destroys them again (the
 * linux-scalability benchmark of the allocator papers, DynaSOAr Fig. 13a; each lane makes
 * rounds of k so that every k can do the same work per pass). `allocated` counts the
 * creates. Larger than Blob8 on purpose, so that Blob8 sets the block size.
 */
export class Allocator8 extends object({ allocated: u32, pad: array(f64, 8) }) {
  allocFree(k: number, rounds: number): void {
    const rt = this.runtime;
    // Handles, not views: the compiler keeps objects only in locals and fields (a JS array of views would not compile).
    const held = new Uint32Array(k);
    for (let r = 0; r < rounds; r++) {
      for (let i = 0; i < k; i++) held[i] = rt.create(Blob8).handle;
      for (let i = 0; i < k; i++) rt.destroy(rt.get(Blob8, held[i]!));
    }
    this.allocated += k * rounds;
  }

  /**
   * The same through the allocator alone (no views, no zeroing): separates the
   * allocator's own scaling from the cost of view objects and their garbage collection
   * (bench/scaling.ts, section linux-raw; not a phase of the app).
   */
  allocFreeRaw(k: number, rounds: number): void {
    const ctx = this.runtime as unknown as ThreadContext;
    const t = ctx.table.byClass(Blob8)!;
    if (held.length < k) held = new Uint32Array(k);
    for (let r = 0; r < rounds; r++) {
      for (let i = 0; i < k; i++) held[i] = ctx.allocator.allocate(t);
      for (let i = 0; i < k; i++) ctx.allocator.releaseHandle(held[i]!);
    }
    this.allocated += k * rounds;
  }
}

/** Every class of the app. */
export const CLASSES = [Blob8, Allocator8] as const;
