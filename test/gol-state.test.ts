/**
 * game-of-life's Cell.state (apps/game-of-life/model.ts): between passes it says what the
 * cell's agent is (empty, Candidate, Alive, new Alive), on 1 and 2 threads, and a loaded
 * grid whose states break that is refused (adoptGrid, what `--init` uses).
 */
import test from 'ava';
import { adoptGrid, CLASSES, init, randomStart, step } from '../apps/game-of-life/gol.js';
import { Alive, Candidate, Cell, CELL_ALIVE, CELL_CANDIDATE, CELL_EMPTY, CELL_NEW } from '../apps/game-of-life/model.js';
import { cellTable } from '../apps/grid.js';
import { createRuntime, UsageError, type Runtime } from '../index.js';

const MODULE = new URL('../apps/game-of-life/index.js', import.meta.url);

/** Cells whose state does not match their agent, as "cell id: state/agent" strings. */
function mismatches(rt: Runtime): string[] {
  const bad: string[] = [];
  let id = 0;
  rt.deviceDo(Cell, (c) => {
    const a = c.agent;
    const want = a === null ? CELL_EMPTY : a instanceof Candidate ? CELL_CANDIDATE : (a as Alive).isNew ? CELL_NEW : CELL_ALIVE;
    if (c.state !== want) bad.push(`${id}: ${c.state}/${want}`);
    id++;
  });
  return bad;
}

for (const threads of [1, 2]) {
  test(`Cell.state matches the cell's agent after every step (${threads} thread(s))`, async (t) => {
    const rt = await createRuntime({
      classes: CLASSES,
      heap: '8MB',
      threads,
      ...(threads > 1 ? { modules: [MODULE], inlineBlocks: 0, startTimeoutMs: 120_000 } : {}),
    });
    try {
      await init(rt, randomStart(64, 48, 0.3, 7));
      t.deepEqual(mismatches(rt), []);
      let news = 0;
      for (let i = 0; i < 12; i++) {
        await step(rt);
        t.deepEqual(mismatches(rt).slice(0, 5), [], `after step ${i + 1}`);
        rt.deviceDo(Alive, (a) => {
          if (a.isNew) news++;
        });
      }
      t.true(news > 0, 'the steps must have made new Alives (CELL_NEW)');
      t.true(rt.count(Candidate) > 0);
    } finally {
      await rt.close();
    }
  });
}

test('adoptGrid refuses a grid whose Cell.state does not match the agent', async (t) => {
  const build = async (state: number): Promise<Runtime> => {
    const rt = await createRuntime({ classes: CLASSES, heap: '4MB' });
    await rt.parallelNew(Cell, 4 * 3);
    const cells = cellTable(rt.context, Cell, 12);
    const a = rt.create(Alive);
    a.cellId = 5;
    const cell = rt.get(Cell, cells[5]!);
    cell.agent = a;
    cell.state = state;
    return rt;
  };
  const good = await build(CELL_ALIVE);
  try {
    t.notThrows(() => adoptGrid(good, 4, 3));
  } finally {
    await good.close();
  }
  const bad = await build(CELL_EMPTY);
  try {
    const e = t.throws(() => adoptGrid(bad, 4, 3), { instanceOf: UsageError });
    t.regex(e?.message ?? '', /cell 5 has state 0/);
  } finally {
    await bad.close();
  }
});
