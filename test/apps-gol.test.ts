/**
 * game-of-life (apps/game-of-life): known patterns, the R-pentomino's population after
 * 1103 generations, agreement of the smmo version with both baselines, the same
 * digest on 1 and 2 threads, and the tm.pgm input.
 */
import test from 'ava';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { GolAos } from '../apps/game-of-life/baseline_aos.js';
import { GolSoa } from '../apps/game-of-life/baseline_soa.js';
import {
  aliveCells,
  CLASSES,
  digest,
  digestOf,
  init,
  startFromCells,
  startFromParams,
  startFromPgm,
  step,
  type GolStart,
} from '../apps/game-of-life/gol.js';
import { Alive, Candidate, Cell } from '../apps/game-of-life/model.js';
import { loadBaseline } from '../apps/baselines/index.js';
import { encodePgm } from '../apps/pgm.js';
import { createRuntime, UsageError, type Runtime } from '../index.js';

const MODULE = new URL('../apps/game-of-life/index.js', import.meta.url);
/**
 * With threads > 1: every pass on the workers (inlineBlocks 0: these sizes would otherwise
 * run on the calling thread alone), and a generous start-up time for a loaded machine.
 */
const THREADED = { inlineBlocks: 0, startTimeoutMs: 120_000 };

async function runtimeFor(start: GolStart, threads = 1): Promise<Runtime> {
  const rt = await createRuntime({
    classes: CLASSES,
    heap: (8 << 20) + start.width * start.height * 24,
    threads,
    modules: [MODULE],
    ...(threads > 1 ? THREADED : {}),
  });
  await init(rt, start);
  return rt;
}

/** The live cells as sorted "x,y" strings. */
function cellsOf(ids: ArrayLike<number>, width: number): string[] {
  return Array.from(ids, (id) => `${id % width},${Math.floor(id / width)}`).sort();
}
const pairs = (cells: readonly (readonly [number, number])[]): string[] => cells.map(([x, y]) => `${x},${y}`).sort();

/** Every Candidate sits on an empty-of-Alive cell next to a live one; every cell's agent points back. */
function checkAgents(rt: Runtime): void {
  rt.deviceDo(Cell, (c) => {
    const a = c.agent;
    if (a !== null && !(a instanceof Alive) && !(a instanceof Candidate)) throw new Error(`cell ${c.handle} holds a ${a.constructor.name}`);
  });
  rt.validateHeap();
}

test('blinker oscillates with period 2', async (t) => {
  const vertical = [
    [2, 1],
    [2, 2],
    [2, 3],
  ] as const;
  const horizontal = [
    [1, 2],
    [2, 2],
    [3, 2],
  ] as const;
  const rt = await runtimeFor(startFromCells(5, 5, vertical));
  try {
    await step(rt);
    t.deepEqual(cellsOf(aliveCells(rt), 5), pairs(horizontal));
    await step(rt);
    t.deepEqual(cellsOf(aliveCells(rt), 5), pairs(vertical));
    checkAgents(rt);
  } finally {
    await rt.close();
  }
});

test('glider moves one cell diagonally every 4 generations', async (t) => {
  const glider: [number, number][] = [
    [1, 0],
    [2, 1],
    [0, 2],
    [1, 2],
    [2, 2],
  ];
  const rt = await runtimeFor(startFromCells(12, 12, glider));
  try {
    for (let k = 1; k <= 3; k++) {
      for (let g = 0; g < 4; g++) await step(rt);
      t.deepEqual(cellsOf(aliveCells(rt), 12), pairs(glider.map(([x, y]) => [x + k, y + k] as const)), `after ${4 * k} generations`);
    }
    checkAgents(rt);
  } finally {
    await rt.close();
  }
});

test('a glider dies against the border: there is no wrap-around', async (t) => {
  // Heading down-right on a 6 × 6 field it hits the corner and settles as a block.
  const rt = await runtimeFor(
    startFromCells(6, 6, [
      [1, 0],
      [2, 1],
      [0, 2],
      [1, 2],
      [2, 2],
    ]),
  );
  try {
    for (let g = 0; g < 40; g++) await step(rt);
    t.deepEqual(
      cellsOf(aliveCells(rt), 6),
      pairs([
        [4, 4],
        [4, 5],
        [5, 4],
        [5, 5],
      ]),
    );
    t.is(rt.count(Alive), 4);
  } finally {
    await rt.close();
  }
});

test('R-pentomino: 116 live cells after 1103 generations (600 × 600 field, centred)', async (t) => {
  // Its six gliders travel ~260 cells by then; on 500 × 500 they hit the border (113).
  const c = 300;
  const rt = await runtimeFor(
    startFromCells(600, 600, [
      [c + 1, c],
      [c + 2, c],
      [c, c + 1],
      [c + 1, c + 1],
      [c + 1, c + 2],
    ]),
  );
  try {
    for (let g = 0; g < 1103; g++) await step(rt);
    t.is(rt.count(Alive), 116);
    rt.validateHeap();
  } finally {
    await rt.close();
  }
});

test('smmo, AOS and SOA give the same digest and counts (random start, 60 generations)', async (t) => {
  const params = { width: 64, height: 48, density: 0.3 };
  const start = startFromParams(params, 7);
  const rt = await runtimeFor(start);
  const aos = new GolAos(start);
  const soa = new GolSoa(start);
  try {
    for (let g = 0; g < 60; g++) {
      await step(rt);
      aos.step();
      soa.step();
      if (g % 15 === 14) {
        const d = digest(rt);
        t.is(aos.digest(), d, `AOS, generation ${g + 1}`);
        t.is(soa.digest(), d, `SOA, generation ${g + 1}`);
        const counts = rt.objectCounts();
        t.deepEqual(aos.counts(), counts);
        t.deepEqual(soa.counts(), counts);
      }
    }
    t.true(rt.count(Alive) > 0, 'the field did not die out (the comparison means something)');
    checkAgents(rt);
  } finally {
    await rt.close();
  }
});

test('the baselines registry loads both game-of-life baselines with the app digest', async (t) => {
  const params = { width: 20, height: 30, density: 0.4 };
  const start = startFromParams(params, 3);
  const rt = await runtimeFor(start);
  try {
    for (let g = 0; g < 10; g++) await step(rt);
    for (const layout of ['aos', 'soa'] as const) {
      const b = await loadBaseline('game-of-life', layout);
      const run = b!.create(params, 3);
      for (let g = 0; g < 10; g++) run.step(g);
      t.is(run.digest(), digest(rt), layout);
    }
  } finally {
    await rt.close();
  }
});

test('the digest is the live-cell count plus FNV-1a of their ids (4 bytes each, little-endian)', (t) => {
  // Reference FNV-1a over bytes, written independently of apps/hash.ts.
  const fnv = (bytes: number[]): number => {
    let h = 0x811c9dc5n;
    for (const b of bytes) h = ((h ^ BigInt(b)) * 0x01000193n) & 0xffffffffn;
    return Number(h);
  };
  t.is(digestOf([]), 0x811c9dc5);
  t.is(digestOf([5]), 1 + fnv([5, 0, 0, 0]));
  t.is(digestOf([258, 70000]), 2 + fnv([2, 1, 0, 0, 0x70, 0x11, 1, 0]));
  const a = startFromParams({ width: 40, height: 40, density: 0.25 }, 1);
  const b = startFromParams({ width: 40, height: 40, density: 0.25 }, 2);
  t.notDeepEqual(Array.from(a.alive), Array.from(b.alive), 'another seed, another start');
  t.deepEqual(Array.from(startFromParams({ width: 40, height: 40, density: 0.25 }, 1).alive), Array.from(a.alive), 'same seed, same start');
  t.true(Math.abs(a.alive.length / 1600 - 0.25) < 0.05, `density ${a.alive.length / 1600}`);
});

test('same digest on 1 and 2 threads', async (t) => {
  const start = startFromParams({ width: 96, height: 80, density: 0.3 }, 42);
  const digests: number[] = [];
  for (const threads of [1, 2]) {
    const rt = await runtimeFor(start, threads);
    try {
      for (let g = 0; g < 20; g++) await step(rt);
      digests.push(digest(rt));
    } finally {
      await rt.close();
    }
  }
  t.is(digests[1], digests[0]);
});

test('a PGM start: pixel 0 is alive, in row-major order; P2 and P5 agree', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'smmo-gol-'));
  const w = 7;
  const h = 5;
  const pixels = Array.from({ length: w * h }, (_, i) => (i % 3 === 0 || i === 11 ? 0 : 255));
  const p2 = join(dir, 'in.p2.pgm');
  const p5 = join(dir, 'in.p5.pgm');
  writeFileSync(p2, encodePgm('P2', w, h, 255, pixels));
  writeFileSync(p5, encodePgm('P5', w, h, 255, pixels));
  const a = startFromPgm(p2);
  const b = startFromPgm(p5);
  t.deepEqual([a.width, a.height], [w, h]);
  t.deepEqual(
    Array.from(a.alive),
    pixels.flatMap((v, i) => (v === 0 ? [i] : [])),
  );
  t.deepEqual(Array.from(b.alive), Array.from(a.alive));
  const rt = await runtimeFor(a);
  try {
    for (let g = 0; g < 5; g++) await step(rt);
    const soa = new GolSoa(a);
    for (let g = 0; g < 5; g++) soa.step();
    t.is(digest(rt), soa.digest());
  } finally {
    await rt.close();
  }
});

test('bad game-of-life parameters are UsageErrors (exit code 2 in the CLI)', (t) => {
  t.throws(() => startFromParams({ input: 'x.pgm', width: 10, height: 10 }, 1), {
    instanceOf: UsageError,
    message: /either --input FILE or --width/,
  });
  t.throws(() => startFromParams({ width: 10 }, 1), { instanceOf: UsageError, message: /both --width and --height/ });
  t.throws(() => startFromParams({ width: 10, height: 10, density: 1.5 }, 1), {
    instanceOf: UsageError,
    message: /--density must be in 0 … 1/,
  });
  t.throws(() => startFromParams({ input: '/nonexistent/x.pgm' }, 1), { instanceOf: UsageError, message: /cannot read the file/ });
});

const TM = resolve(process.cwd(), '../shared/data/tm.pgm');
(existsSync(TM) ? test : test.skip)('tm.pgm loads as 1714 × 1647 with 36 549 live cells', (t) => {
  const s = startFromPgm(TM);
  t.deepEqual([s.width, s.height, s.alive.length], [1714, 1647, 36549]);
});
