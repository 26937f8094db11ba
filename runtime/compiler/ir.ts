/**
 * The intermediate form of a compiled method: structured, typed, one tree per
 * (concrete class, method).
 *
 * What lowering (lower.ts) has resolved by the time a method is in this form:
 *  - every smmo object is a *handle* (u32; 0 = null) with a static class, never a view;
 *  - every field access is a Load/Store of a named field of a static class at an object
 *    expression (element index for inline arrays); the byte offsets per concrete class
 *    come from the TypeLayout (runtime/layout.ts), so every backend addresses the heap
 *    the same way;
 *  - `this` is the lane's own object (Self) of the pass's concrete class;
 *  - method and helper calls are inlined (Block with a label, result in a Local); virtual
 *    calls on objects of several concrete classes are a Switch on the block's type id;
 *  - deviceDo is a ForEach over the objects of one concrete class that the pass started
 *    with; create/destroy are Alloc/Free of the allocator; instanceof is IsA;
 *  - control flow is structured: Block/Loop with labels, Break/Continue to a label,
 *    If, Switch, ReturnLane (this lane is done).
 *
 * Values (Ty): JavaScript numbers ('num', f64 semantics: the form keeps JavaScript's
 * arithmetic exactly, so that a compiled method gives bit-identical results on the JS
 * backend), booleans, object handles ('obj'), the inline array of an object ('arr', whose
 * run-time value is the object's handle), the thread context ('ctx') and 'dyn': any other
 * JavaScript value (strings, typed arrays, results of calls into code that is not
 * compiled). Dyn nodes (DynCall, DynMember, …) and Box/Unbox (handle ⇄ view at the
 * boundary to such code) exist on the JS backend only; a method whose form contains
 * them is marked `portable: false` — the WGSL and WASM emitters that will read this form
 * accept portable methods only. Numeric width hints for those emitters are on every
 * Load/Store (the field's kind); locals stay 'num'.
 */
import type { FieldLayout, TypeLayout } from '../layout.js';

export type Ty =
  | { readonly k: 'num' }
  | { readonly k: 'bool' }
  | { readonly k: 'str' }
  | { readonly k: 'undef' }
  | { readonly k: 'null' }
  | { readonly k: 'obj'; readonly cls: TypeLayout }
  | { readonly k: 'arr'; readonly cls: TypeLayout; readonly field: string }
  | { readonly k: 'ctx' }
  | { readonly k: 'dyn' };

export const NUM: Ty = { k: 'num' };
export const BOOL: Ty = { k: 'bool' };
export const STR: Ty = { k: 'str' };
export const UNDEF: Ty = { k: 'undef' };
export const NULL: Ty = { k: 'null' };
export const CTX: Ty = { k: 'ctx' };
export const DYN: Ty = { k: 'dyn' };
export const objTy = (cls: TypeLayout): Ty => ({ k: 'obj', cls });
export const arrTy = (cls: TypeLayout, field: string): Ty => ({ k: 'arr', cls, field });

/** A field of a static class; the concrete classes it may be stored in, with their layouts. */
export interface FieldRef {
  /** The static class the access was typed against. */
  readonly cls: TypeLayout;
  readonly name: string;
  /** Per concrete type id of `cls`: that type's layout of the field. */
  readonly layouts: ReadonlyMap<number, FieldLayout>;
  readonly kind: FieldLayout['kind'];
  /** 0 for a scalar field, else the inline array's length. */
  readonly length: number;
  /** References: the class the field refers to. */
  readonly target: TypeLayout | null;
}

export type BinaryOp =
  | '+'
  | '-'
  | '*'
  | '/'
  | '%'
  | '**'
  | '|'
  | '&'
  | '^'
  | '<<'
  | '>>'
  | '>>>'
  | '=='
  | '!='
  | '==='
  | '!=='
  | '<'
  | '<='
  | '>'
  | '>='
  | 'instanceof'
  /** JavaScript only: `key in value` on JavaScript values (an smmo object as its view). */
  | 'in';
/** 'delete' (JavaScript only) applies to a dynMember or dynIndex. */
export type UnaryOp = '-' | '+' | '!' | '~' | 'typeof' | 'void' | 'delete';

export type Expr =
  | { readonly op: 'const'; readonly value: number | boolean | string | null | undefined }
  /** A local variable (declared by a Let). */
  | { readonly op: 'local'; readonly id: number }
  /** The lane's object (`this` of the method being compiled). */
  | { readonly op: 'self' }
  /** Argument `index` of the do-all. */
  | { readonly op: 'arg'; readonly index: number }
  /** The thread context (`this.runtime`). */
  | { readonly op: 'ctx' }
  | { readonly op: 'unary'; readonly o: UnaryOp; readonly a: Expr }
  | { readonly op: 'binary'; readonly o: BinaryOp; readonly a: Expr; readonly b: Expr }
  | { readonly op: 'logical'; readonly o: '&&' | '||' | '??'; readonly a: Expr; readonly b: Expr }
  | { readonly op: 'cond'; readonly c: Expr; readonly a: Expr; readonly b: Expr }
  /** Assign a local; the expression's value is the value assigned. */
  | { readonly op: 'setLocal'; readonly id: number; readonly value: Expr }
  /** ++/-- on a local; value as JavaScript's prefix/postfix forms. */
  | { readonly op: 'updateLocal'; readonly id: number; readonly delta: 1 | -1; readonly prefix: boolean }
  /**
   * Read field `field` (element `elem` of an inline array) of the object `obj` (a handle,
   * non-null). `inBounds`: the lowering proved 0 ≤ elem < length (no check needed).
   */
  | { readonly op: 'load'; readonly field: FieldRef; readonly obj: Expr; readonly elem: Expr | null; readonly inBounds?: boolean }
  /** Write it; the expression's value is `value` (as JavaScript assignment). */
  | {
      readonly op: 'store';
      readonly field: FieldRef;
      readonly obj: Expr;
      readonly elem: Expr | null;
      readonly value: Expr;
      readonly inBounds?: boolean;
    }
  /** Concrete type id of the block holding `obj` (non-null). */
  | { readonly op: 'typeOf'; readonly obj: Expr }
  /** Whether `obj` is non-null and of one of these concrete type ids. */
  | { readonly op: 'isA'; readonly obj: Expr; readonly typeIds: readonly number[] }
  /** A new object of concrete class `cls`, every field zero (Alloc + zeroing). */
  | { readonly op: 'alloc'; readonly cls: TypeLayout }
  /** Delete object `obj` (non-null; allocator release); the value is undefined. */
  | { readonly op: 'free'; readonly obj: Expr }
  /** Math.<name>(...args): pure numeric functions. */
  | { readonly op: 'math'; readonly name: string; readonly args: readonly Expr[] }
  /** Fail unless `obj` is non-null: the value is `obj` (a null dereference throws TypeError, as in JavaScript). */
  | { readonly op: 'nonNull'; readonly obj: Expr; readonly what: string }
  /** Check a handle given as a number (ctx.get): non-null, inside the heap, in a used block; value: the handle. */
  | { readonly op: 'checkHandle'; readonly value: Expr; readonly cls: TypeLayout }
  // ---- JS backend only (portable: false) --------------------------------------------------
  /** A JavaScript value captured at compile time (a function, class, typed array, …), by index. */
  | { readonly op: 'static'; readonly index: number; readonly label: string }
  /** A global variable that may change (console, process …): read where it is used, as the method does (JavaScript only). */
  | { readonly op: 'global'; readonly name: string }
  | { readonly op: 'dynMember'; readonly obj: Expr; readonly name: string; readonly optional: boolean }
  | { readonly op: 'dynIndex'; readonly obj: Expr; readonly index: Expr; readonly optional: boolean }
  | { readonly op: 'dynCall'; readonly callee: Expr; readonly args: readonly Expr[]; readonly optional: boolean }
  /** callee.name(...args), `this` bound to `obj`. */
  | { readonly op: 'dynMethodCall'; readonly obj: Expr; readonly name: string; readonly args: readonly Expr[]; readonly optional: boolean }
  | { readonly op: 'dynNew'; readonly callee: Expr; readonly args: readonly Expr[] }
  /** An array literal; items may be Spread (`...xs`) or Hole (`[a, , b]`). */
  | { readonly op: 'dynArray'; readonly items: readonly Expr[] }
  /** An object literal; an entry whose value is a Spread is `...value` (its key is not used). */
  | { readonly op: 'dynObject'; readonly entries: readonly (readonly [string, Expr])[] }
  /** `...arg` as an item of dynArray, an entry of dynObject or an argument of a dyn call or new. */
  | { readonly op: 'spread'; readonly arg: Expr }
  /** An elided item of an array literal. */
  | { readonly op: 'hole' }
  /**
   * A function written in the method, made as a JavaScript function (handed to JavaScript,
   * stored, returned). `captures`: its locals that hold the values of the method's (const)
   * variables where it is made; `params` receive its arguments (the last one the rest when
   * `rest`); `locals` are its own; its body returns through `label`, the value in `result`.
   */
  | {
      readonly op: 'closure';
      readonly arrow: boolean;
      readonly captures: readonly (readonly [number, Expr])[];
      readonly params: readonly number[];
      readonly rest: boolean;
      readonly locals: readonly number[];
      readonly body: readonly Stmt[];
      readonly label: string;
      readonly result: number;
    }
  | { readonly op: 'dynTemplate'; readonly quasis: readonly string[]; readonly exprs: readonly Expr[] }
  | { readonly op: 'dynAssign'; readonly target: Expr; readonly o: '=' | `${BinaryOp}=` | '&&=' | '||=' | '??='; readonly value: Expr }
  | { readonly op: 'dynUpdate'; readonly target: Expr; readonly delta: 1 | -1; readonly prefix: boolean }
  /** A view of handle `obj` (null for 0): an smmo object handed to code that is not compiled. */
  | { readonly op: 'box'; readonly obj: Expr }
  /** An inline-array view of field `field` of `obj`, for code that is not compiled. */
  | { readonly op: 'boxArr'; readonly obj: Expr; readonly field: string }
  /** The handle of a view (0 for null/undefined) from code that is not compiled; checked to be an object of this runtime and of `cls`. */
  | { readonly op: 'unbox'; readonly value: Expr; readonly cls: TypeLayout }
  /** `(a, b, …)`: evaluate in order, the value is the last. */
  | { readonly op: 'seq'; readonly items: readonly Expr[] };

export type Stmt =
  | { readonly s: 'let'; readonly id: number; readonly name: string; readonly init: Expr | null }
  | { readonly s: 'expr'; readonly e: Expr }
  | { readonly s: 'if'; readonly c: Expr; readonly then: readonly Stmt[]; readonly else: readonly Stmt[] }
  /** A block that `break label` leaves. */
  | { readonly s: 'block'; readonly label: string; readonly body: readonly Stmt[] }
  /** Runs `body` until a break; `continue label` starts the next round. */
  | { readonly s: 'loop'; readonly label: string; readonly body: readonly Stmt[] }
  /**
   * JavaScript's `for (local of iterable)` (JavaScript only): the iterator protocol as the
   * method runs it, closing the iterator when a break, return or throw leaves the loop;
   * `continue label` starts the next round, `break label` leaves it.
   */
  | { readonly s: 'forOf'; readonly label: string; readonly id: number; readonly iterable: Expr; readonly body: readonly Stmt[] }
  /**
   * JavaScript's try statement (JavaScript only): `param` (a local, or none) receives what
   * was thrown before `handler` runs; `finalizer` runs however the body or handler is left.
   */
  | {
      readonly s: 'try';
      readonly body: readonly Stmt[];
      readonly param: number | null;
      readonly handler: readonly Stmt[] | null;
      readonly finalizer: readonly Stmt[] | null;
    }
  | { readonly s: 'break'; readonly label: string }
  | { readonly s: 'continue'; readonly label: string }
  /** JavaScript's switch (strict equality, fall-through); `break label` leaves it. */
  | {
      readonly s: 'switch';
      readonly label: string;
      readonly on: Expr;
      readonly cases: readonly { readonly test: Expr | null; readonly body: readonly Stmt[] }[];
    }
  /**
   * deviceDo over the objects of concrete type `typeId` that the running pass started
   * with (the pass's block list and iteration bitmaps); `var` is the object.
   * `continue label` goes to the next object, `break label` ends the loop.
   */
  | { readonly s: 'forEach'; readonly typeId: number; readonly var: number; readonly label: string; readonly body: readonly Stmt[] }
  | { readonly s: 'throw'; readonly e: Expr }
  /** This lane is done (`return` in the method itself). */
  | { readonly s: 'returnLane' };

export interface LocalInfo {
  readonly id: number;
  readonly name: string;
  readonly ty: Ty;
}

/** One compiled method: the lane body of a do-all over `cls`. */
export interface MethodIR {
  readonly cls: TypeLayout;
  readonly method: string;
  readonly arity: number;
  readonly body: readonly Stmt[];
  readonly locals: readonly LocalInfo[];
  /** Compile-time values the body refers to (Expr 'static'), by index. */
  readonly statics: readonly unknown[];
  /** Whether the body allocates (Alloc) or deletes (Free). */
  readonly allocates: boolean;
  readonly frees: boolean;
  /** Whether every node is portable (no Dyn/Box/Unbox/static values): see the file header. */
  readonly portable: boolean;
  /** Concrete type ids the body iterates with deviceDo. */
  readonly iterates: readonly number[];
}

export function tyName(t: Ty): string {
  switch (t.k) {
    case 'obj':
      return `obj<${t.cls.name}>`;
    case 'arr':
      return `arr<${t.cls.name}.${t.field}>`;
    default:
      return t.k;
  }
}
