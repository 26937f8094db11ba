/**
 * The method compiler (runtime/compiler/): every construct of the compiled subset gives
 * the heap the interpreted method gives, byte for byte, after every pass (invariant C1);
 * every construct outside it falls back with a reason that names it; errors thrown in
 * compiled code are the interpreted ones (TypeError, RangeError, as MethodError causes).
 */
import test, { type ExecutionContext } from 'ava';
import { createRuntime, i32, MethodError, object, ref, type Runtime, type SmmoObject } from '../index.js';
import { RESERVED_BYTES } from '../runtime/layout.js';
import { InvalidHandleError } from '../runtime/errors.js';
import type { ThreadContext } from '../runtime/thread.js';
import { failsAlike, persistentHeapBytes } from './helpers/heap-bytes.js';
import { CLASSES, CLOSED, KEPT, Odd, Point, Shape, Square, Triangle, Visitor, bumpCounter } from './compiler.fixtures.js';

type Pass = [
  cls: typeof Point | typeof Shape | typeof Visitor | typeof Square | typeof Triangle | typeof Odd,
  method: string,
  ...args: number[],
];

async function setup(rt: Runtime): Promise<void> {
  const points: number[] = [];
  await rt.parallelNew(Point, 90, (p, i) => {
    p.x = i * 0.75 - 20;
    p.y = (i % 7) / 3;
    p.n = i * 13 - 400;
    p.small = i * 3;
    p.word = i * 1000;
    p.half = i * 77 - 3000;
    p.big = i * 123456789;
    p.tag = i;
    p.flag = i % 3 === 0;
    for (let k = 0; k < 4; k++) p.stream.set(k, (i * 2654435761 + k * 97) >>> 0);
    points.push(p.handle);
  });
  // References: a ring with gaps (every fifth point has no next).
  for (let i = 0; i < points.length; i++) {
    const p = rt.get(Point, points[i]!);
    p.next = i % 5 === 4 ? null : rt.get(Point, points[(i * 7 + 3) % points.length]!);
    p.hops.set(0, rt.get(Point, points[(i + 1) % points.length]!));
  }
  const shapes: number[] = [];
  for (let i = 0; i < 30; i++) {
    const owner = rt.get(Point, points[i * 2]!);
    const s =
      i % 2 === 0
        ? rt.create(Square, { size: 1 + (i % 4), owner, corner: i })
        : rt.create(Triangle, { size: 0.5 + i / 10, owner, angles: [i, 2 * i, 3 * i] });
    shapes.push(s.handle);
    if (i % 3 === 0) owner.other = s;
  }
  await rt.parallelNew(Visitor, 20, (v, i) => {
    v.last = i % 4 === 3 ? null : rt.get(Shape, shapes[i]!);
  });
}

/** Heap bytes without the per-pass snapshot state (helpers/heap-bytes.ts says why). */
const heapBytes = persistentHeapBytes;

function firstDifference(a: Uint8Array, b: Uint8Array): number {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return i;
  return -1;
}

async function runtimeFor(compile: boolean, checked = false): Promise<Runtime> {
  const rt = await createRuntime({ classes: CLASSES, heap: '4MB', compile, checked, seed: 5 });
  await setup(rt);
  return rt;
}

/** Run the passes on an interpreted and a compiled runtime; the heaps must be equal after every pass. */
async function sameHeaps(
  t: ExecutionContext,
  passes: readonly Pass[],
  options: { checked?: boolean; expectCompiled?: readonly string[] } = {},
): Promise<void> {
  const a = await runtimeFor(false, options.checked);
  const b = await runtimeFor(true, options.checked);
  try {
    t.is(firstDifference(heapBytes(a), heapBytes(b)), -1, 'the same start');
    for (const [cls, method, ...args] of passes) {
      await (a.parallelDo as (c: unknown, m: string, ...x: number[]) => Promise<void>)(cls, method, ...args);
      await (b.parallelDo as (c: unknown, m: string, ...x: number[]) => Promise<void>)(cls, method, ...args);
      a.validateHeap();
      b.validateHeap();
      const at = firstDifference(heapBytes(a), heapBytes(b));
      t.is(at, -1, `heaps differ after ${cls.name}.${method} at byte ${at + RESERVED_BYTES}`);
    }
    const compiled = b.stats().compiled;
    for (const name of options.expectCompiled ?? []) {
      t.true(compiled[name]?.compiled === true, `${name} compiled: ${JSON.stringify(compiled[name])}`);
    }
    t.deepEqual(a.stats().compiled, {}, 'compile: false compiles nothing');
  } finally {
    await a.close();
    await b.close();
  }
}

test('field arithmetic on every field kind (stores wrap as typed arrays do)', async (t) => {
  await sameHeaps(
    t,
    [
      [Point, 'arith', 3],
      [Point, 'arith', -7.5],
      [Point, 'arith', 1e9],
    ],
    { expectCompiled: ['Point.arith'] },
  );
});

test('references: follow, null tests, optional chaining, is(), handles, a virtual call through a reference', async (t) => {
  await sameHeaps(
    t,
    [
      [Point, 'refs'],
      [Point, 'refs'],
    ],
    { expectCompiled: ['Point.refs'] },
  );
});

test('optional chains short-circuit as a whole: a?.b.c, a?.m(args), a?.arr.get(i), nested ?.', async (t) => {
  await sameHeaps(
    t,
    [
      [Point, 'optionalChains', 1],
      [Point, 'refs'],
      [Point, 'optionalChains', 6],
    ],
    { expectCompiled: ['Point.optionalChains'] },
  );
});

test('logical assignments: ||=, &&=, ??= on locals, fields, references and setters', async (t) => {
  await sameHeaps(
    t,
    [
      [Point, 'logicalAssigns', 0],
      [Point, 'logicalAssigns', 5],
      [Point, 'refs'],
      [Point, 'logicalAssigns', 2],
    ],
    { expectCompiled: ['Point.logicalAssigns'] },
  );
});

test('inline arrays with constant and computed indices, passed to a helper; module helpers inlined', async (t) => {
  await sameHeaps(
    t,
    [
      [Point, 'arrays'],
      [Point, 'arrays'],
      [Point, 'arrays'],
    ],
    { expectCompiled: ['Point.arrays'] },
  );
});

test('loops with labels, break and continue; do-while; switch with fall-through', async (t) => {
  await sameHeaps(
    t,
    [
      [Point, 'loops', 9],
      [Point, 'loops', 30],
    ],
    { expectCompiled: ['Point.loops'] },
  );
});

test('deviceDo: early return, nested deviceDo over a class with subclasses, closures over locals, get()', async (t) => {
  await sameHeaps(
    t,
    [
      [Point, 'neighbours'],
      [Point, 'neighbours'],
    ],
    { expectCompiled: ['Point.neighbours'] },
  );
});

test("deviceDo objects: fields addressed from the loop's block, per concrete class, without null tests", async (t) => {
  await sameHeaps(
    t,
    [
      [Point, 'shapeSum', 1],
      [Point, 'shapeSum', 2],
    ],
    { expectCompiled: ['Point.shapeSum'] },
  );
  const rt = await runtimeFor(true);
  try {
    const ctx = rt.main as unknown as ThreadContext;
    const src = ctx.compiler!.compile(ctx.table.byClass(Point)!.id, 'shapeSum', ctx.compileUse);
    t.true(src.compiled, 'compiled');
    if (!src.compiled) return;
    // One loop per concrete class: s.owner read from the loop's block offset ($q4_) and slot ($s), at each class's own offset.
    const ownerAt = (c: typeof Square | typeof Triangle): number =>
      ctx.table.byClass(c)!.fields.find((f) => f.name === 'owner')!.offsets[0]! >>> 2;
    const owners = new Set([...src.source.matchAll(/U32\[\$q4_\d+ \+ (\d+) \+ \$s\d+\]/g)].map((m) => Number(m[1])));
    t.deepEqual([...owners].sort(), [ownerAt(Square), ownerAt(Triangle)].sort(), 'owner at the offset of each concrete class');
    t.regex(src.source, /F32\[\$q4_\d+ \+ \d+ \+ \$s\d+\] = \(F32\[\$q4_/, 'size stored in place');
    t.false(/\$null\("(?:Square|Triangle)\./.test(src.source), "no null test of the loops' objects");
    t.true(src.source.includes('$null("Point.x")'), 'the owner reference is still tested');
  } finally {
    await rt.close();
  }
});

test('a branch behind `instanceof` that no concrete class passes is left out (a subclass field in it compiles)', async (t) => {
  await sameHeaps(
    t,
    [
      [Shape, 'tilt', 1],
      [Point, 'shapeSum', 2],
      [Shape, 'tilt', 2],
    ],
    { expectCompiled: ['Square.tilt', 'Triangle.tilt', 'Point.shapeSum'] },
  );
});

test('`instanceof` in `?:`, `&&` and `&&` tests: the side no concrete class reaches is left out, the other sees the subclass', async (t) => {
  await sameHeaps(
    t,
    [
      [Point, 'shapeGuarded', 1],
      [Visitor, 'guarded'],
      [Shape, 'grow'],
      [Point, 'shapeGuarded', 2],
      [Visitor, 'guarded'],
    ],
    { expectCompiled: ['Point.shapeGuarded', 'Visitor.guarded', 'Square.grow', 'Triangle.grow'] },
  );
});

test('negated `instanceof` guards: after `if (!(x instanceof C)) return`, in else branches, `?:` and `||`, x is a C, and what no concrete class reaches is left out', async (t) => {
  await sameHeaps(
    t,
    [
      [Point, 'shapeGuardedEarly', 1],
      [Visitor, 'guardedEarly'],
      [Shape, 'tiltEarly', 1],
      [Shape, 'grow'],
      [Point, 'shapeGuardedEarly', 2],
      [Visitor, 'guardedEarly'],
      [Shape, 'tiltEarly', 2],
    ],
    {
      expectCompiled: [
        'Point.shapeGuardedEarly',
        'Visitor.guardedEarly',
        'Square.tiltEarly',
        'Triangle.tiltEarly',
        'Square.grow',
        'Triangle.grow',
      ],
    },
  );
});

test('global variables that may change are read as JavaScript where the method reads them; the method compiles', async (t) => {
  await sameHeaps(t, [[Point, 'readsGlobal']], { expectCompiled: ['Point.readsGlobal'] });
  const rt = await runtimeFor(true);
  try {
    const p = rt.create(Point, { y: 1.5 });
    await rt.parallelDo(Point, 'readsGlobal');
    t.is(p.x, 1.5 * 2 + 1);
    globalThis.smmoFixtureScale = 4;
    await rt.parallelDo(Point, 'readsGlobal');
    t.is(p.x, 1.5 * 4 + 1, 'the global read when the pass runs, not when the method was compiled');
    t.true(rt.stats().compiled['Point.readsGlobal']!.compiled);
  } finally {
    globalThis.smmoFixtureScale = 2;
    await rt.close();
  }
});

test('for…of over JavaScript values: the rest compiles, and a generator left early is closed as interpreted', async (t) => {
  await sameHeaps(
    t,
    [
      [Point, 'iterates', 2],
      [Point, 'iterates', 4],
    ],
    { expectCompiled: ['Point.iterates'] },
  );
  const closes: number[] = [];
  for (const compile of [false, true]) {
    const rt = await runtimeFor(compile);
    try {
      CLOSED.count = 0;
      await rt.parallelDo(Point, 'iterates', 4);
      closes.push(CLOSED.count);
    } finally {
      await rt.close();
    }
  }
  t.true(closes[0]! > 0, 'the generators ran their finally');
  t.is(closes[1], closes[0], 'compiled closes as many iterators as interpreted');
  t.false(compiledOnly('iterates').ranksOnly, 'JavaScript runs in an iterator: not a method whose only JavaScript is rank tables');
});

/** Point's method compiled on a fresh runtime's main thread, without running it. */
function compiledOnly(method: string): { ranksOnly: boolean } {
  const ctx = compileRuntime!.main as unknown as ThreadContext;
  const r = ctx.compiler!.compile(ctx.table.byClass(Point)!.id, method, ctx.compileUse);
  if (!r.compiled) throw new Error(`${method}: ${r.reason}`);
  return r;
}
let compileRuntime: Runtime | undefined;
test.before(async () => {
  compileRuntime = await createRuntime({ classes: CLASSES, heap: '4MB' });
});
test.after.always(async () => {
  await compileRuntime?.close();
});

test('destructuring: object and array patterns, defaults, holes, rest, nesting, swaps, for…of (also into existing places and var) and parameters', async (t) => {
  await sameHeaps(
    t,
    [
      [Point, 'destructures', 1],
      [Point, 'destructures', 4],
      [Point, 'destructuresParams'],
      [Point, 'destructuresParams', 5],
      [Point, 'iteratesInto', 0],
      [Point, 'iteratesInto', 2],
    ],
    { expectCompiled: ['Point.destructures', 'Point.destructuresParams', 'Point.iteratesInto'] },
  );
});

test('setters: =, compound assignment and ++/-- through accessors (getter and setter inlined), on this, through a reference, dispatched per class', async (t) => {
  await sameHeaps(
    t,
    [
      [Point, 'setsAccessors', 2],
      [Point, 'setsAccessors', -3.5],
      [Visitor, 'resizes'],
      [Visitor, 'resizes'],
    ],
    { expectCompiled: ['Point.setsAccessors', 'Visitor.resizes'] },
  );
});

test('try/catch/finally: compiled errors caught with their class and message, patterns, break, continue and returns through finally', async (t) => {
  await sameHeaps(
    t,
    [
      [Point, 'catches', 1],
      [Point, 'catches', 5],
      [Point, 'catches', 3],
    ],
    { expectCompiled: ['Point.catches'] },
  );
});

test('JavaScript values as written: spreads, holes, regular expressions, bigints, in and delete', async (t) => {
  await sameHeaps(
    t,
    [
      [Point, 'jsValues', 1],
      [Point, 'jsValues', 7],
    ],
    { expectCompiled: ['Point.jsValues'] },
  );
});

test('functions written in the method handed to JavaScript: the same heaps, and kept ones give the same values later', async (t) => {
  await sameHeaps(
    t,
    [
      [Point, 'callsBack', 1],
      [Point, 'callsBack', 4],
    ],
    { expectCompiled: ['Point.callsBack'] },
  );
  const kept: number[][] = [];
  for (const compile of [false, true]) {
    const rt = await runtimeFor(compile);
    try {
      KEPT.length = 0;
      await rt.parallelDo(Point, 'callsBack', 2);
      // Called after the pass: each sees its own lane's `scale` and handle.
      kept.push(KEPT.map((f) => f()));
    } finally {
      await rt.close();
    }
  }
  t.is(kept[0]!.length, 90);
  t.true(new Set(kept[0]).size > 10, 'the kept functions differ from lane to lane');
  t.deepEqual(kept[1], kept[0]);
});

test('array patterns over a generator take as many elements as they name and close it as interpreted', async (t) => {
  await sameHeaps(
    t,
    [
      [Point, 'destructuresIterator', 1],
      [Point, 'destructuresIterator', 2],
      [Point, 'destructuresIterator', 5],
    ],
    { expectCompiled: ['Point.destructuresIterator'] },
  );
  const seen: { closes: number; pulled: number }[] = [];
  for (const compile of [false, true]) {
    const rt = await runtimeFor(compile);
    try {
      CLOSED.count = 0;
      CLOSED.pulled = 0;
      await rt.parallelDo(Point, 'destructuresIterator', 5);
      seen.push({ closes: CLOSED.count, pulled: CLOSED.pulled });
    } finally {
      await rt.close();
    }
  }
  t.true(seen[0]!.closes > 0, 'the generators ran their finally');
  t.deepEqual(seen[1], seen[0], 'compiled closes as many iterators and takes as many values as interpreted');
  t.false(
    compiledOnly('destructuresIterator').ranksOnly,
    'JavaScript runs in an iterator: not a method whose only JavaScript is rank tables',
  );
});

test('a let variable started from a module constant is an ordinary variable; break leaves a labelled if', async (t) => {
  await sameHeaps(
    t,
    [
      [Point, 'countsFromConstants', 3],
      [Point, 'labelledIf', 2],
      [Point, 'countsFromConstants', 4],
      [Point, 'labelledIf', 3],
    ],
    { expectCompiled: ['Point.countsFromConstants', 'Point.labelledIf'] },
  );
});

test('virtual methods, getters and super of an abstract class; create with init objects; destroy of this', async (t) => {
  await sameHeaps(
    t,
    [
      [Shape, 'grow'],
      [Visitor, 'visit'],
      [Shape, 'grow'],
      [Shape, 'grow'],
      [Visitor, 'visit'],
      [Shape, 'grow'],
    ],
    { expectCompiled: ['Square.grow', 'Triangle.grow', 'Visitor.visit'] },
  );
});

test('JavaScript values stay JavaScript: strings, templates, typed arrays, default parameters; a call that cannot be inlined runs as JavaScript', async (t) => {
  bumpCounter();
  await sameHeaps(
    t,
    [
      [Point, 'javascript', 2],
      [Point, 'javascript', 5],
    ],
    { expectCompiled: ['Point.javascript'] },
  );
  const rt = await runtimeFor(true);
  try {
    await rt.parallelDo(Point, 'javascript', 1);
    const s = rt.stats().compiled['Point.javascript']!;
    t.true(s.compiled);
    t.true(
      s.javascript?.some((j) => j.startsWith('readsCounter() runs as JavaScript') && j.includes("'counter'")),
      JSON.stringify(s),
    );
  } finally {
    await rt.close();
  }
});

test('a do-all snapshots the classes its method reaches: deviceDo inside a call left as JavaScript sees every live Shape', async (t) => {
  await sameHeaps(
    t,
    [
      [Point, 'sidesViaJs'],
      [Shape, 'grow'],
      [Point, 'sidesViaJs'],
    ],
    { expectCompiled: ['Point.sidesViaJs'] },
  );
  const rt = await runtimeFor(true);
  try {
    await rt.parallelDo(Point, 'sidesViaJs');
    let sides = 0;
    rt.deviceDo(Shape, (s) => (sides += s.sides()));
    t.true(sides > 0, 'the fixture has shapes');
    rt.deviceDo(Point, (p) => t.is(p.x, sides));
  } finally {
    await rt.close();
  }
});

test('get() of a bad handle throws the same InvalidHandleError compiled as interpreted (null, fractional, negative, beyond the heap, a free block)', async (t) => {
  const a = await runtimeFor(false);
  const b = await runtimeFor(true);
  try {
    let some = 0;
    b.deviceDo(Point, (p) => (some = p.handle));
    const free = b.heap.numBlocks * 32 - 32; // the last block: free in these small fixtures
    const reasons: string[] = [];
    for (const h of [0, some + 0.5, -32, b.heap.numBlocks * 32, 2 ** 40, free]) {
      const got = [a, b].map((rt) => {
        try {
          rt.doAll(Point, 'getAt', h);
          return 'no error';
        } catch (e) {
          const cause = (e as Error).cause;
          return cause instanceof InvalidHandleError ? `${cause.reason}: ${cause.message}` : String(e);
        }
      });
      t.is(got[1], got[0], `handle ${h}`);
      reasons.push(got[1]!.split(':')[0]!);
    }
    t.deepEqual(reasons, ['null', 'forged', 'forged', 'forged', 'forged', 'free-block']);
    await b.parallelDo(Point, 'getAt', some);
    t.true(b.stats().compiled['Point.getAt']?.compiled === true);
  } finally {
    await a.close();
    await b.close();
  }
});

test('checked mode: the same heaps, compiled with the checked accessors rules', async (t) => {
  await sameHeaps(
    t,
    [
      [Point, 'arith', 2],
      [Point, 'refs'],
      [Point, 'arrays'],
      [Point, 'neighbours'],
      [Shape, 'grow'],
      [Visitor, 'visit'],
      [Shape, 'grow'],
    ],
    { checked: true, expectCompiled: ['Point.arith', 'Point.refs', 'Square.grow', 'Visitor.visit'] },
  );
});

/** Objects that delete themselves or their peer and then touch them (checked mode's errors). */
interface HuskLike extends SmmoObject {
  n: number;
}
class Husk extends object({ n: i32, peer: ref<HuskLike>('Husk') }) {
  readAfterDestroy(): void {
    this.destroy();
    this.n = 1;
  }
  peerAfterDestroy(): void {
    const p = this.peer;
    if (p !== null) {
      p.destroy();
      this.n = p.n;
    }
  }
}

test('checked mode: a field of a deleted object fails compiled with the checked accessors error and message', async (t) => {
  for (const [method, count] of [
    ['readAfterDestroy', 1],
    ['readAfterDestroy', 40],
    ['peerAfterDestroy', 40],
  ] as const) {
    await failsAlike(
      t,
      `${method} over ${count}`,
      async (compile) => {
        const rt = await createRuntime({ classes: [Husk], heap: '2MB', threads: 1, compile, checked: true });
        const hs: (Husk & HuskLike)[] = [];
        for (let i = 0; i < count; i++) hs.push(rt.create(Husk, { n: i }));
        for (let i = 0; i + 1 < count; i += 2) {
          hs[i]!.peer = hs[i + 1]!;
          hs[i + 1]!.peer = hs[i]!;
        }
        return rt;
      },
      (rt) => rt.doAll(Husk, method),
      (rt) => t.true(rt.stats().compiled[`Husk.${method}`]?.compiled === true, `${method} compiled`),
    );
  }
});

test('errors in compiled code are the interpreted ones: TypeError on null, RangeError outside an inline array', async (t) => {
  for (const which of [1, 2, 3]) {
    const seen: unknown[] = [];
    for (const compile of [false, true]) {
      const rt = await runtimeFor(compile);
      try {
        const e = await t.throwsAsync(rt.parallelDo(Point, 'fail', which), { instanceOf: MethodError });
        seen.push({ cause: (e?.cause as Error).constructor.name, handle: e?.handle, message: (e?.cause as Error).message });
        rt.validateHeap();
      } finally {
        await rt.close();
      }
    }
    t.deepEqual(seen[1], seen[0], `error ${which}: compiled like interpreted`);
    t.is((seen[0] as { cause: string }).cause, which === 1 ? 'TypeError' : 'RangeError');
  }
});

const FALLBACKS: [method: string, reason: RegExp][] = [
  ['comparesObjects', /compares obj<Odd> with obj<Odd> using '==='.*a\.is\(b\)/],
  ['readsModuleLet', /reads the module-level variable 'counter' \(declared with let\)/],
  ['callsRecursive', /Odd\.recursive is recursive/],
  ['destructuresRest', /a rest element \(\.\.\.rest\) in an object pattern is not supported/],
  ['objectInArithmetic', /an smmo object is an operand of '\+'/],
];

for (const [method, reason] of FALLBACKS) {
  test(`falls back visibly: ${method}`, async (t) => {
    const rt = await createRuntime({ classes: CLASSES, heap: '4MB' });
    try {
      rt.create(Odd, { v: 0 });
      await (rt.parallelDo as (c: unknown, m: string) => Promise<void>)(Odd, method);
      const s = rt.stats().compiled[`Odd.${method}`];
      t.is(s?.compiled, false);
      t.regex(s?.reason ?? '', reason);
    } finally {
      await rt.close();
    }
  });
}
