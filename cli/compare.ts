/**
 * `smmo compare A B [--tol X] [--rel R] [--field-rel F] [--json]`: compare two state
 * directories written by `smmo run --dump` (runtime/state.ts), class by class and field
 * by field; the tool for cross-checking a GPU or WASM run against the TypeScript
 * reference.
 *
 * The comparison is runtime/compare.ts's, the one `smmo run --check` uses too; its
 * header states the rules: objects matched by handle, else by the app's match key
 * (App.matchKeys), else by rank; references equal
 * when they point to matching objects; a class whose object counts differ is a
 * difference; a pair (a, b) is within tolerance when |a − b| ≤ tol, or ≤ rel·max(|a|, |b|),
 * or ≤ field-rel · the field's largest finite |value|; two NaNs are equal, and NaN or an
 * infinity against any other value is beyond every tolerance. bool columns compare as
 * 0/1. The defaults (all 0) compare exactly.
 *
 * Exit status: 0 every field within tolerance; 1 a difference beyond it (a value, a
 * reference, or an object count); 2 a bad command line or a missing, malformed or
 * mismatching state (the message names the file, class and field).
 */
import { parseArgs } from 'node:util';
import { appNames, loadApp } from '../apps/registry.js';
import {
  compareColumns,
  EXACT,
  formatFieldDiff,
  type ClassDiff,
  type FieldDiff,
  type MatchKeys,
  type Tolerance,
} from '../runtime/compare.js';
import { UsageError } from '../runtime/index.js';
import type { LoadedState } from '../runtime/state.js';
import { CliUsageError, EXIT_FAILURE, EXIT_OK } from './errors.js';
import { formatFlags, toleranceFlags, validate } from './flags.js';
import { stateApi } from './state.js';

export type { ClassDiff, FieldDiff, Tolerance } from '../runtime/compare.js';

export interface CompareReport {
  ok: boolean;
  app: string;
  tolerance: Tolerance;
  a: { dir: string; iterations: number };
  b: { dir: string; iterations: number };
  classes: Record<string, ClassDiff>;
  /** 'Class.column' of the worst field ('' when no field differs): runtime/compare.ts. */
  worst: string;
  /** Classes or columns on one side only (none for two states read against one app's classes). */
  missing?: string[];
}

const FLAGS = toleranceFlags('', EXACT);

export function compareHelp(): string {
  return `Usage: smmo compare A B [--tol X] [--rel R] [--field-rel F] [--json]

Compare two states written by 'smmo run <app> --dump DIR' (directories of Apache Arrow
files, one per class): per class the object counts, per field the largest difference,
the number of objects beyond the tolerance and the worst object. The rules are those of
'smmo run --check' (runtime/compare.ts).

Objects are matched by handle when both states hold the same handles, else by the app's
match key where it has one (wa-tor's fish and sharks by their cell, for instance: objects
created on several threads get their handles in another order), else by rank (i-th
smallest handle of A with the i-th of B); references are equal when they point to
matching objects. Values a, b are within tolerance when |a - b| <= X (--tol), or
<= R * max(|a|, |b|) (--rel), or <= F * the field's largest finite |value| on either
side (--field-rel); two NaNs are equal, NaN or an infinity against any other value is
beyond every tolerance. The defaults compare exactly.

Flags:
${formatFlags(FLAGS, [
  ['--json', 'print the report as one JSON object'],
  ['-h, --help', 'show this help'],
])}

Exit status:
  0   every field within tolerance
  1   a value, reference or object count differs beyond the tolerance
  2   bad command line, or a missing, malformed or mismatching state (names class and field)`;
}

/** Run `smmo compare` on `args`; prints the report and returns the exit code. */
export async function compare(args: readonly string[], print: (text: string) => void): Promise<number> {
  const where = 'smmo compare';
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: [...args],
      options: {
        tol: { type: 'string' },
        rel: { type: 'string' },
        'field-rel': { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: true,
    });
  } catch (e) {
    throw new CliUsageError(`${where}: ${(e as Error).message}; see 'smmo compare --help'`);
  }
  const v = parsed.values as Record<string, string | boolean | undefined>;
  if (v['help'] === true) {
    print(compareHelp());
    return EXIT_OK;
  }
  if (parsed.positionals.length !== 2) {
    throw new CliUsageError(
      `${where}: give two state directories, got ${parsed.positionals.length}; e.g. 'smmo compare cpu.arrow gpu.arrow --tol 1e-5'`,
    );
  }
  const [dirA, dirB] = parsed.positionals as [string, string];
  const number = (name: string): number => {
    const raw = v[name] as string | undefined;
    return raw === undefined
      ? 0
      : (validate(
          FLAGS.find((f) => f.name === name)!,
          raw,
          where,
        ) as number);
  };
  const tol: Tolerance = { abs: number('tol'), rel: number('rel'), fieldRel: number('field-rel') };
  const report = await compareStates(dirA, dirB, tol);
  print(v['json'] === true ? JSON.stringify(report) : formatCompare(report));
  return report.ok ? EXIT_OK : EXIT_FAILURE;
}

/** A tolerance with fields left out taken as 0. */
function full(tol: Partial<Tolerance>): Tolerance {
  return { ...EXACT, ...tol };
}

/** Read both states (checked against their app's classes) and compare them. */
export async function compareStates(dirA: string, dirB: string, tol: Partial<Tolerance>): Promise<CompareReport> {
  const { peekStateApp, readState } = await stateApi();
  try {
    const appA = peekStateApp(dirA);
    const appB = peekStateApp(dirB);
    if (appA !== appB) throw new CliUsageError(`smmo compare: ${dirA} is a state of app ${appA}, ${dirB} of app ${appB}`);
    const app = await loadApp(appA);
    if (app === undefined) {
      throw new CliUsageError(
        `smmo compare: ${dirA} is a state of app '${appA}', which this smmo does not have (${appNames().join(', ')})`,
      );
    }
    const a = readState(dirA, app.classes, app.name);
    const b = readState(dirB, app.classes, app.name);
    return compareLoaded(a, b, tol, app.matchKeys);
  } catch (e) {
    if (e instanceof UsageError) throw new CliUsageError(`smmo compare: ${e.message}`);
    throw e;
  }
}

/** Compare two states of the same app (both read against the same classes): runtime/compare.ts. */
export function compareLoaded(a: LoadedState, b: LoadedState, tol: Partial<Tolerance>, keys: MatchKeys = {}): CompareReport {
  const diff = compareColumns(a, b, full(tol), keys);
  return {
    ok: diff.ok,
    app: a.info.app,
    tolerance: diff.tolerance,
    a: { dir: a.dir, iterations: a.info.iterations },
    b: { dir: b.dir, iterations: b.info.iterations },
    classes: diff.classes,
    worst: diff.worst,
    ...(diff.missing.length > 0 ? { missing: diff.missing } : {}),
  };
}

/** The tolerance in words: 'abs 0.5, rel 0' (field rel only when set). */
function formatTolerance(t: Tolerance): string {
  return `abs ${t.abs}, rel ${t.rel}${t.fieldRel > 0 ? `, field rel ${t.fieldRel}` : ''}`;
}

/** The human report: one row per class and field, the worst field's worst object, the verdict. */
export function formatCompare(r: CompareReport): string {
  const rows: string[][] = [['class', 'field', 'objects A / B', 'matched by', 'max |Δ|', 'beyond tolerance']];
  for (const [name, c] of Object.entries(r.classes)) {
    const objects = `${c.objects[0]} / ${c.objects[1]}`;
    if (c.matchedBy === 'none') {
      rows.push([name, '(all)', objects, '-', '-', 'object counts differ']);
      continue;
    }
    const fields = Object.entries(c.fields);
    if (fields.length === 0) rows.push([name, '-', objects, c.matchedBy, '-', '0']);
    for (const [field, f] of fields) {
      const max = f.kind === 'ref' ? '(ref)' : f.maxAbs === 0 ? '0' : f.maxAbs.toExponential(3);
      rows.push([name, field, objects, c.matchedBy, max, String(f.beyond)]);
    }
  }
  const widths = rows[0]!.map((_, k) => Math.max(...rows.map((row) => row[k]!.length)));
  const lines = rows.map((row) =>
    row
      .map((cell, k) => cell.padEnd(widths[k]!))
      .join('  ')
      .trimEnd(),
  );
  lines.splice(1, 0, widths.map((w) => '-'.repeat(w)).join('  '));
  const head = `app ${r.app}: A = ${r.a.dir} (${r.a.iterations} iterations), B = ${r.b.dir} (${r.b.iterations} iterations)`;
  const note = r.a.iterations !== r.b.iterations ? '\nnote: the states were taken after different iteration counts' : '';
  const dot = r.worst.lastIndexOf('.');
  const worstField: FieldDiff | undefined = dot < 0 ? undefined : r.classes[r.worst.slice(0, dot)]?.fields[r.worst.slice(dot + 1)];
  const worst =
    (worstField ? `\nworst: ${r.worst}  ${formatFieldDiff(worstField)}` : '') + (r.missing ?? []).map((m) => `\nmissing: ${m}`).join('');
  const verdict = r.ok
    ? `OK: every field within tolerance (${formatTolerance(r.tolerance)})`
    : `DIFFERENT: beyond tolerance (${formatTolerance(r.tolerance)})`;
  return `${head}${note}\n\n${lines.join('\n')}\n${worst}\n${verdict}`;
}
