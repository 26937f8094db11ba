/**
 * A one-line progress bar on stderr, for terminals only:
 *
 *   nbody ██████████░░░░░░░░░░  120/200  60%  elapsed 1.2s  ETA 0.8s
 *
 * Invariants: it draws only when the stream is a TTY (never into pipes, files or CI
 * logs); it redraws at most once per `intervalMs` (default 100 ms: ~10 updates/s), so a
 * fast loop does not spend its time writing escape codes; `finish()` erases the line,
 * leaving the terminal as it was. Writes to a TTY are synchronous on Linux and macOS,
 * so the bar advances even while a do-all loop keeps the event loop busy.
 */

/** What the bar needs of a stream (process.stderr, or a fake in tests). */
export interface BarStream {
  isTTY?: boolean;
  columns?: number;
  write(chunk: string): unknown;
}

export class ProgressBar {
  private readonly start: number;
  private lastDraw = -Infinity;
  private drawn = false;

  constructor(
    private readonly stream: BarStream,
    private readonly label: string,
    private readonly total: number,
    private readonly intervalMs = 100,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.start = now();
  }

  /** `done` of `total` iterations are complete; redraws if the last draw is old enough. */
  update(done: number): void {
    const t = this.now();
    if (t - this.lastDraw < this.intervalMs && done < this.total) return;
    this.lastDraw = t;
    this.stream.write(`\r\x1b[2K${this.render(done, t)}`);
    this.drawn = true;
  }

  /** Erase the bar (call before printing anything else, and on errors). */
  finish(): void {
    if (this.drawn) this.stream.write('\r\x1b[2K');
    this.drawn = false;
  }

  /** The bar's text for `done` iterations at time `t` (exported for tests). */
  render(done: number, t: number): string {
    const elapsed = (t - this.start) / 1000;
    const fraction = this.total === 0 ? 1 : Math.min(1, done / this.total);
    const eta = done === 0 ? '?' : formatDuration((elapsed / done) * (this.total - done));
    const w = String(this.total).length;
    const tail = `  ${String(done).padStart(w)}/${this.total}  ${String(Math.floor(fraction * 100)).padStart(3)}%  elapsed ${formatDuration(elapsed)}  ETA ${eta}`;
    // The bar takes what the terminal width leaves, between 10 and 40 cells.
    const cells = Math.max(10, Math.min(40, (this.stream.columns || 80) - this.label.length - tail.length - 2));
    const full = Math.round(fraction * cells);
    return `${this.label} ${'█'.repeat(full)}${'░'.repeat(cells - full)}${tail}`;
  }
}

/** A bar on `stream` if it is a terminal and the user did not ask for --json/--quiet; else null. */
export function progressBar(stream: BarStream, label: string, total: number, wanted: boolean): ProgressBar | null {
  return wanted && stream.isTTY === true && total > 0 ? new ProgressBar(stream, label, total) : null;
}

/** 0.8s, 12.3s, 2m05s, 1h02m. */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '?';
  if (seconds < 60) return `${seconds.toFixed(1)}s`;
  const s = Math.round(seconds);
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}
