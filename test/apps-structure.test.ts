/**
 * structure (apps/structure): the original's mesh generator (glibc rand, checked against
 * values a C program printed); a hand-built mesh whose pulled spring breaks at a known
 * step and whose cut-off part the BFS removes; agreement of the smmo version with both
 * baselines (exact digests, checksums within 1e-9) with the invariants and validateHeap()
 * after every step; the same digest on 1, 2 and 4 threads; bad sizes; the CLI (run
 * --json, compiled methods, kernels, --dump/--init, --render, wasm).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { loadBaseline } from '../apps/baselines/index.js';
import { StructureAos } from '../apps/structure/baseline_aos.js';
import { StructureSoa } from '../apps/structure/baseline_soa.js';
import {
  buildMesh,
  DT,
  KIND_ANCHOR,
  KIND_ANCHOR_PULL,
  KIND_NODE,
  LibcRand,
  MAX_DEGREE,
  MAX_DISTANCE,
  meshSizes,
  type Mesh,
} from '../apps/structure/mesh.js';
import { AnchorNode, AnchorPullNode, Node, NodeBase, Spring } from '../apps/structure/model.js';
import { checkInvariants, checksum, CLASSES, digest, init, initFromMesh, step } from '../apps/structure/structure.js';
import { createRuntime, UsageError, type Runtime } from '../index.js';
import { describeChild, lastJson, smmo } from './helpers/child.js';
import { compiledAsTs, ranAsTs } from './helpers/run-report.js';

const MODULE = new URL('../apps/structure/index.js', import.meta.url);
const THREADED = { inlineBlocks: 0, startTimeoutMs: 120_000 };

async function runtime(threads = 1, heap = 16 << 20): Promise<Runtime> {
  return createRuntime({
    classes: CLASSES,
    heap,
    threads,
    modules: [MODULE],
    checked: threads === 1,
    ...(threads > 1 ? THREADED : {}),
  });
}

test('glibc rand and random_float: the values a C program prints after srand(42)', (t) => {
  const r = new LibcRand(42);
  t.deepEqual([r.next(), r.next(), r.next(), r.next(), r.next()], [71876166, 708592740, 1483128881, 907283241, 442951012]);
  const hi = 1.0 - Math.fround(0.35);
  t.is(r.float(0.35, hi), Math.fround(0.425038517));
  t.is(r.float(0.35, hi), Math.fround(0.540967524));
  t.is(r.float(0.35, hi), Math.fround(0.609086692));
  t.is(r.float(-0.05, 0.05), Math.fround(-0.0198344383));
  t.is(DT, Math.fround(0.2));
  // srand(0) is srand(1) in glibc.
  t.is(new LibcRand(0).next(), new LibcRand(1).next());
});

test("the mesh: the original's random_dataset for kMaxNodes = 2000, seed 42 (values from the C original's generator)", (t) => {
  const m = buildMesh(2000, 42);
  t.deepEqual(meshSizes(2000), { nodes: 1300, pull: 500, anchors: 200, springs: 3500 });
  t.deepEqual(meshSizes(1_500_000), { nodes: 975_000, pull: 375_000, anchors: 150_000, springs: 2_625_000 });
  t.is(m.nodes, 2000);
  t.is(m.springs, 3500);
  t.deepEqual([m.mass[0], m.posX[0], m.posY[0]], [500, Math.fround(0.448989272), Math.fround(0.557190657)]);
  t.deepEqual([m.p1[0], m.p2[0], m.springFactor[0]], [993, 1549, Math.fround(4.01470661)]);
  // Sums the C program printed (its float expressions, summed in a double).
  let sx = 0;
  for (let i = 0; i < m.nodes; i++) {
    const x = m.posX[i]!;
    const y = m.posY[i]!;
    if (m.kind[i] === KIND_NODE) sx += Math.fround(Math.fround(x * 3) + y);
    else if (m.kind[i] === KIND_ANCHOR_PULL) sx += Math.fround(Math.fround(x + Math.fround(m.velX[i]! * 7)) + Math.fround(m.velY[i]! * 11));
    else sx += Math.fround(Math.fround(x * 5) + Math.fround(y * 13));
  }
  let acc = 0;
  let factors = 0;
  const degree = new Uint8Array(m.nodes);
  for (let s = 0; s < m.springs; s++) {
    acc += m.p1[s]! * 31 + m.p2[s]! * 7;
    factors += m.springFactor[s]!;
    t.not(m.p1[s], m.p2[s]);
    degree[m.p1[s]!]!++;
    degree[m.p2[s]!]!++;
  }
  t.is(sx, 4670.659763671458);
  t.is(acc, 133854217);
  t.is(factors, 14024.247791290283);
  t.true(degree.every((d) => d <= MAX_DEGREE));
  t.is(m.kind.filter((k) => k === KIND_ANCHOR).length, 200);
  t.notDeepEqual(buildMesh(2000, 43).posX, m.posX);
});

test('bad sizes are UsageErrors', (t) => {
  t.throws(() => buildMesh(9, 1), { instanceOf: UsageError, message: /--nodes must be an integer in 10 … 4000000, got 9/ });
  t.throws(() => buildMesh(4_000_001, 1), { instanceOf: UsageError });
  t.throws(() => buildMesh(100.5, 1), { instanceOf: UsageError });
  const bad = tiny();
  bad.p2[1] = bad.p1[1]!;
  t.throws(() => new StructureSoa(bad), { instanceOf: UsageError, message: /spring 1 joins nodes 1 and 1/ });
});

/**
 * By hand: node 0 an AnchorPullNode at (0.4, 0.5) moving left at 0.05 (0.01 per step),
 * spring 0 to Node 1 at (0.5, 0.5), spring 1 from Node 1 to Node 2 at (0.6, 0.5) (both
 * Nodes nearly immovable: mass 1e9); AnchorNode 3 at (0.5, 0.6) with spring 2 to Node 4
 * at (0.6, 0.6); Node 5 at (0.45, 0.45) without springs. Factor 4, maximum force 0.5:
 * after k pulls spring 0 is stretched by about 0.01·k, its force 0.04·k, above 0.5 from
 * k = 13, i.e. in step 12 (the pull comes first). Then node 0 loses its last spring and
 * goes; nodes 1 and 2 are cut off from every anchor: the BFS removes them and spring 1.
 * Node 5 (no anchor reaches it, no spring) stays, as in the original.
 */
function tiny(): Mesh {
  return {
    nodes: 6,
    kind: Uint8Array.from([KIND_ANCHOR_PULL, KIND_NODE, KIND_NODE, KIND_ANCHOR, KIND_NODE, KIND_NODE]),
    posX: Float32Array.from([0.4, 0.5, 0.6, 0.5, 0.6, 0.45]),
    posY: Float32Array.from([0.5, 0.5, 0.5, 0.6, 0.6, 0.45]),
    velX: Float32Array.from([-0.05, 0, 0, 0, 0, 0]),
    velY: new Float32Array(6),
    mass: Float32Array.from([0, 1e9, 1e9, 0, 500, 500]),
    springs: 3,
    p1: Int32Array.from([0, 1, 3]),
    p2: Int32Array.from([1, 2, 4]),
    springFactor: new Float32Array(3).fill(4),
    maxForce: new Float32Array(3).fill(0.5),
  };
}

interface Seen {
  ids: number[];
  distances: number[];
  springs: string[];
}

function seen(rt: Runtime): Seen {
  const nodes: [number, number][] = [];
  rt.deviceDo(NodeBase, (n) => void nodes.push([n.id, n.distance]));
  nodes.sort((a, b) => a[0] - b[0]);
  const springs: string[] = [];
  rt.deviceDo(Spring, (s) => void springs.push(`${s.p1!.id}-${s.p2!.id}`));
  springs.sort();
  return { ids: nodes.map((n) => n[0]), distances: nodes.map((n) => n[1]), springs };
}

test('a hand-built mesh: the pulled spring breaks in step 12, the BFS removes the part cut off', async (t) => {
  const rt = await runtime(1, 4 << 20);
  const aos = new StructureAos(tiny());
  const soa = new StructureSoa(tiny());
  try {
    initFromMesh(rt, tiny());
    const M = MAX_DISTANCE;
    for (let k = 0; k < 12; k++) {
      await step(rt);
      aos.step();
      soa.step();
      checkInvariants(rt);
      rt.validateHeap();
      t.deepEqual(seen(rt), { ids: [0, 1, 2, 3, 4, 5], distances: [0, 1, 2, 0, 1, M], springs: ['0-1', '1-2', '3-4'] }, `step ${k}`);
      t.is(digest(rt), aos.digest());
      t.is(digest(rt), soa.digest());
      // The pull: k + 1 steps of 0.01; spring 0's force about 0.04 · (k + 1).
      let force = 0;
      rt.deviceDo(Spring, (s) => void (s.p1!.id === 0 ? (force = s.force) : 0));
      t.true(Math.abs(force - 0.04 * (k + 1)) < 1e-4, `step ${k}: force ${force}`);
    }
    let pullX = 0;
    rt.deviceDo(AnchorPullNode, (p) => void (pullX = p.posX));
    t.true(Math.abs(pullX - 0.28) < 1e-6, `pulled to ${pullX}`);
    // The untouched spring 3–4 has no force: node 4 does not move at all.
    rt.deviceDo(Node, (n) => {
      if (n.id === 4) t.deepEqual([n.posX, n.posY, n.velX, n.velY], [Math.fround(0.6), Math.fround(0.6), 0, 0]);
    });
    await step(rt);
    aos.step();
    soa.step();
    checkInvariants(rt);
    rt.validateHeap();
    t.deepEqual(seen(rt), { ids: [3, 4, 5], distances: [0, 1, M], springs: ['3-4'] });
    t.deepEqual(rt.objectCounts(), { AnchorNode: 1, AnchorPullNode: 0, Node: 2, Spring: 1, Bfs: 1 });
    t.deepEqual(aos.counts(), rt.objectCounts());
    t.deepEqual(soa.counts(), rt.objectCounts());
    t.is(digest(rt), aos.digest());
    t.is(digest(rt), soa.digest());
    t.is(rt.count(AnchorNode), 1);
  } finally {
    await rt.close();
  }
});

test('smmo, AOS and SOA give the same digest, counts and checksum; invariants and validateHeap() after every step', async (t) => {
  const seed = 1; // a mesh with a part no anchor reaches from the start: the first BFS removes it
  const n = 600;
  const rt = await runtime(1, 16 << 20);
  const mesh = buildMesh(n, seed);
  const aos = new StructureAos(mesh);
  const soa = new StructureSoa(mesh);
  try {
    await init(rt, n, seed);
    t.is(aos.digest(), digest(rt));
    t.is(soa.digest(), digest(rt));
    const start = rt.objectCounts();
    for (let k = 0; k < 40; k++) {
      await step(rt);
      aos.step();
      soa.step();
      checkInvariants(rt);
      rt.validateHeap();
      const d = digest(rt);
      t.is(aos.digest(), d, `AOS, step ${k}`);
      t.is(soa.digest(), d, `SOA, step ${k}`);
      t.deepEqual(aos.counts(), rt.objectCounts(), `AOS counts, step ${k}`);
      t.deepEqual(soa.counts(), rt.objectCounts(), `SOA counts, step ${k}`);
      const c = checksum(rt);
      t.true(Math.abs(aos.checksum() - c) <= 1e-9 * Math.abs(c), `AOS checksum, step ${k}`);
      t.true(Math.abs(soa.checksum() - c) <= 1e-9 * Math.abs(c), `SOA checksum, step ${k}`);
    }
    const end = rt.objectCounts();
    t.true(end['Spring']! < start['Spring']! - 50, `springs broke: ${start['Spring']} → ${end['Spring']}`);
    t.true(end['AnchorPullNode']! < start['AnchorPullNode']!, 'pull nodes lost their springs');
    t.true(end['Node']! < start['Node']!, `nodes were cut off: ${start['Node']} → ${end['Node']}`);
  } finally {
    await rt.close();
  }
});

test('the baselines registry loads both structure baselines with the app digest', async (t) => {
  const rt = await runtime(1, 16 << 20);
  try {
    await init(rt, 300, 3);
    for (let k = 0; k < 15; k++) await step(rt);
    for (const layout of ['aos', 'soa'] as const) {
      const run = (await loadBaseline('structure', layout))!.create({ nodes: 300 }, 3);
      for (let k = 0; k < 15; k++) run.step(k);
      t.is(run.digest(), digest(rt), layout);
    }
  } finally {
    await rt.close();
  }
});

test('same digest on 1, 2 and 4 threads; another seed gives another digest', async (t) => {
  const digests: number[] = [];
  for (const [threads, seed] of [
    [1, 42],
    [2, 42],
    [4, 42],
    [1, 43],
  ] as const) {
    const rt = await runtime(threads, 16 << 20);
    try {
      await init(rt, 1500, seed);
      for (let k = 0; k < 25; k++) await step(rt);
      checkInvariants(rt);
      digests.push(digest(rt));
    } finally {
      await rt.close();
    }
  }
  t.is(digests[1], digests[0], '2 threads');
  t.is(digests[2], digests[0], '4 threads');
  t.not(digests[3], digests[0]);
});

test('smmo run structure --json: compiled methods, kernels; --dump then --init continues exactly; --render; wasm', async (t) => {
  const work = mkdtempSync(join(tmpdir(), 'smmo-structure-'));
  try {
    const smoke = await smmo(['run', 'structure', '--iterations', '2', '--json']);
    t.is(smoke.code, 0, describeChild(smoke));
    const s = lastJson(smoke.stdout);
    t.is(s['app'], 'structure');
    t.deepEqual(s['params'], { nodes: 20000 });
    const methods = [
      'AnchorPullNode.pull',
      'Spring.computeForce',
      'Node.removeBrokenSprings',
      'AnchorNode.removeBrokenSprings',
      'Spring.deleteBroken',
      'Node.move',
      'Node.updatePosition',
      'AnchorPullNode.initializeBfs',
      'Node.bfsVisit',
      'Spring.bfsDelete',
      'Node.bfsDelete',
    ];
    compiledAsTs(t, s, methods);

    const base = ['run', 'structure', '--nodes', '800', '--json'];
    const dir = join(work, 'state');
    const png = join(work, 's.png');
    const [half, full] = await Promise.all([
      smmo([...base, '--iterations', '8', '--dump', dir, '--render', png]),
      smmo([...base, '--iterations', '16', '--threads', '2']),
    ]);
    t.is(half.code, 0, describeChild(half));
    t.is(full.code, 0, describeChild(full));
    t.deepEqual([...readFileSync(png).subarray(1, 4)], [0x50, 0x4e, 0x47], 'a PNG file');
    const resumed = await smmo(['run', 'structure', '--init', dir, '--iterations', '8', '--json']);
    t.is(resumed.code, 0, describeChild(resumed));
    t.is(lastJson(resumed.stdout)['digest'], lastJson(full.stdout)['digest']);

    const wasm = await smmo([...base, '--iterations', '8', '--backend', 'wasm']);
    t.is(wasm.code, 0, describeChild(wasm));
    t.is(lastJson(wasm.stdout)['digest'], lastJson(half.stdout)['digest']);
    ranAsTs(t, lastJson(wasm.stdout), methods, 'wasm');

    const bad = await smmo(['run', 'structure', '--nodes', '5']);
    t.not(bad.code, 0);
    t.regex(bad.stderr, /--nodes must be an integer in 10 … 4000000, got 5/);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});
