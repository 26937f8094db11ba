/**
 * State files: every object of every concrete class of a runtime, written as Apache
 * Arrow IPC *files* (readable by pyarrow.ipc.open_file, pandas.read_feather, DuckDB …)
 * and read back into a fresh runtime. Used by `smmo run --dump / --init` and
 * `smmo compare` (issue 6, item 6: cross-checking GPU results); captureState gives the
 * same columns from a live runtime, for `smmo run --check` (runtime/compare.ts compares
 * both).
 *
 * Format (version `smmo-state/1`). A state is a DIRECTORY holding one file per concrete
 * class, `<Class>.arrow` (an Arrow IPC file holds one schema, and a table per class is
 * what a pandas user wants: `pd.read_feather('state/Fish.arrow')`). Each file holds one
 * record batch (readers must accept several) with the columns
 *
 *   handle            Uint32, the object's smmo handle (block × 32 + slot): its id
 *   <field>           one column per scalar field, in declaration order (inherited first)
 *   <field>_<k>       one column per element k of an inline array (array(u32, 4) →
 *                     randomState_0 … randomState_3): plain columns, not FixedSizeList,
 *                     so every column is a flat numpy array in pandas
 *
 * Column types are the field's own, so values round-trip bit for bit: f32 → Float32,
 * f64 → Float64, i8/u8/i16/u16/i32/u32 → Int8 … Uint32, bool → Bool, and a reference
 * → Uint32 holding the target's handle, 0 = null. No column is nullable. Schema metadata:
 * smmo.format, smmo.app, smmo.class, smmo.classes (JSON list of the state's files),
 * smmo.layoutVersion (runtime/layout.ts LAYOUT_VERSION), smmo.iterations (iterations
 * run since the app's init), smmo.seed, smmo.params (JSON), smmo.appState (JSON: what an
 * app keeps outside the heap, e.g. a grid's size), smmo.version. Field metadata:
 * smmo.kind, smmo.field, smmo.element (arrays), smmo.target (references).
 *
 * Loading (`restoreState`) invariants:
 *  - every concrete class of the app has a file, no file names another class, every
 *    file's app, class, layout version and iteration count agree, every column exists
 *    with exactly its type and no nulls, no other column exists, handles are non-zero
 *    and unique across classes, every non-null reference names an object of the field's
 *    target class (or a subclass) in the state. Any violation is a StateFileError
 *    naming the file, the class and the field.
 *  - handles are remapped: the new heap hands out its own. Per class, the old handles
 *    sorted ascending are mapped to the new ones sorted ascending, so the ORDER of
 *    handles within a class is kept: deviceDo visits objects in the same order (float
 *    sums such as nbody's digest come out the same) and rank-by-handle rules hold
 *    (apps/grid.ts: cell i is the Cell with the i-th smallest handle). Every reference
 *    field is rewritten through the map.
 *  - values are copied as raw bits (NaN payloads included).
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  Bool,
  type DataType,
  Field,
  Float32,
  Float64,
  Int16,
  Int32,
  Int8,
  makeData,
  RecordBatch,
  Schema,
  Struct,
  Table,
  tableFromIPC,
  tableToIPC,
  Uint16,
  Uint32,
  Uint8,
  type Data,
} from 'apache-arrow';
import { UsageError } from './errors.js';
import { indexOfSorted } from './sorted.js';
import { BLOCK_TYPE_WORD, LAYOUT_VERSION, planTypes, type FieldLayout, type TypeLayout, type TypeTable } from './layout.js';
import type { Runtime } from './runtime.js';
import type { ScalarKind, SmmoClass } from './schema.js';

export const STATE_FORMAT = 'smmo-state/1';
export const STATE_EXTENSION = '.arrow';

/**
 * A state file (or directory) is missing, malformed, or does not match the app's
 * classes. Names the file, the class and the field where known. A UsageError: the CLI
 * reports it as a bad command line (exit 2).
 */
export class StateFileError extends UsageError {
  constructor(
    readonly path: string,
    readonly className: string | null,
    readonly field: string | null,
    detail: string,
  ) {
    const where = className === null ? '' : field === null ? ` (class ${className})` : ` (class ${className}, field ${field})`;
    super(`state ${path}${where}: ${detail}`);
  }
}

/** What a state records besides the objects. */
export interface StateInfo {
  app: string;
  /** Iterations run since the app's init (a resumed run adds its own). */
  iterations: number;
  seed: number;
  params: Record<string, number | string | null>;
  /** What the app keeps outside the heap (App.saveState), e.g. { width, height }. */
  appState: Record<string, number>;
  /** smmo's version that wrote it (informational). */
  version?: string;
}

// ------------------------------------------------------------------ columns

/** One column of a class's table: element `element` of field `field`. */
export interface ColumnPlan {
  name: string;
  field: FieldLayout;
  /** 0 for a scalar, else the array element. */
  element: number;
  /** Byte offset of the column's SOA array in a block. */
  offset: number;
}

const ARROW_TYPE: Record<ScalarKind, () => DataType> = {
  f32: () => new Float32(),
  f64: () => new Float64(),
  i8: () => new Int8(),
  u8: () => new Uint8(),
  i16: () => new Int16(),
  u16: () => new Uint16(),
  i32: () => new Int32(),
  u32: () => new Uint32(),
  bool: () => new Bool(),
  ref: () => new Uint32(),
};

/** The Arrow type name (String(type)) a column of kind `k` must have. */
export function arrowTypeName(k: ScalarKind): string {
  return String(ARROW_TYPE[k]());
}

/** The columns of concrete type `t`, in file order (after `handle`). */
export function columnsOf(t: TypeLayout): ColumnPlan[] {
  const out: ColumnPlan[] = [];
  const seen = new Set<string>(['handle']);
  for (const f of t.fields) {
    const n = Math.max(1, f.length);
    for (let k = 0; k < n; k++) {
      const name = f.length === 0 ? f.name : `${f.name}_${k}`;
      if (seen.has(name)) {
        // One of the two is an inline array, the other a scalar field named like one of its
        // elements (`<array>_<k>`), whichever comes second: the array is the name before the
        // last '_'.
        const arrayName = name.slice(0, name.lastIndexOf('_'));
        throw new UsageError(
          `${t.name}: column '${name}' would be written twice (an inline array '${arrayName}' and a field named '${name}'); ` +
            `rename one of the fields to write a state file`,
        );
      }
      seen.add(name);
      out.push({ name, field: f, element: k, offset: f.offsets[k]! });
    }
  }
  return out;
}

/** Typed array holding one column's values, by element bytes (raw bits). */
type Raw = Uint8Array | Uint16Array | Uint32Array;

function rawArray(elemBytes: number, n: number): Raw {
  switch (elemBytes) {
    case 1:
      return new Uint8Array(n);
    case 2:
      return new Uint16Array(n);
    case 4:
      return new Uint32Array(n);
    default:
      return new Uint32Array(2 * n); // f64: two words per value, copied as bits
  }
}

/** The typed array Arrow expects for kind `k`, over the raw bits in `raw`. */
function asArrowValues(k: ScalarKind, raw: Raw): ArrayBufferView {
  const b = raw.buffer;
  switch (k) {
    case 'f32':
      return new Float32Array(b);
    case 'f64':
      return new Float64Array(b);
    case 'i8':
      return new Int8Array(b);
    case 'i16':
      return new Int16Array(b);
    case 'i32':
      return new Int32Array(b);
    default:
      return raw; // u8, u16, u32, ref; bool is packed separately
  }
}

// ------------------------------------------------------------------ writing

/** Handles of the objects of exactly concrete type `t` (not its subclasses), ascending. */
function handlesOf(rt: Runtime, t: TypeLayout): Uint32Array {
  const heap = rt.heap;
  const out = new Uint32Array(rt.count(t.cls));
  let n = 0;
  rt.deviceDo(t.cls, (o) => {
    const h = o.handle;
    if (heap.i32[heap.blockWord(h >>> 5) + BLOCK_TYPE_WORD] === t.id) out[n++] = h;
  });
  const hs = out.subarray(0, n);
  // deviceDo visits blocks and slots in ascending order; sort anyway if that changes.
  for (let i = 1; i < n; i++) {
    if (hs[i]! < hs[i - 1]!) {
      hs.sort();
      break;
    }
  }
  return hs;
}

/** The raw bits of column `c` of the objects `handles` (bool: the stored byte). */
function readColumn(rt: Runtime, handles: Uint32Array, c: ColumnPlan): Raw {
  const heap = rt.heap;
  const n = handles.length;
  const raw = rawArray(c.field.elemBytes, n);
  for (let i = 0; i < n; i++) {
    const h = handles[i]!;
    const at = heap.blockOffset(h >>> 5) + c.offset;
    const s = h & 31;
    switch (c.field.elemBytes) {
      case 1:
        raw[i] = heap.u8[at + s]!;
        break;
      case 2:
        raw[i] = heap.u16[(at >>> 1) + s]!;
        break;
      case 4:
        raw[i] = heap.u32[(at >>> 2) + s]!;
        break;
      default: {
        const w = (at >>> 2) + 2 * s;
        raw[2 * i] = heap.u32[w]!;
        raw[2 * i + 1] = heap.u32[w + 1]!;
      }
    }
  }
  return raw;
}

/** The Arrow table of the objects of concrete type `t`. */
function classTable(rt: Runtime, t: TypeLayout, info: StateInfo, classes: readonly string[]): Table {
  const heap = rt.heap;
  const handles = handlesOf(rt, t);
  const n = handles.length;
  const cols = columnsOf(t);
  const fields: Field[] = [new Field('handle', new Uint32(), false, new Map([['smmo.kind', 'handle']]))];
  const data: Data[] = [makeData({ type: new Uint32(), length: n, data: handles })];
  for (const c of cols) {
    const f = c.field;
    const meta = new Map<string, string>([
      ['smmo.kind', f.kind],
      ['smmo.field', f.name],
    ]);
    if (f.length > 0) meta.set('smmo.element', String(c.element));
    if (f.target) meta.set('smmo.target', f.target().name);
    const type = ARROW_TYPE[f.kind]();
    fields.push(new Field(c.name, type, false, meta));
    if (f.kind === 'bool') {
      const bits = new Uint8Array((n + 7) >>> 3);
      for (let i = 0; i < n; i++) {
        const h = handles[i]!;
        if (heap.u8[heap.blockOffset(h >>> 5) + c.offset + (h & 31)] !== 0) bits[i >>> 3]! |= 1 << (i & 7);
      }
      data.push(makeData({ type: new Bool(), length: n, data: bits }));
      continue;
    }
    const raw = readColumn(rt, handles, c);
    data.push(makeData({ type: type as Float32, length: n, data: asArrowValues(f.kind, raw) as Float32Array }));
  }
  const meta = new Map<string, string>([
    ['smmo.format', STATE_FORMAT],
    ['smmo.app', info.app],
    ['smmo.class', t.name],
    ['smmo.classes', JSON.stringify(classes)],
    ['smmo.layoutVersion', String(LAYOUT_VERSION)],
    ['smmo.iterations', String(info.iterations)],
    ['smmo.seed', String(info.seed)],
    ['smmo.params', JSON.stringify(info.params)],
    ['smmo.appState', JSON.stringify(info.appState)],
  ]);
  if (info.version !== undefined) meta.set('smmo.version', info.version);
  const schema = new Schema(fields, meta);
  const batch = new RecordBatch(schema, makeData({ type: new Struct(fields), length: n, children: data }));
  return new Table(schema, [batch]);
}

/**
 * Write every object of `rt` into the directory `dir` (created if needed; a regular
 * file there is an error), one `<Class>.arrow` per concrete class, empty classes
 * included. Returns the paths written. Call `await rt.sync()` first on backend 'webgpu'.
 */
export function writeState(rt: Runtime, dir: string, info: StateInfo): string[] {
  const concrete = rt.table.concreteIds.map((id) => rt.table.types[id]!);
  for (const t of concrete) columnsOf(t); // name clashes are found before anything is written
  prepareStateDir(
    dir,
    concrete.map((t) => t.name),
  );
  const names = concrete.map((t) => t.name);
  const written: string[] = [];
  for (const t of concrete) {
    const path = join(dir, t.name + STATE_EXTENSION);
    writeFileSync(path, tableToIPC(classTable(rt, t, info, names), 'file'));
    written.push(path);
  }
  return written;
}

/**
 * Every object of `rt` as the columns a state file would hold (handles ascending, one
 * column per field and array element, bool as 0/1, references as handles), without
 * writing anything: what `smmo run --check` compares (runtime/compare.ts). `file` is
 * empty. Call `await rt.sync()` first on backend 'webgpu'.
 */
export function captureState(rt: Runtime): ClassData[] {
  return rt.table.concreteIds.map((id) => {
    const t = rt.table.types[id]!;
    const handles = handlesOf(rt, t);
    const columns = columnsOf(t).map((c): ColumnData => {
      const raw = readColumn(rt, handles, c);
      if (c.field.kind === 'bool') for (let i = 0; i < raw.length; i++) raw[i] = raw[i] !== 0 ? 1 : 0;
      return { ...c, values: asArrowValues(c.field.kind, raw) as ColumnData['values'] };
    });
    return { name: t.name, type: t, file: '', handles, columns };
  });
}

/**
 * Make `dir` ready to receive a state of these classes: create it if needed; refuse a
 * regular file, and a directory that holds `.arrow` files of other classes (they would
 * make the state unreadable). The CLI calls it before the run, so a bad --dump path
 * fails at once.
 */
export function prepareStateDir(dir: string, classNames: readonly string[]): void {
  if (!existsSync(dir)) {
    // Not recursive: a missing parent is more likely a typo than a wish (and Node's
    // recursive mkdir can spin forever on a path under /proc).
    mkdirSync(dir);
    return;
  }
  if (!statSync(dir).isDirectory()) {
    throw new StateFileError(
      dir,
      null,
      null,
      'exists and is not a directory; a state is a directory of <Class>.arrow files: give a new name',
    );
  }
  const foreign = readdirSync(dir).filter((f) => f.endsWith(STATE_EXTENSION) && !classNames.includes(f.slice(0, -STATE_EXTENSION.length)));
  if (foreign.length > 0) {
    throw new StateFileError(
      dir,
      null,
      null,
      `holds ${foreign.join(', ')}, not a class of this runtime (${classNames.join(', ')}): dump into a new or empty directory`,
    );
  }
}

// ------------------------------------------------------------------ reading

/** One column as read: values in ascending-handle row order. */
export interface ColumnData extends ColumnPlan {
  /** Numbers for comparison (bool: 0/1; ref: old handles). f32/f64 hold the exact bits. */
  values: Float32Array | Float64Array | Int8Array | Uint8Array | Int16Array | Uint16Array | Int32Array | Uint32Array;
}

export interface ClassData {
  name: string;
  type: TypeLayout;
  file: string;
  /** Old handles, ascending; row r of every column belongs to handles[r]. */
  handles: Uint32Array;
  columns: ColumnData[];
}

export interface LoadedState {
  dir: string;
  info: StateInfo;
  /** Concrete classes in the runtime's class order. */
  classes: ClassData[];
  table: TypeTable;
}

const ARROW_MAGIC = 'ARROW1';

/** Read a whole state directory and check it against `classes` (the app's, abstract ones included). */
export function readState(dir: string, classes: readonly SmmoClass[], app?: string): LoadedState {
  if (!existsSync(dir)) throw new StateFileError(dir, null, null, 'does not exist (a state is a directory written by --dump)');
  if (!statSync(dir).isDirectory()) {
    throw new StateFileError(dir, null, null, 'is not a directory; a state is a directory of <Class>.arrow files written by --dump');
  }
  const table = planTypes(classes);
  const concrete = table.concreteIds.map((id) => table.types[id]!);
  const known = new Set(concrete.map((t) => t.name));
  for (const entry of readdirSync(dir)) {
    if (!entry.endsWith(STATE_EXTENSION)) continue;
    const name = entry.slice(0, -STATE_EXTENSION.length);
    if (!known.has(name)) {
      throw new StateFileError(
        join(dir, entry),
        name,
        null,
        `the app has no concrete class ${name} (its classes: ${[...known].join(', ')}); a state of another app?`,
      );
    }
  }
  let info: StateInfo | null = null;
  let infoFrom = '';
  const out: ClassData[] = [];
  for (const t of concrete) {
    const file = join(dir, t.name + STATE_EXTENSION);
    if (!existsSync(file)) {
      throw new StateFileError(file, t.name, null, `is missing: a state holds one file per concrete class (${[...known].join(', ')})`);
    }
    const tbl = readArrowFile(file, t.name);
    const fileInfo = readInfo(tbl, file, t.name);
    if (app !== undefined && fileInfo.app !== app) {
      throw new StateFileError(file, t.name, null, `was written by app '${fileInfo.app}', not '${app}'`);
    }
    if (info === null) {
      info = fileInfo;
      infoFrom = file;
    } else if (fileInfo.app !== info.app || fileInfo.iterations !== info.iterations || fileInfo.seed !== info.seed) {
      throw new StateFileError(
        file,
        t.name,
        null,
        `does not belong with ${infoFrom}: app/iterations/seed ${fileInfo.app}/${fileInfo.iterations}/${fileInfo.seed} ` +
          `vs ${info.app}/${info.iterations}/${info.seed}; files of different dumps were mixed`,
      );
    }
    out.push(readClass(tbl, file, t));
  }
  checkReferences(out, table);
  return { dir, info: info!, classes: out, table };
}

function readArrowFile(file: string, cls: string): Table {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (e) {
    // A directory named <Class>.arrow, a file without read permission …: a malformed state.
    throw new StateFileError(file, cls, null, `cannot be read (${(e as Error).message}); a state holds one Arrow IPC file per class`);
  }
  // The IPC file format starts and ends with "ARROW1": a truncated file loses its end.
  const head = bytes.subarray(0, 6).toString('latin1');
  const tail = bytes.subarray(Math.max(0, bytes.length - 6)).toString('latin1');
  if (head !== ARROW_MAGIC) {
    throw new StateFileError(file, cls, null, 'is not an Arrow IPC file (no ARROW1 magic at its start; an Arrow stream, Parquet or CSV?)');
  }
  if (tail !== ARROW_MAGIC || bytes.length < 12) {
    throw new StateFileError(file, cls, null, `is truncated (${bytes.length} bytes; an Arrow IPC file ends with ARROW1): write it again`);
  }
  try {
    return tableFromIPC(bytes);
  } catch (e) {
    const why = (e as Error).message;
    const hint = /compress/i.test(why) ? "; write it uncompressed (pyarrow: compression='uncompressed')" : '';
    throw new StateFileError(file, cls, null, `is not a readable Arrow IPC file (${why})${hint}`);
  }
}

function readInfo(tbl: Table, file: string, cls: string): StateInfo {
  const m = tbl.schema.metadata;
  const get = (key: string): string => {
    const v = m.get(key);
    if (v === undefined) throw new StateFileError(file, cls, null, `has no schema metadata '${key}': not written by smmo --dump`);
    return v;
  };
  if (get('smmo.format') !== STATE_FORMAT) {
    throw new StateFileError(file, cls, null, `has format '${m.get('smmo.format')}', this smmo reads '${STATE_FORMAT}'`);
  }
  if (get('smmo.class') !== cls) {
    throw new StateFileError(file, cls, null, `holds class '${m.get('smmo.class')}' (metadata smmo.class) but is named ${cls}.arrow`);
  }
  const layout = Number(get('smmo.layoutVersion'));
  if (layout !== LAYOUT_VERSION) {
    throw new StateFileError(file, cls, null, `was written with heap layout version ${layout}; this smmo has version ${LAYOUT_VERSION}`);
  }
  const int = (key: string): number => {
    const v = get(key);
    const n = /^\d+$/.test(v) ? Number(v) : NaN;
    if (!Number.isSafeInteger(n)) throw new StateFileError(file, cls, null, `metadata '${key}' is '${v}', not a non-negative integer`);
    return n;
  };
  const json = <T>(key: string): T => {
    try {
      const v = JSON.parse(get(key)) as unknown;
      if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error('not a JSON object');
      return v as T;
    } catch (e) {
      if (e instanceof StateFileError) throw e;
      throw new StateFileError(file, cls, null, `metadata '${key}' is not a JSON object (${(e as Error).message})`);
    }
  };
  const info: StateInfo = {
    app: get('smmo.app'),
    iterations: int('smmo.iterations'),
    seed: int('smmo.seed'),
    params: json('smmo.params'),
    appState: json('smmo.appState'),
  };
  if (info.seed > 0xffffffff) throw new StateFileError(file, cls, null, `metadata 'smmo.seed' is ${info.seed}, beyond 4294967295`);
  // Plain values only; which parameters an app has, and their types, the app's flags say (cli/state.ts).
  for (const [k, v] of Object.entries(info.params)) {
    if (!(v === null || typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v)))) {
      throw new StateFileError(file, cls, null, `metadata 'smmo.params' has ${k}: ${JSON.stringify(v)}, not a number, a string or null`);
    }
  }
  for (const [k, v] of Object.entries(info.appState)) {
    if (typeof v !== 'number' || !Number.isFinite(v)) {
      throw new StateFileError(file, cls, null, `metadata 'smmo.appState' has ${k}: ${JSON.stringify(v)}, not a finite number`);
    }
  }
  const v = m.get('smmo.version');
  if (v !== undefined) info.version = v;
  return info;
}

/**
 * Float columns holding NaN or ±Infinity, as one line each ("Body.posX: 2 NaN, 1 Infinity of
 * 1000 values"): legal in a state (values round-trip bit for bit), but usually the sign of
 * a simulation that went wrong; `smmo run --init` reports them as warnings.
 */
export function nonFiniteValues(state: LoadedState): string[] {
  const out: string[] = [];
  for (const c of state.classes) {
    for (const col of c.columns) {
      if (col.field.kind !== 'f32' && col.field.kind !== 'f64') continue;
      let nan = 0;
      let inf = 0;
      for (const x of col.values) {
        if (Number.isNaN(x)) nan++;
        else if (!Number.isFinite(x)) inf++;
      }
      if (nan + inf === 0) continue;
      const parts = [nan > 0 ? `${nan} NaN` : '', inf > 0 ? `${inf} ±Infinity` : ''].filter(Boolean);
      out.push(`${c.name}.${col.name}: ${parts.join(', ')} of ${col.values.length} values (state ${c.file})`);
    }
  }
  return out;
}

/** Values of a column, every chunk, as raw bits (bool: one byte 0/1 per row). */
function columnRaw(tbl: Table, name: string, elemBytes: number, isBool: boolean): Raw {
  const col = tbl.getChild(name)!;
  const n = tbl.numRows;
  const out = isBool ? new Uint8Array(n) : rawArray(elemBytes, n);
  let at = 0;
  for (const d of col.data) {
    const len = d.length;
    if (isBool) {
      const bits = d.values as Uint8Array;
      const off = d.offset;
      for (let i = 0; i < len; i++) out[at + i] = (bits[(off + i) >>> 3]! >>> ((off + i) & 7)) & 1;
    } else {
      const v = d.values as ArrayBufferView;
      // f64: two 32-bit words per value
      const src = elemBytes === 8 ? copyView(v, 4, 2 * len) : copyView(v, elemBytes, len);
      out.set(src, elemBytes === 8 ? 2 * at : at);
    }
    at += len;
  }
  return out;
}

/** An integer view of the same bytes as `v` (copies when the bytes are not aligned). */
function copyView(v: ArrayBufferView, elemBytes: number, len: number): Raw {
  let buffer = v.buffer as ArrayBuffer;
  let offset = v.byteOffset;
  if (offset % elemBytes !== 0) {
    buffer = new Uint8Array(buffer, offset, len * elemBytes).slice().buffer;
    offset = 0;
  }
  return elemBytes === 1
    ? new Uint8Array(buffer, offset, len)
    : elemBytes === 2
      ? new Uint16Array(buffer, offset, len)
      : new Uint32Array(buffer, offset, len);
}

function typedValues(k: ScalarKind, raw: Raw): ColumnData['values'] {
  // The same typed view of the raw bits as when writing (asArrowValues).
  return asArrowValues(k, raw) as ColumnData['values'];
}

function readClass(tbl: Table, file: string, t: TypeLayout): ClassData {
  const cols = columnsOf(t);
  const expected = new Map<string, string>([['handle', 'Uint32']]);
  for (const c of cols) expected.set(c.name, arrowTypeName(c.field.kind));
  const present = tbl.schema.fields;
  for (const f of present) {
    if (!expected.has(f.name)) {
      throw new StateFileError(file, t.name, f.name, `is not a field of ${t.name} (its columns: ${[...expected.keys()].join(', ')})`);
    }
  }
  for (const [name, typeName] of expected) {
    const f = present.find((p) => p.name === name);
    const what = name === 'handle' ? 'the handle column' : `the column of ${describe(cols.find((c) => c.name === name)!)}`;
    if (f === undefined) throw new StateFileError(file, t.name, name, `is missing (${what}, ${typeName})`);
    if (String(f.type) !== typeName) {
      throw new StateFileError(file, t.name, name, `has Arrow type ${String(f.type)}, expected ${typeName} (${what})`);
    }
    const nulls = tbl.getChild(name)!.nullCount;
    if (nulls > 0)
      throw new StateFileError(file, t.name, name, `has ${nulls} null value(s); state columns hold no nulls (a null reference is 0)`);
  }
  const n = tbl.numRows;
  const handlesRaw = columnRaw(tbl, 'handle', 4, false) as Uint32Array;
  // Rows in ascending handle order (smmo writes them so; other writers may not).
  let order: Uint32Array | null = null;
  for (let i = 1; i < n; i++) {
    if (handlesRaw[i]! <= handlesRaw[i - 1]!) {
      order = Uint32Array.from({ length: n }, (_, k) => k).sort((a, b) => handlesRaw[a]! - handlesRaw[b]!);
      break;
    }
  }
  const handles = order === null ? handlesRaw : Uint32Array.from(order, (r) => handlesRaw[r]!);
  for (let i = 0; i < n; i++) {
    if (handles[i] === 0) throw new StateFileError(file, t.name, 'handle', 'holds handle 0, which is null and never an object');
    if (i > 0 && handles[i] === handles[i - 1]) throw new StateFileError(file, t.name, 'handle', `holds handle ${handles[i]} twice`);
  }
  const columns: ColumnData[] = cols.map((c) => {
    const isBool = c.field.kind === 'bool';
    let raw = columnRaw(tbl, c.name, c.field.elemBytes, isBool);
    if (order !== null) {
      const w = c.field.elemBytes === 8 ? 2 : 1;
      const sorted = isBool ? new Uint8Array(n) : rawArray(c.field.elemBytes, n);
      for (let i = 0; i < n; i++) for (let j = 0; j < w; j++) sorted[w * i + j] = raw[w * order[i]! + j]!;
      raw = sorted;
    }
    return { ...c, values: isBool ? raw : typedValues(c.field.kind, raw) };
  });
  return { name: t.name, type: t, file, handles, columns };
}

function describe(c: ColumnPlan): string {
  const f = c.field;
  return f.length === 0 ? `field ${f.name}: ${f.kind}` : `element ${c.element} of field ${f.name}: array(${f.kind}, ${f.length})`;
}

// ------------------------------------------------------------------ handle index

/**
 * Where each old handle of a state is: its position in the concatenation of the
 * classes' sorted handle lists. A dense table when handles are not too sparse (the
 * usual case: they come from one heap), else binary search in a sorted copy.
 */
class HandleIndex {
  private readonly dense: Int32Array | null = null;
  private readonly sorted: Uint32Array | null = null;
  private readonly sortedPos: Uint32Array | null = null;
  /** Start of each class's range in the concatenation. */
  readonly starts: number[] = [];

  constructor(classes: readonly ClassData[]) {
    let total = 0;
    let max = 0;
    for (const c of classes) {
      this.starts.push(total);
      total += c.handles.length;
      if (c.handles.length > 0) max = Math.max(max, c.handles[c.handles.length - 1]!);
    }
    this.starts.push(total);
    const dup = (h: number): StateFileError => {
      const owners = classes.filter((c) => indexOfSorted(c.handles, h) >= 0).map((c) => c.name);
      return new StateFileError(
        classes[0]?.file ?? '',
        owners.join(' and '),
        'handle',
        `handle ${h} is used by two objects (${owners.join(', ')})`,
      );
    };
    if (max < Math.max(1 << 22, 8 * total)) {
      const dense = new Int32Array(max + 1).fill(-1);
      classes.forEach((c, ci) => {
        const base = this.starts[ci]!;
        for (let i = 0; i < c.handles.length; i++) {
          const h = c.handles[i]!;
          if (dense[h] !== -1) throw dup(h);
          dense[h] = base + i;
        }
      });
      this.dense = dense;
    } else {
      const key = new Uint32Array(total);
      classes.forEach((c, ci) => key.set(c.handles, this.starts[ci]!));
      const pos = Uint32Array.from({ length: total }, (_, k) => k).sort((a, b) => key[a]! - key[b]!);
      const sorted = Uint32Array.from(pos, (p) => key[p]!);
      for (let i = 1; i < total; i++) if (sorted[i] === sorted[i - 1]) throw dup(sorted[i]!);
      this.sorted = sorted;
      this.sortedPos = pos;
    }
  }

  /** Position of `h` in the concatenation, or -1. */
  find(h: number): number {
    if (this.dense !== null) return h < this.dense.length ? this.dense[h]! : -1;
    const k = indexOfSorted(this.sorted!, h);
    return k < 0 ? -1 : this.sortedPos![k]!;
  }

  /** Index of the class whose range holds position `p`. */
  classAt(p: number): number {
    let lo = 0;
    let hi = this.starts.length - 2;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (this.starts[mid]! <= p) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }
}

const indexes = new WeakMap<LoadedState | ClassData[], HandleIndex>();

function indexOf(classes: ClassData[]): HandleIndex {
  let ix = indexes.get(classes);
  if (ix === undefined) indexes.set(classes, (ix = new HandleIndex(classes)));
  return ix;
}

/** Every non-null reference must name an object of its target class (or a subclass) in the state. */
function checkReferences(classes: ClassData[], table: TypeTable): void {
  const ix = indexOf(classes);
  for (const c of classes) {
    for (const col of c.columns) {
      const f = col.field;
      if (f.kind !== 'ref') continue;
      const target = table.byClass(f.target!())!;
      const allowed = new Set(target.concrete);
      const v = col.values as Uint32Array;
      for (let r = 0; r < v.length; r++) {
        const h = v[r]!;
        if (h === 0) continue;
        const p = ix.find(h);
        if (p < 0) {
          throw new StateFileError(
            c.file,
            c.name,
            col.name,
            `object ${c.handles[r]} refers to handle ${h}, which is no object of the state (a dangling reference)`,
          );
        }
        const owner = classes[ix.classAt(p)]!;
        if (!allowed.has(owner.type.id)) {
          throw new StateFileError(
            c.file,
            c.name,
            col.name,
            `object ${c.handles[r]} refers to ${owner.name} ${h}, expected a ${target.name}`,
          );
        }
      }
    }
  }
}

// ------------------------------------------------------------------ loading

/** Heap bytes the objects of `state` need at least (blocks of their classes, packed full). */
export function stateBlocks(state: LoadedState): number {
  let blocks = 0;
  for (const c of state.classes) blocks += Math.ceil(c.handles.length / c.type.slots);
  return blocks;
}

/**
 * Create every object of `state` in `rt` (a fresh runtime over the same classes) with
 * its field values, references remapped (see the header). Returns the map from old to
 * new handles as two parallel arrays per class (old ascending → new ascending).
 */
export async function restoreState(rt: Runtime, state: LoadedState): Promise<Map<string, { old: Uint32Array; new: Uint32Array }>> {
  // The runtime's classes must lay objects out as the state's table says.
  for (const c of state.classes) {
    const t = rt.table.types.find((u) => u.name === c.name);
    if (t === undefined || t.abstract) throw new StateFileError(c.file, c.name, null, 'the runtime has no concrete class of this name');
    const want = columnsOf(c.type).map((p) => `${p.name}:${p.field.kind}`);
    const have = columnsOf(t).map((p) => `${p.name}:${p.field.kind}`);
    if (want.join() !== have.join()) {
      throw new StateFileError(
        c.file,
        c.name,
        null,
        `the runtime's ${c.name} has fields ${have.join(', ')}; the state's has ${want.join(', ')}`,
      );
    }
  }
  const ix = indexOf(state.classes);
  const fresh: Uint32Array[] = [];
  for (const c of state.classes) {
    const t = rt.table.types.find((u) => u.name === c.name)!;
    const n = c.handles.length;
    const out = new Uint32Array(n);
    await rt.parallelNew(t.cls, n, (o, i) => {
      out[i] = o.handle;
    });
    out.sort(); // rank-preserving map: old ascending → new ascending
    fresh.push(out);
  }
  const all = new Uint32Array(ix.starts[ix.starts.length - 1]!);
  fresh.forEach((f, ci) => all.set(f, ix.starts[ci]!));
  const heap = rt.heap;
  state.classes.forEach((c, ci) => {
    const t = rt.table.types.find((u) => u.name === c.name)!;
    const target = fresh[ci]!;
    const planned = columnsOf(t);
    c.columns.forEach((col, k) => {
      const off = planned[k]!.offset;
      const kind = col.field.kind;
      const v = col.values;
      // Raw bits of 4- and 8-byte values (no float conversion: NaN payloads survive).
      const bits = col.field.elemBytes >= 4 ? new Uint32Array(v.buffer, v.byteOffset, (v.length * col.field.elemBytes) / 4) : null;
      for (let r = 0; r < target.length; r++) {
        const h = target[r]!;
        const at = heap.blockOffset(h >>> 5) + off;
        const s = h & 31;
        switch (kind) {
          case 'ref': {
            const old = v[r]!;
            heap.u32[(at >>> 2) + s] = old === 0 ? 0 : all[ix.find(old)]!;
            break;
          }
          case 'f64':
            heap.u32[(at >>> 2) + 2 * s] = bits![2 * r]!;
            heap.u32[(at >>> 2) + 2 * s + 1] = bits![2 * r + 1]!;
            break;
          case 'f32':
          case 'i32':
          case 'u32':
            heap.u32[(at >>> 2) + s] = bits![r]!;
            break;
          case 'i16':
          case 'u16':
            heap.u16[(at >>> 1) + s] = v[r]! & 0xffff;
            break;
          default: // i8, u8, bool
            heap.u8[at + s] = v[r]! & 0xff;
        }
      }
    });
  });
  const map = new Map<string, { old: Uint32Array; new: Uint32Array }>();
  state.classes.forEach((c, ci) => map.set(c.name, { old: c.handles, new: fresh[ci]! }));
  return map;
}

/** Read the Arrow metadata of one class file only (for tools that want the app name first). */
export function peekStateApp(dir: string): string {
  if (!existsSync(dir)) throw new StateFileError(dir, null, null, 'does not exist (a state is a directory written by --dump)');
  if (!statSync(dir).isDirectory()) {
    throw new StateFileError(dir, null, null, 'is not a directory; a state is a directory of <Class>.arrow files written by --dump');
  }
  // Only the app name is needed: read the smallest file.
  const files = readdirSync(dir)
    .filter((f) => f.endsWith(STATE_EXTENSION))
    .map((f) => ({ f, size: statSync(join(dir, f)).size }))
    .sort((a, b) => a.size - b.size || (a.f < b.f ? -1 : 1));
  if (files.length === 0) throw new StateFileError(dir, null, null, 'holds no <Class>.arrow file: not a state written by --dump');
  const file = join(dir, files[0]!.f);
  const cls = files[0]!.f.slice(0, -STATE_EXTENSION.length);
  const tbl = readArrowFile(file, cls);
  const app = tbl.schema.metadata.get('smmo.app');
  if (app === undefined) throw new StateFileError(file, cls, null, "has no schema metadata 'smmo.app': not written by smmo --dump");
  return app;
}
