/**
 * The worker side of test/alloc-race.test.ts: one thread of a stress run against the
 * allocator core over a heap shared with other threads. `churn` allocates one object and
 * deletes it again, at least `iterations` times and on until the reclaiming thread has
 * retired a block (at most 50 × `iterations`): with keepBlocks 0 every deletion empties the block,
 * which is retired, so every allocation takes a block from `free` and initialises it.
 * `reclaim` runs the core's reclaim_empty (K3: retire every empty used block of the heap,
 * whoever uses it) until every churning thread is done. `mixed` makes `iterations` random
 * operations from its seed — warps whose lanes create 0–2 objects of A or B or, now and
 * then, a loop of up to 40 (core.rs C2, C6), creates outside a warp, deletions of objects it
 * holds, flushKept, reclaimEmpty — on a heap small enough to run out (HeapExhaustedError is
 * an expected answer there); a thread whose creates have not found the heap full by half-way
 * fills it once (creates of B until it is full, at most `fillBound`, then deletes what it
 * made), so that every thread meets a full heap whatever its random mix held; at
 * the end it deletes everything it holds. Errors are reported with the
 * iteration, never thrown past the loop.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { Allocator } from '../runtime/allocator.js';
import { Heap } from '../runtime/heap.js';
import { planTypes, type TypeLayout } from '../runtime/layout.js';
import { HeapExhaustedError } from '../runtime/errors.js';
import { A, B } from './helpers/allocators.js';

/**
 * Control words: [0] churning threads still running; [1] 1 once the reclaiming thread runs
 * (churning threads wait for it, at most WAIT_MS, so that the loops overlap); [2] blocks the
 * reclaiming thread retired.
 */
export interface RaceData {
  memory: WebAssembly.Memory;
  heapBytes: number;
  role: 'churn' | 'reclaim' | 'mixed';
  seed: number;
  iterations: number;
  control: Int32Array;
  /** Most objects a mixed thread holds at once, outside a fill. */
  hold?: number;
  /** Most creates of one fill (mixed): more objects than the heap holds. */
  fillBound?: number;
}

export interface RaceReport {
  role: string;
  seed: number;
  rounds: number;
  /** Creates that found the heap full (mixed). */
  exhausted: number;
  error: string | null;
}

/** How long a churning thread waits for the reclaiming one to start (not a speed requirement). */
const WAIT_MS = 30_000;

function run(d: RaceData): RaceReport {
  const table = planTypes([A, B]);
  const heap = Heap.attach(d.memory, table, d.heapBytes);
  const a = new Allocator(heap, d.seed);
  const tA = table.byClass(A)!;
  let rounds = 0;
  try {
    if (d.role === 'mixed') {
      const r = mixed(a, heap.i32, [tA, table.byClass(B)!], d.seed, d.iterations, d.hold ?? 300, d.fillBound ?? 0);
      return { role: d.role, seed: d.seed, rounds: r.rounds, exhausted: r.exhausted, error: r.error };
    }
    if (d.role === 'churn') {
      try {
        if (Atomics.wait(d.control, 1, 0, WAIT_MS) === 'timed-out')
          throw new Error(`the reclaiming thread did not start within ${WAIT_MS} ms`);
        // On until the loops have overlapped (a block retired by the reclaiming thread), so
        // that the race is run whatever the scheduler does; bounded all the same.
        const most = 50 * d.iterations;
        for (; rounds < most && (rounds < d.iterations || Atomics.load(d.control, 2) === 0); rounds++) a.releaseHandle(a.allocate(tA));
      } finally {
        Atomics.sub(d.control, 0, 1);
      }
    } else {
      Atomics.store(d.control, 1, 1);
      Atomics.notify(d.control, 1);
      while (Atomics.load(d.control, 0) > 0) {
        Atomics.add(d.control, 2, a.reclaimEmpty());
        rounds++;
      }
    }
    return { role: d.role, seed: d.seed, rounds, exhausted: 0, error: null };
  } catch (e) {
    return { role: d.role, seed: d.seed, rounds, exhausted: 0, error: `${(e as Error).name}: ${(e as Error).message}` };
  } finally {
    a.dispose();
    heap.dispose();
  }
}

function mixed(
  a: Allocator,
  i32: Int32Array,
  types: readonly TypeLayout[],
  seed: number,
  iterations: number,
  hold: number,
  fillBound: number,
): { rounds: number; exhausted: number; error: string | null } {
  let s = seed >>> 0 || 1;
  const rand = (): number => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
  const held: number[] = [];
  let exhausted = 0;
  const release = (): void => {
    const k = Math.floor(rand() * held.length);
    a.releaseHandle(held[k]!);
    held[k] = held[held.length - 1]!;
    held.pop();
  };
  // One create: true, or false when the heap is full (counted).
  const allocate = (t: TypeLayout): boolean => {
    try {
      held.push(a.allocate(t));
      return true;
    } catch (e) {
      if (!(e instanceof HeapExhaustedError)) throw e;
      exhausted++;
      return false;
    }
  };
  const create = (t: TypeLayout): void => {
    if (held.length >= hold) release();
    if (!allocate(t)) for (let k = 0; k < 20 && held.length > 0; k++) release();
  };
  // Creates of `t` until the heap is full (at most fillBound), then the deletion of what it made.
  const fill = (t: TypeLayout): void => {
    const before = held.length;
    for (let k = 0; k < fillBound && allocate(t); k++);
    while (held.length > before) a.releaseHandle(held.pop()!); // the fill's own objects: its blocks empty again
  };
  let rounds = 0;
  try {
    for (; rounds < iterations; rounds++) {
      if (rounds === iterations >>> 1 && exhausted === 0) fill(types[1]!);
      const r = rand();
      if (r < 0.35) {
        const lanes = 1 + Math.floor(rand() * 32);
        a.warpBegin(lanes);
        try {
          for (let left = lanes; left > 0; left--) {
            i32[a.laneWord] = left;
            const n = rand() < 0.1 ? Math.floor(rand() * 40) : Math.floor(rand() * 3);
            const t = types[rand() < 0.5 ? 0 : 1]!;
            for (let k = 0; k < n; k++) create(t);
          }
        } finally {
          a.warpEnd();
        }
      } else if (r < 0.55) create(types[rand() < 0.5 ? 0 : 1]!);
      else if (r < 0.9) {
        for (let k = Math.floor(rand() * 8); k > 0 && held.length > 0; k--) release();
      } else if (r < 0.97) a.flushKept();
      else a.reclaimEmpty();
    }
    while (held.length > 0) release();
    a.flushKept();
    return { rounds, exhausted, error: null };
  } catch (e) {
    return { rounds, exhausted, error: `${(e as Error).name}: ${(e as Error).message}` };
  }
}

if (parentPort !== null && workerData !== null && (workerData as { raceFixture?: boolean }).raceFixture === true) {
  parentPort.postMessage(run(workerData as RaceData));
}
