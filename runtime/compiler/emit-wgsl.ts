/**
 * The WGSL backend of the method compiler: the intermediate form (ir.ts) of one
 * (concrete class, method) → a compute kernel that runs the method on the GPU, one
 * invocation per (block of the pass's list, slot), as the hand-written kernels of
 * runtime/webgpu/wgsl/ do (the pass's objects from the GPU snapshot's lists, binding 5;
 * the heap as `array<atomic<u32>>`, binding 0; creation and deletion through alloc.wgsl).
 * A do-all's method runs on every object at once, as DynaSOAr's parallel do-all does
 * (DynaSOAr, ECOOP 2019, §3 "Parallel Object Enumeration"); the form says what each
 * object does, this file says it in WGSL.
 *
 * What the kernel computes, against the JavaScript method (invariants):
 *  (W1) Integers are 32-bit. JavaScript computes in f64; a value the form proves integral
 *       (integer literals and fields, + - * % of integers, bit operations, Math.imul,
 *       Math.floor of an integer quotient) is an i32 or u32 here, with the same bits as
 *       long as the JavaScript value stays within 32 bits (a sum past 2³² wraps here and
 *       not in JavaScript: a method that relies on that is outside the subset). Signed and
 *       unsigned values compare exactly (mixed comparisons go through mix_cmp). `a / b`
 *       is a float unless it is floored (Math.floor, `| 0`).
 *  (W2) Other numbers are double-single (W10) unless the runner asks for f32
 *       (WebGpuOptions.floats 'f32') and the method touches no f64 field: then they are f32,
 *       and a float method gives results within the app's tolerance, not bit-identical ones
 *       (Math.fround(x) is x; WGSL's division and sqrt are not correctly rounded).
 *  (W3) Constant subexpressions are folded with JavaScript's arithmetic before typing
 *       (MAX / 2 is the integer 5 when MAX is 10, as in JavaScript).
 *  (W4) What JavaScript would throw (a null dereference, an inline-array index out of
 *       bounds, an invalid handle in ctx.get, a `throw` statement) stops the invocation
 *       and sets a status bit (STATUS of runtime/webgpu/errors.ts) that the runner
 *       raises as GpuLaneError before the host next reads the heap. An allocator failure
 *       does the same with alloc.wgsl's status.
 *  (W5) Every heap word is accessed atomically (other invocations read and write
 *       neighbouring slots in the same pass); a 1- or 2-byte store is a bounded
 *       compare-exchange loop on its word, so a reader never sees a half-written word.
 *  (W6) Control flow keeps the form's: labelled blocks and loops become WGSL loops; a
 *       break or continue to a label that is not the innermost WGSL loop goes through the
 *       function's `ctl` variable, checked after each inner loop.
 *
 *  (W7) rankTable(ctx, C, n)[i] (runtime/rank-table.ts, known by identity) reads the
 *       runner's rank table of C (binding 3: the same ranks, from the host heap) after
 *       checking that it has n entries (STATUS.RANKS) and that i is inside it. A
 *       local that only ever holds such a table is not a WGSL value. One ranked class per
 *       kernel. `(a - r) / b` where r's one assignment is `a % b` is an integer division
 *       (the grid apps' y = (id - x) / width), so cell ids stay exact integers.
 *
 *  (W8) An integer expression compared with a constant beyond 32 bits (sugarscape's
 *       `(u + 1) * turn <= 2 ** 32`) is computed in 64-bit two's complement (vec2<u32>:
 *       its sums, differences and products) and compared exactly, as JavaScript's 53-bit
 *       arithmetic does; any other use of such a constant with an integer is outside the
 *       subset.
 *
 *  (W9) deviceDo(C, …) over a concrete class loops over C's blocks in the pass snapshot's
 *       list and the set bits of their iteration words: the objects the pass started with,
 *       in the order of the list (a method that depends on the order is racy anyway).
 *
 * (W10) WGSL has no f64. By default, and always in a method that reads or writes an f64
 *       field, every number that is not an integer is double-single: a pair of f32 (hi, lo) whose
 *       sum is the value, hi the f32 nearest to it (vec2<f32>; the scheme of Dekker, "A
 *       floating-point technique for extending the available precision", 1971, and of
 *       the double-double libraries). About 48 significant bits instead of JavaScript's 53:
 *       results within 2⁻⁴⁴ or so of JavaScript's per operation, not bit-identical; an f32
 *       field stored from such a value gets JavaScript's f32 rounding unless JavaScript's f64
 *       lies within about 2⁻⁴⁸ of a rounding boundary (about once in 10⁷ roundings).
 *       + - * / Math.sqrt, floor, ceil, trunc, round, abs, min, max, sign, hypot and the
 *       comparisons are double-single (a product is four exact products of 12-bit halves,
 *       so a shader compiler that fuses a multiply with an add changes none of them);
 *       float constants and float arguments are passed as such pairs (the runner packs an
 *       argument as two words: WgslArgKind 'df64'); f32 fields convert exactly. An f64
 *       field is loaded from its two words into a pair (magnitudes outside f32's normal
 *       range become 0 or ±∞; below about 2⁻¹⁰⁰ the low part underflows) and stored as
 *       the double nearest hi + lo (two word stores: a racing reader of the same field
 *       may see half of it — a race the method has on the CPU too). Other Math functions,
 *       `%` and `**` have no double-single versions: in a method with f64 fields they are
 *       outside the subset; elsewhere they are computed in f32, as with floats 'f32'.
 *       Non-finite values (NaN, ±∞) are carried but their arithmetic is f32's, not
 *       JavaScript's.
 *
 * (W11) A local that only ever holds `new Uint32Array(n)`, `new Int32Array(n)` or
 *       `new Float32Array(n)` is a per-invocation WGSL array of LOCAL_ARRAY_CAP elements
 *       and its length (linux-scalability's held handles). Creation zeroes the first n
 *       elements; `a[i]` and `a[i] = v` (with the element type's conversion) are the only
 *       uses. Where JavaScript would not throw but the GPU cannot follow, the invocation
 *       stops with STATUS.LOCAL_ARRAY (GpuLaneError): n beyond the cap, or an index outside
 *       the length (JavaScript reads undefined there and drops the write).
 *
 * Outside the subset (the method then runs in TypeScript, and the runner says why):
 * JavaScript values (the form's Dyn/Box/Unbox nodes, except inside a `throw`), strings
 * and undefined as values (W1's `x?.f === y` excepted), a mix of booleans and numbers in
 * one local, what W10 excludes. Arguments are typed by the values of the call (an integer
 * → i32 or u32, another number → f32, or double-single under W10): the runner generates
 * one kernel per argument signature.
 */
import { BLOCK_TYPE_WORD, type FieldLayout, type TypeLayout } from '../layout.js';
import { rankTable } from '../rank-table.js';
import { LOCAL_ARRAY_CAP, STATUS } from '../webgpu/errors.js';
import type { BinaryOp, Expr, FieldRef, MethodIR, Stmt } from './ir.js';

/** WGSL value types of the form's numbers (ilit: an integer literal, typed by its use). */
type WTy = 'i32' | 'u32' | 'f32' | 'f64' | 'bool' | 'h' | 'ilit' | 'null' | 'ctx' | 'void' | 'ranks' | 'tarr';

/** An argument's WGSL type: a number's, or 'h' for an smmo object (its handle; the form then types it by its class). */
export type WgslArg = 'i32' | 'u32' | 'f32' | 'h';

export interface WgslMethod {
  /** The kernel's source (after the runner's prelude; libraries objects.wgsl and alloc.wgsl appended). */
  readonly source: string;
  readonly allocates: boolean;
  readonly frees: boolean;
  /** Whether the kernel writes the status buffer (binding 4): it has a check that can fail (W4). */
  readonly reports: boolean;
  /** The class whose rank table (runtime/rank-table.ts) the kernel reads at binding 3, if any (W7). */
  readonly ranks: TypeLayout | null;
  /** Concrete classes the kernel creates objects of. */
  readonly creates: readonly TypeLayout[];
  /** The Params words of the arguments, in order (an 'f32' argument is two words, hi and lo: 'df64'). */
  readonly args: readonly ('i32' | 'u32' | 'df64')[];
}

/** What the emitter asks of the runtime: the class layout of a class value the method names. */
export interface WgslHost {
  classOf(value: unknown): TypeLayout | undefined;
}

export class WgslUnsupported extends Error {}

const fail = (why: string): never => {
  throw new WgslUnsupported(why);
};

/** The WGSL type of a number argument of a do-all call (as a constant's: constTy), or why it cannot be one (objects: the runner). */
export function wgslArgKind(v: unknown): 'i32' | 'u32' | 'f32' | { reason: string } {
  if (typeof v !== 'number' || !Number.isFinite(v))
    return { reason: `an argument is ${typeof v === 'number' ? String(v) : `a ${typeof v}`}, not a finite number` };
  const t = constTy(v);
  return t === 'ilit' ? 'i32' : t === 'u32' ? 'u32' : 'f32';
}

const INT = (t: WTy): boolean => t === 'i32' || t === 'u32' || t === 'ilit';
const FLOAT = (t: WTy): boolean => t === 'f32' || t === 'f64';
const NUMERIC = (t: WTy): boolean => INT(t) || FLOAT(t);

function join(a: WTy | undefined, b: WTy): WTy {
  if (a === undefined || a === b) return b;
  if (a === 'null' && b === 'h') return 'h';
  if (a === 'h' && b === 'null') return 'h';
  // A handle is a u32 (`let selected = 0; … selected = agent.handle`).
  if ((a === 'h' && INT(b)) || (b === 'h' && INT(a))) return 'u32';
  if (NUMERIC(a) && NUMERIC(b)) {
    if (a === 'f64' || b === 'f64') return 'f64';
    if (a === 'f32' || b === 'f32') return 'f32';
    if (a === 'ilit') return b;
    if (b === 'ilit') return a;
    return 'i32'; // i32 with u32: the same bits (W1)
  }
  return fail(`a local holds both ${a} and ${b} values`);
}

/** JavaScript's value of a constant subexpression (W3), or undefined. */
function constValue(e: Expr): number | boolean | null | undefined {
  switch (e.op) {
    case 'const':
      return typeof e.value === 'number' || typeof e.value === 'boolean' || e.value === null ? e.value : undefined;
    case 'unary': {
      const a = constValue(e.a);
      if (typeof a !== 'number' && typeof a !== 'boolean') return undefined;
      switch (e.o) {
        case '-':
          return -a;
        case '+':
          return +a;
        case '!':
          return !a;
        case '~':
          return ~a;
        default:
          return undefined;
      }
    }
    case 'binary': {
      const a = constValue(e.a);
      const b = constValue(e.b);
      if (typeof a !== 'number' || typeof b !== 'number') return undefined;
      const f = FOLD[e.o];
      return f === undefined ? undefined : f(a, b);
    }
    case 'math': {
      const args = e.args.map(constValue);
      if (!args.every((x) => typeof x === 'number')) return undefined;
      const fn = (Math as unknown as Record<string, (...a: number[]) => number>)[e.name];
      return e.name === 'random' || typeof fn !== 'function' ? undefined : fn(...(args as number[]));
    }
    default:
      return undefined;
  }
}

const FOLD: Partial<Record<BinaryOp, (a: number, b: number) => number | boolean>> = {
  '+': (a, b) => a + b,
  '-': (a, b) => a - b,
  '*': (a, b) => a * b,
  '/': (a, b) => a / b,
  '%': (a, b) => a % b,
  '**': (a, b) => a ** b,
  '|': (a, b) => a | b,
  '&': (a, b) => a & b,
  '^': (a, b) => a ^ b,
  '<<': (a, b) => a << b,
  '>>': (a, b) => a >> b,
  '>>>': (a, b) => a >>> b,
  '<': (a, b) => a < b,
  '<=': (a, b) => a <= b,
  '>': (a, b) => a > b,
  '>=': (a, b) => a >= b,
  '==': (a, b) => a === b,
  '===': (a, b) => a === b,
  '!=': (a, b) => a !== b,
  '!==': (a, b) => a !== b,
};

function constTy(v: number | boolean | null): WTy {
  if (typeof v === 'boolean') return 'bool';
  if (v === null) return 'null';
  if (Number.isInteger(v) && v >= -0x80000000 && v <= 0x7fffffff) return 'ilit';
  if (Number.isInteger(v) && v >= 0 && v <= 0xffffffff) return 'u32';
  return 'f32';
}

function f32Literal(v: number): string {
  // WGSL's constant expressions cannot hold NaN or infinities: read them from private words (GEN_LIB).
  if (Number.isNaN(v)) return 'bitcast<f32>(k_nan)';
  const f = Math.fround(v);
  if (!Number.isFinite(f)) return f > 0 ? 'bitcast<f32>(k_pinf)' : 'bitcast<f32>(k_ninf)';
  // Exact f32 bits (a decimal literal may round differently in the shader compiler).
  const b = new Float32Array([f]);
  return `bitcast<f32>(${new Uint32Array(b.buffer)[0]}u)`;
}

/** W10: the pair (hi, lo) of f32 whose sum is v (hi the f32 nearest to v; both NaN or ±∞ when v is). */
export function doubleSingle(v: number): [number, number] {
  const hi = Math.fround(v);
  return [hi, Number.isFinite(hi) ? Math.fround(v - hi) : 0];
}

/** A double-single constant (W10). */
function dfLiteral(v: number): string {
  const [hi, lo] = doubleSingle(v);
  return `vec2<f32>(${f32Literal(hi)}, ${f32Literal(lo)})`;
}

/** Whether evaluating e writes something (a field, a local, the allocator): earlier operands must be evaluated first. */
function writes(e: Expr): boolean {
  switch (e.op) {
    case 'store':
    case 'setLocal':
    case 'updateLocal':
    case 'alloc':
    case 'free':
    case 'dynAssign':
      return true;
    case 'const':
    case 'local':
    case 'self':
    case 'arg':
    case 'ctx':
      return false;
    default:
      return children(e).some(writes);
  }
}

function children(e: Expr): readonly Expr[] {
  switch (e.op) {
    case 'unary':
      return [e.a];
    case 'binary':
    case 'logical':
      return [e.a, e.b];
    case 'cond':
      return [e.c, e.a, e.b];
    case 'setLocal':
      return [e.value];
    case 'load':
      return e.elem === null ? [e.obj] : [e.obj, e.elem];
    case 'store':
      return e.elem === null ? [e.obj, e.value] : [e.obj, e.elem, e.value];
    case 'typeOf':
    case 'isA':
    case 'free':
    case 'nonNull':
      return [e.obj];
    case 'checkHandle':
      return [e.value];
    case 'math':
      return e.args;
    case 'seq':
      return e.items;
    case 'dynIndex':
      return [e.obj, e.index];
    case 'dynAssign':
      return [e.target, e.value];
    case 'dynNew':
      return e.args;
    default:
      return [];
  }
}

/**
 * Statements that are never generated, with why: JavaScript's iterator protocol (for…of,
 * array patterns over iterables: JavaScript runs in an iterator's next(), whatever it
 * iterates) and its try statement.
 */
const JS_ONLY_STATEMENTS: Partial<Record<Stmt['s'], string>> = {
  forOf: "for…of or an array pattern over a JavaScript value (JavaScript's iterator protocol)",
  try: 'try/catch/finally (JavaScript only)',
};

const JS_ONLY = new Set([
  'static',
  'closure',
  'spread',
  'hole',
  'global',
  'dynMember',
  'dynIndex',
  'dynCall',
  'dynMethodCall',
  'dynNew',
  'dynArray',
  'dynObject',
  'dynTemplate',
  'dynAssign',
  'dynUpdate',
  'box',
  'boxArr',
  'unbox',
]);

/**
 * A statement's own expressions and the statement lists nested in it, in evaluation order
 * (a `throw`'s value is left out: it is JavaScript's message, never evaluated on the GPU).
 */
function stmtParts(s: Stmt): readonly (Expr | readonly Stmt[])[] {
  switch (s.s) {
    case 'let':
      return s.init === null ? [] : [s.init];
    case 'expr':
      return [s.e];
    case 'if':
      return [s.c, s.then, s.else];
    case 'block':
    case 'loop':
    case 'forEach':
      return [s.body];
    case 'forOf':
      return [s.iterable, s.body];
    case 'try':
      return [s.body, ...(s.handler !== null ? [s.handler] : []), ...(s.finalizer !== null ? [s.finalizer] : [])];
    case 'switch':
      return [s.on, ...s.cases.flatMap((c) => (c.test === null ? [c.body] : [c.test, c.body]))];
    default:
      return [];
  }
}

const isStmts = (p: Expr | readonly Stmt[]): p is readonly Stmt[] => Array.isArray(p);

/** Whether the method reads or writes an f64 field (then its non-integer numbers are double-single, W10). */
function touchesF64(body: readonly Stmt[]): boolean {
  const inE = (e: Expr): boolean => ((e.op === 'load' || e.op === 'store') && e.field.kind === 'f64') || children(e).some(inE);
  const inS = (ss: readonly Stmt[]): boolean => ss.some((s) => stmtParts(s).some((p) => (isStmts(p) ? inS(p) : inE(p))));
  return inS(body);
}

/** The first node outside the subset (outside `throw` statements' values), as a reason; null if none. */
function unsupportedIn(body: readonly Stmt[], ranks: RankInfo, arrays: TypedArrays, voids: ReadonlySet<number>): string | null {
  const inExpr = (e: Expr): string | null => {
    // The result local of an inlined call that returns nothing is assigned undefined: no value.
    if (e.op === 'setLocal' && voids.has(e.id) && isUndefinedConst(e.value)) return null;
    // W11: a typed-array local's creation, element reads and element writes.
    if (e.op === 'setLocal' && arrays.has(e.id)) return inExpr((e.value as Extract<Expr, { op: 'dynNew' }>).args[0]!);
    const el = arrays.element(e);
    if (el !== null) {
      if (e.op === 'dynAssign')
        return e.o === '=' ? (inExpr(el.index) ?? inExpr(e.value)) : `the ${e.o} operator on a typed array's element`;
      return inExpr(el.index);
    }
    if (e.op === 'local' && arrays.has(e.id)) return 'a local typed array used as a value (only a[i] and a[i] = v)';
    if (ranks.isCall(e)) return inExpr((e as Extract<Expr, { op: 'dynCall' }>).args[2]!);
    if (e.op === 'dynIndex' && ranks.isValue(e.obj)) return inExpr(e.index);
    if (e.op === 'local' && ranks.locals.has(e.id)) return null;
    if (e.op === 'setLocal' && ranks.locals.has(e.id)) return inExpr(e.value);
    if (JS_ONLY.has(e.op)) return `it calls JavaScript or uses a JavaScript value (${e.op}${'label' in e ? ` ${String(e.label)}` : ''})`;
    if (e.op === 'const' && (typeof e.value === 'string' || e.value === undefined))
      return `it uses ${typeof e.value === 'string' ? 'a string' : 'undefined'} as a value`;
    if (e.op === 'binary' && e.o === 'instanceof') return 'instanceof on a value that is not an smmo object';
    if (e.op === 'binary' && e.o === 'in') return "the 'in' operator";
    if (e.op === 'unary' && (e.o === 'typeof' || e.o === 'void' || e.o === 'delete')) return `the ${e.o} operator`;
    for (const c of children(e)) {
      const r = inExpr(c);
      if (r !== null) return r;
    }
    return null;
  };
  const inStmts = (ss: readonly Stmt[]): string | null => {
    for (const s of ss) {
      const js = JS_ONLY_STATEMENTS[s.s];
      if (js !== undefined) return js;
      if (s.s === 'let' && voids.has(s.id) && s.init !== null && isUndefinedConst(s.init)) continue;
      if (s.s === 'let' && arrays.has(s.id) && s.init !== null) {
        const r = inExpr({ op: 'setLocal', id: s.id, value: s.init });
        if (r !== null) return r;
        continue;
      }
      for (const p of stmtParts(s)) {
        const r = isStmts(p) ? inStmts(p) : inExpr(p);
        if (r !== null) return r;
      }
    }
    return null;
  };
  return inStmts(body);
}

interface Val {
  readonly code: string;
  readonly ty: WTy;
  /** JavaScript's value when constant. */
  readonly konst?: number | boolean | null;
}

interface Target {
  readonly label: string;
  /** The WGSL loop emitted for it (a block is a loop that runs once). */
  readonly kind: 'block' | 'loop';
  readonly id: number;
}

/**
 * Generate the kernel of `ir` for arguments of these kinds (field offsets come from the
 * form's FieldRefs, per concrete class, from the heap's TypeLayouts).
 * Throws WgslUnsupported with the reason when the method is outside the subset.
 */
export function emitWgsl(
  ir0: MethodIR,
  argKinds: readonly WgslArg[],
  host: WgslHost,
  floats: 'double-single' | 'f32' = 'double-single',
): WgslMethod {
  const ir: MethodIR = { ...ir0, body: ir0.body.map(strictUndefined) };
  const ranks = new RankInfo(ir, host);
  const arrays = new TypedArrays(ir, ranks.assigns);
  const voids = new Set(ir.locals.filter((l) => l.ty.k === 'undef').map((l) => l.id));
  const why = unsupportedIn(ir.body, ranks, arrays, voids);
  if (why !== null) fail(why);
  return new WgslEmitter(ir, argKinds, ranks, arrays, floats).emit();
}

function isUndefinedConst(e: Expr): boolean {
  return e.op === 'const' && e.value === undefined;
}

/**
 * `c ? v : undefined` compared strictly (===, !==) with a value that cannot be undefined
 * and whose evaluation writes nothing — what `x?.f !== y` lowers to — becomes
 * `c ? v === y : false` (`!==`: true): the same value, with no undefined left (W1's
 * numbers have no undefined).
 */
function strictUndefined(s: Stmt): Stmt {
  const e = (x: Expr): Expr => mapExpr(x, rewrite);
  const ss = (xs: readonly Stmt[]): Stmt[] => xs.map(strictUndefined);
  switch (s.s) {
    case 'let':
      return s.init === null ? s : { ...s, init: e(s.init) };
    case 'expr':
      return { ...s, e: e(s.e) };
    case 'if':
      return { ...s, c: e(s.c), then: ss(s.then), else: ss(s.else) };
    case 'block':
    case 'loop':
      return { ...s, body: ss(s.body) };
    case 'switch':
      return { ...s, on: e(s.on), cases: s.cases.map((c) => ({ test: c.test === null ? null : e(c.test), body: ss(c.body) })) };
    case 'forEach':
      return { ...s, body: ss(s.body) };
    default:
      return s;
  }
}

function rewrite(x: Expr): Expr {
  if (x.op !== 'binary' || (x.o !== '===' && x.o !== '!==')) return x;
  const maybeUndef = (y: Expr): boolean => y.op === 'cond' && (isUndefinedConst(y.a) || isUndefinedConst(y.b));
  const [c, other, left] = maybeUndef(x.a) ? [x.a, x.b, true] : maybeUndef(x.b) ? [x.b, x.a, false] : [null, null, true];
  if (c === null || c.op !== 'cond' || other === null) return x;
  if (isUndefinedConst(other) || maybeUndef(other) || writes(other)) return x;
  const branch = (v: Expr): Expr =>
    isUndefinedConst(v) ? { op: 'const', value: x.o === '!==' } : { op: 'binary', o: x.o, a: left ? v : other, b: left ? other : v };
  return { op: 'cond', c: c.c, a: branch(c.a), b: branch(c.b) };
}

/** x with `f` applied bottom-up to every subexpression. */
function mapExpr(x: Expr, f: (y: Expr) => Expr): Expr {
  const m = (y: Expr): Expr => mapExpr(y, f);
  let out: Expr;
  switch (x.op) {
    case 'unary':
      out = { ...x, a: m(x.a) };
      break;
    case 'binary':
    case 'logical':
      out = { ...x, a: m(x.a), b: m(x.b) };
      break;
    case 'cond':
      out = { ...x, c: m(x.c), a: m(x.a), b: m(x.b) };
      break;
    case 'setLocal':
      out = { ...x, value: m(x.value) };
      break;
    case 'load':
      out = { ...x, obj: m(x.obj), elem: x.elem === null ? null : m(x.elem) };
      break;
    case 'store':
      out = { ...x, obj: m(x.obj), elem: x.elem === null ? null : m(x.elem), value: m(x.value) };
      break;
    case 'typeOf':
    case 'isA':
    case 'free':
    case 'nonNull':
      out = { ...x, obj: m(x.obj) };
      break;
    case 'checkHandle':
      out = { ...x, value: m(x.value) };
      break;
    case 'math':
      out = { ...x, args: x.args.map(m) };
      break;
    case 'seq':
      out = { ...x, items: x.items.map(m) };
      break;
    default:
      out = x;
  }
  return f(out);
}

/** Every assignment of a local in a body: [local id, value]. */
function assignmentsOf(body: readonly Stmt[]): [number, Expr][] {
  const out: [number, Expr][] = [];
  const walkE = (e: Expr): void => {
    if (e.op === 'setLocal') out.push([e.id, e.value]);
    for (const c of children(e)) walkE(c);
  };
  const walk = (ss: readonly Stmt[]): void => {
    for (const s of ss) {
      if (s.s === 'let' && s.init !== null) out.push([s.id, s.init]);
      for (const p of stmtParts(s)) {
        if (isStmts(p)) walk(p);
        else walkE(p);
      }
    }
  };
  walk(body);
  return out;
}

/**
 * For the JavaScript emitter (emit-js.ts): the rank tables of a method whose only
 * JavaScript is what W7 allows — rankTable(ctx, C, n) calls, locals that only ever hold
 * their results, and reads `table[i]` — or null. In such a method no table is written,
 * passed to a function or stored anywhere, and nothing can reset one during the pass
 * (no other JavaScript runs), so `table[i]` is, by runtime/rank-table.ts R2, a handle of a
 * live object of C or undefined.
 */
export function rankTableReads(ir0: MethodIR, host: WgslHost): RankInfo | null {
  const ir: MethodIR = { ...ir0, body: ir0.body.map(strictUndefined) };
  const ranks = new RankInfo(ir, host);
  const arrays = new TypedArrays(ir, ranks.assigns);
  const voids = new Set(ir.locals.filter((l) => l.ty.k === 'undef').map((l) => l.id));
  return unsupportedIn(ir.body, ranks, arrays, voids) === null ? ranks : null;
}

/** The method's rank-table calls and the locals that hold their tables (W7). */
export class RankInfo {
  /** Every assignment of a local (assignmentsOf), also what the emitter infers local types from. */
  readonly assigns: readonly [number, Expr][];
  readonly locals = new Set<number>();
  /** Locals assigned exactly once, with the value. */
  readonly single = new Map<number, Expr>();

  constructor(
    private readonly ir: MethodIR,
    private readonly host: WgslHost,
  ) {
    this.assigns = assignmentsOf(ir.body);
    const byLocal = new Map<number, Expr[]>();
    for (const [id, v] of this.assigns) {
      const vs = byLocal.get(id);
      if (vs === undefined) byLocal.set(id, [v]);
      else vs.push(v);
    }
    for (const [id, vs] of byLocal) if (vs.length === 1) this.single.set(id, vs[0]!);
    const dyn = new Set(ir.locals.filter((l) => l.ty.k === 'dyn').map((l) => l.id));
    for (let changed = true; changed;) {
      changed = false;
      for (const [id, vs] of byLocal) {
        if (!dyn.has(id) || this.locals.has(id)) continue;
        if (vs.every((v) => this.isValue(v))) {
          this.locals.add(id);
          changed = true;
        }
      }
    }
  }

  /** rankTable(ctx, C, n) with C a class of the runtime. */
  isCall(e: Expr): boolean {
    if (e.op !== 'dynCall' || e.callee.op !== 'static' || this.ir.statics[e.callee.index] !== rankTable || e.args.length !== 3)
      return false;
    return this.classOf(e) !== undefined;
  }

  classOf(e: Expr): TypeLayout | undefined {
    const c = (e as Extract<Expr, { op: 'dynCall' }>).args[1]!;
    return c.op === 'static' ? this.host.classOf(this.ir.statics[c.index]) : undefined;
  }

  isValue(e: Expr): boolean {
    return this.isCall(e) || (e.op === 'local' && this.locals.has(e.id));
  }
}

const TYPED_ARRAYS = new Map<unknown, 'u32' | 'i32' | 'f32'>([
  [Uint32Array, 'u32'],
  [Int32Array, 'i32'],
  [Float32Array, 'f32'],
]);

/** W11: the locals that only ever hold a new Uint32Array, Int32Array or Float32Array of one length argument, with their element type. */
class TypedArrays {
  private readonly elem = new Map<number, 'u32' | 'i32' | 'f32'>();

  constructor(ir: MethodIR, assigns: readonly [number, Expr][]) {
    const dyn = new Set(ir.locals.filter((l) => l.ty.k === 'dyn').map((l) => l.id));
    const bad = new Set<number>();
    for (const [id, v] of assigns) {
      if (!dyn.has(id)) continue;
      const t =
        v.op === 'dynNew' && v.callee.op === 'static' && v.args.length === 1 ? TYPED_ARRAYS.get(ir.statics[v.callee.index]) : undefined;
      if (t === undefined || (this.elem.has(id) && this.elem.get(id) !== t)) bad.add(id);
      else this.elem.set(id, t);
    }
    for (const id of bad) this.elem.delete(id);
  }

  has(id: number): boolean {
    return this.elem.has(id);
  }

  typeOf(id: number): 'u32' | 'i32' | 'f32' {
    return this.elem.get(id)!;
  }

  /** a[i] (a read, or the target of a[i] = v) of a typed-array local: the local and the index; else null. */
  element(e: Expr): { id: number; index: Expr } | null {
    const x = e.op === 'dynAssign' ? e.target : e;
    if (x.op !== 'dynIndex' || x.optional || x.obj.op !== 'local' || !this.elem.has(x.obj.id)) return null;
    return { id: x.obj.id, index: x.index };
  }
}

/** 32-bit words of the runner's Params uniform (64 bytes): 4 for the pass, the rest for the arguments. */
export const PARAM_WORDS = 16;

class WgslEmitter {
  private readonly localTy = new Map<number, WTy>();
  private lines: string[] = [];
  private indent = '  ';
  private temps = 0;
  private readonly targets: Target[] = [];
  private nextTarget = 1;
  private usesCtl = false;
  private readonly helpers = new Set<string>();

  private ranked: TypeLayout | null = null;
  private readonly creates = new Set<TypeLayout>();
  /** W10: the method reads or writes an f64 field (its non-integers are double-single whatever `floats` says). */
  private readonly f64Fields: boolean;
  /** W10: non-integer numbers are double-single (the runner's `floats`, or an f64 field in the method). */
  private readonly doubles: boolean;

  constructor(
    private readonly ir: MethodIR,
    private readonly argKinds: readonly WgslArg[],
    private readonly ranks: RankInfo,
    private readonly arrays: TypedArrays,
    floats: 'double-single' | 'f32',
  ) {
    this.f64Fields = touchesF64(ir.body);
    this.doubles = floats === 'double-single' || this.f64Fields;
  }

  emit(): WgslMethod {
    this.inferLocals();
    const body = dropUnreachable(this.block(this.ir.body));
    const decls: string[] = [];
    for (const l of this.ir.locals) {
      const t = this.localTy.get(l.id);
      if (t === 'tarr') {
        decls.push(`  var l${l.id}: array<${this.arrays.typeOf(l.id)}, ${LOCAL_ARRAY_CAP}>; // ${l.name} (W11)`, `  var l${l.id}_n = 0u;`);
        continue;
      }
      if (t === undefined || t === 'ctx' || t === 'void' || t === 'ranks') continue;
      decls.push(`  var l${l.id}: ${this.wgslType(t)}; // ${l.name}`);
    }
    if (this.usesCtl) decls.push('  var ctl = 0u;');
    // Word 3 is 1.0 (the runner writes it), which the shader compiler cannot know (W10's df_o).
    const params = ['  list_start: u32,', '  list_count: u32,', '  type_id: u32,', '  one: f32,'];
    const args: ('i32' | 'u32' | 'df64')[] = [];
    this.argKinds.forEach((k, i) => {
      if (k === 'f32') {
        // Two words, hi and lo (W10); a method without f64 fields reads hi, the argument's f32 rounding.
        params.push(`  a${i}: f32,`, `  a${i}_lo: f32,`);
        args.push('df64');
      } else {
        params.push(`  a${i}: ${this.wgslType(k)},`);
        args.push(k === 'i32' ? 'i32' : 'u32');
      }
    });
    if (params.length > PARAM_WORDS)
      fail(`its arguments take ${params.length - 4} words of the Params uniform, which holds ${PARAM_WORDS - 4}`);
    if (body.some((l) => /\bdf_/.test(l))) this.helpers.add('df64'); // only where double-single is used
    const src = [
      `// ${this.ir.cls.name}.${this.ir.method}: generated from the method's compiled form (runtime/compiler/emit-wgsl.ts).`,
      'override WG: u32 = 64u;',
      `struct Params {\n${params.join('\n')}\n};`,
      '@group(0) @binding(0) var<storage, read_write> heap: array<atomic<u32>>;',
      '@group(0) @binding(1) var<uniform> P: Params;',
      '@group(0) @binding(4) var<storage, read_write> status: array<atomic<u32>>;',
      '@group(0) @binding(5) var<storage, read> lists: array<u32>;',
      ...(this.ranked !== null ? [`@group(0) @binding(3) var<storage, read> ranks: array<u32>; // ${this.ranked.name} by rank (W7)`] : []),
      GEN_LIB,
      ...[...this.helpers].map((h) => HELPERS[h]!),
      '@compute @workgroup_size(WG)',
      'fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {',
      '  let gi = linear_workgroup(wid, nwg) * WG + lid;',
      '  let self_h = o_object(gi);',
      '  if (self_h == 0u) {',
      '    return;',
      '  }',
      '  a_seed = ((gi + 1u) * 0x9e3779b9u) ^ (P.type_id * 0x85ebca6bu);',
      ...decls,
      ...body,
      '}',
      '',
    ].join('\n');
    const reports = body.some((l) => /\bk_(fail|report)\(/.test(l)) || this.helpers.has('store_sub');
    return {
      source: src,
      allocates: this.ir.allocates,
      frees: this.ir.frees,
      reports,
      ranks: this.ranked,
      creates: [...this.creates],
      args,
    };
  }

  // ------------------------------------------------------------------ types

  private wgslType(t: WTy): string {
    switch (t) {
      case 'h':
      case 'null':
        return 'u32';
      case 'ilit':
        return 'i32';
      case 'f64':
        return 'vec2<f32>';
      default:
        return t;
    }
  }

  /** A constant's type: constTy's, double-single for a non-integer under W10. */
  private kTy(k: number | boolean | null): WTy {
    const t = constTy(k);
    return t === 'f32' && this.doubles ? 'f64' : t;
  }

  /** The type of arithmetic on two numbers, at least one of them a float: double-single under W10 or with an f64 operand. */
  private floatOf(a: WTy, b: WTy): WTy {
    return this.doubles || a === 'f64' || b === 'f64' ? 'f64' : 'f32';
  }

  /** Local types: the join of every value assigned, to a fixed point (W1). */
  private inferLocals(): void {
    for (const l of this.ir.locals) {
      // An inline array's run-time value is its object's handle (ir.ts).
      if (l.ty.k === 'obj' || l.ty.k === 'arr') this.localTy.set(l.id, 'h');
      else if (l.ty.k === 'bool') this.localTy.set(l.id, 'bool');
      else if (l.ty.k === 'ctx') this.localTy.set(l.id, 'ctx');
      else if (this.ranks.locals.has(l.id)) this.localTy.set(l.id, 'ranks');
      else if (this.arrays.has(l.id)) this.localTy.set(l.id, 'tarr');
      else if (l.ty.k === 'undef') this.localTy.set(l.id, 'void'); // an inlined call's result that is never a value
    }
    const fixed = new Set(this.localTy.keys());
    const assigns = this.ranks.assigns;
    for (let round = 0; round < 32; round++) {
      let changed = false;
      for (const [id, v] of assigns) {
        if (fixed.has(id) || this.localTy.get(id) === 'void') continue;
        const t = this.typeOrPending(v);
        if (t === null) continue;
        const was = this.localTy.get(id);
        const now = join(was, t === 'null' ? 'h' : t);
        if (now !== was) {
          this.localTy.set(id, now);
          changed = true;
        }
      }
      if (!changed) break;
    }
    for (const l of this.ir.locals) {
      const t = this.localTy.get(l.id);
      if (t === 'ilit') this.localTy.set(l.id, 'i32');
      if (t === undefined && assigns.some(([id]) => id === l.id)) fail(`the type of local '${l.name}' could not be inferred`);
    }
  }

  /** The type of e without emitting it. */
  typeOf(e: Expr): WTy {
    const k = constValue(e);
    if (k !== undefined) return this.kTy(k);
    if (this.ranks.isCall(e)) return 'ranks';
    if (e.op === 'dynIndex' && this.ranks.isValue(e.obj)) return 'u32';
    const el = this.arrays.element(e);
    if (el !== null) return e.op === 'dynAssign' ? this.typeOf(e.value) : this.arrays.typeOf(el.id);
    const eq = this.exactQuotient(e);
    if (eq !== null) return eq;
    switch (e.op) {
      case 'const':
        return fail(`the constant ${String(e.value)}`);
      case 'local': {
        const t = this.localTy.get(e.id);
        if (t === undefined) throw new PendingLocal();
        return t;
      }
      case 'self':
        return 'h';
      case 'arg': {
        const a = this.argKinds[e.index];
        if (a === 'f32' && this.doubles) return 'f64';
        return a ?? fail(`argument ${e.index} was not passed`);
      }
      case 'ctx':
        return 'ctx';
      case 'unary':
        return this.unaryTy(e.o, this.typeOf(e.a));
      case 'binary':
        return this.binaryTy(e.o, this.typeOf(e.a), this.typeOf(e.b));
      case 'logical': {
        const a = this.typeOf(e.a);
        const b = this.typeOf(e.b);
        if (e.o === '??') return join(a === 'null' ? undefined : a, b === 'null' ? 'h' : b);
        if (a === 'bool' && b === 'bool') return 'bool';
        return fail(`${e.o} on ${a} and ${b} values (only booleans)`);
      }
      case 'cond':
        return join(this.typeOf(e.a), this.typeOf(e.b));
      case 'setLocal':
      case 'updateLocal': {
        const t = this.localTy.get(e.id);
        if (t === undefined) throw new PendingLocal();
        return t;
      }
      case 'load':
        return fieldTy(e.field);
      case 'store':
        return this.typeOf(e.value);
      case 'typeOf':
        return 'u32';
      case 'isA':
        return 'bool';
      case 'alloc':
      case 'nonNull':
      case 'checkHandle':
        return 'h';
      case 'free':
        return 'void';
      case 'math':
        return this.mathTy(
          e.name,
          e.args.map((a) => this.typeOf(a)),
          e,
        );
      case 'seq':
        return this.typeOf(e.items[e.items.length - 1]!);
      default:
        return fail(`${e.op}`);
    }
  }

  private unaryTy(o: string, a: WTy): WTy {
    switch (o) {
      case '!':
        return 'bool';
      case '~':
        return 'i32';
      case '-':
        if (FLOAT(a)) return a;
        if (INT(a)) return a === 'ilit' ? 'ilit' : 'i32';
        return fail(`unary - of a ${a}`);
      case '+':
        if (NUMERIC(a)) return a;
        if (a === 'bool') return 'i32';
        return fail(`unary + of a ${a}`);
      default:
        return fail(`the ${o} operator`);
    }
  }

  private binaryTy(o: BinaryOp, a: WTy, b: WTy): WTy {
    switch (o) {
      case '+':
      case '-':
      case '*': {
        if (!NUMERIC(a) || !NUMERIC(b)) return fail(`${a} ${o} ${b}`);
        if (FLOAT(a) || FLOAT(b)) return this.floatOf(a, b);
        if (a === 'ilit' && b === 'ilit') return 'ilit';
        if ((a === 'u32' || a === 'ilit') && (b === 'u32' || b === 'ilit')) return 'u32';
        return 'i32'; // i32 with u32: the same bits (W1)
      }
      case '%': {
        // JavaScript's remainder has the dividend's sign: the dividend's type (W1).
        if (!NUMERIC(a) || !NUMERIC(b)) return fail(`${a} ${o} ${b}`);
        // No double-single remainder: f32's, except where f64 fields promise double-single (W10).
        if (this.f64Fields && (a === 'f64' || b === 'f64')) return fail('% of a double-single value (W10)');
        if (FLOAT(a) || FLOAT(b)) return 'f32';
        if (a === 'ilit') return b === 'ilit' ? 'ilit' : b === 'u32' ? 'u32' : 'i32';
        return a;
      }
      case '/':
        if (!NUMERIC(a) || !NUMERIC(b)) return fail(`${a} ${o} ${b}`);
        return this.floatOf(a, b);
      case '**':
        if (!NUMERIC(a) || !NUMERIC(b)) return fail(`${a} ${o} ${b}`);
        if (this.f64Fields) return fail('** in a method with f64 fields (no double-single pow, W10)');
        return 'f32';
      case '|':
      case '&':
      case '^':
      case '<<':
      case '>>':
        if (!NUMERIC(a) && a !== 'bool') return fail(`${a} ${o} ${b}`);
        return 'i32';
      case '>>>':
        return 'u32';
      default:
        return 'bool';
    }
  }

  private mathTy(name: string, args: readonly WTy[], e: Expr): WTy {
    const allInt = args.every(INT);
    // Of a float: double-single if an argument is (W10), else f32.
    const exact: WTy = args.includes('f64') ? 'f64' : 'f32';
    switch (name) {
      case 'floor':
      case 'ceil':
      case 'round':
      case 'trunc':
        if (allInt) return args[0] === 'ilit' ? 'i32' : args[0]!;
        if (name === 'floor' && e.op === 'math') {
          const k = this.intDivKind(e.args[0]!);
          if (k !== null) return k;
        }
        return exact;
      case 'abs':
        return allInt ? (args[0] === 'u32' ? 'u32' : 'i32') : exact;
      case 'min':
      case 'max': {
        if (args.length === 0) return fail(`Math.${name}() with no arguments`);
        let t: WTy = args[0]!;
        for (const a of args.slice(1)) t = join(t, a);
        return t === 'ilit' ? 'i32' : t;
      }
      case 'imul':
        return 'i32';
      case 'clz32':
        return 'u32';
      case 'sign':
        return allInt ? 'i32' : exact;
      case 'fround':
        return 'f32';
      case 'sqrt':
      case 'hypot':
        // JavaScript's square root of an f32 value is a double too.
        return this.doubles ? 'f64' : exact;
      case 'sin':
      case 'cos':
      case 'tan':
      case 'asin':
      case 'acos':
      case 'atan':
      case 'atan2':
      case 'exp':
      case 'log':
      case 'log2':
      case 'pow':
        if (this.f64Fields) return fail(`Math.${name} in a method with f64 fields (no double-single ${name}, W10)`);
        return 'f32';
      default:
        return fail(`Math.${name}`);
    }
  }

  // ------------------------------------------------------------------ statements

  private block(ss: readonly Stmt[]): string[] {
    const saved = this.lines;
    this.lines = [];
    for (const s of ss) this.stmt(s);
    const out = this.lines;
    this.lines = saved;
    return out;
  }

  private line(s: string): void {
    this.lines.push(this.indent + s);
  }

  private nested(fn: () => void): string[] {
    const saved = this.lines;
    const savedIndent = this.indent;
    this.lines = [];
    this.indent = savedIndent + '  ';
    try {
      fn();
      return this.lines;
    } finally {
      this.lines = saved;
      this.indent = savedIndent;
    }
  }

  private stmt(s: Stmt): void {
    switch (s.s) {
      case 'let': {
        const t = this.localTy.get(s.id);
        if (s.init !== null) this.effect({ op: 'setLocal', id: s.id, value: s.init });
        else if (t !== undefined && t !== 'ctx' && t !== 'ranks' && t !== 'void' && t !== 'tarr') this.line(`l${s.id} = ${this.zero(t)};`);
        return;
      }
      case 'expr':
        this.effect(s.e);
        return;
      case 'if': {
        const c = this.truthy(this.expr(s.c));
        const then = this.nested(() => s.then.forEach((x) => this.stmt(x)));
        const els = this.nested(() => s.else.forEach((x) => this.stmt(x)));
        this.line(`if (${c}) {`);
        this.lines.push(...then);
        if (els.length > 0) {
          this.line('} else {');
          this.lines.push(...els);
        }
        this.line('}');
        return;
      }
      case 'block':
      case 'loop':
        this.loopLike(s.label, s.s, (inner) => s.body.forEach((x) => inner(x)));
        return;
      case 'switch':
        this.switchStmt(s);
        return;
      case 'break':
      case 'continue':
        this.jump(s.label, s.s);
        return;
      case 'throw':
        this.line(`k_fail(${STATUS.THROW}u);`);
        this.line('return;');
        return;
      case 'returnLane':
        this.line('return;');
        return;
      case 'forEach':
        this.forEach(s);
        return;
      case 'forOf':
      case 'try':
        // unsupportedIn turns such a method away first; a statement is never dropped silently.
        fail(JS_ONLY_STATEMENTS[s.s]!);
    }
  }

  /**
   * deviceDo (W9): the objects of type T that the pass started with — T's blocks in the
   * pass snapshot's list (binding 5), the set bits of each block's iteration word — as
   * two loops; `continue label` is the next object, `break label` leaves both.
   */
  private forEach(s: Extract<Stmt, { s: 'forEach' }>): void {
    const n = this.temps++;
    const li = `fe${n}`;
    const bid = `feb${n}`;
    const bits = `febits${n}`;
    const t = s.typeId;
    this.line(`var ${li} = 0u;`);
    // The loop over blocks is the target of the label's `break` (jump), and loops until the list ends.
    this.loopLike(
      `${s.label}#blocks`,
      'block',
      () => {
        this.line(`let ${bid} = atomicLoad(&heap[BW_BLOCK_LIST + lists[${4 * t + 1}u] + ${li}]);`);
        this.line(`${li} = ${li} + 1u;`);
        this.line(`var ${bits} = atomicLoad(&heap[block_word(${bid}) + BLOCK_ITER_WORD]);`);
        this.loopLike(s.label, 'loop', (inner) => s.body.forEach((x) => inner(x)), [
          `if (${bits} == 0u) {`,
          '  break;',
          '}',
          `l${s.var} = (${bid} << SLOT_BITS) | countTrailingZeros(${bits});`,
          `${bits} = ${bits} & (${bits} - 1u);`,
        ]);
      },
      [`if (${li} >= lists[${4 * t}u]) {`, '  break;', '}'],
      false,
    );
  }

  /**
   * A labelled block or loop as a WGSL loop (a block runs once, unless `once` is false: a
   * deviceDo's loop over blocks, which `continue` cannot target); the ctl check after it (W6).
   */
  private loopLike(
    label: string,
    kind: 'block' | 'loop',
    body: (inner: (s: Stmt) => void) => void,
    prefix: string[] = [],
    once = kind === 'block',
  ): void {
    const target: Target = { label, kind, id: this.nextTarget++ };
    this.targets.push(target);
    let inner: string[];
    try {
      inner = this.nested(() => {
        for (const p of prefix) this.line(p);
        body((s) => this.stmt(s));
        if (once) this.line('break;');
      });
    } finally {
      this.targets.pop();
    }
    this.line('loop {');
    this.lines.push(...inner);
    this.line('}');
    if (this.usesCtl) this.ctlCheck();
  }

  /** After an inner loop: a pending jump (ctl) to this construct is taken here, to an outer one passed on. */
  private ctlCheck(): void {
    const here = this.targets[this.targets.length - 1];
    if (here === undefined) return; // the function's body: every jump has landed (its target encloses it)
    const lines = [`if (ctl != 0u) {`];
    lines.push(`  if (ctl == ${2 * here.id}u) {`, '    ctl = 0u;', '    break;', '  }');
    if (here.kind === 'loop') lines.push(`  if (ctl == ${2 * here.id + 1}u) {`, '    ctl = 0u;', '    continue;', '  }');
    lines.push('  break;', '}');
    for (const l of lines) this.line(l);
  }

  private jump(label: string, kind: 'break' | 'continue'): void {
    // A deviceDo's `break` leaves its loop over blocks too (forEach: the target `label#blocks`).
    const want = kind === 'break' && this.targets.some((x) => x.label === `${label}#blocks`) ? `${label}#blocks` : label;
    let i = this.targets.length - 1;
    while (i >= 0 && this.targets[i]!.label !== want) i--;
    if (i < 0) fail(`${kind} to an unknown label ${label}`);
    const t = this.targets[i]!;
    if (kind === 'continue' && t.kind !== 'loop') fail(`continue to block ${label}`);
    if (i === this.targets.length - 1) {
      this.line(`${kind};`);
      return;
    }
    this.usesCtl = true;
    this.line(`ctl = ${2 * t.id + (kind === 'continue' ? 1 : 0)}u;`);
    this.line('break;');
  }

  /** JavaScript's switch (strict equality, fall-through) as a block: the matching case's index, then every body from it on. */
  private switchStmt(s: Extract<Stmt, { s: 'switch' }>): void {
    const on = this.hoist(this.expr(s.on));
    const k = `sw${this.temps++}`;
    const def = s.cases.findIndex((c) => c.test === null);
    this.line(`var ${k} = ${def < 0 ? s.cases.length : def}u;`);
    let first = true;
    s.cases.forEach((c, i) => {
      if (c.test === null) return;
      const test = this.compare('===', on, this.expr(c.test));
      this.line(`${first ? '' : '} else '}if (${test}) {`);
      this.line(`  ${k} = ${i}u;`);
      first = false;
    });
    if (!first) this.line('}');
    this.loopLike(s.label, 'block', (inner) => {
      s.cases.forEach((c, i) => {
        const body = this.nested(() => c.body.forEach((x) => inner(x)));
        if (body.length === 0) return;
        this.line(`if (${k} <= ${i}u) {`);
        this.lines.push(...body);
        this.line('}');
      });
    });
  }

  // ------------------------------------------------------------------ expressions

  /** Evaluate e for its effects only. */
  private effect(e: Expr): void {
    switch (e.op) {
      case 'seq':
        e.items.forEach((x) => this.effect(x));
        return;
      case 'store':
        this.store(e, false);
        return;
      case 'setLocal': {
        const t = this.localTy.get(e.id);
        if (t === 'void') {
          if (!isUndefinedConst(e.value)) this.effect(e.value);
          return;
        }
        if (t === 'tarr') {
          this.newArray(e.id, e.value);
          return;
        }
        const v = this.expr(e.value);
        if (t !== undefined && t !== 'ctx' && t !== 'ranks') this.line(`l${e.id} = ${this.conv(v, t)};`);
        return;
      }
      case 'updateLocal':
        this.line(this.step(e));
        return;
      default: {
        const v = this.expr(e);
        // A pure value is dropped; a call with effects (free, alloc) has emitted its statement.
        void v;
      }
    }
  }

  /** ++ or -- of a local, as a statement. */
  private step(e: Extract<Expr, { op: 'updateLocal' }>): string {
    const t = this.localTy.get(e.id)!;
    if (t === 'f64') return `l${e.id} = df_add(l${e.id}, ${this.lit(e.delta > 0 ? 1 : -1, t)});`;
    return `l${e.id} = l${e.id} ${e.delta > 0 ? '+' : '-'} ${this.lit(1, t)};`;
  }

  /** A temporary holding v's value now (so later effects do not change it). */
  private hoist(v: Val): Val {
    // Constants, the lane's handle, temporaries (never reassigned) and arguments cannot change.
    if (v.konst !== undefined || v.ty === 'void' || v.ty === 'ctx') return v;
    if (v.code === 'self_h' || /^t\d+$/.test(v.code) || /^P\.a\d+$/.test(v.code)) return v;
    const t = `t${this.temps++}`;
    this.line(`let ${t} = ${v.ty === 'ilit' ? `i32(${v.code})` : v.code};`);
    return { code: t, ty: v.ty === 'ilit' ? 'i32' : v.ty };
  }

  /** Operands left to right; an operand's value is kept in a temporary when a later operand writes (W6's order). */
  private operands(es: readonly Expr[]): Val[] {
    const out: Val[] = [];
    es.forEach((e, i) => {
      if (writes(e)) for (let k = 0; k < i; k++) out[k] = this.hoist(out[k]!);
      out.push(this.expr(e));
    });
    return out;
  }

  private expr(e: Expr): Val {
    const k = constValue(e);
    if (k !== undefined) {
      // Constant subexpressions are folded (W3), their effects (none: constants only) dropped.
      const ty = this.kTy(k);
      return { code: this.constCode(k, ty), ty, konst: k };
    }
    if (this.ranks.isCall(e)) return this.rankTableCall(e as Extract<Expr, { op: 'dynCall' }>);
    if (e.op === 'dynIndex' && this.ranks.isValue(e.obj)) return this.rankIndex(e);
    const el = this.arrays.element(e);
    if (el !== null) return this.arrayElement(el.id, el.index, e.op === 'dynAssign' ? e.value : null);
    const eq = this.exactQuotient(e);
    if (eq !== null) return { code: this.intDivision(e as Extract<Expr, { op: 'binary' }>, eq), ty: eq };
    switch (e.op) {
      case 'local': {
        const t = this.localTy.get(e.id);
        if (t === undefined) return fail(`local ${e.id} is read but never assigned`);
        if (t === 'void') return fail('the value of a call that returns nothing is used');
        return { code: `l${e.id}`, ty: t };
      }
      case 'self':
        return { code: 'self_h', ty: 'h' };
      case 'arg': {
        const ty = this.typeOf(e);
        return { code: ty === 'f64' ? `vec2<f32>(P.a${e.index}, P.a${e.index}_lo)` : `P.a${e.index}`, ty };
      }
      case 'ctx':
        return { code: '', ty: 'ctx' };
      case 'unary':
        return this.unary(e.o, this.expr(e.a));
      case 'binary': {
        const q = this.intQuotient(e);
        if (q !== null) {
          const k = this.intDivKind(q)!;
          const div = this.intDivision(q, k);
          return { code: k === 'u32' ? `bitcast<i32>${div}` : div, ty: 'i32' };
        }
        if (this.beyond32(e)) return this.wideCompare(e);
        this.checkRange(e);
        const [a, b] = this.operands([e.a, e.b]);
        return this.binary(e.o, a!, b!);
      }
      case 'logical':
        return this.logical(e);
      case 'cond': {
        const ty = this.typeOf(e);
        const c = this.truthy(this.expr(e.c));
        const t = `t${this.temps++}`;
        this.line(`var ${t}: ${this.wgslType(ty)};`);
        const a = this.nested(() => this.line(`${t} = ${this.conv(this.expr(e.a), ty)};`));
        const b = this.nested(() => this.line(`${t} = ${this.conv(this.expr(e.b), ty)};`));
        this.line(`if (${c}) {`);
        this.lines.push(...a);
        this.line('} else {');
        this.lines.push(...b);
        this.line('}');
        return { code: t, ty: ty === 'ilit' ? 'i32' : ty };
      }
      case 'setLocal': {
        if (this.localTy.get(e.id) === 'void' || this.localTy.get(e.id) === 'tarr') {
          this.effect(e);
          return { code: '', ty: 'void' };
        }
        const v = this.expr(e.value);
        const t = this.localTy.get(e.id)!;
        if (t === 'ctx') return { code: '', ty: 'ctx' };
        if (t === 'ranks') return v;
        this.line(`l${e.id} = ${this.conv(v, t)};`);
        return { code: `l${e.id}`, ty: t };
      }
      case 'updateLocal': {
        const t = this.localTy.get(e.id)!;
        const step = this.step(e);
        if (e.prefix) {
          this.line(step);
          return { code: `l${e.id}`, ty: t };
        }
        const tmp = `t${this.temps++}`;
        this.line(`let ${tmp} = l${e.id};`);
        this.line(step);
        return { code: tmp, ty: t };
      }
      case 'load':
        return this.load(e);
      case 'store':
        return this.store(e, true);
      case 'typeOf': {
        const o = this.expr(e.obj);
        return { code: typeWord(o.code), ty: 'u32' };
      }
      case 'isA': {
        const o = this.hoist(this.expr(e.obj));
        if (e.typeIds.length === 0) return { code: 'false', ty: 'bool' };
        const tt = `t${this.temps++}`;
        this.line(`var ${tt} = false;`);
        this.line(`if (${o.code} != 0u) {`);
        this.line(`  let tyw = ${typeWord(o.code)};`);
        this.line(`  ${tt} = ${e.typeIds.map((id) => `tyw == ${id}u`).join(' || ')};`);
        this.line('}');
        return { code: tt, ty: 'bool' };
      }
      case 'alloc': {
        this.creates.add(e.cls);
        const t = `t${this.temps++}`;
        this.line(`let ${t} = a_allocate(${e.cls.id}u);`);
        this.allocatorCheck();
        return { code: t, ty: 'h' };
      }
      case 'free': {
        const o = this.expr(e.obj);
        this.line(`a_free(${o.code});`);
        this.allocatorCheck();
        return { code: '', ty: 'void' };
      }
      case 'math':
        return this.math(e);
      case 'nonNull': {
        const o = this.hoist(this.expr(e.obj));
        this.failIf(`${o.code} == 0u`, STATUS.NULL_DEREF);
        return { code: o.code, ty: 'h' };
      }
      case 'checkHandle': {
        const v = this.hoist(this.expr(e.value));
        if (!INT(v.ty) && v.ty !== 'h') fail('ctx.get() of a value that is not an integer');
        const h = this.hoist({ code: this.conv(v, 'u32'), ty: 'u32' });
        this.helpers.add('valid_handle');
        this.failIf(`!valid_handle(${h.code})`, STATUS.BAD_HANDLE);
        return { code: h.code, ty: 'h' };
      }
      case 'seq': {
        e.items.slice(0, -1).forEach((x) => this.effect(x));
        return this.expr(e.items[e.items.length - 1]!);
      }
      case 'const':
        return fail(`the constant ${String(e.value)}`);
      default:
        return fail(e.op);
    }
  }

  private constCode(k: number | boolean | null, ty: WTy): string {
    if (typeof k === 'boolean') return String(k);
    if (k === null) return '0u';
    if (ty === 'ilit') return String(k);
    if (ty === 'u32') return `${k}u`;
    return ty === 'f64' ? dfLiteral(k) : f32Literal(k);
  }

  private lit(n: number, ty: WTy): string {
    if (ty === 'f32') return f32Literal(n);
    if (ty === 'f64') return dfLiteral(n);
    if (ty === 'u32' || ty === 'h') return `${n >>> 0}u`;
    return `${n | 0}i`;
  }

  private zero(t: WTy): string {
    if (t === 'f64') return 'vec2<f32>(0.0f)';
    return t === 'bool' ? 'false' : t === 'f32' ? '0.0f' : t === 'u32' || t === 'h' || t === 'null' ? '0u' : '0i';
  }

  /** v as a value of type `to` (JavaScript's conversions where the form stores or combines; W1, W2). */
  private conv(v: Val, to: WTy): string {
    const from = v.ty;
    if (from === to) return v.code;
    if (v.konst !== undefined && v.konst !== null) {
      const n = typeof v.konst === 'boolean' ? Number(v.konst) : v.konst;
      if (to === 'bool') return String(Boolean(n));
      if (to === 'f32' || to === 'f64' || to === 'u32' || to === 'h' || to === 'i32' || to === 'ilit') return this.lit(n, to);
    }
    if (v.konst === null && (to === 'h' || to === 'u32')) return '0u';
    switch (to) {
      case 'h':
        if (from === 'null' || from === 'u32') return v.code;
        if (from === 'i32' || from === 'ilit') return `bitcast<u32>(${v.code})`;
        break;
      case 'u32':
        if (from === 'h') return v.code;
        if (from === 'i32') return `bitcast<u32>(${v.code})`;
        if (from === 'ilit') return `u32(${v.code})`;
        if (from === 'f32') return `bitcast<u32>(i32(${v.code}))`;
        if (from === 'f64') return `bitcast<u32>(df_to_i32(${v.code}))`;
        if (from === 'bool') return `select(0u, 1u, ${v.code})`;
        break;
      case 'i32':
      case 'ilit':
        if (from === 'u32' || from === 'h') return `bitcast<i32>(${v.code})`;
        if (from === 'ilit') return `i32(${v.code})`;
        if (from === 'f32') return `i32(${v.code})`;
        if (from === 'f64') return `df_to_i32(${v.code})`;
        if (from === 'bool') return `select(0i, 1i, ${v.code})`;
        break;
      case 'f32':
        if (INT(from)) return `f32(${v.code})`;
        if (from === 'f64') return `df_to_f32(${v.code})`;
        if (from === 'bool') return `select(0.0f, 1.0f, ${v.code})`;
        break;
      case 'f64':
        // Exact: an integer as two f32 parts, an f32 as hi.
        if (from === 'i32' || from === 'ilit') return `df_from_i32(${this.conv(v, 'i32')})`;
        if (from === 'u32' || from === 'h') return `df_from_u32(${v.code})`;
        if (from === 'f32') return `vec2<f32>(${v.code}, 0.0f)`;
        if (from === 'bool') return `select(vec2<f32>(0.0f), vec2<f32>(1.0f, 0.0f), ${v.code})`;
        break;
      case 'bool':
        return this.truthy(v);
      default:
        break;
    }
    return fail(`a ${from} value where a ${to} is needed`);
  }

  /** JavaScript truthiness of v. */
  private truthy(v: Val): string {
    switch (v.ty) {
      case 'bool':
        return v.code;
      case 'f32':
        return `(${v.code} != 0.0f)`;
      case 'f64':
        return `((${v.code}).x != 0.0f)`;
      case 'u32':
      case 'h':
      case 'null':
        return `(${v.code} != 0u)`;
      case 'i32':
      case 'ilit':
        return `(${v.code} != 0i)`;
      default:
        return fail(`the truth value of a ${v.ty}`);
    }
  }

  private unary(o: string, a: Val): Val {
    switch (o) {
      case '!':
        return { code: `!${this.truthy(a)}`, ty: 'bool' };
      case '~':
        return { code: `(~${this.conv(a, 'i32')})`, ty: 'i32' };
      case '-': {
        const ty = this.unaryTy('-', a.ty);
        return { code: `(-${this.conv(a, ty === 'ilit' ? 'i32' : ty)})`, ty: ty === 'ilit' ? 'i32' : ty };
      }
      case '+':
        return a.ty === 'bool' ? { code: this.conv(a, 'i32'), ty: 'i32' } : a;
      default:
        return fail(`the ${o} operator`);
    }
  }

  private binary(o: BinaryOp, a: Val, b: Val): Val {
    switch (o) {
      case '+':
      case '-':
      case '*': {
        let ty = this.binaryTy(o, a.ty, b.ty);
        if (ty === 'ilit') ty = 'i32';
        if (ty === 'f64') return { code: `${DF_OP[o]}(${this.conv(a, ty)}, ${this.conv(b, ty)})`, ty };
        return { code: `(${this.conv(a, ty)} ${o} ${this.conv(b, ty)})`, ty };
      }
      case '%': {
        let ty = this.binaryTy(o, a.ty, b.ty);
        if (ty === 'ilit') ty = 'i32';
        if (ty === 'f32') return { code: `(${this.conv(a, 'f32')} % ${this.conv(b, 'f32')})`, ty };
        const neg = (v: Val): boolean => typeof v.konst === 'number' && v.konst < 0;
        if (ty === 'u32') {
          if (neg(a)) fail('a negative constant % an unsigned value');
          // A non-negative dividend: the divisor's magnitude (abs of i32 min is 2³¹ as a u32).
          const d = b.ty === 'i32' ? `bitcast<u32>(abs(${b.code}))` : this.conv(b, 'u32');
          return { code: `(${this.conv(a, 'u32')} % ${d})`, ty };
        }
        if (b.ty === 'u32' && !(typeof b.konst === 'number' && b.konst <= 0x7fffffff)) {
          this.helpers.add('mod_iu');
          return { code: `mod_iu(${this.conv(a, 'i32')}, ${b.code})`, ty };
        }
        return { code: `(${this.conv(a, 'i32')} % ${this.conv(b, 'i32')})`, ty };
      }
      case '/': {
        const ty = this.binaryTy(o, a.ty, b.ty);
        if (ty === 'f64') return { code: `df_div(${this.conv(a, ty)}, ${this.conv(b, ty)})`, ty };
        return { code: `(${this.conv(a, 'f32')} / ${this.conv(b, 'f32')})`, ty: 'f32' };
      }
      case '**':
        return { code: `pow(${this.conv(a, 'f32')}, ${this.conv(b, 'f32')})`, ty: 'f32' };
      case '|':
      case '&':
      case '^':
        return { code: `(${this.conv(a, 'i32')} ${o} ${this.conv(b, 'i32')})`, ty: 'i32' };
      case '<<':
      case '>>':
        return { code: `(${this.conv(a, 'i32')} ${o} (${this.conv(b, 'u32')} & 31u))`, ty: 'i32' };
      case '>>>':
        return { code: `(${this.conv(a, 'u32')} >> (${this.conv(b, 'u32')} & 31u))`, ty: 'u32' };
      default:
        if (COMPARISONS.has(o)) return { code: this.compare(o, a, b), ty: 'bool' };
        return fail(`the ${o} operator`);
    }
  }

  /**
   * W1's limit made visible: an integer combined with a constant outside 32 bits in
   * anything but a comparison (those are W8's) is a computation that JavaScript does in 53
   * bits and the GPU would wrap or round: outside the subset.
   */
  private checkRange(e: Extract<Expr, { op: 'binary' }>): void {
    if (this.meetsBigConstant(e))
      fail(
        `an integer meets the constant ${String(constValue(isBigConstant(e.a) ? e.a : e.b))} in ${e.o}, beyond 32 bits (the GPU's integers would wrap or round where JavaScript's do not)`,
      );
  }

  /** One side an integer constant beyond 32 bits, the other an integer expression. */
  private meetsBigConstant(e: Extract<Expr, { op: 'binary' }>): boolean {
    return (isBigConstant(e.a) && this.isInt(e.b)) || (isBigConstant(e.b) && this.isInt(e.a));
  }

  /** Whether x is an integer-typed expression that is not a constant. */
  private isInt(x: Expr): boolean {
    if (constValue(x) !== undefined) return false;
    const t = this.typeOrPending(x);
    return t !== null && INT(t);
  }

  /** typeOf, or null while a local it reads has no type yet (the local-type inference is under way). */
  private typeOrPending(x: Expr): WTy | null {
    try {
      return this.typeOf(x);
    } catch (err) {
      if (err instanceof PendingLocal) return null;
      throw err;
    }
  }

  /**
   * The integer type an integer division of a / b is done in: i32 when both are signed (or
   * integer literals), u32 when both are unsigned (or non-negative literals); null for a
   * mix (an i32 division would misread unsigned values past 2³¹), non-integers, or not a
   * division. Math.floor of such a quotient, `(a / b) | 0` and W7's exact quotient are
   * integer divisions (W1).
   */
  private intDivKind(e: Expr): 'i32' | 'u32' | null {
    if (e.op !== 'binary' || e.o !== '/') return null;
    const ta = this.typeOrPending(e.a);
    const tb = this.typeOrPending(e.b);
    if (ta === null || tb === null) return null;
    const signed = (x: WTy): boolean => x === 'i32' || x === 'ilit';
    if (signed(ta) && signed(tb)) return 'i32';
    const unsigned = (x: WTy, v: Expr): boolean => x === 'u32' || (x === 'ilit' && (constValue(v) as number) >= 0);
    if (unsigned(ta, e.a) && unsigned(tb, e.b)) return 'u32';
    return null;
  }

  /** The quotient of `(a / b) | 0` of two integers (JavaScript's truncating integer division), or null. */
  private intQuotient(e: Extract<Expr, { op: 'binary' }>): Extract<Expr, { op: 'binary' }> | null {
    if (e.o !== '|') return null;
    const q = constValue(e.b) === 0 ? e.a : constValue(e.a) === 0 ? e.b : null;
    return q !== null && q.op === 'binary' && this.intDivKind(q) !== null ? q : null;
  }

  /** a / b as an integer division in type k (intDivKind), the operands in order. */
  private intDivision(q: Extract<Expr, { op: 'binary' }>, k: 'i32' | 'u32'): string {
    const [a, b] = this.operands([q.a, q.b]);
    return `(${this.conv(a!, k)} / ${this.conv(b!, k)})`;
  }

  /** A comparison of an integer expression with a constant beyond 32 bits (W8). */
  private beyond32(e: Extract<Expr, { op: 'binary' }>): boolean {
    return COMPARISONS.has(e.o) && this.meetsBigConstant(e) && !writes(e);
  }

  /** W8: both sides as 64-bit two's-complement integers (vec2<u32>: low, high word), compared exactly. */
  private wideCompare(e: Extract<Expr, { op: 'binary' }>): Val {
    this.helpers.add('wide');
    const a = this.wide(e.a);
    const b = this.wide(e.b);
    return { code: `(w_cmp(${a}, ${b}) ${wgslComparison(e.o)} 0i)`, ty: 'bool' };
  }

  private wide(x: Expr): string {
    const k = constValue(x);
    if (typeof k === 'number') {
      if (!Number.isInteger(k) || Math.abs(k) > 2 ** 53) fail(`the constant ${k} in 64-bit integer arithmetic`);
      const lo = Number(BigInt.asUintN(32, BigInt(k)));
      const hi = Number(BigInt.asUintN(32, BigInt(k) >> 32n));
      return `vec2<u32>(${lo}u, ${hi}u)`;
    }
    if (x.op === 'binary' && (x.o === '+' || x.o === '-' || x.o === '*')) {
      const f = x.o === '+' ? 'w_add' : x.o === '-' ? 'w_sub' : 'w_mul';
      return `${f}(${this.wide(x.a)}, ${this.wide(x.b)})`;
    }
    const v = this.expr(x);
    if (v.ty === 'i32' || v.ty === 'ilit') return `w_i(${this.conv(v, 'i32')})`;
    if (v.ty === 'u32' || v.ty === 'h') return `vec2<u32>(${v.code}, 0u)`;
    return fail(`a ${v.ty} value in 64-bit integer arithmetic`);
  }

  /** a o b for a comparison; mixed signed/unsigned integers exactly (W1). */
  private compare(o: BinaryOp, a: Val, b: Val): string {
    const op = wgslComparison(o);
    const refLike = (t: WTy): boolean => t === 'h' || t === 'null';
    if (refLike(a.ty) || refLike(b.ty)) {
      if (!(refLike(a.ty) || INT(a.ty)) || !(refLike(b.ty) || INT(b.ty)) || (op !== '==' && op !== '!='))
        return fail(`${a.ty} ${o} ${b.ty}`);
      return `(${this.conv(a, 'u32')} ${op} ${this.conv(b, 'u32')})`;
    }
    if (a.ty === 'bool' || b.ty === 'bool') {
      if (a.ty !== b.ty) {
        if (op === '==' || op === '!=') {
          // true === 1 is false in JavaScript (strict), true == 1 is true.
          if (o === '===' || o === '!==') return o === '===' ? 'false' : 'true';
        }
        return `(${this.conv(a, 'i32')} ${op} ${this.conv(b, 'i32')})`;
      }
      if (op === '==' || op === '!=') return `(${a.code} ${op} ${b.code})`;
      return `(${this.conv(a, 'i32')} ${op} ${this.conv(b, 'i32')})`;
    }
    if (!NUMERIC(a.ty) || !NUMERIC(b.ty)) return fail(`${a.ty} ${o} ${b.ty}`);
    if (a.ty === 'f64' || b.ty === 'f64') {
      // W10: df_lt / df_le with the operands swapped for > and >=.
      const x = this.conv(a, 'f64');
      const y = this.conv(b, 'f64');
      switch (op) {
        case '<':
          return `df_lt(${x}, ${y})`;
        case '<=':
          return `df_le(${x}, ${y})`;
        case '>':
          return `df_lt(${y}, ${x})`;
        case '>=':
          return `df_le(${y}, ${x})`;
        case '==':
          return `df_eq(${x}, ${y})`;
        default:
          return `!df_eq(${x}, ${y})`;
      }
    }
    if (a.ty === 'f32' || b.ty === 'f32') return `(${this.conv(a, 'f32')} ${op} ${this.conv(b, 'f32')})`;
    const lit = (v: Val): boolean => v.konst !== undefined;
    if (a.ty === b.ty || lit(a) || lit(b)) {
      let ty: WTy = a.ty === 'ilit' ? b.ty : a.ty;
      if (ty === 'ilit') ty = 'i32';
      // A literal against the other side's type: a negative literal against a u32 compares as a mixed pair.
      const neg = (v: Val): boolean => typeof v.konst === 'number' && v.konst < 0;
      if (!(ty === 'u32' && (neg(a) || neg(b)))) return `(${this.conv(a, ty)} ${op} ${this.conv(b, ty)})`;
    }
    // i32 against u32: mix_cmp(i, u) is -1, 0 or 1 as the numbers compare.
    this.helpers.add('mix_cmp');
    if (a.ty === 'u32' || (a.ty === 'ilit' && b.ty !== 'u32')) {
      return `(mix_cmp(${this.conv(b, 'i32')}, ${this.conv(a, 'u32')}) ${flip(op)} 0i)`;
    }
    return `(mix_cmp(${this.conv(a, 'i32')}, ${this.conv(b, 'u32')}) ${op} 0i)`;
  }

  private logical(e: Extract<Expr, { op: 'logical' }>): Val {
    const ty = this.typeOf(e);
    const a = this.expr(e.a);
    let b!: Val;
    const sub = this.nested(() => {
      b = this.expr(e.b);
    });
    if (e.o !== '??' && sub.length === 0) return { code: `(${this.truthy(a)} ${e.o} ${this.truthy(b)})`, ty: 'bool' };
    const t = `t${this.temps++}`;
    this.line(`var ${t}: ${this.wgslType(ty)} = ${this.conv(a, ty)};`);
    const test = e.o === '&&' ? t : e.o === '||' ? `!${t}` : `${t} == 0u`;
    this.line(`if (${test}) {`);
    this.lines.push(...sub);
    this.line(`  ${t} = ${this.conv(b, ty)};`);
    this.line('}');
    return { code: t, ty };
  }

  private math(e: Extract<Expr, { op: 'math' }>): Val {
    const fk = e.name === 'floor' && e.args.length === 1 ? this.intDivKind(e.args[0]!) : null;
    if (fk !== null) {
      const d = e.args[0] as Extract<Expr, { op: 'binary' }>;
      // Unsigned: the quotient is non-negative, floor is the truncating division.
      if (fk === 'u32') return { code: this.intDivision(d, 'u32'), ty: 'u32' };
      const [a, b] = this.operands([d.a, d.b]);
      this.helpers.add('floor_div');
      return { code: `floor_div(${this.conv(a!, 'i32')}, ${this.conv(b!, 'i32')})`, ty: 'i32' };
    }
    const args = this.operands(e.args);
    const ty = this.mathTy(
      e.name,
      args.map((a) => a.ty),
      e,
    );
    const f = (i: number): string => this.conv(args[i]!, 'f32');
    if (ty === 'f64') return this.dfMath(e.name, args);
    switch (e.name) {
      case 'floor':
      case 'ceil':
      case 'trunc':
        return ty === 'f32' ? { code: `${e.name}(${f(0)})`, ty } : { code: this.conv(args[0]!, ty), ty };
      case 'round':
        return ty === 'f32' ? { code: `floor(${f(0)} + 0.5f)`, ty } : { code: this.conv(args[0]!, ty), ty };
      case 'abs':
        return { code: `abs(${this.conv(args[0]!, ty)})`, ty };
      case 'min':
      case 'max': {
        let code = this.conv(args[0]!, ty);
        for (const a of args.slice(1)) code = `${e.name}(${code}, ${this.conv(a, ty)})`;
        return { code, ty };
      }
      case 'imul':
        return { code: `(${this.conv(args[0]!, 'i32')} * ${this.conv(args[1]!, 'i32')})`, ty };
      case 'clz32':
        return { code: `countLeadingZeros(${this.conv(args[0]!, 'u32')})`, ty };
      case 'sign':
        return { code: `sign(${this.conv(args[0]!, ty)})`, ty };
      case 'fround':
        return { code: f(0), ty };
      case 'hypot':
        return { code: `sqrt(${args.map((_, i) => `${f(i)} * ${f(i)}`).join(' + ') || '0.0f'})`, ty };
      case 'atan2':
      case 'pow':
        return { code: `${e.name}(${f(0)}, ${f(1)})`, ty };
      default:
        return { code: `${e.name}(${f(0)})`, ty };
    }
  }

  /** Math.* of double-single values (W10; mathTy has excluded the functions without a double-single version). */
  private dfMath(name: string, args: readonly Val[]): Val {
    const d = (i: number): string => this.conv(args[i]!, 'f64');
    const ty: WTy = 'f64';
    switch (name) {
      case 'floor':
      case 'ceil':
      case 'trunc':
      case 'abs':
      case 'sqrt':
        return { code: `df_${name}(${d(0)})`, ty };
      case 'round':
        return { code: `df_floor(df_add(${d(0)}, vec2<f32>(0.5f, 0.0f)))`, ty };
      case 'min':
      case 'max': {
        let code = d(0);
        for (let i = 1; i < args.length; i++) code = `df_${name}(${code}, ${d(i)})`;
        return { code, ty };
      }
      case 'sign':
        return { code: `vec2<f32>(sign((${d(0)}).x), 0.0f)`, ty };
      case 'hypot': {
        if (args.length === 0) return { code: 'vec2<f32>(0.0f)', ty };
        const vs = args.map((_, i) => this.hoist({ code: d(i), ty }).code);
        return { code: `df_sqrt(${vs.map((v) => `df_mul(${v}, ${v})`).reduce((x, y) => `df_add(${x}, ${y})`)})`, ty };
      }
      default:
        return fail(`Math.${name} of a double-single value (W10)`);
    }
  }

  /** W4: if `cond` holds, what JavaScript would throw: set `code` in the status buffer and stop the invocation. */
  private failIf(cond: string, code: number): void {
    this.line(`if (${cond}) {`);
    this.line(`  k_fail(${code}u);`);
    this.line('  return;');
    this.line('}');
  }

  /** After an allocator call: its failure (alloc.wgsl a_status) reported, the invocation stopped. */
  private allocatorCheck(): void {
    this.line('if (a_status != 0u) {');
    this.line('  k_report();');
    this.line('  return;');
    this.line('}');
  }

  // ------------------------------------------------------------------ typed-array locals (W11)

  /** `a = new Uint32Array(n)`: the length checked against the cap, the first n elements zeroed. */
  private newArray(id: number, value: Expr): void {
    const n = this.hoist(this.expr((value as Extract<Expr, { op: 'dynNew' }>).args[0]!));
    if (!INT(n.ty)) fail('a typed array whose length is not an integer');
    const u = this.conv(n, 'u32'); // a negative i32 becomes a large u32: past the cap too
    this.failIf(`${u} > ${LOCAL_ARRAY_CAP}u`, STATUS.LOCAL_ARRAY);
    this.line(`l${id}_n = ${u};`);
    this.line(`for (var z = 0u; z < l${id}_n; z++) {`);
    this.line(`  l${id}[z] = ${this.zero(this.arrays.typeOf(id))};`);
    this.line('}');
  }

  /** a[i], or a[i] = v (its value v, as JavaScript's assignment); an index outside the length stops the invocation. */
  private arrayElement(id: number, index: Expr, value: Expr | null): Val {
    const [iv, vv] = this.operands(value === null ? [index] : [index, value]);
    if (!INT(iv!.ty)) fail('a typed-array index that is not an integer');
    const i = this.hoist({ code: this.conv(iv!, 'u32'), ty: 'u32' }).code;
    this.failIf(`${i} >= l${id}_n`, STATUS.LOCAL_ARRAY);
    const t = this.arrays.typeOf(id);
    if (vv === undefined) return { code: `l${id}[${i}]`, ty: t };
    const v = this.hoist(vv);
    this.line(`l${id}[${i}] = ${this.conv(v, t)};`);
    return v;
  }

  // ------------------------------------------------------------------ rank tables (W7)

  /** rankTable(ctx, C, n): the binding's length must be n; the value is no WGSL value. */
  private rankTableCall(e: Extract<Expr, { op: 'dynCall' }>): Val {
    const cls = this.ranks.classOf(e)!;
    if (this.ranked !== null && this.ranked !== cls) fail(`it reads the rank tables of two classes (${this.ranked.name}, ${cls.name})`);
    this.ranked = cls;
    const n = this.expr(e.args[2]!);
    if (!INT(n.ty)) fail('rankTable() with a count that is not an integer');
    this.failIf(`arrayLength(&ranks) != ${this.conv(n, 'u32')}`, STATUS.RANKS);
    return { code: '', ty: 'ranks' };
  }

  /** table[i]: the handle of rank i (past the end: what ctx.get would reject, W4). */
  private rankIndex(e: Extract<Expr, { op: 'dynIndex' }>): Val {
    this.expr(e.obj); // a call checks the table's length; a local has no value
    const i = this.hoist(this.expr(e.index));
    if (!INT(i.ty)) fail('a rank-table index that is not an integer');
    const u = this.conv(i, 'u32');
    this.failIf(`${u} >= arrayLength(&ranks)`, STATUS.BAD_HANDLE);
    return { code: `ranks[${u}]`, ty: 'u32' };
  }

  /** `(a - r) / b` with integers a, b and r's one assignment `a % b` (a assigned once): an exact integer quotient (W7). */
  private exactQuotient(e: Expr): 'i32' | 'u32' | null {
    if (e.op !== 'binary' || e.o !== '/' || e.a.op !== 'binary' || e.a.o !== '-') return null;
    const a = e.a.a;
    const r = e.a.b;
    if (a.op !== 'local' || r.op !== 'local' || !this.ranks.single.has(a.id)) return null;
    const rv = this.ranks.single.get(r.id);
    if (rv === undefined || rv.op !== 'binary' || rv.o !== '%' || rv.a.op !== 'local' || rv.a.id !== a.id) return null;
    const same = (x: Expr, y: Expr): boolean =>
      (x.op === 'arg' && y.op === 'arg' && x.index === y.index) ||
      (x.op === 'local' && y.op === 'local' && x.id === y.id && this.ranks.single.has(x.id)) ||
      (x.op === 'const' && y.op === 'const' && x.value === y.value);
    if (!same(rv.b, e.b)) return null;
    // (a - a % b) is a multiple of b: the quotient is exact in either signedness.
    return this.intDivKind({ op: 'binary', o: '/', a, b: e.b });
  }

  // ------------------------------------------------------------------ fields

  /** Word index and bit shift of field f (element elem) of object h, as WGSL expressions. */
  private address(f: FieldRef, h: Val, elem: Val | null): { word: string; shift: string; bytes: number } {
    const fls = [...f.layouts.entries()];
    if (fls.length === 0) fail(`${f.cls.name}.${f.name} has no concrete layout`);
    const bytes = fls[0]![1].elemBytes;
    const isSelf = h.code === 'self_h';
    const single: FieldLayout | null = isSelf
      ? (f.layouts.get(this.ir.cls.id) ?? null)
      : fls.every(([, l]) => l.offsets[0] === fls[0]![1].offsets[0] && stride(l) === stride(fls[0]![1]))
        ? fls[0]![1]
        : null;
    let off: string;
    if (single !== null) {
      off = `${single.offsets[0]}u`;
      if (elem !== null) off = `(${off} + ${this.conv(elem, 'u32')} * ${stride(single)}u)`;
    } else {
      // Several concrete classes with different offsets: by the block's type id.
      const tt = this.hoist({ code: typeWord(h.code), ty: 'u32' }).code;
      let o = '0u';
      let s = '0u';
      for (const [id, l] of fls) {
        o = `select(${o}, ${l.offsets[0]}u, ${tt} == ${id}u)`;
        s = `select(${s}, ${stride(l)}u, ${tt} == ${id}u)`;
      }
      off = elem === null ? o : `(${o} + ${this.conv(elem, 'u32')} * ${s})`;
    }
    const base = `block_word(${h.code} >> SLOT_BITS) + (${off} >> 2u)`;
    const slot = `(${h.code} & 31u)`;
    if (bytes === 8) return { word: `${base} + 2u * ${slot}`, shift: '0u', bytes }; // the low word; the high one follows (W10)
    if (bytes === 4) return { word: `${base} + ${slot}`, shift: '0u', bytes };
    if (bytes === 2) return { word: `${base} + (${slot} >> 1u)`, shift: `(16u * (${slot} & 1u))`, bytes };
    return { word: `${base} + (${slot} >> 2u)`, shift: `(8u * (${slot} & 3u))`, bytes };
  }

  /** The element index of a load, evaluated and checked (checkedIndex); null for a scalar field. */
  private element(f: FieldRef, elem: Expr | null, inBounds: boolean | undefined): Val | null {
    if (elem === null) {
      if (f.length !== 0) fail(`${f.cls.name}.${f.name} is an inline array used as a value`);
      return null;
    }
    return this.checkedIndex(f, this.hoist(this.expr(elem)), inBounds);
  }

  private load(e: Extract<Expr, { op: 'load' }>): Val {
    let h = this.expr(e.obj);
    if (e.elem !== null && writes(e.elem)) h = this.hoist(h);
    const el = this.element(e.field, e.elem, e.inBounds);
    const { word, shift, bytes } = this.address(e.field, h, el);
    const kind = e.field.kind;
    if (bytes === 8) {
      const w = this.hoist({ code: word, ty: 'u32' }).code;
      return { code: `df_load(atomicLoad(&heap[${w}]), atomicLoad(&heap[${w} + 1u]))`, ty: 'f64' };
    }
    const raw = `atomicLoad(&heap[${word}])`;
    let code: string;
    if (bytes === 4) {
      code = kind === 'f32' ? `bitcast<f32>(${raw})` : kind === 'i32' ? `bitcast<i32>(${raw})` : raw;
    } else {
      const w = bytes === 2 ? 16 : 8;
      if (kind === 'i8' || kind === 'i16') code = `((bitcast<i32>(${raw} << (${32 - w}u - ${shift}))) >> ${32 - w}u)`;
      else code = `((${raw} >> ${shift}) & ${w === 16 ? '0xffffu' : '0xffu'})`;
      if (kind === 'bool') code = `(${code} != 0u)`;
    }
    return { code, ty: fieldTy(e.field) };
  }

  private store(e: Extract<Expr, { op: 'store' }>, asValue: boolean): Val {
    const vals = this.operands(e.elem === null ? [e.obj, e.value] : [e.obj, e.elem, e.value]);
    let h = vals[0]!;
    const elemV = e.elem === null ? null : vals[1]!;
    let value = vals[vals.length - 1]!;
    if (asValue) value = this.hoist(value);
    if (elemV !== null) h = this.hoist(h);
    const checked = elemV === null ? null : this.checkedIndex(e.field, elemV, e.inBounds);
    const { word, shift, bytes } = this.address(e.field, h, checked);
    const kind = e.field.kind;
    if (kind === 'f64') {
      this.line(`df_store(${word}, ${this.conv(value, 'f64')});`);
      return asValue ? value : { code: '', ty: 'void' };
    }
    let bits: string;
    if (kind === 'f32') bits = `bitcast<u32>(${this.conv(value, 'f32')})`;
    else if (kind === 'bool') bits = `select(0u, 1u, ${this.truthy(value)})`;
    else if (kind === 'ref') bits = this.conv(value, 'h');
    else bits = this.conv(value, 'u32');
    if (bytes === 4) this.line(`atomicStore(&heap[${word}], ${bits});`);
    else {
      this.helpers.add('store_sub');
      const mask = bytes === 2 ? '0xffffu' : '0xffu';
      this.line(`store_sub(${word}, ${shift}, ${mask}, ${bits});`);
    }
    return asValue ? value : { code: '', ty: 'void' };
  }

  /**
   * The element index, checked against the array's length unless the form proved it in
   * bounds (W4). A float index (`Math.floor(x) - c.x`) must be an integer, as JavaScript's
   * get(i) requires; it is then used as a u32.
   */
  private checkedIndex(f: FieldRef, v: Val, inBounds: boolean | undefined): Val {
    if (typeof v.konst === 'number' && Number.isInteger(v.konst) && v.konst >= 0 && v.konst < f.length) return v;
    if (v.ty === 'f64') {
      // An integer of a double-single pair is exact in hi when it is in range (lo is 0).
      const t = this.hoist(v);
      this.failIf(`!(df_eq(df_floor(${t.code}), ${t.code}) && ${t.code}.x >= 0.0f && ${t.code}.x < ${f.length}.0f)`, STATUS.RANGE);
      return { code: `u32(${t.code}.x)`, ty: 'u32' };
    }
    if (v.ty === 'f32') {
      const t = this.hoist(v);
      this.failIf(`!(${t.code} == floor(${t.code}) && ${t.code} >= 0.0f && ${t.code} < ${f.length}.0f)`, STATUS.RANGE);
      return { code: `u32(${t.code})`, ty: 'u32' };
    }
    if (!INT(v.ty)) fail(`an inline-array index of ${f.cls.name}.${f.name} that is not a number`);
    if (inBounds === true) return v;
    this.failIf(`${this.conv(v, 'u32')} >= ${f.length}u`, STATUS.RANGE);
    return v;
  }
}

class PendingLocal extends Error {}

/**
 * The lines without statements that follow a `break`, `continue` or `return` in the same
 * block (the shader compiler warns about them, on stdout): a line is dropped while its
 * indentation is at least the terminator's; a line indented less (the block's `}` or
 * `} else {`) ends the dropping.
 */
function dropUnreachable(lines: readonly string[]): string[] {
  const out: string[] = [];
  let dead = -1;
  for (const l of lines) {
    const ind = l.length - l.trimStart().length;
    if (dead >= 0) {
      if (ind >= dead) continue;
      dead = -1;
    }
    out.push(l);
    const t = l.trim();
    if (t === 'break;' || t === 'continue;' || t === 'return;') dead = ind;
  }
  return out;
}

/** The type word of the block holding object `h` (a WGSL expression of a handle). */
function typeWord(h: string): string {
  return `atomicLoad(&heap[block_word(${h} >> SLOT_BITS) + ${BLOCK_TYPE_WORD}u])`;
}

function stride(l: FieldLayout): number {
  return l.offsets.length > 1 ? l.offsets[1]! - l.offsets[0]! : 0;
}

function fieldTy(f: FieldRef): WTy {
  switch (f.kind) {
    case 'f32':
      return 'f32';
    case 'f64':
      return 'f64';
    case 'i8':
    case 'i16':
    case 'i32':
      return 'i32';
    case 'bool':
      return 'bool';
    case 'ref':
      return 'h';
    default:
      return 'u32';
  }
}

/** The double-single functions of + - * (W10, HELPERS.df64). */
const DF_OP: Readonly<Record<string, string>> = { '+': 'df_add', '-': 'df_sub', '*': 'df_mul' };

const COMPARISONS: ReadonlySet<BinaryOp> = new Set<BinaryOp>(['<', '<=', '>', '>=', '==', '===', '!=', '!==']);

/** The WGSL operator of a JavaScript comparison (strict and loose equality alike: the operands are typed). */
function wgslComparison(o: BinaryOp): string {
  return o === '===' ? '==' : o === '!==' ? '!=' : o;
}

/** An integer constant outside both i32 and u32 (W8). */
function isBigConstant(x: Expr): boolean {
  const k = constValue(x);
  return typeof k === 'number' && Number.isInteger(k) && (k > 0xffffffff || k < -0x80000000);
}

function flip(op: string): string {
  return op === '<' ? '>' : op === '>' ? '<' : op === '<=' ? '>=' : op === '>=' ? '<=' : op;
}

/** Bindings-independent functions every generated kernel has (after objects.wgsl and alloc.wgsl, which the runner appends). */
const GEN_LIB = `/** The bits of NaN and the infinities, which no WGSL constant expression may hold. */
var<private> k_nan: u32 = 0x7fc00000u;
var<private> k_pinf: u32 = 0x7f800000u;
var<private> k_ninf: u32 = 0xff800000u;
/** Report this invocation's failure (W4) to the runner's status buffer. */
fn k_fail(code: u32) {
  atomicOr(&status[0], code);
  atomicAdd(&status[1], 1u);
}
/** Report an allocator failure (alloc.wgsl a_status). */
fn k_report() {
  if (a_status != 0u) {
    k_fail(a_status);
  }
}`;

const HELPERS: Record<string, string> = {
  df64: `/**
 * W10: double-single numbers, vec2<f32>(hi, lo) with hi + lo the value and hi = fl(hi + lo)
 * (every function ends with df_quick, so a value has one representation and compares
 * by its parts). Only additions and products of 12-bit halves (exact) are used where
 * exactness matters, so fused multiply-adds do not change the results. Some shader
 * compilers simplify floating-point algebra as if it were exact ((a + b) - a to b), which
 * drops the error terms: df_o multiplies by P.one, 1.0 from the uniform, which the
 * compiler cannot see through, at each step such a rewrite would break.
 */
fn df_o(x: f32) -> f32 {
  return x * P.one;
}
fn df_two_sum(a: f32, b: f32) -> vec2<f32> {
  let s = df_o(a + b);
  let v = df_o(s - a);
  return vec2<f32>(s, df_o(a - df_o(s - v)) + (b - v));
}
/** a + b as (hi, lo) when |a| >= |b| (or a is 0); a zero b keeps a's sign (-0 stays -0, as in JavaScript). */
fn df_quick(a: f32, b: f32) -> vec2<f32> {
  let s = select(df_o(a + b), a, b == 0.0f);
  return vec2<f32>(s, b - df_o(s - a));
}
/** a · b to about 48 bits: the four products of the 12-bit halves of a and b are exact. */
fn df_prod(a: f32, b: f32) -> vec2<f32> {
  let ah = bitcast<f32>(bitcast<u32>(a) & 0xfffff000u);
  let al = df_o(a - ah);
  let bh = bitcast<f32>(bitcast<u32>(b) & 0xfffff000u);
  let bl = df_o(b - bh);
  let m = df_two_sum(ah * bl, al * bh);
  let s = df_two_sum(ah * bh, m.x);
  return df_quick(s.x, s.y + (m.y + al * bl));
}
fn df_add(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
  let s = df_two_sum(a.x, b.x);
  let t = df_two_sum(a.y, b.y);
  let u = df_quick(s.x, s.y + t.x);
  return df_quick(u.x, u.y + t.y);
}
fn df_sub(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
  return df_add(a, -b);
}
fn df_mul(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
  let p = df_prod(a.x, b.x);
  return df_quick(p.x, p.y + (a.x * b.y + a.y * b.x));
}
/** a / b: an f32 quotient and two corrections from exact remainders (b = 0: f32's quotient). */
fn df_div(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
  if (b.x == 0.0f) {
    return vec2<f32>(a.x / b.x, 0.0f);
  }
  let q1 = a.x / b.x;
  let r1 = df_sub(a, df_mul(b, vec2<f32>(q1, 0.0f)));
  let q2 = r1.x / b.x;
  let r2 = df_sub(r1, df_mul(b, vec2<f32>(q2, 0.0f)));
  return df_add(df_quick(q1, q2), vec2<f32>(r2.x / b.x, 0.0f));
}
/** Math.sqrt: f32's root and two Newton steps on exact remainders (0 and -0 kept; a negative: NaN). */
fn df_sqrt(a: vec2<f32>) -> vec2<f32> {
  if (a.x == 0.0f) {
    return a;
  }
  if (a.x < 0.0f) {
    return vec2<f32>(bitcast<f32>(k_nan), 0.0f);
  }
  let x = sqrt(a.x);
  let r1 = df_sub(a, df_prod(x, x));
  let y = df_quick(x, r1.x / (2.0f * x));
  let r2 = df_sub(a, df_mul(y, y));
  return df_add(y, vec2<f32>(r2.x / (2.0f * y.x), 0.0f));
}
fn df_lt(a: vec2<f32>, b: vec2<f32>) -> bool {
  return a.x < b.x || (a.x == b.x && a.y < b.y);
}
fn df_le(a: vec2<f32>, b: vec2<f32>) -> bool {
  return a.x < b.x || (a.x == b.x && a.y <= b.y);
}
fn df_eq(a: vec2<f32>, b: vec2<f32>) -> bool {
  return a.x == b.x && a.y == b.y;
}
fn df_min(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
  return select(b, a, df_lt(a, b));
}
fn df_max(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
  return select(b, a, df_lt(b, a));
}
fn df_abs(a: vec2<f32>) -> vec2<f32> {
  return select(a, -a, a.x < 0.0f);
}
/** Math.floor: hi's floor, unless hi is an integer (then hi + floor(lo)). */
fn df_floor(a: vec2<f32>) -> vec2<f32> {
  let h = floor(a.x);
  if (h != a.x) {
    return vec2<f32>(h, 0.0f);
  }
  return df_quick(h, floor(a.y));
}
fn df_ceil(a: vec2<f32>) -> vec2<f32> {
  return -df_floor(-a);
}
fn df_trunc(a: vec2<f32>) -> vec2<f32> {
  return select(df_floor(a), -df_floor(-a), a.x < 0.0f);
}
/** JavaScript's ToUint32 of an f32 that is an integer (or ±∞, NaN: 0): modulo 2³², from its bits. */
fn df_wrap(f: f32) -> u32 {
  let b = bitcast<u32>(f);
  let e = i32((b >> 23u) & 0xffu) - 127;
  if (e < 31) {
    return bitcast<u32>(i32(f));
  }
  if (e > 54) {
    return 0u;
  }
  let v = ((b & 0x7fffffu) | 0x800000u) << u32(e - 23);
  return select(v, 0u - v, (b >> 31u) != 0u);
}
/** JavaScript's ToInt32: truncated, modulo 2³² (both parts of the truncated pair are integers). */
fn df_to_i32(a: vec2<f32>) -> i32 {
  let t = df_trunc(a);
  return bitcast<i32>(df_wrap(t.x) + df_wrap(t.y));
}
fn df_to_f32(a: vec2<f32>) -> f32 {
  return select(a.x + a.y, a.x, a.y == 0.0f);
}
/** Integers exactly: the parts above and below bit 8 are exact f32. */
fn df_from_i32(v: i32) -> vec2<f32> {
  return df_two_sum(f32(v & ~0xffi), f32(v & 0xffi));
}
fn df_from_u32(v: u32) -> vec2<f32> {
  return df_two_sum(f32(v & 0xffffff00u), f32(v & 0xffu));
}
/** The double of words (w0 low, w1 high) as a pair (outside f32's normal range: ±0 or ±∞). */
fn df_load(w0: u32, w1: u32) -> vec2<f32> {
  let e = i32((w1 >> 20u) & 0x7ffu) - 1023;
  let s = w1 & 0x80000000u;
  if (e == 1024) {
    let nan = ((w1 & 0xfffffu) | w0) != 0u;
    return vec2<f32>(bitcast<f32>(s | select(0x7f800000u, 0x7fc00000u, nan)), 0.0f);
  }
  if (e < -126) {
    return vec2<f32>(bitcast<f32>(s), 0.0f);
  }
  if (e > 127) {
    return vec2<f32>(bitcast<f32>(s | 0x7f800000u), 0.0f);
  }
  // hi: the top 24 of the 53 significand bits; lo: the 29 below them, times 2^(e - 52).
  let hi = bitcast<f32>(s | (u32(e + 127) << 23u) | ((w1 & 0xfffffu) << 3u) | (w0 >> 29u));
  let lo = ldexp(ldexp(f32(w0 & 0x1fffffffu), -52), e);
  return df_quick(hi, select(lo, -lo, s != 0u));
}
/** r · 2^(k - x), in two steps where one would pass ldexp an exponent beyond f32's. */
fn df_units(r: f32, x: i32, k: i32) -> f32 {
  if (x > 0) {
    return ldexp(r, k - x);
  }
  return ldexp(ldexp(r, k), -x);
}
/** The words (low, high) of the double nearest hi + lo (hi subnormal: ±0). */
fn df_bits(v: vec2<f32>) -> vec2<u32> {
  let hb = bitcast<u32>(v.x);
  let s = hb & 0x80000000u;
  let eb = (hb >> 23u) & 0xffu;
  if (eb == 0u) {
    return vec2<u32>(0u, s);
  }
  if (eb == 0xffu) {
    return vec2<u32>(0u, s | 0x7ff00000u | select(0u, 0x80000u, (hb & 0x7fffffu) != 0u));
  }
  let x = i32(eb) - 127;
  let m = (hb & 0x7fffffu) | 0x800000u;
  let rel = select(v.y, -v.y, s != 0u);
  // |value| = m · 2^(x - 23) + rel = (m · 2^(k - 23) + q) · 2^(x - k), |rel| <= 2^(x - 24):
  // k = 52 (a 53-bit significand) unless hi is a power of two and lo pulls it below (k = 53).
  var k = 52;
  var q = i32(round(df_units(rel, x, 52)));
  if (m == 0x800000u && rel < 0.0f) {
    let q2 = i32(round(df_units(rel, x, 53)));
    if (q2 < 0i) {
      k = 53;
      q = q2;
    }
  }
  var lw = m << u32(k - 23);
  var hw = m >> u32(55 - k);
  if (q >= 0i) {
    let t = lw + u32(q);
    hw = hw + select(0u, 1u, t < lw);
    lw = t;
  } else {
    let d = u32(-q);
    hw = hw - select(0u, 1u, lw < d);
    lw = lw - d;
  }
  return vec2<u32>(lw, s | (u32(x - k + 52 + 1023) << 20u) | (hw & 0xfffffu));
}
fn df_store(w: u32, v: vec2<f32>) {
  let b = df_bits(v);
  atomicStore(&heap[w], b.x);
  atomicStore(&heap[w + 1u], b.y);
}`,
  mix_cmp: `/** -1, 0 or 1 as the integer a compares with the unsigned b. */
fn mix_cmp(a: i32, b: u32) -> i32 {
  if (a < 0i) {
    return -1i;
  }
  let ua = u32(a);
  return select(select(0i, 1i, ua > b), -1i, ua < b);
}`,
  wide: `/** W8: 64-bit two's-complement integers as vec2<u32>(low, high). */
fn w_i(a: i32) -> vec2<u32> {
  return vec2<u32>(bitcast<u32>(a), select(0u, 0xffffffffu, a < 0i));
}
fn w_add(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  let lo = a.x + b.x;
  return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}
fn w_sub(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  return vec2<u32>(a.x - b.x, a.y - b.y - select(0u, 1u, a.x < b.x));
}
/** The full 64-bit product of two u32, from 16-bit halves. */
fn w_mul32(a: u32, b: u32) -> vec2<u32> {
  let a0 = a & 0xffffu;
  let a1 = a >> 16u;
  let b0 = b & 0xffffu;
  let b1 = b >> 16u;
  let p00 = a0 * b0;
  let p01 = a0 * b1;
  let p10 = a1 * b0;
  let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
  return vec2<u32>((p00 & 0xffffu) | (mid << 16u), a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u));
}
/** The low 64 bits of a product (two's complement: exact while JavaScript's is, below 2⁵³). */
fn w_mul(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  let p = w_mul32(a.x, b.x);
  return vec2<u32>(p.x, p.y + a.x * b.y + a.y * b.x);
}
/** -1, 0 or 1 as the signed 64-bit a compares with b. */
fn w_cmp(a: vec2<u32>, b: vec2<u32>) -> i32 {
  let ah = bitcast<i32>(a.y);
  let bh = bitcast<i32>(b.y);
  if (ah != bh) {
    return select(1i, -1i, ah < bh);
  }
  return select(select(0i, 1i, a.x > b.x), -1i, a.x < b.x);
}`,
  mod_iu: `/** a % b of a signed a and an unsigned b, with the dividend's sign (JavaScript's remainder). */
fn mod_iu(a: i32, b: u32) -> i32 {
  let m = select(bitcast<u32>(a), 0u - bitcast<u32>(a), a < 0i) % b;
  return select(bitcast<i32>(m), -bitcast<i32>(m), a < 0i);
}`,
  floor_div: `/** Math.floor(a / b) of integers. */
fn floor_div(a: i32, b: i32) -> i32 {
  let q = a / b;
  return select(q, q - 1i, (a % b != 0i) && ((a < 0i) != (b < 0i)));
}`,
  store_sub: `/** A 1- or 2-byte field := v: its word changes in one atomic step (W5), at most SPIN_LIMIT tries. */
fn store_sub(w: u32, shift: u32, mask: u32, v: u32) {
  var old = atomicLoad(&heap[w]);
  for (var i = 0u; i < SPIN_LIMIT; i++) {
    let r = atomicCompareExchangeWeak(&heap[w], old, (old & ~(mask << shift)) | ((v & mask) << shift));
    if (r.exchanged) {
      return;
    }
    old = r.old_value;
  }
  k_fail(STATUS_SPIN_CAP);
}`,
  valid_handle: `/** ctx.get()'s test: a handle inside the heap, in a block that holds objects. */
fn valid_handle(h: u32) -> bool {
  if (h == 0u || (h >> SLOT_BITS) >= NUM_BLOCKS) {
    return false;
  }
  return atomicLoad(&heap[block_word(h >> SLOT_BITS) + ${BLOCK_TYPE_WORD}u]) < NUM_TYPES;
}`,
};
