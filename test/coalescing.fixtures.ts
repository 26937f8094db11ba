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

/** Create a Child of `lane` and record what the lane saw: the child's handle, the warp cache of Child, the lanes left. */
function createObserved(lane: Spawner): Child {
  const ctx = lane.runtime as unknown as ThreadContext;
  const st = ctx.allocator.state;
  const i32 = ctx.heap.i32;
  const c = lane.runtime.create(Child, { parent: lane.handle });
  seen.push({
    lane: lane.handle,
    child: c.handle,
    cached: popc(i32[st + S_TYPES + ctx.table.byClass(Child)!.id * TS_WORDS + TS_CACHE_MASK]!),
    lanesLeft: i32[st + S_LANES_LEFT]!,
  });
  return c;
}

/** Spawners: `n` = how many Children to create in `spawn` (99: throw after the first). */
export class Spawner extends object({ n: u32 }) {
  spawn(): void {
    const n = this.n === 99 ? 1 : this.n;
    for (let k = 0; k < n; k++) createObserved(this);
    if (this.n === 99) throw new Error(`spawner ${this.handle} fails on purpose`);
  }

  /** `n` times: create a Child and delete it again (a lane that deletes as it goes). */
  churn(): void {
    for (let k = 0; k < this.n; k++) this.runtime.destroy(createObserved(this));
  }

  /** The same creates without observations (for several threads). */
  spawnQuietly(): void {
    for (let k = 0; k < this.n; k++) this.runtime.create(Child, { parent: this.handle });
  }
}
