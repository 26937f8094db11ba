/**
 * `smmo run <app> --reorder K`: the app's agents put into the order of their cells after
 * every K-th iteration (Runtime.reorder, runtime/reorder.ts).
 *
 *  (Q1) Only an app that says what to reorder by (App.reorder) takes --reorder; any other
 *       refuses it with the app's reason, before the runtime starts.
 *  (Q2) After iterations K, 2K, …, never after the last (nothing would read the order).
 *  (Q3) An app that keeps handles outside the heap gets each result (App.reorder.remap).
 *  (Q4) Time spent reordering is part of the run's `seconds`, and reported on its own;
 *       the digest is the run's without --reorder (App.reorder: only apps whose results
 *       do not depend on handles take part; test/reorder.test.ts, apps-cli tests).
 *  (Q5) --check reorders its reference on the same schedule (objects then compare by
 *       handle as without it); --check-every refuses --reorder.
 */
import type { App, AppReorder } from '../apps/app.js';
import type { ReorderResult, Runtime, SmmoClass } from '../index.js';
import { CliUsageError } from './errors.js';

/** What `--json` reports under `reorder`. */
export interface ReorderReport {
  every: number;
  /** The concrete classes reordered, and the field. */
  classes: string[];
  by: string;
  /** Calls of rt.reorder, objects whose handle changed, blocks given back, milliseconds per phase summed over the calls. */
  calls: number;
  objectsMoved: number;
  blocksFreed: number;
  ms: { sort: number; copy: number; rewrite: number; total: number };
}

/** The reordering of one run. */
export class RunReorder {
  private readonly report: ReorderReport;

  private constructor(
    private readonly spec: AppReorder,
    private readonly every: number,
    private readonly iterations: number,
  ) {
    this.report = {
      every,
      classes: [],
      by: spec.by,
      calls: 0,
      objectsMoved: 0,
      blocksFreed: 0,
      ms: { sort: 0, copy: 0, rewrite: 0, total: 0 },
    };
  }

  /** (Q1) The run's reordering, null without --reorder; a CliUsageError for an app that refuses it. */
  static forRun(app: App, every: number | undefined, iterations: number, where: string): RunReorder | null {
    if (every === undefined) return null;
    const r = app.reorder;
    if (r === undefined) {
      throw new CliUsageError(`${where}: --reorder: ${app.name} does not say what to order its objects by; run it without --reorder`);
    }
    if (typeof r === 'string') throw new CliUsageError(`${where}: --reorder: ${r}; run it without --reorder`);
    return new RunReorder(r, every, iterations);
  }

  /** (Q2) After iteration `done` (1-based, of this run): reorder when it is time. */
  async after(rt: Runtime, done: number): Promise<void> {
    if (done >= this.iterations || done % this.every !== 0) return;
    await rt.sync(); // backend 'webgpu': the objects are moved on the host
    const r: ReorderResult = rt.reorder(this.spec.classes as readonly SmmoClass[], this.spec.by);
    this.spec.remap?.(rt, r); // (Q3)
    const rep = this.report;
    rep.calls++;
    rep.objectsMoved += r.stats.objectsMoved;
    rep.blocksFreed += r.stats.blocksFreed;
    for (const k of ['sort', 'copy', 'rewrite', 'total'] as const) rep.ms[k] += r.stats.ms[k];
    for (const name of Object.keys(r.stats.classes)) if (!rep.classes.includes(name)) rep.classes.push(name);
  }

  /** The report (a copy). */
  result(): ReorderReport {
    return JSON.parse(JSON.stringify(this.report)) as ReorderReport;
  }
}

/** One line for the human summary. */
export function formatReorder(r: ReorderReport): string {
  const what = r.classes.length > 0 ? `${r.classes.join(', ')} by ${r.by}` : `by ${r.by}`;
  return (
    `${what}, every ${r.every} iterations: ${r.calls} calls, ${r.objectsMoved} objects moved, ${r.blocksFreed} blocks freed, ` +
    `${r.ms.total.toFixed(1)} ms (sort ${r.ms.sort.toFixed(1)}, copy ${r.ms.copy.toFixed(1)}, rewrite ${r.ms.rewrite.toFixed(1)})`
  );
}
