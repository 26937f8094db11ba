/**
 * The JavaScript backend unrolls the counted loop of a full block four lanes at a time
 * when the method's body is short (runtime/compiler/emit-js.ts UNROLL): each copy is one
 * lane, a lane's early `return` leaves only its copy, lanes run in slot order, and an
 * error names the object of the copy that threw. Compared with the interpreted method,
 * heap byte for byte, on full blocks (unrolled) and on partly filled ones (the bit loop).
 */
import test from 'ava';
import { createRuntime, i32, MethodError, object, type Runtime } from '../index.js';
import type { ThreadContext } from '../runtime/thread.js';
import { persistentHeapBytes } from './helpers/heap-bytes.js';

const order: number[] = [];

export class Lane extends object({ v: i32, w: i32 }) {
  /** An early return for every third value; the others add to w. */
  step(k: number): void {
    if (this.v % 3 === 0) return;
    this.w += this.v * k;
  }

  /** Throws on the object whose v is `bad`. */
  fail(bad: number): void {
    if (this.v === bad) throw new Error(`bad ${bad}`);
    this.w += 1;
  }

  /** Records the visiting order (the push runs as JavaScript inside the compiled method). */
  visit(): void {
    order.push(this.v);
  }
}

function firstDifference(a: Uint8Array, b: Uint8Array): number {
  if (a.length !== b.length) return Math.min(a.length, b.length);
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return i;
  return -1;
}

async function make(compile: boolean, n: number): Promise<Runtime> {
  const rt = await createRuntime({ classes: [Lane], heap: '4MB', compile, seed: 3 });
  await rt.parallelNew(Lane, n, (o, i) => {
    o.v = i;
  });
  return rt;
}

test('full blocks run unrolled: the same heap as interpreted, early returns leave one lane', async (t) => {
  for (const n of [32, 64, 77]) {
    const a = await make(false, n);
    const b = await make(true, n);
    try {
      // Holes in the last block make its lanes take the bit loop; the full blocks take the unrolled one.
      for (const rt of [a, b]) {
        const victims: number[] = [];
        rt.deviceDo(Lane, (o) => {
          if (o.v >= 64 && o.v % 5 === 0) victims.push(o.handle);
        });
        for (const h of victims) rt.destroy(rt.get(Lane, h));
      }
      for (let k = 1; k <= 3; k++) {
        await a.parallelDo(Lane, 'step', k);
        await b.parallelDo(Lane, 'step', k);
        t.is(firstDifference(persistentHeapBytes(a), persistentHeapBytes(b)), -1, `n = ${n}, pass ${k}: heaps differ at this byte`);
      }
      const ctx = b.main as unknown as ThreadContext;
      const src = ctx.compiler!.compile(ctx.table.byClass(Lane)!.id, 'step', ctx.compileUse);
      t.true(src.compiled && src.source.includes('lane3:'), 'the full-block loop of step is unrolled');
      let sum = 0;
      b.deviceDo(Lane, (o) => {
        sum += o.w;
      });
      let want = 0;
      for (let v = 0; v < n; v++) if (v % 3 !== 0 && !(v >= 64 && v % 5 === 0)) want += v * 6;
      t.is(sum, want);
    } finally {
      await a.close();
      await b.close();
    }
  }
});

test('an error in an unrolled copy names its object, and the lanes before it ran', async (t) => {
  for (const bad of [0, 1, 2, 3, 6, 31]) {
    const rt = await make(true, 32);
    try {
      const e = await t.throwsAsync(rt.parallelDo(Lane, 'fail', bad), { instanceOf: MethodError });
      t.is(rt.get(Lane, e!.handle).v, bad, `bad = ${bad}`);
      const done: number[] = [];
      rt.deviceDo(Lane, (o) => {
        if (o.w === 1) done.push(o.v);
      });
      t.deepEqual(
        done,
        Array.from({ length: bad }, (_, i) => i),
        'lanes in slot order up to the one that threw',
      );
    } finally {
      await rt.close();
    }
  }
});

test("a lane records its handle only where the body may throw or uses it: not for step's arithmetic, for fail's throw", async (t) => {
  const rt = await make(true, 64);
  try {
    const ctx = (rt as unknown as { main: ThreadContext }).main;
    const id = ctx.table.byClass(Lane)!.id;
    const step = ctx.compiler!.compile(id, 'step', ctx.compileUse);
    const fail = ctx.compiler!.compile(id, 'fail', ctx.compileUse);
    t.true(step.compiled && !step.source.includes('self = hb + slot'), 'step cannot throw: no handle store per lane');
    t.true(fail.compiled && fail.source.includes('self = hb + slot'), 'fail throws: its lanes record their handle');
    // And step still computes what the interpreted method does (the heap tests above), here once more by value.
    await rt.parallelDo(Lane, 'step', 2);
    let sum = 0;
    rt.deviceDo(Lane, (o) => {
      sum += o.w;
    });
    let want = 0;
    for (let v = 0; v < 64; v++) if (v % 3 !== 0) want += 2 * v;
    t.is(sum, want);
  } finally {
    await rt.close();
  }
});

test('lanes of a full block run in slot order', async (t) => {
  const rt = await make(true, 32);
  try {
    order.length = 0;
    await rt.parallelDo(Lane, 'visit');
    t.deepEqual(
      order,
      Array.from({ length: 32 }, (_, i) => i),
    );
  } finally {
    await rt.close();
  }
});
