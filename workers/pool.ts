/**
 * The worker pool of a runtime (main-thread side): `threads - 1` worker threads managed
 * by piscina, plus the calling thread, which takes part in every pass as thread 0.
 * The shared-memory protocol (control words, thread states, invariants P1–P5) is in
 * protocol.ts; one thread's share of a pass is pass.ts; the worker entry is worker.ts.
 *
 * A pass (fork-join):
 *   1. start(): every worker thread has a session running (a parked one gets
 *      a new piscina task; the first start of a thread imports the class modules).
 *   2. Write the descriptor, reset the cursor, enlist every SERVING thread (CAS → BUSY),
 *      bump C_EPOCH and notify.
 *   3. Run the calling thread's share (pass.ts) like any worker.
 *   4. Barrier: wait until every enlisted thread has stored the epoch in its S_DONE
 *      word: a short spin, then Atomics.waitAsync slices of WAIT_SLICE_MS, so that the
 *      event loop can deliver a dead worker's 'exit' in between (P5).
 *
 * Failure modes:
 *  - A method throws on any thread: that thread records the first error and sets
 *    C_STOP; every thread stops claiming and arrives; the pass rejects with MethodError
 *    (class, method, handle, cause). Objects in chunks nobody claimed after the stop
 *    are not visited. No heap operation is left half done: the heap is consistent.
 *  - A worker dies in a pass (process.exit in a method, a resourceLimits out-of-memory
 *    kill): piscina rejects its session and starts a replacement thread; we mark the
 *    thread dead, set C_STOP, wake the barrier, wait for the live threads, run
 *    validateHeap() and reject with WorkerCrashedError. What becomes of its objects:
 *    the objects of the chunk it was running may not have been visited (those before
 *    the death were: their field writes stay); objects it created (in a method, or a
 *    parallelNew chunk) stay allocated and are visited by later passes: zeroed, with the
 *    fields its code wrote before dying. `process.exit` runs between heap operations,
 *    so the heap stays consistent; an out-of-memory kill can land inside an allocator
 *    operation (a block taken from `free` but not yet in `allocated`): the error then
 *    carries the validateHeap() failure. The dead thread slot gets a new session at
 *    the next pass.
 *  - A worker that cannot start (a class module fails to import, a class is missing,
 *    the layout differs): the pass (or createRuntime) rejects with a UsageError.
 *  - A pass that runs past passTimeout (a method that never returns): the calling
 *    thread's share is interrupted (runtime/timed.ts); at the deadline C_STOP is set, the
 *    threads get STOP_GRACE_MS more to arrive (one between two chunks arrives at once),
 *    and each that has not is terminated by its threadId (S_TID); piscina rejects its
 *    session and starts a replacement thread, as after a crash. Then validateHeap() runs
 *    and the pass rejects with PassTimeoutError (threads, heap check). The runtime stays
 *    usable: the next pass starts sessions on the new threads.
 *  - A thread that died or was terminated cannot give back its WASM kernel slot
 *    (runtime/wasm.ts W2) nor its allocator state: the pool does (S_WASM, S_ALLOC), so
 *    replacements run out of neither, and the slots the dead thread's open warp had
 *    reserved and its kept blocks go back (Allocator.reclaimState).
 *
 * Exit without close(): piscina unreferences idle workers; a session returns after
 * idleMs without a pass, so a script that forgets close() exits at most about
 * idleMs + WAIT_SLICE_MS after its last pass. close() ends every session and thread.
 */
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { HeapCorruptionError, MethodError, PassTimeoutError, SmmoError, UsageError, WorkerCrashedError } from '../runtime/errors.js';
import { timed, TimedOut } from '../runtime/timed.js';
import { releaseWasmSlot } from '../runtime/wasm.js';
import type { Heap } from '../runtime/heap.js';
import type { TypeTable } from '../runtime/layout.js';
import type { ThreadContext } from '../runtime/thread.js';
import { runShare } from './pass.js';
import { DefragScratch } from '../runtime/defrag-lanes.js';
import { encodeArgs, KIND_CLOSE, type ExecutorConfig, type PassExecutor, type PassSpec } from '../runtime/executor.js';
import {
  BUSY,
  C_ARRIVED,
  C_CURSOR,
  C_EPOCH,
  C_ERROR_BYTES,
  C_ERROR_OWNER,
  C_STOP,
  D_ARGS_BYTES,
  D_ARGS_VERSION,
  D_CHUNK,
  D_FROM,
  D_KIND,
  D_LISTS,
  D_TO,
  D_TYPE,
  ARGS_AREA_BYTES,
  PARKED,
  SERVING,
  STARTING,
  S_DONE,
  S_STATE,
  S_TID,
  S_WASM,
  S_ALLOC,
  S_WORK,
  WAIT_SLICE_MS,
  layoutFingerprint,
  planControl,
  readError,
  slotWord,
  waitSlice,
  type ControlPlan,
  type SessionTask,
  type WorkerConfig,
} from './protocol.js';

/**
 * How long the barrier may block the event loop (Atomics.wait) before it waits
 * asynchronously; also the longest delay before a dead worker is noticed. Measured on
 * the dev VM: an empty pass costs ~30 % less than with waitAsync alone.
 */
const SYNC_WAIT_MS = 2;

/** What the pool is made with (runtime/executor.ts ExecutorConfig). */
export type PoolOptions = ExecutorConfig;

/** After a pass's deadline: how long threads still get to arrive before they are terminated (ms). */
const STOP_GRACE_MS = 250;
/** How long a terminated thread may take to be reported dead by piscina (ms). */
const TERMINATE_WAIT_MS = 10_000;

export class WorkerPool implements PassExecutor {
  readonly threads: number;
  private readonly piscina: Piscina;
  private readonly ctl: Int32Array;
  private readonly plan: ControlPlan;
  /** Per slot: a token of its current session (a later settle of an older one is ignored). */
  private readonly session: number[];
  /** Per slot: why its worker died during the running pass. */
  private readonly dead: unknown[];
  /** Per slot: why its session failed to start. */
  private readonly startError: unknown[];
  private lastArgs: Buffer | null = null;
  /** The calling thread's view of the defrag scratch buffer (null: the runtime gave none). */
  private readonly defragScratch: DefragScratch | null;
  private argsVersion = 0;
  private running: { epoch: number; participants: number[] } | null = null;
  private closed = false;

  constructor(
    private readonly heap: Heap,
    private readonly table: TypeTable,
    private readonly opts: PoolOptions,
  ) {
    if (opts.modules.length === 0) {
      throw new UsageError(
        `threads: ${opts.threads} needs options.modules: the URLs of the modules that export your classes ` +
          `(e.g. modules: [import.meta.url] in the module that declares them), so that worker threads can import them`,
      );
    }
    this.threads = opts.threads;
    this.plan = planControl(opts.threads, table.types.length);
    const control = new SharedArrayBuffer(this.plan.bytes);
    this.ctl = new Int32Array(control);
    this.session = new Array<number>(opts.threads).fill(0);
    this.dead = new Array<unknown>(opts.threads).fill(undefined);
    this.startError = new Array<unknown>(opts.threads).fill(undefined);
    const workerData: WorkerConfig = {
      memory: heap.memory,
      heapBytes: heap.plan.heapBytes,
      control,
      threads: opts.threads,
      modules: [...opts.modules],
      classNames: table.types.map((t) => t.name),
      fingerprint: layoutFingerprint(table),
      checked: opts.checked,
      seed: opts.seed,
      backend: opts.backend,
      wasm: opts.wasm,
      idleMs: opts.idleMs,
      spinMicros: opts.spinMicros,
      compile: opts.compile,
      bitmapAlloc: table.bitmapAlloc,
      blockSize: table.blockSize,
      ...(opts.defragScratch !== undefined ? { defragScratch: opts.defragScratch } : {}),
    };
    this.defragScratch = opts.defragScratch === undefined ? null : new DefragScratch(heap.numBlocks, opts.defragScratch);
    this.piscina = new Piscina({
      filename: fileURLToPath(new URL('./worker.js', import.meta.url)),
      minThreads: opts.threads - 1,
      maxThreads: opts.threads - 1,
      concurrentTasksPerWorker: 1,
      idleTimeout: 2 ** 31 - 1, // never retire a thread: minThreads = maxThreads anyway
      workerData,
      ...(opts.resourceLimits ? { resourceLimits: opts.resourceLimits } : {}),
    });
    // Errors of threads without a task (none by design) must not crash the process.
    this.piscina.on('error', () => {});
  }

  // ---------------------------------------------------------------- sessions

  private state(k: number): number {
    return slotWord(this.plan, k) + S_STATE;
  }

  private startSession(k: number): void {
    const token = this.session[k]! + 1;
    this.session[k] = token;
    this.startError[k] = undefined;
    Atomics.store(this.ctl, this.state(k), STARTING);
    const task: SessionTask = { slot: k };
    this.piscina.run(task).then(
      () => {
        // 'parked' or 'closed': S_STATE already says PARKED.
      },
      (err: unknown) => {
        if (this.session[k] !== token) return;
        // Also after close(): a pass still waiting for this thread must end (run() then reports the close).
        const r = this.running;
        const wasStarting = Atomics.load(this.ctl, this.state(k)) === STARTING;
        if (r !== null && r.participants.includes(k) && Atomics.load(this.ctl, slotWord(this.plan, k) + S_DONE) !== r.epoch) {
          this.dead[k] = err;
          Atomics.store(this.ctl, C_STOP, 1); // the survivors stop claiming: the pass fails anyway
        } else if (wasStarting) {
          this.startError[k] = err;
        }
        Atomics.store(this.ctl, this.state(k), PARKED);
        Atomics.notify(this.ctl, this.state(k));
        Atomics.add(this.ctl, C_ARRIVED, 1); // wake a barrier waiting in waitArrivals
        Atomics.notify(this.ctl, C_ARRIVED);
      },
    );
  }

  /** Make every worker thread SERVING (starting sessions where needed); bounded by startTimeoutMs. */
  async start(): Promise<void> {
    await this.gather(false);
  }

  /**
   * Bring every worker thread to SERVING, starting sessions for parked ones. With
   * `enlist`, CAS each serving thread to BUSY at once (it then waits for the pass
   * without parking) and return the enlisted threads. Bounded by startTimeoutMs; on a
   * start failure the threads enlisted so far are released again.
   */
  private async gather(enlist: boolean): Promise<number[]> {
    if (this.closed) throw new UsageError('the runtime is closed');
    const ctl = this.ctl;
    const deadline = performance.now() + this.opts.startTimeoutMs;
    const enlisted: number[] = [];
    const release = (): void => {
      for (const k of enlisted) Atomics.compareExchange(ctl, this.state(k), BUSY, SERVING);
    };
    for (;;) {
      let waitOn = -1;
      for (let k = 1; k < this.threads; k++) {
        if (enlisted.includes(k)) continue;
        // (P3) a thread may park between this load and the CAS: it is then PARKED below.
        if (Atomics.load(ctl, this.state(k)) === SERVING) {
          if (!enlist) continue;
          if (Atomics.compareExchange(ctl, this.state(k), SERVING, BUSY) === SERVING) {
            enlisted.push(k);
            continue;
          }
        }
        if (this.startError[k] !== undefined) {
          const e = this.startError[k];
          this.startError[k] = undefined;
          release();
          throw new UsageError(`worker thread ${k} could not start: ${(e as Error)?.message ?? String(e)}`, { cause: e });
        }
        if (Atomics.load(ctl, this.state(k)) === PARKED) this.startSession(k);
        waitOn = k;
      }
      if (waitOn < 0) return enlisted;
      if (performance.now() > deadline) {
        release();
        throw new UsageError(
          `worker thread ${waitOn} did not start within ${this.opts.startTimeoutMs} ms (importing ${this.opts.modules.join(', ')}); ` +
            `the machine may be overloaded: use fewer threads or a larger startTimeoutMs`,
        );
      }
      await waitSlice(ctl, this.state(waitOn), Atomics.load(ctl, this.state(waitOn)), WAIT_SLICE_MS);
    }
  }

  // ---------------------------------------------------------------- passes

  /**
   * Run one pass on every thread (the calling thread's context is `main`). Resolves when
   * every participant has finished; rejects with MethodError or WorkerCrashedError.
   */
  async run(spec: PassSpec, main: ThreadContext): Promise<void> {
    if (this.running !== null)
      throw new UsageError(`${spec.operation}: another pass of this runtime is still running (await each parallelDo / parallelNew)`);
    const ctl = this.ctl;
    // (P1) enlisted threads only wait for C_EPOCH: the descriptor may be written after enlisting.
    const participants = await this.gather(true);
    try {
      this.writeDescriptor(spec);
    } catch (e) {
      for (const k of participants) Atomics.compareExchange(ctl, this.state(k), BUSY, SERVING);
      throw e;
    }
    const epoch = Atomics.add(ctl, C_EPOCH, 1) + 1;
    this.running = { epoch, participants };
    Atomics.notify(ctl, C_EPOCH);
    const timeout = this.opts.passTimeout;
    const deadline = timeout === undefined ? Infinity : performance.now() + timeout;
    let mine = null;
    let mainTimedOut = false;
    let stuck: number[] = [];
    try {
      try {
        mine = timed(() => runShare(main, ctl, this.plan, spec.kind, spec.call, 0, this.defragScratch), timeout);
      } catch (e) {
        if (!(e instanceof TimedOut)) throw e;
        // (timed.ts T2) runShare's own cleanup did not run: abandonPass below closes its warp.
        mainTimedOut = true;
        main.pass = null;
        Atomics.store(ctl, C_STOP, 1);
      }
      stuck = await this.waitArrivals(epoch, participants, mainTimedOut ? performance.now() : deadline);
      if (stuck.length > 0) await this.terminate(stuck);
    } finally {
      this.running = null;
    }
    if (this.closed) throw new UsageError(`${spec.operation}: the runtime was closed while the pass was running`);
    if (mainTimedOut || stuck.length > 0) {
      for (const k of stuck) this.dead[k] = undefined; // terminated by us: reported as the timeout, not as a crash
      this.releaseDeadSlots(stuck, main);
      main.abandonPass(); // the calling thread's share was cut off, or its kept blocks are flushed again (idempotent)
      throw new PassTimeoutError(spec.operation, timeout!, [...(mainTimedOut ? [0] : []), ...stuck], this.heapCheck());
    }
    const died = participants.filter((k) => this.dead[k] !== undefined);
    if (died.length > 0) {
      const k = died[0]!;
      const cause = this.dead[k];
      for (const d of died) this.dead[d] = undefined;
      this.releaseDeadSlots(died, main);
      throw new WorkerCrashedError(k, spec.operation, this.heapCheck(), cause);
    }
    if (Atomics.load(ctl, C_ERROR_OWNER) !== 0) {
      const rec = Atomics.load(ctl, C_ERROR_OWNER) === 1 && mine !== null ? mine : readError(ctl, this.plan);
      // A failed allocation of a parallelNew chunk (a full heap) is not a method's error: pass it through.
      if (rec.handle === 0 && rec.error instanceof SmmoError) throw rec.error;
      throw new MethodError(this.table.types[rec.typeId]!.name, rec.method, rec.handle, rec.thread, rec.error);
    }
  }

  private writeDescriptor(spec: PassSpec): void {
    const ctl = this.ctl;
    // (P1) no thread is BUSY here: plain stores, published by the C_EPOCH bump.
    ctl[D_KIND] = spec.kind;
    ctl[D_TYPE] = spec.typeId;
    ctl[D_FROM] = spec.from;
    ctl[D_TO] = spec.to;
    ctl[D_CHUNK] = spec.chunk;
    if (spec.lists !== null) ctl.set(spec.lists, D_LISTS);
    ctl[C_CURSOR] = spec.from;
    ctl[C_STOP] = 0;
    ctl[C_ERROR_OWNER] = 0;
    ctl[C_ERROR_BYTES] = 0;
    if (spec.kind === KIND_CLOSE) return;
    let bytes: Buffer;
    try {
      bytes = encodeArgs(spec.call.method, spec.call.args);
    } catch (e) {
      throw new UsageError(
        `${spec.operation}: arguments are passed to worker threads by value (structured clone): ${(e as Error).message}`,
        { cause: e },
      );
    }
    if (this.lastArgs !== null && bytes.equals(this.lastArgs)) return;
    if (bytes.length > ARGS_AREA_BYTES) {
      // Runtime checks this before every pass (on one thread too); kept as the protocol's own guard.
      throw new UsageError(
        `${spec.operation}: arguments take ${bytes.length} bytes serialized; at most ${ARGS_AREA_BYTES} can be passed to worker threads`,
      );
    }
    new Uint8Array(ctl.buffer, this.plan.argsOffset, bytes.length).set(bytes);
    ctl[D_ARGS_BYTES] = bytes.length;
    ctl[D_ARGS_VERSION] = ++this.argsVersion;
    this.lastArgs = bytes;
  }

  /**
   * Wait until every participant has finished `epoch` or died (P5). With a `deadline`
   * (pass timeout): once it has passed, set C_STOP, wait STOP_GRACE_MS more, and return
   * the participants that still have not arrived (none: []).
   */
  private async waitArrivals(epoch: number, participants: readonly number[], deadline = Infinity): Promise<number[]> {
    const ctl = this.ctl;
    const pending = (): boolean => {
      for (const k of participants) {
        if (Atomics.load(ctl, slotWord(this.plan, k) + S_DONE) !== epoch && this.dead[k] === undefined) return true;
      }
      return false;
    };
    if (!pending()) return [];
    const until = performance.now() + this.opts.spinMicros / 1000;
    while (performance.now() < until) {
      for (let i = 0; i < 64; i++) if (!pending()) return [];
    }
    // Sleep on the futex, blocking the event loop for at most SYNC_WAIT_MS: a futex wake
    // costs a few µs, a waitAsync wake goes through the event loop (tens of µs).
    const syncUntil = performance.now() + SYNC_WAIT_MS;
    while (performance.now() < syncUntil) {
      const seen = Atomics.load(ctl, C_ARRIVED);
      if (!pending()) return [];
      Atomics.wait(ctl, C_ARRIVED, seen, SYNC_WAIT_MS);
    }
    // Then yield to the event loop between slices, so that a dead worker's exit is seen (P5).
    let stopped = false;
    for (;;) {
      const seen = Atomics.load(ctl, C_ARRIVED);
      if (!pending()) return [];
      const now = performance.now();
      if (now >= deadline) {
        if (stopped) {
          return participants.filter((k) => Atomics.load(ctl, slotWord(this.plan, k) + S_DONE) !== epoch && this.dead[k] === undefined);
        }
        stopped = true;
        Atomics.store(ctl, C_STOP, 1); // stop claiming: a thread between two chunks arrives at once
        deadline = now + STOP_GRACE_MS;
      }
      await waitSlice(ctl, C_ARRIVED, seen, Math.max(1, Math.min(WAIT_SLICE_MS, deadline - now)));
    }
  }

  /**
   * Terminate the worker threads serving slots `stuck` (found by S_TID) and wait, bounded,
   * until piscina has reported each session dead (startSession's rejection handler marks
   * it while the pass is still `running`); piscina starts replacement threads.
   */
  private async terminate(stuck: readonly number[]): Promise<void> {
    const ctl = this.ctl;
    const ids = new Set(stuck.map((k) => Atomics.load(ctl, slotWord(this.plan, k) + S_TID)));
    await Promise.all(this.piscina.threads.filter((w) => ids.has(w.threadId)).map((w) => w.terminate()));
    const until = performance.now() + TERMINATE_WAIT_MS;
    while (stuck.some((k) => this.dead[k] === undefined) && performance.now() < until) {
      await waitSlice(ctl, C_ARRIVED, Atomics.load(ctl, C_ARRIVED), WAIT_SLICE_MS);
    }
  }

  /**
   * What the threads that served `slots` held, given back now that they are dead: their
   * WASM kernel slots (runtime/wasm.ts W2) and their allocator states, with the slots
   * their open warps had reserved and their kept blocks (Allocator.reclaimState).
   */
  private releaseDeadSlots(slots: readonly number[], main: ThreadContext): void {
    for (const k of slots) {
      const w = slotWord(this.plan, k) + S_WASM;
      const s = Atomics.exchange(this.ctl, w, 0);
      if (s > 0) releaseWasmSlot(this.heap.i32, s - 1);
      const st = Atomics.exchange(this.ctl, slotWord(this.plan, k) + S_ALLOC, 0);
      if (st > 0) main.allocator.reclaimState(st - 1);
    }
  }

  /** validateHeap() after a crash or a stop: null when the heap is consistent. */
  private heapCheck(): HeapCorruptionError | null {
    try {
      this.heap.validate();
      return null;
    } catch (e) {
      if (!(e instanceof HeapCorruptionError)) throw e;
      return e;
    }
  }

  /** Blocks (do-alls) and objects (parallelNew) each thread has processed so far; [0] is the calling thread. */
  work(): number[] {
    return Array.from({ length: this.threads }, (_, k) => Atomics.load(this.ctl, slotWord(this.plan, k) + S_WORK));
  }

  // ---------------------------------------------------------------- close

  /** End every session and thread. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    if (this.running === null) {
      // Graceful: enlist the serving threads in a CLOSE pass so their sessions return.
      const ctl = this.ctl;
      ctl[D_KIND] = KIND_CLOSE;
      const participants: number[] = [];
      for (let k = 1; k < this.threads; k++) {
        if (Atomics.compareExchange(ctl, this.state(k), SERVING, BUSY) === SERVING) participants.push(k);
      }
      const epoch = Atomics.add(ctl, C_EPOCH, 1) + 1;
      Atomics.notify(ctl, C_EPOCH);
      const deadline = performance.now() + 1000;
      while (performance.now() < deadline && participants.some((k) => Atomics.load(ctl, slotWord(this.plan, k) + S_DONE) !== epoch)) {
        await waitSlice(ctl, C_ARRIVED, Atomics.load(ctl, C_ARRIVED), WAIT_SLICE_MS);
      }
    }
    this.closed = true;
    // Terminates every thread, also one still starting or stuck in a method.
    await this.piscina.destroy();
  }
}
