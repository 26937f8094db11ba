/**
 * generation (apps/generation): hand-checked small cases (a lone cell, a domino ageing
 * through the 255 states and disappearing, a row of three), the original's cross start,
 * agreement with an independent grid reference and with both baselines, validateHeap()
 * after every step, the same digest on 1, 2 and 4 threads, and the CLI (run --json,
 * --dump / --init, --render).
 */
import test from 'ava';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GenerationAos } from '../apps/generation/baseline_aos.js';
import { GenerationSoa } from '../apps/generation/baseline_soa.js';
import {
  burstStart,
  cellStates,
  CLASSES,
  digest,
  digestOf,
  init,
  picture,
  pixelOf,
  startFromCells,
  startFromParams,
  step,
  type GenStart,
} from '../apps/generation/generation.js';
import { Alive, Candidate, NUM_STATES } from '../apps/generation/model.js';
import { loadBaseline } from '../apps/baselines/index.js';
import { createRuntime, UsageError, type Runtime } from '../index.js';
import { describeChild, lastJson, smmo } from './helpers/child.js';

const MODULE = new URL('../apps/generation/index.js', import.meta.url);
const THREADED = { inlineBlocks: 0, startTimeoutMs: 120_000 };

async function runtimeFor(start: GenStart, threads = 1): Promise<Runtime> {
  const rt = await createRuntime({
    classes: CLASSES,
    heap: (8 << 20) + start.width * start.height * 32,
    threads,
    modules: [MODULE],
    ...(threads > 1 ? THREADED : {}),
  });
  await init(rt, start);
  return rt;
}

/** The Alives as "x,y:state", sorted. */
function alives(rt: Runtime, width: number): string[] {
  const out: string[] = [];
  cellStates(rt).forEach((s, i) => {
    if (s >= 0) out.push(`${i % width},${Math.floor(i / width)}:${s}`);
  });
  return out.sort();
}
const cells = (list: readonly string[]): string[] => [...list].sort();

/**
 * An independent reference: the whole grid, one number per cell (-1 empty, else an
 * Alive's state), stepped by the rules as written in the original's configuration.h
 * without agents: a state-0 cell stays with {0,2,3,5,6,7,8} state-0 neighbours, else goes
 * to 1; 1 … 254 → +1; 255 → empty; an empty cell comes alive with
 * {3,4,6,8} state-0 neighbours. (Candidates only exist next to cells that were alive,
 * and a Candidate with n ≥ 3 state-0 neighbours always exists there, so the grid rule
 * gives the same Alives.)
 */
function referenceStep(grid: Int16Array, width: number, height: number): Int16Array {
  const stay = [true, false, true, true, false, true, true, true, true];
  const spawn = [false, false, false, true, true, false, true, false, true];
  const next = new Int16Array(grid.length);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      let n = 0;
      for (let dy = -1; dy <= 1; dy++)
        for (let dx = -1; dx <= 1; dx++) {
          const nx = x + dx;
          const ny = y + dy;
          if ((dx !== 0 || dy !== 0) && nx >= 0 && ny >= 0 && nx < width && ny < height && grid[ny * width + nx] === 0) n++;
        }
      const s = grid[y * width + x]!;
      next[y * width + x] = s < 0 ? (spawn[n] ? 0 : -1) : s === 0 ? (stay[n] ? 0 : 1) : s < NUM_STATES ? s + 1 : -1;
    }
  }
  return next;
}

test('a lone cell stays alive (0 neighbours is in the survival set); its 8 neighbours stay Candidates', async (t) => {
  const rt = await runtimeFor(startFromCells(5, 5, [[2, 2]]));
  try {
    for (let g = 0; g < 5; g++) {
      await step(rt);
      rt.validateHeap();
    }
    t.deepEqual(alives(rt, 5), ['2,2:0']);
    t.is(rt.count(Candidate), 8);
  } finally {
    await rt.close();
  }
});

test('a domino ages through the states 1 … 255, becomes two Candidates after step 256, and the grid is empty after 257', async (t) => {
  // Each cell of the pair has one state-0 neighbour: not in {0,2,3,5,6,7,8}, so both start
  // dying at step 1. No Candidate ever has 3 state-0 neighbours.
  const rt = await runtimeFor(
    startFromCells(4, 3, [
      [1, 1],
      [2, 1],
    ]),
  );
  try {
    t.is(rt.count(Candidate), 10, 'every other cell of the 4 × 3 grid is next to the domino');
    for (let g = 1; g <= 255; g++) {
      await step(rt);
      rt.validateHeap();
      t.deepEqual(alives(rt, 4), [`1,1:${g}`, `2,1:${g}`], `after step ${g}`);
      // Step 1: the Candidates still see two state-0 cells; from step 2 on none, and they go.
      if (g <= 2) t.is(rt.count(Candidate), g === 1 ? 10 : 0, `Candidates after step ${g}`);
    }
    await step(rt);
    t.is(rt.count(Alive), 0, 'after step 256 the state-255 cells are gone');
    t.is(rt.count(Candidate), 2, '… replaced by Candidates');
    await step(rt);
    t.is(rt.count(Candidate), 0, 'with no state-0 neighbour they disappear at step 257');
    t.is(digest(rt), digestOf([]));
    rt.validateHeap();
  } finally {
    await rt.close();
  }
});

test('a row of three: worked by hand for 3 steps, then the dying cells age out around a lone survivor', async (t) => {
  const rt = await runtimeFor(
    startFromCells(5, 5, [
      [1, 2],
      [2, 2],
      [3, 2],
    ]),
  );
  try {
    // Step 1: the centre has 2 state-0 neighbours (stays), the ends 1 (start dying);
    // (2,1) and (2,3) see all three (spawn); every other Candidate sees 1 or 2.
    await step(rt);
    t.deepEqual(alives(rt, 5), cells(['1,2:1', '2,2:0', '3,2:1', '2,1:0', '2,3:0']));
    // Step 2: (2,1) and (2,3) see only the centre (1: start dying); the centre sees 2
    // (stays); (1,1), (3,1), (1,3), (3,3) see 2 state-0 cells: no spawn.
    await step(rt);
    t.deepEqual(alives(rt, 5), cells(['1,2:2', '2,2:0', '3,2:2', '2,1:1', '2,3:1']));
    // Step 3: the centre sees 0 (stays); only the 4 diagonal Candidates see a state-0 cell.
    await step(rt);
    t.deepEqual(alives(rt, 5), cells(['1,2:3', '2,2:0', '3,2:3', '2,1:2', '2,3:2']));
    t.is(rt.count(Candidate), 4);
    // (1,2), (3,2) reach 255 after step 255 and are Candidates after 256; (2,1), (2,3) one step later.
    for (let g = 4; g <= 257; g++) await step(rt);
    t.deepEqual(alives(rt, 5), ['2,2:0']);
    t.is(rt.count(Candidate), 8, 'the lone survivor keeps its 8 neighbours as Candidates');
    rt.validateHeap();
  } finally {
    await rt.close();
  }
});

test('picture: empty 0, Candidate 1, an Alive the grey level of its state', async (t) => {
  const rt = await runtimeFor(
    startFromCells(5, 5, [
      [1, 2],
      [2, 2],
      [3, 2],
    ]),
  );
  try {
    await step(rt);
    await step(rt);
    const p = picture(rt);
    t.deepEqual([p.width, p.height, p.palette.length], [5, 5, 256]);
    const at = (x: number, y: number): number => p.pixels[y * 5 + x]!;
    t.is(at(2, 2), pixelOf(0));
    t.is(at(2, 1), pixelOf(1));
    t.is(at(1, 2), pixelOf(2));
    t.is(at(1, 1), 1, 'a Candidate');
    t.deepEqual([...p.palette[pixelOf(0)]!], [255, 255, 255]);
    t.true(p.palette[pixelOf(2)]![0]! < 255, 'dying cells are darker');
    t.is(at(0, 0), 0, 'empty: never next to a new Alive');
  } finally {
    await rt.close();
  }
});

test("the original's crosses: shape and lattices of load_burst", (t) => {
  // One cross fits when size ≥ 2·len + 21: centre (len + 10, len + 10).
  const len = 10;
  t.is(burstStart(40, 40, len).alive.length, 0, 'below 2·len + 21: no cross');
  const s = burstStart(41, 41, len);
  // Arms: 2 × (len − 5) cells vertical, 2·len + 1 horizontal (row 0); the other diamond rows 3+3+7+7+11 twice.
  t.is(s.alive.length, 2 * (len - 5) + (2 * len + 1) + 2 * (3 + 3 + 7 + 7 + 11));
  const at = (x: number, y: number): number => (20 + y) * 41 + 20 + x;
  t.true(s.alive.includes(at(0, 0)));
  t.true(s.alive.includes(at(0, -len)), 'top of the vertical arm (y = −len)');
  t.true(s.alive.includes(at(-len, 0)), 'left end of the horizontal arm (x = −len)');
  t.true(s.alive.includes(at(5, 1)) && s.alive.includes(at(3, -3)) && s.alive.includes(at(-1, 5)));
  t.false(s.alive.includes(at(2, -5)), '(2, −5) is outside the diamond');
  t.false(s.alive.includes(at(1, 6)), 'the arms are one cell wide');
  // Default size: two lattices, spacing 210, the second shifted by 105 (4 × 4 + 4 × 4 crosses on 1000²).
  const big = burstStart(1000, 1000, 100);
  const centres = [110, 320, 530, 740].flatMap((x) => [110, 320, 530, 740].map((y) => y * 1000 + x));
  const shifted = [215, 425, 635, 845].flatMap((x) => [215, 425, 635, 845].map((y) => y * 1000 + x));
  for (const c of [...centres, ...shifted]) t.true(big.alive.includes(c), `cross centred at ${c % 1000}, ${Math.floor(c / 1000)}`);
  t.false(big.alive.includes(950 * 1000 + 950), 'no third lattice point beyond size − len − 10');
});

test('smmo agrees with an independent whole-grid reference, step by step (random start and crosses)', async (t) => {
  for (const start of [startFromParams({ width: 40, height: 30, density: 0.35 }, 5), burstStart(62, 62, 20)]) {
    const { width, height } = start;
    const rt = await runtimeFor(start);
    let grid: Int16Array = new Int16Array(width * height).fill(-1);
    for (const id of start.alive) grid[id] = 0;
    try {
      for (let g = 1; g <= 300; g++) {
        await step(rt);
        grid = referenceStep(grid, width, height);
        if (g % 10 === 0 || g > 250) t.deepEqual(Array.from(cellStates(rt)), Array.from(grid), `${width} × ${height}, step ${g}`);
      }
      t.true(rt.count(Alive) > 0, 'something is left (the comparison means something)');
    } finally {
      await rt.close();
    }
  }
});

test('smmo, AOS and SOA give the same digest and counts, with validateHeap() after every step', async (t) => {
  for (const params of [
    { width: 64, height: 48, density: 0.3 },
    { width: 120, height: 90, cross: 20 },
  ]) {
    const start = startFromParams(params, 7);
    const rt = await runtimeFor(start);
    const aos = new GenerationAos(start);
    const soa = new GenerationSoa(start);
    try {
      for (let g = 0; g < 300; g++) {
        await step(rt);
        aos.step();
        soa.step();
        rt.validateHeap();
        if (g % 25 === 24) {
          const d = digest(rt);
          t.is(aos.digest(), d, `AOS, generation ${g + 1}`);
          t.is(soa.digest(), d, `SOA, generation ${g + 1}`);
          const counts = rt.objectCounts();
          t.deepEqual(aos.counts(), counts);
          t.deepEqual(soa.counts(), counts);
        }
      }
      t.true(rt.count(Alive) > 0);
    } finally {
      await rt.close();
    }
  }
});

test('the baselines registry loads both generation baselines with the app digest', async (t) => {
  const params = { width: 30, height: 30, density: 0.4 };
  const rt = await runtimeFor(startFromParams(params, 3));
  try {
    for (let g = 0; g < 10; g++) await step(rt);
    for (const layout of ['aos', 'soa'] as const) {
      const b = await loadBaseline('generation', layout);
      const run = b!.create(params, 3);
      for (let g = 0; g < 10; g++) run.step(g);
      t.is(run.digest(), digest(rt), layout);
    }
  } finally {
    await rt.close();
  }
});

test('the digest is the Alive count plus FNV-1a of (cell id, state) pairs in cell order', (t) => {
  const fnv = (bytes: number[]): number => {
    let h = 0x811c9dc5n;
    for (const b of bytes) h = ((h ^ BigInt(b)) * 0x01000193n) & 0xffffffffn;
    return Number(h);
  };
  t.is(digestOf([-1, -1]), 0x811c9dc5);
  t.is(digestOf([-1, 7]), 1 + fnv([1, 0, 0, 0, 7, 0, 0, 0]));
  t.is(digestOf([0, -1, 255]), 2 + fnv([0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 255, 0, 0, 0]));
  t.not(digestOf([0, 1]), digestOf([1, 0]), 'states count, not only positions');
});

test('same digest on 1, 2 and 4 threads', async (t) => {
  const start = startFromParams({ width: 96, height: 80, cross: 20 }, 42);
  const digests: number[] = [];
  for (const threads of [1, 2, 4]) {
    const rt = await runtimeFor(start, threads);
    try {
      for (let g = 0; g < 40; g++) await step(rt);
      digests.push(digest(rt));
      rt.validateHeap();
    } finally {
      await rt.close();
    }
  }
  t.is(digests[1], digests[0]);
  t.is(digests[2], digests[0]);
});

test('bad generation parameters are UsageErrors (exit code 2 in the CLI)', (t) => {
  t.throws(() => startFromParams({ width: 10, height: 10, cross: 10, density: 0.2 }, 1), {
    instanceOf: UsageError,
    message: /either --cross .* or --density/,
  });
  t.throws(() => startFromParams({ width: 10, height: 10, density: 1.5 }, 1), {
    instanceOf: UsageError,
    message: /--density must be in 0 … 1/,
  });
  t.throws(() => startFromParams({ width: 10, height: 10, cross: 3 }, 1), {
    instanceOf: UsageError,
    message: /--cross must be an integer ≥ 5/,
  });
  t.is(pixelOf(0), 255);
  t.is(pixelOf(NUM_STATES), 2);
});

test('smmo run generation --iterations 3 --json; --dump then --init resumes to the same digest; --render writes a PNG', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'smmo-generation-'));
  try {
    const size = ['--width', '120', '--height', '120', '--cross', '20'];
    const r = await smmo(['run', 'generation', '--iterations', '3', '--json']);
    t.is(r.code, 0, describeChild(r));
    const j = lastJson(r.stdout) as {
      app: string;
      digest: number;
      objects: Record<string, number>;
      compiled: Record<string, { compiled: boolean }>;
      kernels: Record<string, string>;
    };
    t.is(j.app, 'generation');
    t.is(j.objects['Cell'], 1000 * 1000);
    for (const m of ['Candidate.prepare', 'Alive.prepare', 'Candidate.update', 'Alive.update', 'Alive.createCandidates']) {
      t.true(j.compiled[m]?.compiled, `${m} is compiled`);
      t.is(j.kernels[m], 'ts');
    }
    const soa = new GenerationSoa(startFromParams({ width: 1000, height: 1000 }, 42));
    for (let g = 0; g < 3; g++) soa.step();
    t.is(j.digest, soa.digest(), 'the CLI digest is the SOA baseline digest');

    const dump = join(dir, 'a.arrow');
    const png = join(dir, 'a.png');
    const six = await smmo(['run', 'generation', ...size, '--iterations', '6', '--json']);
    const first = await smmo(['run', 'generation', ...size, '--iterations', '3', '--dump', dump, '--json']);
    t.is(first.code, 0, describeChild(first));
    const resumed = await smmo(['run', 'generation', '--init', dump, '--iterations', '3', '--threads', '2', '--render', png, '--json']);
    t.is(resumed.code, 0, describeChild(resumed));
    t.is((lastJson(resumed.stdout) as { digest: number }).digest, (lastJson(six.stdout) as { digest: number }).digest);
    t.true(existsSync(png));
    t.deepEqual([...readFileSync(png).subarray(1, 4)], [0x50, 0x4e, 0x47]);

    const wasm = await smmo(['run', 'generation', ...size, '--iterations', '6', '--backend', 'wasm', '--json']);
    if (wasm.code === 0) {
      const w = lastJson(wasm.stdout) as { digest: number; kernels: Record<string, string> };
      t.is(w.digest, (lastJson(six.stdout) as { digest: number }).digest, '--backend wasm (methods as ts) gives the same digest');
      t.is(w.kernels['Alive.update'], 'ts');
    }
    const bad = await smmo(['run', 'generation', '--cross', '20', '--density', '0.1', '--iterations', '1']);
    t.is(bad.code, 2, describeChild(bad));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
