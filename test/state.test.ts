/**
 * State files (runtime/state.ts, cli/state.ts, cli/compare.ts): Arrow dump → load round
 * trips for every app (identical state, and resuming K iterations from a state taken
 * after K gives the digest of 2K), bit-exact values of every field kind with handles
 * remapped, typed errors naming class and field for malformed or mismatching files, and
 * the CLI's --dump / --init / compare with their exit codes.
 */
import test from 'ava';
import { describeChild, lastJson, smmo } from './helpers/child.js';
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Bool,
  Field,
  Float32,
  Float64,
  makeData,
  makeVector,
  RecordBatch,
  Schema,
  Struct,
  Table,
  tableFromIPC,
  tableToIPC,
  Uint32,
  type Data,
} from 'apache-arrow';
import type { App, AppParams } from '../apps/app.js';
import { appModule, loadApp } from '../apps/registry.js';
import { compareLoaded } from '../cli/compare.js';
import { array, bool, createRuntime, f32, f64, i16, i32, i8, object, ref, u16, u32, u8, UsageError, type Runtime } from '../index.js';
import { readState, restoreState, StateFileError, writeState, type StateInfo } from '../runtime/state.js';

const work = mkdtempSync(join(tmpdir(), 'smmo-state-'));
test.after.always(() => rmSync(work, { recursive: true, force: true }));
let dirs = 0;
const newDir = (): string => join(work, `s${dirs++}`);

// ------------------------------------------------------------------ apps: round trip and resume

const SMALL: Record<string, AppParams> = {
  nbody: { bodies: 150 },
  collision: { bodies: 300 },
  'wa-tor': { width: 40, height: 30 },
  'game-of-life': { width: 48, height: 32, density: 0.3 },
  generation: { width: 48, height: 32, density: 0.3 },
  traffic: { intersections: 20 },
  'linux-scalability': { k: 8, lanes: 40, sweep: 0 },
  structure: { nodes: 200 },
  sugarscape: { width: 40, height: 30 },
  'barnes-hut': { bodies: 300 },
};
const K = 6;
const SEED = 7;

async function runtimeOf(app: App, params: AppParams, threads = 1): Promise<Runtime> {
  return createRuntime({
    classes: app.classes,
    heap: app.heapFor(params),
    threads,
    checked: threads === 1,
    modules: [appModule(app.name)!],
    ...(threads > 1 ? { inlineBlocks: 0, startTimeoutMs: 120_000 } : {}),
  });
}

function infoOf(app: App, rt: Runtime, params: AppParams, iterations: number): StateInfo {
  const p: Record<string, number | string | null> = {};
  for (const [k, v] of Object.entries(params)) p[k] = v ?? null;
  return { app: app.name, iterations, seed: SEED, params: p, appState: app.saveState?.(rt) ?? {} };
}

for (const [name, params] of Object.entries(SMALL)) {
  test(`${name}: dump after K, load, identical state; K more iterations give the digest of 2K iterations`, async (t) => {
    const app = (await loadApp(name))!;
    // Reference: 2K iterations straight.
    const direct = await runtimeOf(app, params);
    await app.init(direct, params, SEED);
    for (let k = 0; k < 2 * K; k++) await app.step(direct, k);
    const want = app.digest(direct);
    await direct.close();

    const a = await runtimeOf(app, params);
    await app.init(a, params, SEED);
    for (let k = 0; k < K; k++) await app.step(a, k);
    const dirA = newDir();
    const files = writeState(a, dirA, infoOf(app, a, params, K));
    t.is(files.length, a.table.concreteIds.length, 'one file per concrete class');
    const digestA = app.digest(a);
    const countsA = a.objectCounts();
    await a.close();

    const state = readState(dirA, app.classes, app.name);
    t.is(state.info.iterations, K);
    t.deepEqual(state.info.params, infoOf(app, a, params, K).params);
    for (const threads of name === 'wa-tor' ? [1, 2] : [1]) {
      const b = await runtimeOf(app, params, threads);
      try {
        await restoreState(b, state);
        app.restoreState?.(b, state.info.appState);
        t.deepEqual(b.objectCounts(), countsA);
        t.is(app.digest(b), digestA, 'the loaded state has the digest of the dumped one');
        // Dump again: the same values field by field (objects matched by handle rank).
        const dirB = newDir();
        writeState(b, dirB, infoOf(app, b, params, K));
        const cmp = compareLoaded(state, readState(dirB, app.classes, app.name), { abs: 0, rel: 0 });
        t.true(cmp.ok, JSON.stringify(cmp.classes));
        for (const c of Object.values(cmp.classes)) for (const f of Object.values(c.fields)) t.is(f.maxAbs, 0);
        for (let k = K; k < 2 * K; k++) await app.step(b, k);
        t.is(app.digest(b), want, `resumed on ${threads} thread(s): digest of ${2 * K} iterations`);
        if (threads === 1) b.validateHeap();
      } finally {
        await b.close();
      }
    }
  });
}

// ------------------------------------------------------------------ every field kind, bit for bit

abstract class Node extends object({ next: ref<Node>('Node') }, { abstract: true }) {}
class Rec extends Node.extend({
  a: f32,
  b: f64,
  c: i8,
  d: u8,
  e: i16,
  f: u16,
  g: i32,
  h: u32,
  flag: bool,
  arr: array(f32, 3),
  recs: array(ref<Rec>('Rec'), 2),
  flags: array(bool, 3),
}) {}
class Leaf extends Node.extend({ w: u16, weights: array(f64, 3) }) {}
const KINDS = [Node, Rec, Leaf];
const INFO: StateInfo = { app: 'test', iterations: 3, seed: 1, params: { n: 40 }, appState: { width: 2 } };

/** A runtime with 40 Recs and 10 Leafs, some deleted (holes in the handle space), linked by references. */
async function kindsRuntime(): Promise<{ rt: Runtime; recs: number[]; leaves: number[] }> {
  const rt = await createRuntime({ classes: KINDS, heap: 4 << 20, checked: true });
  let recs: number[] = [];
  let leaves: number[] = [];
  for (let i = 0; i < 10; i++) leaves.push(rt.create(Leaf, { w: 1000 + i }).handle);
  for (let i = 0; i < 40; i++) {
    recs.push(
      rt.create(Rec, {
        a: i === 0 ? -0 : i === 1 ? Infinity : i / 3,
        b: i === 0 ? Number.MIN_VALUE : Math.PI * i,
        c: -128 + i,
        d: 255 - i,
        e: -32768 + i,
        f: 65535 - i,
        g: -2147483648 + i,
        h: 4294967295 - i,
        flag: i % 3 === 0,
        arr: [i, -i, 1e-40],
        flags: [i % 2 === 0, true, false],
      }).handle,
    );
  }
  // Holes: delete every fifth Rec and one Leaf.
  for (let i = 0; i < recs.length; i += 5) rt.destroy(rt.get(Rec, recs[i]!));
  recs = recs.filter((_, i) => i % 5 !== 0);
  rt.destroy(rt.get(Leaf, leaves[3]!));
  leaves = leaves.filter((_, i) => i !== 3);
  recs.forEach((h, i) => {
    const r = rt.get(Rec, h);
    r.next = i % 2 === 0 ? rt.get(Leaf, leaves[i % leaves.length]!) : rt.get(Rec, recs[(i + 7) % recs.length]!);
    r.recs.set(0, rt.get(Rec, recs[(i + 1) % recs.length]!));
    r.recs.set(1, i % 4 === 0 ? null : rt.get(Rec, recs[(i * 3) % recs.length]!));
  });
  leaves.forEach((h, i) => {
    rt.get(Leaf, h).next = i === 0 ? null : rt.get(Rec, recs[i]!);
  });
  // NaN payloads, written as bits (a JavaScript number would not keep them).
  const t = rt.table.byClass(Rec)!;
  const fa = t.fields.find((f) => f.name === 'a')!;
  const fb = t.fields.find((f) => f.name === 'b')!;
  const h0 = recs[2]!;
  const o = rt.heap.blockOffset(h0 >>> 5);
  rt.heap.u32[((o + fa.offsets[0]!) >>> 2) + (h0 & 31)] = 0x7fc01234;
  rt.heap.u32[((o + fb.offsets[0]!) >>> 2) + 2 * (h0 & 31)] = 0x00abcdef;
  rt.heap.u32[((o + fb.offsets[0]!) >>> 2) + 2 * (h0 & 31) + 1] = 0x7ff80000;
  return { rt, recs, leaves };
}

/** Every field of a Rec as raw heap words/bytes, references as ranks among `recs`/`leaves`. */
function snapshotRec(rt: Runtime, h: number, recs: number[], leaves: number[]): unknown[] {
  const t = rt.table.byClass(Rec)!;
  const o = rt.heap.blockOffset(h >>> 5);
  const s = h & 31;
  const rank = (x: number): string => (x === 0 ? 'null' : recs.includes(x) ? `Rec#${recs.indexOf(x)}` : `Leaf#${leaves.indexOf(x)}`);
  const out: unknown[] = [];
  for (const f of t.fields) {
    for (const off of f.offsets) {
      const at = o + off;
      if (f.kind === 'ref') out.push(rank(rt.heap.u32[(at >>> 2) + s]!));
      else if (f.elemBytes === 8) out.push([rt.heap.u32[(at >>> 2) + 2 * s], rt.heap.u32[(at >>> 2) + 2 * s + 1]]);
      else if (f.elemBytes === 4) out.push(rt.heap.u32[(at >>> 2) + s]);
      else if (f.elemBytes === 2) out.push(rt.heap.u16[(at >>> 1) + s]);
      else out.push(rt.heap.u8[at + s]);
    }
  }
  return out;
}

test('every field kind round-trips bit for bit (NaN payloads, -0, extremes); references are remapped to the new handles', async (t) => {
  const { rt, recs, leaves } = await kindsRuntime();
  const before = recs.map((h) => snapshotRec(rt, h, recs, leaves));
  const leafBefore = leaves.map((h) => [rt.get(Leaf, h).w, rt.get(Leaf, h).next?.handle ?? 0]);
  const dir = newDir();
  writeState(rt, dir, INFO);
  await rt.close();

  // Arrow types as pyarrow/pandas see them.
  const tbl = tableFromIPC(readFileSync(join(dir, 'Rec.arrow')));
  const types = Object.fromEntries(tbl.schema.fields.map((f) => [f.name, String(f.type)]));
  t.like(types, { handle: 'Uint32', next: 'Uint32', a: 'Float32', b: 'Float64', c: 'Int8', d: 'Uint8', e: 'Int16', f: 'Uint16' });
  t.like(types, { g: 'Int32', h: 'Uint32', flag: 'Bool', arr_0: 'Float32', arr_2: 'Float32', recs_1: 'Uint32', flags_2: 'Bool' });
  t.is(tbl.schema.metadata.get('smmo.class'), 'Rec');
  t.is(tbl.schema.metadata.get('smmo.app'), 'test');
  t.is(tbl.numRows, recs.length);
  t.deepEqual(
    [...(tbl.getChild('handle')!.toArray() as Uint32Array)],
    [...recs].sort((x, y) => x - y),
  );

  const state = readState(dir, KINDS, 'test');
  t.deepEqual(state.info.appState, { width: 2 });
  // A fresh heap with objects already in it: the new handles cannot be the old ones.
  const rt2 = await createRuntime({ classes: KINDS, heap: 4 << 20, checked: true });
  for (let i = 0; i < 7; i++) rt2.create(Leaf);
  const map = await restoreState(rt2, state);
  const recs2 = [...map.get('Rec')!.new];
  const leaves2 = [...map.get('Leaf')!.new];
  t.notDeepEqual(
    recs2,
    [...recs].sort((x, y) => x - y),
    'handles were remapped',
  );
  t.is(rt2.count(Rec), recs.length);
  t.is(rt2.count(Leaf), leaves.length + 7);
  // Old handle i-th smallest ↔ new handle i-th smallest.
  const oldSorted = [...recs].sort((x, y) => x - y);
  const oldLeaves = [...leaves].sort((x, y) => x - y);
  for (let i = 0; i < recs.length; i++) {
    const k = recs.indexOf(oldSorted[i]!);
    const mapped = (before[k] as unknown[]).map((v) =>
      typeof v === 'string' && v.startsWith('Rec#')
        ? `Rec#${recs2.indexOf(recs2[oldSorted.indexOf(recs[Number(v.slice(4))]!)]!)}`
        : typeof v === 'string' && v.startsWith('Leaf#')
          ? `Leaf#${oldLeaves.indexOf(leaves[Number(v.slice(5))]!)}`
          : v,
    );
    t.deepEqual(snapshotRec(rt2, recs2[i]!, recs2, leaves2), mapped, `Rec with the ${i}-th smallest handle`);
  }
  for (let i = 0; i < leaves.length; i++) {
    const k = leaves.indexOf(oldLeaves[i]!);
    const l = rt2.get(Leaf, leaves2[i]!);
    t.is(l.w, leafBefore[k]![0]!);
    const oldNext = leafBefore[k]![1]!;
    t.is(l.next?.handle ?? 0, oldNext === 0 ? 0 : recs2[oldSorted.indexOf(oldNext)]!);
  }
  rt2.validateHeap();
  await rt2.close();
});

// ------------------------------------------------------------------ malformed and mismatching files

/** A fresh kinds state directory. */
async function kindsState(): Promise<string> {
  const { rt } = await kindsRuntime();
  const dir = newDir();
  writeState(rt, dir, INFO);
  await rt.close();
  return dir;
}

/** Rewrite one class file: `edit` may change the fields, their data and the schema metadata. */
function rewrite(file: string, edit: (fields: Field[], data: Data[], meta: Map<string, string>) => void): void {
  const tbl = tableFromIPC(readFileSync(file));
  const fields = [...tbl.schema.fields];
  const data = fields.map((f) => tbl.getChild(f.name)!.data[0]!);
  const meta = new Map(tbl.schema.metadata);
  edit(fields, data, meta);
  const schema = new Schema(fields, meta);
  const batch = new RecordBatch(schema, makeData({ type: new Struct(fields), length: tbl.numRows, children: data }));
  writeFileSync(file, tableToIPC(new Table(schema, [batch]), 'file'));
}

function column(fields: Field[], name: string): number {
  const k = fields.findIndex((f) => f.name === name);
  if (k < 0) throw new Error(`no column ${name}`);
  return k;
}

/** readState must throw a StateFileError naming `cls` and `field` with a message matching `re`. */
function refused(
  t: { true(v: boolean, m?: string): void; is(a: unknown, b: unknown, m?: string): void; regex(s: string, r: RegExp): void },
  dir: string,
  cls: string | null,
  field: string | null,
  re: RegExp,
  app = 'test',
): void {
  let err: unknown = null;
  try {
    readState(dir, KINDS, app);
  } catch (e) {
    err = e;
  }
  t.true(err instanceof StateFileError, `expected a StateFileError, got ${String(err)}`);
  t.true(err instanceof UsageError, 'a UsageError (CLI exit 2)');
  const e = err as StateFileError;
  t.is(e.className, cls);
  t.is(e.field, field);
  t.regex(e.message, re);
}

test('truncated, foreign and missing files → StateFileError naming the class', async (t) => {
  const dir = await kindsState();
  const rec = join(dir, 'Rec.arrow');
  const good = readFileSync(rec);
  writeFileSync(rec, good.subarray(0, Math.floor(good.length / 2)));
  refused(t, dir, 'Rec', null, /truncated/);
  writeFileSync(rec, 'posX,posY\n1,2\n');
  refused(t, dir, 'Rec', null, /not an Arrow IPC file/);
  writeFileSync(rec, good);
  unlinkSync(join(dir, 'Leaf.arrow'));
  refused(t, dir, 'Leaf', null, /is missing/);
  copyFileSync(rec, join(dir, 'Leaf.arrow'));
  refused(t, dir, 'Leaf', null, /holds class 'Rec'/);
  copyFileSync(rec, join(dir, 'Planet.arrow'));
  refused(t, dir, 'Planet', null, /no concrete class Planet/);
  unlinkSync(join(dir, 'Planet.arrow'));
  refused(t, dir, 'Rec', null, /written by app 'test', not 'nbody'/, 'nbody');
  // A class file that cannot be read (here a directory) is a malformed state, not a crash.
  unlinkSync(rec);
  mkdirSync(rec);
  refused(t, dir, 'Rec', null, /Rec\.arrow \(class Rec\): cannot be read \(EISDIR/);
  rmSync(rec, { recursive: true });
  writeFileSync(rec, good);
  t.throws(() => readState(join(dir, 'nothing'), KINDS), { instanceOf: StateFileError, message: /does not exist/ });
  t.throws(() => readState(rec, KINDS), { instanceOf: StateFileError, message: /not a directory/ });
});

test('wrong type, missing or extra column, nulls → StateFileError naming class and field', async (t) => {
  const dir = await kindsState();
  const rec = join(dir, 'Rec.arrow');
  const good = readFileSync(rec);
  rewrite(rec, (fields, data) => {
    const k = column(fields, 'a');
    const n = data[k]!.length;
    fields[k] = new Field('a', new Float64(), false);
    data[k] = makeData({ type: new Float64(), length: n, data: Float64Array.from(data[k]!.values as Float32Array) });
  });
  refused(t, dir, 'Rec', 'a', /Arrow type Float64, expected Float32/);
  writeFileSync(rec, good);
  rewrite(rec, (fields, data) => {
    const k = column(fields, 'flags_1');
    fields.splice(k, 1);
    data.splice(k, 1);
  });
  refused(t, dir, 'Rec', 'flags_1', /is missing \(the column of element 1 of field flags: array\(bool, 3\), Bool\)/);
  writeFileSync(rec, good);
  rewrite(rec, (fields, data) => {
    fields.push(new Field('colour', new Uint32(), false));
    data.push(makeData({ type: new Uint32(), length: data[0]!.length, data: new Uint32Array(data[0]!.length) }));
  });
  refused(t, dir, 'Rec', 'colour', /is not a field of Rec/);
  writeFileSync(rec, good);
  rewrite(rec, (fields, data) => {
    const k = column(fields, 'h');
    const n = data[k]!.length;
    fields[k] = new Field('h', new Uint32(), true);
    data[k] = makeData({
      type: new Uint32(),
      length: n,
      data: data[k]!.values as Uint32Array,
      nullBitmap: new Uint8Array(Math.ceil(n / 8)).fill(0xfe),
      nullCount: Math.ceil(n / 8),
    });
  });
  refused(t, dir, 'Rec', 'h', /null value/);
});

test('bad handles, dangling or mistyped references, bad metadata → StateFileError naming class and field', async (t) => {
  const dir = await kindsState();
  const rec = join(dir, 'Rec.arrow');
  const leaf = join(dir, 'Leaf.arrow');
  const good = readFileSync(rec);
  const goodLeaf = readFileSync(leaf);
  const setColumn = (name: string, row: number, value: number): void =>
    rewrite(rec, (fields, data) => {
      const k = column(fields, name);
      const v = Uint32Array.from(data[k]!.values as Uint32Array);
      v[row] = value;
      data[k] = makeData({ type: new Uint32(), length: v.length, data: v });
    });
  const handles = tableFromIPC(good).getChild('handle')!.toArray() as Uint32Array;
  const leafHandles = tableFromIPC(goodLeaf).getChild('handle')!.toArray() as Uint32Array;

  setColumn('handle', 1, handles[0]!);
  refused(t, dir, 'Rec', 'handle', new RegExp(`holds handle ${handles[0]} twice`));
  writeFileSync(rec, good);
  setColumn('handle', 0, 0);
  refused(t, dir, 'Rec', 'handle', /handle 0/);
  writeFileSync(rec, good);
  setColumn('handle', 0, leafHandles[0]!);
  t.throws(() => readState(dir, KINDS, 'test'), { instanceOf: StateFileError, message: /used by two objects/ });
  writeFileSync(rec, good);
  setColumn('next', 3, 0x7fffff00);
  refused(t, dir, 'Rec', 'next', /refers to handle 2147483392, which is no object of the state/);
  writeFileSync(rec, good);
  setColumn('recs_0', 2, leafHandles[1]!);
  refused(t, dir, 'Rec', 'recs_0', new RegExp(`refers to Leaf ${leafHandles[1]}, expected a Rec`));
  writeFileSync(rec, good);
  rewrite(rec, (_f, _d, meta) => meta.delete('smmo.format'));
  refused(t, dir, 'Rec', null, /no schema metadata 'smmo.format'/);
  writeFileSync(rec, good);
  rewrite(rec, (_f, _d, meta) => meta.set('smmo.layoutVersion', '99'));
  refused(t, dir, 'Rec', null, /layout version 99/);
  writeFileSync(rec, good);
  rewrite(leaf, (_f, _d, meta) => meta.set('smmo.iterations', '4'));
  t.throws(() => readState(dir, KINDS, 'test'), { instanceOf: StateFileError, message: /files of different dumps were mixed/ });
  writeFileSync(leaf, goodLeaf);
  t.notThrows(() => readState(dir, KINDS, 'test'), 'the restored files read again');
});

test('rows in any order (another writer) load as if sorted by handle', async (t) => {
  const dir = await kindsState();
  const want = readState(dir, KINDS, 'test');
  rewrite(join(dir, 'Rec.arrow'), (fields, data) => {
    // Reverse every column's rows.
    fields.forEach((f, k) => {
      const d = data[k]!;
      const n = d.length;
      const vec = makeVector(d);
      const at = (i: number): unknown => vec.get(n - 1 - i);
      if (String(f.type) === 'Bool') {
        const bits = new Uint8Array(Math.ceil(n / 8));
        for (let i = 0; i < n; i++) if (at(i) === true) bits[i >>> 3]! |= 1 << (i & 7);
        data[k] = makeData({ type: new Bool(), length: n, data: bits });
      } else {
        const values = d.values as Float32Array;
        const reversed = values.slice(0, n).reverse();
        data[k] = makeData({ type: f.type as Float32, length: n, data: reversed });
      }
    });
  });
  const got = readState(dir, KINDS, 'test');
  t.not(
    tableFromIPC(readFileSync(join(dir, 'Rec.arrow')))
      .getChild('handle')!
      .get(0),
    got.classes[0]!.handles[0],
    'the file is not sorted',
  );
  t.true(compareLoaded(want, got, { abs: 0, rel: 0 }).ok);
  t.deepEqual([...got.classes[0]!.handles], [...want.classes[0]!.handles]);
});

// ------------------------------------------------------------------ CLI

test('CLI: run --dump, then --init --iterations K on 2 threads gives the digest of 2K; --json names init and dump', async (t) => {
  const a = newDir();
  const size = ['--width', '48', '--height', '40'];
  const [first, straight] = await Promise.all([
    smmo(['run', 'wa-tor', ...size, '--iterations', '5', '--seed', '3', '--dump', a, '--json']),
    smmo(['run', 'wa-tor', ...size, '--iterations', '10', '--seed', '3', '--json']),
  ]);
  t.is(first.code, 0, describeChild(first));
  t.deepEqual(
    lastJson(first.stdout)['dump'],
    ['Cell', 'Fish', 'Shark'].map((c) => join(a, `${c}.arrow`)),
  );
  const b = newDir();
  const resumed = await smmo(['run', 'wa-tor', '--init', a, '--iterations', '5', '--threads', '2', '--dump', b, '--json']);
  t.is(resumed.code, 0, describeChild(resumed));
  const j = lastJson(resumed.stdout);
  t.is(j['digest'], lastJson(straight.stdout)['digest']);
  t.is(j['init'], a);
  t.is(j['startIteration'], 5);
  t.deepEqual(j['params'], { width: 48, height: 40 });
  t.is(j['seed'], 3);
  t.is(readState(b, (await loadApp('wa-tor'))!.classes, 'wa-tor').info.iterations, 10, 'the new dump counts all iterations');
});

test('CLI: --init with a bad or mismatching state, or a flag that disagrees with it → exit 2 naming class and field', async (t) => {
  const a = newDir();
  t.is((await smmo(['run', 'nbody', '--bodies', '64', '--iterations', '1', '--quiet', '--dump', a])).code, 0);
  const other = await smmo(['run', 'collision', '--init', a, '--iterations', '1']);
  t.is(other.code, 2, describeChild(other));
  t.regex(other.stderr, /smmo run collision: --init: state .*Body\.arrow \(class Body\): was written by app 'nbody', not 'collision'/);
  const flag = await smmo(['run', 'nbody', '--init', a, '--bodies', '65']);
  t.is(flag.code, 2, describeChild(flag));
  t.regex(flag.stderr, /--bodies 65 disagrees with the state .* \(bodies = 64\)/);
  t.is((await smmo(['run', 'nbody', '--init', a, '--bodies', '64', '--iterations', '1', '--quiet'])).code, 0, 'an agreeing flag is fine');
  rewrite(join(a, 'Body.arrow'), (fields, data) => {
    const k = column(fields, 'mass');
    fields.splice(k, 1);
    data.splice(k, 1);
  });
  const missing = await smmo(['run', 'nbody', '--init', a]);
  t.is(missing.code, 2, describeChild(missing));
  t.regex(missing.stderr, /\(class Body, field mass\): is missing/);
  const none = await smmo(['run', 'nbody', '--init', join(a, 'nope')]);
  t.is(none.code, 2, describeChild(none));
  t.regex(none.stderr, /does not exist/);
  // A --dump target that cannot hold the state fails before the run.
  const onFile = await smmo(['run', 'nbody', '--bodies', '64', '--dump', join(a, 'Body.arrow')]);
  t.is(onFile.code, 2, describeChild(onFile));
  t.regex(onFile.stderr, /--dump: state .*Body\.arrow: exists and is not a directory/);
});

test("CLI: --init checks the state's parameters against the app's flags; NaN and infinities in float columns are warnings", async (t) => {
  const a = newDir();
  t.is((await smmo(['run', 'nbody', '--bodies', '64', '--iterations', '1', '--quiet', '--dump', a])).code, 0);
  const withParams = (params: string): string => {
    const d = newDir();
    cpSync(a, d, { recursive: true });
    rewrite(join(d, 'Body.arrow'), (_f, _d, meta) => meta.set('smmo.params', params));
    return d;
  };
  const lots = await smmo(['run', 'nbody', '--init', withParams('{"bodies":"lots"}'), '--iterations', '1', '--json']);
  t.is(lots.code, 2, describeChild(lots));
  t.regex(
    lots.stderr,
    /^smmo run nbody: --init: state .*: metadata smmo\.params has bodies = "lots", which the app refuses: --bodies must be an integer in 1 … 4294967295, got 'lots'/,
  );
  t.is(lots.stdout, '', 'nothing echoed into a summary or JSON');
  const fraction = await smmo(['run', 'nbody', '--init', withParams('{"bodies":6.5}'), '--iterations', '1']);
  t.is(fraction.code, 2, describeChild(fraction));
  t.regex(fraction.stderr, /smmo\.params has bodies = 6\.5, which the app refuses/);
  const text = await smmo(['run', 'nbody', '--init', withParams('{"bodies":"64"}'), '--iterations', '1']);
  t.is(text.code, 2, describeChild(text));
  t.regex(text.stderr, /--bodies must be a number, got the string '64'/);
  const extra = await smmo(['run', 'nbody', '--init', withParams('{"bodies":64,"speed":2}'), '--iterations', '1']);
  t.is(extra.code, 2, describeChild(extra));
  t.regex(extra.stderr, /smmo\.params has 'speed', which is not a parameter of nbody \(its parameters: bodies\)/);
  const nested = await smmo(['run', 'nbody', '--init', withParams('{"bodies":[64]}'), '--iterations', '1']);
  t.is(nested.code, 2, describeChild(nested));
  t.regex(nested.stderr, /metadata 'smmo\.params' has bodies: \[64\], not a number, a string or null/);

  // NaN and infinities: the run goes on; the summary and --json say where they are.
  const odd = newDir();
  cpSync(a, odd, { recursive: true });
  rewrite(join(odd, 'Body.arrow'), (fields, data) => {
    const x = data[column(fields, 'posX')]!.values as Float32Array;
    x[0] = Number.NaN;
    x[1] = Number.NaN;
    (data[column(fields, 'velY')]!.values as Float32Array)[2] = -Infinity;
  });
  const r = await smmo(['run', 'nbody', '--init', odd, '--iterations', '1', '--json']);
  t.is(r.code, 0, describeChild(r));
  const warnings = lastJson(r.stdout)['warnings'] as string[];
  t.is(warnings.length, 2);
  t.regex(warnings[0]!, /^Body\.posX: 2 NaN of 64 values \(state .*Body\.arrow\)$/);
  t.regex(warnings[1]!, /^Body\.velY: 1 ±Infinity of 64 values/);
  const human = await smmo(['run', 'nbody', '--init', odd, '--iterations', '1']);
  t.regex(human.stdout, /^warnings +Body\.posX: 2 NaN of 64 values/m);
  const clean = await smmo(['run', 'nbody', '--init', a, '--iterations', '1', '--json']);
  t.false('warnings' in lastJson(clean.stdout), 'no warnings key without warnings');
});

test('CLI: compare → 0 within tolerance, 1 beyond, 2 for bad or mismatching states', async (t) => {
  const [a, b, c, w] = [newDir(), newDir(), newDir(), newDir()];
  const runs = await Promise.all([
    smmo(['run', 'nbody', '--bodies', '100', '--iterations', '3', '--quiet', '--dump', a]),
    smmo(['run', 'nbody', '--bodies', '100', '--iterations', '3', '--quiet', '--backend', 'wasm', '--dump', b]),
    smmo(['run', 'nbody', '--bodies', '100', '--iterations', '4', '--quiet', '--dump', c]),
    smmo(['run', 'wa-tor', '--width', '16', '--height', '16', '--iterations', '1', '--quiet', '--dump', w]),
  ]);
  for (const r of runs) t.is(r.code, 0, describeChild(r));
  const same = await smmo(['compare', a, a]);
  t.is(same.code, 0, describeChild(same));
  t.regex(same.stdout, /OK: every field within tolerance/);
  t.regex(same.stdout, /Body\s+posX\s+100 \/ 100\s+handle\s+0\s+0/);
  const later = await smmo(['compare', a, c, '--json']);
  t.is(later.code, 1, describeChild(later));
  const rep = lastJson(later.stdout) as { ok: boolean; classes: { Body: { fields: Record<string, { maxAbs: number; beyond: number }> } } };
  t.false(rep.ok);
  t.true(rep.classes.Body.fields['posX']!.maxAbs > 0);
  t.true(rep.classes.Body.fields['posX']!.beyond > 0);
  t.is(rep.classes.Body.fields['mass']!.maxAbs, 0, 'masses do not change');
  const loose = await smmo(['compare', a, c, '--tol', '1']);
  t.is(loose.code, 0, loose.stdout);
  const backends = await smmo(['compare', a, b, '--rel', '1e-3']);
  t.is(backends.code, 0, backends.stdout);
  const apps = await smmo(['compare', a, w]);
  t.is(apps.code, 2, describeChild(apps));
  t.regex(apps.stderr, /is a state of app nbody, .* of app wa-tor/);
  writeFileSync(join(c, 'Body.arrow'), readFileSync(join(c, 'Body.arrow')).subarray(0, 300));
  const broken = await smmo(['compare', a, c]);
  t.is(broken.code, 2, describeChild(broken));
  t.regex(broken.stderr, /\(class Body\): is truncated/);
  const bad = await smmo(['compare', a, b, '--tol', 'x']);
  t.is(bad.code, 2, describeChild(bad));
  t.regex(bad.stderr, /--tol must be a number/);
  t.is((await smmo(['compare', a])).code, 2);
  const help = await smmo(['compare', '--help']);
  t.is(help.code, 0, describeChild(help));
  t.regex(help.stdout, /Usage: smmo compare A B/);
});
