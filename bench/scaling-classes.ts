/**
 * Classes of bench/scaling.ts, in their own module because worker threads import it
 * (options.modules): importing the benchmark script itself would run it again.
 */
import { array, f64, object, u32 } from '../runtime/index.js';
import type { ThreadContext } from '../runtime/thread.js';

/** Handles held by allocFreeRaw (per thread: module state is per worker). */
let held = new Uint32Array(1024);

export const SCALING_CLASSES_URL = import.meta.url;

/** The linux-scalability payload: 8 × f64 = 64 bytes (the smallest class: 32 slots per block). */
export class Blob8 extends object({ a: f64, b: f64, c: f64, d: f64, e: f64, f: f64, g: f64, h: f64 }) {}

/**
 * One allocating lane: `rounds` times, allocates k Blob8 and frees them again (the
 * linux-scalability benchmark of the allocator papers, DynaSOAr Fig. 13a; like the
 * original, a fixed number of allocations split into rounds of k, so that every k does
 * the same work per pass). Larger than Blob8 on purpose, so that Blob8 sets the block size.
 */
export class Allocator8 extends object({ allocated: u32, pad: array(f64, 8) }) {
  allocFree(k: number, rounds: number): void {
    const rt = this.runtime;
    const held: Blob8[] = new Array<Blob8>(k);
    for (let r = 0; r < rounds; r++) {
      for (let i = 0; i < k; i++) held[i] = rt.create(Blob8);
      for (let i = 0; i < k; i++) rt.destroy(held[i]!);
    }
    this.allocated += k * rounds;
  }

  /**
   * The same through the allocator alone (no views, no zeroing): separates the
   * allocator's own scaling from the cost of view objects and their garbage collection.
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

/** The cheapest possible do-all: measures the fork-join itself. */
export class Empty extends object({ x: u32 }) {
  nop(): void {}
}
