/**
 * Worker-thread entry (loaded by piscina in every worker of a pool).
 *
 * Once per thread: attach to the heap memory (Heap.attach), import the application's
 * class modules, find the runtime's classes in them by name, check that they give the
 * same layout as on the main thread (layoutFingerprint), build this thread's
 * ThreadContext. Then each piscina task is a *session* (protocol.ts): serve passes for
 * thread slot k until idle for idleMs or told to close.
 *
 * A session's loop is synchronous: between passes the thread sleeps in Atomics.wait on
 * C_EPOCH (after a short spin, since passes often come back to back), so the wake-up
 * costs one futex wake, not an event-loop turn.
 */
import { threadId, workerData } from 'node:worker_threads';
import { Heap } from '../runtime/heap.js';
import { planTypes } from '../runtime/layout.js';
import { SmmoObject, type SmmoClass } from '../runtime/schema.js';
import { ThreadContext } from '../runtime/thread.js';
import { configureBackend } from '../runtime/kernels.js';
import { UsageError } from '../runtime/errors.js';
import { runShare } from './pass.js';
import { DefragScratch } from '../runtime/defrag-lanes.js';
import { decodeArgs, IN_SMMO_WORKER, KIND_CLOSE, type PassCall } from '../runtime/executor.js';
import {
  BUSY,
  C_ARRIVED,
  C_EPOCH,
  D_ARGS_BYTES,
  D_ARGS_VERSION,
  D_KIND,
  PARKED,
  SERVING,
  S_DONE,
  S_STATE,
  S_TID,
  S_WASM,
  S_ALLOC,
  WAIT_SLICE_MS,
  layoutFingerprint,
  planControl,
  slotWord,
  threadSeed,
  type ControlPlan,
  type SessionTask,
  type WorkerConfig,
} from './protocol.js';

interface Attached {
  ctx: ThreadContext;
  ctl: Int32Array;
  plan: ControlPlan;
  argsVersion: number;
  call: PassCall;
  /** This thread's view of the defrag scratch buffer (null: none given). */
  scratch: DefragScratch | null;
}

let attached: Promise<Attached> | null = null;
(globalThis as Record<symbol, unknown>)[IN_SMMO_WORKER] = true;

/** Import the modules and collect every class they export, directly or in arrays / an App's `classes`. */
async function findClasses(cfg: WorkerConfig): Promise<SmmoClass[]> {
  const found = new Map<string, SmmoClass>();
  const add = (v: unknown, from: string): void => {
    if (typeof v !== 'function' || !(v.prototype instanceof SmmoObject)) return;
    // Walk up the chain too: an abstract base need not be exported itself.
    for (let c = v as SmmoClass | null; c !== null && c !== (SmmoObject as unknown); c = Object.getPrototypeOf(c) as SmmoClass | null) {
      if (!cfg.classNames.includes(c.name)) continue;
      const prev = found.get(c.name);
      if (prev !== undefined && prev !== c) {
        throw new UsageError(
          `worker: two different classes named '${c.name}' are exported by the modules (${from}); class names must be unique`,
        );
      }
      found.set(c.name, c);
    }
  };
  for (const url of cfg.modules) {
    let mod: Record<string, unknown>;
    try {
      mod = (await import(url)) as Record<string, unknown>;
    } catch (e) {
      throw new UsageError(`worker: could not import class module ${url}: ${(e as Error).message}`, { cause: e });
    }
    for (const v of Object.values(mod)) {
      add(v, url);
      if (Array.isArray(v)) v.forEach((x) => add(x, url));
      else if (v !== null && typeof v === 'object' && Array.isArray((v as { classes?: unknown }).classes)) {
        (v as { classes: unknown[] }).classes.forEach((x) => add(x, url));
      }
    }
  }
  const missing = cfg.classNames.filter((n) => !found.has(n));
  if (missing.length > 0) {
    throw new UsageError(
      `worker: class(es) ${missing.join(', ')} not found in options.modules [${cfg.modules.join(', ')}]; ` +
        `list every module that exports the runtime's classes (e.g. modules: [import.meta.url])`,
    );
  }
  return cfg.classNames.map((n) => found.get(n)!);
}

async function attach(): Promise<Attached> {
  const cfg = workerData as WorkerConfig;
  // Checked mode has the generation arrays; BitmapAlloc its own block shape.
  const table = planTypes(await findClasses(cfg), {
    checked: cfg.checked,
    bitmapAlloc: cfg.bitmapAlloc,
    blockSize: cfg.blockSize,
  });
  if (layoutFingerprint(table) !== cfg.fingerprint) {
    throw new UsageError(
      'worker: the classes imported from options.modules give a different heap layout than on the main thread ' +
        '(a class was changed at run time, or the modules export other classes of the same names)',
    );
  }
  const heap = Heap.attach(cfg.memory, table, cfg.heapBytes, cfg.wasm);
  const ctx = new ThreadContext(heap, table, cfg.checked, cfg.seed, cfg.compile);
  ctx.allocator.setOwnFirstBlock(heap.flags.ownFirstBlock); // allocator K5 (an option): workers exist only with threads > 1
  configureBackend(ctx, cfg.backend);
  const plan = planControl(cfg.threads, table.types.length);
  const scratch = cfg.defragScratch === undefined ? null : new DefragScratch(heap.numBlocks, cfg.defragScratch);
  return { ctx, ctl: new Int32Array(cfg.control), plan, argsVersion: -1, call: { method: '', args: [] }, scratch };
}

/** The piscina task: one session of thread `slot`. Resolves 'parked' (idle) or 'closed'. */
export default async function session(task: SessionTask): Promise<'parked' | 'closed'> {
  attached ??= attach();
  let a: Attached;
  try {
    a = await attached;
  } catch (e) {
    attached = null; // let a later session retry (and report) the same problem
    throw e;
  }
  const cfg = workerData as WorkerConfig;
  const { ctx, ctl, plan } = a;
  const k = task.slot;
  ctx.allocator.seed = threadSeed(cfg.seed, k);
  const state = slotWord(plan, k) + S_STATE;
  const doneWord = slotWord(plan, k) + S_DONE;
  // Who serves slot k: the pool terminates this thread by its id (pass timeout) and gives back its WASM slot and allocator state when it dies.
  Atomics.store(ctl, slotWord(plan, k) + S_TID, threadId);
  Atomics.store(ctl, slotWord(plan, k) + S_WASM, ctx.heap.wasm.slot + 1);
  Atomics.store(ctl, slotWord(plan, k) + S_ALLOC, ctx.allocator.state + 1);
  // (P2) read the epoch before announcing SERVING.
  let seen = Atomics.load(ctl, C_EPOCH);
  Atomics.store(ctl, state, SERVING);
  Atomics.notify(ctl, state);
  let idleSince = performance.now();
  let spin = cfg.spinMicros; // spin only right after a pass, not on every idle slice
  for (;;) {
    const e = Atomics.load(ctl, C_EPOCH);
    if (e === seen) {
      const changed = waitForEpoch(ctl, seen, spin);
      spin = 0;
      if (!changed) {
        // (P3) idle: park unless main enlisted us at the same moment.
        if (performance.now() - idleSince >= cfg.idleMs && Atomics.compareExchange(ctl, state, SERVING, PARKED) === SERVING) {
          Atomics.notify(ctl, state); // main may be waiting for this thread: it restarts the session at once
          return 'parked';
        }
      }
      continue;
    }
    seen = e;
    if (Atomics.load(ctl, state) !== BUSY) continue; // not enlisted in this pass
    const kind = ctl[D_KIND]!;
    if (kind === KIND_CLOSE) {
      // The thread is about to be terminated: release what the context holds in shared memory (its allocator state, its wasm thread slot).
      ctx.dispose();
      attached = null;
      Atomics.store(ctl, state, PARKED);
      arrive(ctl, doneWord, e);
      return 'closed';
    }
    const version = ctl[D_ARGS_VERSION]!;
    if (version !== a.argsVersion) {
      const n = ctl[D_ARGS_BYTES]!;
      const bytes = new Uint8Array(n);
      bytes.set(new Uint8Array(ctl.buffer, plan.argsOffset, n));
      a.call = decodeArgs(bytes, (h) => ctx.view(h));
      a.argsVersion = version;
    }
    runShare(ctx, ctl, plan, kind, a.call, k, a.scratch);
    Atomics.store(ctl, state, SERVING);
    arrive(ctl, doneWord, e);
    idleSince = performance.now();
    spin = cfg.spinMicros;
  }
}

function arrive(ctl: Int32Array, doneWord: number, epoch: number): void {
  Atomics.store(ctl, doneWord, epoch);
  Atomics.add(ctl, C_ARRIVED, 1);
  Atomics.notify(ctl, C_ARRIVED);
}

/**
 * Wait until C_EPOCH differs from `seen`: spin about `spinMicros` (passes often follow
 * each other within microseconds), then sleep one bounded slice. Returns whether it
 * changed.
 */
function waitForEpoch(ctl: Int32Array, seen: number, spinMicros: number): boolean {
  if (spinMicros > 0) {
    const until = performance.now() + spinMicros / 1000;
    do {
      for (let i = 0; i < 64; i++) if (Atomics.load(ctl, C_EPOCH) !== seen) return true;
    } while (performance.now() < until);
  }
  return Atomics.wait(ctl, C_EPOCH, seen, WAIT_SLICE_MS) !== 'timed-out';
}
