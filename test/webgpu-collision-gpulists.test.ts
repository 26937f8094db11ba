/**
 * collision on WebGPU without a per-step read-back (runtime/webgpu/runner.ts
 * runSplitOnGpuLists, splitCountsFor S1–S2; gpu-snapshot.ts G4–G5): after deleteMerged's
 * GPU snapshot, every pass of the next step — computeForce, update and the merge passes,
 * the split-reduce scans included — reads its list from the GPU's lists buffer, so the
 * lists never come back to the host.
 *
 * Checked on whatever adapter Dawn finds (SwiftShader on CI):
 *  - five steps: no list read-back, no upload, no host snapshot; one GPU snapshot and one
 *    count read per step; after every step (the heap brought over without making the
 *    host's copy the newer one) the same bodies and masses as TypeScript, body count
 *    exact, digest within tolerance; with the automatic SPLIT forced above 1 too;
 *  - the new path equals the old one (lists read back, Params) exactly, field by field,
 *    over the same GPU snapshot, with SPLIT 1, 3 and the automatic one;
 *  - SPLIT follows the block count of the snapshot SPLIT_LAG generations back, for lags
 *    0, 1 and 2 (a scene that empties half of the blocks in its first step);
 *  - bodies created on the host between GPU steps are visited by the next steps' kernels
 *    (fails if the lists buffer keeps an older snapshot's lists, or if the dispatch is
 *    bounded by the older count although objects were created since: S2);
 *  - a body deleted by deleteMerged is not seen by the next step's scans (held by
 *    a_free clearing its iteration bit as much as by the snapshot);
 *  - a bad SPLIT tunable is a UsageError; autoSplit's arithmetic.
 */
import test, { type ExecutionContext } from 'ava';
import { createRuntime, UsageError, type Runtime } from '../index.js';
import { Body } from '../apps/collision/body.js';
import { CLASSES, digest, drawBody, init, initBodies, step, type BodyInit } from '../apps/collision/collision.js';
import { Random } from '../apps/random.js';
import { AUTO_SPLIT_GROUPS, AUTO_SPLIT_MAX, autoSplit, type GpuRunner } from '../runtime/webgpu/runner.js';
import { gpuSuite } from './helpers/gpu-suite.js';
import { SLOT_BITS } from '../runtime/layout.js';

const { gtest, title, gpu } = await gpuSuite('webgpu-collision-gpulists.test');

/** Digest tolerance per body (apps/collision/README.md). */
const TOLERANCE_PER_BODY = 1e-6;
const SCANS = ['Body.computeForce', 'Body.prepareMerge', 'Body.resolveMerge'] as const;

type Tunables = Record<string, Record<string, number>>;

/** The same tunables for the three split-reduce kernels. */
const scans = (v: Record<string, number>): Tunables => Object.fromEntries(SCANS.map((k) => [k, v]));

async function runtime(backend: 'ts' | 'webgpu', tunables: Tunables = {}, snapshot?: 'gpu' | 'gpu-readback'): Promise<Runtime> {
  return createRuntime({
    classes: CLASSES,
    heap: '16MB',
    seed: 1,
    threads: 1,
    backend,
    ...(backend === 'webgpu' ? { webgpu: { gpu: gpu(), tunables, ...(snapshot ? { snapshot } : {}) } } : {}),
  });
}

const runner = (rt: Runtime): GpuRunner => rt.gpu!;

/** Live bodies as { handle: mass } (host heap current). */
function masses(rt: Runtime): Record<number, number> {
  const out: Record<number, number> = {};
  rt.deviceDo(Body, (b) => (out[b.handle] = b.mass));
  return out;
}

/**
 * Bring the GPU's heap to the host for reading, leaving the GPU copy the one the next pass
 * uses: toHost() without rt.sync()'s hostWrote() (the host reads, writes nothing), then
 * gpuWrote() so that the next pass takes its snapshot on the GPU as in a run without reads.
 */
async function peek(rt: Runtime): Promise<void> {
  await runner(rt).toHost();
}
function unpeek(rt: Runtime): void {
  runner(rt).gpuWrote();
}

/** Compare with the TypeScript run: same handles and masses, count exact, digest within tolerance. */
function sameAsTs(t: ExecutionContext, rt: Runtime, ref: Runtime, what: string): void {
  t.is(rt.count(Body), ref.count(Body), `body count ${what}`);
  t.deepEqual(masses(rt), masses(ref), `bodies (handles) and masses ${what}`);
  const d = digest(rt);
  const e = digest(ref);
  t.true(Math.abs(d - e) <= TOLERANCE_PER_BODY * rt.count(Body), `digest ${what}: ${d} vs ${e}`);
}

for (const [name, tunables] of [
  ['the defaults', {}],
  ['automatic SPLIT forced above 1 (SPLIT_GROUPS 256, SPLIT_LAG 1)', scans({ SPLIT_GROUPS: 256, SPLIT_LAG: 1 })],
] as const) {
  gtest(title(`${name}: five steps without a list read-back, upload or host snapshot; each within tolerance of TypeScript`), async (t) => {
    const n = 1000;
    const ref = await runtime('ts');
    const rt = await runtime('webgpu', tunables);
    try {
      await init(ref, n, 7);
      await init(rt, n, 7);
      // Step 1 starts from the host (upload, host snapshot); its deleteMerged leaves the lists stale.
      await step(ref);
      await step(rt);
      const gpuRunner = runner(rt);
      const before = gpuRunner.stats;
      const reads = gpuRunner.countReads;
      const splits = new Set<number>();
      for (let k = 2; k <= 6; k++) {
        await step(ref);
        await step(rt);
        for (const s of SCANS) splits.add(gpuRunner.stats.tunables[s]!['SPLIT']!);
        await peek(rt);
        sameAsTs(t, rt, ref, `after step ${k}`);
        unpeek(rt);
      }
      const s = gpuRunner.stats;
      t.is(s.listReadbacks, before.listReadbacks, 'no list read-back');
      t.is(s.uploads, before.uploads, 'no upload');
      t.is(s.snapshots - before.snapshots, 5, 'one snapshot per step');
      t.is(s.gpuSnapshots - before.gpuSnapshots, 5, '… on the GPU');
      t.is(s.downloads - before.downloads, 5, "only this test's own downloads");
      t.is(gpuRunner.countReads.issued - reads.issued, 5, 'one count read per step');
      t.is(s.fallbackPasses, 0);
      if ('Body.computeForce' in tunables)
        t.true(
          [...splits].some((v) => v > 1),
          `SPLIT values used: ${[...splits].join(', ')}`,
        );
      await rt.sync();
      rt.validateHeap();
      t.true(rt.count(Body) < n, 'bodies merged');
    } finally {
      await rt.close();
      await ref.close();
    }
  });
}

gtest(title("snapshot 'gpu-readback' reads the lists back once per step (the old path, for contrast)"), async (t) => {
  const rt = await runtime('webgpu', {}, 'gpu-readback');
  try {
    await init(rt, 300, 3);
    await step(rt);
    const before = runner(rt).stats.listReadbacks;
    for (let k = 0; k < 3; k++) await step(rt);
    t.is(runner(rt).stats.listReadbacks - before, 3);
    t.is(runner(rt).countReads.issued, 0, 'no count read: the lists are on the host');
  } finally {
    await rt.close();
  }
});

/** n bodies drawn as collision's init does, but in [-0.1, 0.1)²: many bodies within the merge threshold of another, step after step. */
function denseScene(n: number, seed: number): BodyInit[] {
  const rng = new Random(seed);
  return Array.from({ length: n }, () => {
    const b = drawBody(rng);
    return { ...b, posX: b.posX / 10, posY: b.posY / 10 };
  });
}

/** forceX, forceY, mergeTarget, successfulMerge of every body, by handle. */
function scanResults(rt: Runtime): Record<number, [number, number, number, boolean]> {
  const out: Record<number, [number, number, number, boolean]> = {};
  rt.deviceDo(
    Body,
    (b) => (out[b.handle] = [b.forceX, b.forceY, (b.mergeTarget as { handle?: number } | null)?.handle ?? 0, b.successfulMerge]),
  );
  return out;
}

/** The passes of a step that give the same heap when run twice over the same snapshot (update moves bodies: left out). */
async function scanPasses(rt: Runtime): Promise<void> {
  await rt.parallelDo(Body, 'computeForce');
  await rt.parallelDo(Body, 'initializeMerge');
  await rt.parallelDo(Body, 'prepareMerge');
  await rt.parallelDo(Body, 'resolveMerge');
}

for (const [name, tunables] of [
  ['SPLIT 1', scans({ SPLIT: 1 })],
  ['SPLIT 3', scans({ SPLIT: 3 })],
  ['automatic SPLIT (SPLIT_GROUPS 256)', scans({ SPLIT_GROUPS: 256, SPLIT_LAG: 0 })],
] as const) {
  gtest(
    title(
      `${name}: the scans on the GPU's lists give exactly the old path's results over the same GPU snapshot (forces, targets, winners)`,
    ),
    async (t) => {
      const rt = await runtime('webgpu', tunables);
      try {
        await initBodies(rt, denseScene(1500, 11));
        await step(rt); // ends with deleteMerged: the next pass takes a GPU snapshot
        const gpuRunner = runner(rt);
        const readbacks = gpuRunner.stats.listReadbacks;
        await scanPasses(rt); // new path: GPU snapshot, lists stay on the GPU
        t.is(gpuRunner.stats.listReadbacks, readbacks, 'new path: no read-back');
        const split = gpuRunner.stats.tunables['Body.computeForce']!['SPLIT']!;
        await peek(rt);
        const fresh = scanResults(rt);
        // Old path over the same snapshot: the lists read back, the kernels given them by the host.
        t.not(await gpuRunner.readPassLists(), null);
        const snapshots = gpuRunner.stats.snapshots;
        await scanPasses(rt);
        t.is(gpuRunner.stats.snapshots, snapshots, 'the same snapshot');
        t.is(gpuRunner.stats.tunables['Body.computeForce']!['SPLIT'], split, 'the same SPLIT');
        await peek(rt);
        const old = scanResults(rt);
        const targets = Object.values(fresh).filter((v) => v[2] !== 0).length;
        t.true(targets > 10 && Object.values(fresh).some((v) => v[3]), `bodies with a target: ${targets}, and some win`);
        t.deepEqual(fresh, old);
        if (name.startsWith('automatic')) t.true(split > 1, `SPLIT ${split}`);
      } finally {
        await rt.close();
      }
    },
  );
}

/**
 * 256 bodies in 8 blocks: body i < 128 (blocks 0–3) light, body 128 + i heavy right next
 * to it, the pairs far apart. Step 1 merges every heavy body into its partner and deletes
 * it, emptying blocks 4–7: 8 listed blocks at the first snapshot, 4 from the second on.
 */
function halvingScene(): BodyInit[] {
  const bodies: BodyInit[] = [];
  const place = (i: number): [number, number] => [-0.9 + (i % 16) * 0.1, -0.9 + Math.floor(i / 16) * 0.2];
  for (let i = 0; i < 128; i++) bodies.push({ posX: place(i)[0], posY: place(i)[1], velX: 0, velY: 0, mass: 1 });
  for (let i = 0; i < 128; i++) bodies.push({ posX: place(i)[0] + 0.001, posY: place(i)[1], velX: 0, velY: 0, mass: 2 });
  return bodies;
}

for (const lag of [0, 1, 2]) {
  gtest(title(`SPLIT_LAG ${lag}: SPLIT follows the block count of the snapshot ${lag} generation(s) back`), async (t) => {
    // WG 32: one workgroup per block; SPLIT_GROUPS 32: SPLIT = 32 / blocks, 4 for 8 blocks, 8 for 4.
    const tunables = scans({ WG: 32, SPLIT_GROUPS: 32, SPLIT_LAG: lag });
    const ref = await runtime('ts');
    const rt = await runtime('webgpu', tunables);
    try {
      const handles = await initBodies(rt, halvingScene());
      await initBodies(ref, halvingScene());
      const blocksOf = (hs: number[]): Set<number> => new Set(hs.map((h) => h >>> SLOT_BITS));
      t.is(blocksOf(handles).size, 8, 'the scene fills 8 blocks');
      t.is(blocksOf(handles.slice(128)).size, 4, 'the heavy bodies fill 4 of them');
      t.true(
        [...blocksOf(handles.slice(128))].every((b) => !blocksOf(handles.slice(0, 128)).has(b)),
        '… holding no light body',
      );
      const used: number[] = [];
      for (let k = 1; k <= 4; k++) {
        await step(rt);
        await step(ref);
        used.push(runner(rt).stats.tunables['Body.prepareMerge']!['SPLIT']!);
      }
      // Generation 1: host snapshot, 8 blocks (step 1); generation k ≥ 2: GPU snapshot, 4 blocks (step k).
      const blocksAt = (gen: number): number => (gen <= 1 ? 8 : 4);
      const expected = [1, 2, 3, 4].map((g) => 32 / blocksAt(Math.max(1, g - lag)));
      t.deepEqual(used, expected);
      t.is(runner(rt).stats.listReadbacks, 0);
      await rt.sync();
      t.is(rt.count(Body), 128);
      t.deepEqual(masses(rt), masses(ref));
    } finally {
      await rt.close();
      await ref.close();
    }
  });
}

gtest(
  title(
    "bodies created on the host between GPU steps: the next steps' kernels see them (lists buffer rewritten, dispatch bound not taken from the older count)",
  ),
  async (t) => {
    // After the host creates bodies, the count of SPLIT_LAG (8) snapshots back is smaller
    // than the list: a dispatch bounded by it, or kernels reading a lists buffer the host
    // snapshot did not rewrite, would leave the new bodies out (no force, no merge).
    const ref = await runtime('ts');
    const rt = await runtime('webgpu');
    try {
      await initBodies(rt, denseScene(600, 5));
      await initBodies(ref, denseScene(600, 5));
      for (let k = 0; k < 3; k++) {
        await step(rt);
        await step(ref);
      }
      await rt.sync();
      const more = denseScene(900, 6);
      for (const r of [rt, ref]) {
        await r.parallelNew(Body, more.length, (b, i) => {
          const v = more[i]!;
          b.id = 1000 + i;
          b.posX = v.posX;
          b.posY = v.posY;
          b.velX = v.velX;
          b.velY = v.velY;
          b.mass = v.mass;
        });
      }
      const gpuRunner = runner(rt);
      const readbacks = gpuRunner.stats.listReadbacks;
      for (let k = 1; k <= 3; k++) {
        await step(rt);
        await step(ref);
        await peek(rt);
        sameAsTs(t, rt, ref, `${k} step(s) after the host created bodies`);
        unpeek(rt);
      }
      t.is(gpuRunner.stats.listReadbacks, readbacks, 'no read-back');
      t.true(gpuRunner.stats.gpuSnapshots >= 2, 'steps 2 and 3 on the GPU snapshot');
    } finally {
      await rt.close();
      await ref.close();
    }
  },
);

gtest(title("a body deleted by deleteMerged is invisible to the next step's scans on the GPU's lists"), async (t) => {
  // X (mass 3) merges into B (mass 1) in step 1 and is deleted; C (mass 10) targets X in
  // step 1 (X is nearer than B; C loses: X merges itself). In step 2 C must target the
  // merged B (mass 4, at the midpoint): a scan that still saw X (its fields stay in the
  // freed slot, 0.002 from C) would pick X, and B would merge into the freed X instead.
  const scene: BodyInit[] = [
    { posX: 0, posY: 0, velX: 0, velY: 0, mass: 3 }, // X
    { posX: 0.002, posY: 0, velX: 0, velY: 0, mass: 1 }, // B
    { posX: -0.002, posY: 0, velX: 0, velY: 0, mass: 10 }, // C
  ];
  for (const tunables of [{}, scans({ SPLIT: 2 })]) {
    const ref = await runtime('ts');
    const rt = await runtime('webgpu', tunables);
    try {
      const [, b] = await initBodies(rt, scene);
      await initBodies(ref, scene);
      await step(rt);
      await step(rt); // on the GPU's lists: GPU snapshot after step 1's deleteMerged, no read-back
      t.is(runner(rt).stats.gpuSnapshots, 1);
      t.is(runner(rt).stats.listReadbacks, 0);
      await step(ref);
      await step(ref);
      await rt.sync();
      t.deepEqual(masses(ref), { [b!]: 14 }, 'TypeScript: C merged into B');
      t.deepEqual(masses(rt), masses(ref), `GPU (${JSON.stringify(tunables)})`);
    } finally {
      await rt.close();
      await ref.close();
    }
  }
});

gtest(title('a bad SPLIT tunable: UsageError naming it and its range'), async (t) => {
  for (const [bad, message] of [
    [{ SPLIT_LAG: 65 }, /Body.computeForce: SPLIT_LAG=65 must be an integer in 0…64/],
    [{ SPLIT_POW2: 2 }, /SPLIT_POW2=2 must be 0 or 1/],
    [{ SPLIT_MAX: 0 }, /SPLIT_MAX=0 must be an integer in 1…64/],
    [{ SPLIT_GROUPS: 1.5 }, /SPLIT_GROUPS=1.5 must be a positive integer/],
  ] as const) {
    const rt = await runtime('webgpu', { 'Body.computeForce': bad });
    try {
      await initBodies(rt, denseScene(40, 1));
      await t.throwsAsync(() => step(rt), { instanceOf: UsageError, message });
    } finally {
      await rt.close();
    }
  }
});

test('autoSplit: about `groups` workgroups, at most `max` parts, powers of two on request', (t) => {
  t.is(autoSplit(1250, 128, AUTO_SPLIT_GROUPS, AUTO_SPLIT_MAX, false), 13); // 40 000 bodies: 313 workgroups
  t.is(autoSplit(1250, 128, AUTO_SPLIT_GROUPS, AUTO_SPLIT_MAX, true), 8);
  t.is(autoSplit(18, 128, AUTO_SPLIT_GROUPS, AUTO_SPLIT_MAX, true), 32); // ~570 bodies: capped
  t.is(autoSplit(0, 128, AUTO_SPLIT_GROUPS, AUTO_SPLIT_MAX, false), 32); // no block: as one workgroup
  t.is(autoSplit(10_000, 128, AUTO_SPLIT_GROUPS, AUTO_SPLIT_MAX, true), 1); // more workgroups than aimed at
  t.is(autoSplit(8, 32, 32, 64, true), 4);
  t.is(autoSplit(5, 32, 32, 64, true), 4); // 6 → 4
  t.is(autoSplit(5, 32, 32, 64, false), 6);
});
