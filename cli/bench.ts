/**
 * `smmo bench`: the application benchmark (bench/apps.ts): apps × backends × thread
 * counts with smmo, and the AOS/SOA baselines; prints a table, writes the JSON report
 * and an SVG bar chart.
 *
 * Flags are parsed with util.parseArgs (strict) and validated with flags.ts's
 * validate(); every bad command line is a CliUsageError (exit 2) naming the flag and a
 * good value. The defaults finish in about two minutes on the 2-core dev VM.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import type { AppParams } from '../apps/app.js';
import { appNames } from '../apps/registry.js';
import { MAX_LANES } from '../apps/linux-scalability/linux.js';
import { formatTable, plotReport, runBench, SIZES, type BenchBackend, type BenchPlan, type SizeName } from '../bench/apps.js';
import { CliUsageError } from './errors.js';
import { closest, formatFlags, validate, type FlagSpec } from './flags.js';

const WHERE = 'smmo bench';
const SIZE_NAMES = Object.keys(SIZES) as SizeName[];
const BACKENDS: readonly BenchBackend[] = ['ts', 'wasm', 'webgpu'];
const LAYOUTS = ['aos', 'soa'] as const;

/** Default thread counts: 1 and 2 where the machine has 2 cores. */
function defaultThreads(): number[] {
  return [...new Set([1, Math.min(2, availableParallelism())])];
}

export const BENCH_FLAGS: readonly FlagSpec[] = [
  { name: 'apps', kind: 'path', value: 'LIST', description: `apps to run, comma-separated`, defaultText: appNames().join(',') },
  {
    name: 'backends',
    kind: 'path',
    value: 'LIST',
    description: 'smmo backends: ts, wasm (apps with WASM kernels only), webgpu (only when asked for: needs a GPU adapter)',
    defaultText: 'ts,wasm',
  },
  {
    name: 'threads',
    kind: 'path',
    value: 'LIST',
    description: 'thread counts of the smmo runs, comma-separated',
    defaultText: defaultThreads().join(','),
  },
  { name: 'baselines', kind: 'path', value: 'LIST', description: "baselines to run: aos, soa, or 'none'", defaultText: 'aos,soa' },
  {
    name: 'size',
    kind: 'choice',
    value: 'S',
    choices: SIZE_NAMES,
    description: `problem sizes: small (nbody/collision ${SIZES.small['nbody']!.params['bodies']} bodies, grids ${SIZES.small['wa-tor']!.params['width']}², traffic ${SIZES.small['traffic']!.params['intersections']} intersections, barnes-hut ${SIZES.small['barnes-hut']!.params['bodies']} bodies) or medium (${SIZES.medium['nbody']!.params['bodies']} bodies, grids ${SIZES.medium['wa-tor']!.params['width']}², traffic ${SIZES.medium['traffic']!.params['intersections']} intersections, barnes-hut ${SIZES.medium['barnes-hut']!.params['bodies']} bodies)`,
    defaultText: 'small',
  },
  { name: 'nbody-bodies', kind: 'positive', value: 'N', description: "nbody's bodies (replaces --size's)" },
  { name: 'collision-bodies', kind: 'positive', value: 'N', description: "collision's bodies at the start (replaces --size's)" },
  { name: 'wa-tor-size', kind: 'path', value: 'WxH', description: "wa-tor's torus, e.g. 256x256 (replaces --size's)" },
  { name: 'game-of-life-size', kind: 'path', value: 'WxH', description: "game-of-life's grid, e.g. 256x256 (replaces --size's)" },
  { name: 'generation-size', kind: 'path', value: 'WxH', description: "generation's grid, e.g. 256x256 (replaces --size's)" },
  { name: 'traffic-intersections', kind: 'positive', value: 'N', description: "traffic's intersections (replaces --size's)" },
  {
    name: 'linux-scalability-lanes',
    kind: 'positive',
    value: 'N',
    description: `linux-scalability's lanes, 1 … ${MAX_LANES} (replaces --size's; k stays 64)`,
    max: MAX_LANES,
  },
  { name: 'structure-nodes', kind: 'positive', value: 'N', description: "structure's nodes, the original's kMaxNodes (replaces --size's)" },
  { name: 'sugarscape-size', kind: 'path', value: 'WxH', description: "sugarscape's grid, e.g. 256x256 (replaces --size's)" },
  { name: 'barnes-hut-bodies', kind: 'positive', value: 'N', description: "barnes-hut's bodies (replaces --size's)" },
  { name: 'iterations', kind: 'positive', value: 'K', description: 'timed iterations of every app', defaultText: "the size's, per app" },
  { name: 'warmup', kind: 'count', value: 'W', description: 'untimed iterations before the timed ones', defaultText: '2' },
  { name: 'repeat', kind: 'positive', value: 'R', description: 'repeats of every case, each a fresh process', defaultText: '3' },
  { name: 'seed', kind: 'u32', value: 'S', description: 'seed of the initial states', defaultText: '42' },
  {
    name: 'reorder',
    kind: 'positive',
    value: 'K',
    description:
      'also run every smmo case of an app that can (wa-tor, game-of-life) with its agents reordered by cell after every K-th iteration (smmo run --reorder), the reorder timed with its iteration',
  },
  { name: 'timeout', kind: 'positive', value: 'SEC', description: 'limit of one case (one process)', defaultText: '600' },
  { name: 'out', kind: 'path', value: 'FILE', description: 'JSON report', defaultText: 'bench-results/apps.json' },
  { name: 'plot', kind: 'path', value: 'FILE', description: 'SVG bar chart', defaultText: 'bench-results/apps.svg' },
  { name: 'json', kind: 'switch', description: 'print the JSON report on stdout instead of the table' },
  { name: 'quiet', kind: 'switch', description: 'no progress lines on stderr' },
];

export function benchHelp(): string {
  return `Usage: smmo bench [flags]

Time every app with smmo (each backend × thread count) and with its baselines
without dynamic allocation (AOS: plain JS objects; SOA: typed arrays), at the same
parameters and seed. Every case runs in a fresh process: init, W warm-up iterations,
K timed iterations; R repeats, interleaved. Prints a table of ms per iteration
(median over the repeats, min … max, the median single iteration, CPU ms, ratio to
the SOA baseline, whether the digest agrees), writes the JSON report and an SVG chart.

Flags:
${formatFlags(BENCH_FLAGS, [['-h, --help', 'show this help']])}

Example:
  smmo bench --apps wa-tor,game-of-life --threads 1,2 --repeat 5
  smmo bench --apps nbody --backends ts,wasm --nbody-bodies 4000 --iterations 5

Exit status: 0 done; 1 a case failed; 2 bad command line.`;
}

export interface BenchOptions {
  plan: BenchPlan;
  out: string;
  plot: string;
  json: boolean;
  quiet: boolean;
  help: boolean;
}

function list<T extends string>(flag: string, raw: string, allowed: readonly T[], none = false): T[] {
  const items = raw.split(',').map((s) => s.trim());
  if (none && items.length === 1 && items[0] === 'none') return [];
  const out: T[] = [];
  for (const item of items) {
    if (!allowed.includes(item as T)) {
      const guess = closest(item, allowed);
      throw new CliUsageError(
        `${WHERE}: --${flag}: unknown '${item}'${guess ? ` (did you mean '${guess}'?)` : ''}; give a comma-separated list of ${allowed.join(', ')}${none ? ", or 'none'" : ''}`,
      );
    }
    if (!out.includes(item as T)) out.push(item as T);
  }
  return out;
}

function gridSize(flag: string, raw: string): AppParams {
  const m = /^(\d+)[x×](\d+)$/.exec(raw.trim());
  const w = m ? Number(m[1]) : NaN;
  const h = m ? Number(m[2]) : NaN;
  if (!(w >= 1 && h >= 1 && w * h <= 1 << 27))
    throw new CliUsageError(`${WHERE}: --${flag} must be WIDTHxHEIGHT with at most 2^27 cells, got '${raw}' (e.g. --${flag} 256x256)`);
  return { width: w, height: h };
}

/** Parse the flags after `smmo bench`. */
export function parseBenchFlags(args: readonly string[]): BenchOptions {
  const options: Record<string, { type: 'string' | 'boolean'; short?: string }> = { help: { type: 'boolean', short: 'h' } };
  for (const s of BENCH_FLAGS) options[s.name] = { type: s.kind === 'switch' ? 'boolean' : 'string' };
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseArgs({ args: [...args], options, strict: true, allowPositionals: false }).values as typeof values;
  } catch (e) {
    const message = (e as Error).message ?? String(e);
    const quoted = /'([^']*)'/.exec(message)?.[1] ?? '';
    const code = (e as { code?: string }).code;
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
      const guess = closest(quoted.replace(/^-+/, '').split('=')[0]!, [...BENCH_FLAGS.map((s) => s.name), 'help']);
      throw new CliUsageError(`${WHERE}: unknown flag ${quoted}${guess ? ` (did you mean --${guess}?)` : ''}; see 'smmo bench --help'`);
    }
    if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
      const name = quoted.replace(/^-+/, '').split(' ')[0]!;
      const s = BENCH_FLAGS.find((x) => x.name === name);
      throw new CliUsageError(
        s?.kind === 'switch' || name === 'help'
          ? `${WHERE}: --${name} takes no value`
          : `${WHERE}: --${name} needs a value: --${name} ${s?.value ?? 'VALUE'}`,
      );
    }
    if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL')
      throw new CliUsageError(`${WHERE}: unexpected argument '${quoted}' (flags are written --name value); see 'smmo bench --help'`);
    throw e;
  }
  const text = (name: string): string | undefined => values[name] as string | undefined;
  const num = (name: string, fallback: number): number => {
    const raw = text(name);
    return raw === undefined
      ? fallback
      : (validate(
          BENCH_FLAGS.find((s) => s.name === name)!,
          raw,
          WHERE,
        ) as number);
  };
  const plan: BenchPlan = {
    apps: text('apps') === undefined ? appNames() : list('apps', text('apps')!, appNames()),
    backends: text('backends') === undefined ? ['ts', 'wasm'] : list('backends', text('backends')!, BACKENDS),
    threads: defaultThreads(),
    baselines: text('baselines') === undefined ? ['aos', 'soa'] : list('baselines', text('baselines')!, LAYOUTS, true),
    size: (text('size') === undefined
      ? 'small'
      : validate(
          BENCH_FLAGS.find((s) => s.name === 'size')!,
          text('size')!,
          WHERE,
        )) as SizeName,
    params: {},
    iterations: text('iterations') === undefined ? undefined : num('iterations', 0),
    warmup: num('warmup', 2),
    repeat: num('repeat', 3),
    seed: num('seed', 42),
    timeoutMs: num('timeout', 600) * 1000,
    ...(text('reorder') !== undefined ? { reorder: num('reorder', 0) } : {}),
  };
  if (text('threads') !== undefined) {
    const raw = text('threads')!;
    const items = raw.split(',').map((s) => s.trim());
    const spec: FlagSpec = { name: 'threads', kind: 'positive', value: 'LIST', description: '' };
    const bad = items.find((s) => !/^\d+$/.test(s) || Number(s) < 1 || Number(s) > 1024);
    if (bad !== undefined)
      throw new CliUsageError(
        `${WHERE}: --threads must be a comma-separated list of thread counts 1 … 1024, got '${raw}' (e.g. --threads 1,2)`,
      );
    plan.threads = [...new Set(items.map((s) => validate(spec, s, WHERE) as number))];
  }
  if (text('nbody-bodies') !== undefined) plan.params['nbody'] = { bodies: num('nbody-bodies', 0) };
  if (text('collision-bodies') !== undefined) plan.params['collision'] = { bodies: num('collision-bodies', 0) };
  if (text('wa-tor-size') !== undefined) plan.params['wa-tor'] = gridSize('wa-tor-size', text('wa-tor-size')!);
  if (text('game-of-life-size') !== undefined) plan.params['game-of-life'] = gridSize('game-of-life-size', text('game-of-life-size')!);
  if (text('generation-size') !== undefined) plan.params['generation'] = gridSize('generation-size', text('generation-size')!);
  if (text('traffic-intersections') !== undefined) plan.params['traffic'] = { intersections: num('traffic-intersections', 0) };
  if (text('linux-scalability-lanes') !== undefined) plan.params['linux-scalability'] = { lanes: num('linux-scalability-lanes', 0), k: 64 };
  if (text('structure-nodes') !== undefined) plan.params['structure'] = { nodes: num('structure-nodes', 0) };
  if (text('sugarscape-size') !== undefined) plan.params['sugarscape'] = gridSize('sugarscape-size', text('sugarscape-size')!);
  if (text('barnes-hut-bodies') !== undefined) plan.params['barnes-hut'] = { bodies: num('barnes-hut-bodies', 0) };
  if (plan.apps.length === 0) throw new CliUsageError(`${WHERE}: --apps is empty; name at least one of ${appNames().join(', ')}`);
  if (plan.backends.length === 0 && plan.baselines.length === 0)
    throw new CliUsageError(`${WHERE}: nothing to run: --backends and --baselines are both empty`);
  const out = text('out') ?? 'bench-results/apps.json';
  const plot = text('plot') ?? 'bench-results/apps.svg';
  for (const [flag, v] of [
    ['out', out],
    ['plot', plot],
  ] as const)
    if (v === '') throw new CliUsageError(`${WHERE}: --${flag} must be a file path`);
  return { plan, out, plot, json: values['json'] === true, quiet: values['quiet'] === true, help: values['help'] === true };
}

/** `smmo bench …`: returns the text to print on stdout. */
export async function bench(args: readonly string[]): Promise<string> {
  const opts = parseBenchFlags(args);
  if (opts.help) return benchHelp();
  const report = await runBench(opts.plan, (line) => {
    if (!opts.quiet) process.stderr.write(`${line}\n`);
  });
  mkdirSync(dirname(opts.out), { recursive: true });
  writeFileSync(opts.out, JSON.stringify(report, null, 1) + '\n');
  mkdirSync(dirname(opts.plot), { recursive: true });
  writeFileSync(opts.plot, plotReport(report));
  if (opts.json) return JSON.stringify(report);
  return `${formatTable(report)}\nwrote ${opts.out} and ${opts.plot}`;
}
