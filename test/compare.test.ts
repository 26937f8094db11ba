/**
 * `smmo compare` (cli/compare.ts) on small hand-made states whose differences are known:
 * object counts that differ (the answer that matters most when a GPU run is checked
 * against the CPU), a class missing on one side, references (matched by handle and by
 * rank), and values exactly at and just beyond --tol and --rel. The states are written
 * by writeState from runtimes built object by object, so every expected number is
 * written in the test.
 */
import test from 'ava';
import { mkdirSync, mkdtempSync, rmSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Body } from '../apps/nbody/body.js';
import { CLASSES as NBODY } from '../apps/nbody/nbody.js';
import { Cell, CLASSES as WATOR, Fish, Shark } from '../apps/wa-tor/model.js';
import { appNames } from '../apps/registry.js';
import { compare, compareStates, formatCompare, type CompareReport, type FieldDiff } from '../cli/compare.js';
import { CliUsageError, EXIT_FAILURE, EXIT_OK } from '../cli/errors.js';
import { createRuntime, type Runtime } from '../index.js';
import { MIN_HEAP_BYTES } from '../runtime/layout.js';
import { writeState } from '../runtime/state.js';
import { describeChild, smmo } from './helpers/child.js';

const work = mkdtempSync(join(tmpdir(), 'smmo-compare-'));
test.after.always(() => rmSync(work, { recursive: true, force: true }));
let dirs = 0;

/** Write the state of a runtime of `app`'s classes, filled by `build`, to a new directory. */
async function state(app: 'nbody' | 'wa-tor', build: (rt: Runtime) => void, iterations = 0): Promise<string> {
  const rt = await createRuntime({ classes: app === 'nbody' ? NBODY : WATOR, heap: 2 * MIN_HEAP_BYTES, checked: true });
  try {
    build(rt);
    const dir = join(work, `s${dirs++}`);
    writeState(rt, dir, { app, iterations, seed: 1, params: {}, appState: {} });
    return dir;
  } finally {
    await rt.close();
  }
}

/** `smmo compare` in this process: exit code and printed text. */
async function run(...args: string[]): Promise<{ code: number; out: string }> {
  let out = '';
  const code = await compare(args, (s) => (out += s));
  return { code, out };
}

/** The JSON report of `smmo compare --json`. */
async function report(a: string, b: string, ...flags: string[]): Promise<{ code: number; rep: CompareReport }> {
  const r = await run(a, b, '--json', ...flags);
  return { code: r.code, rep: JSON.parse(r.out) as CompareReport };
}

/** The fields of a FieldDiff these tests were written for (the report also gives scale, rel and the worst object). */
function brief(f: FieldDiff | undefined): Pick<FieldDiff, 'kind' | 'maxAbs' | 'beyond'> | undefined {
  return f && { kind: f.kind, maxAbs: f.maxAbs, beyond: f.beyond };
}

/** The next float32 above x > 0. */
function nextUp32(x: number): number {
  const f = new Float32Array([x]);
  new Uint32Array(f.buffer)[0]! += 1;
  return f[0]!;
}

/** Fish with these egg timers (and a shark), on no cell. */
function fish(...timers: number[]): (rt: Runtime) => void {
  return (rt) => {
    for (const eggTimer of timers) rt.create(Fish, { eggTimer });
    rt.create(Shark, { energy: 3 });
  };
}

// ------------------------------------------------------------------ object counts

test('3 vs 2 Fish: exit 1, Fish reported as "object counts differ", the other classes still compared (issue 17, survivor 2)', async (t) => {
  const three = await state('wa-tor', fish(1, 2, 3));
  const two = await state('wa-tor', fish(1, 2));
  for (const [a, b, counts] of [
    [three, two, [3, 2]],
    [two, three, [2, 3]],
  ] as const) {
    const { code, rep } = await report(a, b);
    t.is(code, EXIT_FAILURE);
    t.false(rep.ok);
    t.deepEqual(rep.classes['Fish'], { objects: [...counts], matchedBy: 'none', fields: {} });
    t.is(rep.classes['Shark']!.matchedBy, 'handle');
    t.deepEqual(rep.classes['Shark']!.objects, [1, 1]);
    t.is(rep.classes['Shark']!.fields['energy']!.beyond, 0);
    t.deepEqual(rep.classes['Cell']!.objects, [0, 0]);
    const human = await run(a, b);
    t.is(human.code, EXIT_FAILURE);
    t.regex(human.out, new RegExp(`\\nFish\\s+\\(all\\)\\s+${counts[0]} / ${counts[1]}\\s+-\\s+-\\s+object counts differ\\n`));
    t.regex(human.out, /\nShark\s+energy\s+1 \/ 1\s+handle\s+0\s+0\n/);
    t.regex(human.out, /DIFFERENT: beyond tolerance \(abs 0, rel 0\)$/);
  }
  // No tolerance makes different counts equal.
  t.is((await run(three, two, '--tol', '1e30', '--rel', '1e30')).code, EXIT_FAILURE);
  // A class empty on one side only.
  const none = await state('wa-tor', fish());
  const { code, rep } = await report(none, two);
  t.is(code, EXIT_FAILURE);
  t.deepEqual(rep.classes['Fish'], { objects: [0, 2], matchedBy: 'none', fields: {} });
  // Control: equal counts and values.
  t.is((await run(two, await state('wa-tor', fish(1, 2)))).code, EXIT_OK);
});

test('a reference into a class whose counts differ cannot be matched: it is a difference', async (t) => {
  const build =
    (n: number) =>
    (rt: Runtime): void => {
      const fishes = Array.from({ length: n }, () => rt.create(Fish));
      rt.create(Cell, { agent: fishes[0]! });
      rt.create(Cell); // agent null on both sides: equal
    };
  const { code, rep } = await report(await state('wa-tor', build(3)), await state('wa-tor', build(2)));
  t.is(code, EXIT_FAILURE);
  t.is(rep.classes['Cell']!.matchedBy, 'handle');
  t.deepEqual(brief(rep.classes['Cell']!.fields['agent']), { kind: 'ref', maxAbs: 0, beyond: 1 });
  // A reference to a Shark is still matched when the Fish counts differ (Cell.agent is a
  // ref(Agent): the target is looked up in each subclass).
  const sharks =
    (n: number) =>
    (rt: Runtime): void => {
      for (let i = 0; i < n; i++) rt.create(Fish);
      rt.create(Cell, { agent: rt.create(Shark) });
    };
  const r = await report(await state('wa-tor', sharks(2)), await state('wa-tor', sharks(1)));
  t.is(r.code, EXIT_FAILURE);
  t.is(r.rep.classes['Fish']!.matchedBy, 'none');
  t.is(r.rep.classes['Shark']!.matchedBy, 'handle');
  t.deepEqual(brief(r.rep.classes['Cell']!.fields['agent']), { kind: 'ref', maxAbs: 0, beyond: 0 });
});

test('a class missing on one side: exit 2 (CliUsageError) naming the file and the class', async (t) => {
  const a = await state('wa-tor', fish(1, 2));
  const b = await state('wa-tor', fish(1, 2));
  unlinkSync(join(b, 'Shark.arrow'));
  for (const [x, y] of [
    [a, b],
    [b, a],
  ] as const) {
    await t.throwsAsync(run(x, y), {
      instanceOf: CliUsageError,
      message: /^smmo compare: state .*Shark\.arrow \(class Shark\): is missing: a state holds one file per concrete class/,
    });
  }
});

test('CLI: exit 1 for different counts, 2 for a missing class, 0 for equal states', async (t) => {
  const three = await state('wa-tor', fish(1, 2, 3));
  const two = await state('wa-tor', fish(1, 2));
  const broken = await state('wa-tor', fish(1, 2));
  unlinkSync(join(broken, 'Fish.arrow'));
  const [counts, missing, same] = await Promise.all([
    smmo(['compare', three, two]),
    smmo(['compare', two, broken]),
    smmo(['compare', two, two]),
  ]);
  t.is(counts.code, 1, describeChild(counts));
  t.regex(counts.stdout, /Fish\s+\(all\)\s+3 \/ 2\s+-\s+-\s+object counts differ/);
  t.is(missing.code, 2, describeChild(missing));
  t.regex(missing.stderr, /Fish\.arrow \(class Fish\): is missing/);
  t.is(same.code, 0, describeChild(same));
});

// ------------------------------------------------------------------ references

test('references: equal when they point to matching objects (by handle or by rank); null against an object differs', async (t) => {
  /**
   * Three cells (with `skip` cells created and deleted first, so that the handles move)
   * and three fish whose positions name cells by index (-1: null).
   */
  const build =
    (skip: number, positions: number[]) =>
    (rt: Runtime): void => {
      const gone = Array.from({ length: skip }, () => rt.create(Cell));
      const cells = Array.from({ length: 3 }, () => rt.create(Cell).handle);
      for (const g of gone) rt.destroy(g);
      for (const p of positions) rt.create(Fish, { position: p < 0 ? null : rt.get(Cell, cells[p]!) });
    };
  const base = await state('wa-tor', build(0, [0, 1, -1]));
  // Same handles, same targets.
  let r = await report(base, await state('wa-tor', build(0, [0, 1, -1])));
  t.is(r.code, EXIT_OK);
  t.is(r.rep.classes['Fish']!.matchedBy, 'handle');
  // Same handles, one fish on another cell, one null against a cell.
  r = await report(base, await state('wa-tor', build(0, [0, 2, 1])));
  t.is(r.code, EXIT_FAILURE);
  t.deepEqual(brief(r.rep.classes['Fish']!.fields['position']), { kind: 'ref', maxAbs: 0, beyond: 2 });
  t.is(r.rep.classes['Fish']!.fields['newPosition']!.beyond, 0);
  // Cells at other handles: matched by rank, so the same positions are equal …
  const moved = await state('wa-tor', build(2, [0, 1, -1]));
  r = await report(base, moved);
  t.is(r.code, EXIT_OK, JSON.stringify(r.rep.classes));
  t.is(r.rep.classes['Cell']!.matchedBy, 'rank');
  t.is(r.rep.classes['Fish']!.matchedBy, 'handle');
  // … and a position naming a cell of another rank is not, even if its raw handle is equal.
  r = await report(base, await state('wa-tor', build(2, [1, 0, -1])));
  t.is(r.code, EXIT_FAILURE);
  t.is(r.rep.classes['Fish']!.fields['position']!.beyond, 2);
  r = await report(base, await state('wa-tor', build(2, [0, 1, 0])));
  t.is(r.rep.classes['Fish']!.fields['position']!.beyond, 1, 'null against a cell');
  t.is((await report(moved, base)).code, EXIT_OK, 'symmetric');
});

// ------------------------------------------------------------------ tolerances

/** Bodies whose posX are `xs` (other fields 0). */
function bodies(...xs: number[]): (rt: Runtime) => void {
  return (rt) => {
    for (const posX of xs) rt.create(Body, { posX });
  };
}

test('--tol: a difference exactly at the tolerance is within (exit 0), the next float beyond (exit 1) (issue 17, survivor 3)', async (t) => {
  const a = await state('nbody', bodies(1.5, -1.5));
  const at = await state('nbody', bodies(1.75, -1.25));
  const beyond = await state('nbody', bodies(nextUp32(1.75), -1.25));
  t.is((await run(a, at, '--tol', '0.25')).code, EXIT_OK);
  t.is((await run(at, a, '--tol', '0.25')).code, EXIT_OK);
  t.is((await run(a, at, '--tol', '0.2499')).code, EXIT_FAILURE);
  const { code, rep } = await report(a, beyond, '--tol', '0.25');
  t.is(code, EXIT_FAILURE);
  t.deepEqual(brief(rep.classes['Body']!.fields['posX']), { kind: 'f32', maxAbs: nextUp32(1.75) - 1.5, beyond: 1 });
  t.deepEqual(brief(rep.classes['Body']!.fields['posY']), { kind: 'f32', maxAbs: 0, beyond: 0 });
  t.deepEqual(rep.tolerance, { abs: 0.25, rel: 0, fieldRel: 0 });
});

test('--rel: exactly at rel · max(|a|, |b|) is within, the next float beyond; either sign and order', async (t) => {
  const pairs = [
    [6, 8],
    [8, 6],
    [-6, -8],
    [-8, -6],
  ];
  const a = await state('nbody', bodies(...pairs.map((p) => p[0]!)));
  const at = await state('nbody', bodies(...pairs.map((p) => p[1]!)));
  // |a - b| = 2 = 0.25 · 8 for every pair.
  let r = await report(a, at, '--rel', '0.25');
  t.is(r.code, EXIT_OK);
  t.deepEqual(brief(r.rep.classes['Body']!.fields['posX']), { kind: 'f32', maxAbs: 2, beyond: 0 });
  t.is((await run(a, at, '--rel', '0.2499')).code, EXIT_FAILURE);
  t.is((await run(a, at, '--tol', '1.99')).code, EXIT_FAILURE, 'and not within the absolute tolerance');
  // 6 against the next float above 8: |a - b| = 2 + 2^-20 > 0.25 · (8 + 2^-20).
  const beyond = await state('nbody', bodies(nextUp32(8), 6, -8, -6));
  r = await report(a, beyond, '--rel', '0.25');
  t.is(r.code, EXIT_FAILURE);
  t.is(r.rep.classes['Body']!.fields['posX']!.beyond, 1);
  // Signs differ: |6 - (-8)| = 14 > 0.25 · 8.
  const flipped = await state('nbody', bodies(-8, -6, 6, 8));
  r = await report(a, flipped, '--rel', '0.25');
  t.is(r.rep.classes['Body']!.fields['posX']!.beyond, 4);
  t.is(r.rep.classes['Body']!.fields['posX']!.maxAbs, 16);
});

test('either rule suffices: within --tol or within --rel', async (t) => {
  // Body 0: |Δ| = 2, within rel 0.25 (of 8) but not tol 0.25. Body 1: |Δ| = 0.25, within tol
  // 0.25 but not rel 0.25 (of 0.25: 0.0625).
  const a = await state('nbody', bodies(6, 0));
  const b = await state('nbody', bodies(8, 0.25));
  t.is((await run(a, b, '--tol', '0.25', '--rel', '0.25')).code, EXIT_OK);
  const onlyTol = await report(a, b, '--tol', '0.25');
  t.is(onlyTol.rep.classes['Body']!.fields['posX']!.beyond, 1);
  const onlyRel = await report(a, b, '--rel', '0.25');
  t.is(onlyRel.rep.classes['Body']!.fields['posX']!.beyond, 1);
  const exact = await report(a, b);
  t.is(exact.code, EXIT_FAILURE);
  t.deepEqual(brief(exact.rep.classes['Body']!.fields['posX']), { kind: 'f32', maxAbs: 2, beyond: 2 });
});

test('NaN equals NaN; NaN or an infinity against another value differs beyond every tolerance; -0 equals 0', async (t) => {
  const a = await state('nbody', bodies(NaN, NaN, Infinity, Infinity, -0, 1, 3));
  const b = await state('nbody', bodies(NaN, 1, Infinity, -Infinity, 0, 1, -Infinity));
  // Without the infinity rule, |∞ - x| = ∞ ≤ rel · ∞ made an overflow on one side "within" any --rel.
  for (const tol of [
    { abs: 1e30, rel: 1e30 },
    { abs: 0, rel: 1e-4 },
  ]) {
    const rep = await compareStates(a, b, tol);
    t.false(rep.ok);
    t.deepEqual(brief(rep.classes['Body']!.fields['posX']), { kind: 'f32', maxAbs: Infinity, beyond: 3 }, JSON.stringify(tol));
    t.regex(formatCompare(rep), /\nBody\s+posX\s+7 \/ 7\s+handle\s+Infinity\s+3\n/);
  }
  t.true((await compareStates(a, a, { abs: 0, rel: 0 })).ok, 'NaN, infinities and -0 against themselves');
  // NaN against a number, in either order, is an infinite difference.
  const x = await state('nbody', bodies(2, NaN, 1));
  const y = await state('nbody', bodies(NaN, 2, 1.5));
  for (const [p, q] of [
    [x, y],
    [y, x],
  ] as const) {
    const rep = await compareStates(p, q, { abs: 1, rel: 1 });
    t.deepEqual(brief(rep.classes['Body']!.fields['posX']), { kind: 'f32', maxAbs: Infinity, beyond: 2 });
  }
});

test('the report: largest difference per field, objects beyond per field, iteration counts', async (t) => {
  const a = await state('nbody', bodies(1, 2, 3, 4), 5);
  const b = await state('nbody', bodies(1, 2.5, 2, 4), 7);
  const r = await run(a, b, '--tol', '0.5');
  t.is(r.code, EXIT_FAILURE);
  t.true(
    r.out.startsWith(
      `app nbody: A = ${a} (5 iterations), B = ${b} (7 iterations)\nnote: the states were taken after different iteration counts\n`,
    ),
  );
  t.regex(r.out, /\nBody\s+posX\s+4 \/ 4\s+handle\s+1\.000e\+0\s+1\n/);
  t.regex(r.out, /\nBody\s+mass\s+4 \/ 4\s+handle\s+0\s+0\n/);
  t.regex(r.out, /DIFFERENT: beyond tolerance \(abs 0\.5, rel 0\)$/);
  const same = await run(a, a);
  t.is(same.code, EXIT_OK);
  t.notRegex(same.out, /note:/);
  t.regex(same.out, /OK: every field within tolerance \(abs 0, rel 0\)$/);
});

test('bad --tol and --rel values, a wrong number of states, --help', async (t) => {
  const a = await state('nbody', bodies(1));
  for (const [flag, value] of [
    ['--tol', '-1'],
    ['--tol', ''],
    ['--tol', ' '],
    ['--rel', 'abc'],
    ['--rel', 'Infinity'],
    ['--tol', 'NaN'],
  ] as const) {
    await t.throwsAsync(run(a, a, `${flag}=${value}`), {
      instanceOf: CliUsageError,
      message: `smmo compare: ${flag} must be a number ≥ 0, got '${value}' (e.g. ${flag} 1e-5)`,
    });
  }
  t.is((await run(a, a, '--tol', '0', '--rel', '0')).code, EXIT_OK);
  await t.throwsAsync(run(a), { instanceOf: CliUsageError, message: /give two state directories, got 1/ });
  await t.throwsAsync(run(a, a, a), { instanceOf: CliUsageError, message: /give two state directories, got 3/ });
  await t.throwsAsync(run(a, a, '--bogus'), { instanceOf: CliUsageError, message: /^smmo compare: .*see 'smmo compare --help'$/ });
  const help = await run('--help');
  t.is(help.code, EXIT_OK);
  t.regex(help.out, /^Usage: smmo compare A B \[--tol X\] \[--rel R\] \[--field-rel F\] \[--json\]/);
});

test('the human report, line by line: header, rule, a row per field, classes without fields, references, the verdict', (t) => {
  const rep: CompareReport = {
    ok: false,
    app: 'wa-tor',
    tolerance: { abs: 0.5, rel: 0, fieldRel: 0 },
    a: { dir: 'cpu', iterations: 3 },
    b: { dir: 'gpu', iterations: 4 },
    classes: {
      Cell: { objects: [2, 2], matchedBy: 'rank', fields: {} },
      Fish: { objects: [3, 2], matchedBy: 'none', fields: {} },
      Shark: {
        objects: [1, 1],
        matchedBy: 'handle',
        fields: {
          energy: { kind: 'u32', maxAbs: 0, scale: 3, rel: 0, beyond: 0, worst: null },
          position: { kind: 'ref', maxAbs: 0, scale: 0, rel: 0, beyond: 1, worst: { handleA: 65, handleB: 65, a: 33, b: 34 } },
          eggTimer: {
            kind: 'u32',
            maxAbs: 12345.678,
            scale: 20000,
            rel: 0.617,
            beyond: 1,
            worst: { handleA: 65, handleB: 65, a: 1, b: 12346.678 },
          },
        },
      },
    },
    worst: '',
  };
  t.is(
    formatCompare(rep),
    [
      'app wa-tor: A = cpu (3 iterations), B = gpu (4 iterations)',
      'note: the states were taken after different iteration counts',
      '',
      'class  field     objects A / B  matched by  max |Δ|   beyond tolerance',
      '-----  --------  -------------  ----------  --------  --------------------',
      'Cell   -         2 / 2          rank        -         0',
      'Fish   (all)     3 / 2          -           -         object counts differ',
      'Shark  energy    1 / 1          handle      0         0',
      'Shark  position  1 / 1          handle      (ref)     1',
      'Shark  eggTimer  1 / 1          handle      1.235e+4  1',
      '',
      'DIFFERENT: beyond tolerance (abs 0.5, rel 0)',
    ].join('\n'),
  );
  const ok: CompareReport = {
    ...rep,
    ok: true,
    tolerance: { abs: 0, rel: 1e-4, fieldRel: 0 },
    b: { dir: 'gpu', iterations: 3 },
    classes: {
      Body: {
        objects: [1, 1],
        matchedBy: 'handle',
        fields: { posX: { kind: 'f32', maxAbs: 0, scale: 1, rel: 0, beyond: 0, worst: null } },
      },
    },
  };
  t.is(
    formatCompare(ok),
    [
      'app wa-tor: A = cpu (3 iterations), B = gpu (3 iterations)',
      '',
      'class  field  objects A / B  matched by  max |Δ|  beyond tolerance',
      '-----  -----  -------------  ----------  -------  ----------------',
      'Body   posX   1 / 1          handle      0        0',
      '',
      'OK: every field within tolerance (abs 0, rel 0.0001)',
    ].join('\n'),
  );
  // The worst field's worst object (runtime/compare.ts), and a field-relative tolerance, when there are.
  const lines = formatCompare({ ...rep, worst: 'Shark.eggTimer', tolerance: { abs: 0.5, rel: 0, fieldRel: 1e-4 } }).split('\n');
  t.deepEqual(lines.slice(-3), [
    '',
    'worst: Shark.eggTimer  max |Δ| 1.23e+4  scale 2.00e+4  rel 6.17e-1  1 beyond  (handle 65: A 1, B 12346.678)',
    'DIFFERENT: beyond tolerance (abs 0.5, rel 0, field rel 0.0001)',
  ]);
});

test('states of two apps, or of an app this smmo does not have: exit 2 (CliUsageError)', async (t) => {
  const body = await state('nbody', bodies(1));
  const sea = await state('wa-tor', fish(1));
  await t.throwsAsync(run(body, sea), {
    instanceOf: CliUsageError,
    message: `smmo compare: ${body} is a state of app nbody, ${sea} of app wa-tor`,
  });
  // A state written under an app name this smmo does not know.
  const rt = await createRuntime({ classes: NBODY, heap: MIN_HEAP_BYTES });
  const alien = join(work, `s${dirs++}`);
  try {
    rt.create(Body);
    writeState(rt, alien, { app: 'no-such-app', iterations: 0, seed: 1, params: {}, appState: {} });
  } finally {
    await rt.close();
  }
  await t.throwsAsync(run(alien, alien), {
    instanceOf: CliUsageError,
    message: `smmo compare: ${alien} is a state of app 'no-such-app', which this smmo does not have (${appNames().join(', ')})`,
  });
  // A class file that cannot be read: the state's error, as a usage error.
  const unreadable = await state('nbody', bodies(1));
  unlinkSync(join(unreadable, 'Body.arrow'));
  mkdirSync(join(unreadable, 'Body.arrow'));
  await t.throwsAsync(run(body, unreadable), {
    instanceOf: CliUsageError,
    message: /^smmo compare: state .*Body\.arrow \(class Body\): cannot be read/,
  });
});

test('handles equal at some ranks only: matched by rank, so references follow the rank', async (t) => {
  // A: cells at slots 0, 1, 2. B: four cells made, the second deleted: slots 0, 2, 3 (the
  // first handle equal, the others not). Fish i stands on cell i on both sides.
  const build =
    (gap: boolean) =>
    (rt: Runtime): void => {
      const cells = Array.from({ length: gap ? 4 : 3 }, () => rt.create(Cell));
      if (gap) rt.destroy(cells.splice(1, 1)[0]!);
      for (const c of cells) rt.create(Fish, { position: c });
    };
  const a = await state('wa-tor', build(false));
  const b = await state('wa-tor', build(true));
  const { code, rep } = await report(a, b);
  t.is(rep.classes['Cell']!.matchedBy, 'rank');
  t.is(rep.classes['Fish']!.matchedBy, 'handle');
  t.is(rep.classes['Fish']!.fields['position']!.beyond, 0);
  t.is(code, EXIT_OK);
});

test('a reference to an abstract class is matched in whichever subclass holds the target', async (t) => {
  // Cell.agent is a ref(Agent): its targets are Fish and Shark objects.
  const build =
    (swap: boolean) =>
    (rt: Runtime): void => {
      const f = rt.create(Fish);
      const s1 = rt.create(Shark);
      const s2 = rt.create(Shark);
      rt.create(Cell, { agent: f });
      rt.create(Cell, { agent: swap ? s2 : s1 });
      rt.create(Cell, { agent: swap ? s1 : s2 });
    };
  const a = await state('wa-tor', build(false));
  let r = await report(a, await state('wa-tor', build(false)));
  t.is(r.code, EXIT_OK);
  t.deepEqual(brief(r.rep.classes['Cell']!.fields['agent']), { kind: 'ref', maxAbs: 0, beyond: 0 });
  r = await report(a, await state('wa-tor', build(true)));
  t.is(r.code, EXIT_FAILURE);
  t.deepEqual(brief(r.rep.classes['Cell']!.fields['agent']), { kind: 'ref', maxAbs: 0, beyond: 2 });
});

test('a reference to an abstract class whose subclasses are matched differently (Fish by rank, Shark by handle) follows each subclass', async (t) => {
  // Cell.agent is a ref(Agent), whose targets are the Fish and Shark classes: the targets
  // on either side must be the same classes in the same order, or a Fish reference would
  // be looked up among another class's handles (issue 17, mutation survivors in
  // compareLoaded: the targets of one side not filtered to the field's target classes).
  const build =
    (shift: boolean, swap: boolean) =>
    (rt: Runtime): void => {
      const gone = shift ? rt.create(Fish) : null; // moves the Fish handles on one side
      const f = rt.create(Fish);
      const s = rt.create(Shark);
      if (gone) rt.destroy(gone);
      rt.create(Cell, { agent: f });
      rt.create(Cell, { agent: s });
      rt.create(Cell, { agent: swap ? f : s });
    };
  const a = await state('wa-tor', build(false, false));
  let r = await report(a, await state('wa-tor', build(true, false)));
  t.is(r.rep.classes['Fish']!.matchedBy, 'rank');
  t.is(r.rep.classes['Shark']!.matchedBy, 'handle');
  t.is(r.rep.classes['Cell']!.matchedBy, 'handle');
  t.deepEqual(brief(r.rep.classes['Cell']!.fields['agent']!), { kind: 'ref', maxAbs: 0, beyond: 0 });
  t.is(r.code, EXIT_OK);
  r = await report(a, await state('wa-tor', build(true, true)));
  t.deepEqual(brief(r.rep.classes['Cell']!.fields['agent']!), { kind: 'ref', maxAbs: 0, beyond: 1 });
  t.is(r.code, EXIT_FAILURE);
});
