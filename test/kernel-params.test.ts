/**
 * Kernel parameter tables (runtime/kernel-params.ts P1–P3): wasm/src/params.rs is what the
 * apps' declarations give; a declaration whose table differs from the module's — two
 * parameters swapped, a parameter of another type — is a KernelParamsError when the kernel
 * is bound, before it runs, and the heap is untouched.
 */
import test from 'ava';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderAppKernelParams } from '../apps/kernel-declarations.js';
import { createRuntime, f32, KERNELS, KernelParamsError, MethodError, object, type KernelParam, type KernelSpec } from '../index.js';
import { paramTable, renderKernelParamsRust } from '../runtime/kernel-params.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

test('wasm/src/params.rs is generated from the apps kernel declarations (run scripts/gen-kernel-params.mjs)', async (t) => {
  t.is(readFileSync(join(root, 'wasm', 'src', 'params.rs'), 'utf8'), await renderAppKernelParams());
});

const f32Field = { kind: 'field', type: 'f32' } as const;
/** nbody_update's table as the module has it, in its order. */
const UPDATE: Record<string, KernelParam> = {
  posX: f32Field,
  posY: f32Field,
  velX: f32Field,
  velY: f32Field,
  forceX: f32Field,
  forceY: f32Field,
  mass: f32Field,
  dt: { kind: 'arg', index: 0, type: 'f64' },
};

const fields = { posX: f32, posY: f32, velX: f32, velY: f32, forceX: f32, forceY: f32, mass: f32 };
/** A body class whose update runs nbody_update with the module's own table. */
class Mover extends object(fields) {
  static readonly [KERNELS]: readonly KernelSpec[] = [{ method: 'update', export: 'nbody_update', params: UPDATE }];
  update(dt: number): void {
    this.posX += this.velX * dt; // enough to see whether anything ran
  }
}

/** The same class with these params. */
function mover(params: Record<string, KernelParam>): typeof Mover {
  return class Mover extends object(fields) {
    static readonly [KERNELS]: readonly KernelSpec[] = [{ method: 'update', export: 'nbody_update', params }];
    update(dt: number): void {
      this.posX += this.velX * dt;
    }
  };
}

/** Run update once on 40 bodies with the wasm backend; the error of the pass (if any) and the positions after it. */
async function runUpdate(cls: typeof Mover): Promise<{ error: unknown; pos: number[] }> {
  const rt = await createRuntime({ classes: [cls], heap: '2MB', backend: 'wasm' });
  try {
    await rt.parallelNew(cls, 40, (b, i) => {
      b.posX = i / 100;
      b.posY = -i / 100;
      b.velX = 0.5;
      b.velY = 0.25;
      b.mass = 1;
    });
    let error: unknown = null;
    try {
      await rt.parallelDo(cls, 'update', 0.1);
    } catch (e) {
      error = e;
    }
    const pos: number[] = [];
    rt.deviceDo(cls, (b) => pos.push(b.posX, b.posY));
    rt.validateHeap();
    return { error, pos };
  } finally {
    await rt.close();
  }
}

test('the declaration that matches the module runs the kernel', async (t) => {
  const { error, pos } = await runUpdate(Mover);
  t.is(error, null);
  t.is(pos[0], Math.fround(0.05)); // 0 + 0.5 · 0.1
  t.is(pos[1], Math.fround(0.025));
});

test('two swapped kernel parameters are a KernelParamsError at binding, and nothing runs', async (t) => {
  const { posX, posY, ...rest } = UPDATE;
  const { error, pos } = await runUpdate(mover({ posY: posY!, posX: posX!, ...rest }));
  t.true(error instanceof MethodError, String(error));
  const cause = (error as MethodError).cause;
  t.true(cause instanceof KernelParamsError, String(cause));
  t.regex(
    (cause as Error).message,
    /nbody_update: parameter 1 is posY in the declaration but posX in the module \(parameters swapped or moved\)/,
  );
  t.is(pos[0], 0, 'the kernel did not run');
  t.is(pos[2], Math.fround(0.01));
});

test('a mistyped kernel parameter is a KernelParamsError at binding', async (t) => {
  const cases: [Record<string, KernelParam>, RegExp][] = [
    [{ ...UPDATE, dt: { kind: 'arg', index: 0, type: 'f32' } }, /parameter dt is f32 in the declaration but f64 in the module/],
    [{ ...UPDATE, mass: { kind: 'value', value: 1, type: 'f32' } }, /parameter mass is f32 in the declaration but offset in the module/],
    [{ ...UPDATE, posX: { kind: 'field', type: 'u32' } }, /reads Mover\.posX as u32, but the field is f32/],
    [
      { ...UPDATE, dt: { kind: 'arg', index: 0, type: 'f16' as 'f32' } },
      /parameter dt \(arg\) must have a type of f32, f64, u32 or i32, got f16/,
    ],
  ];
  for (const [params, message] of cases) {
    const { error, pos } = await runUpdate(mover(params));
    const cause = (error as MethodError | null)?.cause;
    t.true(cause instanceof KernelParamsError, `${JSON.stringify(params)}: ${String(error)}`);
    t.regex((cause as Error).message, message);
    t.is(pos[0], 0, 'the kernel did not run');
  }
});

test('a missing or extra kernel parameter is a KernelParamsError naming it', async (t) => {
  const { dt: _dt, ...noDt } = UPDATE;
  const missing = await runUpdate(mover(noDt));
  t.regex(((missing.error as MethodError).cause as Error).message, /the declaration lacks parameter dt \(f64\)/);
  const extra = await runUpdate(mover({ ...UPDATE, spare: { kind: 'value', value: 0, type: 'u32' } }));
  t.regex(((extra.error as MethodError).cause as Error).message, /the declaration has an extra parameter spare \(u32\)/);
});

test('the table layout is C layout with natural alignment (an f64 at a multiple of 8)', (t) => {
  const table = paramTable({
    method: 'm',
    export: 'k',
    params: {
      a: f32Field,
      b: { kind: 'deviceDo', class: 'C', fields: ['x', 'y', 'z'], type: 'f32' },
      c: { kind: 'value', value: 1, type: 'f64' },
      d: { kind: 'field', type: 'u32', elements: 3 },
    },
  });
  t.deepEqual(
    table.entries.map((e) => [e.name, e.abi, e.offset]),
    [
      ['a', 'offset', 0],
      ['b', 'table[3]', 4],
      ['c', 'f64', 16],
      ['d', 'offset[3]', 24],
    ],
  );
  t.is(table.bytes, 40);
  t.is(table.descriptor, 'a:offset,b:table[3],c:f64,d:offset[3]');
});

test('two declarations of one export with different tables cannot be generated', (t) => {
  const a: KernelSpec = { method: 'update', export: 'nbody_update', params: UPDATE };
  const { posX, posY, ...rest } = UPDATE;
  const b: KernelSpec = { method: 'update', export: 'nbody_update', params: { posY: posY!, posX: posX!, ...rest } };
  t.throws(
    () =>
      renderKernelParamsRust([
        { spec: a, origin: 'A.update' },
        { spec: b, origin: 'B.update' },
      ]),
    {
      instanceOf: KernelParamsError,
      message:
        /B\.update: declares wasm export nbody_update with table posY:offset,posX:offset.*but A\.update with posX:offset,posY:offset/,
    },
  );
});
