/**
 * The CLI's error for a bad command line: unknown command, app or flag, or a bad
 * value. main.ts prints its message as one line on stderr and exits with code 2;
 * the message says what was wrong and what to do.
 */
export class CliUsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CliUsageError';
  }
}

/** Exit codes of `smmo` (documented in `smmo --help`). */
export const EXIT_OK = 0;
/** The run failed: a runtime error such as HeapExhaustedError. */
export const EXIT_FAILURE = 1;
/** The command line was wrong. */
export const EXIT_USAGE = 2;
