/**
 * smmo: a CPU runtime for Single-Method Multiple-Objects programs (DynaSOAr for Node.js).
 *
 * The package's entry. It is the one module that joins the runtime (runtime/, which knows
 * nothing of threads beyond the PassExecutor interface) with the worker-thread pool
 * (workers/pool.ts, which implements it): dependencies point one way, runtime/ ← workers/ ←
 * this file.
 */
import type { ExecutorFactory } from './runtime/executor.js';
import { createRuntimeWith, type Runtime } from './runtime/runtime.js';
import type { RuntimeOptions } from './runtime/options.js';
import { WorkerPool } from './workers/pool.js';

export * from './runtime/index.js';

const workerPool: ExecutorFactory = (heap, table, config) => new WorkerPool(heap, table, config);

/**
 * Create a runtime: its heap, its classes, and with `threads > 1` its worker threads
 * (this resolves once they have started).
 *
 *   const rt = await createRuntime({ classes: [Body], heap: '64MB' });
 *   await rt.parallelNew(Body, 1000, (b, i) => { b.posX = i; });
 *   await rt.parallelDo(Body, 'update', 0.02);
 *   await rt.close();
 */
export function createRuntime(options: RuntimeOptions): Promise<Runtime> {
  return createRuntimeWith(options, workerPool);
}
