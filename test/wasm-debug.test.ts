/**
 * The checking build of the WebAssembly module (`node scripts/build-wasm.mjs
 * --debug-assertions --out DIR`): the same sources with `-C debug-assertions=on`, so that the
 * crate's `debug_assert!`s on kernel and allocator preconditions (wasm/src/blocks.rs: block
 * geometry against the heap header, list ranges and positions, block indices, handles, field
 * offsets, slot counts; lanes.rs: lane-group alignment, masks; alloc/: bitmap positions …)
 * and Rust's overflow checks run, and trap when one fails. The shipped modules (wasm/pkg) are
 * release builds without them.
 *  - the checking build traps on a broken precondition, where the shipped one does not check;
 *  - nbody, collision and wa-tor run on it, simd and scalar, 1 and 2 threads, without a trap
 *    and to the digests of the shipped modules.
 */
import test from 'ava';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AppParams } from '../apps/app.js';
import { appModule, loadApp } from '../apps/registry.js';
import { createRuntime, type Runtime } from '../index.js';
import { describeChild, runNode } from './helpers/child.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PKG = join(ROOT, 'wasm', 'pkg');
const DEBUG = mkdtempSync(join(tmpdir(), 'smmo-wasm-debug-'));
const built = runNode([join(ROOT, 'scripts', 'build-wasm.mjs'), '--debug-assertions', '--out', DEBUG], { cwd: ROOT });

test.after.always(() => rmSync(DEBUG, { recursive: true, force: true }));

test('the checking build traps on a broken kernel precondition; the shipped build does not check', async (t) => {
  const r = await built;
  t.is(r.code, 0, describeChild(r));
  t.regex(r.stdout, /checking build, debug assertions on/);
  for (const variant of ['simd', 'scalar'] as const) {
    for (const [dir, checks] of [
      [DEBUG, true],
      [PKG, false],
    ] as const) {
      const module = new WebAssembly.Module(readFileSync(join(dir, `smmo_${variant}.wasm`)));
      // An unformatted heap (all zero): its header names no blocks, so blocks at byte 64
      // are not this heap's. The list range is empty: without the check, nothing happens.
      const memory = new WebAssembly.Memory({ initial: 32, maximum: 32, shared: true });
      const inst = new WebAssembly.Instance(module, { env: { memory, smmo_pause: () => {} } });
      const update = inst.exports['nbody_update'] as (
        list: number,
        from: number,
        to: number,
        blocks: number,
        bytes: number,
        params: number,
      ) => void;
      const call = (): void => update(0, 0, 0, 64, 16, 512 * 1024);
      if (checks) t.throws(call, { message: /unreachable/ }, `${variant}: the checking build`);
      else t.notThrows(call, `${variant}: the shipped build`);
    }
  }
});

/** Small runs of the apps with kernels: enough steps to merge bodies (collision) and breed and eat (wa-tor). */
const RUNS: { app: string; params: AppParams; steps: number; allocates: boolean }[] = [
  { app: 'nbody', params: { bodies: 300 }, steps: 3, allocates: false },
  { app: 'collision', params: { bodies: 2000 }, steps: 12, allocates: true },
  { app: 'wa-tor', params: { width: 64, height: 48 }, steps: 12, allocates: true },
];

/** Live objects per class. */
const objectsOf = (rt: Runtime): Record<string, number> =>
  Object.fromEntries(Object.entries(rt.stats().types).map(([k, v]) => [k, v.objects]));

async function digestOf(name: string, params: AppParams, steps: number, dir: string, variant: 'simd' | 'scalar', threads: number) {
  const app = (await loadApp(name))!;
  const all: AppParams = { ...Object.fromEntries(app.flags.map((f) => [f.name, f.default])), ...params };
  const rt = await createRuntime({
    classes: app.classes,
    heap: app.heapFor(all),
    threads,
    backend: 'wasm',
    wasm: { dir, variant },
    ...(threads > 1 ? { modules: [appModule(name)!], inlineBlocks: 0, startTimeoutMs: 120_000 } : {}),
  });
  try {
    await app.init(rt, all, 7);
    const before = objectsOf(rt);
    for (let k = 0; k < steps; k++) await app.step(rt, k);
    rt.validateHeap();
    const methods = rt.stats().backend.methods;
    return {
      digest: app.digest(rt),
      before,
      after: objectsOf(rt),
      wasm: Object.keys(methods)
        .filter((m) => methods[m] === 'wasm')
        .sort(),
    };
  } finally {
    await rt.close();
  }
}

for (const { app, params, steps, allocates } of RUNS) {
  test(`${app} runs on the checking build (simd and scalar, 1 and 2 threads) to the shipped build's digest`, async (t) => {
    const r = await built;
    t.is(r.code, 0, describeChild(r));
    const shipped = await digestOf(app, params, steps, PKG, 'simd', 1);
    if (allocates) t.notDeepEqual(shipped.after, shipped.before, `${app}: the run creates or deletes objects`);
    t.true(shipped.wasm.length > 0, `${app}: methods run as kernels`);
    for (const variant of ['simd', 'scalar'] as const) {
      for (const threads of [1, 2]) {
        const checked = await digestOf(app, params, steps, DEBUG, variant, threads);
        t.is(checked.digest, shipped.digest, `${app}, ${variant}, ${threads} thread(s)`);
        t.deepEqual(checked.after, shipped.after, `${app}, ${variant}, ${threads} thread(s): objects`);
        t.deepEqual(checked.wasm, shipped.wasm, `${app}, ${variant}, ${threads} thread(s): the same kernels ran`);
      }
    }
  });
}
