/**
 * collision on WebGPU: every pass of a step (computeForce and update: nbody's WGSL
 * kernels; initializeMerge, prepareMerge, resolveMerge, updateMerge, deleteMerged:
 * runtime/webgpu/wgsl/collision_*.wgsl, declared in apps/collision/kernels.ts) runs as a
 * WGSL kernel on whatever adapter Dawn finds (SwiftShader on CI); deleteMerged frees
 * through the device-side allocator (alloc.wgsl).
 *
 * Checked against the TypeScript run after every step: the same live bodies (bodies are
 * never created after init, so handles are the host's on both sides and the sets of
 * handles must be equal), each with the same mass (a merged mass is one f32 addition on
 * both sides), the body count exactly, the digest within the app's tolerance
 * (apps/collision/README.md: 1e-6 per body; computeForce sums in f32 on the GPU). After
 * every step the heap comes back to the host and passes validateHeap() (heap.ts H1–H5).
 * `kernels` names 'webgpu' for all seven passes and no pass falls back. The hand-made
 * scenes of test/apps-collision.test.ts (nearest heavier body wins, ties to the lower id
 * against handle order, chains one link per step, no merge beyond the threshold) on the
 * GPU. Exact ties before and after a defragmentation that reverses the handle order of
 * the tied bodies (test/helpers/collision-ties.ts), with SPLIT 1 and 3 (the tied bodies in
 * different parts: `reduce` decides); a run with --defrag's schedule against the run
 * without (the same bodies by id, integer state exactly, digest within tolerance). The CLI:
 * --json kernels, --check passes. The declaration: Body[GPU_KERNELS] is seen by the GPU
 * lookup only, an override is not replaced, and the kernels that read other bodies refuse
 * a subclass (runtime/kernel-spec.ts gpuKernelFor, wgsl-kernels.ts visitsOwnClass).
 */
import test from 'ava';
import { createRuntime, type Runtime } from '../index.js';
import { Body, MERGE_THRESHOLD } from '../apps/collision/body.js';
import { CLASSES, digest, init, initBodies, step, type BodyInit } from '../apps/collision/collision.js';
import { gpuAndTsRuns, gpuSuite } from './helpers/gpu-suite.js';
import { gpuDeclaredMethods, gpuKernelFor, kernelFor, ownKernels } from '../runtime/kernel-spec.js';
import { kernelMismatch } from '../runtime/webgpu/wgsl-kernels.js';
import { describeChild, lastJson, smmo } from './helpers/child.js';
import { compareHeaps } from '../cli/check.js';
import { buildTieScene, decideMerges, expectedDecisions } from './helpers/collision-ties.js';
import { Random } from '../apps/random.js';

const { gtest, title, gpu } = await gpuSuite('webgpu-collision.test');

const PASSES = [
  'Body.computeForce',
  'Body.deleteMerged',
  'Body.initializeMerge',
  'Body.prepareMerge',
  'Body.resolveMerge',
  'Body.update',
  'Body.updateMerge',
];
/** Digest tolerance per body (apps/collision/README.md). */
const TOLERANCE_PER_BODY = 1e-6;

async function runtime(backend: 'ts' | 'webgpu'): Promise<Runtime> {
  return createRuntime({
    classes: CLASSES,
    heap: '16MB',
    seed: 1,
    threads: 1,
    backend,
    ...(backend === 'webgpu' ? { webgpu: { gpu: gpu() } } : {}),
  });
}

const at = (posX: number, posY: number, mass: number): BodyInit => ({ posX, posY, velX: 0, velY: 0, mass });

/** Live bodies as { handle: mass } (after rt.sync() on the GPU). */
function masses(rt: Runtime): Record<number, number> {
  const out: Record<number, number> = {};
  rt.deviceDo(Body, (b) => (out[b.handle] = b.mass));
  return out;
}

/** Every pass ran on the GPU, none fell back. */
function allOnGpu(t: import('ava').ExecutionContext, rt: Runtime, steps: number): void {
  const s = rt.stats();
  t.deepEqual(Object.keys(s.backend.methods).sort(), PASSES);
  t.true(
    Object.values(s.backend.methods).every((b) => b === 'webgpu'),
    JSON.stringify(s.backend.methods),
  );
  t.is(s.backend.webgpu!.fallbackPasses, 0, JSON.stringify(s.backend.webgpu!.fallbacks));
  t.is(s.backend.webgpu!.gpuPasses, 7 * steps);
}

gtest(
  title(
    '1200 bodies, 8 steps: the same bodies and masses as TypeScript after every step, digest within tolerance; heap valid; every pass on the GPU',
  ),
  async (t) => {
    const n = 1200;
    const ref = await runtime('ts');
    const rt = await runtime('webgpu');
    try {
      await init(ref, n, 42);
      await init(rt, n, 42);
      let merged = 0;
      for (let k = 1; k <= 8; k++) {
        await step(ref);
        await step(rt);
        await rt.sync();
        rt.validateHeap();
        t.is(rt.count(Body), ref.count(Body), `body count after step ${k}`);
        t.deepEqual(masses(rt), masses(ref), `bodies (handles) and masses after step ${k}`);
        let incoming = 0;
        rt.deviceDo(Body, (b) => void (incoming += b.hasIncomingMerge ? 1 : 0));
        merged += incoming;
        const d = digest(rt);
        const e = digest(ref);
        t.true(Math.abs(d - e) <= TOLERANCE_PER_BODY * rt.count(Body), `digest after step ${k}: ${d} vs ${e}`);
      }
      t.true(rt.count(Body) < n && merged === n - rt.count(Body), `bodies merged (${n} → ${rt.count(Body)}, ${merged} merges)`);
      allOnGpu(t, rt, 8);
    } finally {
      await rt.close();
      await ref.close();
    }
  },
);

gtest(
  title('prepareMerge and resolveMerge cut into SPLIT 3 and 7 parts gives the run of SPLIT 1 exactly (every field, every body)'),
  async (t) => {
    const run = async (split: number): Promise<Runtime> => {
      const rt = await createRuntime({
        classes: CLASSES,
        heap: '16MB',
        backend: 'webgpu',
        // snapshot 'host': the GPU snapshot lists blocks in atomic-cursor order, which changes computeForce's f32 sums from
        // run to run (docs/webgpu.md, collision); the host's lists keep every run's order the same, so only SPLIT differs.
        webgpu: {
          gpu: gpu(),
          snapshot: 'host',
          tunables: { 'Body.prepareMerge': { SPLIT: split }, 'Body.resolveMerge': { SPLIT: split } },
        },
      });
      await init(rt, 1500, 42);
      for (let k = 0; k < 4; k++) await step(rt);
      await rt.sync();
      t.is(rt.stats().backend.webgpu!.tunables['Body.prepareMerge']!['SPLIT'], split);
      t.is(rt.stats().backend.webgpu!.tunables['Body.resolveMerge']!['SPLIT'], split);
      return rt;
    };
    const one = await run(1);
    try {
      t.true(one.count(Body) < 1500, 'bodies merged');
      for (const split of [3, 7]) {
        const rt = await run(split);
        try {
          const c = compareHeaps(one, rt);
          t.deepEqual(c.structure, [], `SPLIT ${split}`);
          const differ = Object.entries(c.fields).filter(([, d]) => d.maxAbs !== 0);
          t.deepEqual(differ, [], `SPLIT ${split}`);
          t.is(digest(rt), digest(one), `SPLIT ${split}`);
        } finally {
          await rt.close();
        }
      }
    } finally {
      await one.close();
    }
  },
);

gtest(title('64 contested targets over several blocks: the nearer body wins each, whatever SPLIT cuts the list into'), async (t) => {
  // Per triple: b (10), x1 (20) 0.0031 to the right, x2 (30) 0.002 to the left: both target b, x2 is nearer.
  const bodies: BodyInit[] = [];
  for (let i = 0; i < 64; i++) {
    const x = (i % 8) * 0.2 - 0.8;
    const y = Math.floor(i / 8) * 0.2 - 0.8;
    bodies.push(at(x, y, 10), at(x + 0.0031, y, 20), at(x - 0.002, y, 30));
  }
  for (const split of [1, 3, 7]) {
    const rt = await createRuntime({
      classes: CLASSES,
      heap: '16MB',
      backend: 'webgpu',
      webgpu: { gpu: gpu(), tunables: { 'Body.prepareMerge': { SPLIT: split }, 'Body.resolveMerge': { SPLIT: split } } },
    });
    try {
      const h = await initBodies(rt, bodies);
      await step(rt);
      await rt.sync();
      const want: Record<number, number> = {};
      for (let i = 0; i < 64; i++) Object.assign(want, { [h[3 * i]!]: 40, [h[3 * i + 1]!]: 20 });
      t.deepEqual(masses(rt), want, `SPLIT ${split}`);
      t.is(rt.stats().backend.webgpu!.tunables['Body.resolveMerge']!['SPLIT'], split);
      rt.validateHeap();
    } finally {
      await rt.close();
    }
  }
});

gtest(title('the nearest of two heavier bodies merges into a lighter one; mass, momentum and position combine (GPU)'), async (t) => {
  const rt = await runtime('webgpu');
  try {
    const [b, x1, x2] = await initBodies(rt, [at(0, 0, 10), { ...at(0.0031, 0, 20), velY: 1e-3 }, { ...at(-0.002, 0, 30), velX: 2e-3 }]);
    await step(rt);
    await rt.sync();
    t.deepEqual(masses(rt), { [b!]: 40, [x1!]: 20 });
    const merged = rt.get(Body, b!);
    t.true(merged.hasIncomingMerge);
    t.false(rt.get(Body, x1!).hasIncomingMerge);
    t.true(Math.abs(merged.velX - (30 * 2e-3) / 40) < 1e-6, `velX ${merged.velX}`);
    t.true(Math.abs(merged.velY) < 1e-6);
    t.true(Math.abs(merged.posX - (0 + (-0.002 + 2e-3 * 0.05)) / 2) < 1e-6, `posX ${merged.posX}`);
    t.is(rt.count(Body), 2);
    t.false(x2! in masses(rt), 'x2 merged and is gone');
    rt.validateHeap();
    allOnGpu(t, rt, 1);
  } finally {
    await rt.close();
  }
});

gtest(title('equal distances: the lower id wins, not the lower handle (GPU)'), async (t) => {
  const rt = await runtime('webgpu');
  try {
    const [b, x1, x2] = await initBodies(rt, [at(0, 0, 10), at(0.002, 0, 20), at(-0.002, 0, 20)]);
    t.true(x1! < x2!);
    rt.get(Body, x1!).id = 2; // x2 comes first in the tie order
    rt.get(Body, x2!).id = 1;
    await step(rt);
    await rt.sync();
    t.deepEqual(masses(rt), { [b!]: 30, [x1!]: 20 }, 'x2 (lower id, higher handle) merged into b and is gone');
  } finally {
    await rt.close();
  }
});

gtest(title('two lighter bodies at equal distance: the target is the lower id, not the lower handle (GPU and TypeScript)'), async (t) => {
  for (const backend of ['webgpu', 'ts'] as const) {
    const rt = await runtime(backend);
    try {
      // Symmetric scene: x's two candidates are equally near (and of equal mass, so they do not target each other).
      const [b1, x, b2] = await initBodies(rt, [at(0.002, 0, 10), at(0, 0, 20), at(-0.002, 0, 10)]);
      t.true(b1! < b2!);
      rt.get(Body, b1!).id = 7; // b2 comes first in the tie order
      rt.get(Body, b2!).id = 5;
      await step(rt);
      await rt.sync();
      t.deepEqual(masses(rt), { [b1!]: 10, [b2!]: 30 }, `${backend}: x (${x}) merged into b2, the lower id`);
    } finally {
      await rt.close();
    }
  }
});

gtest(title('exact ties go to the lower id before and after a defrag that reverses handle order (GPU, SPLIT 1 and 3)'), async (t) => {
  for (const split of [1, 3]) {
    for (const swap of [false, true]) {
      const rt = await createRuntime({
        classes: CLASSES,
        heap: '16MB',
        backend: 'webgpu',
        webgpu: { gpu: gpu(), tunables: { 'Body.prepareMerge': { SPLIT: split }, 'Body.resolveMerge': { SPLIT: split } } },
      });
      try {
        const label = `SPLIT ${split}, swap ${swap}`;
        const scene = await buildTieScene(rt, swap);
        const want = expectedDecisions(scene);
        const h = scene.handles;
        t.true(h.pA < h.qA && h.pB < h.qB, `${label}: before, P below Q`);
        t.deepEqual(await decideMerges(rt, scene), want, `${label}: before defrag`);
        const r = rt.defrag(Body, 1);
        t.true(r.remap(h.pA) > r.remap(h.qA) && r.remap(h.pB) > r.remap(h.qB), `${label}: the handle order of both pairs reversed`);
        t.deepEqual(await decideMerges(rt, scene), want, `${label}: after defrag`);
        rt.validateHeap();
        t.is(rt.stats().backend.methods['Body.prepareMerge'], 'webgpu');
        t.is(rt.stats().backend.webgpu!.tunables['Body.prepareMerge']!['SPLIT'], split);
      } finally {
        await rt.close();
      }
    }
  }
});

gtest(
  title(
    'a run defragmented after every step = the run without: the same bodies by id, integer state exactly, digest within tolerance (GPU)',
  ),
  async (t) => {
    // A dense scene (many merges empty blocks); snapshot 'host': runs repeat exactly (docs/webgpu.md), so only defrag differs.
    const rng = new Random(23);
    const bodies: BodyInit[] = Array.from({ length: 600 }, () => ({
      posX: -0.1 + 0.15 * rng.next(),
      posY: 0.2 + 0.15 * rng.next(),
      velX: (rng.next() - 0.5) / 1000,
      velY: (rng.next() - 0.5) / 1000,
      mass: (rng.next() / 2 + 0.5) * 75,
    }));
    const run = async (defrag: boolean): Promise<{ rt: Runtime; ints: [number, number, boolean, boolean][]; moved: number }> => {
      const rt = await createRuntime({ classes: CLASSES, heap: '16MB', backend: 'webgpu', webgpu: { gpu: gpu(), snapshot: 'host' } });
      await initBodies(rt, bodies);
      let moved = 0;
      for (let k = 1; k <= 6; k++) {
        await step(rt);
        await rt.sync();
        if (defrag && k < 6) moved += rt.defrag(Body, 2).stats.objectsMoved;
      }
      const ints: [number, number, boolean, boolean][] = [];
      rt.deviceDo(Body, (b) => void ints.push([b.id, b.mergeTarget?.id ?? -1, b.hasIncomingMerge, b.successfulMerge]));
      return { rt, ints: ints.sort((x, y) => x[0] - y[0]), moved };
    };
    const plain = await run(false);
    const moved = await run(true);
    try {
      t.true(moved.moved > 0 && plain.rt.count(Body) < 500, `bodies merged (600 → ${plain.rt.count(Body)}) and moved (${moved.moved})`);
      t.is(moved.rt.count(Body), plain.rt.count(Body));
      t.deepEqual(moved.ints, plain.ints, 'id, mergeTarget id, hasIncomingMerge, successfulMerge of every body');
      const [d, e] = [digest(moved.rt), digest(plain.rt)];
      t.true(Math.abs(d - e) <= TOLERANCE_PER_BODY * plain.rt.count(Body), `digest ${d} vs ${e}`);
      moved.rt.validateHeap();
    } finally {
      await moved.rt.close();
      await plain.rt.close();
    }
  },
);

gtest(title('a body whose target merges itself does not merge (chains resolve one link per step) (GPU)'), async (t) => {
  const rt = await runtime('webgpu');
  try {
    const [c, b, x] = await initBodies(rt, [at(0, 0, 5), at(0.002, 0, 10), at(0.0035, 0, 20)]);
    await step(rt);
    await rt.sync();
    t.deepEqual(masses(rt), { [c!]: 15, [x!]: 20 }, `b (${b}) merged into c`);
    await step(rt);
    await rt.sync();
    t.deepEqual(masses(rt), { [c!]: 35 });
    rt.validateHeap();
  } finally {
    await rt.close();
  }
});

gtest(title('bodies farther apart than the threshold, or of equal mass, never merge (GPU)'), async (t) => {
  const rt = await runtime('webgpu');
  try {
    const d = MERGE_THRESHOLD * 1.01;
    await initBodies(rt, [at(0, 0, 10), at(d, 0, 20), at(0.5, 0.5, 10), at(0.5 + MERGE_THRESHOLD / 2, 0.5, 10)]);
    for (let k = 0; k < 3; k++) await step(rt);
    await rt.sync();
    t.is(rt.count(Body), 4);
  } finally {
    await rt.close();
  }
});

gtest(
  title('smmo run collision --backend webgpu --json: kernels all webgpu, body count equal to --backend ts; --check passes'),
  async (t) => {
    const args = ['run', 'collision', '--bodies', '800', '--iterations', '5', '--json'];
    const { gpuRun, tsRun } = await gpuAndTsRuns(t, args, PASSES);
    t.deepEqual(gpuRun['objects'], tsRun['objects']);
    const count = (tsRun['objects'] as { Body: number }).Body;
    t.true(count < 800, `some bodies merged (${count})`);
    t.true(Math.abs((gpuRun['digest'] as number) - (tsRun['digest'] as number)) <= TOLERANCE_PER_BODY * count);
    const checkedRun = await smmo([...args, '--backend', 'webgpu', '--check']);
    t.is(checkedRun.code, 0, describeChild(checkedRun));
    const check = lastJson(checkedRun.stdout)['check'] as { ok: boolean; rank: string[] };
    t.true(check.ok, JSON.stringify(check));
  },
);

/** A subclass that keeps Body's methods, and one that overrides updateMerge. */
class Comet extends Body {}
class Sticky extends Body {
  override updateMerge(): void {}
}

test('GPU_KERNELS: found by gpuKernelFor only (never by the WASM lookup); an override below the declaring class is not replaced', async (t) => {
  const rt = await createRuntime({ classes: [Body, Comet, Sticky], heap: '16MB' });
  try {
    const body = rt.table.byClass(Body)!;
    const comet = rt.table.byClass(Comet)!;
    const sticky = rt.table.byClass(Sticky)!;
    t.deepEqual(gpuDeclaredMethods(body).sort(), ['deleteMerged', 'initializeMerge', 'updateMerge']);
    for (const m of ['initializeMerge', 'updateMerge', 'deleteMerged']) {
      t.is(kernelFor(body, m), null, `the WASM lookup does not see ${m}`);
      t.is(gpuKernelFor(body, m)?.wgsl?.file, `collision_${m.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)}.wgsl`);
    }
    t.false(
      ownKernels(Body).some((s) => ['initializeMerge', 'updateMerge', 'deleteMerged'].includes(s.method)),
      'not in [KERNELS] (wasm/src/params.rs)',
    );
    t.is(gpuKernelFor(sticky, 'updateMerge'), null, "Sticky's override runs in TypeScript");
    t.not(gpuKernelFor(sticky, 'initializeMerge'), null);
    // A subclass inherits the declarations; kernels that read other bodies with their own
    // class's offsets refuse it (deviceDo over Body ≠ Comet), the others fit.
    const fits = (m: string): string | null => {
      const spec = kernelFor(comet, m) ?? gpuKernelFor(comet, m)!;
      return kernelMismatch(spec.wgsl!, comet, spec);
    };
    for (const m of ['prepareMerge', 'resolveMerge', 'updateMerge']) t.regex(fits(m) ?? '', /visits Comet objects only/, m);
    for (const m of ['initializeMerge', 'deleteMerged']) t.is(fits(m), null, m);
    // And Body itself, now that it has subclasses (the runner also refuses any class with subclasses).
    const spec = gpuKernelFor(body, 'updateMerge')!;
    t.regex(kernelMismatch(spec.wgsl!, body, spec) ?? '', /Body has subclasses/);
  } finally {
    await rt.close();
  }
});
