/**
 * Defragmentation on the heap's GPU copy (runtime/webgpu/gpu-defrag.ts, G1–G4): for the
 * same heap, Runtime.parallelDefrag on a 'webgpu' runtime leaves the same heap bytes
 * (bitmaps, type table, the calling thread's allocator state, every block: compared after
 * downloading), the same remap for every handle and the same statistics (but the times,
 * `device` and `transfer`) as Runtime.defrag on a CPU runtime built the same way;
 * validateHeap() holds after the download.
 *
 * The GPU must not use the host's data: after the heap is uploaded, the host's copy of
 * every byte the GPU holds is overwritten with garbage and the GPU copy is marked newer,
 * so everything the host plans with must come from the download of the metadata and the
 * gathered block headers (G1), and every field value from the GPU's copy kernel (G2).
 * Random heaps (defrag.fixtures.ts: references across classes and subclasses, inline
 * arrays of references, 1-, 4- and 8-byte fields, dangling references), factors 1 and 3,
 * two calls per heap; checked mode (generation words gathered too); the host-newer start
 * (whole upload first); rt.defrag while the GPU is newer (a UsageError asking for sync).
 * Apps: `smmo run <app> --backend webgpu --defrag N` gives the digest of the run without
 * --defrag, and --json says `device: 'webgpu'`.
 */
import {
  createRuntime,
  DefragStoppedError,
  UsageError,
  type DefragResult,
  type DefragStats,
  type Runtime,
  type SmmoClass,
} from '../index.js';
import { DefragScratch } from '../runtime/defrag-lanes.js';
import { failAllocation } from './helpers/fail-allocation.js';
import { build, clear, deleteEverySecondFish, CLASSES, firstDifference, heapBytes, type Shape } from './defrag.fixtures.js';
import { gpuSuite } from './helpers/gpu-suite.js';
import { remapAndHeapProblems } from './helpers/defrag-shapes.js';
import { lastJson, smmo } from './helpers/child.js';
import { GPU_BASE_BYTES } from '../runtime/webgpu/wgsl.js';
import type { AppDefrag, AppParams } from '../apps/app.js';
import { loadApp } from '../apps/registry.js';
import { Random } from '../apps/random.js';
import { CLASSES as COLLISION_CLASSES, initBodies, step as collisionStep } from '../apps/collision/collision.js';

const { gtest, title, gpu } = await gpuSuite('webgpu-defrag.test');

async function runtime(backend: 'ts' | 'webgpu', checked: boolean): Promise<Runtime> {
  return createRuntime({
    classes: CLASSES,
    heap: '4MB',
    threads: 1,
    seed: 3,
    checked,
    backend,
    ...(backend === 'webgpu' ? { webgpu: { gpu: gpu() } } : {}),
  });
}

function withoutTimes(s: DefragStats): Omit<DefragStats, 'ms' | 'threads' | 'device' | 'transfer'> {
  const { ms: _ms, threads: _threads, device: _device, transfer: _transfer, ...rest } = s;
  return rest;
}

const checkedHeap = (rt: Runtime): boolean => rt.table.types.some((t) => t.genOffset !== 0);

/** (G1) Upload the GPU runtime's heap, then overwrite the host's copy of every uploaded byte with garbage: the GPU copy is the newer one. */
function gpuOnly(rt: Runtime, seed: number): void {
  const g = rt.gpu!;
  g.toGpu();
  const u8 = rt.heap.u8;
  let s = seed >>> 0 || 1;
  for (let i = GPU_BASE_BYTES; i < u8.length; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    u8[i] = s & 0xff;
  }
  g.gpuWrote();
}

/** Compare a CPU defrag with a GPU one (the GPU runtime downloaded); differences as text. */
function compare(ref: Runtime, gpuRt: Runtime, r: DefragResult, p: DefragResult): string[] {
  const out: string[] = [];
  const d = firstDifference(heapBytes(ref), heapBytes(gpuRt));
  if (d !== null) out.push(`heap differs: ${d}`);
  if (JSON.stringify(withoutTimes(r.stats)) !== JSON.stringify(withoutTimes(p.stats)))
    out.push(`stats differ: ${JSON.stringify(withoutTimes(r.stats))} vs ${JSON.stringify(withoutTimes(p.stats))}`);
  if (p.stats.device !== 'webgpu') out.push(`stats.device ${String(p.stats.device)}, want 'webgpu'`);
  out.push(...remapAndHeapProblems(r, p, ref.heap.numBlocks * 32, [gpuRt]));
  return out;
}

/** Build `shape` on both; twice: the GPU copy made the only valid one, defrag on both, compare; then delete every second Fish. */
async function twice(
  ref: Runtime,
  g: Runtime,
  shape: Shape,
  n: number,
  hostNewer = false,
): Promise<{ problems: string[]; moved: number; transfer: string }> {
  const problems: string[] = [];
  let moved = 0;
  let transfer = '';
  build(ref, shape);
  build(g, shape);
  const d0 = firstDifference(heapBytes(ref), heapBytes(g));
  if (d0 !== null) return { problems: [`the heaps differ before defrag (test setup): ${d0}`], moved, transfer };
  for (let call = 0; call < 2; call++) {
    if (!hostNewer) gpuOnly(g, shape.seed + call);
    const r = ref.defrag(undefined, n);
    const p = await g.parallelDefrag(undefined, n);
    await g.sync();
    moved += r.stats.objectsMoved;
    transfer = JSON.stringify(p.stats.transfer);
    const tr = p.stats.transfer!;
    const plan = g.heap.plan;
    const rec = checkedHeap(g) ? 36 : 4;
    if (tr.fullUploads !== (hostNewer ? 1 : 0)) problems.push(`call ${call}: ${tr.fullUploads} whole uploads`);
    // (G1) only the metadata region and the gathered records come down (none when the host was newer)
    const down = hostNewer ? 0 : plan.blocksOffset - GPU_BASE_BYTES + g.heap.numBlocks * rec * 4;
    if (tr.downloadBytes !== down) problems.push(`call ${call}: ${tr.downloadBytes} bytes downloaded, want ${down}`);
    problems.push(...compare(ref, g, r, p).map((x) => `call ${call}: ${x}`));
    if (problems.length > 0) break;
    for (const rt of [ref, g]) deleteEverySecondFish(rt);
  }
  clear(ref);
  clear(g);
  return { problems, moved, transfer };
}

const SHAPES: Shape[] = [
  { seed: 11, fish: 1500, sharks: 400, holders: 300, kill: 0.6, density: 0.8 },
  { seed: 29, fish: 700, sharks: 900, holders: 100, kill: 0.85, density: 0.5 },
  { seed: 5, fish: 2000, sharks: 50, holders: 400, kill: 0.3, density: 1 },
];

gtest(title('a pass that cannot be planned (F5): the GPU call stops as the CPU one, the copies agree'), async (t) => {
  const ref = await runtime('ts', false);
  const g = await runtime('webgpu', false);
  let oom: ReturnType<typeof failAllocation> | null = null;
  try {
    build(ref, SHAPES[0]!);
    build(g, SHAPES[0]!);
    gpuOnly(g, 1);
    oom = failAllocation(DefragScratch.prototype, 'beginPass', (call) => call % 2 === 0); // the second pass of each call
    const r = t.throws(() => ref.defrag(undefined, 1), { instanceOf: DefragStoppedError });
    const p = await t.throwsAsync(g.parallelDefrag(undefined, 1), { instanceOf: DefragStoppedError });
    oom.restore();
    t.is(p.result.stats.passes, 1);
    await g.sync();
    t.deepEqual(compare(ref, g, r.result, p.result), []);
    ref.validateHeap();
    g.validateHeap();
  } finally {
    oom?.restore();
    await ref.close();
    await g.close();
  }
});

for (const checked of [false, true]) {
  gtest(
    title(`random heaps${checked ? ', checked' : ''}: the same heap, remap and stats as the CPU defrag; no data from the host`),
    async (t) => {
      const ref = await runtime('ts', checked);
      const g = await runtime('webgpu', checked);
      try {
        for (const [i, shape] of SHAPES.entries()) {
          for (const n of [1, 3]) {
            const { problems, moved, transfer } = await twice(ref, g, shape, n);
            t.deepEqual(problems, [], `shape ${i}, n=${n}`);
            t.true(moved > 100, `shape ${i}, n=${n}: ${moved} objects moved`);
            t.log(`shape ${i}, n=${n}: ${moved} moved; transfer of the last call ${transfer}; heap ${g.heap.plan.heapBytes} bytes`);
          }
        }
      } finally {
        await ref.close();
        await g.close();
      }
    },
  );
}

gtest(title('the host newer at the start: the heap is uploaded once, then the same results'), async (t) => {
  const ref = await runtime('ts', false);
  const g = await runtime('webgpu', false);
  try {
    const { problems, moved } = await twice(ref, g, SHAPES[0]!, 2, true);
    t.deepEqual(problems, []);
    t.true(moved > 100);
  } finally {
    await ref.close();
    await g.close();
  }
});

gtest(
  title('rt.defrag while the GPU holds newer data refuses with a UsageError that asks for sync(); after sync it runs on the CPU'),
  async (t) => {
    const g = await runtime('webgpu', false);
    try {
      build(g, SHAPES[0]!);
      gpuOnly(g, 7);
      t.throws(() => g.defrag(), { instanceOf: UsageError, message: /rt\.sync\(\)/ });
      await g.sync();
      t.is(g.defrag().stats.device, undefined);
    } finally {
      await g.close();
    }
  },
);

/**
 * An app's heap at each defrag call: `g` (webgpu) after a step is downloaded and copied
 * into a CPU runtime `ref` of the same plan; then the GPU copy is made the only valid one
 * (gpuOnly), g.parallelDefrag runs on the GPU, ref.defrag on the CPU, and both must agree.
 */
async function appCalls(
  classes: readonly SmmoClass[],
  movable: readonly SmmoClass[],
  heap: number,
  init: (rt: Runtime) => Promise<void>,
  step: (rt: Runtime) => Promise<void>,
  iterations: number,
): Promise<{ problems: string[]; moved: number }> {
  const g = await createRuntime({ classes, heap, threads: 1, backend: 'webgpu', webgpu: { gpu: gpu() } });
  const ref = await createRuntime({ classes, heap, threads: 1, backend: 'ts' });
  const problems: string[] = [];
  let moved = 0;
  try {
    await init(g);
    for (let k = 0; k < iterations && problems.length === 0; k++) {
      await step(g);
      await g.sync();
      ref.heap.u8.set(g.heap.u8.subarray(GPU_BASE_BYTES), GPU_BASE_BYTES);
      gpuOnly(g, k + 1);
      const r = ref.defrag(movable, 1);
      const p = await g.parallelDefrag(movable, 1);
      await g.sync();
      moved += r.stats.objectsMoved;
      problems.push(...compare(ref, g, r, p).map((x) => `iteration ${k}: ${x}`));
    }
  } finally {
    await g.close();
    await ref.close();
  }
  return { problems, moved };
}

gtest(
  title('game-of-life, wa-tor and a dense collision: at every call the GPU defrag equals the CPU defrag of the same heap'),
  async (t) => {
    const moved: Record<string, number> = {};
    for (const name of ['game-of-life', 'wa-tor']) {
      const app = (await loadApp(name))!;
      const params: AppParams = { ...Object.fromEntries(app.flags.map((f) => [f.name, f.default])), width: 32, height: 32 };
      const movable = (app.defrag as AppDefrag).classes;
      const r = await appCalls(
        app.classes,
        movable,
        2 << 20,
        (rt) => app.init(rt, params, 3),
        (rt) => app.step(rt, 0),
        5,
      );
      t.deepEqual(r.problems, [], name);
      t.true(r.moved > 0, `${name}: ${r.moved} moved`);
      moved[name] = r.moved;
    }
    const rng = new Random(23);
    const scene = Array.from({ length: 1500 }, () => ({
      posX: -0.1 + 0.16 * rng.next(),
      posY: 0.2 + 0.16 * rng.next(),
      velX: (rng.next() - 0.5) / 1000,
      velY: (rng.next() - 0.5) / 1000,
      mass: (rng.next() / 2 + 0.5) * 75,
    }));
    const col = await appCalls(
      COLLISION_CLASSES,
      COLLISION_CLASSES,
      4 << 20,
      async (rt) => void (await initBodies(rt, scene)),
      collisionStep,
      5,
    );
    t.deepEqual(col.problems, [], 'collision');
    t.true(col.moved > 0, `collision: ${col.moved} moved`);
    t.log(`moved: ${JSON.stringify({ ...moved, collision: col.moved })}`);
  },
);

/** The digest of `smmo run app … --json` (and its defrag report). */
async function digestOf(args: string[]): Promise<{ digest: unknown; defrag: Record<string, unknown> | undefined }> {
  const r = await smmo(['run', ...args, '--json']);
  if (r.code !== 0) throw new Error(`smmo run ${args.join(' ')}: exit ${r.code}\n${r.stderr}`);
  const j = lastJson(r.stdout);
  return { digest: j['digest'], defrag: j['defrag'] as Record<string, unknown> | undefined };
}

/** Apps and their arguments; collision's digest is a float sum whose order varies on the GPU (with or without --defrag): 1e-6 per body (apps/collision/README.md). */
const APPS: [string, string[], number][] = [
  ['game-of-life', ['--width', '32', '--height', '32', '--iterations', '6', '--heap', '2MB'], 0],
  ['wa-tor', ['--width', '32', '--height', '32', '--iterations', '6', '--heap', '2MB'], 0],
  ['collision', ['--bodies', '1500', '--iterations', '6'], 1500e-6],
];

for (const [app, args, tolerance] of APPS) {
  gtest(title(`smmo run ${app} --backend webgpu --defrag 1: the digest of the run without --defrag; device 'webgpu'`), async (t) => {
    const plain = await digestOf([app, ...args, '--backend', 'webgpu']);
    const d = await digestOf([app, ...args, '--backend', 'webgpu', '--defrag', '1']);
    if (tolerance === 0) t.deepEqual(d.digest, plain.digest);
    else t.true(Math.abs((d.digest as number) - (plain.digest as number)) <= tolerance, `${String(d.digest)} vs ${String(plain.digest)}`);
    t.is(d.defrag?.['device'], 'webgpu');
    t.true((d.defrag?.['calls'] as number) > 0);
    t.log(`${app}: ${JSON.stringify({ moved: d.defrag?.['objectsMoved'], transfer: d.defrag?.['transfer'] })}`);
  });
}
