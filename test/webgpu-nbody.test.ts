/**
 * WGSL nbody kernels (runtime/webgpu/wgsl/nbody_*.wgsl) against the TypeScript methods
 * of apps/nbody/body.ts, on whatever adapter Dawn finds (SwiftShader on CI).
 *
 * Every body count 0…129, with holes: some bodies are deleted before the run (single
 * slots, and for larger counts a whole block, which goes back to the free bitmap), so
 * the kernels must follow the block list and the iteration bitmaps exactly. Both sides
 * start from the same heap; after the steps every field of every body must agree within
 * DEFAULT_TOLERANCE (cli/check.ts), and the live-object sets must be equal.
 * Also: the tunables (WG, SPLIT) give the same results; consecutive GPU passes keep the
 * heap on the GPU (one upload, no download until the host asks); a method without a
 * kernel falls back to TypeScript after a download and is counted; the full crossCheck().
 */
import test from 'ava';
import app from '../apps/nbody/index.js';
import collision from '../apps/collision/index.js';
import { Tally } from './helpers/cpu-only.js';
import { Body, DT } from '../apps/nbody/body.js';
import { init } from '../apps/nbody/nbody.js';
import { UPDATE_WGSL } from '../apps/nbody/kernels.js';
import { createRuntime, f32, f64, KERNELS, object, UsageError, type KernelParam, type KernelSpec, type Runtime } from '../index.js';
import { compareHeaps, crossCheck, DEFAULT_TOLERANCE, formatCrossCheck, gpuRuntimeView } from '../cli/check.js';
import { gpuSuite } from './helpers/gpu-suite.js';
import { GpuRunner } from '../runtime/webgpu/runner.js';

const { gtest, title, gpu } = await gpuSuite('webgpu-nbody.test');

/** Smallest heap: the GPU copy is small, so 130 runs stay fast on SwiftShader. */
const HEAP = 1200 * 1024;

/** n bodies from seed, then deletions: every 7th body, and bodies 32…63 (a whole block) when n ≥ 96. */
async function bodies(n: number, seed: number): Promise<Runtime> {
  const rt = await createRuntime({ classes: [Body], heap: HEAP, seed: 1 });
  await init(rt, n, seed);
  const handles: number[] = [];
  rt.deviceDo(Body, (b) => void handles.push(b.handle));
  handles.forEach((h, i) => {
    if (i % 7 === 3 || (n >= 96 && i >= 32 && i < 64)) rt.destroy(rt.get(Body, h));
  });
  return rt;
}

async function step(rt: Runtime): Promise<void> {
  await rt.parallelDo(Body, 'computeForce');
  await rt.parallelDo(Body, 'update', DT);
}

gtest(title('computeForce + update agree with TypeScript for 0…129 bodies with holes'), async (t) => {
  const failures: string[] = [];
  let compared = 0;
  for (let n = 0; n <= 129; n++) {
    const ref = await bodies(n, 100 + n);
    const dut = await bodies(n, 100 + n);
    const runner = await GpuRunner.create(dut, { gpu: gpu() });
    try {
      const view = gpuRuntimeView(dut, runner);
      for (let i = 0; i < 2; i++) {
        await step(ref);
        await step(view);
      }
      t.is(runner.stats.fallbackPasses, 0);
      await runner.toHost();
      dut.validateHeap();
      const c = compareHeaps(ref, dut);
      compared += c.objects['Body'] ?? 0;
      if (!c.fieldsOk) failures.push(`n=${n}: ${c.structure.join('; ')} worst ${c.worst} ${JSON.stringify(c.fields[c.worst])}`);
    } finally {
      await runner.close({ download: false });
      await ref.close();
      await dut.close();
    }
  }
  t.deepEqual(failures, []);
  t.true(compared > 4000, `compared ${compared} bodies`);
});

for (const tun of [
  { WG: 32, SPLIT: 1 },
  { WG: 64, SPLIT: 3 },
  { WG: 256, SPLIT: 2 },
]) {
  gtest(title(`tunables WG=${tun.WG} SPLIT=${tun.SPLIT} give the same forces (200 bodies with holes)`), async (t) => {
    const ref = await bodies(200, 7);
    const dut = await bodies(200, 7);
    const runner = await GpuRunner.create(dut, { gpu: gpu(), tunables: { 'Body.computeForce': tun, 'Body.update': { WG: tun.WG } } });
    try {
      await ref.parallelDo(Body, 'computeForce');
      await runner.parallelDo(Body, 'computeForce');
      await runner.toHost();
      const c = compareHeaps(ref, dut);
      t.true(c.fieldsOk, JSON.stringify(c.fields[c.worst]));
      t.true(c.fields['Body.forceX']!.scale > 0);
    } finally {
      await runner.close({ download: false });
      await ref.close();
      await dut.close();
    }
  });
}

gtest(title('consecutive GPU passes keep the heap on the GPU; the host copy is refreshed only on request'), async (t) => {
  const rt = await bodies(100, 3);
  const runner = await GpuRunner.create(rt, { gpu: gpu(), passesPerSubmit: 4 });
  try {
    const fields = (): number[] => {
      const out: number[] = [];
      rt.deviceDo(Body, (b) => void out.push(b.posX, b.posY, b.velX, b.velY, b.forceX, b.forceY));
      return out;
    };
    const before = fields();
    for (let i = 0; i < 5; i++) {
      await runner.parallelDo(Body, 'computeForce');
      await runner.parallelDo(Body, 'update', DT);
    }
    let s = runner.stats;
    t.is(s.uploads, 1, 'one upload for ten GPU passes');
    t.is(s.downloads, 0, 'no download between GPU passes');
    t.is(s.snapshots, 1, 'the block lists of the first pass stay valid');
    t.is(s.gpuPasses, 10);
    t.true(runner.gpuNewer);
    t.true(
      fields().every((x, i) => x === before[i]),
      'the host heap is untouched until toHost()',
    );
    await runner.toHost();
    s = runner.stats;
    t.is(s.downloads, 1);
    t.false(runner.gpuNewer);
    t.false(
      fields().every((x, i) => x === before[i]),
      'toHost() brought the results',
    );
    rt.validateHeap();
  } finally {
    await runner.close({ download: false });
    await rt.close();
  }
});

// A class with the nbody fields whose update declares nbody's kernels (WASM and WGSL), whose
// spin declares a WASM kernel but no WGSL one, and whose nudge has no kernel at all.
const moverParams: Record<string, KernelParam> = {
  ...Object.fromEntries(['posX', 'posY', 'velX', 'velY', 'forceX', 'forceY', 'mass'].map((name) => [name, { kind: 'field', type: 'f32' }])),
  dt: { kind: 'arg', index: 0, type: 'f64' },
};
class Mover extends object({ posX: f32, posY: f32, velX: f32, velY: f32, forceX: f32, forceY: f32, mass: f32 }) {
  static readonly [KERNELS]: readonly KernelSpec[] = [
    { method: 'update', export: 'nbody_update', params: moverParams, wgsl: UPDATE_WGSL },
    { method: 'spin', export: 'no_such_kernel', params: {} },
  ];
  nudge(dx: number): void {
    this.posX += dx;
  }
  spin(): void {
    this.velX = -this.velX;
  }
  update(dt: number): void {
    this.velX += (this.forceX * dt) / this.mass;
    this.velY += (this.forceY * dt) / this.mass;
    this.posX += this.velX * dt;
    this.posY += this.velY * dt;
    if (this.posX < -1 || this.posX > 1) this.velX = -this.velX;
    if (this.posY < -1 || this.posY > 1) this.velY = -this.velY;
  }
}

gtest(title('a method without a WGSL kernel falls back to TypeScript after a download, visibly'), async (t) => {
  const make = async (): Promise<Runtime> => {
    const rt = await createRuntime({ classes: [Mover], heap: HEAP });
    await rt.parallelNew(Mover, 40, (b, i) => {
      b.posX = i / 50;
      b.mass = 1 + i;
      b.velX = 0.01 * (i % 4);
      b.forceX = i % 3;
      b.forceY = 1 - (i % 5);
    });
    return rt;
  };
  const ref = await make();
  const dut = await make();
  // generate: false — methods without a hand-written kernel would otherwise run as generated WGSL (test/webgpu-generated.test.ts).
  const runner = await GpuRunner.create(dut, { gpu: gpu(), generate: false });
  try {
    t.true(runner.hasKernel(Mover, 'update'), 'Mover.update opts in to nbody_update');
    t.false(runner.hasKernel(Mover, 'nudge'));
    t.false(runner.hasKernel(Mover, 'spin'));
    const plan: [string, number[]][] = [
      ['update', [DT]],
      ['nudge', [0.25]],
      ['update', [DT]],
      ['spin', []],
      ['update', [DT]],
    ];
    for (const [m, args] of plan) {
      await ref.parallelDo(Mover, m as 'update', ...(args as [number]));
      t.is(await runner.parallelDo(Mover, m, ...args), m === 'update' ? 'gpu' : 'ts');
    }
    await runner.toHost();
    const s = runner.stats;
    t.is(s.gpuPasses, 3);
    t.is(s.fallbackPasses, 2);
    t.deepEqual(s.fallbacks, {
      'Mover.nudge': { passes: 1, reason: 'Mover declares no kernel for nudge (static [KERNELS])' },
      'Mover.spin': { passes: 1, reason: 'the kernel declaration of Mover.spin has no WGSL kernel' },
    });
    t.is(s.uploads, 3, 'uploaded again after each TypeScript pass');
    t.is(s.downloads, 3, 'downloaded before each TypeScript pass and at the end');
    const c = compareHeaps(ref, dut);
    t.true(c.fieldsOk, JSON.stringify(c.fields[c.worst]));
  } finally {
    await runner.close({ download: false });
    await ref.close();
    await dut.close();
  }
});

class Mover64 extends object({ posX: f64, posY: f32, velX: f32, velY: f32, forceX: f32, forceY: f32, mass: f32 }) {
  static readonly [KERNELS]: readonly KernelSpec[] = [{ method: 'update', export: 'nbody_update', params: moverParams, wgsl: UPDATE_WGSL }];
  update(): void {}
}

gtest(title('a kernel whose fields do not match the class is not used'), async (t) => {
  const rt = await createRuntime({ classes: [Mover64], heap: HEAP });
  const runner = await GpuRunner.create(rt, { gpu: gpu() });
  try {
    const r = runner.resolve(Mover64, 'update');
    t.true('reason' in r && /Mover64\.posX is f64, the kernel needs f32/.test(r.reason), JSON.stringify(r));
  } finally {
    await runner.close({ download: false });
    await rt.close();
  }
});

gtest(title('collision: every pass on the GPU (the merge passes delete bodies through alloc.wgsl), same result'), async (t) => {
  // 1000 bodies in [-1, 1]²: a few pairs start closer than the merge threshold, so bodies are deleted.
  const r = await crossCheck(collision, { bodies: 1000 }, { iterations: 3, seed: 3, gpu: gpu(), heap: HEAP });
  t.log(formatCrossCheck(r));
  t.true(r.ok, formatCrossCheck(r));
  t.true(r.objects['Body']! < 1000, `merges deleted bodies (${r.objects['Body']} left)`);
  t.is(r.gpuStats.gpuPasses, 21, 'all seven passes ran on the GPU (test/webgpu-collision.test.ts checks them pass by pass)');
  t.is(r.gpuStats.fallbackPasses, 0);
  t.deepEqual(r.gpuStats.fallbacks, {});
  t.is(r.gpuStats.snapshots, 3, 'one host snapshot, then one GPU snapshot after each deleteMerged that a later pass needs');
});

gtest(title("Runtime with backend 'webgpu': passes on the GPU, host reads after sync(), stats name the backend"), async (t) => {
  const rt = await createRuntime({ classes: [Body], heap: HEAP, backend: 'webgpu', webgpu: { gpu: gpu() } });
  const ref = await createRuntime({ classes: [Body], heap: HEAP });
  try {
    t.is(rt.backend, 'webgpu');
    for (const r of [rt, ref]) {
      await init(r, 100, 11);
      await step(r);
    }
    t.throws(() => rt.count(Body), { instanceOf: UsageError, message: /await rt\.sync\(\)/ });
    t.throws(() => rt.stats(), { instanceOf: UsageError });
    await rt.sync();
    t.is(rt.count(Body), 100);
    let s = rt.stats();
    t.is(s.backend.name, 'webgpu');
    t.deepEqual(s.backend.methods, { 'Body.computeForce': 'webgpu', 'Body.update': 'webgpu' });
    t.is(s.backend.webgpu!.gpuPasses, 2);
    t.is(s.backend.webgpu!.fallbackPasses, 0);
    // Host writes after sync() reach the GPU: a new body and a moved one.
    for (const r of [rt, ref]) {
      r.create(Body, { posX: 0.5, posY: -0.5, mass: 700 });
      let first = 0;
      r.deviceDo(Body, (b) => void (first ||= b.handle));
      r.get(Body, first).posX = 0.25;
      await step(r);
    }
    await rt.sync();
    s = rt.stats();
    t.is(s.backend.webgpu!.uploads, 2);
    t.is(rt.count(Body), 101);
    const c = compareHeaps(ref, rt);
    t.true(c.fieldsOk, JSON.stringify(c));
    rt.validateHeap();
  } finally {
    await rt.close();
    await ref.close();
  }
});

gtest(title("backend 'webgpu' with worker threads: passes without a WGSL kernel run on the workers"), async (t) => {
  // collision runs every pass on the GPU (hand-written kernels); Tally.bump (test/helpers/cpu-only.ts) has no kernel and,
  // with generated kernels off, runs on the workers.
  const modules = [new URL('../apps/collision/index.js', import.meta.url), new URL('./helpers/cpu-only.js', import.meta.url)];
  const classes = [...collision.classes, Tally];
  const webgpu = { gpu: gpu(), generate: false };
  const rt = await createRuntime({ classes, heap: HEAP, backend: 'webgpu', webgpu, threads: 2, modules, inlineBlocks: 0 });
  const ref = await createRuntime({ classes, heap: HEAP });
  try {
    for (const r of [rt, ref]) {
      await collision.init(r, { bodies: 600 }, 4);
      await r.parallelNew(Tally, 300, (x, i) => void (x.x = i));
      for (let i = 0; i < 2; i++) {
        await collision.step(r, i);
        await r.parallelDo(Tally, 'bump', 0.5);
      }
    }
    await rt.sync();
    const s = rt.stats().backend;
    t.is(s.methods['Body.computeForce'], 'webgpu');
    t.is(s.methods['Body.prepareMerge'], 'webgpu');
    t.is(s.methods['Tally.bump'], 'ts');
    t.is(s.webgpu!.fallbackPasses, 2);
    const c = compareHeaps(ref, rt);
    t.true(c.fieldsOk, JSON.stringify(c.fields[c.worst]));
  } finally {
    await rt.close();
    await ref.close();
  }
});

gtest(title('crossCheck(nbody) reports per-field differences within the documented tolerance'), async (t) => {
  const r = await crossCheck(app, { bodies: 96 }, { iterations: 3, seed: 5, gpu: gpu(), heap: HEAP });
  t.log(formatCrossCheck(r));
  t.true(r.ok, formatCrossCheck(r));
  t.deepEqual(r.tolerance, { ...DEFAULT_TOLERANCE });
  t.deepEqual(Object.keys(r.fields).sort(), [
    'Body.forceX',
    'Body.forceY',
    'Body.mass',
    'Body.posX',
    'Body.posY',
    'Body.velX',
    'Body.velY',
  ]);
  t.true(r.fields['Body.forceX']!.scale > 0);
  t.is(r.objects['Body'], 96);
  t.is(r.gpuStats.gpuPasses, 6);
});

test('compareHeaps notices a wrong value and a missing object', async (t) => {
  const a = await bodies(40, 9);
  const b = await bodies(40, 9);
  try {
    t.true(compareHeaps(a, b).fieldsOk);
    let first = 0;
    b.deviceDo(Body, (x) => {
      if (first === 0) first = x.handle;
    });
    b.get(Body, first).velX += 1e-3;
    const c = compareHeaps(a, b);
    t.false(c.fieldsOk);
    t.is(c.worst, 'Body.velX');
    t.is(c.fields['Body.velX']!.worst!.handleA, first);
    b.destroy(b.get(Body, first));
    t.regex(compareHeaps(a, b).structure[0] ?? '', /Body: 34 live objects in the reference, 33 in the run checked against it/);
  } finally {
    await a.close();
    await b.close();
  }
});
