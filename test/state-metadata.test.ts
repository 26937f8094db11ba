/**
 * State files (runtime/state.ts), in-process: the checks of each file's schema metadata
 * (readInfo), of the directory and the file (readState, readArrowFile), files of several
 * record batches with rows in any order (readClass), and nonFiniteValues. Issue 17's
 * mutation run (docs/mutation.md) found these checked only through the CLI tests of
 * test/state, or not at all. Every state here is written by writeState and then edited
 * with apache-arrow.
 */
import test from 'ava';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Bool, Field, makeData, makeVector, RecordBatch, Schema, Struct, Table, tableFromIPC, tableToIPC, type Data } from 'apache-arrow';
import { bool, createRuntime, f32, f64, i32, object } from '../index.js';
import { nonFiniteValues, readState, StateFileError, writeState, type StateInfo } from '../runtime/state.js';

const work = mkdtempSync(join(tmpdir(), 'smmo-state-meta-'));
test.after.always(() => rmSync(work, { recursive: true, force: true }));
let dirs = 0;

class Probe extends object({ p: f32, q: f64, k: i32, b: bool }) {}
class Other extends object({ x: f32 }) {}
const CLASSES = [Probe, Other];
const INFO: StateInfo = { app: 'test', iterations: 3, seed: 7, params: { n: 40, name: 'x', none: null }, appState: { width: 2 } };

/** A state of Probe objects with these (p, q) values and one Other, in a new directory. */
async function stateOf(values: [number, number][] = [[1, 2]], info: StateInfo = INFO): Promise<string> {
  const rt = await createRuntime({ classes: CLASSES, heap: 4 << 20, checked: true });
  try {
    values.forEach(([p, q], k) => rt.create(Probe, { p, q, k, b: k % 3 === 1 }));
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
  for (const v of ['-1', '1.5', '3x', 'x3', '', '99999999999999999999', '1e3', '0x10', ' 3']) {
    refused('smmo.iterations', v, new RegExp(`metadata 'smmo.iterations' is '${v}', not a non-negative integer`));
  }
  refused('smmo.seed', '4294967296', /metadata 'smmo.seed' is 4294967296, beyond 4294967295/);
  for (const v of ['[1]', 'null', '3', '"s"', '{']) {
    refused('smmo.params', v, /metadata 'smmo.params' is not a JSON object \(/);
  }
  refused('smmo.params', '[1]', /metadata 'smmo.params' is not a JSON object \(not a JSON object\)/);
  refused('smmo.params', '{"n":1e999}', /metadata 'smmo.params' has n: null, not a number, a string or null/); // Infinity
  refused('smmo.appState', '{"width":1e999}', /metadata 'smmo.appState' has width: null, not a finite number/);
  refused('smmo.params', '{"n":[64]}', /metadata 'smmo.params' has n: \[64\], not a number, a string or null/);
  refused('smmo.params', '{"n":true}', /metadata 'smmo.params' has n: true, not a number, a string or null/);
  refused('smmo.params', '{"n":{}}', /has n: \{\}/);
  refused('smmo.appState', '{"width":"2"}', /metadata 'smmo.appState' has width: "2", not a finite number/);
  refused('smmo.appState', '{"width":null}', /metadata 'smmo.appState' has width: null, not a finite number/);
  refused('smmo.appState', '[]', /metadata 'smmo.appState' is not a JSON object/);
  // A key missing is named as missing, not as a malformed value.
  for (const key of ['smmo.params', 'smmo.appState', 'smmo.seed']) {
    writeFileSync(file, good);
    editMeta(file, (m) => m.delete(key));
    t.throws(() => readState(dir, CLASSES), {
      instanceOf: StateFileError,
      message: new RegExp(`\\(class Probe\\): has no schema metadata '${key}': not written by smmo --dump$`),
    });
  }
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

test('readState: files other than <Class>.arrow are ignored; an unknown or missing class file names the classes', async (t) => {
  const dir = await stateOf();
  writeFileSync(join(dir, 'notes.txt'), 'not a class');
  writeFileSync(join(dir, 'Probe.arrow.bak'), 'not a class either');
  t.is(readState(dir, CLASSES).classes.length, 2, 'other files ignored');
  writeFileSync(join(dir, 'Planet.arrow'), readFileSync(join(dir, 'Other.arrow')));
  t.throws(() => readState(dir, CLASSES), {
    instanceOf: StateFileError,
    message: /Planet\.arrow \(class Planet\): the app has no concrete class Planet \(its classes: Probe, Other\); a state of another app\?/,
  });
  rmSync(join(dir, 'Planet.arrow'));
  rmSync(join(dir, 'Other.arrow'));
  t.throws(() => readState(dir, CLASSES), {
    instanceOf: StateFileError,
    message: /Other\.arrow \(class Other\): is missing: a state holds one file per concrete class \(Probe, Other\)/,
  });
});

test('readState: the app and the dump each file belongs to are named when they disagree', async (t) => {
  const dir = await stateOf();
  t.throws(() => readState(dir, CLASSES, 'nbody'), { instanceOf: StateFileError, message: /was written by app 'test', not 'nbody'/ });
  editMeta(join(dir, 'Other.arrow'), (m) => m.set('smmo.seed', '8'));
  t.throws(() => readState(dir, CLASSES, 'test'), {
    instanceOf: StateFileError,
    message: new RegExp(
      `Other\\.arrow \\(class Other\\): does not belong with ${join(dir, 'Probe.arrow').replace(/[.\\/]/g, '\\$&')}: ` +
        'app/iterations/seed test/3/8 vs test/3/7; files of different dumps were mixed',
    ),
  });
});

test('readArrowFile: the magic at both ends, a file too short to hold both, and an unreadable body', async (t) => {
  const dir = await stateOf();
  const file = join(dir, 'Probe.arrow');
  const refused = (bytes: string | Buffer, re: RegExp): void => {
    writeFileSync(file, bytes);
    t.throws(() => readState(dir, CLASSES), { instanceOf: StateFileError, message: re }, String(bytes).slice(0, 20));
  };
  refused('ARROW1', /is truncated \(6 bytes; an Arrow IPC file ends with ARROW1\)/);
  refused('ARROW1ARROW', /is truncated \(11 bytes/);
  // 12 bytes with the magic at both ends: not truncated, but no Arrow file either.
  refused('ARROW1ARROW1', /is not a readable Arrow IPC file \(.+\)$/);
  refused(Buffer.concat([Buffer.from('ARROW1'), Buffer.alloc(64, 0xff), Buffer.from('ARROW1')]), /is not a readable Arrow IPC file \(/);
});

/** The rows of `tbl` in the order `perm`, as record batches of the sizes `sizes`. */
function reordered(tbl: Table, perm: number[], sizes: number[]): Table {
  const fields = tbl.schema.fields;
  const batches: RecordBatch[] = [];
  let from = 0;
  for (const size of sizes) {
    const rows = perm.slice(from, from + size);
    from += size;
    const children: Data[] = fields.map((f) => {
      const vec = tbl.getChild(f.name)!;
      if (String(f.type) === 'Bool') {
        const bits = new Uint8Array(Math.ceil(size / 8));
        rows.forEach((r, i) => {
          if (vec.get(r) === true) bits[i >>> 3]! |= 1 << (i & 7);
        });
        return makeData({ type: new Bool(), length: size, data: bits });
      }
      const all = vec.toArray() as Float32Array;
      const Ctor = all.constructor as new (n: number) => Float32Array;
      const values = new Ctor(size);
      rows.forEach((r, i) => (values[i] = all[r]!));
      return makeVector(values).data[0]!;
    });
    batches.push(new RecordBatch(tbl.schema, makeData({ type: new Struct(fields), length: size, children })));
  }
  return new Table(tbl.schema, batches);
}

test('readClass: a file of several record batches with its rows in any order loads as the sorted single batch', async (t) => {
  const values: [number, number][] = Array.from({ length: 23 }, (_, i) => [i / 4, -i * Math.PI]);
  const dir = await stateOf(values);
  const want = readState(dir, CLASSES);
  const file = join(dir, 'Probe.arrow');
  const tbl = tableFromIPC(readFileSync(file));
  // A shuffle (i → 7i mod 23), not a reversal, in batches of 5, 1, 9 and 8 rows.
  const perm = Array.from({ length: 23 }, (_, i) => (7 * i) % 23);
  writeFileSync(file, tableToIPC(reordered(tbl, perm, [5, 1, 9, 8]), 'file'));
  t.is(tableFromIPC(readFileSync(file)).batches.length, 4);
  const got = readState(dir, CLASSES);
  const [a, b] = [want.classes[0]!, got.classes[0]!];
  t.deepEqual([...b.handles], [...a.handles]);
  for (const [k, col] of a.columns.entries()) t.deepEqual([...b.columns[k]!.values], [...col.values], col.name);
  // Every row's bool is its own object's (b = k mod 3 = 1), not a neighbour's.
  const ks = [...b.columns.find((c) => c.name === 'k')!.values];
  t.deepEqual(
    [...b.columns.find((c) => c.name === 'b')!.values],
    ks.map((k) => (k % 3 === 1 ? 1 : 0)),
  );
  t.deepEqual(
    [...ks].sort((x, y) => x - y),
    [...values.keys()],
  );
  // In order, but in several batches.
  writeFileSync(file, tableToIPC(reordered(tbl, [...tbl.getChild('handle')!.toArray().keys()], [10, 13]), 'file'));
  const split = readState(dir, CLASSES).classes[0]!;
  for (const [k, col] of a.columns.entries()) t.deepEqual([...split.columns[k]!.values], [...col.values], `${col.name}, two batches`);
});

test('readClass: an extra column names the columns there should be; a missing handle column is named as such', async (t) => {
  const dir = await stateOf();
  const file = join(dir, 'Probe.arrow');
  const good = readFileSync(file);
  /** Rewrite Probe.arrow with the columns `names` (an old name, or [new name, old name]). */
  const columns = (names: (string | [string, string])[]): void => {
    const tbl = tableFromIPC(good);
    const pick = names.map((n): [string, string] => (typeof n === 'string' ? [n, n] : n));
    const fields = pick.map(([to, from]) => {
      const f = tbl.schema.fields.find((x) => x.name === from)!;
      return new Field(to, f.type, f.nullable, f.metadata);
    });
    const schema = new Schema(fields, tbl.schema.metadata);
    const batches = tbl.batches.map((b) => {
      const children = pick.map(([, from]) => b.getChild(from)!.data[0]!);
      return new RecordBatch(schema, makeData({ type: new Struct(fields), length: b.numRows, children }));
    });
    writeFileSync(file, tableToIPC(new Table(schema, batches), 'file'));
  };
  columns(['handle', 'p', 'q', ['kk', 'k'], 'b']);
  t.throws(() => readState(dir, CLASSES), {
    instanceOf: StateFileError,
    message: /field kk\): is not a field of Probe \(its columns: handle, p, q, k, b\)/,
  });
  columns(['p', 'q', 'k', 'b']);
  const e = t.throws(() => readState(dir, CLASSES), { instanceOf: StateFileError, message: /is missing \(the handle column, Uint32\)/ });
  t.is(e?.field, 'handle');
});
