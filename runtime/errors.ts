/**
 * Typed errors of the smmo runtime.
 *
 * Every error says what was wrong and what to do about it. The original DynaSOAr
 * loops forever on a full heap and livelocks on a double free; smmo raises one of
 * these instead and leaves the heap consistent (validateHeap() passes afterwards).
 */

/** Base class: `instanceof SmmoError` catches everything the runtime throws on purpose. */
export class SmmoError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** No free block is left for a new block of `typeName`. */
export class HeapExhaustedError extends SmmoError {
  constructor(
    readonly typeName: string,
    readonly heapBytes: number,
    readonly blocks: number,
  ) {
    super(
      `heap exhausted: no free block left for a new ${typeName} block ` +
        `(heap ${heapBytes} bytes, ${blocks} blocks, all in use). ` +
        `Delete objects, or create the runtime with a larger heap (option heap, e.g. heap: '256MB'; CLI --heap SIZE such as 256MB).`,
    );
  }
}

/**
 * A handle or view that does not name a live object of this runtime (checked mode, a
 * double delete, or an object of another runtime). `reason`:
 *  - 'null': handle 0; 'forged': not a handle of this heap, or a slot its block does not have;
 *  - 'free-block' / 'deleted': the object was deleted (its block is free / its slot is free);
 *  - 'wrong-type': a live object of another class than expected;
 *  - 'stale' (checked mode): a view of an object that was deleted after the view was made,
 *    whose slot now holds another object (views carry generations; bare handles do not);
 *  - 'foreign': an object of another runtime (destroy, reference assignment, do-all arguments).
 */
export type InvalidHandleReason = 'null' | 'forged' | 'free-block' | 'deleted' | 'wrong-type' | 'stale' | 'foreign';

export class InvalidHandleError extends SmmoError {
  constructor(
    readonly handle: number,
    readonly reason: InvalidHandleReason,
    detail: string,
  ) {
    super(`invalid handle ${handle} (${reason}): ${detail}`);
  }
}

/** Bad arguments or a bad class declaration (unknown class, bad field type, …). */
export class SchemaError extends SmmoError {}

/** Bad runtime options or a call that is not allowed in the current state. */
export class UsageError extends SmmoError {}

/**
 * A kernel declaration's parameters do not fit: a parameter missing, extra, swapped,
 * misnamed or of the wrong type, against the class (a field's kind) or against the table
 * the WebAssembly module was built with (runtime/kernel-params.ts P3). Raised when the
 * kernel is bound, before it runs. `kernel` names it ('Class.method' or the declaration).
 */
export class KernelParamsError extends UsageError {
  constructor(
    readonly kernel: string,
    detail: string,
  ) {
    super(`${kernel}: ${detail}`);
  }
}

/**
 * A bounded retry loop ran out: a lock-free operation could not complete within its
 * budget. Under correct use this means another thread died in the middle of an
 * operation, or the heap's invariants were broken by forged writes.
 */
export class ContentionError extends SmmoError {}

/** validateHeap() found a broken invariant. */
export class HeapCorruptionError extends SmmoError {
  constructor(readonly problems: readonly string[]) {
    super(
      `heap invariant violated (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n  ` +
        problems.slice(0, 20).join('\n  ') +
        (problems.length > 20 ? `\n  … and ${problems.length - 20} more` : ''),
    );
  }
}

/**
 * A do-all method (or a parallelNew init method) threw. Names the class, the method and
 * the handle of the object it ran on; the thrown value is `cause` (on a worker thread a
 * structured-clone copy of it: same class for built-in errors, same message and stack).
 * The pass stopped handing out blocks; the heap is consistent (validateHeap() passes).
 */
export class MethodError extends SmmoError {
  constructor(
    readonly typeName: string,
    readonly method: string,
    readonly handle: number,
    /** 0: the calling thread; k ≥ 1: worker thread k. */
    readonly thread: number,
    cause: unknown,
  ) {
    const why = cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause);
    super(`${typeName}.${method} threw on object ${handle} (${thread === 0 ? 'calling thread' : `worker thread ${thread}`}): ${why}`, {
      cause,
    });
  }
}

/**
 * A worker thread died during a pass (process.exit in a method, an out-of-memory kill
 * under resourceLimits, a crash). The pass did not complete: see workers/pool.ts for
 * what becomes of the objects that worker was visiting or creating. The pool starts a
 * replacement thread, so the runtime stays usable. `heapCheck` is the result of the
 * validateHeap() run after the crash: null if the heap is consistent.
 */
export class WorkerCrashedError extends SmmoError {
  constructor(
    readonly thread: number,
    readonly operation: string,
    readonly heapCheck: HeapCorruptionError | null,
    cause: unknown,
  ) {
    const why = cause instanceof Error ? cause.message : String(cause);
    super(
      `worker thread ${thread} died during ${operation} (${why}). The pass did not complete: objects in the blocks that ` +
        `thread had claimed may not have been visited, and objects it created stay allocated. ` +
        (heapCheck === null
          ? 'validateHeap() passed after the crash; the runtime stays usable (a new worker replaces the dead one).'
          : `validateHeap() FAILED after the crash (${heapCheck.problems.length} problem(s)); do not trust the heap's contents.`),
      { cause },
    );
  }
}

/**
 * A pass ran longer than RuntimeOptions.passTimeout (a method that never returns, or one
 * far slower than expected). The pass was stopped: worker threads still running it were
 * terminated (new ones replace them) and the calling thread's share was interrupted
 * (runtime/timed.ts). `threads`: the threads that had not finished (0 = the calling
 * thread). As for a crashed worker, objects in the blocks those threads had claimed may not
 * have been visited, objects they created stay allocated, and an allocator operation cut
 * in half can break the heap: `heapCheck` is the result of the validateHeap() run after
 * the stop (null: the heap is consistent, and the runtime stays usable).
 */
export class PassTimeoutError extends SmmoError {
  constructor(
    readonly operation: string,
    readonly timeoutMs: number,
    readonly threads: readonly number[],
    readonly heapCheck: HeapCorruptionError | null,
  ) {
    const who = threads.map((k) => (k === 0 ? 'the calling thread' : `worker thread ${k}`)).join(', ');
    super(
      `${operation} did not finish within passTimeout (${timeoutMs} ms): ${who || 'no thread'} had not finished it. The pass was ` +
        `stopped (stuck worker threads are terminated and replaced, the calling thread's share interrupted): objects in the ` +
        `blocks those threads had claimed may not have been visited, and objects they created stay allocated. ` +
        (heapCheck === null
          ? 'validateHeap() passed afterwards; the runtime stays usable.'
          : `validateHeap() FAILED afterwards (${heapCheck.problems.length} problem(s)); do not trust the heap's contents.`) +
        ' A method that must take longer needs a larger passTimeout (CLI --pass-timeout MS).',
    );
  }
}
