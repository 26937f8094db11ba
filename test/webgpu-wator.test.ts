/**
 * wa-tor on WebGPU (runtime/webgpu/wgsl/wator_*.wgsl, declared in apps/wa-tor/kernels.ts):
 * every pass of a step runs as a WGSL kernel, Fish.update and Shark.update creating and
 * deleting agents through the device-side allocator (alloc.wgsl), on whatever adapter
 * Dawn finds (SwiftShader on CI).
 *
 * Checked against the TypeScript run: after every step the digest and, stronger, every
 * cell's state in id order (its stream, its agent's kind, stream, egg timer and energy)
 * are identical; handles differ (GPU allocation order), so heaps are not compared byte
 * for byte. After every step the heap comes back to the host and must pass
 * validateHeap() (heap.ts H1–H5) and the torus's invariants (wator.ts checkInvariants).
 * `kernels` names 'webgpu' for all six passes and no pass falls back. Hand-checked
 * cases: a shark alone starves after ENERGY_START steps; a fish on a 1 × 1 torus can go
 * nowhere (its STAY flag: it never moves, so never spawns); a fish alone moves one cell
 * per step and spawns behind it once its egg timer passes SPAWN_THRESHOLD. The divergence
 * finder (`--check-every`) finds a deliberately broken declaration of Shark.update at the
 * right iteration, pass, class and fields, and reports nothing for the real one.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRuntime, KERNELS, type KernelSpec, type Runtime } from '../index.js';
import watorApp from '../apps/wa-tor/index.js';
import { parseRunFlags } from '../cli/flags.js';
import { runApp } from '../cli/run.js';
import { Agent, Cell, ENERGY_START, Fish, Shark, spawnFish, spawnShark, SPAWN_THRESHOLD } from '../apps/wa-tor/model.js';
import { checkInvariants, CLASSES, digest, forEachCell, init, neighborIds, step } from '../apps/wa-tor/wator.js';
import { cellTable } from '../apps/grid.js';
import { gpuAndTsRuns, gpuSuite } from './helpers/gpu-suite.js';
import { kernelArrayMismatch } from '../runtime/webgpu/wgsl-kernels.js';
import { describeChild, lastJson, smmo } from './helpers/child.js';

const { gtest, title, gpu } = await gpuSuite('webgpu-wator.test');

const HEAP = 8 << 20;
const PASSES = ['Cell.decide', 'Cell.prepare', 'Fish.prepare', 'Fish.update', 'Shark.prepare', 'Shark.update'];

async function runtimeFor(width: number, height: number, seed: number, backend: 'ts' | 'webgpu', heap = HEAP): Promise<Runtime> {
  const rt = await createRuntime({
    classes: CLASSES,
    heap,
    seed: 1,
    threads: 1,
    backend,
    ...(backend === 'webgpu' ? { webgpu: { gpu: gpu() } } : {}),
  });
  await init(rt, width, height, seed);
  return rt;
}

/** Every cell's state in id order: its stream, then its agent's kind, stream, egg timer and energy (handle-free). */
function cellStates(rt: Runtime, width: number, height: number): number[][] {
  const cells = cellTable(rt.context, Cell, width * height);
  const out: number[][] = [];
  for (let i = 0; i < cells.length; i++) {
    const c = rt.get(Cell, cells[i]!);
    const row = [i, ...[0, 1, 2, 3].map((k) => c.randomState.get(k))];
    const a = c.agent;
    if (a instanceof Fish) row.push(1, a.eggTimer);
    else if (a instanceof Shark) row.push(2, a.eggTimer, a.energy);
    if (a !== null) row.push(...[0, 1, 2, 3].map((k) => a.randomState.get(k)));
    out.push(row);
  }
  return out;
}

/** Leave only the given agents: every agent is deleted, then `place` spawns the new ones (host writes). */
function clearAgents(rt: Runtime): void {
  const handles: number[] = [];
  rt.deviceDo(Agent, (a) => void handles.push(a.handle));
  for (const h of handles) {
    const a = rt.get(Agent, h);
    a.position!.agent = null;
    rt.destroy(a);
  }
}

/** (id, kind) of the occupied cells, in id order. */
function occupied(rt: Runtime): [number, number][] {
  const out: [number, number][] = [];
  forEachCell(rt, (i, kind) => {
    if (kind !== 0) out.push([i, kind]);
  });
  return out;
}

gtest(
  title('48 × 40 random start, 12 steps: every cell’s state identical to TypeScript after every step; heap valid; every pass on the GPU'),
  async (t) => {
    const [W, H] = [48, 40];
    const ref = await runtimeFor(W, H, 3, 'ts');
    const rt = await runtimeFor(W, H, 3, 'webgpu');
    try {
      for (let i = 1; i <= 12; i++) {
        await step(ref);
        await step(rt);
        await rt.sync();
        rt.validateHeap();
        checkInvariants(rt);
        t.is(digest(rt), digest(ref), `digest after step ${i}`);
        t.deepEqual(cellStates(rt, W, H), cellStates(ref, W, H), `cells after step ${i}`);
      }
      t.true(ref.count(Fish) > 50 && ref.count(Shark) > 50, 'fish and sharks still live (the comparison means something)');
      const s = rt.stats();
      t.deepEqual(Object.keys(s.backend.methods).sort(), PASSES);
      t.true(
        Object.values(s.backend.methods).every((b) => b === 'webgpu'),
        JSON.stringify(s.backend.methods),
      );
      t.is(s.backend.webgpu!.fallbackPasses, 0);
      t.is(s.backend.webgpu!.gpuPasses, 12 * 8);
    } finally {
      await rt.close();
      await ref.close();
    }
  },
);

gtest(title('a shark alone starves after ENERGY_START steps, moving to a neighbouring cell each step before (hand-checked)'), async (t) => {
  const [W, H] = [6, 5];
  const rt = await runtimeFor(W, H, 1, 'webgpu');
  try {
    clearAgents(rt);
    const cells = cellTable(rt.context, Cell, W * H);
    spawnShark(rt.context, rt.get(Cell, cells[13]!), 0x1234567); // eggTimer = seed % 4 = 3: no spawn before it starves
    t.is(ENERGY_START, 2);
    await step(rt);
    await rt.sync();
    rt.validateHeap();
    const after1 = occupied(rt);
    t.is(after1.length, 1);
    t.true(neighborIds(13, W, H).includes(after1[0]![0]), `moved to a neighbour of cell 13: ${after1[0]![0]}`);
    t.is(after1[0]![1], 2);
    await step(rt);
    await rt.sync();
    rt.validateHeap();
    t.deepEqual(occupied(rt), [], 'starved: energy 2 → 1 → 0');
    t.is(rt.count(Shark), 0);
  } finally {
    await rt.close();
  }
});

gtest(title('a fish on a 1 × 1 torus has nowhere to go: it stays (STAY flag), never spawns, its egg timer counts steps'), async (t) => {
  const rt = await runtimeFor(1, 1, 1, 'webgpu');
  try {
    clearAgents(rt);
    const cell = rt.get(Cell, cellTable(rt.context, Cell, 1)[0]!);
    spawnFish(rt.context, cell, 8); // eggTimer 0
    for (let i = 1; i <= 6; i++) await step(rt);
    await rt.sync();
    rt.validateHeap();
    checkInvariants(rt);
    t.deepEqual(occupied(rt), [[0, 1]]);
    t.is(rt.count(Fish), 1);
    let egg = -1;
    rt.deviceDo(Fish, (f) => void (egg = f.eggTimer));
    t.is(egg, 6);
  } finally {
    await rt.close();
  }
});

gtest(
  title('a fish alone moves one cell per step and spawns behind it once its egg timer passes SPAWN_THRESHOLD (hand-checked)'),
  async (t) => {
    const [W, H] = [7, 6];
    const rt = await runtimeFor(W, H, 1, 'webgpu');
    try {
      clearAgents(rt);
      const cells = cellTable(rt.context, Cell, W * H);
      spawnFish(rt.context, rt.get(Cell, cells[20]!), 5); // eggTimer = 5 % 4 = 1: > SPAWN_THRESHOLD after 4 increments
      t.is(SPAWN_THRESHOLD, 4);
      let at = 20;
      for (let i = 1; i <= 4; i++) {
        await step(rt);
        await rt.sync();
        rt.validateHeap();
        const occ = occupied(rt);
        if (i < 4) {
          t.is(occ.length, 1, `step ${i}: still one fish`);
          t.true(neighborIds(at, W, H).includes(occ[0]![0]), `step ${i}: moved to a neighbour of ${at}`);
          at = occ[0]![0];
        } else {
          t.is(rt.count(Fish), 2, 'step 4: spawned');
          const ids = occ.map((o) => o[0]);
          t.true(ids.includes(at), `the child is on the cell it left (${at}): ${JSON.stringify(ids)}`);
          t.true(
            ids.some((id) => neighborIds(at, W, H).includes(id)),
            'the parent on a neighbour of it',
          );
        }
      }
    } finally {
      await rt.close();
    }
  },
);

for (const mode of ['gpu', 'host', 'gpu-readback'] as const) {
  gtest(title(`webgpu.snapshot '${mode}' gives the same digests; snapshots and transfers counted`), async (t) => {
    const ref = await runtimeFor(32, 24, 5, 'ts');
    const rt = await createRuntime({
      classes: CLASSES,
      heap: HEAP,
      seed: 1,
      threads: 1,
      backend: 'webgpu',
      webgpu: { gpu: gpu(), snapshot: mode },
    });
    try {
      await init(rt, 32, 24, 5);
      for (let i = 0; i < 5; i++) {
        await step(ref);
        await step(rt);
      }
      // After Fish.update and Shark.update of every step but the last Shark.update (no pass follows it: rt.sync() downloads).
      t.is(rt.gpu!.stats.gpuSnapshots, mode === 'host' ? 0 : 5 * 2 - 1);
      t.is(rt.gpu!.stats.snapshots, 1 + (5 * 2 - 1), 'the first pass’s, then one after every update pass but the last');
      // What crosses the bus between steps: 'gpu' nothing (the heap went up once after init);
      // 'gpu-readback' the lists after each GPU snapshot; 'host' the whole heap both ways.
      const st = rt.gpu!.stats;
      t.is(st.listReadbacks, mode === 'gpu-readback' ? 5 * 2 - 1 : 0);
      t.is(st.uploads, mode === 'host' ? 1 + (5 * 2 - 1) : 1);
      t.is(st.downloads, mode === 'host' ? 5 * 2 - 1 : 0);
      await rt.sync();
      t.is(digest(rt), digest(ref));
      rt.validateHeap();
    } finally {
      await rt.close();
      await ref.close();
    }
  });
}

gtest(title('an array field that does not fit the declaration is refused with the reason (WgslKernel.arrays)'), (t) => {
  const cell = { name: 'Cell', abstract: false, fields: [{ name: 'neighbors', kind: 'ref', length: 4, offsets: [16, 144, 272, 400] }] };
  const table = { types: [cell] } as unknown as Parameters<typeof kernelArrayMismatch>[2];
  const t0 = cell as unknown as Parameters<typeof kernelArrayMismatch>[1];
  const k = (a: object) =>
    ({ file: 'x.wgsl', fields: {}, args: [], tunables: { WG: 32 }, dispatch: 'per-object', arrays: { nb: a } }) as unknown as Parameters<
      typeof kernelArrayMismatch
    >[0];
  t.is(kernelArrayMismatch(k({ field: 'neighbors', kind: 'ref', length: 4 }), t0, table), null);
  t.is(kernelArrayMismatch(k({ class: 'Cell', field: 'neighbors', kind: 'ref', length: 4 }), t0, table), null);
  t.regex(
    kernelArrayMismatch(k({ field: 'neighbors', kind: 'ref', length: 5 }), t0, table) ?? '',
    /an array of 4 ref, the kernel needs an array of 5 ref/,
  );
  t.regex(kernelArrayMismatch(k({ field: 'neighbors', kind: 'u32', length: 4 }), t0, table) ?? '', /needs an array of 4 u32/);
  t.regex(
    kernelArrayMismatch(k({ class: 'Nope', field: 'x', kind: 'u32', length: 1 }), t0, table) ?? '',
    /class Nope, which is not in the runtime/,
  );
  t.regex(kernelArrayMismatch(k({ field: 'agent', kind: 'ref', length: 1 }), t0, table) ?? '', /Cell has no field 'agent'/);
});

gtest(title('smmo run wa-tor --backend webgpu --json: kernels all webgpu, digest equal to --backend ts; --check passes'), async (t) => {
  const args = ['run', 'wa-tor', '--width', '48', '--height', '40', '--iterations', '8', '--json'];
  const { gpuRun, tsRun } = await gpuAndTsRuns(t, args, PASSES);
  t.is(gpuRun['digest'], tsRun['digest']);
  t.deepEqual(gpuRun['objects'], tsRun['objects']);
  // --check against the TypeScript reference: agents paired by their cell (App.matchKeys), every field equal.
  const checked = await smmo([...args, '--backend', 'webgpu', '--check']);
  t.is(checked.code, 0, describeChild(checked));
  const check = lastJson(checked.stdout)['check'] as {
    ok: boolean;
    rank: string[];
    keyed: string[];
    fields: Record<string, { maxAbs: number }>;
  };
  t.true(check.ok);
  t.deepEqual(check.rank, [], 'no class paired by rank');
  t.deepEqual(check.keyed, ['Fish by position', 'Shark by position']);
  t.true(
    Object.values(check.fields).every((f) => f.maxAbs === 0),
    'every field of every object equal, random streams included',
  );
});

/**
 * Shark's kernels with Shark.update's declaration broken, not its code: the new shark's
 * `eggTimer` and `energy` offsets swapped, so a child gets energy = seed % 4 and egg
 * timer ENERGY_START. Put back after the test.
 */
function withSwappedChildFields(): () => void {
  const own = Object.getOwnPropertyDescriptor(Shark, KERNELS)!;
  const specs = (own.value as () => readonly KernelSpec[])().map((s): KernelSpec => {
    if (s.method !== 'update') return s;
    const cf = s.wgsl!.classFields!;
    return { ...s, wgsl: { ...s.wgsl!, classFields: { ...cf, childEggTimer: cf['childEnergy']!, childEnergy: cf['childEggTimer']! } } };
  });
  Object.defineProperty(Shark, KERNELS, { ...own, value: specs });
  return () => Object.defineProperty(Shark, KERNELS, own);
}

gtest(
  title('--check-every finds a wrong WGSL declaration of Shark.update at the first spawn of a shark; the real one: no divergence'),
  async (t) => {
    // The divergent states go to a scratch folder (by default they would be written to the working directory).
    const states = mkdtempSync(join(tmpdir(), 'smmo-webgpu-wator-'));
    t.teardown(() => rmSync(states, { recursive: true, force: true }));
    const flags = ['--width', '48', '--height', '40', '--iterations', '6', '--backend', 'webgpu', '--check-every', '2', '--quiet'];
    flags.push('--check-states', states);
    const restore = withSwappedChildFields();
    try {
      const r = await runApp(watorApp, parseRunFlags(watorApp, flags), 'test');
      const d = r.divergence!;
      t.is(r.kernels['Shark.update'], 'webgpu', 'the broken declaration ran on the GPU');
      t.true(d.found, JSON.stringify({ ...d, fields: Object.keys(d.fields) }));
      // Initial egg timers are seed % 4 ≤ 3: the first shark spawns in the second step, iteration 1
      // (the index step() is called with, from 0), in its 8th pass (index 7).
      t.is(d.iteration, 1);
      t.is(d.pass, 'Shark.update');
      t.is(d.passIndex, 7);
      t.is(d.class, 'Shark');
      t.true(d.states!.reference.startsWith(states) && d.states!.run.startsWith(states), JSON.stringify(d.states));
      t.true(d.field === 'energy' || d.field === 'eggTimer', String(d.field));
      t.deepEqual(
        Object.entries(d.fields)
          .filter(([, f]) => f.beyond > 0)
          .map(([k]) => k)
          .sort(),
        ['Shark.eggTimer', 'Shark.energy'],
      );
    } finally {
      restore();
    }
    const ok = await runApp(watorApp, parseRunFlags(watorApp, flags), 'test');
    t.false(ok.divergence!.found, ok.divergence!.note);
    t.is(ok.divergence!.comparisons, 4);
  },
);
