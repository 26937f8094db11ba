/**
 * The `smmo` command (bin/smmo.js imports this module and calls main()).
 *
 *   smmo run <app> [flags]     run a simulation (run.ts)
 *   smmo help [command|app]    help (help.ts)
 *   smmo --help | --version
 *
 * Exit codes (errors.ts): 0 success; 1 the run failed with an smmo error (its message
 * says what to do), or an unexpected error (stack printed); 2 the command line was
 * wrong (one line on stderr naming what and how to fix it).
 */
import { readFileSync } from 'node:fs';
import type { App } from '../apps/app.js';
import { appNames, loadApp } from '../apps/registry.js';
import { SmmoError } from '../runtime/index.js';
import { CliUsageError, EXIT_FAILURE, EXIT_OK, EXIT_USAGE } from './errors.js';
import { divergenceWhere } from './divergence.js';
import { closest, parseRunFlags } from './flags.js';
import { appHelp, mainHelp, runHelp, type AppSummary } from './help.js';
import { formatSummary, runApp } from './run.js';

const COMMANDS = ['run', 'help', 'bench', 'compare'];

/** The command being run, for error messages ('smmo run nbody: HeapExhaustedError: …'). */
let where = 'smmo';

/** smmo's version, from package.json (dist/cli/main.js → ../../package.json). */
export function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

/** Exit code of a command that ran to its end (EXIT_FAILURE: a --check beyond tolerance). */
let exitCode = EXIT_OK;

/** Run the CLI on `argv` (without node and the script); returns the exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  // `smmo --help | head -1` closes the pipe early: that is not an error.
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(EXIT_OK);
    throw e;
  });
  try {
    await dispatch(argv);
    return exitCode;
  } catch (e) {
    if (e instanceof CliUsageError) {
      process.stderr.write(`${e.message}\n`);
      return EXIT_USAGE;
    }
    if (e instanceof SmmoError) {
      process.stderr.write(`${where}: ${e.name}: ${e.message}\n`);
      return EXIT_FAILURE;
    }
    process.stderr.write(`smmo: unexpected error (a bug in smmo or in the app; please report it):\n${(e as Error)?.stack ?? String(e)}\n`);
    return EXIT_FAILURE;
  }
}

async function dispatch(argv: readonly string[]): Promise<void> {
  const [first, ...rest] = argv;
  if (first === undefined) throw new CliUsageError("smmo: no command given; try 'smmo run nbody', or 'smmo --help' for the commands");
  if (first === '--help' || first === '-h') return print(mainHelp(version(), await summaries()));
  if (first === '--version' || first === '-V') return print(`smmo ${version()}`);
  if (first === 'help') return help(rest);
  if (first === 'run') return run(rest);
  if (first === 'compare') {
    where = 'smmo compare';
    exitCode = await (await import('./compare.js')).compare(rest, print);
    return;
  }
  if (first === 'bench') {
    where = 'smmo bench';
    return print(await (await import('./bench.js')).bench(rest));
  }
  if (first.startsWith('-'))
    throw new CliUsageError(`smmo: unknown flag ${first} before the command; write 'smmo run <app> ${first} …', see 'smmo --help'`);
  const guess = closest(first, COMMANDS);
  throw new CliUsageError(
    `smmo: unknown command '${first}'${guess ? ` (did you mean '${guess}'?)` : ''}; the commands are ${COMMANDS.join(', ')}: see 'smmo --help'` +
      (appNames().includes(first) ? ` (to run the app: smmo run ${first})` : ''),
  );
}

async function run(args: readonly string[]): Promise<void> {
  const [name, ...flags] = args;
  if (name === undefined) throw new CliUsageError(`smmo run: which app? Write 'smmo run <app>' with one of: ${appNames().join(', ')}`);
  if (name === '--help' || name === '-h') return print(runHelp(await summaries()));
  if (name.startsWith('-'))
    throw new CliUsageError(`smmo run: the app comes first: 'smmo run <app> ${name} …' (apps: ${appNames().join(', ')})`);
  const app = await findApp(name, 'smmo run');
  where = `smmo run ${app.name}`;
  const opts = parseRunFlags(app, flags);
  if (opts.help) return print(appHelp(app));
  const report = await runApp(app, opts, version());
  if (opts.json) print(JSON.stringify(report));
  else if (!opts.quiet) print(formatSummary(report));
  const d = report.divergence;
  if (d?.found) {
    const at = divergenceWhere(d);
    process.stderr.write(
      `${where}: --check-every: the run diverged from the TypeScript reference ${at}` +
        `${d.field !== null ? `, first in ${d.class}.${d.field}` : d.class !== null ? `, class ${d.class}` : ''}` +
        `${d.states ? `; states written to ${d.states.reference} and ${d.states.run}` : ''}\n`,
    );
    exitCode = EXIT_FAILURE;
  } else if (report.check && !report.check.ok) {
    process.stderr.write(
      `${where}: --check: the run differs from the TypeScript reference beyond the tolerance (worst: ${report.check.worst})\n`,
    );
    exitCode = EXIT_FAILURE;
  }
}

async function help(args: readonly string[]): Promise<void> {
  const [topic, ...extra] = args;
  if (extra.length > 0) throw new CliUsageError(`smmo help: one topic at a time, got '${args.join(' ')}'; e.g. 'smmo help run'`);
  if (topic === undefined || topic === 'help') return print(mainHelp(version(), await summaries()));
  if (topic === 'run') return print(runHelp(await summaries()));
  if (topic === 'compare') return print((await import('./compare.js')).compareHelp());
  if (topic === 'bench') return print((await import('./bench.js')).benchHelp());
  const app = await loadApp(topic);
  if (app === undefined) {
    const topics = ['run', 'compare', 'bench', ...appNames()];
    const guess = closest(topic, topics);
    throw new CliUsageError(
      `smmo help: no help on '${topic}'${guess ? ` (did you mean '${guess}'?)` : ''}; the topics are ${topics.join(', ')}`,
    );
  }
  return print(appHelp(app));
}

async function findApp(name: string, where: string): Promise<App> {
  const app = await loadApp(name);
  if (app !== undefined) return app;
  const guess = closest(name, appNames());
  throw new CliUsageError(
    `${where}: unknown app '${name}'${guess ? ` (did you mean '${guess}'?)` : ''}; the apps are ${appNames().join(', ')} (see 'smmo --help')`,
  );
}

/** Name and summary of every registered app; an app that fails to load says so instead of breaking --help. */
async function summaries(): Promise<AppSummary[]> {
  return Promise.all(
    appNames().map(async (name) => {
      try {
        return { name, summary: (await loadApp(name))!.summary };
      } catch (e) {
        return { name, summary: `(cannot be loaded: ${(e as Error).message})` };
      }
    }),
  );
}

function print(text: string): void {
  process.stdout.write(`${text}\n`);
}
