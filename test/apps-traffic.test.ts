/**
 * traffic (apps/traffic): one car on a hand-built street, step by step; the network's
 * construction; agreement of the smmo version with both baselines (exact digests) with
 * the invariants and validateHeap() after every step; the same digest on 1, 2 and 4
 * threads; the CLI (run --json, compiled methods, --dump/--init, --render).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { loadBaseline } from '../apps/baselines/index.js';
import { TrafficAos } from '../apps/traffic/baseline_aos.js';
import { TrafficSoa } from '../apps/traffic/baseline_soa.js';
import { Car, Cell, spawnCar } from '../apps/traffic/model.js';
import { buildNetwork, draw, MAX_DEGREE, SLOW_DOWN_THRESHOLD, type Network } from '../apps/traffic/network.js';
import { checkInvariants, CLASSES, digest, init, initFromNetwork, step } from '../apps/traffic/traffic.js';
import { createRuntime, type Runtime } from '../index.js';
import { describeChild, lastJson, smmo } from './helpers/child.js';
import { compiledAsTs, ranAsTs } from './helpers/run-report.js';

const MODULE = new URL('../apps/traffic/index.js', import.meta.url);
const THREADED = { inlineBlocks: 0, startTimeoutMs: 120_000 };

async function runtime(threads = 1, heap = 24 << 20): Promise<Runtime> {
  return createRuntime({
    classes: CLASSES,
    heap,
    threads,
    modules: [MODULE],
    checked: threads === 1,
    ...(threads > 1 ? THREADED : {}),
  });
}

/**
 * Cells 0 … 39 in a line (speed limit 9), cell 39 a target that leads back to cell 0;
 * cell 20 is the first cell of a traffic light whose second cell is cell 40 (isolated):
 * both red at the start, cell 40 green from iteration 4, cell 20 from iteration 9.
 */
function street(): Network {
  const cells = 41;
  const outgoing = new Int32Array(cells * MAX_DEGREE).fill(-1);
  const numOutgoing = new Uint8Array(cells);
  for (let i = 0; i < 39; i++) {
    outgoing[i * MAX_DEGREE] = i + 1;
    numOutgoing[i] = 1;
  }
  outgoing[39 * MAX_DEGREE] = 0;
  numOutgoing[39] = 1;
  const isTarget = new Uint8Array(cells);
  isTarget[39] = 1;
  const currentMaxVelocity = new Uint8Array(cells).fill(9);
  currentMaxVelocity[20] = 0;
  currentMaxVelocity[40] = 0;
  const lightCells = Int32Array.from([20, 40, -1, -1]);
  return {
    cells,
    maxVelocity: new Uint8Array(cells).fill(9),
    currentMaxVelocity,
    numOutgoing,
    outgoing,
    isTarget,
    isProducer: new Uint8Array(cells),
    producerKey: new Uint32Array(cells),
    x: new Float32Array(cells),
    y: new Float32Array(cells),
    lights: 1,
    lightCells,
    lightNumCells: Uint8Array.from([2]),
  };
}

test('one car on a hand-built street: position and velocity after each step', async (t) => {
  // The car's draws (key 7): acceleration 1 + draw(k=0) % 2, slow-down draw(k=11) < 0.2 · 2³².
  const accel = [2, 1, 2, 2, 2, 1, 1, 2, 1, 2, 2, 1, 2, 1];
  const slow = [true, false, false, false, false, false, true, false, false, false, false, false, true, false];
  for (let it = 0; it < accel.length; it++) {
    t.is(1 + (draw(7, it, 0) % 2), accel[it]!, `acceleration, iteration ${it}`);
    t.is(draw(7, it, 11) < SLOW_DOWN_THRESHOLD, slow[it]!, `slow-down, iteration ${it}`);
  }
  // By hand, maximum velocity 5 (v: after accelerate, path, limits, slow-down):
  //  0: v 0+2=2, cells 1 2, slows: v 1 → cell 1     7: v 0+2=2, cell 20 red → stays
  //  1: v 1+1=2 → cell 3                              8: v 0+1=1, cell 20 red → stays
  //  2: v 2+2=4 → cell 7                              9: cell 20 turns green; v 0+2=2 → cell 21
  //  3: v 4+2=6, capped 5 → cell 12                  10: v 2+2=4 → cell 25
  //  4: v 5 → cell 17                                11: v 4+1=5 → cell 30
  //  5: v 5, path 18 … 22, cell 20 red (limit 0 < 3): 12: v 5, slows: v 4 → cell 34
  //     v 2 → cell 19                                13: v 4+1=5, path 35 … 39, 39 is a target:
  //  6: v 2+1=3, cell 20 red: v 0 (slows: stays 0)     the car leaves
  const expected: [number, number][] = [
    [1, 1],
    [3, 2],
    [7, 4],
    [12, 5],
    [17, 5],
    [19, 2],
    [19, 0],
    [19, 0],
    [19, 0],
    [21, 2],
    [25, 4],
    [30, 5],
    [34, 4],
  ];
  const rt = await runtime(1, 8 << 20);
  try {
    initFromNetwork(rt, street());
    let first = -1;
    rt.deviceDo(Cell, (c) => {
      if (c.id === 0) first = c.handle; // a handle: deviceDo may reuse its views
    });
    spawnCar(rt.context, rt.get(Cell, first), 7, 5);
    checkInvariants(rt);
    for (let it = 0; it < expected.length; it++) {
      await step(rt, it);
      checkInvariants(rt);
      rt.validateHeap();
      const seen: [number, number][] = [];
      rt.deviceDo(Car, (car) => void seen.push([car.position!.id, car.velocity]));
      t.deepEqual(seen, [expected[it]!], `after iteration ${it}`);
    }
    await step(rt, expected.length);
    t.is(rt.count(Car), 0, 'the car left at the target');
    let occupied = 0;
    rt.deviceDo(Cell, (c) => void (occupied += c.car === null ? 0 : 1));
    t.is(occupied, 0);
  } finally {
    await rt.close();
  }
});

/**
 * Two streets merging without a light (cells 0 and 1 both lead to cell 2, which leads to
 * cell 1): a network the generator never builds. Both cars (keys 1 and 2: no slow-down in
 * iteration 0) have the path [2] (cell 1 is occupied) and drive into cell 2; the second move throws, in smmo and in the AOS baseline.
 */
function merge(): Network {
  const base = street();
  const cells = 4;
  const outgoing = Int32Array.from([2, -1, -1, -1, 2, -1, -1, -1, 1, -1, -1, -1, 0, -1, -1, -1]);
  return {
    ...base,
    cells,
    maxVelocity: new Uint8Array(cells).fill(9),
    currentMaxVelocity: new Uint8Array(cells).fill(9),
    numOutgoing: new Uint8Array(cells).fill(1),
    outgoing,
    isTarget: new Uint8Array(cells),
    isProducer: new Uint8Array(cells),
    producerKey: new Uint32Array(cells),
    x: new Float32Array(cells),
    y: new Float32Array(cells),
    lights: 0,
    lightCells: new Int32Array(0),
    lightNumCells: new Uint8Array(0),
  };
}

test('two cars driving into one cell (a merge without a light) is an error, not an overwrite', async (t) => {
  t.false(draw(1, 0, 11) < SLOW_DOWN_THRESHOLD);
  t.false(draw(2, 0, 11) < SLOW_DOWN_THRESHOLD);
  const rt = await runtime(1, 8 << 20);
  try {
    initFromNetwork(rt, merge());
    const handles: number[] = [];
    rt.deviceDo(Cell, (c) => void (handles[c.id] = c.handle));
    spawnCar(rt.context, rt.get(Cell, handles[0]!), 1, 5);
    spawnCar(rt.context, rt.get(Cell, handles[1]!), 2, 5);
    await t.throwsAsync(step(rt, 0), { message: /two cars drive into cell 2/ });
  } finally {
    await rt.close();
  }
  // The AOS baseline, with the same two cars placed by hand.
  const aos = new TrafficAos(merge()) as unknown as { cars: unknown[]; cells: { car: unknown }[] };
  const cellsA = aos.cells;
  for (const [cell, key] of [
    [0, 1],
    [1, 2],
  ] as const) {
    const car = { path: [], position: cellsA[cell], velocity: 0, maxVelocity: 5, key, arrived: false };
    cellsA[cell]!.car = car;
    aos.cars.push(car);
  }
  t.throws(() => (aos as unknown as TrafficAos).step(0), { message: /two cars drive into cell 2/ });
});

test('the network: deterministic, degrees at most 4, every street ends red, lights over incoming cells', (t) => {
  const a = buildNetwork(60, 42);
  const b = buildNetwork(60, 42);
  t.deepEqual(a, b);
  t.notDeepEqual(buildNetwork(60, 43).maxVelocity, a.maxVelocity);
  t.true(a.cells > 60 * 20, `${a.cells} cells`);
  let producers = 0;
  for (let i = 0; i < a.cells; i++) {
    t.true(a.numOutgoing[i]! >= 1 && a.numOutgoing[i]! <= MAX_DEGREE);
    t.true(a.maxVelocity[i]! >= 5 && a.maxVelocity[i]! <= 9);
    for (let d = 0; d < a.numOutgoing[i]!; d++) t.true(a.outgoing[i * MAX_DEGREE + d]! >= 0);
    producers += a.isProducer[i]!;
    // A street's last cell (several ways out, or a light's cell) starts red.
    if (a.numOutgoing[i]! > 1) t.is(a.currentMaxVelocity[i], 0, `cell ${i}`);
  }
  t.true(producers > 0);
  const inLight = new Set<number>();
  for (let l = 0; l < a.lights; l++) {
    for (let j = 0; j < a.lightNumCells[l]!; j++) {
      const c = a.lightCells[l * MAX_DEGREE + j]!;
      t.false(inLight.has(c), `cell ${c} is in one light only`);
      inLight.add(c);
      t.is(a.currentMaxVelocity[c], 0);
    }
  }
  // Tiny networks terminate (a street with no free incoming slot anywhere is dropped).
  t.true(buildNetwork(2, 1).cells > 0);
});

test('smmo, AOS and SOA give the same digest and counts; invariants and validateHeap() after every step', async (t) => {
  const seed = 11;
  const rt = await runtime(1, 24 << 20);
  const net = buildNetwork(40, seed);
  const aos = new TrafficAos(net);
  const soa = new TrafficSoa(net);
  try {
    await init(rt, 40, seed);
    t.is(aos.digest(), digest(rt));
    t.is(soa.digest(), digest(rt));
    let maxCars = 0;
    for (let k = 0; k < 150; k++) {
      await step(rt, k);
      aos.step(k);
      soa.step(k);
      checkInvariants(rt);
      rt.validateHeap();
      const d = digest(rt);
      t.is(aos.digest(), d, `AOS, step ${k}`);
      t.is(soa.digest(), d, `SOA, step ${k}`);
      t.deepEqual(aos.counts(), rt.objectCounts(), `AOS counts, step ${k}`);
      t.deepEqual(soa.counts(), rt.objectCounts(), `SOA counts, step ${k}`);
      maxCars = Math.max(maxCars, rt.count(Car));
    }
    t.true(maxCars > 50, `cars were created (at most ${maxCars} at once)`);
  } finally {
    await rt.close();
  }
});

test('the baselines registry loads both traffic baselines with the app digest', async (t) => {
  const rt = await runtime(1, 24 << 20);
  try {
    await init(rt, 25, 3);
    for (let k = 0; k < 30; k++) await step(rt, k);
    for (const layout of ['aos', 'soa'] as const) {
      const run = (await loadBaseline('traffic', layout))!.create({ intersections: 25 }, 3);
      for (let k = 0; k < 30; k++) run.step(k);
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
    const rt = await runtime(threads, 32 << 20);
    try {
      await init(rt, 80, seed);
      for (let k = 0; k < 60; k++) await step(rt, k);
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

test('smmo run traffic --json: compiled methods, kernels; --dump then --init continues exactly; --render', async (t) => {
  const work = mkdtempSync(join(tmpdir(), 'smmo-traffic-'));
  try {
    const smoke = await smmo(['run', 'traffic', '--iterations', '3', '--json']);
    t.is(smoke.code, 0, describeChild(smoke));
    const s = lastJson(smoke.stdout);
    t.is(s['app'], 'traffic');
    t.is(s['iterations'], 3);
    t.deepEqual(s['params'], { intersections: 500 });
    const methods = ['ProducerCell.createCar', 'TrafficLight.step', 'Car.preparePath', 'Car.move'];
    compiledAsTs(t, s, methods);

    const base = ['run', 'traffic', '--intersections', '30', '--json'];
    const dir = join(work, 'state');
    const png = join(work, 't.png');
    const [half, full] = await Promise.all([
      smmo([...base, '--iterations', '20', '--dump', dir, '--render', png]),
      smmo([...base, '--iterations', '40', '--threads', '2']),
    ]);
    t.is(half.code, 0, describeChild(half));
    t.is(full.code, 0, describeChild(full));
    t.deepEqual([...readFileSync(png).subarray(1, 4)], [0x50, 0x4e, 0x47], 'a PNG file');
    const resumed = await smmo(['run', 'traffic', '--init', dir, '--iterations', '20', '--json']);
    t.is(resumed.code, 0, describeChild(resumed));
    t.is(lastJson(resumed.stdout)['digest'], lastJson(full.stdout)['digest']);

    const wasm = await smmo([...base, '--iterations', '20', '--backend', 'wasm']);
    t.is(wasm.code, 0, describeChild(wasm));
    t.is(lastJson(wasm.stdout)['digest'], lastJson(half.stdout)['digest']);
    ranAsTs(t, lastJson(wasm.stdout), methods, 'wasm');
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});
