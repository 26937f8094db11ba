/**
 * The module (allocator core and kernels) and its loader (runtime/wasm.ts, runtime/kernels.ts):
 *  - wasm/src/layout.rs is what scripts/gen-layout.mjs makes of layoutConstants() today;
 *  - both builds import exactly env.memory (shared) and env.smmo_pause (the allocator's
 *    bounded sleep), export what the loader needs, carry the current layout hash, and
 *    leave room for enough thread slots (W1–W3);
 *  - thread slots: distinct per instance, stacks inside the reserved region, exhaustion is
 *    a UsageError, dispose() gives the slot back (W2);
 *  - backend selection and kernel-spec errors are UsageErrors that say what to do;
 *  - with worker threads, every thread runs the same kernels: 1, 2 and 3 threads give
 *    bit-identical results (the kernel sums each body's forces in a fixed order).
 */
import test from 'ava';
import { readFileSync } from 'node:fs';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLASSES as NBODY, digest, init, step } from '../apps/nbody/nbody.js';
import {
  createRuntime,
  f32,
  f64,
  KERNELS,
  MAX_THREADS,
  MethodError,
  object,
  UsageError,
  type KernelParam,
  type KernelSpec,
} from '../index.js';
import { layoutConstants, RESERVED_BYTES } from '../runtime/layout.js';
import {
  layoutHash,
  loadWasmModule,
  renderLayoutRust,
  SLOT_BYTES,
  SLOT_CLAIM_OFFSET,
  SLOT_STACK_BYTES,
  SLOTS_END,
  WasmInstance,
  wasmFile,
  wasmImports,
} from '../runtime/wasm.js';

const ROOT = new URL('../../', import.meta.url); // dist/test/ → repository root
const NBODY_MODULE = new URL('../apps/nbody/nbody.js', import.meta.url).href;

test('wasm/src/layout.rs is generated from layoutConstants()', (t) => {
  const committed = readFileSync(new URL('wasm/src/layout.rs', ROOT), 'utf8');
  t.is(committed, renderLayoutRust(layoutConstants()), 'out of date: run `npx tsc -p . && node scripts/gen-layout.mjs`');
  t.regex(committed, new RegExp(`pub const RESERVED_BYTES: u32 = ${RESERVED_BYTES};`));
  t.regex(committed, new RegExp(`LAYOUT_HASH: u32 = 0x${layoutHash().toString(16).padStart(8, '0')};`));
});

test('both builds import only the shared heap memory and match this runtime', (t) => {
  for (const variant of ['simd', 'scalar'] as const) {
    const module = loadWasmModule({ variant });
    t.deepEqual(WebAssembly.Module.imports(module), [
      { module: 'env', name: 'memory', kind: 'memory' },
      { module: 'env', name: 'smmo_pause', kind: 'function' },
    ]);
    const exports = WebAssembly.Module.exports(module).map((e) => e.name);
    for (const name of ['nbody_compute_force', 'nbody_update', '__stack_pointer', '__heap_base'])
      t.true(exports.includes(name), `${variant}: ${name}`);
    const memory = new WebAssembly.Memory({ initial: 32, maximum: 32, shared: true });
    const inst = WasmInstance.create(module, memory, wasmFile({ variant }));
    t.is(inst.simd, variant === 'simd');
    t.is(inst.slot, 0);
    inst.dispose();
    // No panic path (std's panic machinery would bring formatting code and source paths):
    // every kernel is bounds-check free; a panic would trap anyway.
    const bytes = readFileSync(wasmFile({ variant }));
    t.false(bytes.includes('panic'), `${variant}: the module contains panic code`);
    // A non-shared memory is refused by the module itself (it declares a shared import).
    t.throws(() => WasmInstance.create(module, new WebAssembly.Memory({ initial: 32, maximum: 32 }), 'x'));
  }
});

test('thread slots are distinct, inside the reserved region, bounded, and given back', (t) => {
  const module = loadWasmModule({ variant: 'simd' });
  const memory = new WebAssembly.Memory({ initial: 32, maximum: 32, shared: true });
  const i32 = new Int32Array(memory.buffer as unknown as SharedArrayBuffer);
  const made: WasmInstance[] = [];
  let error: unknown = null;
  for (let k = 0; k < 200 && error === null; k++) {
    try {
      made.push(WasmInstance.create(module, memory, 'simd'));
    } catch (e) {
      error = e;
    }
  }
  t.true(error instanceof UsageError, 'exhaustion is a UsageError');
  t.regex((error as Error).message, /thread slots/);
  // Enough for the largest runtime (MAX_THREADS threads) and a spare (runtime.ts MAX_THREADS).
  t.true(made.length >= MAX_THREADS + 1, `${made.length} slots, need ${MAX_THREADS + 1}`);
  t.deepEqual(
    made.map((m) => m.slot),
    made.map((_, k) => k),
  );
  for (const m of made) {
    t.true(
      m.scratch - SLOT_STACK_BYTES >= 0 && m.scratch + (SLOT_BYTES - SLOT_STACK_BYTES) <= SLOTS_END,
      `slot ${m.slot} inside the region`,
    );
  }
  const firstStack = made[0]!.scratch - SLOT_STACK_BYTES;
  const heapBase = (new WebAssembly.Instance(module, wasmImports(memory)).exports['__heap_base'] as WebAssembly.Global).value;
  t.true(firstStack >= heapBase, 'slots start above the module’s static data');
  made[3]!.dispose();
  made[3]!.dispose(); // idempotent
  t.is(WasmInstance.create(module, memory, 'simd').slot, 3, 'a freed slot is claimed again');
  for (const m of made) m.dispose();
  t.true(i32[SLOT_CLAIM_OFFSET >> 2] !== 0, 'slot 3 (claimed again) is still held');
});

test('Runtime: backend choice, and close() gives the thread slot back (every backend uses the module: the allocator is in it)', async (t) => {
  for (const backend of ['wasm', 'ts'] as const) {
    const rt = await createRuntime({ classes: NBODY, heap: '2MB', backend });
    t.is(rt.backend, backend);
    t.is(rt.heap.i32[SLOT_CLAIM_OFFSET >> 2], 1, 'one slot: the calling thread (allocator and kernels share its instance)');
    await rt.close();
    t.is(rt.heap.i32[SLOT_CLAIM_OFFSET >> 2], 0);
  }

  // backend 'webgpu' (runtime/webgpu/, test/webgpu-*.test.ts): a runtime on a GPU device, or GpuUnavailableError saying how to get one.
  const webgpu = await createRuntime({ classes: NBODY, heap: '2MB', backend: 'webgpu' }).then(
    (r) => r,
    (e: unknown) => e as Error,
  );
  if (webgpu instanceof Error) t.is(webgpu.name, 'GpuUnavailableError', webgpu.message);
  else {
    t.is(webgpu.backend, 'webgpu');
    await webgpu.close();
  }
  await t.throwsAsync(createRuntime({ classes: NBODY, heap: '2MB', backend: 'cuda' as 'ts' }), {
    instanceOf: UsageError,
    message: /one of ts, wasm, webgpu/,
  });
  const empty = mkdtempSync(join(tmpdir(), 'smmo-nowasm-'));
  try {
    for (const backend of ['wasm', 'ts'] as const) {
      await t.throwsAsync(createRuntime({ classes: NBODY, heap: '2MB', backend, wasm: { dir: empty } }), {
        instanceOf: UsageError,
        message:
          /\(allocator and kernels\) does not exist; smmo ships the modules in wasm\/pkg\/.*`node scripts\/build-wasm\.mjs --force`.*apt-get install -y --no-install-recommends rustc libstd-rust-dev-wasm32 cargo lld-14/,
      });
    }
  } finally {
    rmSync(empty, { recursive: true, force: true });
  }
});

// Classes whose kernel declarations do not fit the module: the error names the problem.
/** nbody_update's table (posX … mass, dt), every field reading `x`, with `over` replacing entries. */
const updateParams = (over: Record<string, KernelParam> = {}): Record<string, KernelParam> => ({
  ...Object.fromEntries(
    ['posX', 'posY', 'velX', 'velY', 'forceX', 'forceY', 'mass'].map((n) => [n, { kind: 'field', name: 'x', type: 'f32' }]),
  ),
  dt: { kind: 'arg', index: 0, type: 'f64' },
  ...over,
});
const spec =
  (s: Partial<KernelSpec>): (() => KernelSpec[]) =>
  () => [{ method: 'update', export: 'nbody_update', params: updateParams(), ...s }];
class WrongArity extends object({ x: f32 }) {
  static readonly [KERNELS] = spec({ params: { x: { kind: 'field', type: 'f32' } } });
  update(): void {}
}
class NoExport extends object({ x: f32 }) {
  static readonly [KERNELS] = spec({ export: 'no_such_kernel' });
  update(): void {}
}
class NoField extends object({ x: f32 }) {
  static readonly [KERNELS] = spec({ params: updateParams({ mass: { kind: 'field', name: 'y', type: 'f32' } }) });
  update(): void {}
}
class WrongKind extends object({ x: f64 }) {
  static readonly [KERNELS] = spec({});
  update(): void {}
}
class BadArg extends object({ x: f32 }) {
  static readonly [KERNELS] = spec({});
  update(_dt: unknown): void {}
}

test('kernel specs that do not fit the module are UsageErrors', async (t) => {
  const cases: [typeof WrongArity | typeof BadArg, unknown[], RegExp][] = [
    [WrongArity, [], /parameter 1 is x \(offset\) in the declaration but posX \(offset\) in the module/],
    [NoExport, [], /has no export no_such_kernel/],
    [NoField, [], /reads field 'y', which NoField does not have/],
    [WrongKind as unknown as typeof WrongArity, [], /reads WrongKind\.x as f32, but the field is f64/],
    [BadArg, ['fast'], /argument 0 must be a number for the wasm kernel, got string/],
  ];
  for (const [cls, args, message] of cases) {
    const rt = await createRuntime({ classes: [cls], heap: '2MB', backend: 'wasm' });
    rt.create(cls as typeof WrongArity);
    const e = await t.throwsAsync((rt.parallelDo as (c: unknown, m: string, ...a: unknown[]) => Promise<void>)(cls, 'update', ...args), {
      instanceOf: MethodError,
    });
    t.true(e!.cause instanceof UsageError, cls.name);
    t.regex((e!.cause as Error).message, message);
    await rt.close();
  }
});

test('1, 2 and 3 threads run the same kernels with bit-identical results', async (t) => {
  const results: string[] = [];
  for (const threads of [1, 2, 3]) {
    const rt = await createRuntime({ classes: NBODY, heap: '4MB', backend: 'wasm', threads, modules: [NBODY_MODULE], inlineBlocks: 0 });
    try {
      await init(rt, 700, 5);
      for (let k = 0; k < 3; k++) await step(rt);
      const forces: number[] = [];
      rt.deviceDo(NBODY[0]!, (b) => forces.push(b.forceX, b.forceY, b.posX, b.velY));
      results.push(JSON.stringify([digest(rt), forces]));
      t.deepEqual(rt.stats().backend.methods, { 'Body.computeForce': 'wasm', 'Body.update': 'wasm' });
      rt.validateHeap();
    } finally {
      await rt.close();
    }
  }
  t.is(results[1], results[0]);
  t.is(results[2], results[0]);
});
