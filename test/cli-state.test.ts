/**
 * cli/state.ts in-process: the checks `smmo run --init DIR` makes of a state's parameters
 * and seed against the app (readInitState), the heap a resumed run gets (heapForState),
 * and the errors of --dump (prepareDump, dumpState). test/state's CLI tests run the same
 * code through child processes; these call it directly, with states written for an app
 * made here, so that each rule is checked at its edge (a switch of 2, an integer written
 * as a string, a parameter the app does not have, a flag that disagrees, a directory that
 * cannot be made).
 */
import test from 'ava';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { App, AppParams } from '../apps/app.js';
import { CliUsageError } from '../cli/errors.js';
import type { RunOptions } from '../cli/flags.js';
import { dumpState, heapForState, prepareDump, readInitState, type InitState } from '../cli/state.js';
import { createRuntime, f32, i32, object, type Runtime } from '../index.js';
import { writeState } from '../runtime/state.js';

const work = mkdtempSync(join(tmpdir(), 'smmo-cli-state-'));
test.after.always(() => rmSync(work, { recursive: true, force: true }));
let dirs = 0;

class Dot extends object({ x: f32, k: i32 }) {}
class Mark extends object({ y: f32 }) {}

/** An app with one flag of every kind; heapFor returns `heap` (for heapForState). */
function tinyApp(heap: (p: AppParams) => number = () => 1): App {
  return {
    name: 'tiny',
    summary: 'a test app',
    classes: [Dot, Mark],
    flags: [
      { name: 'count', type: 'int', description: 'objects', default: 4 },
      { name: 'sweep', type: 'switch', description: 'a switch' },
      { name: 'input', type: 'path', description: 'a file' },
      { name: 'ratio', type: 'float', description: 'a number', default: 0.5 },
    ],
    iterations: 1,
    heapFor: heap,
    init: () => Promise.resolve(),
    step: () => Promise.resolve(),
    digest: () => 0,
  };
}

/** A state of `dots` Dots and `marks` Marks written with these metadata params and seed. */
async function stateDir(params: Record<string, number | string | null>, seed = 7, dots = 5, marks = 3): Promise<string> {
  const rt = await createRuntime({ classes: [Dot, Mark], heap: 8 << 20 });
  try {
    for (let k = 0; k < dots; k++) rt.create(Dot, { x: k, k });
    for (let k = 0; k < marks; k++) rt.create(Mark, { y: k });
    const dir = join(work, `s${dirs++}`);
    writeState(rt, dir, { app: 'tiny', iterations: 3, seed, params, appState: {} });
    return dir;
  } finally {
    await rt.close();
  }
}

/** The options of `smmo run tiny --init DIR` with these flags given on the command line. */
function initOptions(dir: string, given: readonly string[] = [], params: AppParams = {}, seed = 42): RunOptions {
  return { init: dir, given, params, seed } as unknown as RunOptions;
}

async function refusal(app: App, opts: RunOptions): Promise<string> {
  const e = await readInitState(app, opts, 'smmo run tiny').then(
    () => null,
    (err: unknown) => err,
  );
  if (!(e instanceof CliUsageError)) throw new Error(`expected a CliUsageError, got ${String(e)}`);
  return e.message;
}

test('cli-state: --init: the state gives the parameters and the seed; missing and null parameters are unset; each kind is read as the flag reads it', async (t) => {
  const dir = await stateDir({ count: 6, sweep: 1, input: 'cells.pgm', ratio: 0.25 });
  const init: InitState = await readInitState(tinyApp(), initOptions(dir), 'smmo run tiny');
  t.deepEqual(init.params, { count: 6, sweep: 1, input: 'cells.pgm', ratio: 0.25 });
  t.is(init.seed, 7);
  t.deepEqual(init.warnings, []);
  t.deepEqual(init.state.info.params, { count: 6, sweep: 1, input: 'cells.pgm', ratio: 0.25 });

  const sparse = await readInitState(tinyApp(), initOptions(await stateDir({ count: 2, input: null, sweep: 0 })), 'w');
  t.deepEqual(sparse.params, { count: 2, sweep: 0, input: undefined, ratio: undefined }, 'null and missing are unset; a switch 0 stays 0');
  t.true('input' in sparse.params && 'ratio' in sparse.params, 'every flag of the app has an entry');
});

test('cli-state: --init: a parameter the app does not have is refused, naming it and the app parameters (or none)', async (t) => {
  const dir = await stateDir({ count: 4, bogus: 1 });
  t.is(
    await refusal(tinyApp(), initOptions(dir)),
    `smmo run tiny: --init: state ${dir}: metadata smmo.params has 'bogus', which is not a parameter of tiny (its parameters: count, sweep, input, ratio)`,
  );
  const bare = { ...tinyApp(), flags: [] };
  t.regex(
    await refusal(bare, initOptions(await stateDir({ count: 4 }))),
    /has 'count', which is not a parameter of tiny \(its parameters: none\)$/,
  );
});

test('cli-state: --init: a switch other than 0 or 1 is refused, the string "1" included', async (t) => {
  for (const v of [2, -1, '1']) {
    const dir = await stateDir({ sweep: v });
    t.is(
      await refusal(tinyApp(), initOptions(dir)),
      `smmo run tiny: --init: state ${dir}: metadata smmo.params has sweep = ${JSON.stringify(v)}; a switch is 0 or 1`,
      String(v),
    );
  }
});

test("cli-state: --init: a value the flag refuses is refused with the flag's own reason, without 'the state:'", async (t) => {
  const zero = await stateDir({ count: 0 });
  const m = await refusal(tinyApp(), initOptions(zero));
  t.true(
    m.startsWith(
      `smmo run tiny: --init: state ${zero}: metadata smmo.params has count = 0, which the app refuses: --count must be an integer in 1 … `,
    ),
    m,
  );
  t.false(m.includes('the state:'), m);
  const str = await stateDir({ count: '4' });
  t.is(
    await refusal(tinyApp(), initOptions(str)),
    `smmo run tiny: --init: state ${str}: metadata smmo.params has count = "4", which the app refuses: --count must be a number, got the string '4'`,
  );
  const ratio = await stateDir({ ratio: 'x' });
  t.regex(await refusal(tinyApp(), initOptions(ratio)), /has ratio = "x", which the app refuses: --ratio must be /);
  // A path is a string: accepted as it is.
  const path = await readInitState(tinyApp(), initOptions(await stateDir({ input: '7' })), 'w');
  t.is(path.params['input'], '7');
});

test('cli-state: --init: a flag given on the command line must agree with the state: parameters and the seed', async (t) => {
  const dir = await stateDir({ count: 4 }, 7);
  t.is(
    await refusal(tinyApp(), initOptions(dir, ['count'], { count: 5 })),
    `smmo run tiny: --count 5 disagrees with the state ${dir} (count = 4); with --init the parameters and the seed are the state's: leave --count out`,
  );
  t.is(
    await refusal(tinyApp(), initOptions(dir, ['seed'], {}, 8)),
    `smmo run tiny: --seed 8 disagrees with the state ${dir} (seed = 7); with --init the parameters and the seed are the state's: leave --seed out`,
  );
  t.regex(
    await refusal(tinyApp(), initOptions(dir, ['ratio'], { ratio: 0.5 })),
    /--ratio 0.5 disagrees with the state .* \(ratio = not set\)/,
  );
  // Agreeing flags pass; so do flags not given.
  const ok = await readInitState(tinyApp(), initOptions(dir, ['count', 'seed'], { count: 4 }, 7), 'w');
  t.is(ok.params['count'], 4);
  const notGiven = await readInitState(tinyApp(), initOptions(dir, [], { count: 9 }, 8), 'w');
  t.is(notGiven.seed, 7, 'a seed not given is the state one');
  const noList = await readInitState(tinyApp(), { init: dir, params: {}, seed: 1 } as unknown as RunOptions, 'w');
  t.is(noList.params['count'], 4, 'no given list: nothing to compare');
});

test("cli-state: heapForState: room for the state's objects twice over above 16 MiB, or the app's heap when larger", async (t) => {
  const dir = await stateDir({ count: 4 }, 7, 70, 33);
  const init = await readInitState(tinyApp(), initOptions(dir), 'w');
  const blocks = init.state.classes.reduce((n, c) => n + Math.ceil(c.handles.length / c.type.slots), 0);
  const slots = init.state.classes.map((c) => c.type.slots);
  t.true(
    init.state.classes.every((c) => c.handles.length > c.type.slots),
    `both classes fill more than one block (${slots.join(', ')} slots)`,
  );
  const needed = (16 << 20) + 2 * blocks * init.state.table.blockBytes;
  t.is(heapForState(tinyApp(), init), needed);
  t.is(
    heapForState(
      tinyApp(() => 1 << 30),
      init,
    ),
    1 << 30,
  );
  t.is(
    heapForState(
      tinyApp(() => needed + 1),
      init,
    ),
    needed + 1,
  );
  t.is(
    heapForState(
      tinyApp(() => NaN),
      init,
    ),
    needed,
    'an app heap that is not a number: the state decides',
  );
  t.is(
    heapForState(
      tinyApp(() => Infinity),
      init,
    ),
    needed,
  );
  let seen: AppParams | null = null;
  heapForState(
    tinyApp((p) => ((seen = p), 1)),
    init,
  );
  t.deepEqual(seen, init.params, 'the app sizes its heap from the state parameters');
});

test('cli-state: --dump: a path that is a file or has no parent is refused before the run, naming the flag; a write that fails says where', async (t) => {
  const file = join(work, `file${dirs++}`);
  writeFileSync(file, 'not a directory');
  const e1 = await prepareDump(tinyApp(), file, 'smmo run tiny').catch((e: unknown) => e);
  t.true(e1 instanceof CliUsageError);
  t.regex((e1 as Error).message, new RegExp(`^smmo run tiny: --dump: .*${file}.*exists and is not a directory`));
  const orphan = join(work, 'no-such-parent', 'dump');
  const e2 = await prepareDump(tinyApp(), orphan, 'smmo run tiny').catch((e: unknown) => e);
  t.true(e2 instanceof CliUsageError);
  t.regex((e2 as Error).message, new RegExp(`^smmo run tiny: --dump: cannot create ${orphan}: ENOENT`));
  const fresh = join(work, `fresh${dirs++}`);
  await prepareDump(tinyApp(), fresh, 'w');

  const rt: Runtime = await createRuntime({ classes: [Dot, Mark], heap: 8 << 20 });
  try {
    rt.create(Dot, { x: 1, k: 2 });
    const info = { iterations: 1, seed: 3, params: {} };
    const e3 = await dumpState(tinyApp(), rt, orphan, info as never).catch((e: unknown) => e);
    t.true(e3 instanceof CliUsageError);
    t.regex((e3 as Error).message, new RegExp(`^--dump: cannot write the state to ${orphan}: ENOENT`));
    const files = await dumpState({ ...tinyApp(), saveState: () => ({ side: 9 }) }, rt, fresh, info as never);
    t.deepEqual(
      files.map((f) => f.slice(fresh.length + 1)),
      ['Dot.arrow', 'Mark.arrow'],
    );
    const back = await readInitState(tinyApp(), initOptions(fresh), 'w');
    t.is(back.state.info.app, 'tiny', "dumpState writes the app's name");
    t.deepEqual(back.state.info.appState, { side: 9 }, "and the app's saveState");
  } finally {
    await rt.close();
  }
});

test('cli-state: --dump into the directory of an earlier dump of the same app is allowed; an error of the app is not a usage error', async (t) => {
  const dir = await stateDir({ count: 4 });
  await t.notThrowsAsync(prepareDump(tinyApp(), dir, 'w'), "the app's own <Class>.arrow files may be overwritten");
  writeFileSync(join(dir, 'Other.arrow'), '');
  const e = await prepareDump(tinyApp(), dir, 'w').catch((err: unknown) => err);
  t.true(e instanceof CliUsageError);
  t.regex((e as Error).message, /^w: --dump: .*holds Other\.arrow, not a class of this runtime \(Dot, Mark\)/);

  const rt = await createRuntime({ classes: [Dot, Mark], heap: 8 << 20 });
  try {
    const boom = new Error('saveState failed');
    const app = {
      ...tinyApp(),
      saveState: () => {
        throw boom;
      },
    };
    const got = await dumpState(app, rt, join(work, `boom${dirs++}`), { iterations: 0, seed: 1, params: {} } as never).catch(
      (err: unknown) => err,
    );
    t.is(got, boom, 'passed on as it is (a bug in the app, exit 1), not turned into a CliUsageError (exit 2)');
  } finally {
    await rt.close();
  }
});
