/**
 * `smmo compare A B [--tol X] [--rel R] [--json]`: compare two state directories written
 * by `smmo run --dump` (runtime/state.ts), class by class and field by field; the tool
 * for cross-checking a GPU or WASM run against the TypeScript reference.
 *
 * Matching objects: by handle when both states hold the same handles of a class (two
 * runs of one heap layout and allocation order, e.g. --threads 1 with two backends);
 * otherwise by rank, the i-th smallest handle of A with the i-th smallest of B (handles
 * differ, e.g. after --init, which keeps their order); a class whose object counts
 * differ cannot be matched and is reported as a difference. References are equal when
 * they point to matching objects (both null, or the target matched as above).
 *
 * A number pair (a, b) is within tolerance when |a − b| ≤ tol or |a − b| ≤ rel·max(|a|, |b|);
 * two NaNs are equal, and NaN or an infinity against any other value is beyond every
 * tolerance (the relative rule alone would accept ∞ against any number). bool columns
 * compare as 0/1.
 *
 * Exit status: 0 every field within tolerance; 1 a difference beyond it (a value, a
 * reference, or an object count); 2 a bad command line or a missing, malformed or
 * mismatching state (the message names the file, class and field).
 */
import { parseArgs } from 'node:util';
import { appNames, loadApp } from '../apps/registry.js';
import { UsageError } from '../runtime/index.js';
import { indexOfSorted } from '../runtime/sorted.js';
import type { ClassData, LoadedState } from '../runtime/state.js';
import { CliUsageError, EXIT_FAILURE, EXIT_OK } from './errors.js';
import { stateApi } from './state.js';

export interface FieldDiff {
  kind: string;
  /** Largest |a − b| over matched objects (numbers; 0 for references); Infinity for NaN vs number. */
  maxAbs: number;
  /** Objects whose values differ beyond the tolerance (references: that differ at all). */
  beyond: number;
}

export interface ClassDiff {
  objects: [number, number];
  /** 'handle' | 'rank' | 'none' (object counts differ: fields not compared). */
  matchedBy: 'handle' | 'rank' | 'none';
  fields: Record<string, FieldDiff>;
}

export interface CompareReport {
  ok: boolean;
  app: string;
  tolerance: { abs: number; rel: number };
  a: { dir: string; iterations: number };
  b: { dir: string; iterations: number };
  classes: Record<string, ClassDiff>;
}

export function compareHelp(): string {
  return `Usage: smmo compare A B [--tol X] [--rel R] [--json]

Compare two states written by 'smmo run <app> --dump DIR' (directories of Apache Arrow
files, one per class): per class the object counts, per field the largest difference
and the number of objects beyond the tolerance.

Objects are matched by handle when both states hold the same handles, else by rank
(i-th smallest handle of A with the i-th of B); references are equal when they point to
matching objects. Values a, b are within tolerance when |a - b| <= X or
|a - b| <= R * max(|a|, |b|); two NaNs are equal, NaN or an infinity against any other
value is beyond every tolerance.

Flags:
  --tol X    absolute tolerance (default: 0, exact)
  --rel R    relative tolerance (default: 0)
  --json     print the report as one JSON object
  -h, --help show this help

Exit status:
  0   every field within tolerance
  1   a value, reference or object count differs beyond the tolerance
  2   bad command line, or a missing, malformed or mismatching state (names class and field)`;
}

/** Run `smmo compare` on `args`; prints the report and returns the exit code. */
export async function compare(args: readonly string[], print: (text: string) => void): Promise<number> {
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: [...args],
      options: { tol: { type: 'string' }, rel: { type: 'string' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: true,
    });
  } catch (e) {
    throw new CliUsageError(`smmo compare: ${(e as Error).message}; see 'smmo compare --help'`);
  }
  const v = parsed.values as Record<string, string | boolean | undefined>;
  if (v['help'] === true) {
    print(compareHelp());
    return EXIT_OK;
  }
  if (parsed.positionals.length !== 2) {
    throw new CliUsageError(
      `smmo compare: give two state directories, got ${parsed.positionals.length}; e.g. 'smmo compare cpu.arrow gpu.arrow --tol 1e-5'`,
    );
  }
  const [dirA, dirB] = parsed.positionals as [string, string];
  const number = (name: string): number => {
    const raw = v[name] as string | undefined;
    if (raw === undefined) return 0;
    const n = raw.trim() === '' ? NaN : Number(raw);
    if (!(n >= 0) || !Number.isFinite(n))
      throw new CliUsageError(`smmo compare: --${name} must be a number ≥ 0, got '${raw}' (e.g. --${name} 1e-5)`);
    return n;
  };
  const tol = { abs: number('tol'), rel: number('rel') };
  const report = await compareStates(dirA, dirB, tol);
  print(v['json'] === true ? JSON.stringify(report) : formatCompare(report));
  return report.ok ? EXIT_OK : EXIT_FAILURE;
}

/** Read both states (checked against their app's classes) and compare them. */
export async function compareStates(dirA: string, dirB: string, tol: { abs: number; rel: number }): Promise<CompareReport> {
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
    return compareLoaded(a, b, tol);
  } catch (e) {
    if (e instanceof UsageError) throw new CliUsageError(`smmo compare: ${e.message}`);
    throw e;
  }
}

/** Compare two states of the same app (both read against the same classes). */
export function compareLoaded(a: LoadedState, b: LoadedState, tol: { abs: number; rel: number }): CompareReport {
  const classes: Record<string, ClassDiff> = {};
  let ok = true;
  // How each class's objects match (A handle → B handle), for references.
  const match = new Map<string, 'handle' | 'rank' | 'none'>();
  a.classes.forEach((ca, i) => {
    const cb = b.classes[i]!;
    const same = ca.handles.length === cb.handles.length && ca.handles.every((h, k) => h === cb.handles[k]);
    match.set(ca.name, same ? 'handle' : ca.handles.length === cb.handles.length ? 'rank' : 'none');
  });
  /** B's handle matching A's handle `h` (a reference's target), or -1. */
  const corresponding = (h: number, targets: readonly ClassData[], targetsB: readonly ClassData[]): number => {
    for (let t = 0; t < targets.length; t++) {
      const r = indexOfSorted(targets[t]!.handles, h);
      if (r < 0) continue;
      const how = match.get(targets[t]!.name);
      return how === 'handle' ? h : how === 'rank' ? targetsB[t]!.handles[r]! : -1;
    }
    return -1;
  };
  a.classes.forEach((ca, i) => {
    const cb = b.classes[i]!;
    const matchedBy = match.get(ca.name)!;
    const diff: ClassDiff = { objects: [ca.handles.length, cb.handles.length], matchedBy, fields: {} };
    classes[ca.name] = diff;
    if (matchedBy === 'none') {
      ok = false;
      return;
    }
    const n = ca.handles.length;
    ca.columns.forEach((col, k) => {
      const va = col.values;
      const vb = cb.columns[k]!.values;
      const f: FieldDiff = { kind: col.field.kind, maxAbs: 0, beyond: 0 };
      if (col.field.kind === 'ref') {
        const target = a.table.byClass(col.field.target!())!;
        const ids = new Set(target.concrete);
        const targets = a.classes.filter((c) => ids.has(c.type.id));
        const targetsB = b.classes.filter((c) => ids.has(c.type.id));
        for (let r = 0; r < n; r++) {
          const x = va[r]!;
          const y = vb[r]!;
          if (x === 0 || y === 0 ? x !== y : corresponding(x, targets, targetsB) !== y) f.beyond++;
        }
      } else {
        for (let r = 0; r < n; r++) {
          const x = va[r]!;
          const y = vb[r]!;
          if (x === y || (x !== x && y !== y)) continue; // equal, or both NaN
          const d = Math.abs(x - y);
          const dd = d !== d ? Infinity : d; // NaN against a number
          if (dd > f.maxAbs) f.maxAbs = dd;
          // An infinite difference (NaN or an infinity against another value) is beyond
          // every tolerance: the relative rule alone would accept ∞ ≤ rel · ∞.
          if (dd === Infinity || !(dd <= tol.abs || dd <= tol.rel * Math.max(Math.abs(x), Math.abs(y)))) f.beyond++;
        }
      }
      if (f.beyond > 0) ok = false;
      diff.fields[col.name] = f;
    });
  });
  return {
    ok,
    app: a.info.app,
    tolerance: tol,
    a: { dir: a.dir, iterations: a.info.iterations },
    b: { dir: b.dir, iterations: b.info.iterations },
    classes,
  };
}

/** The human report: one row per class and field. */
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
  const verdict = r.ok
    ? `OK: every field within tolerance (abs ${r.tolerance.abs}, rel ${r.tolerance.rel})`
    : `DIFFERENT: beyond tolerance (abs ${r.tolerance.abs}, rel ${r.tolerance.rel})`;
  return `${head}${note}\n\n${lines.join('\n')}\n\n${verdict}`;
}
