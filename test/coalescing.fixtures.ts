/**
 * Classes of test/coalescing.test.ts, in their own module because worker threads import
 * it (options.modules). Both classes have one u32 field: 32 slots per block, so a block of
 * Spawners is a warp of up to 32 lanes and a block of Children has 32 slots.
 */
import { object, u32 } from '../runtime/index.js';
import type { ThreadContext } from '../runtime/thread.js';
import { S_LANES_LEFT, S_TYPES, TS_CACHE_MASK, TS_WORDS } from '../runtime/layout.js';
import { popc } from '../runtime/bits.js';

export const COALESCING_FIXTURES = import.meta.url;

export class Child extends object({ parent: u32 }) {}

/** What a lane saw after each of its creates: its own handle, the child's, the warp cache of Child, the lanes left. */
export interface Seen {
  lane: number;
  child: number;
  cached: number;
  lanesLeft: number;
}

/** Observations of the running test (calling thread only; each test resets it). */
export const seen: Seen[] = [];

/** Spawners: `n` = how many Children to create in `spawn` (99: throw after the first). */
export class Spawner extends object({ n: u32 }) {
  spawn(): void {
    const ctx = this.runtime as unknown as ThreadContext;
    const st = ctx.allocator.state;
    const childId = ctx.table.byClass(Child)!.id;
    const i32 = ctx.heap.i32;
    const n = this.n === 99 ? 1 : this.n;
    for (let k = 0; k < n; k++) {
      const c = this.runtime.create(Child, { parent: this.handle });
      seen.push({
        lane: this.handle,
        child: c.handle,
        cached: popc(i32[st + S_TYPES + childId * TS_WORDS + TS_CACHE_MASK]!),
        lanesLeft: i32[st + S_LANES_LEFT]!,
      });
    }
    if (this.n === 99) throw new Error(`spawner ${this.handle} fails on purpose`);
  }

  /** `n` times: create a Child and delete it again (a lane that deletes as it goes). */
  churn(): void {
    const ctx = this.runtime as unknown as ThreadContext;
    const st = ctx.allocator.state;
    const childId = ctx.table.byClass(Child)!.id;
    const i32 = ctx.heap.i32;
    for (let k = 0; k < this.n; k++) {
      const c = this.runtime.create(Child, { parent: this.handle });
      seen.push({
        lane: this.handle,
        child: c.handle,
        cached: popc(i32[st + S_TYPES + childId * TS_WORDS + TS_CACHE_MASK]!),
        lanesLeft: i32[st + S_LANES_LEFT]!,
      });
      this.runtime.destroy(c);
    }
  }

  /** The same creates without observations (for several threads). */
  spawnQuietly(): void {
    for (let k = 0; k < this.n; k++) this.runtime.create(Child, { parent: this.handle });
  }
}
