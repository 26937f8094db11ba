/**
 * `super` in compiled methods: a `super.m()` call resolves from the class that defines the
 * method containing it (its home), also inside a method reached through `super` across
 * classes made by `.extend()`; and compiling reads methods by descriptor, so a getter reached
 * as `super.g` or named as the do-all's method is not run while compiling (the compiler
 * runs no user code). Each case runs compiled and interpreted on equal heaps.
 */
import test from 'ava';
import { createRuntime, f64, object, type Runtime } from '../index.js';
import type { ThreadContext } from '../runtime/thread.js';

let getterRuns = 0;

class G1 extends object({ v: f64 }) {
  base(): number {
    return 1;
  }
  get counted(): number {
    getterRuns++;
    return 5;
  }
}
class G2 extends G1.extend({ w: f64 }) {
  override base(): number {
    return 2;
  }
  /** Defined on G2: its `super.base()` is G1's, whoever calls it. */
  mid(): number {
    return super.base();
  }
}
class G3 extends G2.extend({}) {
  override base(): number {
    return 3;
  }
}
class D extends G3.extend({}) {
  override base(): number {
    return 4;
  }
  /** super.mid() is G2.mid, whose super.base() is G1.base: 1 (not G2's 2 or G3's 3). */
  top(): void {
    this.v = super.mid() * 10 + this.base();
  }
  /** super.counted is a getter: not a method (a fallback), and not run by the compiler. */
  readsSuperGetter(): void {
    this.v = (super.counted as unknown as () => number)();
  }
}

const CLASSES = [G1, G2, G3, D];

async function vOf(compile: boolean, method: 'top'): Promise<{ v: number; compiled: boolean | undefined }> {
  const rt: Runtime = await createRuntime({ classes: CLASSES, heap: '4MB', compile });
  try {
    const d = rt.create(D, { v: 0 });
    await rt.parallelDo(D, method);
    return { v: d.v, compiled: rt.stats().compiled[`D.${method}`]?.compiled };
  } finally {
    await rt.close();
  }
}

test('super inside a method reached through super resolves from the class that defines it', async (t) => {
  const interpreted = await vOf(false, 'top');
  const compiled = await vOf(true, 'top');
  t.is(interpreted.v, 14, 'interpreted: G1.base() via G2.mid, then D.base()');
  t.true(compiled.compiled, 'D.top compiled');
  t.is(compiled.v, interpreted.v);
});

test('compiling runs no getter: super.<getter> falls back without being read, and a do-all method is looked up by descriptor', async (t) => {
  const rt = await createRuntime({ classes: CLASSES, heap: '4MB' });
  try {
    const ctx = rt.main as unknown as ThreadContext;
    const id = ctx.table.byClass(D)!.id;
    const before = getterRuns;
    const r = ctx.compiler!.compile(id, 'readsSuperGetter', ctx.compileUse);
    t.false(r.compiled);
    if (!r.compiled) t.regex(r.reason, /super\.counted is not a method/);
    const g = ctx.compiler!.compile(id, 'counted', ctx.compileUse);
    t.false(g.compiled);
    if (!g.compiled) t.regex(g.reason, /D has no method 'counted'/);
    t.is(getterRuns, before, 'the getter did not run');
  } finally {
    await rt.close();
  }
});
