/**
 * The executor interface: what the runtime needs of whatever runs a pass on several
 * threads, and the pass it hands over. runtime/ owns this interface; workers/pool.ts
 * implements it (the worker-thread pool), and the package's entry (index.ts at the root)
 * gives createRuntime that implementation. So dependencies point one way: workers/
 * imports runtime/, never the reverse.
 *
 * Also here, because they are rules of the runtime's API and not of one executor: how do-all
 * arguments are passed (by value; smmo objects as their handle), their size limit, and the
 * mark of an smmo worker thread.
 */
import { deserialize, serialize } from 'node:v8';
import type { ResourceLimits } from 'node:worker_threads';
import type { Heap } from './heap.js';
import type { TypeTable } from './layout.js';
import type { ThreadContext } from './thread.js';
import type { WasmOptions } from './wasm-options.js';

// ------------------------------------------------------------------ a pass

/**
 * What a pass does: run a method over blocks (DO), create objects (NEW), end the sessions
 * (CLOSE), or set the iteration words of block-list entries from their allocation words
 * (COPY: the snapshot's second half, thread.ts copyIteration, before a large do-all).
 */
export const KIND_DO = 1;
export const KIND_NEW = 2;
export const KIND_CLOSE = 3;
export const KIND_COPY = 4;
/**
 * Defragmentation's lanes (runtime/defrag-lanes.ts, driven by runtime/defrag-parallel.ts):
 * indices are copy records of one pass of the descriptor's type (DEFRAG_COPY), or blocks to
 * rewrite (DEFRAG_REWRITE; the call's args are [moved type ids]). Their work lists are in
 * the defrag scratch buffer (ExecutorConfig.defragScratch).
 */
export const KIND_DEFRAG_COPY = 5;
export const KIND_DEFRAG_REWRITE = 6;
/**
 * A DO pass whose claims first set the iteration words of their own blocks (the snapshot's
 * copy fused into the pass, runtime/doall.ts F1–F2): one fork-join instead of two, for
 * passes that cannot change an allocation word or read another block's iteration word.
 */
export const KIND_DO_COPY = 7;

/** The method (or parallelNew init method; '' for none) and the arguments of a pass. */
export interface PassCall {
  method: string;
  args: readonly unknown[];
}

/** One pass: what runs, over which index range, as what operation (for messages). */
export interface PassSpec {
  kind: number;
  /** The pass's concrete type id. */
  typeId: number;
  /** Index range handed out: block-list indices (DO, COPY) or object indices (NEW). */
  from: number;
  to: number;
  /** Indices per claim. */
  chunk: number;
  call: PassCall;
  /** The do-all's block lists (DO passes: per type id, [first index, count] in the block list). */
  lists: Int32Array | null;
  /** e.g. "parallelDo(Body, 'update')", for error messages. */
  operation: string;
}

/**
 * Runs passes on several threads, the calling thread taking part as thread 0 (its
 * context is `main`). run() resolves when every participant has finished the pass, or
 * rejects with MethodError, WorkerCrashedError or PassTimeoutError (errors.ts).
 */
export interface PassExecutor {
  /** Threads that take part in a pass, the calling thread included. */
  readonly threads: number;
  /** Bring every thread up (createRuntime awaits this; otherwise the first pass does). */
  start(): Promise<void>;
  run(spec: PassSpec, main: ThreadContext): Promise<void>;
  /** Blocks (DO) and objects (NEW) each thread has processed so far; [0] is the calling thread. */
  work(): number[];
  /** End every thread. Idempotent. */
  close(): Promise<void>;
}

/** What an executor is made with (plain data a worker thread can receive). */
export interface ExecutorConfig {
  /** Threads taking part in a pass, the calling thread included (workers: threads - 1). */
  threads: number;
  /** URLs of the modules that export the runtime's classes. */
  modules: readonly string[];
  checked: boolean;
  seed: number;
  backend: string;
  wasm: WasmOptions;
  /** A worker's session ends after this long without a pass. */
  idleMs: number;
  /** Busy-wait this long before sleeping (worker: for the next pass; main: at the barrier). */
  spinMicros: number;
  /** Compile do-all methods (runtime/compiler/). */
  compile: boolean;
  /** Limits of each worker's JS heap (worker_threads resourceLimits). */
  resourceLimits?: ResourceLimits;
  /** Longest time a worker may take to start (import modules, attach). */
  startTimeoutMs: number;
  /** Longest time a pass may take (ms); undefined: no limit. */
  passTimeout?: number;
  /** Defragmentation's scratch buffer (runtime/defrag-lanes.ts), shared with every thread; absent: no parallel defrag. */
  defragScratch?: SharedArrayBuffer;
}

/** Makes the executor of a runtime with threads > 1. */
export type ExecutorFactory = (heap: Heap, table: TypeTable, config: ExecutorConfig) => PassExecutor;

/** Set on globalThis in smmo's worker threads (a runtime must not be created while they import the class modules). */
export const IN_SMMO_WORKER = Symbol.for('smmo.workerThread');

// ------------------------------------------------------------------ arguments by value

/** Most bytes [method, args] of a pass may take serialized (workers read them from shared memory). */
export const MAX_ARG_BYTES = 16 << 10;

/** How an smmo object crosses threads inside the arguments: as its handle. */
const HANDLE_TAG = '__smmoHandle';

/**
 * Serialize [method, args]. Arguments are passed by value (structured clone); smmo objects
 * are passed as their handle and arrive as a view of the same object. Throws a TypeError
 * (DataCloneError) for functions and other uncloneable values.
 */
export function encodeArgs(method: string, args: readonly unknown[]): Buffer {
  const plain = args.map((a) => (isSmmoView(a) ? { [HANDLE_TAG]: (a as { __h: number }).__h } : a));
  return serialize([method, plain]);
}

/** Inverse of encodeArgs; `view` turns a handle back into an object of this thread. */
export function decodeArgs(bytes: Uint8Array, view: (handle: number) => unknown): { method: string; args: unknown[] } {
  const [method, plain] = deserialize(bytes) as [string, unknown[]];
  const args = plain.map((a) =>
    a !== null && typeof a === 'object' && HANDLE_TAG in a && Object.keys(a).length === 1
      ? view((a as Record<string, number>)[HANDLE_TAG]!)
      : a,
  );
  return { method, args };
}

function isSmmoView(a: unknown): boolean {
  return (
    a !== null &&
    typeof a === 'object' &&
    typeof (a as { __h?: unknown }).__h === 'number' &&
    typeof (a as { __o?: unknown }).__o === 'number'
  );
}

/**
 * The serialized size of [method, args] when it is more than MAX_ARG_BYTES, else null.
 * The runtime checks it for every do-all and parallelNew, on one thread as with workers,
 * so a program that works on one thread works on several. A few numbers and short strings
 * cannot exceed the limit and are not serialized (no cost on the hot path); anything else
 * is (and throws a DataCloneError for what structured clone refuses).
 */
export function oversizeArgs(method: string, args: readonly unknown[]): number | null {
  let text = method.length;
  let plain = args.length <= 256;
  for (let i = 0; i < args.length && plain; i++) {
    const a = args[i];
    if (typeof a === 'string') text += a.length;
    else if (typeof a === 'object' && a !== null && !isSmmoView(a)) plain = false;
  }
  // ≤ 256 primitives of ≤ 9 bytes and ≤ 4096 characters (≤ 3 bytes each) fit 16 KiB.
  if (plain && text <= 4096) return null;
  const n = encodeArgs(method, args).length;
  return n > MAX_ARG_BYTES ? n : null;
}

/** The first argument that cannot be passed by value to another thread, as text; null if all can. */
export function unclonableArg(args: readonly unknown[]): string | null {
  for (let i = 0; i < args.length; i++) {
    const t = typeof args[i];
    if (t === 'function' || t === 'symbol') return `argument ${i} is a ${t}`;
  }
  return null;
}
