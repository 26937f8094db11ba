/**
 * Pass hooks and heap snapshots: what the divergence finder (`smmo run --check-every K`,
 * cli/check-every.ts) needs from a runtime to replay a window of iterations pass by pass.
 * The DynaSOAr paper ("DynaSOAr: A Parallel Memory Allocator for Object-oriented
 * Programming on GPUs with Efficient Memory Access", §2.1, the SMMO model) defines a
 * program as a sequence of parallel do-all passes; a pass boundary is where every object
 * has finished the method and the heap is a consistent state, so it is where two runs of
 * the same program can be compared.
 *
 * observePasses(rt, hook) installs the hook; heapSnapshot / restoreHeap save and restore
 * the whole simulation state in place.
 *
 * Invariants:
 *  (P1) Zero cost otherwise: the hook lives in own properties of one Runtime instance
 *       (wrappers of its parallelDo and parallelNew); Runtime.prototype is untouched, and
 *       removing the hook deletes the wrappers, so a runtime never observed runs exactly
 *       the code it runs without this module. The instance keeps its identity, so an
 *       app's per-runtime state (WeakMaps keyed by the runtime, e.g. a grid's size) is
 *       found as before.
 *  (P2) A pass, for the hook, is one awaited call of rt.parallelDo(cls, method, …) (all
 *       concrete classes of `cls`: the runtime's passes per concrete class, run in one
 *       call) or rt.parallelNew(cls, …). The hook runs after the call has completed
 *       (backend 'webgpu': submitted; the hook syncs if it reads the heap) and before the
 *       caller's `await` returns, so the caller's next pass starts only when the hook's
 *       promise has settled; a hook that throws makes the caller's call throw. Host code
 *       between passes (deviceDo, create, synchronous doAll) belongs to the next pass, or
 *       to the end of the step; a pass that throws does not reach the hook.
 *  (P3) The whole simulation state of a runtime is its heap above RESERVED_BYTES (layout.ts:
 *       the header, the block bitmaps, the allocator states with their kept blocks, hints
 *       and seeds, the blocks); the region below it (the WebAssembly module's data, the
 *       thread slots' stacks and scratch, the slot claims) is per-instance and is neither
 *       saved nor restored. An app's own host-side state (App.saveState) must be constant
 *       across the window replayed (grid sizes, cell tables of cells never deleted: true of
 *       every registered app). restoreHeap is only called between passes, with no pass in
 *       flight; backend 'webgpu' brings the GPU's data to the host first (rt.sync) and
 *       marks the host newer afterwards, so the next GPU pass uploads the restored heap.
 */
import { UsageError } from './errors.js';
import { RESERVED_BYTES } from './layout.js';
import type { Runtime } from './runtime.js';
import type { SmmoClass } from './schema.js';

/** A pass as the hook sees it: 'Body.update' (the class given to the call and the method; parallelNew: 'Cell.new'). */
export interface PassInfo {
  label: string;
  kind: 'parallelDo' | 'parallelNew';
}

export type PassHook = (pass: PassInfo) => void | Promise<void>;

const HOOKED = Symbol('smmo.passHook');

/**
 * Call `hook` after every parallelDo and parallelNew of `rt` (P2) until the returned
 * function is called. One hook per runtime at a time (a second is a UsageError).
 */
export function observePasses(rt: Runtime, hook: PassHook): () => void {
  const self = rt as Runtime & { [HOOKED]?: true };
  if (self[HOOKED]) throw new UsageError('observePasses: this runtime is observed already; remove the first hook before adding another');
  const proto = Object.getPrototypeOf(rt) as Runtime;
  const parallelDo = proto.parallelDo;
  const parallelNew = proto.parallelNew;
  Object.defineProperty(rt, HOOKED, { value: true, configurable: true });
  Object.defineProperty(rt, 'parallelDo', {
    configurable: true,
    writable: true,
    value: async (cls: SmmoClass, method: string, ...args: unknown[]): Promise<void> => {
      await (parallelDo as (this: Runtime, c: SmmoClass, m: string, ...a: unknown[]) => Promise<void>).call(rt, cls, method, ...args);
      await hook({ label: `${cls.name}.${method}`, kind: 'parallelDo' });
    },
  });
  Object.defineProperty(rt, 'parallelNew', {
    configurable: true,
    writable: true,
    value: async (cls: SmmoClass, ...rest: unknown[]): Promise<void> => {
      await (parallelNew as (this: Runtime, c: SmmoClass, ...a: unknown[]) => Promise<void>).call(rt, cls, ...rest);
      await hook({ label: `${cls.name}.new`, kind: 'parallelNew' });
    },
  });
  return () => {
    delete (rt as unknown as Record<string, unknown>)['parallelDo'];
    delete (rt as unknown as Record<string, unknown>)['parallelNew'];
    delete (self as unknown as Record<symbol, unknown>)[HOOKED];
  };
}

/** A copy of the heap of `rt` (P3); backend 'webgpu': after bringing the GPU's data to the host. */
export async function heapSnapshot(rt: Runtime): Promise<Uint8Array> {
  await rt.sync();
  return new Uint8Array(rt.heap.buffer, RESERVED_BYTES).slice();
}

/** Put `snapshot` (heapSnapshot of the same runtime) back into the heap of `rt` (P3). */
export async function restoreHeap(rt: Runtime, snapshot: Uint8Array): Promise<void> {
  const target = new Uint8Array(rt.heap.buffer, RESERVED_BYTES);
  if (target.length !== snapshot.length)
    throw new UsageError(`restoreHeap: the snapshot holds ${snapshot.length} heap bytes, the runtime ${target.length}: not its snapshot`);
  await rt.sync(); // backend 'webgpu': the host is current, and marked newer (the next GPU pass uploads)
  target.set(snapshot);
  rt.heap.blockSetChanged(); // the bitmaps and R are the snapshot's: the next do-all walks them (thread.ts L1)
}
