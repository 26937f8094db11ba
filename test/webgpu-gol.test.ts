/**
 * game-of-life on WebGPU (runtime/webgpu/wgsl/gol_*.wgsl, declared in
 * apps/game-of-life/kernels.ts): every pass of a step runs as a WGSL kernel, the creating
 * and deleting ones through the device-side allocator (alloc.wgsl), on whatever adapter
 * Dawn finds (SwiftShader on CI).
 *
 * Checked against the TypeScript run: the digest (live cells + FNV-1a of their ids,
 * order-independent) after every step is identical. Handles differ (GPU allocation order
 * is not the host's), so heaps are not compared byte for byte; instead, after every step
 * the heap comes back to the host and must pass validateHeap() (heap.ts H1–H5) and the
 * grid's own invariant (gol.ts adoptGrid: every agent's cell holds it, every cell's
 * state says what its agent is). `kernels` (stats().backend.methods) names 'webgpu' for
 * all five passes and no pass falls back. Patterns with hand-checked cells: a blinker
 * (period 2) and a glider (one cell diagonally per 4 generations).
 */
import { createRuntime, type Runtime } from '../index.js';
import { Candidate, Cell } from '../apps/game-of-life/model.js';
import {
  adoptGrid,
  aliveCells,
  CLASSES,
  digest,
  init,
  randomStart,
  startFromCells,
  step,
  type GolStart,
} from '../apps/game-of-life/gol.js';
import { gpuAndTsRuns, gpuSuite } from './helpers/gpu-suite.js';
import { GpuHeapError, STATUS } from '../runtime/webgpu/errors.js';
import { kernelClassMismatch } from '../runtime/webgpu/wgsl-kernels.js';
import { GPU_BASE_BYTES } from '../runtime/webgpu/wgsl.js';
import { GpuError } from '../runtime/webgpu/errors.js';
import { describeChild, lastJson, smmo } from './helpers/child.js';

const { gtest, title, gpu } = await gpuSuite('webgpu-gol.test');

const HEAP = 4 << 20;
const PASSES = ['Alive.createCandidates', 'Alive.prepare', 'Alive.update', 'Candidate.prepare', 'Candidate.update'];

async function runtimeFor(start: GolStart, backend: 'ts' | 'webgpu'): Promise<Runtime> {
  const rt = await createRuntime({
    classes: CLASSES,
    heap: HEAP,
    seed: 1,
    threads: 1,
    backend,
    ...(backend === 'webgpu' ? { webgpu: { gpu: gpu() } } : {}),
  });
  await init(rt, start);
  return rt;
}

/** The grid's invariant (gol.ts adoptGrid) on a copy of the heap's view: a UsageError names the broken cell. */
function checkGrid(rt: Runtime, start: GolStart): void {
  // adoptGrid refuses a runtime that already has a grid; check with a fresh record of it on a view.
  const view = Object.create(rt) as Runtime;
  adoptGrid(view, start.width, start.height);
}

/** (x, y) pairs of the live cells, sorted by id. */
function cellsOf(rt: Runtime, width: number): [number, number][] {
  return [...aliveCells(rt)].map((id) => [id % width, Math.floor(id / width)]);
}

gtest(
  title('48 × 48 random start, 12 steps: digest identical to TypeScript after every step; heap valid; every pass on the GPU'),
  async (t) => {
    const start = randomStart(48, 48, 0.3, 7);
    const ref = await runtimeFor(start, 'ts');
    const rt = await runtimeFor(start, 'webgpu');
    try {
      await rt.sync();
      t.is(digest(rt), digest(ref), 'after init');
      for (let i = 1; i <= 12; i++) {
        await step(ref);
        await step(rt);
        await rt.sync();
        rt.validateHeap();
        checkGrid(rt, start);
        t.is(digest(rt), digest(ref), `after step ${i}`);
      }
      t.true(aliveCells(ref).length > 100, 'the field is still busy (the comparison means something)');
      // The grid check notices a broken cell (it can fail): a cell whose state no longer says what its agent is.
      let first = 0;
      ref.deviceDo(Cell, (c) => void (first ||= c.agent !== null ? c.handle : 0));
      ref.get(Cell, first).state ^= 1;
      t.throws(() => checkGrid(ref, start), { message: /has state/ });
      const s = rt.stats();
      t.deepEqual(Object.keys(s.backend.methods).sort(), PASSES);
      t.true(
        Object.values(s.backend.methods).every((b) => b === 'webgpu'),
        JSON.stringify(s.backend.methods),
      );
      t.is(s.backend.webgpu!.fallbackPasses, 0);
      t.is(s.backend.webgpu!.gpuPasses, 1 + 12 * 5);
    } finally {
      await rt.close();
      await ref.close();
    }
  },
);

gtest(title('a blinker flips with period 2 (hand-checked cells)'), async (t) => {
  const horizontal: [number, number][] = [
    [1, 2],
    [2, 2],
    [3, 2],
  ];
  const vertical: [number, number][] = [
    [2, 1],
    [2, 2],
    [2, 3],
  ];
  const rt = await runtimeFor(startFromCells(5, 5, horizontal), 'webgpu');
  try {
    for (let i = 1; i <= 4; i++) {
      await step(rt);
      await rt.sync();
      rt.validateHeap();
      const want = i % 2 === 1 ? vertical : horizontal;
      t.deepEqual(
        cellsOf(rt, 5),
        [...want].sort((a, b) => a[1] * 5 + a[0] - (b[1] * 5 + b[0])),
        `after step ${i}`,
      );
    }
  } finally {
    await rt.close();
  }
});

gtest(title('a glider moves one cell diagonally every 4 generations (hand-checked cells)'), async (t) => {
  const glider: [number, number][] = [
    [1, 0],
    [2, 1],
    [0, 2],
    [1, 2],
    [2, 2],
  ];
  const W = 12;
  const rt = await runtimeFor(startFromCells(W, W, glider), 'webgpu');
  const byId = (a: [number, number], b: [number, number]): number => a[1] * W + a[0] - (b[1] * W + b[0]);
  try {
    for (let k = 1; k <= 3; k++) {
      for (let i = 0; i < 4; i++) await step(rt);
      await rt.sync();
      rt.validateHeap();
      const want = glider.map(([x, y]): [number, number] => [x + k, y + k]).sort(byId);
      t.deepEqual(cellsOf(rt, W), want, `after ${4 * k} generations`);
    }
  } finally {
    await rt.close();
  }
});

gtest(
  title(
    'the snapshot after an allocating kernel is taken on the GPU: no heap transfer between steps; its lists and iteration words are the host snapshot’s',
  ),
  async (t) => {
    const start = randomStart(40, 40, 0.35, 3);
    const ref = await runtimeFor(start, 'ts');
    const rt = await runtimeFor(start, 'webgpu');
    try {
      const gpuRunner = rt.gpu!;
      const before = gpuRunner.stats;
      for (let i = 0; i < 6; i++) {
        await step(ref);
        await step(rt);
      }
      // The step ended with an allocating pass: a non-allocating one (it writes only `action`) takes the next snapshot.
      await rt.parallelDo(Candidate, 'prepare', 40, 40);
      const s = gpuRunner.stats;
      t.is(
        s.gpuSnapshots - before.gpuSnapshots,
        6 * 3 + 1,
        'after Alive.createCandidates, Candidate.update and Alive.update of every step',
      );
      t.is(s.snapshots - before.snapshots, 6 * 3 + 1, 'no host snapshot');
      t.is(s.downloads, before.downloads, 'no download');
      t.is(s.uploads, before.uploads, 'no upload');
      t.is(s.listReadbacks, before.listReadbacks, 'no read-back: the kernels read their lists on the GPU, dispatched indirectly');
      // The GPU's lists (G1): per concrete type exactly its allocated blocks, iteration word = allocation word without high bits.
      const lists = (await gpuRunner.readPassLists())!;
      t.is(gpuRunner.stats.listReadbacks, before.listReadbacks + 1);
      await gpuRunner.toHost();
      const heap = rt.heap;
      const listWord = heap.plan.blockListOffset >>> 2;
      let at = 0;
      for (const id of rt.table.concreteIds) {
        const type = rt.table.types[id]!;
        t.is(lists[2 * id], at, `${type.name}: list start in type-id order`);
        const listed = [...heap.u32.subarray(listWord + lists[2 * id]!, listWord + lists[2 * id]! + lists[2 * id + 1]!)].sort(
          (a, b) => a - b,
        );
        const out = new Uint32Array(heap.numBlocks);
        const n = heap.allocated[id]!.indices(out, 0);
        t.deepEqual(listed, [...out.subarray(0, n)], `${type.name}: the listed blocks are its allocated blocks`);
        for (const b of listed) {
          const w = heap.blockWord(b);
          t.is(heap.i32[w + 1], heap.i32[w]! & ~type.highMask, `${type.name} block ${b}: iteration word`);
        }
        at += n;
      }
      await rt.sync();
      t.is(digest(rt), digest(ref));
    } finally {
      await rt.close();
      await ref.close();
    }
  },
);

for (const mode of ['host', 'gpu-readback'] as const) {
  gtest(title(`webgpu.snapshot '${mode}' gives the same digests`), async (t) => {
    const start = randomStart(32, 32, 0.3, 5);
    const ref = await runtimeFor(start, 'ts');
    const rt = await createRuntime({
      classes: CLASSES,
      heap: HEAP,
      seed: 1,
      threads: 1,
      backend: 'webgpu',
      webgpu: { gpu: gpu(), snapshot: mode },
    });
    try {
      await init(rt, start);
      for (let i = 0; i < 5; i++) {
        await step(ref);
        await step(rt);
      }
      const s = rt.gpu!.stats;
      t.is(s.snapshots, 1 + 5 * 3);
      // 'host': the heap goes to the host and back after every allocating pass; 'gpu-readback': 16 bytes per class come back instead.
      t.is(s.gpuSnapshots, mode === 'host' ? 0 : 5 * 3);
      t.is(s.listReadbacks, mode === 'host' ? 0 : 5 * 3);
      t.is(s.downloads, mode === 'host' ? 5 * 3 : 0);
      await rt.sync();
      t.is(digest(rt), digest(ref));
      rt.validateHeap();
    } finally {
      await rt.close();
      await ref.close();
    }
  });
}

gtest(title('a heap too small for the run: GpuHeapError (heap full) by rt.sync() at the latest, as TypeScript runs out too'), async (t) => {
  // 80 × 80 cells take 200 of the heap's 327 blocks; the agents need more than the rest (measured: TypeScript fails in step 1).
  const start = randomStart(80, 80, 0.3, 7);
  const tiny = { classes: CLASSES, heap: 1114112, seed: 1, threads: 1 } as const;
  const ref = await createRuntime(tiny);
  const rt = await createRuntime({ ...tiny, backend: 'webgpu', webgpu: { gpu: gpu() } });
  try {
    await t.throwsAsync(
      async () => {
        await init(ref, start);
        for (let i = 0; i < 5; i++) await step(ref);
      },
      { message: /heap exhausted/ },
    );
    const e = await t.throwsAsync(
      async () => {
        await init(rt, start);
        for (let i = 0; i < 5; i++) await step(rt);
        await rt.sync();
      },
      { instanceOf: GpuHeapError },
    );
    t.true((e!.codes & STATUS.HEAP_FULL) !== 0, e!.message);
    t.true(e!.failedInvocations > 0);
  } finally {
    await rt.close();
    await ref.close();
  }
});

gtest(title('a kernel that would create objects of the class it ranks is refused (falls back to TypeScript with the reason)'), (t) => {
  const table = { types: [{ name: 'Cell', abstract: false, fields: [] }] } as unknown as Parameters<typeof kernelClassMismatch>[1];
  const k = {
    file: 'x.wgsl',
    fields: {},
    args: [],
    tunables: { WG: 32 },
    dispatch: 'per-object',
    ranks: 'Cell',
    typeIds: { T: 'Cell' },
  } as const;
  t.regex(kernelClassMismatch(k, table) ?? '', /creates Cell objects, whose rank table it reads/);
  t.regex(kernelClassMismatch({ ...k, typeIds: { T: 'Nope' } }, table) ?? '', /class Nope, which is not in the runtime/);
  t.is(kernelClassMismatch({ ...k, typeIds: {} }, table), null);
});

gtest(title('smmo run game-of-life --backend webgpu --json: kernels all webgpu, digest equal to --backend ts'), async (t) => {
  const args = ['run', 'game-of-life', '--width', '40', '--height', '40', '--iterations', '8', '--json'];
  const { gpuRun, tsRun } = await gpuAndTsRuns(t, args, PASSES);
  t.is(gpuRun['digest'], tsRun['digest']);
  t.deepEqual(gpuRun['objects'], tsRun['objects']);
  // --check against the TypeScript reference: the agents' handles differ (GPU allocation
  // order), the app's match key pairs them by cellId, and the check passes.
  const checked = await smmo([
    'run',
    'game-of-life',
    '--width',
    '40',
    '--height',
    '40',
    '--iterations',
    '8',
    '--backend',
    'webgpu',
    '--check',
    '--json',
  ]);
  t.is(checked.code, 0, describeChild(checked));
  const check = lastJson(checked.stdout)['check'] as { ok: boolean; rank: string[] };
  t.true(check.ok);
  t.deepEqual(
    check.rank.filter((c) => c !== 'Cell'),
    [],
    'no agent class paired by rank',
  );
});

gtest(
  title('--no-gpu-validation (webgpu.validation false): the same digest, and --json says so; refused without --backend webgpu'),
  async (t) => {
    const base = ['run', 'game-of-life', '--width', '40', '--height', '40', '--iterations', '8', '--json'];
    const [off, on, bad] = await Promise.all([
      smmo([...base, '--backend', 'webgpu', '--no-gpu-validation']),
      smmo([...base, '--backend', 'webgpu']),
      smmo([...base, '--no-gpu-validation']),
    ]);
    t.is(off.code, 0, describeChild(off));
    t.is(on.code, 0, describeChild(on));
    const a = lastJson(off.stdout);
    const b = lastJson(on.stdout);
    t.is(a['digest'], b['digest']);
    t.is((a['gpu'] as { validation: boolean }).validation, false);
    t.is((b['gpu'] as { validation: boolean }).validation, true);
    t.is(bad.code, 2);
    t.regex(bad.stderr, /--no-gpu-validation concerns the GPU device of --backend webgpu/);
    await t.throwsAsync(
      createRuntime({ classes: CLASSES, heap: '4MB', backend: 'webgpu', webgpu: { validation: 'no' as unknown as boolean } }),
      { message: /webgpu\.validation must be true or false, got no/ },
    );
  },
);

gtest(title('a Cell deleted on the GPU while kernels rank Cells: GpuError at rt.sync() (ranks.ts R2)'), async (t) => {
  const start = randomStart(16, 16, 0.3, 9);
  const rt = await runtimeFor(start, 'webgpu');
  try {
    await step(rt);
    // Stand-in for a kernel that breaks R2: clear the allocation bit of the first Cell in the GPU copy.
    const heap = rt.heap;
    let first = 0;
    await rt.sync();
    rt.deviceDo(Cell, (c) => void (first ||= c.handle));
    await step(rt);
    const word = heap.blockWord(first >>> 5);
    const alloc = heap.i32[word]! & ~(1 << (first & 31));
    rt.gpu!.gpu.device.queue.writeBuffer(rt.gpu!.gheap.buffer, word * 4 - GPU_BASE_BYTES, new Int32Array([alloc]));
    rt.gpu!.gpuWrote();
    await t.throwsAsync(() => rt.sync(), { instanceOf: GpuError, message: /Cell objects were created or deleted on the GPU/ });
  } finally {
    await rt.close();
  }
});
