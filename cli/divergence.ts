/**
 * The report of the divergence finder (`smmo run --check-every K`, cli/check-every.ts,
 * which states its rules L1–L6) and its rows in the human summary. Kept apart from
 * cli/check-every.ts so that the summary does not load the comparator and Apache Arrow.
 */
import { formatFieldDiff, type FieldDiff } from '../runtime/compare.js';

/** What `--json` carries under `divergence` (with --check-every). */
export interface DivergenceReport {
  /** K of --check-every. */
  every: number;
  /** Comparisons made at checkpoints (L2). */
  comparisons: number;
  /** Iterations (from the app's start) at the last comparison that agreed. */
  agreedAt: number;
  found: boolean;
  /** The iteration (step index) in which the first difference appeared; null: none found. */
  iteration: number | null;
  /** 0-based index of the pass in the step (null when the replay found none, L5). */
  passIndex: number | null;
  /** 'Class.method' of that pass, or 'end of step()' for the step's host code after its last pass. */
  pass: string | null;
  class: string | null;
  /** The worst field's column name ('velX', 'randomState_2'). */
  field: string | null;
  /** The worst object: its handle in the reference and in the run, and its index among its class's live objects by handle. */
  object: { handle: number; runHandle: number; index: number } | null;
  /** The field's value in the reference and in the run (references: the handles). */
  reference: number | null;
  run: number | null;
  /** Every field that differs at that pass ('Class.column' → difference). */
  fields: Record<string, FieldDiff>;
  /** Object counts that differ, classes matched by rank, passes that differ (L6). */
  structure: string[];
  /** The state directories written (L4). */
  states: { reference: string; run: string } | null;
  /** How the pass was found, or why it was not (L5). */
  note: string;
}

/** The summary rows of a divergence report (cli/run.ts formatSummary). */
export function divergenceRows(d: DivergenceReport, tolerance: string): [string, string][] {
  if (!d.found)
    return [
      ['check every', `${d.every} iterations: no divergence from the TypeScript reference (${d.comparisons} comparisons; ${tolerance})`],
    ];
  const where = divergenceWhere(d);
  const rows: [string, string][] = [
    ['check every', `${d.every} iterations: DIVERGED ${where}; last agreement after iteration ${d.agreedAt}`],
  ];
  if (d.field !== null && d.object !== null) {
    const h =
      d.object.handle === d.object.runHandle ? `handle ${d.object.handle}` : `handle ${d.object.handle} (run: ${d.object.runHandle})`;
    rows.push(['', `${d.class}.${d.field} of object ${h}, index ${d.object.index}: reference ${d.reference}, run ${d.run}`]);
  } else if (d.class !== null) rows.push(['', `class ${d.class}`]);
  for (const [name, f] of Object.entries(d.fields)) rows.push(['', `${name.padEnd(22)} ${formatFieldDiff(f, ['reference', 'run'])}`]);
  for (const s of d.structure) rows.push(['', s]);
  rows.push(['', d.note]);
  if (d.states) rows.push(['states', `${d.states.reference}, ${d.states.run} (smmo compare ${d.states.reference} ${d.states.run})`]);
  return rows;
}

/** Where a divergence was found, in words: 'in iteration 5, pass 1 (Body.update)'. */
export function divergenceWhere(d: DivergenceReport): string {
  if (d.passIndex !== null) return `in iteration ${d.iteration}, pass ${d.passIndex} (${d.pass})`;
  if (d.pass !== null) return `before iteration ${d.iteration} (${d.pass})`;
  return `by the end of iteration ${d.iteration}`;
}
