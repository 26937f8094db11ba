/**
 * sugarscape (apps/sugarscape): hand-checked small cases (growth and diffusion; one agent
 * moving to the richest visible cell and harvesting it; two agents asking for one cell,
 * settled by the cell's stream; a Male and a Female that mate and put their child into
 * the one free cell), agreement of the smmo version with both baselines (exact digests)
 * with the invariants and validateHeap() after every step, the same digest on 1, 2 and
 * 4 threads, and the CLI (--json kernels and compiled methods, --dump/--init, --render,
 * --backend wasm, bad sizes).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { loadBaseline } from '../apps/baselines/index.js';
import { SugarscapeAos } from '../apps/sugarscape/baseline_aos.js';
import { SugarscapeSoa } from '../apps/sugarscape/baseline_soa.js';
import { Agent, Female, Male } from '../apps/sugarscape/model.js';
import { chance, FEMALE, MALE, MAX_VISION } from '../apps/sugarscape/rules.js';
import {
  cellStates,
  CLASSES,
  digest,
  emptyStart,
  init,
  initFromStart,
  FEMALE_PIXEL,
  invariantViolation,
  MALE_PIXEL,
  PALETTE,
  picture,
  randomStart,
  reachOf,
  step,
  type AgentStart,
  type SugarStart,
} from '../apps/sugarscape/sugarscape.js';
import { nextInArray, seedAgentStream, seedCellStream } from '../apps/wa-tor/stream.js';
import { createRuntime, UsageError, type Runtime } from '../index.js';
import { describeChild, lastJson, smmo } from './helpers/child.js';
import { compiledAsTs, ranAsTs } from './helpers/run-report.js';

const MODULE = new URL('../apps/sugarscape/index.js', import.meta.url);
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

function agent(cell: number, kind: number, fields: Partial<AgentStart> = {}): AgentStart {
  return {
    cell,
    kind,
    seed: 1000 + cell,
    vision: 1,
    age: 0,
    maxAge: 90,
    sugar: 100,
    endowment: 100,
    metabolism: 10,
    maxChildren: kind === FEMALE ? 3 : 0,
    numChildren: 0,
    ...fields,
  };
}

/** Run `start` for `steps` steps in smmo, AOS and SOA; the three must agree on the digest after each. */
async function runAll(t: { is(a: unknown, b: unknown, m?: string): void }, start: SugarStart, steps: number, rt: Runtime): Promise<void> {
  const aos = new SugarscapeAos(start);
  const soa = new SugarscapeSoa(start);
  await initFromStart(rt, start);
  t.is(aos.digest(), digest(rt), 'AOS at the start');
  t.is(soa.digest(), digest(rt), 'SOA at the start');
  for (let k = 0; k < steps; k++) {
    await step(rt);
    aos.step();
    soa.step();
    t.is(invariantViolation(rt), null, `invariants, step ${k}`);
    rt.validateHeap();
    t.is(aos.digest(), digest(rt), `AOS, step ${k}`);
    t.is(soa.digest(), digest(rt), `SOA, step ${k}`);
  }
}

test('sugar grows towards the capacity and diffuses ⌊d/8⌋ to the 24 cells within radius 2', async (t) => {
  // 7 × 7, no agents. Cell (3,3) has 800 sugar: 60 (the cap) diffuses, each cell within
  // radius 2 gets ⌊60/8⌋ = 7. Cell (0,0) grows 50 → diffuses ⌊50/8⌋ = 6 → 44 (its
  // neighbours get ⌊6/8⌋ = 0). Cell (6,6) holds 3490 of 3500 and grows 50: +10 only, then
  // diffuses 60 → 3440, and gives 7 to each cell within radius 2, such as (5,5) and (4,4).
  const start = emptyStart(7, 7, 5);
  start.sugar[3 * 7 + 3] = 800;
  start.growRate[0] = 50;
  start.sugar[6 * 7 + 6] = 3490;
  start.growRate[6 * 7 + 6] = 50;
  const rt = await runtime();
  try {
    await runAll(t, start, 2, rt);
  } finally {
    await rt.close();
  }
  const rt2 = await runtime();
  try {
    await initFromStart(rt2, start);
    await step(rt2);
    const s = cellStates(rt2).sugar;
    const at = (x: number, y: number): number => s[y * 7 + x]!;
    t.is(at(3, 3), 740);
    t.is(at(0, 0), 44);
    t.is(at(1, 1), 7, 'radius 2 of (3,3)');
    t.is(at(5, 5), 7 + 7, '(5,5): 7 from (3,3), ⌊60/8⌋ = 7 from (6,6) too');
    t.is(at(4, 4), 14);
    t.is(at(0, 3), 0, 'radius 3: nothing');
    t.is(at(6, 6), 3440);
    t.is(at(3, 0), 0);
  } finally {
    await rt2.close();
  }
});

test('one agent moves to the richest free cell it sees and harvests it', async (t) => {
  // 5 × 5, a Male at (2,2) with vision 1. Sugar 40 at (3,1) (diffuses 5 → 35) and 16 at
  // (1,2) (diffuses 2 → 14); nothing reaches a neighbour (⌊5/8⌋ = ⌊2/8⌋ = 0). The agent
  // requests (3,1), its only requester grants it, it moves and harvests 35:
  // sugar 100 − 10 (metabolism) + 35 = 125, age 1.
  const start = emptyStart(5, 5, 9);
  start.sugar[1 * 5 + 3] = 40;
  start.sugar[2 * 5 + 1] = 16;
  start.agents.push(agent(2 * 5 + 2, MALE));
  const rt = await runtime();
  try {
    await initFromStart(rt, start);
    await step(rt);
    t.is(invariantViolation(rt), null);
    const s = cellStates(rt);
    t.is(s.kind[1 * 5 + 3], MALE, 'the agent is on (3,1)');
    t.is(s.kind[2 * 5 + 2], 0, '(2,2) is free');
    t.is(s.agentSugar[1 * 5 + 3], 125);
    t.is(s.agentAge[1 * 5 + 3], 1);
    t.is(s.sugar[1 * 5 + 3], 0, 'harvested');
    t.is(s.sugar[2 * 5 + 1], 14, 'the poorer cell in sight, untouched');
    t.is(rt.count(Agent), 1);
  } finally {
    await rt.close();
  }
  // The same in the baselines, and for a few more steps.
  const rt2 = await runtime();
  try {
    await runAll(t, start, 6, rt2);
  } finally {
    await rt2.close();
  }
});

test('an agent dies past its max age or without sugar, and frees its cell', async (t) => {
  const start = emptyStart(4, 1, 3);
  start.agents.push(agent(0, MALE, { age: 90, maxAge: 90 }));
  start.agents.push(agent(3, FEMALE, { sugar: 10, metabolism: 10 }));
  const rt = await runtime();
  try {
    await initFromStart(rt, start);
    await step(rt);
    t.is(rt.count(Agent), 0);
    t.deepEqual([...cellStates(rt).kind], [0, 0, 0, 0]);
    t.is(invariantViolation(rt), null);
    rt.validateHeap();
  } finally {
    await rt.close();
  }
});

test("two agents asking for one cell: the cell's own stream picks, the same way in smmo, AOS and SOA", async (t) => {
  // 3 × 1: a Male at 0, a Female at 2, sugar 16 (→ 14) at 1: both request cell 1. Cell 1
  // scans x = 0 (turn 1: draw 1, always taken) then x = 2 (turn 2: draw 2, taken with
  // probability 1/2). The loser stays and harvests its own (empty) cell.
  const winners = new Set<number>();
  for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) {
    const start = emptyStart(3, 1, seed);
    start.sugar[1] = 16;
    start.agents.push(agent(0, MALE, { sugar: 300, endowment: 1000 }), agent(2, FEMALE, { sugar: 300, endowment: 1000 }));
    const stream = new Uint32Array(4);
    seedCellStream(stream, 0, seed, 1);
    nextInArray(stream, 0);
    const femaleWins = chance(nextInArray(stream, 0), 2);
    const rt = await runtime();
    try {
      await initFromStart(rt, start);
      await step(rt);
      const s = cellStates(rt);
      t.is(s.kind[1], femaleWins ? FEMALE : MALE, `seed ${seed}`);
      t.is(s.agentSugar[1], 300 - 10 + 14, `seed ${seed}: the winner harvested 14`);
      winners.add(s.kind[1]!);
      const aos = new SugarscapeAos(start);
      const soa = new SugarscapeSoa(start);
      aos.step();
      soa.step();
      t.is(aos.digest(), digest(rt));
      t.is(soa.digest(), digest(rt));
    } finally {
      await rt.close();
    }
  }
  t.is(winners.size, 2, 'both outcomes occur over the seeds');
});

test('a Male and a Female mate and their child appears in the one free cell', async (t) => {
  // 3 × 1: Female (vision 1) at 0, Male (vision 2) at 1, cell 2 free; no sugar anywhere.
  //  move: the Male's only free cell is 2 (sugar 0 = the start value: turn 1, taken); the
  //        Female sees only cell 1 (occupied) and stays. Male → 2.
  //  mate: both age 31 ≥ 22 with sugar ≥ ⅔ endowment. The Male (vision 2) proposes to the
  //        Female at 0; she accepts (radius 2); his only free cell within vision is 1.
  //  child in cell 1: endowment (60 + 90)/2 = 75 = its sugar, max age (90 + 80)/2 = 85,
  //        metabolism (5 + 7)/2 = 6, vision (2 + 1)/2 = 1, age 0; Male 200 − 5 − 30 = 165,
  //        Female 200 − 7 − 45 = 148 with 1 child. Sex: the Male's third draw (one in
  //        prepareMove, one in proposeOffspringTarget) ≤ 1/2 → Male.
  const start = emptyStart(3, 1, 21);
  start.agents.push(
    agent(0, FEMALE, { seed: 77, age: 30, maxAge: 80, sugar: 200, endowment: 90, metabolism: 7, maxChildren: 3 }),
    agent(1, MALE, { seed: 88, vision: 2, age: 30, maxAge: 90, sugar: 200, endowment: 60, metabolism: 5 }),
  );
  const words = new Uint32Array(4);
  seedAgentStream(words, 0, 88);
  nextInArray(words, 0);
  nextInArray(words, 0);
  const childIsMale = chance(nextInArray(words, 0), 2);
  const rt = await runtime();
  try {
    await initFromStart(rt, start);
    await step(rt);
    t.is(invariantViolation(rt), null);
    rt.validateHeap();
    const s = cellStates(rt);
    t.deepEqual([...s.kind], [FEMALE, childIsMale ? MALE : FEMALE, MALE]);
    t.deepEqual([...s.agentSugar], [148, 75, 165]);
    t.deepEqual([...s.agentAge], [31, 0, 31]);
    t.is(s.children[0], 1);
    let child: { maxAge: number; metabolism: number; vision: number; endowment: number; maxChildren: number } | null = null;
    rt.deviceDo(Agent, (a) => {
      if (a.age === 0)
        child = {
          maxAge: a.maxAge,
          metabolism: a.metabolism,
          vision: a.vision,
          endowment: a.endowment,
          maxChildren: a instanceof Female ? a.maxChildren : -1,
        };
    });
    t.deepEqual(child, { maxAge: 85, metabolism: 6, vision: 1, endowment: 75, maxChildren: childIsMale ? -1 : 3 });
    t.is(rt.count(Male) + rt.count(Female), 3);
  } finally {
    await rt.close();
  }
  const rt2 = await runtime();
  try {
    await runAll(t, start, 5, rt2);
  } finally {
    await rt2.close();
  }
});

test('the picture: sugar as a yellow level, Males blue, Females red', async (t) => {
  // 4 × 1 at the start: a Male, sugar 1750 (half the capacity: level ⌊1750 · 249 / 3500⌋ =
  // 124 of 249, colour round(124 · 255 / 249) = 127), sugar 7000 (above the capacity: the
  // last level), a Female.
  const start = emptyStart(4, 1, 2);
  start.sugar[1] = 1750;
  start.sugar[2] = 7000;
  start.agents.push(agent(0, MALE, { vision: 1 }), agent(3, FEMALE, { vision: 1 }));
  const rt = await runtime();
  try {
    await initFromStart(rt, start);
    const before = picture(rt);
    t.is(before.width, 4);
    t.is(before.height, 1);
    t.deepEqual(PALETTE[MALE_PIXEL], [0, 0, 255]);
    t.deepEqual(PALETTE[FEMALE_PIXEL], [255, 0, 0]);
    t.is(before.pixels[0], MALE_PIXEL);
    t.is(before.pixels[3], FEMALE_PIXEL);
    t.deepEqual(PALETTE[before.pixels[1]!], [127, 127, 0], 'half the capacity: half yellow');
    t.deepEqual(PALETTE[before.pixels[2]!], [255, 255, 0], 'above the capacity: full yellow');
  } finally {
    await rt.close();
  }
});

test('a Female with maxChildren children accepts no proposal', async (t) => {
  const start = emptyStart(3, 1, 21);
  start.agents.push(
    agent(0, FEMALE, { age: 30, sugar: 200, endowment: 90, maxChildren: 2, numChildren: 2 }),
    agent(1, MALE, { vision: 2, age: 30, sugar: 200, endowment: 60 }),
  );
  const rt = await runtime();
  try {
    await initFromStart(rt, start);
    await step(rt);
    t.is(rt.count(Agent), 2);
    t.is(cellStates(rt).kind[1], 0);
  } finally {
    await rt.close();
  }
});

test('smmo, AOS and SOA agree on a random start; invariants and validateHeap() after every step; children are born', async (t) => {
  const start = randomStart(40, 36, 11);
  const rt = await runtime(1, 16 << 20);
  try {
    await runAll(t, start, 90, rt);
    let children = 0;
    rt.deviceDo(Female, (f) => void (children += f.numChildren));
    t.true(children > 0, `${children} children`);
    const aos = new SugarscapeAos(start);
    for (let k = 0; k < 90; k++) aos.step();
    t.deepEqual(aos.counts(), rt.objectCounts());
  } finally {
    await rt.close();
  }
});

test("scanning only the agents' largest vision (reach 1) gives what the original's radius 2 gives", async (t) => {
  const start = randomStart(36, 30, 5);
  const narrow = await runtime();
  const wide = await runtime();
  try {
    await initFromStart(narrow, start);
    await initFromStart(wide, start, MAX_VISION);
    t.is(reachOf(narrow), 1, 'every agent of the original start has vision 1');
    t.is(reachOf(wide), 2);
    const aos = new SugarscapeAos(start, MAX_VISION);
    const soa = new SugarscapeSoa(start);
    t.is(soa.reach, 1);
    for (let k = 0; k < 80; k++) {
      await step(narrow);
      await step(wide);
      aos.step();
      soa.step();
      const d = digest(wide);
      t.is(digest(narrow), d, `step ${k}`);
      t.is(aos.digest(), d, `AOS (radius 2), step ${k}`);
      t.is(soa.digest(), d, `SOA (reach 1), step ${k}`);
    }
    let children = 0;
    narrow.deviceDo(Female, (f) => void (children += f.numChildren));
    t.true(children > 0, `${children} children`);
  } finally {
    await narrow.close();
    await wide.close();
  }
  const rt = await runtime();
  try {
    await t.throwsAsync(initFromStart(rt, start, 3), { instanceOf: UsageError, message: /reach must be/ });
  } finally {
    await rt.close();
  }
});

test('the baselines registry loads both sugarscape baselines with the app digest', async (t) => {
  const rt = await runtime(1, 16 << 20);
  try {
    await init(rt, { width: 30, height: 20 }, 3);
    for (let k = 0; k < 20; k++) await step(rt);
    for (const layout of ['aos', 'soa'] as const) {
      const run = (await loadBaseline('sugarscape', layout))!.create({ width: 30, height: 20 }, 3);
      for (let k = 0; k < 20; k++) run.step(k);
      t.is(run.digest(), digest(rt), layout);
      t.deepEqual(run.counts(), rt.objectCounts(), layout);
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
    const rt = await runtime(threads, 24 << 20);
    try {
      await init(rt, { width: 64, height: 48 }, seed);
      for (let k = 0; k < 70; k++) await step(rt);
      t.is(invariantViolation(rt), null);
      digests.push(digest(rt));
    } finally {
      await rt.close();
    }
  }
  t.is(digests[1], digests[0], '2 threads');
  t.is(digests[2], digests[0], '4 threads');
  t.not(digests[3], digests[0]);
});

test('bad starts and sizes are UsageErrors', async (t) => {
  t.throws(() => emptyStart(0, 5, 1), { instanceOf: UsageError, message: /1 … \d+ cells/ });
  t.throws(() => randomStart(5.5, 5, 1), { instanceOf: UsageError });
  const start = emptyStart(3, 1, 1);
  start.agents.push(agent(1, MALE), agent(1, FEMALE));
  const rt = await runtime();
  try {
    await t.throwsAsync(initFromStart(rt, start), { instanceOf: UsageError, message: /two agents in cell 1/ });
    const odd = emptyStart(3, 1, 1);
    odd.agents.push(agent(0, MALE, { sugar: 1.5 }));
    await t.throwsAsync(initFromStart(rt, odd), { instanceOf: UsageError, message: /agent sugar must be an integer/ });
    odd.agents[0] = agent(0, MALE, { vision: 3 });
    await t.throwsAsync(initFromStart(rt, odd), { instanceOf: UsageError, message: /vision must be 1 … 2, got 3/ });
    odd.agents[0] = agent(0, FEMALE, { maxChildren: 2, numChildren: 3 });
    await t.throwsAsync(initFromStart(rt, odd), { instanceOf: UsageError, message: /numChildren 3 is above its maxChildren 2/ });
  } finally {
    await rt.close();
  }
});

test('smmo run sugarscape --json: compiled methods, kernels; --dump then --init continues exactly; --render; wasm; bad sizes', async (t) => {
  const work = mkdtempSync(join(tmpdir(), 'smmo-sugarscape-'));
  try {
    const base = ['run', 'sugarscape', '--width', '48', '--height', '40', '--json'];
    const dir = join(work, 'state');
    const png = join(work, 's.png');
    const [half, full] = await Promise.all([
      smmo([...base, '--iterations', '15', '--dump', dir, '--render', png]),
      smmo([...base, '--iterations', '30', '--threads', '2']),
    ]);
    t.is(half.code, 0, describeChild(half));
    t.is(full.code, 0, describeChild(full));
    const s = lastJson(half.stdout);
    t.is(s['app'], 'sugarscape');
    t.deepEqual(s['params'], { width: 48, height: 40 });
    const methods = [
      'Cell.growSugar',
      'Cell.prepareDiffuse',
      'Cell.updateDiffuse',
      'Male.ageAndMetabolize',
      'Female.ageAndMetabolize',
      'Male.prepareMove',
      'Female.prepareMove',
      'Cell.decidePermission',
      'Male.updateMove',
      'Female.updateMove',
      'Male.propose',
      'Female.decideProposal',
      'Male.proposeOffspringTarget',
      'Male.mate',
    ];
    compiledAsTs(t, s, methods);
    t.deepEqual([...readFileSync(png).subarray(1, 4)], [0x50, 0x4e, 0x47], 'a PNG file');
    const resumed = await smmo(['run', 'sugarscape', '--init', dir, '--iterations', '15', '--json']);
    t.is(resumed.code, 0, describeChild(resumed));
    t.is(lastJson(resumed.stdout)['digest'], lastJson(full.stdout)['digest']);

    const wasm = await smmo([...base, '--iterations', '15', '--backend', 'wasm']);
    t.is(wasm.code, 0, describeChild(wasm));
    t.is(lastJson(wasm.stdout)['digest'], s['digest']);
    ranAsTs(t, lastJson(wasm.stdout), methods, 'wasm');

    const bad = await smmo(['run', 'sugarscape', '--width', '0', '--iterations', '1']);
    t.not(bad.code, 0);
    t.regex(bad.stderr, /width/);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});
