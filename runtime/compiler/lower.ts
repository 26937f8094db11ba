/**
 * Lowering: a do-all method's JavaScript (parsed by acorn) → the intermediate form
 * (ir.ts) for one concrete class.
 *
 * The lowering walks the method's syntax tree with a static environment. It knows, for
 * every expression, either a compile-time value (a class, a function, a constant, the
 * `Math` object, a function expression written in the body) or a run-time value with a
 * type (ir.ts Ty). smmo objects are handles with a static class; everything about them
 * is resolved here:
 *
 *   this.f / x.f / x.f = v        Load / Store of the field's SOA array (x non-null)
 *   x.arr.get(i) / .set(i, v)     Load / Store of element i (bounds checked)
 *   x.m(…), helper(…), super.m()  inlined (virtual calls: a Switch on the concrete type)
 *   x.g, x.s = v, x.s += v, x.s++ getters and setters inlined as methods are
 *   ctx.create(C, {…})            Alloc (+ zeroing), then the stores of the init object
 *   x.destroy(), ctx.destroy(x)   Free
 *   ctx.deviceDo(C, (o) => …)     ForEach per concrete class of C, the body inlined
 *   ctx.get(C, h)                 CheckHandle (as the unchecked get() does)
 *   x instanceof C, x.is(y), x.handle, x === null …
 *   if (x instanceof C) { … }     x has class C inside the branch (x a const variable); so
 *   x instanceof C ? a : b        in a, and on the right of `x instanceof C && …`; where no
 *                                 concrete class of x is a C, what the test guards is left out
 *   if (!(x instanceof C)) return;  x has class C after it (also else branches, `!(…) ? : b`,
 *                                 `!(…) || b`); where x is never a C, the rest is left out
 *   const { a, b: c = 1 } = o     each property read as `o.a` would be, then bound (bind)
 *   [a, b] = [b, a]               the items saved, then bound one by one (no array)
 *   const [a, ...r] = iterable    JavaScript's for…of over it (forOf), as many elements as
 *                                 named, the iterator closed after (JavaScript only)
 *   try { … } catch (e) { … }     JavaScript's try around the compiled statements (JavaScript only)
 *   xs.map((x) => x * k)          a function handed to JavaScript: a JavaScript function whose
 *                                 body is compiled, the method's consts captured (closure)
 *
 * Free names are resolved through the function's own closure (scope.ts): module
 * constants become constants, classes and functions compile-time values. Code the
 * lowering cannot compile stays JavaScript: a call of a function that cannot be inlined
 * becomes a call of the real function (its smmo arguments boxed into views), and values
 * the form does not model (strings, typed arrays, results of such calls) are 'dyn' —
 * that part of the method runs as the same JavaScript it was, the rest compiled.
 *
 * A method is not compiled at all (CompileFallback, with the reason) when its meaning
 * would change: comparing two objects with === (views are not unique, handles are), an
 * object in arithmetic, reading a module variable that may change (`let`), one variable
 * holding objects of unrelated classes or objects and numbers, recursion, and constructs
 * outside the documented subset (for…in, an object pattern's rest element, …).
 *
 * Evaluation order. Inlined calls and deviceDo loops are statements, met in the middle of
 * expressions. Statements produced while lowering an expression go to the current
 * statement list (the *sink*) ahead of the statement the expression belongs to; when an
 * operand produces statements, the operands before it are first saved in temporaries
 * (`ordered`), and operands evaluated only conditionally (&&, ||, ??, ?:) are lowered into
 * their own branch. So operands run in JavaScript's order, exactly once.
 *
 * Equivalence with the interpreted method (tests compare heaps byte for byte): every
 * JavaScript operator keeps its meaning (ir.ts), every field access reads and writes the
 * same bytes as the generated accessors (accessors.ts), and the allocator is called in
 * the same order with the same arguments.
 */
import { SmmoObject, type SmmoClass } from '../schema.js';
import type { FieldLayout, TypeLayout, TypeTable } from '../layout.js';
import {
  BOOL,
  CTX,
  DYN,
  NULL,
  NUM,
  STR,
  UNDEF,
  arrTy,
  objTy,
  tyName,
  type BinaryOp,
  type Expr,
  type FieldRef,
  type MethodIR,
  type Stmt,
  type Ty,
  type UnaryOp,
} from './ir.js';
import { functionNode, parseFunction, type Node, type ParsedFunction } from './parse.js';
import type { ClosureResolver } from './scope.js';

/** Why a method is not compiled (it then runs as the interpreted TypeScript method). */
export class CompileFallback extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'CompileFallback';
  }
}

/** A local's type changed after uses were lowered: lower the method again with the new type. */
class Restart extends Error {}

/** Compile-time values. */
type SV =
  | { readonly sv: 'class'; readonly t: TypeLayout }
  /** A JavaScript value; a function read as a member of a JavaScript object or class keeps that object (`recv`), its `this` when called. */
  | {
      readonly sv: 'value';
      readonly value: unknown;
      readonly label: string;
      readonly recv?: { readonly value: object; readonly name: string };
    }
  | { readonly sv: 'ctxOp'; readonly ctx: Expr; readonly name: string }
  | { readonly sv: 'objMethod'; readonly recv: Val; readonly name: string; readonly impls: ReadonlyMap<object, number[]> | null }
  | { readonly sv: 'superMethod'; readonly fn: object; readonly name: string; readonly home: SmmoClass | null }
  | { readonly sv: 'arrMethod'; readonly recv: Val; readonly name: 'get' | 'set' }
  | { readonly sv: 'fnNode'; readonly fn: ParsedFunction; readonly env: Env; readonly frame: Frame };

interface Val {
  readonly k: 'v';
  readonly e: Expr;
  readonly t: Ty;
}
interface Static {
  readonly k: 's';
  readonly s: SV;
}
type R = Val | Static;

const val = (e: Expr, t: Ty): Val => ({ k: 'v', e, t });
const stat = (s: SV): Static => ({ k: 's', s });
const cnst = (value: number | boolean | string | null | undefined): Expr => ({ op: 'const', value });
const UNDEF_VAL = val(cnst(undefined), UNDEF);

/** What an assignment writes: a field, an accessor's setter (inlined), or a property of a JavaScript value. */
type Place =
  | { readonly k: 'field'; readonly f: FieldRef; readonly obj: Expr; readonly load: Expr }
  | {
      readonly k: 'setter';
      readonly recv: Val;
      readonly cls: TypeLayout;
      readonly name: string;
      readonly setters: ReadonlyMap<object, number[]>;
      /** The getters, where every concrete class has one (`+=`, `++` read through them). */
      readonly getters: ReadonlyMap<object, number[]> | null;
    }
  | { readonly k: 'dyn'; readonly target: Expr };

/** How a destructuring pattern binds its names: declares them (let, const) or assigns existing places. */
type BindMode = 'let' | 'const' | 'assign';

type Var =
  | {
      readonly k: 'local';
      readonly id: number;
      readonly konst: boolean;
      readonly narrowed?: Ty;
      /** What the variable is, where an assignment to it needs more than "constant" (a deviceDo callback's parameter). */
      readonly role?: string;
    }
  | { readonly k: 'static'; readonly sv: SV }
  /** A name for a value that cannot change (self, a do-all argument, a constant): no variable needed. */
  | { readonly k: 'alias'; readonly v: Val };

class Env {
  readonly vars = new Map<string, Var>();
  constructor(readonly parent: Env | null) {}
  find(name: string): Var | undefined {
    return this.vars.get(name) ?? this.parent?.find(name);
  }
}

/**
 * The names a function made as a JavaScript value (Lowering.closure) sees of the code
 * around it: each variable of the method it reads becomes one of its captured locals
 * (`capture`, once per name); compile-time values stay as they are.
 */
class CaptureEnv extends Env {
  constructor(
    private readonly outer: Env,
    private readonly capture: (name: string, v: Var) => Var,
  ) {
    super(null);
  }
  override find(name: string): Var | undefined {
    const hit = this.vars.get(name);
    if (hit !== undefined) return hit;
    const v = this.outer.find(name);
    if (v === undefined) return undefined;
    const c = this.capture(name, v);
    this.vars.set(name, c);
    return c;
  }
}

interface Target {
  readonly jsLabels: readonly string[];
  readonly kind: 'loop' | 'switch' | 'block';
  readonly breakLabel: string;
  readonly continueLabel: string | null;
  /** `continue` is `break continueLabel` (a for loop's update runs after its body block). */
  readonly continueBreaks: boolean;
}

interface Frame {
  /** The function whose closure resolves free names. */
  readonly closureOf: object;
  /** Distinguishes declarations of different functions in type-hint keys. */
  readonly key: number;
  readonly self: Val | null;
  readonly ret:
    | { readonly kind: 'lane' }
    | { readonly kind: 'inline'; readonly label: string; readonly result: number }
    | { readonly kind: 'each'; readonly label: string };
  readonly targets: Target[];
  /** The class on whose prototype the running method is defined (for `super`). */
  readonly home: SmmoClass | null;
}

interface LocalState {
  readonly id: number;
  readonly name: string;
  ty: Ty | null;
  readonly declKey: string;
  readUntyped: boolean;
}

const MAX_INLINE_DEPTH = 24;
const MAX_RESTARTS = 12;
const PURE_MATH = new Set([
  'abs', 'acos', 'acosh', 'asin', 'asinh', 'atan', 'atan2', 'atanh', 'cbrt', 'ceil', 'clz32', 'cos', 'cosh', 'exp', 'expm1',
  'floor', 'fround', 'hypot', 'imul', 'log', 'log10', 'log1p', 'log2', 'max', 'min', 'pow', 'round', 'sign', 'sin', 'sinh',
  'sqrt', 'tan', 'tanh', 'trunc',
]); // prettier-ignore

export type LoweredMethod = MethodIR & { readonly notes: readonly string[] };

/** Lower `method` of concrete type `t` into the intermediate form, or throw CompileFallback. */
/**
 * `argClasses`: for a backend that specialises a method to one call's arguments (the
 * generated WGSL kernels: runtime/compiler/emit-wgsl.ts), the class of each argument that
 * is an smmo object (null: any other value). Without it every argument is a JavaScript
 * value ('dyn'), as the JS backend needs (one compiled method serves every call).
 */
export function lowerMethod(
  table: TypeTable,
  t: TypeLayout,
  method: string,
  resolver: ClosureResolver,
  argClasses: readonly (TypeLayout | null)[] = [],
): LoweredMethod {
  // The descriptor, not the property: reading a getter would run user code while compiling.
  const fn = findDescriptor(t.cls.prototype as object, method, true)?.value as unknown;
  if (typeof fn !== 'function') throw new CompileFallback(`${t.name} has no method '${method}'`);
  const hints = new Map<string, Ty>();
  for (let round = 0; ; round++) {
    try {
      return new Lowering(table, t, resolver, hints, argClasses).method(fn as (...a: never[]) => unknown, method);
    } catch (e) {
      if (e instanceof Restart && round < MAX_RESTARTS) continue;
      if (e instanceof Restart) throw new CompileFallback('the types of its variables did not settle');
      throw e;
    }
  }
}

class Lowering {
  private readonly locals: LocalState[] = [];
  private readonly statics: unknown[] = [];
  private readonly staticIndex = new Map<unknown, number>();
  private labelCount = 0;
  private synthCount = 0;
  /** Functions made as values being lowered (closure): one at a time. */
  private closureDepth = 0;
  private fnCount = 0;
  private readonly fnKeys = new WeakMap<object, number>();
  private allocates = false;
  private frees = false;
  private portable = true;
  private readonly iterates = new Set<number>();
  private readonly inlining: object[] = [];
  private readonly notes: string[] = [];
  /** Where statements produced while lowering an expression go (see the file header). */
  private sink: Stmt[] = [];
  /** Loop counters with a known range inside their loop's body (boundedCounter). */
  private readonly ranges = new Map<number, { min: number; max: number }>();

  constructor(
    private readonly table: TypeTable,
    private readonly t: TypeLayout,
    private readonly resolver: ClosureResolver,
    private readonly hints: Map<string, Ty>,
    private readonly argClasses: readonly (TypeLayout | null)[] = [],
  ) {}

  // ---------------------------------------------------------------- entry

  method(fn: (...a: never[]) => unknown, name: string): LoweredMethod {
    const parsed = parseFunction(fn);
    if (typeof parsed === 'string') throw new CompileFallback(`${this.t.name}.${name}: ${parsed}`);
    this.checkShape(parsed, `${this.t.name}.${name}`);
    const frame: Frame = {
      closureOf: fn,
      key: this.keyOf(fn),
      self: val({ op: 'self' }, objTy(this.t)),
      ret: { kind: 'lane' },
      targets: [],
      home: homeOf(this.t.cls, name),
    };
    const env = new Env(null);
    const body: Stmt[] = [];
    this.sink = body;
    parsed.params.forEach((p, i) => {
      if (p.type === 'RestElement') throw new CompileFallback(`parameter ${i + 1} of ${name} is a rest parameter`);
      const cls = this.argClasses[i];
      const arg = val({ op: 'arg', index: i }, cls ? objTy(cls) : DYN);
      if (p.type !== 'Identifier') {
        // A pattern or a default value: bound as `let p = arg` would bind it.
        setSource(p, parsed.source);
        this.into(body, () => this.bind(p, arg, 'let', env, frame));
        return;
      }
      if (!assigns(parsed.body, p['name'] as string)) {
        env.vars.set(p['name'] as string, { k: 'alias', v: arg });
        return;
      }
      const id = this.newLocal(p['name'] as string, `${frame.key}:p${i}`);
      body.push({ s: 'let', id, name: p['name'] as string, init: null });
      body.push({ s: 'expr', e: this.assignLocal(id, arg, null) });
      env.vars.set(p['name'] as string, { k: 'local', id, konst: false });
    });
    this.inlining.push(fn);
    this.functionBody(parsed, env, frame, body);
    this.inlining.pop();
    return {
      cls: this.t,
      method: name,
      arity: parsed.params.length,
      body,
      locals: this.locals.map(({ id, name: n, ty }) => ({ id, name: n, ty: ty ?? UNDEF })),
      statics: this.statics,
      allocates: this.allocates,
      frees: this.frees,
      portable: this.portable,
      iterates: [...this.iterates],
      notes: this.notes,
    };
  }

  private checkShape(f: ParsedFunction, what: string): void {
    if (f.async) throw new CompileFallback(`${what} is async`);
    if (f.generator) throw new CompileFallback(`${what} is a generator`);
  }

  private keyOf(fn: object): number {
    let k = this.fnKeys.get(fn);
    if (k === undefined) this.fnKeys.set(fn, (k = ++this.fnCount));
    return k;
  }

  private label(prefix: string): string {
    return `${prefix}${++this.labelCount}`;
  }

  private staticRef(value: unknown, label: string): Expr {
    this.portable = false;
    let index = this.staticIndex.get(value);
    if (index === undefined) {
      index = this.statics.length;
      this.statics.push(value);
      this.staticIndex.set(value, index);
    }
    return { op: 'static', index, label };
  }

  private fail(node: Node | null, why: string): never {
    throw new CompileFallback(why + (node !== null ? ` (at \`${snippet(node)}\`)` : ''));
  }

  // ---------------------------------------------------------------- locals and types

  private newLocal(name: string, declKey: string): number {
    const id = this.locals.length;
    this.locals.push({ id, name, ty: this.hints.get(declKey) ?? null, declKey, readUntyped: false });
    return id;
  }

  /** A temporary local of type `ty`. */
  private temp(ty: Ty, name = 't'): number {
    const id = this.locals.length;
    this.locals.push({ id, name, ty, declKey: `temp${id}`, readUntyped: false });
    return id;
  }

  private readLocal(id: number): Val {
    const l = this.locals[id]!;
    if (l.ty === null) {
      l.readUntyped = true;
      return val({ op: 'local', id }, UNDEF);
    }
    return val({ op: 'local', id }, l.ty);
  }

  /** Assign `v` to local `id`, joining its type (a change re-lowers the method). */
  private assignLocal(id: number, v: Val, node: Node | null): Expr {
    const l = this.locals[id]!;
    if (l.ty === null) {
      if (l.readUntyped && v.t.k !== 'undef') {
        this.hints.set(l.declKey, v.t);
        throw new Restart();
      }
      l.ty = v.t;
    } else {
      const j = this.join(l.ty, v.t, node, l.name);
      if (!sameTy(j, l.ty)) {
        this.hints.set(l.declKey, j);
        throw new Restart();
      }
    }
    return { op: 'setLocal', id, value: this.coerce(v, l.ty, node).e };
  }

  private join(a: Ty, b: Ty, node: Node | null, what: string): Ty {
    if (sameTy(a, b)) return a;
    const nothing = (t: Ty): boolean => t.k === 'null' || t.k === 'undef';
    if (a.k === 'obj' && nothing(b)) return a;
    if (b.k === 'obj' && nothing(a)) return b;
    if (a.k === 'obj' && b.k === 'obj') {
      const c = commonClass(a.cls, b.cls);
      if (c === null) this.fail(node, `'${what}' holds objects of unrelated classes ${a.cls.name} and ${b.cls.name}`);
      return objTy(c);
    }
    for (const x of [a, b]) {
      if (x.k === 'obj' || x.k === 'arr' || x.k === 'ctx') {
        this.fail(
          node,
          `'${what}' holds both ${tyName(a)} and ${tyName(b)} values; keep smmo objects and other values in separate variables`,
        );
      }
    }
    return DYN;
  }

  /** Convert `v` for a place of type `to` (objects: handles, 0 for null; dyn: views). */
  private coerce(v: Val, to: Ty, node: Node | null): Val {
    if (to.k === 'obj') {
      if (v.t.k === 'obj') return v;
      if (v.t.k === 'null' || v.t.k === 'undef') return val(v.e.op === 'const' ? cnst(0) : { op: 'seq', items: [v.e, cnst(0)] }, to);
      if (v.t.k === 'dyn') {
        this.portable = false;
        return val({ op: 'unbox', value: v.e, cls: to.cls }, to);
      }
      this.fail(node, `a ${tyName(v.t)} value is used where an object of ${to.cls.name} is expected`);
    }
    if (to.k === 'dyn') return this.toDyn(v);
    return v;
  }

  /** The JavaScript value of `v` as the interpreted method would have it (views for objects). */
  private toDyn(v: Val): Val {
    switch (v.t.k) {
      case 'obj':
        this.portable = false;
        return val({ op: 'box', obj: v.e }, DYN);
      case 'arr':
        this.portable = false;
        return val({ op: 'boxArr', obj: v.e, field: v.t.field }, DYN);
      case 'ctx':
        return val(v.e, DYN);
      default:
        return v;
    }
  }

  // ---------------------------------------------------------------- sinks and order

  /** Lower with `out` as the sink; restores the previous sink. */
  private into<T>(out: Stmt[], f: () => T): T {
    const saved = this.sink;
    this.sink = out;
    try {
      return f();
    } finally {
      this.sink = saved;
    }
  }

  /**
   * Lower operands in order. If an operand produced statements, every earlier operand's
   * value is saved in a temporary just before them, so that it is computed first.
   */
  private ordered(thunks: readonly (() => Val)[]): Val[] {
    const marks: number[] = [];
    const ends: number[] = [];
    const out: Val[] = [];
    const sink = this.sink;
    for (const th of thunks) {
      marks.push(sink.length);
      out.push(th());
      ends.push(sink.length);
    }
    // From the last operand back: operand i is spilled if any later operand added statements.
    let later = false;
    for (let i = out.length - 1; i >= 0; i--) {
      if (later && !isStable(out[i]!.e)) {
        const v = out[i]!;
        const id = this.temp(v.t, 's');
        sink.splice(marks[i + 1]!, 0, { s: 'expr', e: { op: 'setLocal', id, value: v.e } });
        out[i] = val({ op: 'local', id }, v.t);
      }
      if (ends[i]! > marks[i]!) later = true;
    }
    return out;
  }

  /** Lower `f` into a branch of its own: its statements and its value. */
  private branch(f: () => Val): { stmts: Stmt[]; v: Val } {
    const stmts: Stmt[] = [];
    const v = this.into(stmts, f);
    return { stmts, v };
  }

  /**
   * A value computed only when `cond` is truthy (or falsy with `negate`), else `other`:
   * a conditional expression, or an if statement with a temporary when the branch has
   * statements.
   */
  private conditional(c: Expr, whenTrue: { stmts: Stmt[]; v: Val }, whenFalse: { stmts: Stmt[]; v: Val }, t: Ty, node: Node): Val {
    const a = this.coerce(whenTrue.v, t, node).e;
    const b = this.coerce(whenFalse.v, t, node).e;
    if (whenTrue.stmts.length === 0 && whenFalse.stmts.length === 0) return val({ op: 'cond', c, a, b }, t);
    const id = this.temp(t, 'c');
    this.sink.push({
      s: 'if',
      c,
      then: [...whenTrue.stmts, { s: 'expr', e: { op: 'setLocal', id, value: a } }],
      else: [...whenFalse.stmts, { s: 'expr', e: { op: 'setLocal', id, value: b } }],
    });
    return val({ op: 'local', id }, t);
  }

  /** Make `o` usable twice (a local, self or argument); may add a temporary. */
  private simple(o: Val): Val {
    if (isStable(o.e) || o.e.op === 'local') return o;
    const id = this.temp(o.t, 'o');
    this.sink.push({ s: 'expr', e: { op: 'setLocal', id, value: o.e } });
    return val({ op: 'local', id }, o.t);
  }

  // ---------------------------------------------------------------- functions

  private functionBody(f: ParsedFunction, env: Env, frame: Frame, out: Stmt[]): void {
    setSource(f.body, f.source);
    this.into(out, () => {
      if (f.body.type === 'BlockStatement') {
        this.block(f.body['body'] as Node[], env, frame, out);
        return;
      }
      const v = this.value(f.body, env, frame);
      if (frame.ret.kind === 'inline') out.push({ s: 'expr', e: this.assignLocal(frame.ret.result, v, f.body) });
      else out.push(...exprStmts(v.e));
    });
  }

  /**
   * Inline a call of `fn` (a function value, method or function expression): bind the
   * parameters, lower the body with `return` as an assignment of the result local and a
   * break out of a labelled block. Its statements go to the sink; returns the result.
   */
  private inline(
    fnValue: object | null,
    parsed: ParsedFunction,
    self: Val | null,
    args: readonly R[],
    callNode: Node,
    closureOf: object,
    outerEnv: Env | null,
    home: SmmoClass | null,
    what: string,
  ): Val {
    if (this.inlining.length >= MAX_INLINE_DEPTH) this.fail(callNode, `calls nest deeper than ${MAX_INLINE_DEPTH} levels (${what})`);
    const identity = fnValue ?? parsed;
    if (this.inlining.includes(identity)) this.fail(callNode, `${what} is recursive`);
    this.checkShape(parsed, what);
    const env = new Env(outerEnv);
    const key = this.keyOf(identity);
    const stmts = this.sink;
    const frame0: Frame = { closureOf, key, self, ret: { kind: 'lane' }, targets: [], home };
    parsed.params.forEach((p, i) => {
      let name: string;
      let dflt: Node | null = null;
      if (p.type === 'Identifier') name = p['name'] as string;
      else if (p.type === 'AssignmentPattern' && (p['left'] as Node).type === 'Identifier') {
        name = (p['left'] as Node)['name'] as string;
        dflt = p['right'] as Node;
      } else {
        // `...rest` takes the remaining arguments as an array; a pattern destructures its argument.
        setSource(p, parsed.source);
        const rest = (): Val => {
          this.portable = false;
          return val({ op: 'dynArray', items: args.slice(i).map((a) => this.toDyn(this.asVal(a, callNode)).e) }, DYN);
        };
        this.into(stmts, () =>
          this.bind(
            p.type === 'RestElement' ? (p['argument'] as Node) : p,
            p.type === 'RestElement' ? rest() : (args[i] ?? UNDEF_VAL),
            'let',
            env,
            frame0,
          ),
        );
        return;
      }
      const arg = args[i];
      if (arg !== undefined && arg.k === 's') {
        env.vars.set(name, { k: 'static', sv: arg.s });
        return;
      }
      if (arg !== undefined && dflt === null && isStable(arg.e) && !assigns(parsed.body, name)) {
        env.vars.set(name, { k: 'alias', v: arg });
        return;
      }
      const id = this.newLocal(name, `${key}:p${i}:${this.labelCount}`);
      stmts.push({ s: 'let', id, name, init: null });
      const v = dflt !== null ? this.asVal(this.withDefault(arg ?? UNDEF_VAL, dflt, p, env, frame0, name), p) : (arg ?? UNDEF_VAL);
      stmts.push({ s: 'expr', e: this.assignLocal(id, v, callNode) });
      env.vars.set(name, { k: 'local', id, konst: false });
    });
    const restParam = parsed.params[parsed.params.length - 1]?.type === 'RestElement';
    for (let i = restParam ? args.length : parsed.params.length; i < args.length; i++) {
      const extra = args[i]!;
      if (extra.k === 'v') stmts.push(...exprStmts(extra.e)); // evaluated for its effects, as JavaScript does
    }
    const label = this.label('fn');
    const result = this.newLocal('r', `${key}:result:${label}`);
    stmts.push({ s: 'let', id: result, name: 'r', init: null });
    const frame: Frame = { closureOf, key, self, ret: { kind: 'inline', label, result }, targets: [], home };
    this.inlining.push(identity);
    const body: Stmt[] = [];
    try {
      this.functionBody(parsed, env, frame, body);
    } finally {
      this.inlining.pop();
    }
    this.sink = stmts;
    stmts.push({ s: 'block', label, body });
    return this.readLocal(result).t.k === 'undef' && this.locals[result]!.ty === null
      ? val({ op: 'local', id: result }, UNDEF)
      : this.readLocal(result);
  }

  // ---------------------------------------------------------------- statements

  private block(nodes: readonly Node[], env: Env, frame: Frame, out: Stmt[]): void {
    const inner = new Env(env);
    // Function declarations are hoisted: bind them first.
    for (const n of nodes) {
      if (n.type === 'FunctionDeclaration') {
        inner.vars.set((n['id'] as Node)['name'] as string, {
          k: 'static',
          sv: { sv: 'fnNode', fn: functionNode(n, srcOf(n)), env: inner, frame },
        });
      }
    }
    // `if (!(x instanceof C)) return;` (the consequent leaves the block): after it x is a C; and
    // where no concrete class of x is a C the test is always true, so the rest never runs and
    // is not lowered (it may use fields that this concrete class lacks).
    let cur = inner;
    for (const n of nodes) {
      this.stmt(n, cur, frame, out, []);
      const guarded =
        n.type === 'IfStatement' && n['alternate'] === null && leaves(n['consequent'] as Node) ? guardOf(n['test'] as Node) : [];
      if (guarded.length === 0) continue;
      const last = out[out.length - 1];
      if (last?.s === 'if' && alwaysTrue(last.c)) return;
      cur = this.narrowAll(guarded, cur);
    }
  }

  private stmt(n: Node, env: Env, frame: Frame, out: Stmt[], labels: string[]): void {
    this.into(out, () => this.stmtInto(n, env, frame, out, labels));
  }

  private stmtInto(n: Node, env: Env, frame: Frame, out: Stmt[], labels: string[]): void {
    switch (n.type) {
      case 'EmptyStatement':
      case 'FunctionDeclaration':
        return;
      case 'BlockStatement': {
        if (labels.length === 0) {
          this.block(n['body'] as Node[], env, frame, out);
          return;
        }
        const label = this.label('b');
        const body: Stmt[] = [];
        frame.targets.push({ jsLabels: labels, kind: 'block', breakLabel: label, continueLabel: null, continueBreaks: false });
        this.block(n['body'] as Node[], env, frame, body);
        frame.targets.pop();
        out.push({ s: 'block', label, body });
        return;
      }
      case 'ExpressionStatement': {
        const e = n['expression'] as Node;
        const left = e.type === 'AssignmentExpression' ? (e['left'] as Node) : null;
        if ((left?.type === 'ArrayPattern' || left?.type === 'ObjectPattern') && e['operator'] === '=') {
          // `[a, b] = [b, a];` as a statement: its value (for a literal, a new array) is not needed.
          this.bindInit(left, e['right'] as Node, 'assign', env, frame);
          return;
        }
        const r = this.expr(e, env, frame);
        if (r.k === 'v') out.push(...exprStmts(r.e));
        return;
      }
      case 'VariableDeclaration':
        this.varDecl(n, env, frame, out);
        return;
      case 'IfStatement': {
        const testNode = n['test'] as Node;
        const c = this.truthy(this.expr(testNode, env, frame), n);
        const then: Stmt[] = [];
        const els: Stmt[] = [];
        // `x instanceof C` (alone or ANDed) where no concrete class of x is a C (a deviceDo over
        // a base class is lowered once per concrete class): the test is false, so the branch
        // never runs and is not lowered — it may use fields that this concrete class lacks.
        if (!neverTrue(c)) this.stmt(n['consequent'] as Node, this.narrow(testNode, env), frame, then, []);
        // `if (!(x instanceof C)) … else …`: the else branch sees x as a C, and is left out where x never is one.
        if (n['alternate'] !== null && !alwaysTrue(c))
          this.stmt(n['alternate'] as Node, this.narrowAll(guardOf(testNode), env), frame, els, []);
        out.push({ s: 'if', c, then, else: els });
        return;
      }
      case 'LabeledStatement': {
        const body = n['body'] as Node;
        const all = [...labels, (n['label'] as Node)['name'] as string];
        if (TAKES_LABELS.has(body.type)) {
          this.stmtInto(body, env, frame, out, all);
          return;
        }
        // `L: if (…) { … break L; … }`: any other labelled statement is a block that `break L` leaves.
        const label = this.label('b');
        const inner: Stmt[] = [];
        frame.targets.push({ jsLabels: all, kind: 'block', breakLabel: label, continueLabel: null, continueBreaks: false });
        this.stmt(body, env, frame, inner, []);
        frame.targets.pop();
        out.push({ s: 'block', label, body: inner });
        return;
      }
      case 'WhileStatement':
      case 'DoWhileStatement':
      case 'ForStatement':
        this.loop(n, env, frame, out, labels);
        return;
      case 'ForOfStatement':
        this.forOf(n, env, frame, out, labels);
        return;
      case 'TryStatement':
        this.tryStmt(n, env, frame, out);
        return;
      case 'BreakStatement':
      case 'ContinueStatement':
        out.push(this.jump(n, frame));
        return;
      case 'ReturnStatement': {
        const arg = n['argument'] as Node | null;
        const ret = frame.ret;
        if (ret.kind === 'inline') {
          const v = arg === null ? UNDEF_VAL : this.value(arg, env, frame);
          out.push({ s: 'expr', e: this.assignLocal(ret.result, v, n) });
          out.push({ s: 'break', label: ret.label });
          return;
        }
        if (arg !== null) {
          const r = this.expr(arg, env, frame);
          if (r.k === 'v') out.push(...exprStmts(r.e)); // the value is dropped, as the executor drops it
        }
        out.push(ret.kind === 'lane' ? { s: 'returnLane' } : { s: 'continue', label: ret.label });
        return;
      }
      case 'ThrowStatement':
        out.push({ s: 'throw', e: this.toDyn(this.value(n['argument'] as Node, env, frame)).e });
        return;
      case 'SwitchStatement': {
        const on = this.toDyn(this.value(n['discriminant'] as Node, env, frame)).e;
        const label = this.label('sw');
        const inner = new Env(env);
        frame.targets.push({ jsLabels: labels, kind: 'switch', breakLabel: label, continueLabel: null, continueBreaks: false });
        const cases = (n['cases'] as Node[]).map((c) => {
          let test: Expr | null = null;
          if (c['test'] !== null) {
            const before = out.length;
            test = this.toDyn(this.value(c['test'] as Node, inner, frame)).e;
            if (out.length !== before) this.fail(c, 'a case label that calls a function');
          }
          const body: Stmt[] = [];
          for (const s of c['consequent'] as Node[]) this.stmt(s, inner, frame, body, []);
          return { test, body };
        });
        frame.targets.pop();
        out.push({ s: 'switch', label, on, cases });
        return;
      }
      default:
        this.fail(n, `${describeNode(n.type)} is not supported in compiled methods`);
    }
  }

  /**
   * `if (x instanceof C)` with x a const local: x has class C (narrowed) in the branch; so
   * in the consequent of `?:` and on the right of `&&`, and through `a && b` tests (each
   * operand narrows what follows it).
   */
  private narrow(test: Node, env: Env): Env {
    if (test.type === 'LogicalExpression' && test['operator'] === '&&') {
      return this.narrow(test['right'] as Node, this.narrow(test['left'] as Node, env));
    }
    const inner = new Env(env);
    if (test.type !== 'BinaryExpression' || test['operator'] !== 'instanceof') return inner;
    const left = test['left'] as Node;
    const right = test['right'] as Node;
    if (left.type !== 'Identifier' || right.type !== 'Identifier') return inner;
    const v = env.find(left['name'] as string);
    const c = env.find(right['name'] as string);
    if (v === undefined || v.k !== 'local' || !v.konst) return inner;
    let cls: TypeLayout | undefined;
    if (c !== undefined && c.k === 'static' && c.sv.sv === 'class') cls = c.sv.t;
    else if (c === undefined) {
      const found = this.resolver.lookup(this.inlining[this.inlining.length - 1] ?? {}, right['name'] as string);
      if (found.found && typeof found.binding.value === 'function') cls = this.table.byClass(found.binding.value as SmmoClass);
    }
    const cur = this.locals[v.id]!.ty;
    if (cls === undefined || cur === null || cur.k !== 'obj') return inner;
    if (!cls.concrete.every((id) => cur.cls.concrete.includes(id))) return inner;
    inner.vars.set(left['name'] as string, { ...v, narrowed: objTy(cls) });
    return inner;
  }

  /** narrow() by each `x instanceof C` test in turn (the ones guardOf finds). */
  private narrowAll(tests: readonly Node[], env: Env): Env {
    let e = new Env(env);
    for (const t of tests) e = this.narrow(t, e);
    return e;
  }

  private jump(n: Node, frame: Frame): Stmt {
    const jsLabel = n['label'] === null ? null : ((n['label'] as Node)['name'] as string);
    const isBreak = n.type === 'BreakStatement';
    for (let i = frame.targets.length - 1; i >= 0; i--) {
      const tg = frame.targets[i]!;
      if (jsLabel !== null ? !tg.jsLabels.includes(jsLabel) : isBreak ? tg.kind === 'block' : tg.kind !== 'loop') continue;
      if (isBreak) return { s: 'break', label: tg.breakLabel };
      if (tg.kind !== 'loop') this.fail(n, 'continue to a label that is not a loop');
      return tg.continueBreaks ? { s: 'break', label: tg.continueLabel! } : { s: 'continue', label: tg.continueLabel! };
    }
    this.fail(n, `${isBreak ? 'break' : 'continue'} outside a loop`);
  }

  private varDecl(n: Node, env: Env, frame: Frame, out: Stmt[]): void {
    const kind = n['kind'] as string;
    for (const d of n['declarations'] as Node[]) {
      const id = d['id'] as Node;
      const init = d['init'] as Node | null;
      if (id.type !== 'Identifier') {
        if (kind === 'var') this.fail(d, 'a var declaration with a pattern (declare it with const or let)');
        // A pattern always has an initialiser (the parser requires one).
        this.into(out, () => this.bindInit(id, init!, kind as 'let' | 'const', env, frame));
        continue;
      }
      const name = id['name'] as string;
      const declKey = `${frame.key}:${d.start}`;
      if (init === null) {
        const lid = this.newLocal(name, declKey);
        env.vars.set(name, { k: 'local', id: lid, konst: false });
        out.push({ s: 'let', id: lid, name, init: null });
        continue;
      }
      this.declare(name, this.expr(init, env, frame), kind, d, env, out, declKey);
    }
  }

  /**
   * Declare `name` (let, const or var) holding `r`: a constant name for a compile-time value
   * or a value that cannot change, else a local.
   */
  private declare(name: string, r: R, kind: string, d: Node, env: Env, out: Stmt[], declKey: string): void {
    // `let n = LIMIT` (a module constant of a primitive value) starts an ordinary variable.
    if (r.k === 's' && kind !== 'const' && r.s.sv === 'value' && isPrimitive(r.s.value)) r = this.asVal(r, d);
    if (r.k === 's') {
      if (kind !== 'const') this.fail(d, `'${name}' is declared with ${kind} and holds ${svName(r.s)}; declare it const`);
      env.vars.set(name, { k: 'static', sv: r.s });
      return;
    }
    if (kind === 'const' && isStable(r.e)) {
      env.vars.set(name, { k: 'alias', v: r });
      return;
    }
    const lid = this.newLocal(name, declKey);
    out.push({ s: 'let', id: lid, name, init: null });
    out.push({ s: 'expr', e: this.assignLocal(lid, r, d) });
    env.vars.set(name, { k: 'local', id: lid, konst: kind === 'const' });
  }

  // ---------------------------------------------------------------- functions as values

  /**
   * A function written in the method used as a value — handed to JavaScript
   * (`xs.map((x) => x * k)`, `xs.sort((a, b) => a - b)`), stored or returned: a
   * JavaScript function made where it is used, its body compiled like the method's. It
   * takes the values of the method's variables it reads where it is made, which is what
   * JavaScript's closure sees as long as those variables never change: it may read const
   * variables holding numbers, strings and JavaScript values, and parameters that are not
   * assigned — not `this`, smmo objects or inline arrays (interpreted, some of those are
   * views that move on to the next object) and not `let` variables; it may not assign them,
   * create or delete objects, run deviceDo or make another such function (each is a
   * fallback reason). Its own variables are fresh per call. Each use of the same written
   * function makes a new function object.
   */
  private closure(s: SV & { sv: 'fnNode' }, node: Node): Val {
    const fn = s.fn;
    if (this.closureDepth > 0) this.fail(node, 'a function handed to JavaScript makes another one');
    this.checkShape(fn, 'a function handed to JavaScript');
    setSource(fn.body, fn.source);
    // `this` is left out: interpreted, a lane's `this` is a view that the next lane reuses, so a
    // function kept past its lane would see another object there; a const copy is exact.
    if (readsThis(fn.body)) {
      this.fail(
        node,
        "a function handed to JavaScript reads 'this' (or super); copy what it needs into const variables first (const k = this.k)",
      );
    }
    this.portable = false;
    const captures: [number, Expr][] = [];
    const capturedIds = new Set<number>();
    const take = (name: string, v: Val): number => {
      const id = this.temp(v.t, name);
      captures.push([id, v.e]);
      capturedIds.add(id);
      return id;
    };
    const capture = (name: string, v: Var): Var => {
      // A function of the method called inside this one sees the method's variables through
      // the same captures, and may not read `this` either.
      if (v.k === 'static' && v.sv.sv === 'fnNode') {
        const f = v.sv;
        if (f.fn.arrow && readsThis(f.fn.body)) {
          this.fail(
            node,
            `a function handed to JavaScript calls '${name}', which reads 'this'; copy what it needs into const variables first`,
          );
        }
        return { k: 'static', sv: { ...f, env: new CaptureEnv(f.env, capture), frame: { ...f.frame, self: null } } };
      }
      if (v.k === 'static') return v;
      // smmo objects and inline arrays: interpreted, `this`, a deviceDo callback's object and
      // their inline arrays are views that move on to the next object, and a variable may
      // hold one of them, so a function kept past that point would see another object there.
      const objectTy = (t: Ty | null): boolean => t !== null && (t.k === 'obj' || t.k === 'arr');
      if ((v.k === 'alias' && objectTy(v.v.t)) || (v.k === 'local' && objectTy(v.narrowed ?? this.locals[v.id]!.ty))) {
        this.fail(
          node,
          `a function handed to JavaScript reads '${name}', an smmo object or inline array of the method; copy the values it needs (or its handle) into const variables`,
        );
      }
      // (`const h = this.handle` is the lane's handle, `self`: its value is taken too.)
      if (v.k === 'alias') return isStable(v.v.e) && v.v.e.op !== 'self' ? v : { k: 'local', id: take(name, v.v), konst: true };
      if (!v.konst) {
        this.fail(
          node,
          `a function handed to JavaScript uses '${name}', a variable the method may change; it can read const variables (copy it into one first)`,
        );
      }
      const r = this.readLocal(v.id);
      const t = v.narrowed ?? r.t;
      return { k: 'local', id: take(name, val(r.e, t)), konst: true, narrowed: v.narrowed };
    };
    const env = new CaptureEnv(s.env, capture);
    const first = this.locals.length;
    const label = this.label('fn');
    const result = this.newLocal('r', `closure:${label}`);
    const frame: Frame = {
      closureOf: s.frame.closureOf,
      key: this.keyOf(fn),
      self: null,
      ret: { kind: 'inline', label, result },
      targets: [],
      home: s.frame.home,
    };
    const scope = new Env(env);
    const body: Stmt[] = [];
    const before = { allocates: this.allocates, frees: this.frees, iterates: this.iterates.size };
    const params: number[] = [];
    this.closureDepth++;
    this.inlining.push(fn);
    try {
      this.into(body, () => {
        body.push({ s: 'let', id: result, name: 'r', init: null });
        fn.params.forEach((p, i) => {
          setSource(p, fn.source);
          const target = p.type === 'RestElement' ? (p['argument'] as Node) : p;
          const id = this.temp(DYN, target.type === 'Identifier' ? (target['name'] as string) : `p${i}`);
          params.push(id);
          if (target.type === 'Identifier') scope.vars.set(target['name'] as string, { k: 'local', id, konst: false });
          else this.bind(target, val({ op: 'local', id }, DYN), 'let', scope, frame);
        });
      });
      this.functionBody(fn, scope, frame, body);
    } finally {
      this.inlining.pop();
      this.closureDepth--;
    }
    if (this.allocates !== before.allocates || this.frees !== before.frees || this.iterates.size !== before.iterates) {
      this.fail(node, 'a function handed to JavaScript creates or deletes objects or runs deviceDo');
    }
    const locals: number[] = [];
    for (let id = first; id < this.locals.length; id++) if (!capturedIds.has(id) && !params.includes(id)) locals.push(id);
    const rest = fn.params[fn.params.length - 1]?.type === 'RestElement';
    return val({ op: 'closure', arrow: fn.arrow, captures, params, rest, locals, body, label, result }, DYN);
  }

  // ---------------------------------------------------------------- destructuring

  /**
   * `target = init` for a pattern target: an array pattern over a `[…]` literal takes its
   * items one by one (no array is made, the method stays portable); anything else binds
   * the value of `init`.
   */
  private bindInit(target: Node, init: Node, mode: BindMode, env: Env, frame: Frame, valueUsed = false): Val {
    const items = init['elements'] as (Node | null)[] | undefined;
    if (target.type === 'ArrayPattern' && init.type === 'ArrayExpression' && !items!.some((x) => x?.type === 'SpreadElement')) {
      const saved = this.bindItems(target, items!, mode, env, frame);
      if (!valueUsed) return UNDEF_VAL;
      this.portable = false;
      return val({ op: 'dynArray', items: saved.map((v) => this.toDyn(v).e) }, DYN);
    }
    const r = this.expr(init, env, frame);
    // The value is kept as it was before the pattern assigns anything (it may assign the variable it came from).
    const s = r.k === 's' || isStable(r.e) ? r : this.simpleAlways(r);
    this.bind(target, s, mode, env, frame);
    return valueUsed ? this.asVal(s, init) : UNDEF_VAL;
  }

  /**
   * Bind pattern (or plain target) `target` to `src`, as JavaScript's destructuring does,
   * property by property and element by element, in source order. 'let'/'const' declare
   * the names in `env`; 'assign' assigns existing variables, fields and properties.
   */
  private bind(target: Node, src: R, mode: BindMode, env: Env, frame: Frame): void {
    switch (target.type) {
      case 'Identifier':
        if (mode === 'assign') this.assignFrom(target, src, env, frame);
        else this.declare(target['name'] as string, src, mode, target, env, this.sink, `${frame.key}:${target.start}`);
        return;
      case 'MemberExpression':
        this.assignFrom(target, src, env, frame);
        return;
      case 'AssignmentPattern': {
        const left = target['left'] as Node;
        const what = left.type === 'Identifier' ? (left['name'] as string) : 'a default value';
        this.bind(left, this.withDefault(src, target['right'] as Node, target, env, frame, what), mode, env, frame);
        return;
      }
      case 'ObjectPattern':
        this.bindObject(target, src, mode, env, frame);
        return;
      case 'ArrayPattern':
        this.bindIterated(target, src, mode, env, frame);
        return;
      default:
        this.fail(target, `${describeNode(target.type)} as a destructuring target is not supported`);
    }
  }

  /** `target = src` through the ordinary assignment (a variable, a field, a JavaScript property). */
  private assignFrom(target: Node, src: R, env: Env, frame: Frame): void {
    const inner = new Env(env);
    const right = this.synthName(src.k === 's' || isStable(src.e) || src.e.op === 'local' ? src : this.simpleAlways(src), inner, target);
    const r = this.assign(synthNode(target, { type: 'AssignmentExpression', operator: '=', left: target, right }), inner, frame);
    if (r.k === 'v') this.sink.push(...exprStmts(r.e));
  }

  /** `src`, or the value of `dflt` where src is undefined (evaluated only then, as JavaScript). */
  private withDefault(src: R, dflt: Node, at: Node, env: Env, frame: Frame, what: string): R {
    if (src.k === 's') return src.s.sv === 'value' && src.s.value === undefined ? this.expr(dflt, env, frame) : src;
    if (src.t.k === 'undef') return this.expr(dflt, env, frame);
    if (src.t.k !== 'dyn') return src; // numbers, booleans, strings, null, objects: never undefined
    const s = this.simple(src);
    const d = this.branch(() => this.value(dflt, env, frame));
    return this.conditional(
      { op: 'binary', o: '===', a: s.e, b: cnst(undefined) },
      d,
      { stmts: [], v: s },
      this.join(s.t, d.v.t, at, what),
      at,
    );
  }

  /** `{ a, b: c, d = 1 } = src`: each property read as `src.key` would read it (a field, a getter, a JavaScript property). */
  private bindObject(target: Node, src: R, mode: BindMode, env: Env, frame: Frame): void {
    const props = target['properties'] as Node[];
    if (props.length === 0) this.fail(target, 'an empty object pattern');
    const inner = new Env(env);
    const from = this.synthName(src.k === 's' ? src : this.simple(src), inner, target);
    for (const p of props) {
      if (p.type === 'RestElement') this.fail(p, 'a rest element (...rest) in an object pattern is not supported');
      const key = p['key'] as Node;
      const computed = p['computed'] === true;
      // `{ [k]: v }`: the key is evaluated, then the property read, as `src[k]` does.
      const property = computed
        ? key
        : synthNode(key, { type: 'Identifier', name: key.type === 'Identifier' ? key['name'] : String(key['value']) });
      const read = synthNode(p, { type: 'MemberExpression', object: from, property, computed, optional: false });
      this.bind(p['value'] as Node, this.member(read, inner, frame, false), mode, env, frame);
    }
  }

  /** `[a, , b = 1, ...c] = [x, y, z]`: the items evaluated in order, then bound one by one. */
  private bindItems(target: Node, items: readonly (Node | null)[], mode: BindMode, env: Env, frame: Frame): Val[] {
    const vals = this.ordered(items.map((x) => (): Val => (x === null ? UNDEF_VAL : this.value(x, env, frame))));
    // Kept as evaluated: binding may assign the variables they were read from ([a, b] = [b, a]).
    const saved = vals.map((v) => (isStable(v.e) ? v : this.simpleAlways(v)));
    (target['elements'] as (Node | null)[]).forEach((el, i) => {
      if (el === null) return;
      if (el.type === 'RestElement') {
        this.portable = false;
        const rest = val({ op: 'dynArray', items: saved.slice(i).map((v) => this.toDyn(v).e) }, DYN);
        this.bind(el['argument'] as Node, rest, mode, env, frame);
        return;
      }
      this.bind(el, saved[i] ?? UNDEF_VAL, mode, env, frame);
    });
    return saved;
  }

  /**
   * `[a, , b = 1, ...c] = src` for any iterable src (JavaScript only): JavaScript's own
   * for…of over src takes element after element; each element is bound when it arrives
   * (its default evaluated then), the loop stops after the last one, which closes the
   * iterator, as does a default that throws; elements past the end are undefined.
   */
  private bindIterated(target: Node, src: R, mode: BindMode, env: Env, frame: Frame): void {
    const elements = target['elements'] as (Node | null)[];
    const last = elements[elements.length - 1];
    const restNode = last?.type === 'RestElement' ? last : null;
    const n = restNode !== null ? elements.length - 1 : elements.length;
    if (elements.length === 0) this.fail(target, 'an empty array pattern');
    const v = src.k === 's' ? this.asVal(src, target) : src;
    if (v.t.k !== 'dyn' && v.t.k !== 'str') {
      const what =
        v.t.k === 'arr' ? 'an inline array, which is not iterable (read it with .get(i))' : `a ${tyName(v.t)} value, which is not iterable`;
      this.fail(target, `an array pattern takes an iterable (an array, a string, a generator …); this is ${what}`);
    }
    const iterable = this.simple(v);
    // The names are declared first: the loop's body assigns them.
    const declared = mode !== 'assign' ? this.declareNames(target, env, this.sink, frame) : [];
    this.portable = false;
    const count = this.temp(NUM, 'i');
    const cur = (): Expr => ({ op: 'local', id: count });
    this.sink.push({ s: 'expr', e: { op: 'setLocal', id: count, value: cnst(0) } });
    const rest = restNode !== null ? this.temp(DYN, 'rest') : -1;
    if (rest >= 0) this.sink.push({ s: 'expr', e: { op: 'setLocal', id: rest, value: { op: 'dynArray', items: [] } } });
    const x = this.temp(DYN, 'x');
    const label = this.label('of');
    const body: Stmt[] = [];
    this.into(body, () => {
      if (rest >= 0) {
        const push: Expr = {
          op: 'dynMethodCall',
          obj: { op: 'local', id: rest },
          name: 'push',
          args: [{ op: 'local', id: x }],
          optional: false,
        };
        body.push({
          s: 'if',
          c: { op: 'binary', o: '>=', a: cur(), b: cnst(n) },
          then: [
            { s: 'expr', e: push },
            { s: 'continue', label },
          ],
          else: [],
        });
      }
      elements.slice(0, n).forEach((el, i) => {
        if (el === null) return;
        const then: Stmt[] = [];
        this.into(then, () => this.bind(el, val({ op: 'local', id: x }, DYN), 'assign', env, frame));
        body.push({ s: 'if', c: { op: 'binary', o: '===', a: cur(), b: cnst(i) }, then, else: [] });
      });
      body.push({ s: 'expr', e: { op: 'updateLocal', id: count, delta: 1, prefix: true } });
      if (rest < 0) body.push({ s: 'if', c: { op: 'binary', o: '===', a: cur(), b: cnst(n) }, then: [{ s: 'break', label }], else: [] });
    });
    this.sink.push({ s: 'forOf', label, id: x, iterable: iterable.e, body });
    // Elements the iterator did not reach are undefined (a declared name already is).
    elements.slice(0, n).forEach((el, i) => {
      if (el === null || (mode !== 'assign' && el.type === 'Identifier')) return;
      const then: Stmt[] = [];
      this.into(then, () => this.bind(el, UNDEF_VAL, 'assign', env, frame));
      this.sink.push({ s: 'if', c: { op: 'binary', o: '<=', a: cur(), b: cnst(i) }, then, else: [] });
    });
    if (restNode !== null) this.bind(restNode['argument'] as Node, val({ op: 'local', id: rest }, DYN), 'assign', env, frame);
    if (mode === 'const') {
      for (const name of declared) env.vars.set(name, { ...(env.vars.get(name) as Var & { k: 'local' }), konst: true });
    }
  }

  /** Declare every name `pattern` binds as a variable (undefined, assignable) in `env`; returns the names. */
  private declareNames(pattern: Node, env: Env, out: Stmt[], frame: Frame): string[] {
    return patternNames(pattern).map((id) => {
      const name = id['name'] as string;
      const lid = this.newLocal(name, `${frame.key}:${id.start}`);
      out.push({ s: 'let', id: lid, name, init: null });
      env.vars.set(name, { k: 'local', id: lid, konst: false });
      return name;
    });
  }

  /** A name no source can spell (NUL is not an identifier character) standing for `r` in `env`. */
  private synthName(r: R, env: Env, at: Node): Node {
    const name = `\u0000${++this.synthCount}`;
    env.vars.set(name, r.k === 's' ? { k: 'static', sv: r.s } : { k: 'alias', v: r });
    return synthNode(at, { type: 'Identifier', name });
  }

  private loop(n: Node, env: Env, frame: Frame, out: Stmt[], labels: string[]): void {
    const scope = new Env(env);
    if (n.type === 'ForStatement' && n['init'] !== null) {
      const init = n['init'] as Node;
      if (init.type === 'VariableDeclaration') this.varDecl(init, scope, frame, out);
      else {
        const r = this.expr(init, scope, frame);
        if (r.k === 'v') out.push(...exprStmts(r.e));
      }
    }
    const counter = this.boundedCounter(n, scope, frame);
    const loopLabel = this.label('loop');
    const bodyLabel = this.label('body');
    const test = n['test'] as Node | null;
    const update = n.type === 'ForStatement' ? (n['update'] as Node | null) : null;
    const needBodyBlock = n.type === 'DoWhileStatement' || update !== null;
    const loopBody: Stmt[] = [];
    const exitUnless = (t: Node): void => {
      const c = this.into(loopBody, () => this.truthy(this.expr(t, scope, frame), t));
      loopBody.push({ s: 'if', c: { op: 'unary', o: '!', a: c }, then: [{ s: 'break', label: loopLabel }], else: [] });
    };
    if (n.type !== 'DoWhileStatement' && test !== null) exitUnless(test);
    frame.targets.push({
      jsLabels: labels,
      kind: 'loop',
      breakLabel: loopLabel,
      continueLabel: needBodyBlock ? bodyLabel : loopLabel,
      continueBreaks: needBodyBlock,
    });
    const body: Stmt[] = [];
    if (counter !== null) this.ranges.set(counter.id, counter);
    try {
      this.stmt(n['body'] as Node, new Env(scope), frame, body, []);
    } finally {
      if (counter !== null) this.ranges.delete(counter.id);
    }
    frame.targets.pop();
    if (needBodyBlock) loopBody.push({ s: 'block', label: bodyLabel, body });
    else loopBody.push(...body);
    if (update !== null) {
      const r = this.into(loopBody, () => this.expr(update, scope, frame));
      if (r.k === 'v') loopBody.push(...exprStmts(r.e));
    }
    if (n.type === 'DoWhileStatement') exitUnless(test!);
    out.push({ s: 'loop', label: loopLabel, body: loopBody });
  }

  /**
   * `for (const x of iterable)`: JavaScript's own loop over a JavaScript value (an array, a
   * typed array, a generator …), x a variable of any value; the rest of the body compiled.
   * An smmo object or inline array given as the iterable is a view, as interpreted (and is
   * not iterable there either).
   */
  private forOf(n: Node, env: Env, frame: Frame, out: Stmt[], labels: string[]): void {
    if (n['await'] === true) this.fail(n, 'for await…of is not supported in compiled methods');
    const left = n['left'] as Node;
    const declared = left.type === 'VariableDeclaration';
    const decls = declared ? (left['declarations'] as Node[]) : [];
    if (declared && decls.length !== 1) this.fail(left, 'for…of declares one variable or pattern');
    // The target: a declared variable or pattern, or (as JavaScript allows) an existing
    // variable, field or property, or a pattern of them, assigned each round.
    const id = declared ? (decls[0]!['id'] as Node) : left;
    const kind = declared ? (left['kind'] as 'let' | 'const' | 'var') : 'assign';
    // `var` names belong to the code around the loop (undefined until the first round).
    if (kind === 'var') this.declareNames(id, env, out, frame);
    const iterable = this.into(out, () => this.toDyn(this.value(n['right'] as Node, env, frame)).e);
    this.portable = false;
    const local = this.temp(DYN, id.type === 'Identifier' ? (id['name'] as string) : 'x');
    const scope = new Env(env);
    const body: Stmt[] = [];
    const element = val({ op: 'local', id: local }, DYN);
    if (id.type === 'Identifier' && (kind === 'let' || kind === 'const')) {
      scope.vars.set(id['name'] as string, { k: 'local', id: local, konst: kind === 'const' });
    } else {
      // `for (const [k, v] of m)`, `for (x of xs)`: the element bound at the top of the body.
      this.into(body, () => this.bind(id, element, kind === 'var' ? 'assign' : kind, scope, frame));
    }
    const label = this.label('of');
    frame.targets.push({ jsLabels: labels, kind: 'loop', breakLabel: label, continueLabel: label, continueBreaks: false });
    try {
      this.stmt(n['body'] as Node, scope, frame, body, []);
    } finally {
      frame.targets.pop();
    }
    out.push({ s: 'forOf', label, id: local, iterable, body });
  }

  /**
   * try/catch/finally (JavaScript only): JavaScript's own statement around the compiled
   * body. What compiled code throws is what the interpreted method throws (the same error
   * classes and messages), so a handler sees the same values; break, continue and return
   * (inlined returns are breaks) run the finalizer as JavaScript does.
   */
  private tryStmt(n: Node, env: Env, frame: Frame, out: Stmt[]): void {
    this.portable = false;
    const body: Stmt[] = [];
    this.stmt(n['block'] as Node, env, frame, body, []);
    const h = n['handler'] as Node | null;
    let param: number | null = null;
    let handler: Stmt[] | null = null;
    if (h !== null) {
      handler = [];
      const scope = new Env(env);
      const p = h['param'] as Node | null;
      if (p !== null) {
        param = this.temp(DYN, p.type === 'Identifier' ? (p['name'] as string) : 'thrown');
        const thrown = val({ op: 'local', id: param }, DYN);
        if (p.type === 'Identifier') scope.vars.set(p['name'] as string, { k: 'local', id: param, konst: false });
        else this.into(handler, () => this.bind(p, thrown, 'let', scope, frame));
      }
      this.stmt(h['body'] as Node, scope, frame, handler, []);
    }
    const f = n['finalizer'] as Node | null;
    let finalizer: Stmt[] | null = null;
    if (f !== null) {
      finalizer = [];
      this.stmt(f, env, frame, finalizer, []);
    }
    out.push({ s: 'try', body, param, handler, finalizer });
  }

  /**
   * `for (let i = a; i < b; i++)` (or `<=`, `++i`, `i += 1`) with integer constants a ≥ 0
   * and b (a literal, a constant, an inline array's length), i not assigned in the test or
   * the body: inside the body a ≤ i ≤ b - 1 (b with `<=`). Used to drop inline-array index
   * checks that cannot fail.
   */
  private boundedCounter(n: Node, scope: Env, frame: Frame): { id: number; min: number; max: number } | null {
    if (n.type !== 'ForStatement') return null;
    const init = n['init'] as Node | null;
    const test = n['test'] as Node | null;
    const update = n['update'] as Node | null;
    if (init === null || test === null || update === null || init.type !== 'VariableDeclaration' || init['kind'] !== 'let') return null;
    const decls = init['declarations'] as Node[];
    const d = decls[0];
    if (decls.length !== 1 || d === undefined || (d['id'] as Node).type !== 'Identifier') return null;
    const name = (d['id'] as Node)['name'] as string;
    const start = d['init'] as Node | null;
    if (start === null || start.type !== 'Literal' || !Number.isInteger(start['value']) || (start['value'] as number) < 0) return null;
    if (test.type !== 'BinaryExpression' || (test['operator'] !== '<' && test['operator'] !== '<=')) return null;
    const left = test['left'] as Node;
    if (left.type !== 'Identifier' || left['name'] !== name) return null;
    const isStep =
      (update.type === 'UpdateExpression' &&
        update['operator'] === '++' &&
        (update['argument'] as Node).type === 'Identifier' &&
        (update['argument'] as Node)['name'] === name) ||
      (update.type === 'AssignmentExpression' &&
        update['operator'] === '+=' &&
        (update['left'] as Node).type === 'Identifier' &&
        (update['left'] as Node)['name'] === name &&
        (update['right'] as Node).type === 'Literal' &&
        (update['right'] as Node)['value'] === 1);
    if (!isStep || assigns(n['body'] as Node, name) || assigns(test['right'] as Node, name)) return null;
    // The bound must be a constant: lower it aside and look.
    let bound: number | null = null;
    this.into([], () => {
      const b = this.expr(test['right'] as Node, scope, frame);
      let e = b.k === 'v' ? b.e : null;
      if (e !== null && e.op === 'seq') e = e.items[e.items.length - 1]!;
      if (e !== null && e.op === 'const' && typeof e.value === 'number' && Number.isInteger(e.value)) bound = e.value;
    });
    if (bound === null) return null;
    const v = scope.find(name);
    if (v === undefined || v.k !== 'local') return null;
    return { id: v.id, min: start['value'] as number, max: test['operator'] === '<' ? bound - 1 : bound };
  }

  // ---------------------------------------------------------------- expressions

  private value(n: Node, env: Env, frame: Frame): Val {
    return this.asVal(this.expr(n, env, frame), n);
  }

  private asVal(r: R, node: Node): Val {
    if (r.k === 'v') return r;
    const s = r.s;
    if (s.sv === 'value') {
      const v = s.value;
      if (v === null) return val(cnst(null), NULL);
      if (v === undefined) return UNDEF_VAL;
      if (typeof v === 'number') return val(cnst(v), NUM);
      if (typeof v === 'boolean') return val(cnst(v), BOOL);
      if (typeof v === 'string') return val(cnst(v), STR);
      return val(this.staticRef(v, s.label), DYN);
    }
    if (s.sv === 'class') return val(this.staticRef(s.t.cls, s.t.name), DYN);
    if (s.sv === 'fnNode') return this.closure(s, node);
    this.fail(node, `${svName(s)} is used as a value`);
  }

  /** A boolean-valued expression with JavaScript's truthiness of `r`. */
  private truthy(r: R, node: Node): Expr {
    const v = this.asVal(r, node);
    if (v.t.k === 'obj') return { op: 'binary', o: '!==', a: v.e, b: cnst(0) };
    if (v.t.k === 'arr' || v.t.k === 'ctx') return { op: 'seq', items: [v.e, cnst(true)] };
    return v.e;
  }

  private expr(n: Node, env: Env, frame: Frame): R {
    switch (n.type) {
      case 'Literal': {
        const v = n['value'];
        const re = n['regex'] as { pattern: string; flags: string } | undefined;
        if (re !== undefined) {
          // A regular expression literal makes a new RegExp each time it is evaluated.
          this.portable = false;
          return val({ op: 'dynNew', callee: this.staticRef(RegExp, 'RegExp'), args: [cnst(re.pattern), cnst(re.flags)] }, DYN);
        }
        if (typeof v === 'bigint') return val(this.staticRef(v, 'bigint'), DYN);
        return this.asVal(stat({ sv: 'value', value: v, label: 'literal' }), n);
      }
      case 'Identifier':
        return this.ident(n, env, frame);
      case 'ThisExpression':
        return frame.self ?? UNDEF_VAL;
      case 'MemberExpression':
        return this.member(n, env, frame, false);
      case 'ChainExpression':
        return this.chain(n['expression'] as Node, env, frame);
      case 'CallExpression':
        return this.call(n, env, frame);
      case 'NewExpression': {
        const argNodes = n['arguments'] as Node[];
        const [callee, ...args] = this.ordered([
          () => this.value(n['callee'] as Node, env, frame),
          ...argNodes.map((a) => () => this.dynItem(a, env, frame)),
        ]);
        this.portable = false;
        return val({ op: 'dynNew', callee: this.toDyn(callee!).e, args: args.map((a) => a.e) }, DYN);
      }
      case 'BinaryExpression':
        return this.binary(n, env, frame);
      case 'LogicalExpression':
        return this.logical(n, env, frame);
      case 'UnaryExpression':
        return this.unary(n, env, frame);
      case 'UpdateExpression':
        return this.update(n, env, frame);
      case 'AssignmentExpression':
        return this.assign(n, env, frame);
      case 'ConditionalExpression': {
        const testNode = n['test'] as Node;
        const c = this.truthy(this.expr(testNode, env, frame), n);
        if (neverTrue(c)) {
          // As for `if`: a consequent that never runs is not lowered; the test is still evaluated.
          this.sink.push(...exprStmts(c));
          return this.expr(n['alternate'] as Node, env, frame);
        }
        if (alwaysTrue(c)) {
          this.sink.push(...exprStmts(c));
          return this.expr(n['consequent'] as Node, env, frame);
        }
        const a = this.branch(() => this.value(n['consequent'] as Node, this.narrow(testNode, env), frame));
        const b = this.branch(() => this.value(n['alternate'] as Node, this.narrowAll(guardOf(testNode), env), frame));
        return this.conditional(c, a, b, this.join(a.v.t, b.v.t, n, 'a conditional expression'), n);
      }
      case 'SequenceExpression': {
        const items = (n['expressions'] as Node[]).map((x) => this.value(x, env, frame));
        const last = items[items.length - 1]!;
        return val({ op: 'seq', items: items.map((i) => i.e) }, last.t);
      }
      case 'TemplateLiteral': {
        const quasis = (n['quasis'] as Node[]).map((q) => (q['value'] as { cooked: string }).cooked);
        const exprs = this.ordered((n['expressions'] as Node[]).map((x) => () => this.toDyn(this.value(x, env, frame))));
        this.portable = false;
        return val({ op: 'dynTemplate', quasis, exprs: exprs.map((e) => e.e) }, STR);
      }
      case 'ArrayExpression': {
        const items = (n['elements'] as (Node | null)[]).map((x) => (): Val => this.dynItem(x, env, frame));
        this.portable = false;
        return val({ op: 'dynArray', items: this.ordered(items).map((i) => i.e) }, DYN);
      }
      case 'ObjectExpression': {
        const keys: string[] = [];
        const thunks = (n['properties'] as Node[]).map((p) => {
          if (p.type === 'SpreadElement') {
            keys.push('');
            return (): Val => this.dynItem(p, env, frame);
          }
          if (p.type !== 'Property' || p['computed'] === true || p['kind'] !== 'init' || p['method'] === true) {
            this.fail(n, 'object literals with computed keys, methods or accessors are not supported');
          }
          const key = p['key'] as Node;
          keys.push(key.type === 'Identifier' ? (key['name'] as string) : String(key['value']));
          return (): Val => this.toDyn(this.value(p['value'] as Node, env, frame));
        });
        const values = this.ordered(thunks);
        this.portable = false;
        return val({ op: 'dynObject', entries: values.map((v, i) => [keys[i]!, v.e] as const) }, DYN);
      }
      case 'ArrowFunctionExpression':
      case 'FunctionExpression':
        return stat({ sv: 'fnNode', fn: functionNode(n, srcOf(n)), env, frame });
      case 'ParenthesizedExpression':
        return this.expr(n['expression'] as Node, env, frame);
      default:
        this.fail(n, `${describeNode(n.type)} is not supported in compiled methods`);
    }
  }

  /** An item of an array literal or a JavaScript call's argument: a value, `...xs` (Spread) or an elision (Hole). */
  private dynItem(x: Node | null, env: Env, frame: Frame): Val {
    if (x === null) return val({ op: 'hole' }, DYN);
    if (x.type === 'SpreadElement') return val({ op: 'spread', arg: this.toDyn(this.value(x['argument'] as Node, env, frame)).e }, DYN);
    return this.toDyn(this.value(x, env, frame));
  }

  private ident(n: Node, env: Env, frame: Frame): R {
    const name = n['name'] as string;
    const v = env.find(name);
    if (v !== undefined) {
      if (v.k === 'static') return stat(v.sv);
      if (v.k === 'alias') return v.v;
      const r = this.readLocal(v.id);
      return v.narrowed !== undefined ? val(r.e, v.narrowed) : r;
    }
    if (name === 'arguments' && !this.resolver.lookup(frame.closureOf, name).found) {
      this.fail(n, '`arguments` is not supported in compiled methods; name the parameters, or take the rest with a rest parameter (...xs)');
    }
    if (name === 'undefined') return UNDEF_VAL;
    if (name === 'NaN') return val(cnst(NaN), NUM);
    if (name === 'Infinity') return val(cnst(Infinity), NUM);
    const found = this.resolver.lookup(frame.closureOf, name);
    if (!found.found) this.fail(n, `the name '${name}' cannot be resolved: ${found.why}`);
    const b = found.binding;
    const value = b.value;
    if (typeof value === 'function') {
      const t = this.table.byClass(value as SmmoClass);
      if (t !== undefined) return stat({ sv: 'class', t });
      return stat({ sv: 'value', value, label: name });
    }
    if (!b.constant && b.kind === 'global') {
      // A global that may change (console, process, …) is read where the method reads it,
      // as JavaScript: the method still compiles, this part of it stays JavaScript.
      this.portable = false;
      return val({ op: 'global', name }, DYN);
    }
    if (!b.constant) {
      const how = b.kind === 'let' || b.kind === 'var' ? ` (declared with ${b.kind})` : '';
      this.fail(
        n,
        `reads the module-level variable '${name}'${how}, which may change after compilation; declare it const or pass it as an argument`,
      );
    }
    return stat({ sv: 'value', value, label: name });
  }

  // ---------------------------------------------------------------- members

  /**
   * Field `name` of objects of static class `cls`: every concrete class of `cls` must have
   * it, with the same kind and length (offsets may differ per concrete class).
   */
  private fieldRef(cls: TypeLayout, name: string): FieldRef | null {
    const layouts = new Map<number, FieldLayout>();
    let first: FieldLayout | null = null;
    for (const id of cls.concrete) {
      const f = this.table.types[id]!.fields.find((x) => x.name === name);
      if (f === undefined) return null;
      if (first !== null && (f.kind !== first.kind || f.length !== first.length)) return null;
      first ??= f;
      layouts.set(id, f);
    }
    if (first === null) return null;
    const target = first.target !== undefined ? (this.table.byClass(first.target()) ?? null) : null;
    return { cls, name, layouts, kind: first.kind, length: first.length, target };
  }

  private fieldTy(f: FieldRef): Ty {
    if (f.kind === 'bool') return BOOL;
    if (f.kind === 'ref') return objTy(this.refTarget(f));
    return NUM;
  }

  private refTarget(f: FieldRef): TypeLayout {
    return f.target!;
  }

  /** A non-null object for a field access: `this` as is, others checked (TypeError on null, as JavaScript). */
  private deref(o: Val, what: string): Expr {
    if (o.e.op === 'self') return o.e;
    return { op: 'nonNull', obj: o.e, what };
  }

  private member(n: Node, env: Env, frame: Frame, asCallee: boolean): R {
    const objNode = n['object'] as Node;
    const computed = n['computed'] === true;
    const optional = n['optional'] === true;
    if (objNode.type === 'Super') {
      if (computed) this.fail(n, 'a computed super member');
      const name = (n['property'] as Node)['name'] as string;
      if (frame.home === null) this.fail(n, '`super` outside a method');
      // The descriptor (a getter is not run while compiling), and the class that defines the
      // method: `super` inside it is relative to that class, not to the caller's parent.
      const parent = Object.getPrototypeOf(frame.home) as SmmoClass;
      const fn = findDescriptor(parent.prototype as object, name, true)?.value as unknown;
      if (typeof fn !== 'function') this.fail(n, `super.${name} is not a method`);
      return stat({ sv: 'superMethod', fn, name, home: homeOf(parent, name) });
    }
    const obj = this.expr(objNode, env, frame);
    const propNode = n['property'] as Node;
    const name = computed ? null : (propNode['name'] as string);
    if (obj.k === 's') return this.staticMember(obj.s, n, name, env, frame);
    const o = obj;
    switch (o.t.k) {
      case 'obj': {
        if (computed) this.fail(n, `a computed member of an object of ${o.t.cls.name}`);
        // chain() takes every optional link on an object out of its chain before lowering it.
        if (optional) this.fail(n, 'an optional member outside an optional chain');
        return this.objMember(o, o.t.cls, name!, n, asCallee);
      }
      case 'arr': {
        if (computed) this.fail(n, 'inline arrays are read with .get(i) and written with .set(i, v)');
        if (name === 'length') return val({ op: 'seq', items: [o.e, cnst(this.fieldRef(o.t.cls, o.t.field)!.length)] }, NUM);
        if (name === 'get' || name === 'set') return stat({ sv: 'arrMethod', recv: o, name });
        this.fail(n, `inline arrays have get, set and length, not '${name}'`);
        break;
      }
      case 'ctx': {
        if (computed) this.fail(n, 'a computed member of the runtime');
        if (['create', 'destroy', 'deviceDo', 'get', 'count'].includes(name!)) return stat({ sv: 'ctxOp', ctx: o.e, name: name! });
        this.fail(n, `this.runtime.${name} is not one of create, destroy, deviceDo, get, count`);
        break;
      }
      default: {
        // Any other JavaScript value: the same property access as written.
        this.portable = false;
        if (computed) {
          const [target, idx] = this.ordered([() => this.toDyn(o), () => this.toDyn(this.value(propNode, env, frame))]);
          return val({ op: 'dynIndex', obj: target!.e, index: idx!.e, optional }, DYN);
        }
        return val({ op: 'dynMember', obj: this.toDyn(o).e, name: name!, optional }, DYN);
      }
    }
    this.fail(n, 'an unsupported member access');
  }

  /**
   * `node` evaluated now, once, for an expression rebuilt around it (optional chains,
   * logical assignments): `name` stands for its value `r` (a local unless the value is
   * stable, or the static value itself) in `inner`, a new child of `env`.
   */
  private once(node: Node, env: Env, frame: Frame): { name: Node; r: R; inner: Env } {
    const inner = new Env(env);
    const v = this.expr(node, env, frame);
    const r = v.k === 'v' ? this.simple(v) : v;
    return { name: this.synthName(r, inner, node), r, inner };
  }

  /**
   * An optional chain (the expression of a ChainExpression): when the object of an optional
   * link `o?.name` is null, the whole chain is undefined (null where the chain's value is a
   * reference) and nothing after the link is evaluated — `a?.b.c`, `a?.m()`, `a?.arr.get(i)`
   * (ES2020 short-circuiting). Lowered from the first link evaluated: its object once (a
   * local), then the rest of the chain, with that link no longer optional, only when the
   * object is not null; later optional links the same way inside. An optional link on a
   * JavaScript value stays JavaScript's own `?.` (emitted as one chain).
   */
  private chain(top: Node, env: Env, frame: Frame): R {
    let link: Node | null = null;
    for (let x = top; x.type === 'MemberExpression' || x.type === 'CallExpression';) {
      if (x.type === 'MemberExpression' && x['optional'] === true) link = x;
      x = (x.type === 'MemberExpression' ? x['object'] : x['callee']) as Node;
    }
    if (link === null) return this.expr(top, env, frame);
    const { name, r: s, inner } = this.once(link['object'] as Node, env, frame);
    const isObj = s.k === 'v' && s.t.k === 'obj';
    const at = link;
    const rebuild = (x: Node): Node => {
      if (x === at) return synthNode(x, { ...x, object: name, optional: !isObj });
      if (x.type === 'MemberExpression') return synthNode(x, { ...x, object: rebuild(x['object'] as Node) });
      return synthNode(x, { ...x, callee: rebuild(x['callee'] as Node) });
    };
    const rest = rebuild(top);
    if (!isObj) return this.expr(rest, inner, frame);
    const obj = s as Val;
    const whenSet = this.branch(() => this.asVal(this.chain(rest, inner, frame), top));
    const t = whenSet.v.t.k === 'obj' ? whenSet.v.t : this.join(UNDEF, whenSet.v.t, top, 'an optional chain');
    const whenNull = { stmts: [], v: t.k === 'obj' ? val(cnst(0), t) : UNDEF_VAL };
    return this.conditional({ op: 'binary', o: '!==', a: obj.e, b: cnst(0) }, whenSet, whenNull, t, top);
  }

  private objMember(o: Val, cls: TypeLayout, name: string, n: Node, asCallee: boolean): R {
    const f = this.fieldRef(cls, name);
    if (f !== null) {
      if (f.length > 0) return val(this.deref(o, `${cls.name}.${name}`), arrTy(cls, name));
      return val({ op: 'load', field: f, obj: this.deref(o, `${cls.name}.${name}`), elem: null }, this.fieldTy(f));
    }
    switch (name) {
      case 'handle':
        return val(this.deref(o, `${cls.name}.handle`), NUM);
      case 'runtime':
        return val(o.e.op === 'self' ? { op: 'ctx' } : { op: 'seq', items: [this.deref(o, `${cls.name}.runtime`), { op: 'ctx' }] }, CTX);
      case 'destroy':
      case 'is':
        if (!asCallee) this.fail(n, `${cls.name}.${name} is used as a value`);
        return stat({ sv: 'objMethod', recv: o, name, impls: null });
    }
    if (cls.concrete.length === 0) this.fail(n, `${cls.name} has no concrete class`);
    // A method or getter of the class: one implementation per concrete class (inlined, dispatched when they differ).
    const impls = new Map<object, number[]>();
    let getter = false;
    for (const id of cls.concrete) {
      const d = findDescriptor(this.table.types[id]!.cls.prototype as object, name);
      if (d === undefined) this.fail(n, `${cls.name} has no field or method '${name}'`);
      if (d.get !== undefined) getter = true;
      const impl = d.get ?? d.value;
      if (typeof impl !== 'function') this.fail(n, `${cls.name}.${name} is not a field, method or getter`);
      const list = impls.get(impl as object) ?? [];
      list.push(id);
      impls.set(impl as object, list);
    }
    if (getter) {
      if (asCallee) this.fail(n, `${cls.name}.${name} is a getter, not a method`);
      return this.invokeMethod(o, name, impls, [], n, 'get');
    }
    if (!asCallee) this.fail(n, `the method ${cls.name}.${name} is used as a value`);
    return stat({ sv: 'objMethod', recv: o, name, impls });
  }

  private staticMember(s: SV, n: Node, name: string | null, env: Env, frame: Frame): R {
    if (s.sv !== 'value' && s.sv !== 'class') this.fail(n, `member '${name ?? '[…]'}' of ${svName(s)}`);
    const holder = s.sv === 'value' ? s.value : s.t.cls;
    if (name === null) {
      this.portable = false;
      const [target, idx] = this.ordered([() => this.asVal(stat(s), n), () => this.toDyn(this.value(n['property'] as Node, env, frame))]);
      return val({ op: 'dynIndex', obj: target!.e, index: idx!.e, optional: false }, DYN);
    }
    if (holder !== null && (typeof holder === 'object' || typeof holder === 'function')) {
      const d = findDescriptor(holder as object, name);
      if (d !== undefined && d.get === undefined) {
        const v = d.value as unknown;
        if (typeof v === 'function') {
          const t = this.table.byClass(v as SmmoClass);
          if (t !== undefined) return stat({ sv: 'class', t });
          const holderLabel = s.sv === 'value' ? s.label : s.t.name;
          return stat({ sv: 'value', value: v, label: `${holderLabel}.${name}`, recv: { value: holder as object, name } });
        }
        // A non-writable, non-configurable primitive (Math.PI, a frozen table's entry) is baked in;
        // anything else is read when the method runs.
        if (d.writable === false && d.configurable === false && (v === null || typeof v !== 'object')) {
          return this.asVal(stat({ sv: 'value', value: v, label: name }), n);
        }
      }
    }
    this.portable = false;
    return val({ op: 'dynMember', obj: this.asVal(stat(s), n).e, name, optional: n['optional'] === true }, DYN);
  }

  // ---------------------------------------------------------------- calls

  private call(n: Node, env: Env, frame: Frame): R {
    const calleeNode = n['callee'] as Node;
    const argNodes = n['arguments'] as Node[];
    if (n['optional'] === true) this.fail(n, 'optional calls (f?.()) are not supported');
    const callee = calleeNode.type === 'MemberExpression' ? this.member(calleeNode, env, frame, true) : this.expr(calleeNode, env, frame);
    if (callee.k === 'v') {
      // A call of a JavaScript value (a method of a typed array, a function in a variable, …); `...xs` as written.
      this.portable = false;
      const thunks = argNodes.map((a) => () => this.dynItem(a, env, frame));
      if (callee.e.op === 'dynMember') {
        const obj = callee.e.obj;
        const [o, ...args] = this.ordered([() => val(obj, DYN), ...thunks]);
        return val({ op: 'dynMethodCall', obj: o!.e, name: callee.e.name, args: args.map((a) => a.e), optional: callee.e.optional }, DYN);
      }
      const [f, ...args] = this.ordered([() => this.toDyn(callee), ...thunks]);
      return val({ op: 'dynCall', callee: f!.e, args: args.map((a) => a.e), optional: false }, DYN);
    }
    const s = callee.s;
    if (argNodes.some((a) => a.type === 'SpreadElement')) {
      // f(...xs) of a module function or a built-in: the function itself, called as JavaScript.
      if (s.sv === 'value' && typeof s.value === 'function')
        return this.spreadCall(s.value as object, s.label, s.recv, argNodes, env, frame);
      this.fail(n, `spread arguments (...xs) to ${svName(s)}; pass the values one by one`);
    }
    switch (s.sv) {
      case 'ctxOp':
        return this.ctxCall(s.ctx, s.name, argNodes, n, env, frame);
      case 'arrMethod':
        return this.arrCall(s.recv, s.name, argNodes, n, env, frame);
      case 'objMethod': {
        if (s.impls === null && s.name === 'destroy') return this.freeCall(s.recv, n);
        if (s.impls === null) return this.isCall(s.recv, argNodes, n, env, frame);
        return this.invokeMethod(s.recv, s.name, s.impls, this.args(argNodes, env, frame), n, 'method');
      }
      case 'superMethod': {
        const parsed = parseFunction(s.fn as (...a: never[]) => unknown);
        if (typeof parsed === 'string') this.fail(n, `super.${s.name}: ${parsed}`);
        const args = this.args(argNodes, env, frame);
        return this.inline(s.fn, parsed, frame.self, args, n, s.fn, null, s.home, `super.${s.name}`);
      }
      case 'fnNode': {
        const args = this.args(argNodes, env, frame);
        return this.inline(
          null,
          s.fn,
          s.fn.arrow ? s.frame.self : null,
          args,
          n,
          s.frame.closureOf,
          s.env,
          s.frame.home,
          'a local function',
        );
      }
      case 'value': {
        const fn = s.value;
        if (typeof fn !== 'function') this.fail(n, `${s.label} is not a function`);
        const mathName = mathFunctionName(fn);
        if (mathName !== null) {
          const args = this.ordered(argNodes.map((a) => () => this.numeric(this.value(a, env, frame), a)));
          return val({ op: 'math', name: mathName, args: args.map((a) => a.e) }, NUM);
        }
        return this.callFunction(fn as (...a: never[]) => unknown, s.label, argNodes, n, env, frame, s.recv);
      }
      case 'class':
        this.fail(n, `class ${s.t.name} is called without new`);
    }
  }

  /** `f(a, ...xs)` with f a function value: called as JavaScript, the arguments as written (listed in notes). */
  private spreadCall(
    fn: object,
    label: string,
    recv: { readonly value: object; readonly name: string } | undefined,
    argNodes: readonly Node[],
    env: Env,
    frame: Frame,
  ): Val {
    this.notes.push(`${label}() runs as JavaScript: its arguments are spread (...)`);
    const args = this.ordered(argNodes.map((a) => () => this.dynItem(a, env, frame))).map((a) => a.e);
    return this.jsCall(fn, label, recv, args);
  }

  /** Arguments evaluated in order (static ones stay static: classes, functions, constants). */
  private args(argNodes: readonly Node[], env: Env, frame: Frame): R[] {
    const rs: (R | null)[] = [];
    const thunks: (() => Val)[] = [];
    const where: number[] = [];
    argNodes.forEach((a, i) => {
      // Static arguments are resolved now; they have no effects and need no order.
      if (
        a.type === 'Identifier' ||
        a.type === 'ArrowFunctionExpression' ||
        a.type === 'FunctionExpression' ||
        a.type === 'MemberExpression'
      ) {
        const before = this.sink.length;
        const probe = a.type === 'MemberExpression' ? null : this.expr(a, env, frame);
        if (probe !== null && (probe.k === 's' || this.sink.length === before)) {
          rs.push(probe);
          if (probe.k === 'v') {
            where.push(i);
            thunks.push(() => probe);
          }
          return;
        }
      }
      rs.push(null);
      where.push(i);
      thunks.push(() => this.value(a, env, frame));
    });
    const vals = this.ordered(thunks);
    where.forEach((i, k) => (rs[i] = vals[k]!));
    return rs as R[];
  }

  private numeric(v: Val, n: Node): Val {
    if (v.t.k === 'obj' || v.t.k === 'arr' || v.t.k === 'ctx') this.fail(n, 'an smmo object is used as a number');
    return v;
  }

  /**
   * A call of a function value: inlined when it compiles, else called as JavaScript with
   * views. `recv`: the call was `holder.name(…)` on a JavaScript object or class, whose
   * `this` is the holder: a function that reads `this` is then not inlined (an inlined
   * function has no `this`), and the JavaScript call is a method call on the holder
   * (`order.push(x)`, a static method that calls `this.other()`).
   */
  private callFunction(
    fn: (...a: never[]) => unknown,
    label: string,
    argNodes: Node[],
    n: Node,
    env: Env,
    frame: Frame,
    recv?: { readonly value: object; readonly name: string },
  ): R {
    const args = this.args(argNodes, env, frame);
    const parsed = parseFunction(fn);
    let why: string;
    if (typeof parsed === 'string') why = parsed;
    else if (recv !== undefined && !parsed.arrow && readsThis(parsed.body)) why = `it reads 'this' (here ${recv.name}'s holder)`;
    else {
      const saved = {
        sink: this.sink,
        length: this.sink.length,
        portable: this.portable,
        allocates: this.allocates,
        frees: this.frees,
        notes: this.notes.length,
      };
      try {
        return this.inline(fn, parsed, null, args, n, fn, null, null, label);
      } catch (e) {
        if (!(e instanceof CompileFallback)) throw e;
        this.sink = saved.sink;
        this.sink.length = saved.length;
        this.portable = saved.portable;
        this.allocates = saved.allocates;
        this.frees = saved.frees;
        this.notes.length = saved.notes;
        why = e.reason;
      }
    }
    // A function written in the method among the arguments is made as a JavaScript function (closure).
    this.notes.push(`${label}() runs as JavaScript: ${why}`);
    return this.jsCall(
      fn,
      label,
      recv,
      args.map((a, i) => this.toDyn(this.asVal(a, argNodes[i]!)).e),
    );
  }

  /** A call of the function value `fn` as JavaScript: as `holder.name(…)` when it was read from a holder (its `this`). */
  private jsCall(fn: object, label: string, recv: { readonly value: object; readonly name: string } | undefined, args: Expr[]): Val {
    this.portable = false;
    if (recv !== undefined) {
      const holder = this.staticRef(recv.value, label.slice(0, Math.max(0, label.length - recv.name.length - 1)) || 'holder');
      return val({ op: 'dynMethodCall', obj: holder, name: recv.name, args, optional: false }, DYN);
    }
    return val({ op: 'dynCall', callee: this.staticRef(fn, label), args, optional: false }, DYN);
  }

  /** x.m(args) on an object: inlined; a switch on the concrete type when implementations differ. */
  private invokeMethod(
    recv: Val,
    name: string,
    impls: ReadonlyMap<object, number[]>,
    args: readonly R[],
    n: Node,
    kind: 'method' | 'get' | 'set',
  ): Val {
    const cls = (recv.t as { cls: TypeLayout }).cls;
    const r = this.simple(recv);
    if (r.e.op !== 'self') this.sink.push({ s: 'expr', e: { op: 'nonNull', obj: r.e, what: `${cls.name}.${name}` } });
    const inlineOne = (impl: object, self: Val): Val => {
      const parsed = parseFunction(impl as (...a: never[]) => unknown);
      if (typeof parsed === 'string') {
        this.notes.push(`${cls.name}.${name} runs as JavaScript: ${parsed}`);
        this.portable = false;
        const box: Expr = { op: 'box', obj: self.e };
        if (kind === 'get') return val({ op: 'dynMember', obj: box, name, optional: false }, DYN);
        if (kind === 'set') {
          const target: Expr = { op: 'dynMember', obj: box, name, optional: false };
          return val({ op: 'dynAssign', target, o: '=', value: this.toDyn(this.asVal(args[0]!, n)).e }, DYN);
        }
        const dynArgs = args.map((a) => this.toDyn(this.asVal(a, n)).e);
        return val({ op: 'dynMethodCall', obj: box, name, args: dynArgs, optional: false }, DYN);
      }
      const home = homeOf(this.table.types[impls.get(impl)![0]!]!.cls, name);
      return this.inline(impl, parsed, self, args, n, impl, null, home, `${cls.name}.${name}`);
    };
    const entries = [...impls.entries()];
    if (entries.length === 1) return inlineOne(entries[0]![0], r);
    // Several implementations: a switch on the concrete type id of the receiver.
    const result = this.newLocal('v', `virt:${this.labelCount + 1}`);
    this.sink.push({ s: 'let', id: result, name: 'v', init: null });
    const label = this.label('virt');
    const outer = this.sink;
    const cases = entries.flatMap(([impl, ids]) => {
      const narrowed = ids.length === 1 ? val(r.e, objTy(this.table.types[ids[0]!]!)) : r;
      const body: Stmt[] = [];
      this.into(body, () => {
        const res = inlineOne(impl, narrowed);
        body.push({ s: 'expr', e: this.assignLocal(result, res, n) }, { s: 'break', label });
      });
      return ids.map((id, k) => ({ test: cnst(id) as Expr | null, body: k === ids.length - 1 ? body : [] }));
    });
    outer.push({ s: 'switch', label, on: { op: 'typeOf', obj: r.e }, cases });
    return this.readLocal(result);
  }

  private freeCall(recv: Val, n: Node): Val {
    if (recv.t.k === 'dyn') {
      this.fail(
        n,
        'destroy() of a value that comes from JavaScript (an array element, a call left as JavaScript …), which the compiler cannot tell is an smmo object; destroy it through a variable, field or parameter that holds it',
      );
    }
    if (recv.t.k !== 'obj') this.fail(n, `destroy() of a ${tyName(recv.t)} value, which is not an smmo object`);
    this.frees = true;
    return val({ op: 'free', obj: recv.e }, UNDEF);
  }

  private isCall(recv: Val, argNodes: Node[], n: Node, env: Env, frame: Frame): Val {
    const [x, other] = this.ordered([() => recv, () => (argNodes[0] === undefined ? UNDEF_VAL : this.value(argNodes[0], env, frame))]);
    const self = this.deref(x!, 'is');
    if (other!.t.k === 'null' || other!.t.k === 'undef') return val({ op: 'seq', items: [self, other!.e, cnst(false)] }, BOOL);
    if (other!.t.k !== 'obj') this.fail(n, 'x.is(y) takes an smmo object or null');
    const y = this.simple(other!);
    return val(
      { op: 'logical', o: '&&', a: { op: 'binary', o: '!==', a: y.e, b: cnst(0) }, b: { op: 'binary', o: '===', a: y.e, b: self } },
      BOOL,
    );
  }

  private arrCall(recv: Val, name: 'get' | 'set', argNodes: Node[], n: Node, env: Env, frame: Frame): R {
    const t = recv.t as { cls: TypeLayout; field: string };
    const f = this.fieldRef(t.cls, t.field)!;
    if (argNodes[0] === undefined) this.fail(n, `${t.cls.name}.${t.field}.${name} needs an index`);
    const thunks = [() => recv, () => this.numeric(this.value(argNodes[0]!, env, frame), n)];
    if (name === 'set') thunks.push(() => (argNodes[1] === undefined ? UNDEF_VAL : this.value(argNodes[1], env, frame)));
    const [o, idx, v] = this.ordered(thunks);
    const obj = this.simple(o!);
    const r = idx!.e.op === 'local' ? this.ranges.get(idx!.e.id) : undefined;
    const inBounds = r !== undefined && r.min >= 0 && r.max < f.length;
    if (name === 'get') return val({ op: 'load', field: f, obj: obj.e, elem: idx!.e, inBounds }, this.fieldTy(f));
    const stored = this.storeValue(f, v!, n);
    return val(
      { op: 'seq', items: [{ op: 'store', field: f, obj: obj.e, elem: idx!.e, value: stored.e, inBounds }, cnst(undefined)] },
      UNDEF,
    );
  }

  /** The value to store into field `f`: objects as handles; numbers and booleans as they are. */
  private storeValue(f: FieldRef, v: Val, n: Node): Val {
    if (f.kind === 'ref') {
      const target = this.refTarget(f);
      if (v.t.k === 'obj' || v.t.k === 'null' || v.t.k === 'undef' || v.t.k === 'dyn') return this.coerce(v, objTy(target), n);
      this.fail(n, `a ${tyName(v.t)} value is stored into the reference ${f.cls.name}.${f.name}; store an object or null`);
    }
    if (v.t.k === 'obj' || v.t.k === 'arr' || v.t.k === 'ctx')
      this.fail(n, `an smmo object is stored into ${f.cls.name}.${f.name}, a ${f.kind} field`);
    return v;
  }

  // ---------------------------------------------------------------- the runtime's operations

  private ctxCall(ctx: Expr, name: string, argNodes: Node[], n: Node, env: Env, frame: Frame): R {
    const classArg = (i: number): TypeLayout => {
      const a = argNodes[i];
      if (a === undefined) this.fail(n, `runtime.${name} needs a class`);
      const r = this.expr(a, env, frame);
      if (r.k !== 's' || r.s.sv !== 'class')
        this.fail(a, `runtime.${name}: the class must be a registered class known when the method is compiled`);
      return r.s.t;
    };
    if (ctx.op !== 'ctx') this.sink.push(...exprStmts(ctx));
    switch (name) {
      case 'create': {
        const t = classArg(0);
        if (t.abstract) this.fail(n, `create(${t.name}): ${t.name} is abstract`);
        return this.create(t, argNodes[1] ?? null, env, frame);
      }
      case 'destroy': {
        const a = argNodes[0];
        if (a === undefined) this.fail(n, 'destroy needs an object');
        return this.freeCall(this.value(a, env, frame), n);
      }
      case 'deviceDo':
        return this.deviceDo(classArg(0), argNodes[1], n, env, frame);
      case 'get': {
        const t = classArg(0);
        const a = argNodes[1];
        if (a === undefined) this.fail(n, 'get(C, handle) needs a handle');
        return val({ op: 'checkHandle', value: this.numeric(this.value(a, env, frame), a).e, cls: t }, objTy(t));
      }
      case 'count': {
        const t = classArg(0);
        this.portable = false;
        return val({ op: 'dynMethodCall', obj: { op: 'ctx' }, name: 'count', args: [this.staticRef(t.cls, t.name)], optional: false }, NUM);
      }
    }
    this.fail(n, `runtime.${name}`);
  }

  /** deviceDo(C, fn): one ForEach per concrete class of C, fn's body inlined with the object as its parameter. */
  private deviceDo(t: TypeLayout, cbNode: Node | undefined, n: Node, env: Env, frame: Frame): Val {
    if (cbNode === undefined || (cbNode.type !== 'ArrowFunctionExpression' && cbNode.type !== 'FunctionExpression')) {
      this.fail(n, 'deviceDo(C, fn): fn must be a function written in the call');
    }
    const fn = functionNode(cbNode, srcOf(cbNode));
    this.checkShape(fn, 'the deviceDo callback');
    const param = fn.params[0];
    if (fn.params.length > 1 || param?.type === 'RestElement') this.fail(cbNode, 'the deviceDo callback takes one parameter (the object)');
    const out = this.sink;
    for (const id of t.concrete) {
      const S = this.table.types[id]!;
      this.iterates.add(id);
      const label = this.label('each');
      const v = this.temp(objTy(S), 'each');
      const inner = new Env(env);
      const eachFrame: Frame = { ...frame, self: fn.arrow ? frame.self : null, ret: { kind: 'each', label }, targets: [] };
      const body: Stmt[] = [];
      // `({ x, y }) => …`: the object's fields read into the callback's variables.
      if (param !== undefined && param.type !== 'Identifier') {
        this.into(body, () => this.bind(param, val({ op: 'local', id: v }, objTy(S)), 'let', inner, eachFrame));
      } else if (param !== undefined) {
        inner.vars.set(param['name'] as string, {
          k: 'local',
          id: v,
          konst: true,
          role: 'the object a deviceDo callback visits, which the compiled loop does not let change; use a let variable for another object',
        });
      }
      this.into(body, () => {
        if (fn.body.type === 'BlockStatement') this.block(fn.body['body'] as Node[], inner, eachFrame, body);
        else {
          const r = this.expr(fn.body, inner, eachFrame);
          if (r.k === 'v') body.push(...exprStmts(r.e));
        }
      });
      out.push({ s: 'forEach', typeId: id, var: v, label, body });
    }
    return UNDEF_VAL;
  }

  /** create(C, init): evaluate the init values (as the call's argument is), allocate and zero, store them in key order. */
  private create(t: TypeLayout, initNode: Node | null, env: Env, frame: Frame): Val {
    this.allocates = true;
    const stores: { f: FieldRef; elem: number | null; value: Val }[] = [];
    if (initNode !== null) {
      if (initNode.type !== 'ObjectExpression') this.fail(initNode, `create(${t.name}, init): init must be an object literal`);
      const thunks: (() => Val)[] = [];
      const places: { f: FieldRef; elem: number | null }[] = [];
      for (const p of initNode['properties'] as Node[]) {
        if (p.type !== 'Property' || p['computed'] === true || p['kind'] !== 'init' || p['method'] === true)
          this.fail(p, 'create: init keys must be plain field names');
        const key = p['key'] as Node;
        const name = key.type === 'Identifier' ? (key['name'] as string) : String(key['value']);
        const f = this.fieldRef(t, name);
        if (f === null) this.fail(p, `create(${t.name}): ${t.name} has no field '${name}'`);
        const valueNode = p['value'] as Node;
        if (f.length === 0) {
          places.push({ f, elem: null });
          thunks.push(() => this.storeValue(f, this.value(valueNode, env, frame), valueNode));
          continue;
        }
        if (valueNode.type !== 'ArrayExpression')
          this.fail(valueNode, `create(${t.name}): the inline array '${name}' must be given as an array literal`);
        const items = valueNode['elements'] as (Node | null)[];
        if (items.length > f.length) this.fail(valueNode, `create(${t.name}): '${name}' has ${f.length} elements`);
        items.forEach((item, k) => {
          if (item === null || item.type === 'SpreadElement') this.fail(valueNode, 'array holes and spread elements are not supported');
          places.push({ f, elem: k });
          thunks.push(() => this.storeValue(f, this.value(item, env, frame), item));
        });
      }
      // Every value is computed before the allocation (they are the call's argument).
      const values = this.ordered(thunks).map((v) => (isStable(v.e) ? v : this.simpleAlways(v)));
      values.forEach((v, i) => stores.push({ ...places[i]!, value: v }));
    }
    const h = this.temp(objTy(t), 'new');
    const items: Expr[] = [{ op: 'setLocal', id: h, value: { op: 'alloc', cls: t } }];
    for (const s of stores)
      items.push({ op: 'store', field: s.f, obj: { op: 'local', id: h }, elem: s.elem === null ? null : cnst(s.elem), value: s.value.e });
    items.push({ op: 'local', id: h });
    return val({ op: 'seq', items }, objTy(t));
  }

  /** A temporary holding `v`, whatever `v` is (it must not change before use). */
  private simpleAlways(v: Val): Val {
    const id = this.temp(v.t, 'v');
    this.sink.push({ s: 'expr', e: { op: 'setLocal', id, value: v.e } });
    return val({ op: 'local', id }, v.t);
  }

  // ---------------------------------------------------------------- operators

  private binary(n: Node, env: Env, frame: Frame): R {
    const o = n['operator'] as string;
    const leftNode = n['left'] as Node;
    const rightNode = n['right'] as Node;
    if (o === 'instanceof') return this.instanceOf(n, leftNode, rightNode, env, frame);
    if (o === 'in') {
      // `key in value`: JavaScript's operator on JavaScript values (an smmo object as its view, as interpreted).
      const [k, v] = this.ordered([
        () => this.toDyn(this.value(leftNode, env, frame)),
        () => this.toDyn(this.value(rightNode, env, frame)),
      ]);
      this.portable = false;
      return val({ op: 'binary', o: 'in', a: k!.e, b: v!.e }, BOOL);
    }
    const [a, b] = this.ordered([() => this.value(leftNode, env, frame), () => this.value(rightNode, env, frame)]) as [Val, Val];
    const isEq = o === '===' || o === '!==' || o === '==' || o === '!=';
    if (a.t.k === 'obj' || b.t.k === 'obj' || a.t.k === 'arr' || b.t.k === 'arr') {
      if (!isEq) this.fail(n, `an smmo object is an operand of '${o}'`);
      const [x, y] = a.t.k === 'obj' || a.t.k === 'arr' ? [a, b] : [b, a];
      if (y.t.k === 'null' || y.t.k === 'undef') {
        // x === null, x == undefined, …: an object is a handle and null is 0; a reference is never undefined.
        const negate = o === '!==' || o === '!=';
        const loose = o === '==' || o === '!=';
        if (x.t.k === 'arr' || (!loose && y.t.k === 'undef')) return val({ op: 'seq', items: [x.e, y.e, cnst(negate)] }, BOOL);
        return val({ op: 'seq', items: [y.e, { op: 'binary', o: negate ? '!==' : '===', a: x.e, b: cnst(0) }] }, BOOL);
      }
      this.fail(
        n,
        `compares ${tyName(a.t)} with ${tyName(b.t)} using '${o}': views are not unique objects, so the interpreted method compares identities; compare handles (a.handle === b.handle) or use a.is(b)`,
      );
    }
    if (a.t.k === 'ctx' || b.t.k === 'ctx') this.fail(n, `the runtime is an operand of '${o}'`);
    const isCmp = isEq || o === '<' || o === '>' || o === '<=' || o === '>=';
    const t = isCmp ? BOOL : o === '+' && (a.t.k !== 'num' || b.t.k !== 'num') ? DYN : NUM;
    return val({ op: 'binary', o: o as BinaryOp, a: a.e, b: b.e }, t);
  }

  private instanceOf(n: Node, leftNode: Node, rightNode: Node, env: Env, frame: Frame): R {
    const left = this.value(leftNode, env, frame);
    const right = this.expr(rightNode, env, frame);
    const target = right.k === 's' ? (right.s.sv === 'class' ? right.s.t.cls : right.s.sv === 'value' ? right.s.value : null) : null;
    if (left.t.k === 'obj') {
      if (typeof target !== 'function') this.fail(n, 'instanceof needs a class known when the method is compiled');
      const ids = left.t.cls.concrete.filter((id) => {
        const c = this.table.types[id]!.cls;
        return c === target || c.prototype instanceof (target as new () => unknown);
      });
      return val({ op: 'isA', obj: left.e, typeIds: ids }, BOOL);
    }
    if (left.t.k === 'null' || left.t.k === 'undef') return val({ op: 'seq', items: [left.e, cnst(false)] }, BOOL);
    this.portable = false;
    const [l, r] = this.ordered([() => this.toDyn(left), () => this.toDyn(this.asVal(right, rightNode))]);
    return val({ op: 'binary', o: 'instanceof', a: l!.e, b: r!.e }, BOOL);
  }

  private logical(n: Node, env: Env, frame: Frame): R {
    const o = n['operator'] as '&&' | '||' | '??';
    const leftNode = n['left'] as Node;
    const left = this.value(leftNode, env, frame);
    // `x instanceof C && …`: the right side sees x as a C, and is not lowered where x is never one (as for `if`).
    // `!(x instanceof C) || …` likewise (the right side runs where x is a C).
    if ((o === '&&' && neverTrue(left.e)) || (o === '||' && alwaysTrue(left.e))) return left;
    const rightEnv = o === '&&' ? this.narrow(leftNode, env) : o === '||' ? this.narrowAll(guardOf(leftNode), env) : env;
    const rest = this.branch(() => this.value(n['right'] as Node, rightEnv, frame));
    const b = rest.v;
    // The left operand is used twice (test and value) unless the result is a plain logical expression.
    const plain =
      rest.stmts.length === 0 &&
      left.t.k !== 'obj' &&
      left.t.k !== 'arr' &&
      left.t.k !== 'ctx' &&
      b.t.k !== 'obj' &&
      b.t.k !== 'arr' &&
      b.t.k !== 'ctx';
    if (plain) return val({ op: 'logical', o, a: left.e, b: b.e }, sameTy(left.t, b.t) ? left.t : DYN);
    const a = this.simple(left);
    if (a.t.k === 'obj') {
      const isObj: Expr = { op: 'binary', o: '!==', a: a.e, b: cnst(0) };
      if (o === '&&') {
        // x && y: y when x is an object, else null (0 where the result is an object)
        const t = this.join(NULL, b.t, n, 'an && expression');
        return this.conditional(isObj, rest, { stmts: [], v: val(cnst(null), NULL) }, t, n);
      }
      // x || y, x ?? y: x when it is an object, else y
      const t = this.join(a.t, b.t, n, `an ${o} expression`);
      return this.conditional(isObj, { stmts: [], v: a }, rest, t, n);
    }
    if (b.t.k === 'obj' || b.t.k === 'arr' || b.t.k === 'ctx' || a.t.k === 'arr' || a.t.k === 'ctx') {
      const t = this.join(a.t, b.t, n, `an ${o} expression`);
      const test: Expr =
        o === '&&'
          ? this.truthy(a, n)
          : o === '||'
            ? { op: 'unary', o: '!', a: this.truthy(a, n) }
            : { op: 'binary', o: '==', a: a.e, b: cnst(null) };
      return this.conditional(test, rest, { stmts: [], v: a }, t, n);
    }
    const t = sameTy(a.t, b.t) ? a.t : DYN;
    if (rest.stmts.length === 0) return val({ op: 'logical', o, a: a.e, b: b.e }, t);
    const test: Expr = o === '&&' ? a.e : o === '||' ? { op: 'unary', o: '!', a: a.e } : { op: 'binary', o: '==', a: a.e, b: cnst(null) };
    return this.conditional(test, rest, { stmts: [], v: a }, t, n);
  }

  /** `delete x.p` / `delete x[k]`: JavaScript's operator on the value (an smmo object as its view, as interpreted). */
  private deleteOp(n: Node, env: Env, frame: Frame): R {
    const target = n['argument'] as Node;
    if (target.type !== 'MemberExpression' || (target['object'] as Node).type === 'Super')
      this.fail(n, "'delete' of something other than a property");
    this.portable = false;
    const computed = target['computed'] === true;
    const [o, k] = this.ordered([
      () => this.toDyn(this.value(target['object'] as Node, env, frame)),
      ...(computed ? [() => this.toDyn(this.value(target['property'] as Node, env, frame))] : []),
    ]);
    const member: Expr = computed
      ? { op: 'dynIndex', obj: o!.e, index: k!.e, optional: false }
      : { op: 'dynMember', obj: o!.e, name: (target['property'] as Node)['name'] as string, optional: false };
    return val({ op: 'unary', o: 'delete', a: member }, BOOL);
  }

  private unary(n: Node, env: Env, frame: Frame): R {
    const o = n['operator'] as string;
    if (o === 'delete') return this.deleteOp(n, env, frame);
    const a = this.value(n['argument'] as Node, env, frame);
    if (a.t.k === 'obj' || a.t.k === 'arr' || a.t.k === 'ctx') {
      if (o === '!') return val({ op: 'unary', o: '!', a: this.truthy(a, n) }, BOOL);
      if (o === 'typeof') return val({ op: 'seq', items: [a.e, cnst(a.t.k === 'obj' ? 'object' : 'object')] }, STR);
      if (o === 'void') return val({ op: 'seq', items: [a.e, cnst(undefined)] }, UNDEF);
      this.fail(n, `an smmo object is the operand of '${o}'`);
    }
    const t = o === '!' ? BOOL : o === 'typeof' ? STR : o === 'void' ? UNDEF : NUM;
    return val({ op: 'unary', o: o as UnaryOp, a: a.e }, t);
  }

  private update(n: Node, env: Env, frame: Frame): R {
    const delta: 1 | -1 = n['operator'] === '++' ? 1 : -1;
    const prefix = n['prefix'] === true;
    const target = n['argument'] as Node;
    if (target.type === 'Identifier') {
      const v = env.find(target['name'] as string);
      if (v === undefined || v.k !== 'local' || v.konst)
        this.fail(n, `++/-- of '${target['name'] as string}', which is not a variable of the method`);
      const cur = this.readLocal(v.id);
      if (cur.t.k === 'obj' || cur.t.k === 'arr' || cur.t.k === 'ctx') this.fail(n, '++/-- of an smmo object');
      if (cur.t.k !== 'num' && cur.t.k !== 'dyn') this.assignLocal(v.id, val(cnst(0), NUM), n); // joins to dyn: ++ keeps JavaScript's meaning
      return val({ op: 'updateLocal', id: v.id, delta, prefix }, NUM);
    }
    if (target.type !== 'MemberExpression') this.fail(n, '++/-- of this target');
    const place = this.place(target, env, frame);
    if (place.k === 'dyn') return val({ op: 'dynUpdate', target: place.target, delta, prefix }, NUM);
    if (place.k === 'setter') {
      // x.p++ through an accessor: old = +get(); set(old ± 1); value: prefix ? old ± 1 : old.
      const cur = this.invokeMethod(place.recv, place.name, this.gettersOf(place, n, delta === 1 ? '++' : '--'), [], n, 'get');
      const old = this.temp(NUM, 'u');
      this.sink.push({ s: 'expr', e: { op: 'setLocal', id: old, value: { op: 'unary', o: '+', a: this.numeric(cur, n).e } } });
      const next = this.simpleAlways(val({ op: 'binary', o: delta === 1 ? '+' : '-', a: { op: 'local', id: old }, b: cnst(1) }, NUM));
      this.invokeMethod(place.recv, place.name, place.setters, [next], n, 'set');
      return prefix ? next : val({ op: 'local', id: old }, NUM);
    }
    if (place.f.kind === 'ref' || place.f.kind === 'bool') this.fail(n, `++/-- of a ${place.f.kind} field`);
    // field++: old = +load; store(old ± 1); value: prefix ? old ± 1 : old (as the accessor pair does)
    const old = this.temp(NUM, 'u');
    const next: Expr = { op: 'binary', o: delta === 1 ? '+' : '-', a: { op: 'local', id: old }, b: cnst(1) };
    const items: Expr[] = [
      { op: 'setLocal', id: old, value: { op: 'unary', o: '+', a: place.load } },
      { op: 'store', field: place.f, obj: place.obj, elem: null, value: next },
    ];
    items.push(prefix ? next : { op: 'local', id: old });
    return val({ op: 'seq', items }, NUM);
  }

  /** `cur op= r`'s new value (`op=` given): objects are refused; `+` on anything but two numbers may be a string. */
  private compound(o: string, cur: Val, r: Val, n: Node): Val {
    if (cur.t.k === 'obj' || r.t.k === 'obj' || cur.t.k === 'arr' || r.t.k === 'arr')
      this.fail(n, `an smmo object is an operand of '${o}'`);
    const bin = o.slice(0, -1) as BinaryOp;
    return val({ op: 'binary', o: bin, a: cur.e, b: r.e }, bin === '+' && (cur.t.k !== 'num' || r.t.k !== 'num') ? DYN : NUM);
  }

  /** The getters of an accessor that `op` reads before it writes (every concrete class has one, or the method falls back). */
  private gettersOf(place: Place & { k: 'setter' }, n: Node, op: string): ReadonlyMap<object, number[]> {
    if (place.getters === null)
      this.fail(n, `'${op}' on ${place.cls.name}.${place.name}, a setter without a getter in some concrete class`);
    return place.getters;
  }

  /** An assignable member: a field of an smmo object, a setter of its class, or a property of a JavaScript value. */
  private place(target: Node, env: Env, frame: Frame): Place {
    const objNode = target['object'] as Node;
    const computed = target['computed'] === true;
    const o = this.value(objNode, env, frame);
    if (o.t.k === 'obj') {
      if (computed) this.fail(target, 'a computed member of an smmo object');
      const name = (target['property'] as Node)['name'] as string;
      const f = this.fieldRef(o.t.cls, name);
      if (f === null) {
        // An accessor: its setter (and getter, for `+=` and `++`) per concrete class, inlined as methods are.
        const setters = new Map<object, number[]>();
        const getters = new Map<object, number[]>();
        for (const id of o.t.cls.concrete) {
          const d = findDescriptor(this.table.types[id]!.cls.prototype as object, name, true);
          if (d?.set !== undefined) setters.set(d.set, [...(setters.get(d.set) ?? []), id]);
          if (d?.get !== undefined) getters.set(d.get, [...(getters.get(d.get) ?? []), id]);
        }
        const n = o.t.cls.concrete.length;
        const count = (m: Map<object, number[]>): number => [...m.values()].reduce((a, ids) => a + ids.length, 0);
        if (n > 0 && count(setters) === n) {
          return { k: 'setter', recv: this.simple(o), cls: o.t.cls, name, setters, getters: count(getters) === n ? getters : null };
        }
        if (setters.size > 0) this.fail(target, `${o.t.cls.name}.${name} is a setter in some of its concrete classes only`);
        this.fail(target, `${o.t.cls.name} has no field '${name}' (smmo objects get no new properties)`);
      }
      if (f.length > 0) this.fail(target, `the inline array ${o.t.cls.name}.${name} is written with .set(i, v)`);
      const s = this.simple(o);
      if (s.e.op !== 'self') this.sink.push({ s: 'expr', e: { op: 'nonNull', obj: s.e, what: `${o.t.cls.name}.${name}` } });
      return { k: 'field', f, obj: s.e, load: { op: 'load', field: f, obj: s.e, elem: null } };
    }
    if (o.t.k === 'arr' || o.t.k === 'ctx') this.fail(target, 'an assignment to a property of an inline array or of the runtime');
    this.portable = false;
    const base = this.simple(this.toDyn(o));
    if (computed) {
      const idx = this.simpleAlways(this.toDyn(this.value(target['property'] as Node, env, frame)));
      return { k: 'dyn', target: { op: 'dynIndex', obj: base.e, index: idx.e, optional: false } };
    }
    return { k: 'dyn', target: { op: 'dynMember', obj: base.e, name: (target['property'] as Node)['name'] as string, optional: false } };
  }

  /**
   * `a ||= b`, `a &&= b`, `a ??= b` (ES2021): `a || (a = b)` and so on, with the object of a
   * member target evaluated once — b is evaluated and stored only when a's value asks for it.
   */
  private logicalAssign(n: Node, o: string, target: Node, right: Node, env: Env, frame: Frame): R {
    let read = target;
    let inner = env;
    if (target.type === 'MemberExpression') {
      if (target['computed'] === true) this.fail(n, `the operator ${o} on a computed member`);
      if ((target['object'] as Node).type === 'Super') this.fail(n, `the operator ${o} on a super member`);
      const obj = this.once(target['object'] as Node, env, frame);
      inner = obj.inner;
      read = synthNode(target, { ...target, object: obj.name });
    } else if (target.type !== 'Identifier') this.fail(n, `the operator ${o} with ${describeNode(target.type)}`);
    const store = synthNode(n, { type: 'AssignmentExpression', operator: '=', left: read, right });
    return this.expr(synthNode(n, { type: 'LogicalExpression', operator: o.slice(0, -1), left: read, right: store }), inner, frame);
  }

  private assign(n: Node, env: Env, frame: Frame): R {
    const o = n['operator'] as string;
    const target = n['left'] as Node;
    const rightNode = n['right'] as Node;
    if (o === '&&=' || o === '||=' || o === '??=') return this.logicalAssign(n, o, target, rightNode, env, frame);
    if (target.type === 'Identifier') {
      const name = target['name'] as string;
      const v = env.find(name);
      if (v === undefined || v.k !== 'local') this.fail(n, `an assignment to '${name}', which is not a variable of the method`);
      if (v.konst) this.fail(n, v.role !== undefined ? `an assignment to '${name}', ${v.role}` : `an assignment to the constant '${name}'`);
      if (o === '=') {
        const r = this.value(rightNode, env, frame);
        return val(this.assignLocal(v.id, r, n), this.locals[v.id]!.ty ?? UNDEF);
      }
      const [cur, r] = this.ordered([() => this.readLocal(v.id), () => this.value(rightNode, env, frame)]) as [Val, Val];
      const next = this.compound(o, cur, r, n);
      return val(this.assignLocal(v.id, next, n), this.locals[v.id]!.ty ?? next.t);
    }
    if (target.type === 'ObjectPattern' || target.type === 'ArrayPattern') {
      // `[a, b] = [b, a]`, `({ x, y } = p)`: the value is the right side, as evaluated.
      if (o !== '=') this.fail(n, `the operator ${o} with a pattern`);
      return this.bindInit(target, rightNode, 'assign', env, frame, true);
    }
    if (target.type !== 'MemberExpression') this.fail(n, `an assignment to ${describeNode(target.type)}`);
    const place = this.place(target, env, frame);
    if (place.k === 'dyn') {
      const r = this.toDyn(this.value(rightNode, env, frame));
      return val({ op: 'dynAssign', target: place.target, o: o as '=', value: r.e }, DYN);
    }
    if (place.k === 'setter') {
      // x.p = v through an accessor: the setter inlined with v; the expression's value is v.
      let v: Val;
      if (o === '=') v = this.value(rightNode, env, frame);
      else {
        const getters = this.gettersOf(place, n, o);
        const [cur, r] = this.ordered([
          () => this.invokeMethod(place.recv, place.name, getters, [], n, 'get'),
          () => this.value(rightNode, env, frame),
        ]) as [Val, Val];
        v = this.compound(o, cur, r, n);
      }
      const s = this.simple(v);
      this.invokeMethod(place.recv, place.name, place.setters, [s], n, 'set');
      return s;
    }
    const f = place.f;
    let v: Val;
    if (o === '=') v = this.value(rightNode, env, frame);
    else {
      if (f.kind === 'ref') this.fail(n, `'${o}' on the reference ${f.cls.name}.${f.name}`);
      // x.f op= v: the field is read before v is evaluated (JavaScript's order)
      const [cur, r] = this.ordered([() => val(place.load, this.fieldTy(f)), () => this.numeric(this.value(rightNode, env, frame), n)]) as [
        Val,
        Val,
      ];
      const bin = o.slice(0, -1) as BinaryOp;
      v = val({ op: 'binary', o: bin, a: cur.e, b: r.e }, bin === '+' && r.t.k !== 'num' ? DYN : NUM);
    }
    const stored = this.storeValue(f, v, n);
    return val(
      { op: 'store', field: f, obj: place.obj, elem: null, value: stored.e },
      f.kind === 'ref' ? objTy(this.refTarget(f)) : stored.t,
    );
  }
}

// ------------------------------------------------------------------ helpers

/** A node made by the lowering (destructuring), placed at `at` for messages. */
function synthNode(at: Node, fields: Record<string, unknown>): Node {
  return { ...fields, start: at.start, end: at.end, __src: srcOf(at) } as unknown as Node;
}

/** The identifiers a pattern binds, in source order (not those inside its default values or computed keys). */
function patternNames(p: Node): Node[] {
  switch (p.type) {
    case 'Identifier':
      return [p];
    case 'AssignmentPattern':
      return patternNames(p['left'] as Node);
    case 'RestElement':
      return patternNames(p['argument'] as Node);
    case 'ArrayPattern':
      return (p['elements'] as (Node | null)[]).flatMap((e) => (e === null ? [] : patternNames(e)));
    case 'ObjectPattern':
      return (p['properties'] as Node[]).flatMap((q) => patternNames(q.type === 'RestElement' ? q : (q['value'] as Node)));
    default:
      return []; // a member expression (assignment patterns only)
  }
}

/** Whether a function body may assign the variable `name` (syntactically; shadowing makes this conservative). */
function assigns(body: Node, name: string): boolean {
  const stack: unknown[] = [body];
  while (stack.length > 0) {
    const n = stack.pop();
    if (n === null || typeof n !== 'object') continue;
    if (Array.isArray(n)) {
      for (const x of n) stack.push(x);
      continue;
    }
    const o = n as Node;
    if (typeof o.type !== 'string') continue;
    if (o.type === 'AssignmentExpression' && patternNames(o['left'] as Node).some((id) => id['name'] === name)) return true;
    if (o.type === 'UpdateExpression' && (o['argument'] as Node).type === 'Identifier' && (o['argument'] as Node)['name'] === name)
      return true;
    for (const k of Object.keys(o)) if (k !== 'type') stack.push(o[k]);
  }
  return false;
}

/** Expressions whose value cannot change before they are used (need no temporary). */
function isStable(e: Expr): boolean {
  return e.op === 'const' || e.op === 'self' || e.op === 'arg' || e.op === 'ctx' || e.op === 'static';
}

/**
 * A test that is false for every object this lowering sees: `x instanceof C` with no
 * concrete class of x a C, or an `&&` with such an operand.
 */
function neverTrue(e: Expr): boolean {
  if (e.op === 'isA') return e.typeIds.length === 0;
  return e.op === 'logical' && e.o === '&&' && (neverTrue(e.a) || neverTrue(e.b));
}

/** Whether a statement always leaves the block it is in (return, throw, break, continue; a block or if that always does). */
function leaves(n: Node): boolean {
  switch (n.type) {
    case 'ReturnStatement':
    case 'ThrowStatement':
    case 'BreakStatement':
    case 'ContinueStatement':
      return true;
    case 'BlockStatement': {
      const body = n['body'] as Node[];
      return body.length > 0 && leaves(body[body.length - 1]!);
    }
    case 'IfStatement':
      return n['alternate'] !== null && leaves(n['consequent'] as Node) && leaves(n['alternate'] as Node);
    default:
      return false;
  }
}

/**
 * The `x instanceof C` tests that hold after `if (test) <leaves>;`: test is `!(x instanceof C)`
 * or an `||` of such tests (each must have been false to get past it).
 */
function guardOf(test: Node): Node[] {
  if (test.type === 'LogicalExpression' && test['operator'] === '||')
    return [...guardOf(test['left'] as Node), ...guardOf(test['right'] as Node)];
  if (test.type !== 'UnaryExpression' || test['operator'] !== '!') return [];
  const arg = test['argument'] as Node;
  return arg.type === 'BinaryExpression' && arg['operator'] === 'instanceof' ? [arg] : [];
}

/** The negation of neverTrue: `!(x instanceof C)` with no concrete class of x a C, or an `||` with such an operand. */
function alwaysTrue(e: Expr): boolean {
  if (e.op === 'unary') return e.o === '!' && neverTrue(e.a);
  return e.op === 'logical' && e.o === '||' && (alwaysTrue(e.a) || alwaysTrue(e.b));
}

/** Statements that take their labels themselves (as break and continue targets). */
const TAKES_LABELS = new Set([
  'BlockStatement',
  'WhileStatement',
  'DoWhileStatement',
  'ForOfStatement',
  'ForStatement',
  'SwitchStatement',
  'LabeledStatement',
]);

function isPrimitive(v: unknown): boolean {
  return v === null || (typeof v !== 'object' && typeof v !== 'function');
}

/** Statements that evaluate `e` for its effects. */
function exprStmts(e: Expr): Stmt[] {
  if (e.op === 'seq') return e.items.flatMap(exprStmts);
  if (isStable(e) || e.op === 'local') return [];
  return [{ s: 'expr', e }];
}

function sameTy(a: Ty, b: Ty): boolean {
  if (a.k !== b.k) return false;
  if (a.k === 'obj') return a.cls === (b as { cls: TypeLayout }).cls;
  if (a.k === 'arr') return a.cls === (b as { cls: TypeLayout }).cls && a.field === (b as { field: string }).field;
  return true;
}

function commonClass(a: TypeLayout, b: TypeLayout): TypeLayout | null {
  for (let x: TypeLayout | null = a; x !== null; x = x.parent) {
    for (let y: TypeLayout | null = b; y !== null; y = y.parent) if (x === y) return x;
  }
  return null;
}

/** The class on whose prototype `method` is defined, walking up from `cls`. */
function homeOf(cls: SmmoClass, method: string): SmmoClass | null {
  for (let c: SmmoClass | null = cls; c !== null && (c as unknown) !== SmmoObject; c = Object.getPrototypeOf(c) as SmmoClass | null) {
    if (Object.prototype.hasOwnProperty.call(c.prototype, method)) return c;
  }
  return null;
}

/**
 * The descriptor of `name` on `obj` or the first prototype that has it. Object.prototype and
 * Function.prototype are left out (an smmo object's `toString` is not one of its methods)
 * unless `builtins`: where the compiler only reads what a name is (a method, a setter), not
 * what an object has.
 */
function findDescriptor(obj: object, name: string, builtins = false): PropertyDescriptor | undefined {
  for (
    let p: object | null = obj;
    p !== null && (builtins || (p !== Object.prototype && p !== Function.prototype));
    p = Object.getPrototypeOf(p) as object | null
  ) {
    const d = Object.getOwnPropertyDescriptor(p, name);
    if (d !== undefined) return d;
  }
  return undefined;
}

function mathFunctionName(fn: unknown): string | null {
  for (const name of PURE_MATH) if ((Math as unknown as Record<string, unknown>)[name] === fn) return name;
  return null;
}

function svName(s: SV): string {
  switch (s.sv) {
    case 'class':
      return `the class ${s.t.name}`;
    case 'value':
      return typeof s.value === 'function' ? `the function ${(s.value as { name?: string }).name ?? ''}` : 'a constant';
    case 'ctxOp':
      return `runtime.${s.name}`;
    case 'objMethod':
    case 'superMethod':
      return `the method ${s.name}`;
    case 'arrMethod':
      return `the inline array's ${s.name}`;
    case 'fnNode':
      return 'a function expression';
  }
}

/** Remember the source text on every node of a function (for messages). */
function setSource(node: Node, src: string): void {
  const stack: unknown[] = [node];
  while (stack.length > 0) {
    const n = stack.pop();
    if (n === null || typeof n !== 'object') continue;
    if (Array.isArray(n)) {
      for (const x of n) stack.push(x);
      continue;
    }
    const o = n as Record<string, unknown>;
    if (typeof o['type'] !== 'string' || Object.prototype.hasOwnProperty.call(o, '__src')) continue;
    Object.defineProperty(o, '__src', { value: src, enumerable: false });
    for (const k of Object.keys(o)) if (k !== 'type') stack.push(o[k]);
  }
}

function srcOf(n: Node): string {
  return (n as unknown as { __src?: string }).__src ?? '';
}

function snippet(node: Node): string {
  const src = srcOf(node);
  const text = src !== '' ? src.slice(node.start, node.end) : node.type;
  const one = text.replace(/\s+/g, ' ');
  return one.length > 60 ? one.slice(0, 57) + '…' : one;
}

function describeNode(type: string): string {
  const words: Record<string, string> = {
    TryStatement: 'try/catch',
    ForInStatement: 'for…in',
    ForOfStatement: 'for…of',
    WithStatement: 'with',
    ClassExpression: 'a class expression',
    ClassDeclaration: 'a class declaration',
    AwaitExpression: 'await',
    YieldExpression: 'yield',
    TaggedTemplateExpression: 'a tagged template',
    MetaProperty: 'new.target / import.meta',
    ImportExpression: 'import()',
    DebuggerStatement: 'debugger',
    Super: 'super',
  };
  return words[type] ?? type;
}

/** Whether a function body reads `this` (not counting nested non-arrow functions and classes, which have their own). */
function readsThis(node: Node): boolean {
  let found = false;
  const visit = (x: unknown): void => {
    if (found || x === null || typeof x !== 'object') return;
    if (Array.isArray(x)) {
      for (const y of x) visit(y);
      return;
    }
    const t = (x as Node).type;
    if (t === 'ThisExpression' || t === 'Super') {
      found = true;
      return;
    }
    if (t === 'FunctionExpression' || t === 'FunctionDeclaration' || t === 'ClassExpression' || t === 'ClassDeclaration') return;
    for (const [k, v] of Object.entries(x)) if (k !== 'type' && k !== 'start' && k !== 'end' && typeof v === 'object') visit(v);
  };
  visit(node);
  return found;
}
