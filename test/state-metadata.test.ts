/**
 * State files (runtime/state.ts), the checks of each file's schema metadata (readInfo) and
 * nonFiniteValues, in-process: issue 17's mutation run (docs/mutation.md) found them
 * checked only through the CLI tests of test/state, or not at all. Every state here is
 * written by writeState and then edited with apache-arrow, one metadata key at a time.
 */
import test from 'ava';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RecordBatch, Schema, Table, tableFromIPC, tableToIPC } from 'apache-arrow';
import { createRuntime, f32, f64, i32, object } from '../index.js';
import { nonFiniteValues, readState, StateFileError, writeState, type StateInfo } from '../runtime/state.js';

const work = mkdtempSync(join(tmpdir(), 'smmo-state-meta-'));
test.after.always(() => rmSync(work, { recursive: true, force: true }));
let dirs = 0;

class Probe extends object({ p: f32, q: f64, k: i32 }) {}
class Other extends object({ x: f32 }) {}
const CLASSES = [Probe, Other];
const INFO: StateInfo = { app: 'test', iterations: 3, seed: 7, params: { n: 40, name: 'x', none: null }, appState: { width: 2 } };

/** A state of Probe objects with these (p, q) values and one Other, in a new directory. */
async function stateOf(values: [number, number][] = [[1, 2]], info: StateInfo = INFO): Promise<string> {
  const rt = await createRuntime({ classes: CLASSES, heap: 4 << 20, checked: true });
  try {
    values.forEach(([p, q], k) => rt.create(Probe, { p, q, k }));
    rt.create(Other, { x: 1 });
    const dir = join(work, `s${dirs++}`);
    writeState(rt, dir, info);
    return dir;
  } finally {
    await rt.close();
  }
}

/** Rewrite the schema metadata of one class file. */
function editMeta(file: string, edit: (meta: Map<string, string>) => void): void {
  const tbl = tableFromIPC(readFileSync(file));
  const meta = new Map(tbl.schema.metadata);
  edit(meta);
  const schema = new Schema(tbl.schema.fields, meta);
  const batches = tbl.batches.map((b) => new RecordBatch(schema, b.data));
  writeFileSync(file, tableToIPC(new Table(schema, batches), 'file'));
}

test('readInfo: every metadata key is checked, naming the file and the class', async (t) => {
  const dir = await stateOf();
  const file = join(dir, 'Probe.arrow');
  const good = readFileSync(file);
  /** Set `key` to `value` in Probe.arrow: readState must refuse it with a message matching `re`. */
  const refused = (key: string, value: string, re: RegExp): void => {
    writeFileSync(file, good);
    editMeta(file, (m) => m.set(key, value));
    const e = t.throws(() => readState(dir, CLASSES, 'test'), { instanceOf: StateFileError }, `${key} = ${value}`);
    t.is(e?.className, 'Probe', `${key} = ${value}: the class`);
    t.is(e?.field, null);
    t.regex(e?.message ?? '', re, `${key} = ${value}`);
    t.regex(e?.message ?? '', /Probe\.arrow/);
  };
  refused('smmo.format', 'smmo-state/2', /has format 'smmo-state\/2', this smmo reads 'smmo-state\/1'/);
  refused('smmo.class', 'Other', /holds class 'Other'/);
  for (const v of ['-1', '1.5', '3x', 'x3', '', '99999999999999999999']) {
    refused('smmo.iterations', v, new RegExp(`metadata 'smmo.iterations' is '${v}', not a non-negative integer`));
  }
  refused('smmo.seed', '4294967296', /metadata 'smmo.seed' is 4294967296, beyond 4294967295/);
  for (const v of ['[1]', 'null', '3', '"s"', '{']) {
    refused('smmo.params', v, /metadata 'smmo.params' is not a JSON object \(/);
  }
  refused('smmo.params', '{"n":[64]}', /metadata 'smmo.params' has n: \[64\], not a number, a string or null/);
  refused('smmo.params', '{"n":true}', /metadata 'smmo.params' has n: true, not a number, a string or null/);
  refused('smmo.params', '{"n":{}}', /has n: \{\}/);
  refused('smmo.appState', '{"width":"2"}', /metadata 'smmo.appState' has width: "2", not a finite number/);
  refused('smmo.appState', '{"width":null}', /metadata 'smmo.appState' has width: null, not a finite number/);
  refused('smmo.appState', '[]', /metadata 'smmo.appState' is not a JSON object/);
  // Another file of the same dump that disagrees (app, iterations or seed): mixed dumps.
  for (const [key, v] of [
    ['smmo.app', 'nbody'],
    ['smmo.iterations', '4'],
    ['smmo.seed', '8'],
  ] as const) {
    writeFileSync(file, good);
    editMeta(join(dir, 'Other.arrow'), (m) => m.set(key, v));
    t.throws(() => readState(dir, CLASSES), { instanceOf: StateFileError, message: /files of different dumps were mixed/ }, key);
    editMeta(join(dir, 'Other.arrow'), (m) => m.set(key, key === 'smmo.app' ? 'test' : key === 'smmo.iterations' ? '3' : '7'));
  }
  // The limits themselves, and what the state says, are accepted and read back.
  writeFileSync(file, good);
  const edge = (m: Map<string, string>): void => {
    m.set('smmo.seed', '4294967295');
    m.set('smmo.iterations', '0');
  };
  editMeta(file, edge);
  editMeta(join(dir, 'Other.arrow'), edge);
  const s = readState(dir, CLASSES, 'test');
  t.is(s.info.seed, 4294967295);
  t.is(s.info.iterations, 0);
  t.deepEqual(s.info.params, INFO.params);
  t.deepEqual(s.info.appState, INFO.appState);
  t.false('version' in s.info, 'no smmo.version: none in the info');
  for (const f of ['Probe.arrow', 'Other.arrow']) editMeta(join(dir, f), (m) => m.set('smmo.version', '9.9.9'));
  t.is(readState(dir, CLASSES, 'test').info.version, '9.9.9', 'smmo.version is read back');
});

test('nonFiniteValues: one line per float column holding NaN or ±Infinity, with the counts; integer columns never', async (t) => {
  const clean = readState(
    await stateOf([
      [1, 2],
      [-0, Number.MAX_VALUE],
    ]),
    CLASSES,
  );
  t.deepEqual(nonFiniteValues(clean), []);
  const dir = await stateOf([
    [NaN, 1],
    [Infinity, NaN],
    [-Infinity, NaN],
    [NaN, 2],
    [3, -Infinity],
  ]);
  t.deepEqual(nonFiniteValues(readState(dir, CLASSES)), [
    `Probe.p: 2 NaN, 2 ±Infinity of 5 values (state ${join(dir, 'Probe.arrow')})`,
    `Probe.q: 2 NaN, 1 ±Infinity of 5 values (state ${join(dir, 'Probe.arrow')})`,
  ]);
  const infOnly = await stateOf([[Infinity, 0]]);
  t.deepEqual(nonFiniteValues(readState(infOnly, CLASSES)), [`Probe.p: 1 ±Infinity of 1 values (state ${join(infOnly, 'Probe.arrow')})`]);
  const nanOnly = await stateOf([[0, NaN]]);
  t.deepEqual(nonFiniteValues(readState(nanOnly, CLASSES)), [`Probe.q: 1 NaN of 1 values (state ${join(nanOnly, 'Probe.arrow')})`]);
});
