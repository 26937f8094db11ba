/**
 * The CLI side of state files (`smmo run <app> --dump DIR / --init DIR`); the format and
 * the loading rules are runtime/state.ts's. The Arrow library is imported only when one
 * of these flags is given.
 *
 * --init: the state fixes the app's parameters and the seed (a resumed run must be the
 * same simulation): a flag given on the command line that disagrees with the state is
 * a usage error; flags left out take the state's values. Iterations continue from the
 * state's count (step(rt, k) gets k = state iterations + i, and --dump records the total).
 */
import type { App, AppParams } from '../apps/app.js';
import { UsageError, type Runtime } from '../runtime/index.js';
import type { LoadedState, StateInfo } from '../runtime/state.js';
import { CliUsageError } from './errors.js';
import { appFlagSpecs, validate, type RunOptions } from './flags.js';

type StateModule = typeof import('../runtime/state.js');

let stateModule: StateModule | null = null;

/** runtime/state.js (and apache-arrow), loaded on first use. */
export async function stateApi(): Promise<StateModule> {
  return (stateModule ??= await import('../runtime/state.js'));
}

export interface InitState {
  state: LoadedState;
  params: AppParams;
  seed: number;
  /** Float columns with NaN or ±Infinity (the run goes on; the summary and --json report them). */
  warnings: string[];
}

/**
 * Read and check the state of --init; the run's parameters and seed are the state's. Its
 * parameters (metadata smmo.params) must be the app's, each of its flag's type: a value
 * the command line would refuse is refused here too (exit 2), naming the state and flag.
 */
export async function readInitState(app: App, opts: RunOptions, where: string): Promise<InitState> {
  const { readState, nonFiniteValues } = await stateApi();
  const state = readState(opts.init!, app.classes, app.name);
  const info = state.info;
  const params: AppParams = {};
  const specs = appFlagSpecs(app);
  for (const name of Object.keys(info.params)) {
    if (!app.flags.some((f) => f.name === name)) {
      throw new CliUsageError(
        `${where}: --init: state ${opts.init}: metadata smmo.params has '${name}', which is not a parameter of ${app.name} ` +
          `(its parameters: ${app.flags.map((f) => f.name).join(', ') || 'none'})`,
      );
    }
  }
  for (const f of app.flags) {
    const v = info.params[f.name];
    if (v === null || v === undefined) {
      params[f.name] = undefined;
      continue;
    }
    if (f.type === 'switch') {
      if (v !== 0 && v !== 1)
        throw new CliUsageError(
          `${where}: --init: state ${opts.init}: metadata smmo.params has ${f.name} = ${JSON.stringify(v)}; a switch is 0 or 1`,
        );
      params[f.name] = v;
      continue;
    }
    try {
      params[f.name] = validate(
        specs.find((s) => s.name === f.name)!,
        String(v),
        'the state',
      );
      if (typeof v === 'string' && f.type !== 'path') throw new CliUsageError(`--${f.name} must be a number, got the string '${v}'`);
    } catch (e) {
      if (!(e instanceof CliUsageError)) throw e;
      throw new CliUsageError(
        `${where}: --init: state ${opts.init}: metadata smmo.params has ${f.name} = ${JSON.stringify(v)}, which the app refuses: ` +
          e.message.replace(/^the state: /, ''),
      );
    }
  }
  for (const name of opts.given ?? []) {
    const mine = name === 'seed' ? opts.seed : opts.params[name];
    const theirs = name === 'seed' ? info.seed : params[name];
    if (String(mine) !== String(theirs)) {
      throw new CliUsageError(
        `${where}: --${name} ${mine} disagrees with the state ${opts.init} (${name} = ${theirs ?? 'not set'}); ` +
          `with --init the parameters and the seed are the state's: leave --${name} out`,
      );
    }
  }
  return { state, params, seed: info.seed, warnings: nonFiniteValues(state) };
}

/** Heap bytes for a run that starts from `state`: the app's size for its parameters, and room for the objects twice over. */
export function heapForState(app: App, init: InitState): number {
  const t = init.state.table;
  let blocks = 0;
  for (const c of init.state.classes) blocks += Math.ceil(c.handles.length / c.type.slots);
  const needed = (16 << 20) + 2 * blocks * t.blockBytes;
  const byApp = app.heapFor(init.params);
  return Number.isFinite(byApp) ? Math.max(byApp, needed) : needed;
}

/** Create the state's objects in `rt` and let the app take over (instead of app.init). */
export async function restoreInto(app: App, rt: Runtime, init: InitState): Promise<void> {
  const { restoreState } = await stateApi();
  await restoreState(rt, init.state); // a heap too small (--heap) is a HeapExhaustedError: exit 1, as for init
  app.restoreState?.(rt, init.state.info.appState);
}

/** Before the run: make the --dump directory ready, so that a bad path fails before the work (exit 2). */
export async function prepareDump(app: App, dir: string, where: string): Promise<void> {
  const { prepareStateDir } = await stateApi();
  const { planTypes } = await import('../runtime/layout.js');
  const table = planTypes(app.classes);
  try {
    prepareStateDir(
      dir,
      table.concreteIds.map((id) => table.types[id]!.name),
    );
  } catch (e) {
    if (e instanceof UsageError) throw new CliUsageError(`${where}: --dump: ${e.message}`);
    const err = e as NodeJS.ErrnoException;
    if (typeof err.code === 'string') throw new CliUsageError(`${where}: --dump: cannot create ${dir}: ${err.message}`);
    throw e;
  }
}

/** Write `rt`'s objects to `dir` (--dump); returns the files written. */
export async function dumpState(app: App, rt: Runtime, dir: string, info: Omit<StateInfo, 'app' | 'appState'>): Promise<string[]> {
  const { writeState } = await stateApi();
  try {
    return writeState(rt, dir, { ...info, app: app.name, appState: app.saveState?.(rt) ?? {} });
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    if (typeof err.code === 'string') throw new CliUsageError(`--dump: cannot write the state to ${dir}: ${err.message}`);
    throw e;
  }
}
