/**
 * collision (apps/collision): the deterministic merge rule on hand-made scenes (exact
 * ties to the lower id, set against handle order),
 * agreement of the smmo version with both baselines (exact body count, digest within
 * the README's tolerance), and the same digest on 1 and 2 threads.
 */
import test from 'ava';
import { loadBaseline } from '../apps/baselines/index.js';
import { CollisionAos } from '../apps/collision/baseline_aos.js';
import { CollisionSoa } from '../apps/collision/baseline_soa.js';
import { Body, DT, MERGE_THRESHOLD } from '../apps/collision/body.js';
import { CLASSES, digest, init, initBodies, step, type BodyInit } from '../apps/collision/collision.js';
import { createRuntime, type Runtime } from '../index.js';

const MODULE = new URL('../apps/collision/index.js', import.meta.url);
/**
 * With threads > 1: every pass on the workers (inlineBlocks 0: these sizes would otherwise
 * run on the calling thread alone), and a generous start-up time for a loaded machine.
 */
const THREADED = { inlineBlocks: 0, startTimeoutMs: 120_000 };
/** Digest tolerance per body (README): f32 rounding of sums taken in another order. */
const TOLERANCE_PER_BODY = 1e-6;

async function runtime(threads = 1): Promise<Runtime> {
  return createRuntime({
    classes: CLASSES,
    heap: '16MB',
    threads,
    modules: [MODULE],
    checked: threads === 1,
    ...(threads > 1 ? THREADED : {}),
  });
}

const at = (posX: number, posY: number, mass: number): BodyInit => ({ posX, posY, velX: 0, velY: 0, mass });

/** Live bodies as { handle: mass }. */
function masses(rt: Runtime): Record<number, number> {
  const out: Record<number, number> = {};
  rt.deviceDo(Body, (b) => (out[b.handle] = b.mass));
  return out;
}

test('the nearest of two heavier bodies merges into a lighter one; mass, momentum and position combine', async (t) => {
  const rt = await runtime();
  try {
    // X1 and X2 both want B; X2 is nearer. X1 and X2 are too far apart to merge.
    const [b, x1, x2] = await initBodies(rt, [at(0, 0, 10), { ...at(0.0031, 0, 20), velY: 1e-3 }, { ...at(-0.002, 0, 30), velX: 2e-3 }]);
    await step(rt);
    t.deepEqual(masses(rt), { [b!]: 40, [x1!]: 20 });
    const merged = rt.get(Body, b!);
    t.true(merged.hasIncomingMerge);
    // Momentum: 30 · 2e-3 along x, over the summed mass 40 (gravity adds ~1e-9).
    t.true(Math.abs(merged.velX - (30 * 2e-3) / 40) < 1e-6, `velX ${merged.velX}`);
    t.true(Math.abs(merged.velY) < 1e-6);
    // Mean of the two positions after the step's move (x2 moved by velX · DT first).
    t.true(Math.abs(merged.posX - (0 + (-0.002 + 2e-3 * DT)) / 2) < 1e-6, `posX ${merged.posX}`);
    t.is(rt.count(Body), 2);
    t.false(x2! in masses(rt), 'x2 merged and is gone');
  } finally {
    await rt.close();
  }
});

test('equal distances: the lower id wins (not the lower handle)', async (t) => {
  const rt = await runtime();
  try {
    // Symmetric scene: gravity keeps it symmetric (f32 negation is exact).
    const [b, x1, x2] = await initBodies(rt, [at(0, 0, 10), at(0.002, 0, 20), at(-0.002, 0, 20)]);
    t.true(x1! < x2!);
    t.deepEqual([rt.get(Body, x1!).id, rt.get(Body, x2!).id], [1, 2], 'initBodies: id = index');
    rt.get(Body, x1!).id = 2; // now x2 comes first in the tie order (body.ts "Ties")
    rt.get(Body, x2!).id = 1;
    await step(rt);
    t.deepEqual(masses(rt), { [b!]: 30, [x1!]: 20 }, 'x2 (lower id, higher handle) merged into b and is gone');
  } finally {
    await rt.close();
  }
});

test('two lighter bodies at equal distance: the target is the lower id (not the lower handle)', async (t) => {
  const rt = await runtime();
  try {
    const [b1, x, b2] = await initBodies(rt, [at(0.002, 0, 10), at(0, 0, 20), at(-0.002, 0, 10)]);
    t.true(b1! < b2!);
    rt.get(Body, b1!).id = 7;
    rt.get(Body, b2!).id = 5;
    await step(rt);
    t.deepEqual(masses(rt), { [b1!]: 10, [b2!]: 30 }, `x (${x}) merged into b2, the lower id`);
  } finally {
    await rt.close();
  }
});

/**
 * Live bodies of a baseline run as [mass, posX] in index order (its private arrays: the
 * baselines have no constructor for hand-made scenes, so `load` overwrites a drawn start).
 */
interface BaselineView {
  run: CollisionAos | CollisionSoa;
  load(scene: readonly BodyInit[]): void;
  bodies(): [number, number][];
}

function baselineView(kind: 'aos' | 'soa', n: number): BaselineView {
  if (kind === 'aos') {
    const run = new CollisionAos(n, 1);
    const bodies = (run as unknown as { bodies: Record<string, number>[] }).bodies;
    return {
      run,
      load: (scene) =>
        scene.forEach((v, i) => {
          for (const k of ['posX', 'posY', 'velX', 'velY', 'mass'] as const) bodies[i]![k] = Math.fround(v[k]);
        }),
      bodies: () => bodies.map((b) => [b['mass']!, b['posX']!]),
    };
  }
  const run = new CollisionSoa(n, 1);
  const arrays = run as unknown as Record<'posX' | 'posY' | 'velX' | 'velY' | 'mass', Float32Array> & { n: number };
  return {
    run,
    load: (scene) =>
      scene.forEach((v, i) => {
        for (const k of ['posX', 'posY', 'velX', 'velY', 'mass'] as const) arrays[k][i] = v[k];
      }),
    bodies: () => [...arrays.mass.subarray(0, arrays.n)].map((m, i) => [m, arrays.posX[i]!]),
  };
}

test('exact ties: the baselines (lower index) and smmo (lower id) agree when the handles are in the other order', async (t) => {
  // In index order (= id order in smmo): b, x1, x2 (resolveMerge tie: x1 wins) and b1, x, b2 (prepareMerge tie: x targets b1).
  const scenes: BodyInit[][] = [
    [at(0, 0, 10), at(0.002, 0, 20), at(-0.002, 0, 20)],
    [at(0.002, 0, 10), at(0, 0, 20), at(-0.002, 0, 10)],
  ];
  for (const scene of scenes) {
    const rt = await runtime();
    try {
      // smmo creates the bodies in reverse order (handles descending in id) and gives body i id i.
      const handles = (await initBodies(rt, [...scene].reverse())).reverse();
      handles.forEach((h, i) => (rt.get(Body, h).id = i));
      t.true(handles[1]! > handles[2]!, 'the tied bodies: handle order against id order');
      await step(rt);
      const smmo: [number, number, number][] = [];
      rt.deviceDo(Body, (b) => void smmo.push([b.id, b.mass, b.posX]));
      const byId = smmo.sort((x, y) => x[0] - y[0]).map(([, m, x]) => [m, x]);
      for (const kind of ['aos', 'soa'] as const) {
        const base = baselineView(kind, scene.length);
        base.load(scene);
        base.run.step();
        t.deepEqual(base.bodies(), byId, `${kind}: the same bodies ([mass, posX] in index / id order)`);
      }
      t.is(byId.length, 2, 'one merge');
    } finally {
      await rt.close();
    }
  }
});

test('init gives the i-th body id i', async (t) => {
  const rt = await runtime();
  try {
    await init(rt, 100, 9);
    const ids: number[] = [];
    rt.deviceDo(Body, (b) => void ids.push(b.id));
    t.deepEqual(ids, [...Array(100).keys()], 'in handle order: 0 … 99');
  } finally {
    await rt.close();
  }
});

test('a body whose target merges itself does not merge (chains resolve one link per step)', async (t) => {
  const rt = await runtime();
  try {
    // b targets c (its nearest lighter body); x targets b, which is busy: x stays.
    const [c, b, x] = await initBodies(rt, [at(0, 0, 5), at(0.002, 0, 10), at(0.0035, 0, 20)]);
    await step(rt);
    t.deepEqual(masses(rt), { [c!]: 15, [x!]: 20 }, `b (${b}) merged into c`);
    await step(rt); // now x (0.0035 - ~0.001 away from the merged c) merges into it
    t.deepEqual(masses(rt), { [c!]: 35 });
  } finally {
    await rt.close();
  }
});

test('bodies farther apart than the threshold, or of equal mass, never merge', async (t) => {
  const rt = await runtime();
  try {
    const d = MERGE_THRESHOLD * 1.01;
    await initBodies(rt, [at(0, 0, 10), at(d, 0, 20), at(0.5, 0.5, 10), at(0.5 + MERGE_THRESHOLD / 2, 0.5, 10)]);
    for (let k = 0; k < 3; k++) await step(rt);
    t.is(rt.count(Body), 4);
  } finally {
    await rt.close();
  }
});

test('smmo, AOS and SOA agree: same body count, digest within tolerance (1200 bodies, 8 steps)', async (t) => {
  const n = 1200;
  const rt = await runtime();
  const aos = new CollisionAos(n, 42);
  const soa = new CollisionSoa(n, 42);
  try {
    await init(rt, n, 42);
    t.is(aos.digest(), digest(rt), 'same start');
    t.is(soa.digest(), digest(rt), 'same start');
    for (let k = 0; k < 8; k++) {
      await step(rt);
      aos.step();
      soa.step();
      const d = digest(rt);
      for (const [name, run] of [
        ['AOS', aos],
        ['SOA', soa],
      ] as const) {
        t.deepEqual(run.counts(), { Body: rt.count(Body) }, `${name} step ${k}`);
        t.true(Math.abs(run.digest() - d) <= TOLERANCE_PER_BODY * rt.count(Body), `${name} step ${k}: ${run.digest()} vs ${d}`);
      }
    }
    t.true(rt.count(Body) < n, `some bodies merged (${n} → ${rt.count(Body)})`);
    rt.validateHeap();
  } finally {
    await rt.close();
  }
});

test('the baselines registry loads both collision baselines', async (t) => {
  for (const layout of ['aos', 'soa'] as const) {
    const b = await loadBaseline('collision', layout);
    t.is(b?.app, 'collision');
    const run = b!.create({ bodies: 50 }, 1);
    run.step(0);
    t.true(run.counts()['Body']! <= 50);
  }
});

test('same digest on 1 and 2 threads', async (t) => {
  const digests: number[] = [];
  const counts: number[] = [];
  for (const threads of [1, 2]) {
    const rt = await runtime(threads);
    try {
      await init(rt, 800, 3);
      for (let k = 0; k < 4; k++) await step(rt);
      digests.push(digest(rt));
      counts.push(rt.count(Body));
    } finally {
      await rt.close();
    }
  }
  t.is(counts[1], counts[0]);
  // Bodies are created on the calling thread, so handles (and with them every sum's
  // order and every tie) are the same: the digests are equal, not just close.
  t.is(digests[1], digests[0]);
});

test('profile.ts times every phase of a step and ends where step() ends', async (t) => {
  const { profile } = await import('../apps/collision/profile.js');
  const { PHASES } = await import('../apps/collision/collision.js');
  const p = await profile({ bodies: 300, steps: 2, backend: 'ts', threads: 1, seed: 5 });
  t.deepEqual(
    Object.keys(p.steps[0]!.phases),
    PHASES.map(([name]) => name),
  );
  t.is(p.steps[0]!.bodies, 300);
  const rt = await runtime();
  try {
    await init(rt, 300, 5);
    await step(rt);
    t.is(p.steps[1]!.bodies, rt.count(Body));
    await step(rt);
    t.is(p.bodiesAfter, rt.count(Body));
  } finally {
    await rt.close();
  }
});
