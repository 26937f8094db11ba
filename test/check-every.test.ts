/**
 * The divergence finder, `smmo run <app> --check-every K` (cli/check-every.ts L1–L6;
 * runtime/pass-hook.ts P1–P3), issue 14 item 3:
 *  - a deliberately perturbed WGSL kernel (test/check-every-update.wgsl: nbody's update
 *    with one wrong velX in one iteration) is found at its iteration, pass, class, field
 *    and object, and the two states written there load in `smmo compare`, which shows the
 *    same difference;
 *  - the test-only perturbation SMMO_TEST_PERTURB (one wrong value after one pass, standing
 *    for a wrong WASM kernel) is found the same way on the wasm backend, for a float app
 *    (nbody) and for an allocating integer app (wa-tor), through the command line (exit 1,
 *    --json report, message);
 *  - unperturbed runs report no divergence (wasm: nbody, wa-tor, game-of-life; webgpu:
 *    nbody; ts: 2 threads against 1 on nbody);
 *  - bad values are refused (exit 2) with messages that say what to do;
 *  - the pass hook sees the passes in order and leaves no trace once removed.
 * WebGPU cases skip (saying so) when the optional `webgpu` package is not installed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import type { App } from '../apps/app.js';
import nbody from '../apps/nbody/index.js';
import { Body, DT } from '../apps/nbody/body.js';
import { COMPUTE_FORCE_WGSL, gravityKernels } from '../apps/nbody/kernels.js';
import { G, DAMPENING } from '../apps/nbody/body.js';
import { parseRunFlags } from '../cli/flags.js';
import { runApp } from '../cli/run.js';
import { createRuntime, KERNELS, type KernelSpec } from '../index.js';
import { observePasses, heapSnapshot, restoreHeap } from '../runtime/pass-hook.js';
import { webgpuPackageAvailable } from '../runtime/webgpu/device.js';
import { describeChild, lastJson, smmo, type ChildResult } from './helpers/child.js';

const gpu = await webgpuPackageAvailable();
const SKIP = '[skipped: the optional npm package `webgpu` is not installed; `npm install` installs it]';
if (!gpu) console.log(`check-every.test: ${SKIP}`);
const gpuTest = gpu ? test.serial : test.skip;

const scratch = mkdtempSync(join(tmpdir(), 'smmo-check-every-'));
test.after.always(() => rmSync(scratch, { recursive: true, force: true }));
let dirs = 0;
const newDir = (): string => join(scratch, `d${dirs++}`);

interface Divergence {
  every: number;
  comparisons: number;
  agreedAt: number;
  found: boolean;
  iteration: number | null;
  passIndex: number | null;
  pass: string | null;
  class: string | null;
  field: string | null;
  object: { handle: number; runHandle: number; index: number } | null;
  reference: number | null;
  run: number | null;
  fields: Record<string, { beyond: number }>;
  states: { reference: string; run: string } | null;
}

function divergenceOf(r: ChildResult): Divergence {
  const d = lastJson(r.stdout)['divergence'] as Divergence | undefined;
  if (d === undefined) throw new Error(`no divergence report: ${describeChild(r)}`);
  return d;
}

/** `smmo compare A B --json` with the cross-check's field tolerance: exit code and report. */
async function compareStates(a: string, b: string): Promise<{ code: number; worst: string; object: Record<string, number> | null }> {
  const r = await smmo(['compare', a, b, '--field-rel', '1e-4', '--json']);
  if (r.code !== 0 && r.code !== 1) throw new Error(describeChild(r));
  const rep = lastJson(r.stdout) as {
    worst: string;
    classes: Record<string, { fields: Record<string, { worst: Record<string, number> | null }> }>;
  };
  const [cls, field] = rep.worst.split('.');
  return { code: r.code, worst: rep.worst, object: rep.classes[cls!]!.fields[field!]!.worst };
}

// ------------------------------------------------------------------ perturbed WGSL kernel

/**
 * nbody's Body with the WGSL kernel of update replaced by test/check-every-update.wgsl
 * (reached from runtime/webgpu/wgsl/, where kernel files are looked up), whose second
 * argument is the iteration; the TypeScript method ignores it. Put back after the test.
 */
function withPerturbedKernel(): () => void {
  const own = Object.getOwnPropertyDescriptor(Body, KERNELS)!;
  const specs = gravityKernels(G, DAMPENING).map((s): KernelSpec => {
    if (s.method !== 'update') return { ...s, wgsl: COMPUTE_FORCE_WGSL };
    return {
      ...s,
      params: { ...s.params, it: { kind: 'arg', index: 1, type: 'u32' } },
      wgsl: { ...s.wgsl!, file: '../../../test/check-every-update.wgsl', args: ['f32', 'u32'] },
    };
  });
  Object.defineProperty(Body, KERNELS, { ...own, value: specs });
  return () => Object.defineProperty(Body, KERNELS, own);
}

/** nbody whose update also gets the iteration (for the perturbed kernel; the TypeScript method ignores it). */
const nbodyWithIteration: App = {
  ...nbody,
  step: async (rt, iteration) => {
    await rt.parallelDo(Body, 'computeForce');
    await (rt.parallelDo as (c: typeof Body, m: string, ...a: unknown[]) => Promise<void>)(Body, 'update', DT, iteration);
  },
};

gpuTest('a perturbed WGSL kernel is found at its iteration, pass, field and object; smmo compare shows the same', async (t) => {
  const restore = withPerturbedKernel();
  const dir = newDir();
  try {
    const opts = parseRunFlags(nbody, [
      '--bodies',
      '64',
      '--iterations',
      '9',
      '--backend',
      'webgpu',
      '--check-every',
      '4',
      '--check-states',
      dir,
      '--quiet',
    ]);
    const r = await runApp(nbodyWithIteration, opts, 'test');
    const d = r.divergence!;
    t.log(JSON.stringify({ ...d, fields: Object.keys(d.fields) }));
    t.is(r.kernels['Body.update'], 'webgpu', 'the perturbed kernel ran on the GPU');
    t.true(d.found);
    t.is(d.agreedAt, 4, 'the comparison after iteration 4 agreed, the one after 8 did not');
    t.is(d.comparisons, 3, 'the initial states, after 4 and after 8');
    t.is(d.iteration, 5);
    t.is(d.passIndex, 1);
    t.is(d.pass, 'Body.update');
    t.is(d.class, 'Body');
    t.is(d.field, 'velX');
    t.is(d.object!.index, 7, 'slot 7 of the first block: the 8th body by handle');
    t.is(d.object!.handle, d.object!.runHandle);
    t.true(Math.abs(d.run! - d.reference! - 0.001) < 1e-6, `run ${d.run} − reference ${d.reference} is the kernel's 0.001`);
    t.deepEqual(
      Object.entries(d.fields)
        .filter(([, f]) => f.beyond > 0)
        .map(([k]) => k),
      ['Body.velX'],
      'only velX beyond the tolerance right after the pass',
    );
    t.false(r.check!.ok);
    const c = await compareStates(d.states!.reference, d.states!.run);
    t.is(c.code, 1);
    t.is(c.worst, 'Body.velX');
    t.is(c.object!['handleA'], d.object!.handle);
    t.is(c.object!['a'], d.reference!);
    t.is(c.object!['b'], d.run!);
  } finally {
    restore();
  }
});

gpuTest('the same run with the real kernel: no divergence (webgpu)', async (t) => {
  const r = await smmo(['run', 'nbody', '--bodies', '64', '--iterations', '9', '--backend', 'webgpu', '--check-every', '4', '--json']);
  t.is(r.code, 0, describeChild(r));
  const d = divergenceOf(r);
  t.false(d.found);
  t.is(d.comparisons, 4, 'the initial states, after iterations 4, 8 and 9');
  t.is(d.agreedAt, 9);
});

// ------------------------------------------------------------------ SMMO_TEST_PERTURB, wasm

test('wasm nbody: a wrong velX after Body.update of iteration 5 is found there; exit 1; smmo compare agrees', async (t) => {
  const dir = newDir();
  const r = await smmo(
    ['run', 'nbody', '--bodies', '64', '--iterations', '10', '--backend', 'wasm', '--check-every', '3', '--check-states', dir, '--json'],
    { env: { ...process.env, SMMO_TEST_PERTURB: '5:Body.update:Body.velX:7:0.001' } },
  );
  t.is(r.code, 1, describeChild(r));
  t.regex(
    r.stderr,
    /--check-every: the run diverged from the TypeScript reference in iteration 5, pass 1 \(Body\.update\), first in Body\.velX/,
  );
  const d = divergenceOf(r);
  t.like(d, { found: true, agreedAt: 3, comparisons: 3, iteration: 5, passIndex: 1, pass: 'Body.update', class: 'Body', field: 'velX' });
  t.is(d.object!.index, 7);
  t.true(Math.abs(d.run! - d.reference! - 0.001) < 1e-6);
  t.deepEqual(d.states, { reference: join(dir, 'reference'), run: join(dir, 'run') });
  const c = await compareStates(d.states!.reference, d.states!.run);
  t.is(c.code, 1);
  t.is(c.worst, 'Body.velX');
  t.like(c.object, { handleA: d.object!.handle, a: d.reference!, b: d.run! });
});

test('wasm nbody, the edges: a wrong force in the first pass of the first iteration, on the first object, K = 1', async (t) => {
  const r = await smmo(
    [
      'run',
      'nbody',
      '--bodies',
      '40',
      '--iterations',
      '3',
      '--backend',
      'wasm',
      '--check-every',
      '1',
      '--check-states',
      newDir(),
      '--json',
    ],
    { env: { ...process.env, SMMO_TEST_PERTURB: '0:Body.computeForce:Body.forceY:0:0.5' } },
  );
  t.is(r.code, 1, describeChild(r));
  const d = divergenceOf(r);
  t.like(d, {
    found: true,
    agreedAt: 0,
    comparisons: 2,
    iteration: 0,
    passIndex: 0,
    pass: 'Body.computeForce',
    class: 'Body',
    field: 'forceY',
  });
  t.is(d.object!.index, 0);
  t.true(Math.abs(d.run! - d.reference! - 0.5) < 1e-6);
  t.is(lastJson(r.stdout)['iterations'] as number, 1, 'the run stopped at the checkpoint that failed');
});

test('wasm wa-tor (allocating, integer): a wrong Fish.eggTimer after Fish.update of iteration 3 is found there', async (t) => {
  const dir = newDir();
  const r = await smmo(
    [
      'run',
      'wa-tor',
      '--width',
      '48',
      '--height',
      '40',
      '--iterations',
      '8',
      '--backend',
      'wasm',
      '--check-every',
      '2',
      '--check-states',
      dir,
      '--json',
    ],
    { env: { ...process.env, SMMO_TEST_PERTURB: '3:Fish.update:Fish.eggTimer:10:1' } },
  );
  t.is(r.code, 1, describeChild(r));
  const d = divergenceOf(r);
  // Passes of a wa-tor step: Cell.prepare, Fish.prepare, Cell.decide, Fish.update (3), …
  t.like(d, { found: true, agreedAt: 2, iteration: 3, passIndex: 3, pass: 'Fish.update', class: 'Fish', field: 'eggTimer' });
  t.is(d.object!.index, 10);
  t.is(d.object!.handle, d.object!.runHandle, 'same heap bytes before the pass: same handles');
  t.is(d.run! - d.reference!, 1);
  const c = await compareStates(d.states!.reference, d.states!.run);
  t.is(c.code, 1);
  t.is(c.worst, 'Fish.eggTimer');
  t.like(c.object, { handleA: d.object!.handle, a: d.reference!, b: d.run! });
});

for (const [app, size] of [
  ['nbody', ['--bodies', '64']],
  ['wa-tor', ['--width', '48', '--height', '40']],
  ['game-of-life', ['--width', '40', '--height', '40']],
] as const) {
  test(`wasm ${app}: no divergence on an unperturbed run`, async (t) => {
    const r = await smmo(['run', app, ...size, '--iterations', '7', '--backend', 'wasm', '--check-every', '3', '--json']);
    t.is(r.code, 0, describeChild(r));
    const d = divergenceOf(r);
    t.like(d, { found: false, every: 3, comparisons: 4, agreedAt: 7, states: null });
    t.true((lastJson(r.stdout)['check'] as { ok: boolean }).ok);
  });
}

test('initial states that differ are the divergence, before the first iteration (nothing replayed)', async (t) => {
  // An init that depends on the backend: the run's bodies start elsewhere.
  const skewed: App = { ...nbody, init: (rt, p, seed) => nbody.init(rt, p, rt.backend === 'ts' ? seed : seed + 1) };
  const dir = newDir();
  const opts = parseRunFlags(nbody, [
    '--bodies',
    '16',
    '--iterations',
    '5',
    '--backend',
    'wasm',
    '--check-every',
    '2',
    '--check-states',
    dir,
    '--quiet',
  ]);
  const r = await runApp(skewed, opts, 'test');
  t.like(r.divergence, { found: true, comparisons: 1, agreedAt: 0, iteration: 0, passIndex: null, pass: 'initial state', class: 'Body' });
  t.is(r.iterations, 0);
  t.truthy(r.divergence!.states);
  t.false(r.check!.ok);
});

test('--backend ts --threads 2 is compared with one thread (nbody: no divergence)', async (t) => {
  const r = await smmo(['run', 'nbody', '--bodies', '64', '--iterations', '4', '--threads', '2', '--check-every', '2', '--json']);
  t.is(r.code, 0, describeChild(r));
  t.like(divergenceOf(r), { found: false, comparisons: 3 });
});

// ------------------------------------------------------------------ bad values

test('bad values are refused with exit 2 and a message that says what to do', async (t) => {
  const bad: [string[], RegExp, NodeJS.ProcessEnv?][] = [
    [['--check-every', '0'], /--check-every must be an integer in 1 … 4294967295, got '0'/],
    [['--check-every', '1.5'], /--check-every must be an integer in 1 … 4294967295, got '1.5'/],
    [['--check-every', 'x'], /--check-every must be an integer/],
    [['--check-every=-2'], /--check-every must be an integer/],
    [['--check-every', '2', '--backend', 'ts'], /--backend ts --threads 1 is that reference/],
    [['--check-states', 'x'], /--check-states is where --check-every writes its states; add --check-every K/],
    [['--check-every', '2', '--backend', 'wasm', '--check-states', join(scratch, 'no', 'such')], /does not exist/],
    [
      ['--check-every', '2', '--backend', 'wasm'],
      /SMMO_TEST_PERTURB must be 'ITERATION:Class\.method:Class\.field:INDEX:DELTA'/,
      { SMMO_TEST_PERTURB: 'x' },
    ],
  ];
  for (const [flags, message, env] of bad) {
    const r = await smmo(['run', 'nbody', '--bodies', '8', '--iterations', '2', ...flags], env ? { env: { ...process.env, ...env } } : {});
    t.is(r.code, 2, describeChild(r));
    t.regex(r.stderr, message);
  }
  // The tolerances of --check apply to --check-every too.
  const ok = await smmo([
    'run',
    'nbody',
    '--bodies',
    '8',
    '--iterations',
    '2',
    '--backend',
    'wasm',
    '--check-every',
    '1',
    '--field-rel',
    '1e-3',
    '--json',
  ]);
  t.is(ok.code, 0, describeChild(ok));
  t.is((lastJson(ok.stdout)['check'] as { tolerance: { fieldRel: number } }).tolerance.fieldRel, 1e-3);
});

// ------------------------------------------------------------------ the pass hook

test('observePasses: the passes of a step in order; removed, no trace; heap snapshots restore a step exactly', async (t) => {
  const rt = await createRuntime({ classes: nbody.classes, heap: nbody.heapFor({ bodies: 40 }) });
  try {
    await nbody.init(rt, { bodies: 40 }, 7);
    const seen: string[] = [];
    const off = observePasses(rt, (p) => void seen.push(`${p.kind} ${p.label}`));
    t.throws(() => observePasses(rt, () => undefined), { message: /observed already/ });
    const before = await heapSnapshot(rt);
    await nbody.step(rt, 0);
    t.deepEqual(seen, ['parallelDo Body.computeForce', 'parallelDo Body.update']);
    off();
    t.false(Object.prototype.hasOwnProperty.call(rt, 'parallelDo'));
    t.false(Object.prototype.hasOwnProperty.call(rt, 'parallelNew'));
    await nbody.step(rt, 1);
    t.is(seen.length, 2, 'no hook after removal');
    const after = nbody.digest(rt);
    await restoreHeap(rt, before);
    await nbody.step(rt, 0);
    await nbody.step(rt, 1);
    t.is(nbody.digest(rt), after, 'the same two steps from the restored heap give the same digest');
  } finally {
    await rt.close();
  }
});
