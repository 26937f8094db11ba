/**
 * The compiler keeps the receiver of a call on a JavaScript object or class
 * (runtime/compiler/lower.ts callFunction): `holder.f(x)` has `this` = holder. A built-in
 * method (`order.push`) and a function that reads `this` run as JavaScript method calls on
 * the holder; a function that does not read `this` is inlined as before.
 */
import test from 'ava';
import { createRuntime, i32, object } from '../index.js';
import type { ThreadContext } from '../runtime/thread.js';

const order: number[] = [];
const counter = {
  n: 0,
  add(k: number): void {
    this.n += k;
  },
};
const helpers = {
  square(x: number): number {
    return x * x;
  },
};
class Scale {
  static base = 10;
  static scaled(x: number): number {
    return this.base * x;
  }
}

export class Item extends object({ v: i32, w: i32 }) {
  record(): void {
    order.push(this.v);
  }
  count(): void {
    counter.add(this.v);
  }
  scale(): void {
    this.w = Scale.scaled(this.v);
  }
  square(): void {
    this.w = helpers.square(this.v);
  }
}

test('holder.f(x) is called with this = holder, compiled as interpreted', async (t) => {
  for (const compile of [false, true]) {
    const rt = await createRuntime({ classes: [Item], heap: '4MB', compile });
    try {
      await rt.parallelNew(Item, 40, (o, i) => {
        o.v = i;
      });
      order.length = 0;
      counter.n = 0;
      await rt.parallelDo(Item, 'record');
      await rt.parallelDo(Item, 'count');
      t.deepEqual(
        [...order].sort((a, b) => a - b),
        Array.from({ length: 40 }, (_, i) => i),
        `compile ${compile}: push on the array`,
      );
      t.is(counter.n, (39 * 40) / 2, `compile ${compile}: this.n of the object literal`);
      await rt.parallelDo(Item, 'scale');
      let ok = 0;
      rt.deviceDo(Item, (o) => {
        if (o.w === 10 * o.v) ok++;
      });
      t.is(ok, 40, `compile ${compile}: a static method reading this.base`);
      await rt.parallelDo(Item, 'square');
      ok = 0;
      rt.deviceDo(Item, (o) => {
        if (o.w === o.v * o.v) ok++;
      });
      t.is(ok, 40);
      if (compile) {
        const c = rt.stats().compiled;
        for (const m of ['record', 'count', 'scale', 'square']) t.true(c[`Item.${m}`]?.compiled, m);
        t.regex((c['Item.count']?.javascript ?? []).join(';'), /counter\.add\(\) runs as JavaScript: it reads 'this'/);
        t.regex((c['Item.scale']?.javascript ?? []).join(';'), /Scale\.scaled\(\) runs as JavaScript: it reads 'this'/);
        t.is(c['Item.square']?.javascript, undefined, 'a holder function without this is inlined');
        const ctx = rt.main as unknown as ThreadContext;
        const src = ctx.compiler!.compile(ctx.table.byClass(Item)!.id, 'record', ctx.compileUse);
        t.true(src.compiled && /S\d+\.push\(/.test(src.source), 'push is called on its array');
      }
    } finally {
      await rt.close();
    }
  }
});
