/**
 * The worker side of test/alloc-race.test.ts: one thread of a stress run against the
 * allocator core over a heap shared with other threads. `churn` allocates one object and
 * deletes it again, at least `iterations` times and on until the reclaiming thread has
 * retired a block (at most 50 × `iterations`): with keepBlocks 0 every deletion empties the block,
 * which is retired, so every allocation takes a block from `free` and initialises it.
 * `reclaim` runs the core's reclaim_empty (K3: retire every empty used block of the heap,
 * whoever uses it) until every churning thread is done. Errors are reported with the
 * iteration, never thrown past the loop.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { Allocator } from '../runtime/allocator.js';
import { Heap } from '../runtime/heap.js';
import { planTypes } from '../runtime/layout.js';
import { A, B } from './helpers/allocators.js';

/**
 * Control words: [0] churning threads still running; [1] 1 once the reclaiming thread runs
 * (churning threads wait for it, at most WAIT_MS, so that the loops overlap); [2] blocks the
 * reclaiming thread retired.
 */
export interface RaceData {
  memory: WebAssembly.Memory;
  heapBytes: number;
  role: 'churn' | 'reclaim';
  seed: number;
  iterations: number;
  control: Int32Array;
}

export interface RaceReport {
  role: string;
  rounds: number;
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
    return { role: d.role, rounds, error: null };
  } catch (e) {
    return { role: d.role, rounds, error: `${(e as Error).name}: ${(e as Error).message}` };
  } finally {
    a.dispose();
    heap.dispose();
  }
}

if (parentPort !== null && workerData !== null && (workerData as { raceFixture?: boolean }).raceFixture === true) {
  parentPort.postMessage(run(workerData as RaceData));
}
