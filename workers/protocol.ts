/**
 * The pass protocol between the calling thread ("main", thread 0) and the worker
 * threads (1 … threads-1): one small shared control block, its word indices named here
 * and nowhere else (paper §3 "Parallel Object Enumeration").
 *
 * Why shared words and not one piscina task per pass: a fork-join through messages
 * costs tens of µs more than waking a thread parked on a futex, and the block
 * hand-out must be an atomic anyway. Piscina starts, replaces and ends the threads;
 * each thread runs one long piscina task, a *session*, that serves passes until it has
 * been idle for `idleMs` (then it returns, so an idle pool keeps no event loop alive).
 *
 * Control block (Int32Array over a SharedArrayBuffer; hot words on their own 64-byte
 * line so that the cursor does not share a line with the words workers sleep on):
 *
 *   line 0   C_EPOCH        pass number. Main writes the descriptor, then increments it
 *                           and notifies; workers Atomics.wait on it.
 *   line 1   C_CURSOR       next index of the pass to hand out (Atomics.add by `chunk`)
 *   line 2   C_ARRIVED      +1 by each participant at the end of a pass (main waits on it)
 *   line 3   C_STOP         1: stop claiming work (a method threw, or a worker died)
 *            C_ERROR_OWNER  0, or thread+1 of the first thread that recorded an error
 *            C_ERROR_BYTES  length of that error record in the error area
 *   line 4…  descriptor     D_* below; written by main only while no pass runs
 *   per thread k (line SLOT_LINE + k):
 *            S_STATE        PARKED / SERVING / BUSY (see below)
 *            S_DONE         the last epoch this thread finished
 *            S_WORK         indices it processed so far (statistics)
 *            S_TID, S_WASM  threadId and WASM kernel slot + 1 of the thread serving it
 *            S_ALLOC        allocator state + 1 of that thread
 *   then     args area      v8.serialize([method, args]) of the pass (D_ARGS_BYTES long)
 *   then     error area     v8.serialize(error record) of the first error
 *
 * Thread states (S_STATE) and who moves them:
 *
 *   PARKED ──main: submits a session task──▶ STARTING
 *   STARTING ──worker: session starts (reads C_EPOCH first, then stores)──▶ SERVING
 *   SERVING ──main: CAS, enlisting it in the next pass──▶ BUSY
 *   BUSY ──worker: pass done (store, then S_DONE, then C_ARRIVED)──▶ SERVING
 *   SERVING ──worker: idle for idleMs, CAS, notify──▶ PARKED (session returns)
 *   any ──main: the session task failed (thread died, or could not start)──▶ PARKED
 *
 * Main enlists each thread as soon as it is SERVING, before it bumps C_EPOCH, and keeps
 * enlisting while others start: an enlisted thread waits for the epoch without parking,
 * so a slow start of one thread cannot make another park and restart (a livelock seen
 * on the loaded dev VM with a short idleMs).
 *
 * Invariants:
 *  (P1) Main changes the descriptor, C_CURSOR, C_STOP and the error words only while no
 *       thread runs a pass; a BUSY thread reads them only after seeing C_EPOCH change, and
 *       Atomics are sequentially consistent, so every participant sees the descriptor
 *       of the pass it joins (plain reads of the descriptor are deliberate).
 *  (P2) A worker reads C_EPOCH *before* it stores SERVING, and main bumps C_EPOCH only
 *       *after* its CAS to BUSY succeeded: a thread enlisted in pass e never mistakes
 *       e for a pass it has already seen.
 *  (P3) The park CAS and the enlist CAS act on the same word, so a thread is either
 *       enlisted (and will serve the pass) or parked (and main knows it will not):
 *       main never waits for a thread that is not coming.
 *  (P4) Every index in [D_FROM, D_TO) is handed to exactly one participant (Atomics.add
 *       on C_CURSOR), so each object of the pass runs on exactly one lane.
 *  (P5) Every wait is bounded: workers wait on C_EPOCH in slices of WAIT_SLICE_MS,
 *       main waits on C_ARRIVED in slices and checks for dead threads between them.
 *       Main's asynchronous waits hold a referenced timer: a pending Atomics.waitAsync
 *       does not keep Node's event loop alive, and with every session parked nothing
 *       else would (the process would exit in the middle of an await).
 */
import { deserialize, serialize } from 'node:v8';
import { MAX_ARG_BYTES } from '../runtime/executor.js';
import type { BlockSizePolicy, TypeTable } from '../runtime/layout.js';
import type { WasmOptions } from '../runtime/wasm.js';
import {
  ContentionError,
  HeapCorruptionError,
  HeapExhaustedError,
  InvalidHandleError,
  MethodError,
  PassTimeoutError,
  SchemaError,
  SmmoError,
  UsageError,
  WorkerCrashedError,
} from '../runtime/errors.js';

// ------------------------------------------------------------------ words

const LINE = 16; // 64 bytes
export const C_EPOCH = 0;
export const C_CURSOR = LINE;
export const C_ARRIVED = 2 * LINE;
export const C_STOP = 3 * LINE;
export const C_ERROR_OWNER = 3 * LINE + 1;
export const C_ERROR_BYTES = 3 * LINE + 2;

const D = 4 * LINE;
/** What the pass does: KIND_DO, KIND_NEW or KIND_CLOSE. */
export const D_KIND = D;
/** Concrete type id of the pass. */
export const D_TYPE = D + 1;
/** Index range handed out: block-list indices (DO) or object indices (NEW). */
export const D_FROM = D + 2;
export const D_TO = D + 3;
/** Indices per claim. */
export const D_CHUNK = D + 4;
/** Length of the serialized [method, args] in the args area. */
export const D_ARGS_BYTES = D + 5;
/** Bumped whenever the args area changes (workers re-decode only then). */
export const D_ARGS_VERSION = D + 6;
/** Per type id: [first index, count] in the block list (the pass's PassLists). */
export const D_LISTS = D + LINE;

// The pass kinds (KIND_DO, KIND_NEW, KIND_CLOSE) are the runtime's (runtime/executor.ts).

export const S_STATE = 0;
export const S_DONE = 1;
/** Indices (blocks or objects) this thread has processed, summed over passes (written only by the thread). */
export const S_WORK = 2;
/** threadId of the worker thread serving this slot's session (written at session start; pool.ts terminates it by this id). */
export const S_TID = 3;
/** WASM kernel thread slot of that worker thread + 1 (0: none), given back by the pool when the thread dies. */
export const S_WASM = 4;
/** Allocator state of that worker thread + 1 (0: none), given back by the pool when the thread dies (Allocator.reclaimState). */
export const S_ALLOC = 5;
export const PARKED = 0;
export const SERVING = 1;
export const BUSY = 2;
export const STARTING = 3;

/** Bytes for [method, args] of one pass: arguments are meant to be a few numbers. */
export const ARGS_AREA_BYTES = MAX_ARG_BYTES;
export const ERROR_AREA_BYTES = 64 << 10;
/** Longest single wait of any thread; each wake-up re-checks for closing and dead threads. */
export const WAIT_SLICE_MS = 50;

/** Where everything is in a control block for `threads` threads and `types` type ids. */
export interface ControlPlan {
  readonly threads: number;
  readonly slotWord: number;
  readonly argsOffset: number;
  readonly errorOffset: number;
  readonly bytes: number;
}

export function planControl(threads: number, types: number): ControlPlan {
  const slotWord = Math.ceil((D_LISTS + 2 * types) / LINE) * LINE;
  const argsOffset = (slotWord + threads * LINE) * 4;
  const errorOffset = argsOffset + ARGS_AREA_BYTES;
  return { threads, slotWord, argsOffset, errorOffset, bytes: errorOffset + ERROR_AREA_BYTES };
}

/** Word index of thread k's state word. */
export function slotWord(plan: ControlPlan, k: number): number {
  return plan.slotWord + k * LINE;
}

/** Node 20 has Atomics.waitAsync; TypeScript's ES2022 lib does not declare it. */
type WaitAsync = (
  a: Int32Array,
  index: number,
  value: number,
  timeoutMs: number,
) => { async: false; value: 'not-equal' | 'timed-out' } | { async: true; value: Promise<'ok' | 'timed-out'> };
const waitAsync = (Atomics as unknown as { waitAsync: WaitAsync }).waitAsync;

/**
 * Wait (without blocking the event loop) until ctl[index] may differ from `value`, at
 * most `timeoutMs`. Callers loop and re-check their condition (P5).
 */
export async function waitSlice(ctl: Int32Array, index: number, value: number, timeoutMs: number): Promise<void> {
  const r = waitAsync(ctl, index, value, timeoutMs);
  if (!r.async) return;
  // (P5) the timer keeps the event loop alive for as long as the wait may last.
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([r.value, new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs + 1)))]);
  clearTimeout(timer);
}

// ------------------------------------------------------------------ what a worker is told at start

/** workerData of every worker of a pool (structured-cloned once per thread). */
export interface WorkerConfig {
  /** The heap (a shared WebAssembly.Memory). */
  memory: WebAssembly.Memory;
  heapBytes: number;
  control: SharedArrayBuffer;
  threads: number;
  /** Module URLs that export the runtime's classes. */
  modules: string[];
  /** Class names in the runtime's table order. */
  classNames: string[];
  /** layoutFingerprint() of the main thread's table: the worker must compute the same. */
  fingerprint: string;
  checked: boolean;
  seed: number;
  /** The runtime's backend and wasm options: each worker configures its context the same way. */
  backend: string;
  wasm: WasmOptions;
  idleMs: number;
  spinMicros: number;
  /** RuntimeOptions.allocator.bitmapAlloc: the class table is laid out for BitmapAlloc (the rest of the allocator's settings are in the heap header). */
  bitmapAlloc: boolean;
  /** RuntimeOptions.blockSize: which class the blocks are sized for. */
  blockSize: BlockSizePolicy;
  /** RuntimeOptions.compile. */
  compile: boolean;
  /** Defragmentation's scratch buffer (runtime/defrag-lanes.ts): the lanes' work lists and forwarding table. */
  defragScratch?: SharedArrayBuffer;
}

/** What a session task receives. */
export interface SessionTask {
  slot: number;
}

/**
 * A string that is equal on two threads iff their class tables give every object the
 * same bytes: names, slots, field names, kinds and offsets, the generation array of
 * checked mode (genOffset), block size.
 */
export function layoutFingerprint(table: TypeTable): string {
  return JSON.stringify({
    blockBytes: table.blockBytes,
    bitmapAlloc: table.bitmapAlloc,
    types: table.types.map((t) => [
      t.name,
      t.abstract,
      t.slots,
      t.genOffset,
      t.parent?.name ?? null,
      t.fields.map((f) => [f.name, f.kind, f.length, f.offsets]),
      t.genOffset,
    ]),
  });
}

/** Allocator rotation seed of thread k (§4.2 "bitmap rotation by warp id"): well spread, deterministic. */
export function threadSeed(seed: number, k: number): number {
  return (seed + Math.imul(k, 0x9e3779b9)) >>> 0;
}

// ------------------------------------------------------------------ errors

/** What the first failing thread of a pass records for main. */
export interface ErrorRecord {
  typeId: number;
  method: string;
  /** The object the method ran on; 0 when the allocation of a parallelNew chunk failed. */
  handle: number;
  thread: number;
  error: unknown;
  /** Class name of a thrown SmmoError, and its own primitive fields (typeName, handle, reason, …). */
  smmoClass?: string;
  smmoFields?: Record<string, unknown>;
}

/** The runtime's own errors by class name: rebuilt as instances of their class on the calling thread. */
const SMMO_ERRORS: Record<string, { prototype: object }> = {
  SmmoError,
  HeapExhaustedError,
  InvalidHandleError,
  SchemaError,
  UsageError,
  ContentionError,
  HeapCorruptionError,
  MethodError,
  WorkerCrashedError,
  PassTimeoutError,
};

/**
 * Write `rec` into the error area if this thread is the first to fail in this pass
 * (CAS on C_ERROR_OWNER); always sets C_STOP. Returns whether this record was kept.
 */
export function recordError(ctl: Int32Array, plan: ControlPlan, rec: ErrorRecord): boolean {
  Atomics.store(ctl, C_STOP, 1);
  if (Atomics.compareExchange(ctl, C_ERROR_OWNER, 0, rec.thread + 1) !== 0) return false;
  if (rec.error instanceof SmmoError) {
    // Structured clone keeps only built-in error classes: remember which of ours it was.
    rec = { ...rec, smmoClass: rec.error.constructor.name, smmoFields: primitiveFields(rec.error) };
  }
  let bytes: Buffer;
  try {
    bytes = serialize(rec);
  } catch {
    // The thrown value cannot be cloned (e.g. it holds a function): keep its text.
    bytes = serialize({ ...rec, error: new Error(describeThrown(rec.error)) });
  }
  if (bytes.length > ERROR_AREA_BYTES) bytes = serialize({ ...rec, error: new Error(describeThrown(rec.error).slice(0, 4096)) });
  new Uint8Array(ctl.buffer, plan.errorOffset, bytes.length).set(bytes);
  Atomics.store(ctl, C_ERROR_BYTES, bytes.length);
  return true;
}

/**
 * Read the error record written by recordError (main, after the pass's barrier). An
 * SmmoError is an instance of its class again (with its message, stack and fields).
 */
export function readError(ctl: Int32Array, plan: ControlPlan): ErrorRecord {
  const n = Atomics.load(ctl, C_ERROR_BYTES);
  // deserialize() wants an unshared buffer: copy the record out of shared memory.
  const copy = new Uint8Array(n);
  copy.set(new Uint8Array(ctl.buffer, plan.errorOffset, n));
  const rec = deserialize(copy) as ErrorRecord;
  const cls = rec.smmoClass !== undefined ? SMMO_ERRORS[rec.smmoClass] : undefined;
  if (cls !== undefined && rec.error instanceof Error) {
    Object.setPrototypeOf(rec.error, cls.prototype);
    Object.assign(rec.error, rec.smmoFields ?? {});
    Object.defineProperty(rec.error, 'name', { value: rec.smmoClass, writable: true, configurable: true });
  }
  return rec;
}

function primitiveFields(e: object): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(e)) {
    if (v === null || ['string', 'number', 'boolean'].includes(typeof v) || (Array.isArray(v) && v.every((x) => typeof x === 'string')))
      out[k] = v;
  }
  return out;
}

function describeThrown(e: unknown): string {
  if (e instanceof Error) return `${e.name}: ${e.message}`;
  try {
    return String(e);
  } catch {
    return Object.prototype.toString.call(e);
  }
}
