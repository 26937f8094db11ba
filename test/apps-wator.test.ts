/**
 * wa-tor (apps/wa-tor): the model's invariants after every step, agreement of the smmo
 * version with both baselines (exact digests), the same digest on 1 and 2 threads, and
 * the per-object random streams.
 */
import test from 'ava';
import { loadBaseline } from '../apps/baselines/index.js';
import { Random } from '../apps/random.js';
import { WatorAos } from '../apps/wa-tor/baseline_aos.js';
import { WatorSoa } from '../apps/wa-tor/baseline_soa.js';
import { Fish, Shark } from '../apps/wa-tor/model.js';
import { nextInArray, nextInFields, nextInWords, seedAgentStream, seedCellStream } from '../apps/wa-tor/stream.js';
import { checkInvariants, CLASSES, digest, forEachCell, init, step } from '../apps/wa-tor/wator.js';
import { createRuntime, type Runtime } from '../index.js';

const MODULE = new URL('../apps/wa-tor/index.js', import.meta.url);
/**
 * With threads > 1: every pass on the workers (inlineBlocks 0: these sizes would otherwise
 * run on the calling thread alone), and a generous start-up time for a loaded machine.
 */
const THREADED = { inlineBlocks: 0, startTimeoutMs: 120_000 };

async function runtimeFor(width: number, height: number, seed: number, threads = 1): Promise<Runtime> {
  const rt = await createRuntime({
    classes: CLASSES,
    heap: (8 << 20) + width * height * 112,
    threads,
    modules: [MODULE],
    checked: threads === 1,
    ...(threads > 1 ? THREADED : {}),
  });
  await init(rt, width, height, seed);
  return rt;
}

test('agent streams are apps/random.ts streams; all three state holders give one sequence', (t) => {
  for (const seed of [0, 1, 42, 0xffffffff]) {
    const ref = new Random(seed);
    const arr = new Uint32Array(4);
    seedAgentStream(arr, 0, seed);
    const words = { s0: arr[0]!, s1: arr[1]!, s2: arr[2]!, s3: arr[3]! };
    const plain = Array.from(arr);
    const fields = { get: (i: number) => plain[i]!, set: (i: number, v: number) => void (plain[i] = v >>> 0) };
    for (let k = 0; k < 50; k++) {
      const x = ref.nextU32();
      t.is(nextInArray(arr, 0), x);
      t.is(nextInWords(words), x);
      t.is(nextInFields(fields), x);
    }
  }
});

test('cell streams differ between cells and between seeds', (t) => {
  const first = (seed: number, id: number): number => {
    const s = new Uint32Array(4);
    seedCellStream(s, 0, seed, id);
    return nextInArray(s, 0);
  };
  const seen = new Set<number>();
  for (let id = 0; id < 1000; id++) seen.add(first(42, id));
  t.true(seen.size > 995, `${seen.size} distinct first outputs of 1000 cells`);
  t.not(first(42, 7), first(43, 7));
  t.is(first(42, 7), first(42, 7));
});

test('invariants and validateHeap() hold after every step (32 × 24, 40 steps, checked mode)', async (t) => {
  const rt = await runtimeFor(32, 24, 5);
  try {
    checkInvariants(rt);
    let sawFish = false;
    let sawShark = false;
    for (let k = 0; k < 40; k++) {
      await step(rt);
      checkInvariants(rt);
      rt.validateHeap();
      sawFish ||= rt.count(Fish) > 0;
      sawShark ||= rt.count(Shark) > 0;
      let occupied = 0;
      forEachCell(rt, (_, kind) => (occupied += kind === 0 ? 0 : 1));
      t.is(occupied, rt.count(Fish) + rt.count(Shark), `step ${k}: one agent per occupied cell`);
    }
    t.true(sawFish && sawShark);
  } finally {
    await rt.close();
  }
});

test('the start: about 1/4 fish, 1/4 sharks, 1/2 empty', async (t) => {
  const rt = await runtimeFor(100, 80, 42);
  try {
    const n = 8000;
    t.true(Math.abs(rt.count(Fish) / n - 0.25) < 0.03, `fish ${rt.count(Fish)}`);
    t.true(Math.abs(rt.count(Shark) / n - 0.25) < 0.03, `sharks ${rt.count(Shark)}`);
  } finally {
    await rt.close();
  }
});

test('without sharks, fish never die and multiply (they spawn as they move)', async (t) => {
  const rt = await runtimeFor(16, 16, 9);
  try {
    rt.deviceDo(Shark, (s) => {
      s.position!.agent = null;
      rt.destroy(s);
    });
    const start = rt.count(Fish);
    let fish = start;
    for (let k = 0; k < 12; k++) {
      await step(rt);
      const now = rt.count(Fish);
      t.true(now >= fish, `step ${k}: no fish died`);
      fish = now;
    }
    t.true(fish > start, `fish multiplied (${start} → ${fish})`);
    t.is(rt.count(Shark), 0);
    checkInvariants(rt);
  } finally {
    await rt.close();
  }
});

for (const [w, h, steps] of [
  [37, 23, 60],
  [2, 3, 20],
  [1, 5, 20],
  [6, 1, 20],
] as const) {
  test(`smmo, AOS and SOA give the same digest and counts on a ${w} × ${h} torus`, async (t) => {
    const rt = await runtimeFor(w, h, 11);
    const aos = new WatorAos(w, h, 11);
    const soa = new WatorSoa(w, h, 11);
    try {
      t.is(aos.digest(), digest(rt), 'start');
      t.is(soa.digest(), digest(rt), 'start');
      for (let k = 0; k < steps; k++) {
        await step(rt);
        aos.step();
        soa.step();
        const d = digest(rt);
        t.is(aos.digest(), d, `AOS, step ${k}`);
        t.is(soa.digest(), d, `SOA, step ${k}`);
        t.deepEqual(aos.counts(), rt.objectCounts(), `AOS counts, step ${k}`);
        t.deepEqual(soa.counts(), rt.objectCounts(), `SOA counts, step ${k}`);
      }
      checkInvariants(rt);
    } finally {
      await rt.close();
    }
  });
}

test('the baselines registry loads both wa-tor baselines with the app digest', async (t) => {
  const rt = await runtimeFor(20, 30, 3);
  try {
    for (let k = 0; k < 10; k++) await step(rt);
    for (const layout of ['aos', 'soa'] as const) {
      const b = await loadBaseline('wa-tor', layout);
      const run = b!.create({ width: 20, height: 30 }, 3);
      for (let k = 0; k < 10; k++) run.step(k);
      t.is(run.digest(), digest(rt), layout);
    }
  } finally {
    await rt.close();
  }
});

test('same digest on 1 and 2 threads, and different seeds give different digests', async (t) => {
  const digests: number[] = [];
  for (const [threads, seed] of [
    [1, 42],
    [2, 42],
    [1, 43],
  ] as const) {
    const rt = await runtimeFor(64, 64, seed, threads);
    try {
      for (let k = 0; k < 15; k++) await step(rt);
      checkInvariants(rt);
      digests.push(digest(rt));
    } finally {
      await rt.close();
    }
  }
  t.is(digests[1], digests[0]);
  t.not(digests[2], digests[0]);
});
