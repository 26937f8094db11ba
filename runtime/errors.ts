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
        `Delete objects, or create the runtime with a larger heap (option heapBytes, CLI --heap SIZE such as 256MB).`,
    );
  }
}

/** A handle that does not name a live object (checked mode, or a double delete). */
export class InvalidHandleError extends SmmoError {
  constructor(
    readonly handle: number,
    readonly reason: 'null' | 'forged' | 'free-block' | 'deleted' | 'wrong-type',
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
