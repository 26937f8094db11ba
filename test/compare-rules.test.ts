/**
 * The comparator's rules (runtime/compare.ts header) on hand-made column sets, calling
 * compareColumns and the formatters directly: no runtime, no state files, no CLI. What
 * the other compare tests cannot reach through readState (it refuses a state without one
 * of its app's classes or columns) is built here: classes and columns on one side only or
 * of another kind, the tolerance's validation, the order that names the worst field, the
 * worst object, the field's scale, references into classes matched in each way; and the
 * exact text of the lines `smmo compare` and `smmo run --check` print (the CLI contract).
 */
import test from 'ava';
import { compareHelp, compareLoaded, formatCompare, type CompareReport } from '../cli/compare.js';
import {
  compareColumns,
  DEFAULT_CHECK_TOLERANCE,
  EXACT,
  formatCheckTolerance,
  formatFieldDiff,
  withinTolerance,
  type ColumnSet,
  type FieldDiff,
  type Tolerance,
} from '../runtime/compare.js';
import type { TypeTable } from '../runtime/layout.js';
import type { ScalarKind } from '../runtime/schema.js';
import type { ClassData, ColumnData, LoadedState } from '../runtime/state.js';

/** Stand-ins for the classes a reference field points to (the fake table below resolves them). */
const CELL = { name: 'Cell' };
const ANIMAL = { name: 'Animal' };
/** Nothing in the table: a reference to it has no target class. */
const STRAY = { name: 'Stray' };

/** A table whose classes are Cell (concrete: Cell) and Animal (concrete: Fish, Shark). */
const TABLE = ((): TypeTable => {
  const types = [{ name: 'Cell' }, { name: 'Fish' }, { name: 'Shark' }];
  const concrete = new Map<object, number[]>([
    [CELL, [0]],
    [ANIMAL, [1, 2]],
  ]);
  return {
    types,
    byClass: (c: object) => (concrete.has(c) ? { concrete: concrete.get(c)! } : undefined),
  } as unknown as TypeTable;
})();

type Col = [ScalarKind, number[]] | ['ref', number[], object];

/** A concrete class: its handles (ascending) and one column per field. */
function cls(name: string, handles: number[], columns: Record<string, Col> = {}): ClassData {
  return {
    name,
    file: `${name}.arrow`,
    handles: Uint32Array.from(handles),
    columns: Object.entries(columns).map(
      ([col, [kind, values, target]]) =>
        ({
          name: col,
          field: target === undefined ? { kind } : { kind, target: () => target },
          element: 0,
          offset: 0,
          values: Float64Array.from(values),
        }) as unknown as ColumnData,
    ),
  } as unknown as ClassData;
}

function set(...classes: ClassData[]): ColumnSet {
  return { classes, table: TABLE };
}

function tol(t: Partial<Tolerance> = {}): Tolerance {
  return { ...EXACT, ...t };
}

// ------------------------------------------------------------------ the tolerance

test('a tolerance negative, infinite or NaN is refused with a RangeError naming the rule and the value; 0 and finite values pass', (t) => {
  const one = set(cls('Fish', [1], { x: ['f64', [1]] }));
  for (const k of ['abs', 'rel', 'fieldRel'] as const) {
    for (const [bad, text] of [
      [-1, '-1'],
      [-1e-300, '-1e-300'],
      [Infinity, 'Infinity'],
      [-Infinity, '-Infinity'],
      [NaN, 'NaN'],
    ] as const) {
      t.throws(() => compareColumns(one, one, tol({ [k]: bad })), {
        instanceOf: RangeError,
        message: `compareColumns: tolerance ${k} must be a finite number ≥ 0, got ${text}`,
      });
    }
    t.true(compareColumns(one, one, tol({ [k]: 0 })).ok);
    t.true(compareColumns(one, one, tol({ [k]: 1e300 })).ok);
  }
  // The report carries the tolerance it judged with.
  t.deepEqual(compareColumns(one, one, { abs: 0.5, rel: 0.25, fieldRel: 0.125 }).tolerance, { abs: 0.5, rel: 0.25, fieldRel: 0.125 });
});

test("the defaults: exact, and the cross-check's fieldRel 1e-4 and digestRel 1e-5", (t) => {
  t.deepEqual({ ...EXACT }, { abs: 0, rel: 0, fieldRel: 0 });
  t.deepEqual({ ...DEFAULT_CHECK_TOLERANCE }, { abs: 0, rel: 0, fieldRel: 1e-4, digestRel: 1e-5 });
});

test('withinTolerance: equal values and two NaNs are within even an exact tolerance; infinities only against themselves', (t) => {
  t.true(withinTolerance(3, 3, 3, EXACT));
  t.true(withinTolerance(0, -0, 0, EXACT));
  t.true(withinTolerance(NaN, NaN, 0, EXACT));
  t.true(withinTolerance(Infinity, Infinity, 0, EXACT));
  t.false(withinTolerance(Infinity, -Infinity, 0, tol({ abs: 1e300, rel: 1e300, fieldRel: 1e300 })));
  t.false(withinTolerance(1, NaN, 1, tol({ abs: 1e300, rel: 1e300, fieldRel: 1e300 })));
  t.false(withinTolerance(1, 2, 2, EXACT));
  t.true(withinTolerance(1, 2, 2, tol({ abs: 1 })));
  t.true(withinTolerance(1, 2, 2, tol({ rel: 0.5 })));
  t.true(withinTolerance(1, 2, 4, tol({ fieldRel: 0.25 })));
  t.false(withinTolerance(1, 2, 4, tol({ fieldRel: 0.24 })));
});

// ------------------------------------------------------------------ classes and columns on one side only

test('a class on one side only is listed in missing ("only in A" / "only in B") and fails; the other classes are still compared', (t) => {
  const a = set(cls('Cell', [1, 2], { v: ['u32', [1, 2]] }), cls('Fish', [3], { x: ['f32', [1]] }));
  const b = set(cls('Cell', [1, 2], { v: ['u32', [1, 2]] }), cls('Shark', [4], { e: ['u32', [5]] }));
  const d = compareColumns(a, b, EXACT);
  t.false(d.ok);
  t.deepEqual(d.missing, ['Fish: only in A', 'Shark: only in B']);
  t.deepEqual(Object.keys(d.classes), ['Cell']);
  t.deepEqual(d.classes['Cell']!.objects, [2, 2]);
  t.is(d.classes['Cell']!.matchedBy, 'handle');
  t.is(d.worst, '');
  // Each side alone.
  const onlyA = compareColumns(a, set(cls('Cell', [1, 2], { v: ['u32', [1, 2]] })), EXACT);
  t.deepEqual([onlyA.ok, onlyA.missing], [false, ['Fish: only in A']]);
  const onlyB = compareColumns(set(cls('Cell', [1, 2], { v: ['u32', [1, 2]] })), b, EXACT);
  t.deepEqual([onlyB.ok, onlyB.missing], [false, ['Shark: only in B']]);
});

test('a column on one side only, or of another kind, is listed in missing and fails; it is not compared, the others are', (t) => {
  const a = set(cls('Fish', [1, 2], { x: ['f32', [1, 2]], y: ['f32', [3, 4]], age: ['u32', [5, 6]] }));
  const onlyInA = compareColumns(a, set(cls('Fish', [1, 2], { x: ['f32', [1, 2]], age: ['u32', [5, 6]] })), EXACT);
  t.false(onlyInA.ok);
  t.deepEqual(onlyInA.missing, ['Fish.y: only in A']);
  t.deepEqual(Object.keys(onlyInA.classes['Fish']!.fields), ['x', 'age']);
  t.is(onlyInA.worst, '');

  const otherKind = compareColumns(a, set(cls('Fish', [1, 2], { x: ['f32', [1, 2]], y: ['f64', [3, 4]], age: ['i32', [5, 6]] })), EXACT);
  t.false(otherKind.ok);
  t.deepEqual(otherKind.missing, ['Fish.y: f32 in A, f64 in B', 'Fish.age: u32 in A, i32 in B']);
  t.deepEqual(Object.keys(otherKind.classes['Fish']!.fields), ['x']);

  const onlyInB = compareColumns(
    set(cls('Fish', [1, 2], { x: ['f32', [1, 2]] })),
    set(cls('Fish', [1, 2], { x: ['f32', [1, 2]], y: ['f32', [3, 4]] })),
    EXACT,
  );
  t.false(onlyInB.ok);
  t.deepEqual(onlyInB.missing, ['Fish.y: only in B']);
  t.deepEqual(Object.keys(onlyInB.classes['Fish']!.fields), ['x']);
});

test('equal sets of several classes and columns: ok, nothing missing, no worst field, every field 0', (t) => {
  const make = (): ColumnSet =>
    set(
      cls('Cell', [1, 2], { v: ['u32', [0, 0]], w: ['f64', [0, 0]] }),
      cls('Fish', [3, 4], { x: ['f32', [1.5, -2]], y: ['f32', [0, 7]], home: ['ref', [1, 0], CELL] }),
    );
  const d = compareColumns(make(), make(), EXACT);
  t.true(d.ok);
  t.deepEqual(d.missing, []);
  t.is(d.worst, '');
  t.deepEqual(d.classes['Cell']!.fields['v'], { kind: 'u32', maxAbs: 0, scale: 0, rel: 0, beyond: 0, worst: null });
  t.deepEqual(d.classes['Cell']!.fields['w'], { kind: 'f64', maxAbs: 0, scale: 0, rel: 0, beyond: 0, worst: null });
  t.deepEqual(d.classes['Fish']!.fields['y'], { kind: 'f32', maxAbs: 0, scale: 7, rel: 0, beyond: 0, worst: null });
  t.deepEqual(d.classes['Fish']!.fields['home'], { kind: 'ref', maxAbs: 0, scale: 0, rel: 0, beyond: 0, worst: null });
});

// ------------------------------------------------------------------ the worst field

/** Field `within`: |Δ| 1 ≤ abs 1, rel 1/1 = 1. Field `beyond`: |Δ| 2 > abs 1, rel 2/102. */
const WITHIN: Col = ['f64', [0, 1]];
const WITHIN_B: Col = ['f64', [1, 1]];
const BEYOND: Col = ['f64', [100, 0]];
const BEYOND_B: Col = ['f64', [102, 0]];

test('the worst field: beyond tolerance before within, whatever the rel, in either column order', (t) => {
  for (const order of [
    ['within', 'beyond'],
    ['beyond', 'within'],
  ]) {
    const colsA: Record<string, Col> = {};
    const colsB: Record<string, Col> = {};
    for (const c of order) {
      colsA[c] = c === 'within' ? WITHIN : BEYOND;
      colsB[c] = c === 'within' ? WITHIN_B : BEYOND_B;
    }
    const d = compareColumns(set(cls('Fish', [1, 2], colsA)), set(cls('Fish', [1, 2], colsB)), tol({ abs: 1 }));
    t.false(d.ok, order.join());
    t.is(d.worst, 'Fish.beyond', order.join());
    t.is(d.classes['Fish']!.fields['within']!.beyond, 0);
    t.is(d.classes['Fish']!.fields['within']!.rel, 1);
    t.is(d.classes['Fish']!.fields['beyond']!.beyond, 1);
    t.is(d.classes['Fish']!.fields['beyond']!.rel, 2 / 102);
  }
  // Across classes too: the beyond field of a later class wins over a within field of an earlier one.
  const d = compareColumns(
    set(cls('Cell', [1, 2], { w: WITHIN }), cls('Fish', [3, 4], { b: BEYOND })),
    set(cls('Cell', [1, 2], { w: WITHIN_B }), cls('Fish', [3, 4], { b: BEYOND_B })),
    tol({ abs: 1 }),
  );
  t.is(d.worst, 'Fish.b');
});

test('the worst field: among fields within (or among fields beyond), the larger rel; the first of equal rels', (t) => {
  // All within abs 10: p has rel 1/4, q rel 1/2, r rel 1/2 (a tie with q, after it).
  const a = set(cls('Fish', [1, 2], { p: ['f64', [4, 0]], q: ['f64', [2, 0]], r: ['f64', [4, 0]] }));
  const b = set(cls('Fish', [1, 2], { p: ['f64', [3, 0]], q: ['f64', [1, 0]], r: ['f64', [2, 0]] }));
  const within = compareColumns(a, b, tol({ abs: 10 }));
  t.true(within.ok);
  t.deepEqual(
    Object.values(within.classes['Fish']!.fields).map((f) => f.rel),
    [0.25, 0.5, 0.5],
  );
  t.is(within.worst, 'Fish.q');
  // The same differences, all beyond an exact tolerance: the same order.
  const beyond = compareColumns(a, b, EXACT);
  t.false(beyond.ok);
  t.is(beyond.worst, 'Fish.q');
  // Larger rel later in the columns.
  const later = compareColumns(
    set(cls('Fish', [1], { p: ['f64', [4]], q: ['f64', [4]] })),
    set(cls('Fish', [1], { p: ['f64', [3]], q: ['f64', [2]] })),
    tol({ abs: 10 }),
  );
  t.is(later.worst, 'Fish.q');
});

test('the worst field: a field that differs only within tolerance is named; a reference that differs (maxAbs 0) is named', (t) => {
  const d = compareColumns(
    set(cls('Fish', [1, 2], { same: ['u32', [1, 2]], x: ['f64', [1, 2]] })),
    set(cls('Fish', [1, 2], { same: ['u32', [1, 2]], x: ['f64', [1, 2.5]] })),
    tol({ abs: 1 }),
  );
  t.true(d.ok);
  t.is(d.worst, 'Fish.x');

  const r = compareColumns(
    set(cls('Cell', [1, 2]), cls('Fish', [3], { home: ['ref', [1], CELL], same: ['u32', [7]] })),
    set(cls('Cell', [1, 2]), cls('Fish', [3], { home: ['ref', [2], CELL], same: ['u32', [7]] })),
    EXACT,
  );
  t.false(r.ok);
  t.is(r.worst, 'Fish.home');
  t.deepEqual(r.classes['Fish']!.fields['home'], {
    kind: 'ref',
    maxAbs: 0,
    scale: 0,
    rel: 0,
    beyond: 1,
    worst: { handleA: 3, handleB: 3, a: 1, b: 2 },
  });
});

// ------------------------------------------------------------------ numbers: scale, rel, the worst object

test('scale is the largest finite |value| on either side: an infinity (equal on both sides) does not count', (t) => {
  const d = compareColumns(
    set(cls('Body', [1, 2, 3], { m: ['f64', [Infinity, -2, -Infinity]] })),
    set(cls('Body', [1, 2, 3], { m: ['f64', [Infinity, -3, -Infinity]] })),
    tol({ fieldRel: 1 / 3 }),
  );
  const m = d.classes['Body']!.fields['m']!;
  t.deepEqual(m, { kind: 'f64', maxAbs: 1, scale: 3, rel: 1 / 3, beyond: 0, worst: { handleA: 2, handleB: 2, a: -2, b: -3 } });
  t.true(d.ok);
  // Just below that field-rel, the pair is beyond.
  t.false(
    compareColumns(
      set(cls('Body', [1, 2, 3], { m: ['f64', [Infinity, -2, -Infinity]] })),
      set(cls('Body', [1, 2, 3], { m: ['f64', [Infinity, -3, -Infinity]] })),
      tol({ fieldRel: 0.33 }),
    ).ok,
  );
});

test('rel: 0 when nothing differs even at scale 0; +∞ when the scale is 0 and maxAbs is not', (t) => {
  const zeros = compareColumns(set(cls('Cell', [1, 2], { v: ['u32', [0, 0]] })), set(cls('Cell', [1, 2], { v: ['u32', [0, 0]] })), EXACT);
  t.is(zeros.classes['Cell']!.fields['v']!.rel, 0);
  const nan = compareColumns(set(cls('Cell', [1], { v: ['f64', [NaN]] })), set(cls('Cell', [1], { v: ['f64', [0]] })), EXACT);
  t.deepEqual(nan.classes['Cell']!.fields['v'], {
    kind: 'f64',
    maxAbs: Infinity,
    scale: 0,
    rel: Infinity,
    beyond: 1,
    worst: { handleA: 1, handleB: 1, a: NaN, b: 0 },
  });
});

test('the worst object is the first (in handle order) whose |Δ| is maxAbs; its handles in A and B under rank matching', (t) => {
  const d = compareColumns(
    set(cls('Fish', [10, 20, 30, 40], { x: ['f64', [0, 5, 1, 9]] })),
    set(cls('Fish', [11, 21, 31, 41], { x: ['f64', [1, 3, 3, 9]] })),
    EXACT,
  );
  t.is(d.classes['Fish']!.matchedBy, 'rank');
  t.deepEqual(d.classes['Fish']!.fields['x'], {
    kind: 'f64',
    maxAbs: 2,
    scale: 9,
    rel: 2 / 9,
    beyond: 3,
    worst: { handleA: 20, handleB: 21, a: 5, b: 3 },
  });
});

// ------------------------------------------------------------------ references

test('references: null equals null; null against an object differs; the worst is the first that differs', (t) => {
  const d = compareColumns(
    set(cls('Cell', [1, 2]), cls('Fish', [3, 4, 5, 6], { home: ['ref', [0, 1, 0, 2], CELL] })),
    set(cls('Cell', [1, 2]), cls('Fish', [3, 4, 5, 6], { home: ['ref', [0, 0, 2, 2], CELL] })),
    EXACT,
  );
  t.deepEqual(d.classes['Fish']!.fields['home'], {
    kind: 'ref',
    maxAbs: 0,
    scale: 0,
    rel: 0,
    beyond: 2,
    worst: { handleA: 4, handleB: 4, a: 1, b: 0 },
  });
  const nulls = compareColumns(
    set(cls('Cell', [1]), cls('Fish', [3, 4], { home: ['ref', [0, 0], CELL] })),
    set(cls('Cell', [1]), cls('Fish', [3, 4], { home: ['ref', [0, 0], CELL] })),
    EXACT,
  );
  t.true(nulls.ok);
  t.is(nulls.classes['Fish']!.fields['home']!.beyond, 0);
});

test('references into a class whose counts differ never match, even when B holds the handle 1', (t) => {
  const d = compareColumns(
    set(cls('Cell', [1, 2]), cls('Fish', [3], { home: ['ref', [1], CELL] })),
    set(cls('Cell', [1, 2, 5]), cls('Fish', [3], { home: ['ref', [1], CELL] })),
    EXACT,
  );
  t.is(d.classes['Cell']!.matchedBy, 'none');
  t.is(d.classes['Fish']!.fields['home']!.beyond, 1);
  t.false(d.ok);
});

test('a reference is looked up only in the classes the field may point to: a handle of another class, or none, matches nothing', (t) => {
  // Fish.home points to Cell; A's value 7 is a Shark's handle (and B's too): not a Cell, so it differs.
  const a = set(cls('Cell', [1, 2]), cls('Fish', [3], { home: ['ref', [7], CELL] }), cls('Shark', [7]));
  const b = set(cls('Cell', [1, 2]), cls('Fish', [3], { home: ['ref', [7], CELL] }), cls('Shark', [7]));
  t.is(compareColumns(a, b, EXACT).classes['Fish']!.fields['home']!.beyond, 1);
  // A's value is nobody's handle, B's is 1: no match either.
  const c = compareColumns(
    set(cls('Cell', [2, 4]), cls('Fish', [3], { home: ['ref', [9], CELL] })),
    set(cls('Cell', [2, 4]), cls('Fish', [3], { home: ['ref', [1], CELL] })),
    EXACT,
  );
  t.is(c.classes['Fish']!.fields['home']!.beyond, 1);
  // An abstract target: the reference is found in whichever concrete subclass holds it.
  const pet = compareColumns(
    set(cls('Cell', [1], { pet: ['ref', [8], ANIMAL] }), cls('Fish', [5]), cls('Shark', [8])),
    set(cls('Cell', [1], { pet: ['ref', [8], ANIMAL] }), cls('Fish', [5]), cls('Shark', [8])),
    EXACT,
  );
  t.true(pet.ok);
  // A target class the table does not know: no object can match, so every non-null reference differs.
  const stray = compareColumns(
    set(cls('Cell', [1, 2], { s: ['ref', [1, 0], STRAY] })),
    set(cls('Cell', [1, 2], { s: ['ref', [1, 0], STRAY] })),
    EXACT,
  );
  t.deepEqual(
    [stray.ok, stray.classes['Cell']!.fields['s']!.beyond, stray.classes['Cell']!.fields['s']!.worst],
    [false, 1, { handleA: 1, handleB: 1, a: 1, b: 1 }],
  );
});

// ------------------------------------------------------------------ the lines printed

const NUM: FieldDiff = { kind: 'f32', maxAbs: 2, scale: 8, rel: 0.25, beyond: 1, worst: { handleA: 33, handleB: 33, a: 6, b: 8 } };

test('formatFieldDiff: numbers, with and without objects beyond, the worst object at one handle or two, no worst', (t) => {
  t.is(formatFieldDiff(NUM, ['ts', 'gpu']), 'max |Δ| 2.00e+0  scale 8.00e+0  rel 2.50e-1  1 beyond  (handle 33: ts 6, gpu 8)');
  t.is(formatFieldDiff(NUM), 'max |Δ| 2.00e+0  scale 8.00e+0  rel 2.50e-1  1 beyond  (handle 33: A 6, B 8)');
  t.is(
    formatFieldDiff({ ...NUM, beyond: 0, worst: { handleA: 33, handleB: 65, a: 6, b: 8 } }),
    'max |Δ| 2.00e+0  scale 8.00e+0  rel 2.50e-1  (handle 33 / 65: A 6, B 8)',
  );
  t.is(formatFieldDiff({ ...NUM, maxAbs: 0, rel: 0, beyond: 0, worst: null }), 'max |Δ| 0.00e+0  scale 8.00e+0  rel 0.00e+0');
});

test('formatFieldDiff: references equal, or how many differ and the first (arrows to the handles)', (t) => {
  const ref: FieldDiff = { kind: 'ref', maxAbs: 0, scale: 0, rel: 0, beyond: 0, worst: null };
  t.is(formatFieldDiff(ref), 'references equal');
  t.is(
    formatFieldDiff({ ...ref, beyond: 2, worst: { handleA: 3, handleB: 5, a: 7, b: 0 } }, ['ts', 'gpu']),
    '2 reference(s) differ (handle 3 / 5: ts → 7, gpu → 0)',
  );
  t.is(
    formatFieldDiff({ ...ref, beyond: 1, worst: { handleA: 3, handleB: 3, a: 7, b: 9 } }),
    '1 reference(s) differ (handle 3: A → 7, B → 9)',
  );
});

test('formatCheckTolerance: field rel and digest rel always, abs and rel only when set', (t) => {
  t.is(formatCheckTolerance(DEFAULT_CHECK_TOLERANCE), 'field rel ≤ 0.0001, digest rel ≤ 0.00001');
  t.is(formatCheckTolerance({ abs: 0.5, rel: 0, fieldRel: 0, digestRel: 0 }), 'abs ≤ 0.5, field rel ≤ 0, digest rel ≤ 0');
  t.is(formatCheckTolerance({ abs: 0, rel: 0.25, fieldRel: 1e-3, digestRel: 2 }), 'rel ≤ 0.25, field rel ≤ 0.001, digest rel ≤ 2');
  t.is(
    formatCheckTolerance({ abs: 1e-6, rel: 3, fieldRel: 0, digestRel: 1e-5 }),
    'abs ≤ 0.000001, rel ≤ 3, field rel ≤ 0, digest rel ≤ 0.00001',
  );
});

// ------------------------------------------------------------------ smmo compare's report

/** A state as readState gives it, of these classes. */
function loaded(dir: string, ...classes: ClassData[]): LoadedState {
  return { dir, info: { app: 'wa-tor', iterations: 2 }, classes, table: TABLE } as unknown as LoadedState;
}

test('compareLoaded: `missing` is in the report only when something is missing; the human report lists it line by line', (t) => {
  const equal = compareLoaded(loaded('a', cls('Fish', [1], { x: ['f32', [1]] })), loaded('b', cls('Fish', [1], { x: ['f32', [1]] })), {});
  t.true(equal.ok);
  t.false('missing' in equal);
  t.deepEqual(equal.tolerance, { abs: 0, rel: 0, fieldRel: 0 });

  const rep = compareLoaded(
    loaded('a', cls('Fish', [1], { x: ['f32', [1]], y: ['f32', [2]] })),
    loaded('b', cls('Fish', [1], { x: ['f32', [1.5]], z: ['u32', [2]] })),
    { abs: 1 },
  );
  t.false(rep.ok);
  t.deepEqual(rep.missing, ['Fish.y: only in A', 'Fish.z: only in B']);
  t.is(rep.worst, 'Fish.x');
  t.deepEqual(formatCompare(rep).split('\n').slice(-4), [
    'worst: Fish.x  max |Δ| 5.00e-1  scale 1.50e+0  rel 3.33e-1  (handle 1: A 1, B 1.5)',
    'missing: Fish.y: only in A',
    'missing: Fish.z: only in B',
    'DIFFERENT: beyond tolerance (abs 1, rel 0)',
  ]);
});

test('formatCompare: no worst line and no missing line when nothing differs', (t) => {
  const rep: CompareReport = compareLoaded(
    loaded('a', cls('Fish', [1], { x: ['f32', [1]] })),
    loaded('b', cls('Fish', [1], { x: ['f32', [1]] })),
    {},
  );
  t.deepEqual(formatCompare(rep).split('\n').slice(-3), [
    'Fish   x      1 / 1          handle      0        0',
    '',
    'OK: every field within tolerance (abs 0, rel 0)',
  ]);
});

test('smmo compare --help: the flags, each with its description', (t) => {
  const help = compareHelp().split('\n');
  const flags = help.slice(help.indexOf('Flags:') + 1, help.indexOf('Flags:') + 6);
  t.deepEqual(flags, [
    '  --tol X         absolute tolerance, |Δ| ≤ X (default: 0)',
    '  --rel R         relative tolerance, |Δ| ≤ R · max(|a|, |b|) (default: 0)',
    "  --field-rel F   tolerance relative to the field, |Δ| ≤ F · the field's largest finite |value| on either side (default: 0)",
    '  --json          print the report as one JSON object',
    '  -h, --help      show this help',
  ]);
});

// ------------------------------------------------------------------ match keys

test('match keys: objects whose handles differ are paired by the key column, not by rank', (t) => {
  // Cells 10, 11, 12 on both sides (matched by handle). A's fish: handle 1 on cell 12, 2 on cell 10, 3 on cell 11.
  // B holds the same fish in another allocation order: 5 on cell 10, 6 on cell 11, 7 on cell 12.
  const cells = cls('Cell', [10, 11, 12], { food: ['u32', [1, 2, 3]] });
  const a = set(
    cells,
    cls('Fish', [1, 2, 3], { cell: ['ref', [12, 10, 11], CELL], age: ['u32', [30, 10, 20]], pal: ['ref', [2, 3, 1], ANIMAL] }),
  );
  const b = set(
    cells,
    cls('Fish', [5, 6, 7], { cell: ['ref', [10, 11, 12], CELL], age: ['u32', [10, 20, 30]], pal: ['ref', [6, 7, 5], ANIMAL] }),
  );
  const byRank = compareColumns(a, b, tol());
  t.false(byRank.ok, 'by rank the fish are paired wrongly');
  t.is(byRank.classes['Fish']!.matchedBy, 'rank');
  const byKey = compareColumns(a, b, tol(), { Fish: 'cell' });
  t.true(byKey.ok, JSON.stringify(byKey.classes['Fish']));
  t.is(byKey.classes['Fish']!.matchedBy, 'key');
  t.is(byKey.classes['Cell']!.matchedBy, 'handle');
  // References into a class matched by key follow the key's pairing (pal: A's 2 ↔ B's 5, its fish on cell 10).
  t.is(byKey.classes['Fish']!.fields['pal']!.beyond, 0);
  // A numeric key works the same way; a real difference is still found, and named by both handles.
  const a2 = set(cls('Fish', [1, 2, 3], { id: ['u32', [7, 5, 6]], age: ['u32', [30, 10, 20]] }));
  const b2 = set(cls('Fish', [4, 8, 9], { id: ['u32', [5, 6, 7]], age: ['u32', [10, 21, 30]] }));
  const d = compareColumns(a2, b2, tol(), { Fish: 'id' });
  t.is(d.classes['Fish']!.matchedBy, 'key');
  t.false(d.ok);
  t.is(d.classes['Fish']!.fields['age']!.beyond, 1);
  t.deepEqual(d.classes['Fish']!.fields['age']!.worst, { handleA: 3, handleB: 8, a: 20, b: 21 });
});

test('match keys: a key that cannot be used falls back to rank (no such column, a reference into a class matched by key or not at all)', (t) => {
  const a = set(cls('Fish', [1, 2], { age: ['u32', [1, 2]] }));
  const b = set(cls('Fish', [3, 4], { age: ['u32', [1, 2]] }));
  t.is(compareColumns(a, b, tol(), { Fish: 'nope' }).classes['Fish']!.matchedBy, 'rank');
  // Sharks keyed by a reference to fish, which are themselves matched by key: not used.
  const a3 = set(cls('Fish', [1, 2], { id: ['u32', [2, 1]] }), cls('Shark', [9], { prey: ['ref', [1], ANIMAL] }));
  const b3 = set(cls('Fish', [3, 4], { id: ['u32', [1, 2]] }), cls('Shark', [8], { prey: ['ref', [4], ANIMAL] }));
  const d = compareColumns(a3, b3, tol(), { Fish: 'id', Shark: 'prey' });
  t.is(d.classes['Fish']!.matchedBy, 'key');
  t.is(d.classes['Shark']!.matchedBy, 'rank');
  t.true(d.ok, 'the shark still refers to the matching fish (id 2 on both sides)');
  // Counts that differ: no matching at all, key or not.
  const e = compareColumns(a, set(cls('Fish', [3], { age: ['u32', [1]] })), tol(), { Fish: 'age' });
  t.is(e.classes['Fish']!.matchedBy, 'none');
});

test('match keys: several columns compared in turn (a node by its square), ties of the first broken by the next', (t) => {
  // Two nodes share x; they differ in y. B holds them in another order.
  const a = set(cls('TreeNode', [1, 2, 3], { x: ['f64', [0, 0, 0.5]], y: ['f64', [0.5, 0, 0]], mass: ['f64', [1, 2, 3]] }));
  const b = set(cls('TreeNode', [7, 8, 9], { x: ['f64', [0.5, 0, 0]], y: ['f64', [0, 0, 0.5]], mass: ['f64', [3, 2, 1]] }));
  t.false(compareColumns(a, b, tol(), { TreeNode: 'x' }).ok, 'x alone pairs the two nodes at x = 0 by rank, wrongly');
  const d = compareColumns(a, b, tol(), { TreeNode: ['x', 'y'] });
  t.true(d.ok);
  t.is(d.classes['TreeNode']!.matchedBy, 'key');
  t.is(compareColumns(a, b, tol(), { TreeNode: ['x', 'nope'] }).classes['TreeNode']!.matchedBy, 'rank', 'a missing column: rank');
});
