/**
 * One comparator (runtime/compare.ts) behind both judges: `smmo run --check` (cli/check.ts
 * checkRuntimes, which run.ts calls with the reference and the run) and `smmo compare`
 * (the CLI, on the same two states written by writeState). For the same pair of states
 * and the same tolerance both must give the same verdict — on a pair within tolerance,
 * on a pair with one value just beyond it, on differing object counts, and on objects
 * matched by rank — and report the same differences: per field max |Δ|, scale, rel,
 * objects beyond and the worst object (both handles, both values), and the same worst
 * field. The digest, which a state does not hold, is given equal on both sides.
 */
import test from 'ava';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Body } from '../apps/nbody/body.js';
import { CLASSES as NBODY } from '../apps/nbody/nbody.js';
import { checkRuntimes, type CheckVerdict } from '../cli/check.js';
import type { CompareReport } from '../cli/compare.js';
import { createRuntime, type Runtime } from '../index.js';
import type { Tolerance } from '../runtime/compare.js';
import { MIN_HEAP_BYTES } from '../runtime/layout.js';
import { writeState } from '../runtime/state.js';
import { describeChild, lastJson, smmo } from './helpers/child.js';

const work = mkdtempSync(join(tmpdir(), 'smmo-compare-check-'));
test.after.always(() => rmSync(work, { recursive: true, force: true }));
let dirs = 0;

/** The next float32 above x > 0. */
function nextUp32(x: number): number {
  const f = new Float32Array([x]);
  new Uint32Array(f.buffer)[0]! += 1;
  return f[0]!;
}

interface BodySpec {
  posX: number;
  velX?: number;
  mass?: number;
}

/** The reference's bodies: posX scale 8, so field rel 0.25 allows |Δ| ≤ 2 in posX. */
const BASE: BodySpec[] = [
  { posX: 8, velX: 0.5, mass: 10 },
  { posX: 1, velX: -0.25, mass: 20 },
  { posX: -2, velX: 0.125, mass: 30 },
  { posX: 0.5, velX: 0, mass: 40 },
];

/** A runtime holding `bodies`, created in order after `skip` bodies that are deleted (so the handles move). */
async function runtime(bodies: readonly BodySpec[], skip = 0): Promise<Runtime> {
  const rt = await createRuntime({ classes: NBODY, heap: 2 * MIN_HEAP_BYTES, checked: true });
  const gone = Array.from({ length: skip }, () => rt.create(Body));
  for (const b of bodies) rt.create(Body, { posX: b.posX, velX: b.velX ?? 0, mass: b.mass ?? 1 });
  for (const g of gone) rt.destroy(g);
  return rt;
}

/** `smmo compare A B --json` with these flags, as a child process: exit code and report. */
async function compareCli(a: string, b: string, flags: string[]): Promise<{ code: number; report: CompareReport }> {
  const r = await smmo(['compare', a, b, '--json', ...flags]);
  if (r.code !== 0 && r.code !== 1) throw new Error(describeChild(r));
  return { code: r.code, report: lastJson(r.stdout) as unknown as CompareReport };
}

/** Both judges on the reference `a` and the other side `b` (each side also written as a state). */
async function judge(
  a: readonly BodySpec[],
  b: readonly BodySpec[],
  tol: Tolerance,
  skipB = 0,
): Promise<{ check: CheckVerdict; code: number; report: CompareReport }> {
  const ra = await runtime(a);
  const rb = await runtime(b, skipB);
  try {
    const check = checkRuntimes(ra, rb, { reference: 1, run: 1 }, { ...tol, digestRel: 0 });
    const dirA = join(work, `s${dirs++}`);
    const dirB = join(work, `s${dirs++}`);
    const info = { app: 'nbody', iterations: 0, seed: 1, params: {}, appState: {} };
    writeState(ra, dirA, info);
    writeState(rb, dirB, info);
    const flags = ['--tol', String(tol.abs), '--rel', String(tol.rel), '--field-rel', String(tol.fieldRel)];
    return { check, ...(await compareCli(dirA, dirB, flags)) };
  } finally {
    await ra.close();
    await rb.close();
  }
}

/** The verdicts agree, and so does every reported difference (through JSON, as compare prints it). */
function agree(t: import('ava').ExecutionContext, j: Awaited<ReturnType<typeof judge>>): void {
  t.is(j.code, j.check.ok ? 0 : 1, 'exit code of smmo compare against the verdict of --check');
  t.is(j.report.ok, j.check.ok);
  t.is(j.report.worst, j.check.worst, 'the worst field');
  const body = j.report.classes['Body']!;
  t.is(j.check.objects['Body'], body.objects[0]);
  t.is(j.check.rank.includes('Body'), body.matchedBy === 'rank');
  t.is(j.check.structure.length > 0, body.matchedBy === 'none');
  const checkFields = Object.fromEntries(
    Object.entries(j.check.fields)
      .filter(([name]) => name.startsWith('Body.'))
      .map(([name, d]) => [name.slice('Body.'.length), d]),
  );
  t.deepEqual(JSON.parse(JSON.stringify(checkFields)), body.fields, 'max |Δ|, scale, rel, beyond and the worst object of every field');
}

const FIELD_REL: Tolerance = { abs: 0, rel: 0, fieldRel: 0.25 };

test('within tolerance: |Δ| exactly field-rel × scale; both judges pass, and report the same differences', async (t) => {
  const b = BASE.map((x, i) => (i === 1 ? { ...x, posX: 3 } : i === 2 ? { ...x, velX: 0.1875 } : x));
  const j = await judge(BASE, b, FIELD_REL);
  agree(t, j);
  t.true(j.check.ok);
  const posX = j.check.fields['Body.posX']!;
  t.is(posX.maxAbs, 2);
  t.is(posX.scale, 8);
  t.is(posX.beyond, 0);
  t.like(posX.worst, { a: 1, b: 3 });
  t.is(j.check.fields['Body.velX']!.rel, 0.125);
  t.is(j.check.worst, 'Body.posX', 'both within: the larger rel (2 / 8 against 0.0625 / 0.5) is the worst');
});

test('one value just beyond: the next float32 above the limit fails both, naming the same object and values', async (t) => {
  const b = BASE.map((x, i) => (i === 1 ? { ...x, posX: nextUp32(3) } : x));
  const j = await judge(BASE, b, FIELD_REL);
  agree(t, j);
  t.false(j.check.ok);
  t.is(j.check.worst, 'Body.posX');
  const posX = j.report.classes['Body']!.fields['posX']!;
  t.is(posX.beyond, 1);
  t.is(posX.maxAbs, nextUp32(3) - 1);
  t.deepEqual(posX.worst, { handleA: posX.worst!.handleA, handleB: posX.worst!.handleA, a: 1, b: nextUp32(3) });
  // The same pair passes with an absolute tolerance of that difference (either rule suffices).
  const loose = await judge(BASE, b, { ...FIELD_REL, abs: nextUp32(3) - 1 });
  agree(t, loose);
  t.true(loose.check.ok);
});

test('different object counts: both fail whatever the tolerance, reporting the counts', async (t) => {
  const j = await judge(BASE, [...BASE, { posX: 0 }], { abs: 1e30, rel: 1e30, fieldRel: 1e30 });
  agree(t, j);
  t.false(j.check.ok);
  t.deepEqual(j.report.classes['Body']!.objects, [4, 5]);
  t.is(j.report.classes['Body']!.matchedBy, 'none');
  t.deepEqual(j.check.structure, ['Body: 4 live objects in the reference, 5 in the run checked against it']);
  t.deepEqual(j.check.fields, {}, 'no field is compared when the counts differ');
});

test('the same values at other handles: both match the objects by rank and pass; a difference names both handles', async (t) => {
  const same = await judge(BASE, BASE, FIELD_REL, 3);
  agree(t, same);
  t.true(same.check.ok);
  t.deepEqual(same.check.rank, ['Body']);
  const b = BASE.map((x, i) => (i === 3 ? { ...x, mass: 41 } : x));
  const j = await judge(BASE, b, { abs: 0, rel: 0, fieldRel: 0 }, 3);
  agree(t, j);
  t.false(j.check.ok);
  const w = j.check.fields['Body.mass']!.worst!;
  t.not(w.handleA, w.handleB);
  t.like(w, { a: 40, b: 41 });
});
