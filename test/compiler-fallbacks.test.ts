/**
 * The method compiler's fallback reasons (runtime/compiler/lower.ts `this.fail(…)` and
 * `new CompileFallback(…)`, and the parse failures of runtime/compiler/parse.ts that reach
 * them): for every reason a user's method can reach, one method of
 * test/compiler-fallbacks.fixtures.ts that reaches it, compiled without being run; the
 * method must not compile, and its reason must name the construct. The five reasons that
 * test/compiler.test.ts covers (FALLBACKS, class Odd) are not repeated: comparing objects
 * with ===, reading a module `let`, recursion, a rest element in an object
 * pattern, an object in arithmetic ('+').
 *
 * Sites of lower.ts a user's method cannot reach (internal invariants), with their text:
 *
 *  - `${t.name} has no method '${method}'` (lowerMethod): parallelDo/parallelNew check that
 *    every concrete class has the method before anything is compiled (runtime.ts checkDoAll).
 *  - `a ${tyName(v.t)} value is used where an object of ${to.cls.name} is expected` (coerce):
 *    every caller joins the types first (assignLocal, conditional, logical: join fails with
 *    "holds both …"; storeValue checks the kinds itself), so a non-object never reaches an
 *    object place.
 *  - `continue to a label that is not a loop` (jump): `continue L` where L labels a block,
 *    an `if` or a switch is a SyntaxError in JavaScript, so such a method never loads.
 *  - `break outside a loop` / `continue outside a loop` (jump): an unlabelled break or continue
 *    outside a loop (or switch) is a SyntaxError, and every loop, switch and labelled
 *    statement (a labelled `if` too) pushes its target.
 *  - `an unsupported member access` (member): the switch before it returns or fails in
 *    every case.
 *  - `runtime.${name}` (ctxCall): a ctxOp is only made for the five names the switch handles.
 *  - `++/-- of this target` (update): an update's argument is an identifier or a member
 *    expression in any program that parses (parentheses are not kept by acorn).
 *  - `for…of declares one variable or pattern` (forOf): `for (let a of x, b of y)` and
 *    `for (let a, b of xs)` do not parse.
 *  - `for await…of is not supported` (forOf): `for await` only parses in an async function,
 *    which checkShape rejects first ("is async").
 *  - describeNode's `await` and `yield` (expr/stmt defaults): they only parse in an async or
 *    generator function, which checkShape rejects before its body is lowered ("is async",
 *    "is a generator"); `with` only parses in sloppy code, and class bodies and modules are strict.
 *  - destructuring (bind, assign): `… as a destructuring target is not supported`, `an
 *    assignment to …` and `the operator … with a pattern`: a pattern's targets are
 *    identifiers, member expressions and nested patterns, and a pattern is only assigned
 *    with `=`, in any program that parses.
 *  - `` `super` outside a method `` (member): only a module function can have `super` without
 *    an smmo class around it (a method taken out of an object literal); inlining such a
 *    function fails, and a function that cannot be inlined is called as JavaScript.
 *  - parse.ts's `its source is not a function` and `its source is not available`:
 *    Function.prototype.toString of a function on a prototype always gives a function,
 *    method or class text (the class text is reachable: isClass).
 */
import test from 'ava';
import { createRuntime, type Runtime } from '../index.js';
import type { CompileOutcome } from '../runtime/compiler/index.js';
import type { SmmoClass } from '../runtime/schema.js';
import type { ThreadContext } from '../runtime/thread.js';
import { CLASSES, Fallbacks } from './compiler-fallbacks.fixtures.js';

type Row = readonly [cls: SmmoClass, method: string, reason: RegExp];

/** [class, method, the distinctive part of its reason], grouped as the fixture's methods are. */
const ROWS: readonly Row[] = [
  // the method itself
  [Fallbacks, 'isAsync', /Fallbacks\.isAsync is async/],
  [Fallbacks, 'isGenerator', /Fallbacks\.isGenerator is a generator/],
  [Fallbacks, 'readsPrivateName', /Fallbacks\.readsPrivateName: its source does not parse/],
  [Fallbacks, 'isNativeCode', /Fallbacks\.isNativeCode: it is native code/],
  [Fallbacks, 'isClass', /Fallbacks\.isClass: it is a class \(constructors are not compiled\)/],
  [Fallbacks, 'restParameter', /parameter 1 of restParameter is a rest parameter/],
  [Fallbacks, 'typesDoNotSettle', /the types of its variables did not settle/],
  // variables and their types
  [Fallbacks, 'holdsUnrelatedClasses', /'o' holds objects of unrelated classes Fallbacks and Other/],
  [
    Fallbacks,
    'holdsObjectAndNumber',
    /'o' holds both obj<Fallbacks> and num values; keep smmo objects and other values in separate variables/,
  ],
  [Fallbacks, 'letHoldsFunction', /'f' is declared with let and holds a function expression; declare it const/],
  [Fallbacks, 'readsArguments', /`arguments` is not supported in compiled methods; name the parameters/],
  // calls and inlining
  [Fallbacks, 'nestsTooDeep', /calls nest deeper than 24 levels \(a local function\)/],
  // destructuring
  [Fallbacks, 'objectPatternComputedKey', /a computed member of an object of Fallbacks \(at `\[key\]: x`\)/],
  [Fallbacks, 'emptyObjectPattern', /an empty object pattern/],
  [Fallbacks, 'emptyArrayPattern', /an empty array pattern/],
  [Fallbacks, 'varPattern', /a var declaration with a pattern \(declare it with const or let\)/],
  [
    Fallbacks,
    'arrayPatternOfInlineArray',
    /an array pattern takes an iterable.*this is an inline array, which is not iterable \(read it with \.get\(i\)\)/,
  ],
  [Fallbacks, 'arrayPatternOfObject', /an array pattern takes an iterable.*this is a obj<Fallbacks> value, which is not iterable/],
  [Fallbacks, 'patternAssignmentMixedTypes', /'o' holds both obj<Fallbacks> and num values/],
  [Fallbacks, 'closureReadsLet', /a function handed to JavaScript uses 'm', a variable the method may change/],
  [Fallbacks, 'closureReadsThis', /a function handed to JavaScript reads 'this' \(or super\); copy what it needs into const variables/],
  [Fallbacks, 'closureReadsThisAlias', /a function handed to JavaScript reads 'me', an smmo object or inline array of the method/],
  [Fallbacks, 'closureReadsInlineArray', /a function handed to JavaScript reads 'a', an smmo object or inline array of the method/],
  [
    Fallbacks,
    'closureReadsObject',
    /a function handed to JavaScript reads 'o', an smmo object or inline array of the method; copy the values it needs \(or its handle\)/,
  ],
  [Fallbacks, 'closureCallsThisReader', /a function handed to JavaScript calls 'plus', which reads 'this'/],
  [Fallbacks, 'closureCreates', /a function handed to JavaScript creates or deletes objects or runs deviceDo/],
  [Fallbacks, 'closureNested', /a function handed to JavaScript makes another one/],
  [Fallbacks, 'memberOfFunction', /member 'length' of a function expression/],
  [Fallbacks, 'spreadArgument', /spread arguments \(\.\.\.xs\) to a function expression; pass the values one by one/],
  [Fallbacks, 'optionalCall', /optional calls \(f\?\.\(\)\) are not supported/],
  [Fallbacks, 'callsNonFunction', /Math is not a function/],
  [Fallbacks, 'callsClass', /class Other is called without new/],
  [Fallbacks, 'callsGetter', /Fallbacks\.adder is a getter, not a method/],
  [Fallbacks, 'methodAsValue', /the method Fallbacks\.one is used as a value/],
  [Fallbacks, 'destroyAsValue', /Fallbacks\.destroy is used as a value/],
  // super
  [Fallbacks, 'computedSuperMember', /a computed super member/],
  [Fallbacks, 'superGetter', /super\.half is not a method/],
  [Fallbacks, 'superNative', /super\.toString: it is native code/],
  // statements
  [Fallbacks, 'caseCallsFunction', /a case label that calls a function/],
  [Fallbacks, 'usesForIn', /for…in is not supported in compiled methods/],
  [Fallbacks, 'declaresClass', /a class declaration is not supported in compiled methods/],
  [Fallbacks, 'usesDebugger', /debugger is not supported in compiled methods/],
  // expressions
  [Fallbacks, 'objectComputedKey', /object literals with computed keys, methods or accessors are not supported/],
  [Fallbacks, 'classExpression', /a class expression is not supported in compiled methods/],
  [Fallbacks, 'taggedTemplate', /a tagged template is not supported in compiled methods/],
  [Fallbacks, 'readsImportMeta', /new\.target \/ import\.meta is not supported in compiled methods/],
  [Fallbacks, 'dynamicImport', /import\(\) is not supported in compiled methods/],
  [Fallbacks, 'deletesNonProperty', /'delete' of something other than a property/],
  [Fallbacks, 'negatesObject', /an smmo object is the operand of '-'/],
  [Fallbacks, 'objectAsNumber', /an smmo object is used as a number/],
  [Fallbacks, 'runtimeOperand', /the runtime is an operand of '==='/],
  [Fallbacks, 'instanceofUnknownClass', /instanceof needs a class known when the method is compiled/],
  [Fallbacks, 'isOfNumber', /x\.is\(y\) takes an smmo object or null/],
  // members of objects
  [Fallbacks, 'computedMember', /a computed member of an object of Fallbacks/],
  [Fallbacks, 'missingMember', /Fallbacks has no field or method 'missing'/],
  [Fallbacks, 'readsPrototypeValue', /Fallbacks\.unit is not a field, method or getter/],
  [Fallbacks, 'noConcreteClass', /Lonely has no concrete class/],
  [Fallbacks, 'indexesInlineArray', /inline arrays are read with \.get\(i\) and written with \.set\(i, v\)/],
  [Fallbacks, 'inlineArrayMethod', /inline arrays have get, set and length, not 'fill'/],
  [Fallbacks, 'getWithoutIndex', /Fallbacks\.arr\.get needs an index/],
  // assignments
  [Fallbacks, 'assignsComputedMember', /a computed member of an smmo object/],
  [Fallbacks, 'compoundAssignsSetter', /'\+=' on Fallbacks\.doubled, a setter without a getter in some concrete class/],
  [Fallbacks, 'assignsSetterOfSomeClasses', /Knob\.turn is a setter in some of its concrete classes only/],
  [Fallbacks, 'addsProperty', /Fallbacks has no field 'extra' \(smmo objects get no new properties\)/],
  [Fallbacks, 'assignsInlineArray', /the inline array Fallbacks\.arr is written with \.set\(i, v\)/],
  [Fallbacks, 'assignsArrayProperty', /an assignment to a property of an inline array or of the runtime/],
  [Fallbacks, 'numberIntoReference', /a num value is stored into the reference Fallbacks\.peer; store an object or null/],
  [Fallbacks, 'objectIntoNumberField', /an smmo object is stored into Fallbacks\.v, a f64 field/],
  [Fallbacks, 'compoundAssignReference', /'\+=' on the reference Fallbacks\.peer/],
  [Fallbacks, 'logicalAssignComputed', /the operator \|\|= on a computed member/],
  [Fallbacks, 'addsObjectToLocal', /an smmo object is an operand of '\+='/],
  [Fallbacks, 'assignsModuleLet', /an assignment to 'bumps', which is not a variable of the method/],
  [Fallbacks, 'incrementsModuleLet', /\+\+\/-- of 'bumps', which is not a variable of the method/],
  [Fallbacks, 'incrementsObject', /\+\+\/-- of an smmo object/],
  [Fallbacks, 'incrementsBoolField', /\+\+\/-- of a bool field/],
  [Fallbacks, 'assignsDeviceDoParameter', /an assignment to 'o', the object a deviceDo callback visits.*use a let variable/],
  // the runtime's operations
  [Fallbacks, 'computedRuntimeMember', /a computed member of the runtime/],
  [Fallbacks, 'runtimeOtherMember', /this\.runtime\.now is not one of create, destroy, deviceDo, get, count/],
  [Fallbacks, 'runtimeCallWithoutClass', /runtime\.count needs a class/],
  [Fallbacks, 'classNotKnown', /runtime\.count: the class must be a registered class known when the method is compiled/],
  [Fallbacks, 'createsAbstract', /create\(FallbackBase\): FallbackBase is abstract/],
  [Fallbacks, 'createInitVariable', /create\(Other, init\): init must be an object literal/],
  [Fallbacks, 'createComputedKey', /create: init keys must be plain field names/],
  [Fallbacks, 'createUnknownField', /create\(Other\): Other has no field 'nope'/],
  [Fallbacks, 'createArrayNotLiteral', /create\(Fallbacks\): the inline array 'arr' must be given as an array literal/],
  [Fallbacks, 'createArrayTooLong', /create\(Fallbacks\): 'arr' has 3 elements/],
  [Fallbacks, 'createArrayHole', /array holes and spread elements are not supported \(at `\[1, , 3\]`\)/],
  [Fallbacks, 'destroysNonObject', /destroy\(\) of a null value, which is not an smmo object/],
  [Fallbacks, 'destroysFromArray', /destroy\(\) of a value that comes from JavaScript .* cannot tell is an smmo object/],
  [Fallbacks, 'destroyWithoutObject', /destroy needs an object/],
  [Fallbacks, 'getWithoutHandle', /get\(C, handle\) needs a handle/],
  [Fallbacks, 'deviceDoFunctionVariable', /deviceDo\(C, fn\): fn must be a function written in the call/],
  [Fallbacks, 'deviceDoRestParameter', /the deviceDo callback takes one parameter \(the object\)/],
];

/** The method compiled on the runtime's main thread context, without running it. */
function compileOnly(rt: Runtime, cls: SmmoClass, method: string): CompileOutcome {
  const ctx = rt.main as unknown as ThreadContext;
  return ctx.compiler!.compile(ctx.table.byClass(cls)!.id, method, ctx.compileUse);
}

for (const [cls, method, reason] of ROWS) {
  test(`falls back: ${cls.name}.${method}`, async (t) => {
    const rt = await createRuntime({ classes: CLASSES, heap: '4MB' });
    try {
      const r = compileOnly(rt, cls, method);
      t.false(r.compiled, `${cls.name}.${method} compiled`);
      if (r.compiled) return;
      t.regex(r.reason, reason);
      t.notRegex(r.reason, /^compiler error:/, 'a fallback, not a fault of the compiler');
    } finally {
      await rt.close();
    }
  });
}

test('the table: distinct rows and reasons, every method exists; the positive control compiles', async (t) => {
  const sources = ROWS.map(([, , reason]) => reason.source);
  t.is(new Set(sources).size, sources.length, 'every reason RegExp is distinct');
  const names = ROWS.map(([cls, method]) => `${cls.name}.${method}`);
  t.is(new Set(names).size, names.length, 'every row is a distinct method');
  for (const [cls, method] of ROWS) {
    t.is(typeof (cls.prototype as unknown as Record<string, unknown>)[method], 'function', `${cls.name}.${method} exists`);
  }
  // The harness can fail: a method of the fixture that is inside the subset compiles.
  const rt = await createRuntime({ classes: CLASSES, heap: '4MB' });
  try {
    const r = compileOnly(rt, Fallbacks, 'compiles');
    t.true(r.compiled, r.compiled ? '' : r.reason);
  } finally {
    await rt.close();
  }
});

test('falls back visibly through parallelDo: stats().compiled has the reason, and the method runs interpreted', async (t) => {
  const rt = await createRuntime({ classes: CLASSES, heap: '4MB' });
  try {
    const o = rt.create(Fallbacks, { v: 0 });
    const runs: [method: string, reason: RegExp, v: number][] = [
      ['objectComputedKey', /object literals with computed keys/, 1], // { [k]: 1 }.a
      ['usesForIn', /for…in is not supported/, 2], // 1 + 'a'.length
    ];
    for (const [method, reason, v] of runs) {
      await (rt.parallelDo as (c: unknown, m: string) => Promise<void>)(Fallbacks, method);
      const s = rt.stats().compiled[`Fallbacks.${method}`];
      t.is(s?.compiled, false, method);
      t.regex(s?.reason ?? '', reason);
      t.is(o.v, v, `${method} ran interpreted`);
    }
  } finally {
    await rt.close();
  }
});
