/**
 * The one comparator of two sets of objects, class by class and field by field: what
 * `smmo compare A B` (cli/compare.ts, two state directories) and `smmo run --check` /
 * crossCheck (cli/check.ts, a run against the TypeScript reference) both judge with. Its
 * input is columns as a state file holds them (runtime/state.ts ClassData: per concrete
 * class the handles ascending and one column per field and array element, bool as 0/1,
 * references as handles); readState gives them for a state directory, captureState for a
 * live runtime. A is the reference (the first state, or the TypeScript run), B the other.
 *
 * Rules (one set, for both commands):
 *
 *  - Classes are matched by name. A class present on one side only is listed in `missing`
 *    and makes the comparison fail (a state directory without one of its app's classes is
 *    already refused when read: readState). So is a column present on one side only or
 *    with another kind.
 *  - Objects: a class whose object counts differ is not compared field by field
 *    (`matchedBy: 'none'`) and fails whatever the tolerance. With equal counts objects are
 *    matched by handle when both sides hold the same handles, otherwise by rank: the i-th
 *    smallest handle of A with the i-th smallest of B (handles differ after --init, or
 *    when an allocator placed objects elsewhere in the same order). A class given a match
 *    key (`keys`: class name → column; an app's App.matchKeys) whose handles differ is
 *    matched by key instead: both sides' objects ordered by that column's value — for a
 *    reference, by the rank of the object it names among the objects of its matched
 *    classes, null first — ties in rank order, and paired in that order. That is what
 *    objects created on several threads need: their handles, and so their rank, depend on
 *    which thread allocated first, but a fish on cell 17 is the fish on cell 17
 *    (`matchedBy: 'key'`). A key is used only when the column exists on both sides and, for
 *    a reference, its target classes are matched by handle or rank; otherwise, and when
 *    the key pairs the objects as their ranks do, the class is matched by rank.
 *  - References are equal when both are null, or when B's points to the object matched
 *    with the target of A's (looked up in every concrete class the field may point to);
 *    a reference into a class whose counts differ cannot be matched and differs. No
 *    tolerance applies: a reference that differs is beyond every tolerance. Their maxAbs,
 *    scale and rel are 0; `beyond` counts them.
 *  - Numbers (bool as 0/1): a pair (a, b) is equal when a === b (so −0 equals 0) or both
 *    are NaN. Otherwise |Δ| = |a − b|, taken as +∞ when either side is NaN or infinite
 *    (NaN against a number, ±∞ against anything but itself). The field's scale is the
 *    largest finite |value| of the field on either side. A pair is within tolerance when
 *    |Δ| is finite and
 *        |Δ| ≤ abs   or   |Δ| ≤ rel · max(|a|, |b|)   or   |Δ| ≤ fieldRel · scale;
 *    an infinite |Δ| is beyond every tolerance (the relative rule alone would accept
 *    ∞ ≤ rel · ∞). With only fieldRel given, "every pair within" is the same as the
 *    field's rel = maxAbs / scale being ≤ fieldRel (the cross-check's per-field rule).
 *  - Per field: maxAbs = the largest |Δ|, rel = maxAbs / scale (0 when maxAbs is 0, +∞
 *    when the scale is 0 and maxAbs is not), beyond = pairs not within tolerance, worst =
 *    the first object (in handle order) whose |Δ| is maxAbs, with both handles and both
 *    values (references: the first that differs).
 *  - The comparison passes (`ok`) when nothing is missing, every class's counts agree and
 *    no field has a pair beyond tolerance. `worst` names the field ('Class.column') that
 *    fails first in the order: beyond tolerance before within, then larger rel; '' when
 *    no field differs at all.
 *
 * The default tolerance is each command's (exact for `smmo compare`, fieldRel 1e-4 for
 * --check: cli/check.ts DEFAULT_TOLERANCE); the rules do not change with the command.
 * The cross-check also compares the app's digest, which a state does not hold.
 */
import type { TypeTable } from './layout.js';
import type { ScalarKind } from './schema.js';
import { indexOfSorted } from './sorted.js';
import type { ClassData } from './state.js';

/** Tolerances, each ≥ 0 and finite (0: that rule accepts only equal values). */
export interface Tolerance {
  /** Absolute: |Δ| ≤ abs. */
  abs: number;
  /** Relative to the pair: |Δ| ≤ rel · max(|a|, |b|). */
  rel: number;
  /** Relative to the field: |Δ| ≤ fieldRel · scale (the field's largest finite |value|). */
  fieldRel: number;
}

export const EXACT: Readonly<Tolerance> = { abs: 0, rel: 0, fieldRel: 0 };

/** The cross-check's tolerance: the comparator's, and the app digest's (which a state does not hold). */
export interface CheckTolerance extends Tolerance {
  /** |Δdigest| / max(|digest|, 1) ≤ digestRel. */
  digestRel: number;
}

/** `smmo run --check` and crossCheck by default (cli/check.ts explains the numbers). */
export const DEFAULT_CHECK_TOLERANCE: Readonly<CheckTolerance> = { abs: 0, rel: 0, fieldRel: 1e-4, digestRel: 1e-5 };

/** One side of a comparison: a state as read (LoadedState) or captured from a runtime. */
export interface ColumnSet {
  /** Concrete classes; handles ascending, row r of every column belongs to handles[r]. */
  classes: readonly ClassData[];
  /** The classes' table, for the classes a reference may point to. */
  table: TypeTable;
}

/** The object where a field differs most. */
export interface WorstObject {
  /** Its handle in A, and the handle of the object it is matched with in B. */
  handleA: number;
  handleB: number;
  /** The two values (references: the two handles, 0 = null). */
  a: number;
  b: number;
}

export interface FieldDiff {
  kind: ScalarKind;
  /** Largest |a − b| over matched objects (+∞ for NaN or an infinity against another value; 0 for references). */
  maxAbs: number;
  /** Largest finite |value| of the field on either side (0 for references). */
  scale: number;
  /** maxAbs / scale (0 when maxAbs is 0; +∞ when scale is 0 and maxAbs is not). */
  rel: number;
  /** Objects whose values differ beyond the tolerance (references: that differ at all). */
  beyond: number;
  /** The object with the largest difference; null when none differs. */
  worst: WorstObject | null;
}

export interface ClassDiff {
  /** Object counts in A and B. */
  objects: [number, number];
  /** 'handle' | 'rank' | 'key' | 'none' (object counts differ: fields not compared). */
  matchedBy: 'handle' | 'rank' | 'key' | 'none';
  /** Column name → difference. */
  fields: Record<string, FieldDiff>;
}

export interface ColumnsDiff {
  ok: boolean;
  tolerance: Tolerance;
  /** Class name → difference (classes of A, in A's order; those of B only are in `missing`). */
  classes: Record<string, ClassDiff>;
  /** Classes and columns present on one side only, or of another kind: 'Fish: only in A'. */
  missing: string[];
  /** 'Class.column' of the worst field ('' when no field differs). */
  worst: string;
}

/** |a − b| as the rules take it: 0 for equal values and two NaNs, +∞ when NaN or an infinity meets another value. */
export function valueDiff(a: number, b: number): number {
  if (a === b || (a !== a && b !== b)) return 0;
  const d = Math.abs(a - b);
  return d === d ? d : Infinity; // NaN − x is NaN; ∞ − ∞ of one sign never gets here (a === b)
}

/** Whether the pair (a, b) of a field of scale `scale` is within `tol` (the rules above). */
export function withinTolerance(a: number, b: number, scale: number, tol: Tolerance): boolean {
  const d = valueDiff(a, b);
  if (d === 0) return true;
  if (d === Infinity) return false;
  return d <= tol.abs || d <= tol.rel * Math.max(Math.abs(a), Math.abs(b)) || d <= tol.fieldRel * scale;
}

/**
 * Match keys: class name → the column (a number or a reference) that names an object of
 * that class on both sides, or several columns compared in turn (a quadtree node by its
 * square's corners).
 */
export type MatchKeys = Readonly<Record<string, string | readonly string[]>>;

/** Compare B with A (the reference) under `tol`: see the rules above. */
export function compareColumns(a: ColumnSet, b: ColumnSet, tol: Tolerance, keys: MatchKeys = {}): ColumnsDiff {
  for (const k of ['abs', 'rel', 'fieldRel'] as const) {
    if (!(tol[k] >= 0 && Number.isFinite(tol[k])))
      throw new RangeError(`compareColumns: tolerance ${k} must be a finite number ≥ 0, got ${tol[k]}`);
  }
  const bByName = new Map(b.classes.map((c) => [c.name, c]));
  const aNames = new Set(a.classes.map((c) => c.name));
  const missing: string[] = [];
  for (const c of a.classes) if (!bByName.has(c.name)) missing.push(`${c.name}: only in A`);
  for (const c of b.classes) if (!aNames.has(c.name)) missing.push(`${c.name}: only in B`);

  // How each class's objects match, for the fields and for references into it.
  const match = new Map<string, 'handle' | 'rank' | 'key' | 'none'>();
  for (const ca of a.classes) {
    const cb = bByName.get(ca.name);
    if (cb === undefined) continue;
    const n = ca.handles.length;
    const same = n === cb.handles.length && ca.handles.every((h, k) => h === cb.handles[k]);
    match.set(ca.name, same ? 'handle' : n === cb.handles.length ? 'rank' : 'none');
  }
  // Classes matched by key: B's row of each A row (after the handle and rank matches, which the keys may read).
  const perms = new Map<string, Int32Array>();
  for (const ca of a.classes) {
    const key = keys[ca.name];
    const cb = bByName.get(ca.name);
    if (key === undefined || cb === undefined || match.get(ca.name) !== 'rank') continue;
    const perm = keyMatch(a, b, ca, cb, key, match);
    if (perm === null) continue;
    perms.set(ca.name, perm);
    match.set(ca.name, 'key');
  }
  /** B's handle of the object matched with A's object `h` (a reference's target) among `targets`, or -1. */
  const corresponding = (h: number, targets: readonly ClassData[]): number => {
    for (const t of targets) {
      const r = indexOfSorted(t.handles, h);
      if (r < 0) continue;
      const how = match.get(t.name);
      const tb = bByName.get(t.name);
      if (how === 'handle') return h;
      if (how === 'rank') return tb!.handles[r]!;
      if (how === 'key') return tb!.handles[perms.get(t.name)![r]!]!;
      return -1;
    }
    return -1;
  };

  const classes: Record<string, ClassDiff> = {};
  let ok = missing.length === 0;
  let worst = '';
  let worstKey: [number, number] = [-1, -1];
  for (const ca of a.classes) {
    const cb = bByName.get(ca.name);
    if (cb === undefined) continue;
    const matchedBy = match.get(ca.name)!;
    const diff: ClassDiff = { objects: [ca.handles.length, cb.handles.length], matchedBy, fields: {} };
    classes[ca.name] = diff;
    if (matchedBy === 'none') {
      ok = false;
      continue;
    }
    const colsB = new Map(cb.columns.map((c) => [c.name, c]));
    for (const col of ca.columns) {
      const other = colsB.get(col.name);
      if (other === undefined || other.field.kind !== col.field.kind) {
        missing.push(`${ca.name}.${col.name}: ${other === undefined ? 'only in A' : `${col.field.kind} in A, ${other.field.kind} in B`}`);
        ok = false;
        continue;
      }
      const perm = perms.get(ca.name) ?? null;
      const f =
        col.field.kind === 'ref'
          ? compareRefs(ca, cb, col.values, other.values, targetsOf(a, col.field.target!), corresponding, perm)
          : compareNumbers(col.field.kind, ca, cb, col.values, other.values, tol, perm);
      diff.fields[col.name] = f;
      if (f.beyond > 0) ok = false;
      if (f.maxAbs === 0 && f.beyond === 0) continue;
      const key: [number, number] = [f.beyond > 0 ? 1 : 0, f.rel];
      if (key[0] > worstKey[0] || (key[0] === worstKey[0] && key[1] > worstKey[1])) {
        worstKey = key;
        worst = `${ca.name}.${col.name}`;
      }
    }
    for (const col of cb.columns) {
      if (!ca.columns.some((c) => c.name === col.name)) {
        missing.push(`${ca.name}.${col.name}: only in B`);
        ok = false;
      }
    }
  }
  return { ok, tolerance: { abs: tol.abs, rel: tol.rel, fieldRel: tol.fieldRel }, classes, missing, worst };
}

/** A's classes a reference field may point to (the target class and its concrete subclasses). */
function targetsOf(a: ColumnSet, target: NonNullable<ClassData['columns'][number]['field']['target']>): ClassData[] {
  const t = a.table.byClass(target());
  const names = new Set((t?.concrete ?? []).map((id) => a.table.types[id]!.name));
  return a.classes.filter((c) => names.has(c.name));
}

type Values = ArrayLike<number>;

/**
 * B's row for each A row of a class matched by `key` (the rules above), or null when the key
 * cannot be used (no such column on both sides, a reference into classes not matched by
 * handle or rank) or pairs the objects as rank does (the class is then said to be
 * matched by rank).
 */
function keyMatch(
  a: ColumnSet,
  b: ColumnSet,
  ca: ClassData,
  cb: ClassData,
  key: string | readonly string[],
  match: ReadonlyMap<string, 'handle' | 'rank' | 'key' | 'none'>,
): Int32Array | null {
  const keysA: Float64Array[] = [];
  const keysB: Float64Array[] = [];
  for (const name of typeof key === 'string' ? [key] : key) {
    const colA = ca.columns.find((c) => c.name === name);
    const colB = cb.columns.find((c) => c.name === name);
    if (colA === undefined || colB === undefined || colA.field.kind !== colB.field.kind) return null;
    if (colA.field.kind === 'ref') {
      const targetsA = targetsOf(a, colA.field.target!);
      if (targetsA.some((t) => match.get(t.name) !== 'handle' && match.get(t.name) !== 'rank')) return null;
      const byName = new Map(b.classes.map((c) => [c.name, c]));
      const targetsB = targetsA.map((t) => byName.get(t.name)!);
      keysA.push(refKeys(colA.values, targetsA));
      keysB.push(refKeys(colB.values, targetsB));
    } else {
      keysA.push(Float64Array.from(colA.values));
      keysB.push(Float64Array.from(colB.values));
    }
  }
  if (keysA.length === 0) return null;
  // Rows ordered by the key columns in turn, then by rank.
  const order = (ks: readonly Float64Array[]): Int32Array =>
    Int32Array.from(ks[0]!.keys()).sort((x, y) => {
      for (const k of ks) if (k[x]! !== k[y]!) return k[x]! < k[y]! ? -1 : 1;
      return x - y;
    });
  const oa = order(keysA);
  const ob = order(keysB);
  const perm = new Int32Array(oa.length);
  let identity = true;
  for (let i = 0; i < oa.length; i++) {
    perm[oa[i]!] = ob[i]!;
    if (oa[i] !== ob[i]) identity = false;
  }
  return identity ? null : perm; // the key pairs the objects as their ranks do: 'rank'
}

/** A reference column as sortable keys: the position of the named object among `targets` (class by class, by rank), −1 for null or an object in none of them. */
function refKeys(values: Values, targets: readonly ClassData[]): Float64Array {
  const out = new Float64Array(values.length);
  for (let r = 0; r < values.length; r++) {
    const h = values[r]!;
    let k = -1;
    let before = 0;
    for (const t of targets) {
      const i = h === 0 ? -1 : indexOfSorted(t.handles, h);
      if (i >= 0) {
        k = before + i;
        break;
      }
      before += t.handles.length;
    }
    out[r] = k;
  }
  return out;
}

function compareNumbers(
  kind: ScalarKind,
  ca: ClassData,
  cb: ClassData,
  va: Values,
  vb: Values,
  tol: Tolerance,
  perm: Int32Array | null,
): FieldDiff {
  const n = ca.handles.length;
  let scale = 0;
  for (const v of [va, vb]) {
    for (let r = 0; r < n; r++) {
      const x = Math.abs(v[r]!);
      if (x > scale && x !== Infinity) scale = x;
    }
  }
  const f: FieldDiff = { kind, maxAbs: 0, scale, rel: 0, beyond: 0, worst: null };
  for (let r = 0; r < n; r++) {
    const rb = perm === null ? r : perm[r]!;
    const x = va[r]!;
    const y = vb[rb]!;
    const d = valueDiff(x, y);
    if (d === 0) continue;
    if (d > f.maxAbs) {
      f.maxAbs = d;
      f.worst = { handleA: ca.handles[r]!, handleB: cb.handles[rb]!, a: x, b: y };
    }
    if (!withinTolerance(x, y, scale, tol)) f.beyond++;
  }
  f.rel = f.maxAbs === 0 ? 0 : scale === 0 ? Infinity : f.maxAbs / scale;
  return f;
}

function compareRefs(
  ca: ClassData,
  cb: ClassData,
  va: Values,
  vb: Values,
  targets: readonly ClassData[],
  corresponding: (h: number, targets: readonly ClassData[]) => number,
  perm: Int32Array | null,
): FieldDiff {
  const f: FieldDiff = { kind: 'ref', maxAbs: 0, scale: 0, rel: 0, beyond: 0, worst: null };
  for (let r = 0; r < ca.handles.length; r++) {
    const rb = perm === null ? r : perm[r]!;
    const x = va[r]!;
    const y = vb[rb]!;
    if (x === 0 || y === 0 ? x === y : corresponding(x, targets) === y) continue;
    f.beyond++;
    f.worst ??= { handleA: ca.handles[r]!, handleB: cb.handles[rb]!, a: x, b: y };
  }
  return f;
}

/**
 * A field's difference in one line, e.g. `max |Δ| 2.00e+0  scale 8.00e+0  rel 2.50e-1  1 beyond
 * (handle 33: ts 6, gpu 8)`; `sides` names A and B. References: how many differ and the first.
 */
export function formatFieldDiff(d: FieldDiff, sides: readonly [string, string] = ['A', 'B']): string {
  const w = d.worst;
  const handle = w === null ? '' : w.handleA === w.handleB ? `handle ${w.handleA}` : `handle ${w.handleA} / ${w.handleB}`;
  if (d.kind === 'ref') {
    return d.beyond === 0
      ? 'references equal'
      : `${d.beyond} reference(s) differ (${handle}: ${sides[0]} → ${w!.a}, ${sides[1]} → ${w!.b})`;
  }
  const beyond = d.beyond > 0 ? `  ${d.beyond} beyond` : '';
  const worst = w === null ? '' : `  (${handle}: ${sides[0]} ${w.a}, ${sides[1]} ${w.b})`;
  return `max |Δ| ${d.maxAbs.toExponential(2)}  scale ${d.scale.toExponential(2)}  rel ${d.rel.toExponential(2)}${beyond}${worst}`;
}

/** A cross-check's tolerance in words: 'field rel ≤ 0.0001, digest rel ≤ 0.00001' (abs and rel only when set). */
export function formatCheckTolerance(t: CheckTolerance): string {
  const parts = [
    t.abs > 0 ? `abs ≤ ${t.abs}` : '',
    t.rel > 0 ? `rel ≤ ${t.rel}` : '',
    `field rel ≤ ${t.fieldRel}`,
    `digest rel ≤ ${t.digestRel}`,
  ];
  return parts.filter(Boolean).join(', ');
}
