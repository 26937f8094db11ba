/**
 * Classes for test/compiler-fallbacks.test.ts: one method per reason the method compiler
 * (runtime/compiler/lower.ts) gives for not compiling a method, each as small as the
 * reason allows and named after it. The methods are compiled, not run (most of them would
 * throw if they ran); the few that the test also runs through parallelDo say so.
 *
 * The six reasons test/compiler.test.ts covers (its `Odd` class) are not repeated here.
 */
import { array, bool, f64, i32, object, ref, type SmmoObject } from '../runtime/index.js';

/** A module `let`, written by methods (it may change after compilation). */
let bumps = 0;

export interface FallbacksLike extends SmmoObject {
  v: number;
  one(): number;
}

/** An unrelated class (no common base with Fallbacks but SmmoObject). */
export class Other extends object({ w: f64 }) {}

/** An abstract class without a concrete subclass among the runtime's classes. */
export abstract class Lonely extends object({ w: f64 }, { abstract: true }) {}

/** The base of Fallbacks: what its methods reach through `super`; abstract (create() of it fails). */
export abstract class FallbackBase extends object({ v: f64 }, { abstract: true }) {
  area(): number {
    return 2;
  }
  get half(): number {
    return 0.5;
  }
}

/** A class with two concrete subclasses, one of which has a setter (assignsSetterOfSomeClasses). */
export abstract class Knob extends object({ at: f64 }, { abstract: true }) {}
export class Dial extends Knob.extend({}) {
  set turn(x: number) {
    this.at = x;
  }
}
export class Slider extends Knob.extend({}) {}

/** One method per fallback reason (and `compiles`, which does compile: the harness's positive control). */
export class Fallbacks extends FallbackBase.extend({
  n: i32,
  flag: bool,
  peer: ref<FallbacksLike>('Fallbacks'),
  other: ref(() => Other),
  lonely: ref(() => Lonely),
  arr: array(f64, 3),
}) {
  /** A static private field (readsPrivateName). */
  static #SCALE = 2;
  /** A data property of the prototype (assigned below the class), not a field, method or getter. */
  declare unit: number;
  /** A built-in function (Math.random) installed as a method below the class: no source to compile. */
  declare isNativeCode: () => number;
  /** A class installed as a method below the class: constructors are not compiled. */
  declare isClass: () => void;

  /** Plain field arithmetic: compiles (the positive control). */
  compiles(): void {
    this.v = this.v * 2 + this.n;
  }

  /** A helper method for the rows below. */
  one(): number {
    return 1;
  }

  /** A getter whose value is a function. */
  get adder(): (x: number) => number {
    return (x) => x + 1;
  }

  /** A setter without a getter (compoundAssignsSetter). */
  set doubled(x: number) {
    this.v = 2 * x;
  }

  // ------------------------------------------------------------ the method itself

  /** An async method. */
  async isAsync(): Promise<void> {
    this.v = 1;
  }

  /** A generator method. */
  *isGenerator(): Generator<number> {
    yield this.v;
  }

  /** A static private field (`Fallbacks.#SCALE`): the method's source alone does not parse. */
  readsPrivateName(): void {
    this.v = Fallbacks.#SCALE;
  }

  /** A rest parameter of the method itself. */
  restParameter(...ks: number[]): void {
    this.v = ks.length;
  }

  /**
   * 13 calls of a local function that returns a number or a string: each call's result
   * changes type once, and each change lowers the method again, one more time than
   * MAX_RESTARTS (12) allows.
   */
  typesDoNotSettle(): void {
    const f = (k: number): number | string => {
      if (k > 0) return k;
      return '';
    };
    this.v = [f(1), f(1), f(1), f(1), f(1), f(1), f(1), f(1), f(1), f(1), f(1), f(1), f(1)].length;
  }

  // ------------------------------------------------------------ variables and their types

  /** One variable holding objects of two unrelated classes. */
  holdsUnrelatedClasses(): void {
    let o: SmmoObject | null = this.peer;
    if (this.n > 0) o = this.other;
    this.v = o === null ? 0 : 1;
  }

  /** One variable holding an object and a number. */
  holdsObjectAndNumber(): void {
    let o: unknown = this.peer;
    o = 1;
    this.v = typeof o === 'number' ? o : 0;
  }

  /** A `let` holding a function expression (reassigned, so that it cannot be const). */
  letHoldsFunction(): void {
    let f = (): number => 1;
    if (this.n > 0) f = (): number => 2;
    this.v = f();
  }

  /** `arguments` (not a name of the method's closure). */
  readsArguments(): void {
    this.v = arguments.length;
  }

  // ------------------------------------------------------------ calls and inlining

  /** 24 nested calls of local functions: deeper than MAX_INLINE_DEPTH (24) with the method. */
  nestsTooDeep(): void {
    const f1 = (): number => 1;
    const f2 = (): number => f1();
    const f3 = (): number => f2();
    const f4 = (): number => f3();
    const f5 = (): number => f4();
    const f6 = (): number => f5();
    const f7 = (): number => f6();
    const f8 = (): number => f7();
    const f9 = (): number => f8();
    const f10 = (): number => f9();
    const f11 = (): number => f10();
    const f12 = (): number => f11();
    const f13 = (): number => f12();
    const f14 = (): number => f13();
    const f15 = (): number => f14();
    const f16 = (): number => f15();
    const f17 = (): number => f16();
    const f18 = (): number => f17();
    const f19 = (): number => f18();
    const f20 = (): number => f19();
    const f21 = (): number => f20();
    const f22 = (): number => f21();
    const f23 = (): number => f22();
    const f24 = (): number => f23();
    this.v = f24();
  }

  /** An object pattern with a computed key over an smmo object (a computed member of it). */
  objectPatternComputedKey(): void {
    const key = 'v';
    const { [key]: x } = this;
    this.v = x;
  }

  /** An object pattern with no properties (it only tests that the value is not null). */
  emptyObjectPattern(): void {
    const {} = this;
    this.v = 1;
  }

  /** An array pattern with no elements, over an iterable that is not a `[…]` literal. */
  emptyArrayPattern(): void {
    const [] = 'ab';
    this.v = 1;
  }

  /** A var declaration with a pattern. */
  varPattern(): void {
    var { v } = this; // eslint-disable-line no-var
    this.v = v + 1;
  }

  /** An array pattern over an inline array (a view, not iterable). */
  arrayPatternOfInlineArray(): void {
    const [a, b] = this.arr as unknown as number[];
    this.v = a! + b!;
  }

  /** An array pattern over an smmo object. */
  arrayPatternOfObject(): void {
    const [a] = this as unknown as number[];
    this.v = a!;
  }

  /** A function handed to JavaScript that uses a let variable of the method. */
  closureReadsLet(): void {
    let m = 1;
    m += this.n;
    this.v = [1, 2].map((x) => x + m).length;
  }

  /** A function handed to JavaScript that reads `this`. */
  closureReadsThis(): void {
    this.v = [1, 2].map((x) => x + this.n).length;
  }

  /** A function handed to JavaScript that reads `this` through a const. */
  closureReadsThisAlias(): void {
    const me = this; // eslint-disable-line @typescript-eslint/no-this-alias
    this.v = [1, 2].map((x) => x + me.n).length;
  }

  /** A function handed to JavaScript that reads an inline array of this object. */
  closureReadsInlineArray(): void {
    const a = this.arr;
    this.v = [0, 1].map((i) => a.get(i)).length;
  }

  /** A function handed to JavaScript that reads a deviceDo callback's object (interpreted: a view that moves on). */
  closureReadsObject(): void {
    this.runtime.deviceDo(Other, (o) => {
      this.v += [1].map((x) => x + o.w)[0]!;
    });
  }

  /** A function handed to JavaScript that calls an arrow of the method that reads `this`. */
  closureCallsThisReader(): void {
    const plus = (x: number): number => x + this.n;
    this.v = [1, 2].map((x) => plus(x)).length;
  }

  /** A function handed to JavaScript that creates objects. */
  closureCreates(): void {
    const ctx = this.runtime;
    [1].forEach(() => ctx.create(Other));
  }

  /** A function handed to JavaScript that makes another one. */
  closureNested(): void {
    this.v = [[1]].map((r) => r.map((x) => x + 1)).length;
  }

  /** A member of a function expression (`f.length`). */
  memberOfFunction(): void {
    const f = (): number => 1;
    this.v = f.length;
  }

  /** A spread argument to a local function, which the compiler inlines. */
  spreadArgument(): void {
    const xs: [number, number] = [1, 2];
    const add = (a: number, b: number): number => a + b;
    this.v = add(...xs);
  }

  /** An optional call (`f?.()`). */
  optionalCall(): void {
    this.v = Math.abs?.(-1);
  }

  /** A call of a value that is not a function (Math). */
  callsNonFunction(): void {
    this.v = (Math as unknown as () => number)();
  }

  /** An smmo class called without new. */
  callsClass(): void {
    (Other as unknown as () => void)();
  }

  /** A getter's value called as a function (`this.adder(1)`). */
  callsGetter(): void {
    this.v = this.adder(1);
  }

  /** A method read as a value (`typeof this.one`). */
  methodAsValue(): void {
    this.v = typeof this.one === 'function' ? 1 : 0;
  }

  /** destroy read as a value (`typeof this.destroy`). */
  destroyAsValue(): void {
    this.v = typeof this.destroy === 'function' ? 1 : 0;
  }

  // ------------------------------------------------------------ super

  /** A computed super member (`super['area']()`). */
  computedSuperMember(): void {
    this.v = super['area']();
  }

  /** A getter read through super (`super.half`). */
  superGetter(): void {
    this.v = super.half;
  }

  /** A method of Object.prototype called through super: built-in, no source. */
  superNative(): void {
    this.v = super.toString().length;
  }

  // ------------------------------------------------------------ statements

  /** A switch case label that calls a method. */
  caseCallsFunction(): void {
    switch (this.n) {
      case this.one():
        this.v = 1;
    }
  }

  /** for…in (runs without throwing: also used through parallelDo). */
  usesForIn(): void {
    for (const k in { a: 1 }) this.v += k.length;
  }

  /** A class declaration in the method. */
  declaresClass(): void {
    class Local {
      k = 1;
    }
    this.v = new Local().k;
  }

  /** A debugger statement. */
  usesDebugger(): void {
    debugger;
  }

  // ------------------------------------------------------------ expressions

  /** An object literal with a computed key (runs without throwing: also used through parallelDo). */
  objectComputedKey(): void {
    const k = 'a';
    this.v = { [k]: 1 }.a;
  }

  /** A class expression. */
  classExpression(): void {
    const K = class {
      k = 1;
    };
    this.v = new K().k;
  }

  /** A tagged template (String.raw`…`). */
  taggedTemplate(): void {
    this.v = String.raw`a`.length;
  }

  /** import.meta. */
  readsImportMeta(): void {
    this.v = import.meta.url.length;
  }

  /** A dynamic import(). */
  dynamicImport(): void {
    void import('node:path');
  }

  /** The `delete` operator on something other than a property. */
  deletesNonProperty(): void {
    // @ts-expect-error: the operand of delete is not a property (valid JavaScript, true)
    this.v = delete this ? 1 : 0;
  }

  /** An smmo object as the operand of unary minus. */
  negatesObject(): void {
    this.v = -(this as unknown as number);
  }

  /** An smmo object where a number is needed (an argument of Math.abs). */
  objectAsNumber(): void {
    this.v = Math.abs(this as unknown as number);
  }

  /** The runtime as an operand of `===`. */
  runtimeOperand(): void {
    this.v = this.runtime === undefined ? 1 : 0;
  }

  /** instanceof a class that is only known when the method runs (an argument). */
  instanceofUnknownClass(cls: typeof Other): void {
    this.v = this instanceof cls ? 1 : 0;
  }

  /** x.is(y) with a number. */
  isOfNumber(): void {
    this.v = this.is(1 as unknown as Fallbacks) ? 1 : 0;
  }

  // ------------------------------------------------------------ members of objects

  /** A computed member of an smmo object, read (`this['n']`). */
  computedMember(): void {
    this.v = this['n'];
  }

  /** A name that is neither a field nor a method of the class. */
  missingMember(): void {
    this.v = (this as unknown as { missing: number }).missing;
  }

  /** A data property of the prototype (`unit`), read. */
  readsPrototypeValue(): void {
    this.v = this.unit;
  }

  /** A member of an object whose class has no concrete subclass. */
  noConcreteClass(): void {
    this.v = this.lonely!.w;
  }

  /** An inline array indexed with brackets. */
  indexesInlineArray(): void {
    this.v = (this.arr as unknown as number[])[0]!;
  }

  /** An inline array's method other than get and set (`fill`). */
  inlineArrayMethod(): void {
    (this.arr as unknown as number[]).fill(0);
  }

  /** An inline array's get() without an index. */
  getWithoutIndex(): void {
    this.v = (this.arr as unknown as { get(): number }).get();
  }

  // ------------------------------------------------------------ assignments

  /** An assignment to a computed member of an smmo object (`this['v'] = …`). */
  assignsComputedMember(): void {
    this['v'] = 1;
  }

  /** `+=` through a setter that has no getter. */
  compoundAssignsSetter(): void {
    this.doubled += 3;
  }

  /** An assignment through a setter that one concrete class of the reference's class has and the other lacks. */
  assignsSetterOfSomeClasses(): void {
    const k = this.runtime.get(Knob, this.n);
    (k as Dial).turn = 1;
  }

  /** An assignment to a property the class does not have. */
  addsProperty(): void {
    (this as unknown as { extra: number }).extra = 1;
  }

  /** An assignment to an inline-array field itself. */
  assignsInlineArray(): void {
    (this as unknown as { arr: number[] }).arr = [];
  }

  /** An assignment to a property of an inline array (`length`). */
  assignsArrayProperty(): void {
    (this.arr as unknown as { length: number }).length = 3;
  }

  /** A number stored into a reference field. */
  numberIntoReference(): void {
    this.peer = 1 as unknown as Fallbacks;
  }

  /** An smmo object stored into a number field. */
  objectIntoNumberField(): void {
    this.v = this as unknown as number;
  }

  /** `+=` on a reference field. */
  compoundAssignReference(): void {
    (this as unknown as { peer: number }).peer += 1;
  }

  /** `||=` on a computed member (of a JavaScript array). */
  logicalAssignComputed(): void {
    const xs = [this.v];
    xs[0] ||= 1;
    this.v = xs[0]!;
  }

  /** An smmo object added to a local number with `+=`. */
  addsObjectToLocal(): void {
    let x = 0;
    x += this as unknown as number;
    this.v = x;
  }

  /** A destructuring assignment whose default reads a variable that holds objects and numbers. */
  patternAssignmentMixedTypes(): void {
    let o: unknown = this; // eslint-disable-line @typescript-eslint/no-this-alias
    [o = 1] = [undefined];
    this.v = o as number;
  }

  /** An assignment to a module `let`. */
  assignsModuleLet(): void {
    bumps = 1;
  }

  /** `++` of a module `let`. */
  incrementsModuleLet(): void {
    this.v = bumps++;
  }

  /** `++` of a variable that holds an object. */
  incrementsObject(): void {
    let o = this.peer as unknown as number;
    o++;
    this.v = o;
  }

  /** `++` of a bool field. */
  incrementsBoolField(): void {
    (this as unknown as { flag: number }).flag++;
  }

  /** An assignment to the deviceDo callback's parameter (legal; the reason calls the parameter a constant). */
  assignsDeviceDoParameter(): void {
    this.runtime.deviceDo(Other, (o) => {
      if (o.w < 0 && this.other !== null) o = this.other;
      this.v += o.w;
    });
  }

  // ------------------------------------------------------------ the runtime's operations

  /** A computed member of the runtime (`this.runtime['count']`). */
  computedRuntimeMember(): void {
    this.v = this.runtime['count'](Other);
  }

  /** A member of the runtime other than create, destroy, deviceDo, get and count. */
  runtimeOtherMember(): void {
    this.v = (this.runtime as unknown as { now(): number }).now();
  }

  /** count() without a class. */
  runtimeCallWithoutClass(): void {
    this.v = (this.runtime.count as () => number)();
  }

  /** count() of a class given as an argument (known only when the method runs). */
  classNotKnown(cls: typeof Other): void {
    this.v = this.runtime.count(cls);
  }

  /** create() of an abstract class. */
  createsAbstract(): void {
    this.runtime.create(FallbackBase as unknown as typeof Other);
  }

  /** create() with its init object in a variable. */
  createInitVariable(): void {
    const init = { w: 1 };
    this.runtime.create(Other, init);
  }

  /** create() with a computed key in the init object. */
  createComputedKey(): void {
    this.runtime.create(Other, { ['w']: 1 });
  }

  /** create() with a key that is no field of the class. */
  createUnknownField(): void {
    this.runtime.create(Other, { nope: 1 } as unknown as { w: number });
  }

  /** create() with an inline array's values in a variable. */
  createArrayNotLiteral(): void {
    const xs = [1, 2, 3];
    this.runtime.create(Fallbacks, { arr: xs });
  }

  /** create() with more values than the inline array has elements. */
  createArrayTooLong(): void {
    this.runtime.create(Fallbacks, { arr: [1, 2, 3, 4] });
  }

  /** create() with a hole in an inline array's values. */
  createArrayHole(): void {
    this.runtime.create(Fallbacks, { arr: [1, , 3] as number[] });
  }

  /** destroy() of something that is not an smmo object (null). */
  destroysNonObject(): void {
    this.runtime.destroy(null as unknown as SmmoObject);
  }

  /** destroy() of an object taken out of a JavaScript array. */
  destroysFromArray(): void {
    this.runtime.destroy([this][0]!);
  }

  /** destroy() without an argument. */
  destroyWithoutObject(): void {
    (this.runtime.destroy as () => void)();
  }

  /** get() without a handle. */
  getWithoutHandle(): void {
    this.v = (this.runtime.get as (c: typeof Other) => Other)(Other).w;
  }

  /** deviceDo() with its callback in a variable. */
  deviceDoFunctionVariable(): void {
    const f = (o: Other): void => {
      this.v += o.w;
    };
    this.runtime.deviceDo(Other, f);
  }

  /** deviceDo() with a rest parameter. */
  deviceDoRestParameter(): void {
    this.runtime.deviceDo(Other, (...os: Other[]) => {
      this.v += os.length;
    });
  }
}

Fallbacks.prototype.unit = 2;
Fallbacks.prototype.isNativeCode = Math.random;
Fallbacks.prototype.isClass = class {} as unknown as () => void;

export const CLASSES = [Other, Lonely, FallbackBase, Fallbacks, Knob, Dial, Slider];
