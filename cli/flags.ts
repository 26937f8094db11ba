/**
 * Flags of `smmo run`: one table of definitions that both the parser and the help
 * text are generated from, so `--help` (and the README's CLI reference, which a test
 * compares with `--help`) cannot drift from what the parser accepts.
 *
 * Parsing is util.parseArgs in strict mode (unknown flags, missing values and stray
 * arguments are errors); every value then goes through this module's own validation,
 * which says what was wrong and what a good value looks like. Every failure is a
 * CliUsageError (exit code 2).
 */
import { parseArgs } from 'node:util';
import type { App, AppFlag, AppParams } from '../apps/app.js';
import { DEFAULT_CHECK_TOLERANCE, type CheckTolerance, type Tolerance } from '../runtime/compare.js';
import { MAX_THREADS, parseSize, SmmoError } from '../runtime/index.js';
import { editDistance } from '../runtime/suggest.js';
import { CliUsageError } from './errors.js';

// ------------------------------------------------------------------ definitions

export const BACKENDS = ['ts', 'wasm', 'webgpu'] as const;
export type Backend = (typeof BACKENDS)[number];

/** What kind of value a flag takes; 'switch' takes none; 'tolerance': a finite number ≥ 0. */
export type FlagKind = 'count' | 'positive' | 'u32' | 'float' | 'tolerance' | 'path' | 'size' | 'choice' | 'switch';

export interface FlagSpec {
  name: string;
  kind: FlagKind;
  /** Placeholder shown in help, e.g. 'K' in `--iterations K`. */
  value?: string;
  description: string;
  /** Shown as "(default …)" in help; the parser applies defaults separately. */
  defaultText?: string;
  choices?: readonly string[];
  /** Largest value of a numeric flag (default 4294967295). */
  max?: number;
  /** A good value, shown in messages about a bad one (default: one within the flag's range). */
  example?: string;
}

/**
 * --tol, --rel, --field-rel: the comparator's tolerance (runtime/compare.ts states the
 * rules), shared by `smmo run --check` and `smmo compare` (cli/compare.ts).
 */
export function toleranceFlags(prefix: string, defaults: Tolerance): FlagSpec[] {
  return [
    {
      name: 'tol',
      kind: 'tolerance',
      value: 'X',
      description: `${prefix}absolute tolerance, |Δ| ≤ X`,
      defaultText: String(defaults.abs),
    },
    {
      name: 'rel',
      kind: 'tolerance',
      value: 'R',
      description: `${prefix}relative tolerance, |Δ| ≤ R · max(|a|, |b|)`,
      defaultText: String(defaults.rel),
    },
    {
      name: 'field-rel',
      kind: 'tolerance',
      value: 'F',
      description: `${prefix}tolerance relative to the field, |Δ| ≤ F · the field's largest finite |value| on either side`,
      defaultText: String(defaults.fieldRel),
    },
  ];
}

/** The flags every app accepts (issue 6, "CLI contract"). */
export const COMMON_FLAGS: readonly FlagSpec[] = [
  { name: 'iterations', kind: 'count', value: 'K', description: 'iterations to run', defaultText: "the app's" },
  { name: 'seed', kind: 'u32', value: 'S', description: 'seed of the random initial state, 0 … 4294967295', defaultText: '42' },
  {
    name: 'threads',
    kind: 'positive',
    value: 'N',
    description: `threads that run the do-alls, 1 … ${MAX_THREADS}`,
    defaultText: '1',
    max: MAX_THREADS,
  },
  { name: 'backend', kind: 'choice', value: 'B', description: 'kernels to run: ts | wasm | webgpu', defaultText: 'ts', choices: BACKENDS },
  {
    name: 'heap',
    kind: 'size',
    value: 'SIZE',
    description: 'heap size in bytes or with a unit: 64MB, 512MiB, 1GiB',
    defaultText: 'sized for the app',
  },
  { name: 'checked', kind: 'switch', description: 'checked mode: validate handles on every access; validate the heap at the end' },
  { name: 'interpret', kind: 'switch', description: 'run the do-all methods interpreted, not compiled (README: Compiled methods)' },
  {
    name: 'pass-timeout',
    kind: 'positive',
    value: 'MS',
    description: 'stop a pass (one do-all over one class) that runs longer than MS milliseconds: PassTimeoutError, exit 1',
    defaultText: 'no limit',
    max: 2 ** 31 - 1,
  },
  {
    name: 'no-rotation',
    kind: 'switch',
    description: "allocator variant NoShift: bitmap and slot searches start at bit 0 (no bitmap rotation, the paper's §4.2)",
  },
  {
    name: 'no-coalescing',
    kind: 'switch',
    description: 'allocator variant NoCoal: every create reserves one slot (no per-warp request coalescing in do-alls and parallelNew)',
  },
  {
    name: 'bitmap-alloc',
    kind: 'switch',
    description:
      "allocator variant BitmapAlloc, the paper's baseline: one object per block, blocks the size of the largest class (needs --backend ts; the default heap grows to match)",
  },
  {
    name: 'own-first-block',
    kind: 'switch',
    description:
      'allocator: each thread opens a block of its own first in every pass (faster allocation-only passes on many threads; more fragmentation where objects are also deleted)',
  },
  {
    name: 'no-gpu-validation',
    kind: 'switch',
    description:
      "with --backend webgpu: open the GPU device without Dawn's API validation (far less CPU time per dispatch; an API misuse is then not reported and may crash; docs/webgpu.md)",
  },
  {
    name: 'gpu-kernels',
    kind: 'choice',
    value: 'K',
    description:
      'with --backend webgpu: auto (hand-written WGSL kernels where declared, else WGSL generated from the compiled method) | generated (generated wherever the method allows, hand-written ones only where it does not: to compare them) | declared (hand-written only; the rest in TypeScript)',
    defaultText: 'auto',
    choices: ['auto', 'generated', 'declared'],
  },
  {
    name: 'gpu-floats',
    kind: 'choice',
    value: 'F',
    description:
      "with --backend webgpu: how generated WGSL kernels compute numbers that are not integers: double-single (pairs of f32, about 48 bits: JavaScript's results to their last bits nearly always) | f32 (faster where arithmetic bounds a kernel; within the app's tolerance)",
    defaultText: 'double-single',
    choices: ['double-single', 'f32'],
  },
  {
    name: 'block-size',
    kind: 'choice',
    value: 'P',
    description:
      "which class a block is sized for: smallest (the paper's: the smallest class fills 32 slots) | largest (every class gets 32 slots, a full warp per block; more memory, the default heap grows to match)",
    defaultText: 'smallest',
    choices: ['smallest', 'largest'],
  },
  {
    name: 'check',
    kind: 'switch',
    description:
      "also run the TypeScript reference (one thread) from the same initial state and compare every field by the rules of 'smmo compare' (largest difference, objects beyond the tolerance, the worst object) and the digest; exit 1 beyond the tolerance",
  },
  ...toleranceFlags('with --check or --check-every: ', DEFAULT_CHECK_TOLERANCE),
  {
    name: 'digest-rel',
    kind: 'tolerance',
    value: 'R',
    description: "with --check or --check-every: the app digest's tolerance, |Δ| ≤ R · max(|digest|, 1)",
    defaultText: String(DEFAULT_CHECK_TOLERANCE.digestRel),
  },
  {
    name: 'check-every',
    kind: 'positive',
    value: 'K',
    description:
      'divergence finder: run the TypeScript reference (one thread) in lockstep, compare after every K iterations (the tolerance of --check), replay the first window that differs pass by pass and report the first pass, class, field and object that differ; writes both states there (--check-states); exit 1 on a difference. With --backend ts it compares --threads N (N > 1) against one thread',
    example: '10',
  },
  {
    name: 'check-states',
    kind: 'path',
    value: 'DIR',
    description: "with --check-every: where the two states at the divergence go, DIR/reference and DIR/run (for 'smmo compare')",
    defaultText: 'smmo-divergence-<app>',
  },
  {
    name: 'reorder',
    kind: 'positive',
    value: 'K',
    description:
      "after every K-th iteration, put the app's agents into the order of their cells (rt.reorder, README: Reordering): a pass over them then reads the cells in memory order; the same results",
    max: 1000000,
    example: '5',
  },
  {
    name: 'defrag',
    kind: 'positive',
    value: 'N',
    description:
      'defragment between iterations (CompactGpu, README: Defragmentation) with factor N: blocks at most N/(N+1) full are merged; after every iteration unless --defrag-every or --defrag-above says when; with --threads > 1 its copy and rewrite phases run on the worker threads too',
    max: 1024,
    example: '2',
  },
  { name: 'defrag-every', kind: 'positive', value: 'K', description: 'with --defrag: defragment after every K-th iteration' },
  {
    name: 'defrag-lanes',
    kind: 'choice',
    value: 'L',
    description:
      'with --defrag and --backend wasm: the lanes that rewrite references, ts | wasm (WebAssembly lanes; faster on some apps, slower where most objects move: docs/benchmarks.md)',
    defaultText: 'ts',
    choices: ['ts', 'wasm'],
  },
  {
    name: 'defrag-above',
    kind: 'float',
    value: 'F',
    description:
      "with --defrag: defragment after an iteration that leaves the fragmentation of the app's movable classes (free slots / slots of their blocks) above F, 0 < F < 1",
  },
  { name: 'json', kind: 'switch', description: 'print the summary as one JSON object, the last line of stdout' },
  { name: 'quiet', kind: 'switch', description: 'no progress bar and no human summary' },
  {
    name: 'dump',
    kind: 'path',
    value: 'DIR',
    description:
      'after the run, write every object as Apache Arrow IPC files DIR/<Class>.arrow, one column per field (README: State files)',
  },
  {
    name: 'init',
    kind: 'path',
    value: 'DIR',
    description: "start from a state written by --dump instead of the app's init; its parameters and seed are the file's",
  },
  {
    name: 'render',
    kind: 'path',
    value: 'FILE',
    description:
      'wa-tor, game-of-life, generation, traffic, structure, sugarscape, barnes-hut: write the final state as a PNG picture (grids: a pixel per cell; traffic: the street map; structure: the mesh; barnes-hut: bodies and tree boxes)',
  },
  {
    name: 'render-every',
    kind: 'positive',
    value: 'K',
    description: 'with --render: a frame every K iterations and the last, FILE-0000.png, FILE-0010.png, … (the number: iterations done)',
  },
  {
    name: 'render-scale',
    kind: 'positive',
    value: 'S',
    description: 'with --render: S × S pixels per cell, 1 … 64',
    defaultText: 'about 512 pixels on the longer side',
    max: 64,
    example: '4',
  },
];

export const DEFAULT_SEED = 42;

/** The flag table of an app's own flags (apps/app.ts AppFlag → FlagSpec). */
export function appFlagSpecs(app: App): FlagSpec[] {
  return app.flags.map((f: AppFlag): FlagSpec => {
    const spec: FlagSpec = {
      name: f.name,
      kind: f.type === 'int' ? 'positive' : f.type,
      description: f.description,
    };
    if (f.type !== 'switch') spec.value = f.type === 'int' ? 'N' : f.type === 'float' ? 'X' : 'FILE';
    if (f.max !== undefined) spec.max = f.max;
    if (f.default !== undefined && f.type !== 'switch') spec.defaultText = String(f.default);
    return spec;
  });
}

// ------------------------------------------------------------------ parsing

export interface RunOptions {
  iterations: number;
  seed: number;
  threads: number;
  backend: Backend;
  /** Heap bytes from --heap; undefined: ask the app (heapFor). */
  heapBytes: number | undefined;
  checked: boolean;
  /** --interpret: compile: false. */
  interpret: boolean;
  /** --pass-timeout MS (undefined: no limit). */
  passTimeout?: number;
  /** --no-rotation, --no-coalescing, --bitmap-alloc, --own-first-block: the allocator variant (RuntimeOptions.allocator). */
  allocator: { rotation: boolean; coalescing: boolean; bitmapAlloc: boolean; ownFirstBlock: boolean };
  /** --no-gpu-validation: RuntimeOptions.webgpu.validation false (with --backend webgpu only). */
  gpuValidation: boolean;
  /** --gpu-kernels: RuntimeOptions.webgpu.generate (auto: true, generated: 'always', declared: false). */
  gpuKernels: 'auto' | 'generated' | 'declared';
  /** --gpu-floats: RuntimeOptions.webgpu.floats. */
  gpuFloats: 'double-single' | 'f32';
  /** --block-size: which class the heap's blocks are sized for (RuntimeOptions.blockSize). */
  blockSize: 'smallest' | 'largest';
  /** --check: compare with the TypeScript reference run. */
  check: boolean;
  /** --tol, --rel, --field-rel, --digest-rel (defaults: DEFAULT_CHECK_TOLERANCE); used with --check. */
  tolerance: CheckTolerance;
  json: boolean;
  quiet: boolean;
  help: boolean;
  /** The app's own flags, defaults applied. */
  params: AppParams;
  /** --check-every K: the divergence finder (cli/check-every.ts). */
  checkEvery?: number;
  /** --check-states DIR: where --check-every writes the two states at a divergence. */
  checkStates?: string;
  /** --dump DIR: write the final state there. */
  dump?: string;
  /** --init DIR: start from this state instead of the app's init. */
  init?: string;
  /** --render FILE, --render-every K, --render-scale S (undefined: auto). */
  render?: { path: string; every?: number; scale?: number };
  /** App flags and --seed given on the command line (with --init they must agree with the state). */
  given?: readonly string[];
  /** --defrag N [--defrag-every K | --defrag-above F] (cli/defrag.ts). */
  defrag?: DefragOptions;
  /** --reorder K: reorder the app's agents after every K-th iteration (cli/reorder.ts). */
  reorder?: number;
}

/** When `smmo run` defragments: factor n, after every `every`-th iteration, or when fragmentation is above `above`. */
export interface DefragOptions {
  n: number;
  every?: number;
  above?: number;
  /** --defrag-lanes: which lanes rewrite references (RuntimeOptions.wasm.defragLanes). */
  lanes?: 'ts' | 'wasm';
}

/**
 * Parse the flags after `smmo run <app>`. `where` names the command in messages
 * (e.g. "smmo run nbody").
 */
export function parseRunFlags(app: App, args: readonly string[]): RunOptions {
  const where = `smmo run ${app.name}`;
  const own = appFlagSpecs(app);
  const clash = own.find((f) => COMMON_FLAGS.some((c) => c.name === f.name) || f.name === 'help');
  if (clash) throw new Error(`app ${app.name} declares flag --${clash.name}, which is a common flag of smmo run; rename it`);
  const specs = [...COMMON_FLAGS, ...own];

  const options: Record<string, { type: 'string' | 'boolean'; short?: string }> = { help: { type: 'boolean', short: 'h' } };
  for (const s of specs) options[s.name] = { type: s.kind === 'switch' ? 'boolean' : 'string' };

  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseArgs({ args: [...args], options, strict: true, allowPositionals: false }).values as typeof values;
  } catch (e) {
    throw parseError(e, args, specs, where);
  }

  // --help wins over everything else on the line, even over bad values.
  if (values['help'] === true) return { ...defaults(app), help: true };

  const text = (name: string): string | undefined => values[name] as string | undefined;
  const params: AppParams = {};
  for (const f of app.flags) {
    const raw = text(f.name);
    if (f.type === 'switch') {
      params[f.name] = values[f.name] === true ? 1 : 0;
      continue;
    }
    params[f.name] =
      raw === undefined
        ? f.default
        : validate(
            own.find((s) => s.name === f.name)!,
            raw,
            where,
          );
  }
  const iterations = text('iterations');
  const seed = text('seed');
  const threads = text('threads');
  const heap = text('heap');
  const passTimeout = text('pass-timeout');
  const checkEvery = text('check-every');
  const checkStates = text('check-states');
  if (checkStates !== undefined && checkEvery === undefined)
    throw new CliUsageError(
      `${where}: --check-states is where --check-every writes its states; add --check-every K (e.g. --check-every 10)`,
    );
  const extra = stateAndRenderFlags(
    app,
    values,
    where,
    [...app.flags.map((f) => f.name), 'seed'].filter((n) => values[n] !== undefined),
  );
  return {
    ...extra,
    iterations: iterations === undefined ? app.iterations : (validate(spec('iterations'), iterations, where) as number),
    seed: seed === undefined ? DEFAULT_SEED : (validate(spec('seed'), seed, where) as number),
    threads: threads === undefined ? 1 : (validate(spec('threads'), threads, where) as number),
    backend: (values['backend'] === undefined ? 'ts' : validate(spec('backend'), text('backend')!, where)) as Backend,
    heapBytes: heap === undefined ? undefined : (validate(spec('heap'), heap, where) as number),
    checked: values['checked'] === true,
    interpret: values['interpret'] === true,
    ...(passTimeout === undefined ? {} : { passTimeout: validate(spec('pass-timeout'), passTimeout, where) as number }),
    ...(checkEvery === undefined ? {} : { checkEvery: validate(spec('check-every'), checkEvery, where) as number }),
    ...(checkStates === undefined ? {} : { checkStates: validate(spec('check-states'), checkStates, where) as string }),
    allocator: allocatorFlags(values, where),
    gpuValidation: gpuValidation(values, where),
    gpuKernels: gpuKernels(values, where),
    gpuFloats: gpuFloats(values, where),
    blockSize: (values['block-size'] === undefined ? 'smallest' : validate(spec('block-size'), text('block-size')!, where)) as
      'smallest' | 'largest',
    check: values['check'] === true,
    tolerance: checkTolerance(values, where),
    ...defragFlags(values, where),
    ...(values['reorder'] !== undefined ? { reorder: validate(spec('reorder'), values['reorder'] as string, where) as number } : {}),
    json: values['json'] === true,
    quiet: values['quiet'] === true,
    help: false,
    params,
  };
}

/** --defrag N, --defrag-every K, --defrag-above F: the last two only with --defrag, and not together. */
function defragFlags(values: Record<string, string | boolean | undefined>, where: string): Pick<RunOptions, 'defrag'> {
  const raw = (name: string): string | undefined => values[name] as string | undefined;
  const n = raw('defrag');
  const every = raw('defrag-every');
  const above = raw('defrag-above');
  const lanes = raw('defrag-lanes');
  if (n === undefined) {
    const orphan = every !== undefined ? `--defrag-every ${every}` : above !== undefined ? `--defrag-above ${above}` : null;
    if (orphan) throw new CliUsageError(`${where}: ${orphan} says when to defragment; add --defrag N (e.g. --defrag 2 ${orphan})`);
    if (lanes !== undefined)
      throw new CliUsageError(
        `${where}: --defrag-lanes ${lanes} says how to defragment; add --defrag N (e.g. --defrag 2 --defrag-lanes ${lanes})`,
      );
    return {};
  }
  const out: DefragOptions = { n: validate(spec('defrag'), n, where) as number };
  if (every !== undefined && above !== undefined) {
    throw new CliUsageError(`${where}: give --defrag-every K or --defrag-above F, not both`);
  }
  if (every !== undefined) out.every = validate(spec('defrag-every'), every, where) as number;
  if (lanes !== undefined) {
    out.lanes = validate(spec('defrag-lanes'), lanes, where) as 'ts' | 'wasm';
    if (out.lanes === 'wasm' && values['backend'] !== 'wasm')
      throw new CliUsageError(
        `${where}: --defrag-lanes wasm runs the rewrite on the WebAssembly lanes of --backend wasm; add --backend wasm`,
      );
  }
  if (above !== undefined) {
    const f = validate(spec('defrag-above'), above, where) as number;
    if (!(f > 0 && f < 1))
      throw new CliUsageError(
        `${where}: --defrag-above must be a fraction between 0 and 1 (exclusive), got '${above}' (e.g. --defrag-above 0.3)`,
      );
    out.above = f;
  }
  return { defrag: out };
}

/** --no-gpu-validation: only with --backend webgpu. */
function gpuValidation(values: Record<string, string | boolean | undefined>, where: string): boolean {
  if (values['no-gpu-validation'] !== true) return true;
  if (values['backend'] !== 'webgpu')
    throw new CliUsageError(`${where}: --no-gpu-validation concerns the GPU device of --backend webgpu; add --backend webgpu or drop it`);
  return false;
}

/** --gpu-kernels: auto | generated | declared, only with --backend webgpu. */
function gpuKernels(values: Record<string, string | boolean | undefined>, where: string): RunOptions['gpuKernels'] {
  return webgpuChoice(values, where, 'gpu-kernels', 'auto', 'chooses the WGSL kernels of --backend webgpu');
}

/** --gpu-floats: double-single | f32, only with --backend webgpu. */
function gpuFloats(values: Record<string, string | boolean | undefined>, where: string): RunOptions['gpuFloats'] {
  return webgpuChoice(values, where, 'gpu-floats', 'double-single', "chooses the arithmetic of --backend webgpu's generated kernels");
}

/** A choice flag of --backend webgpu: `fallback` when absent, else a declared choice (validate()), given with --backend webgpu only. */
function webgpuChoice<T extends string>(
  values: Record<string, string | boolean | undefined>,
  where: string,
  name: string,
  fallback: T,
  what: string,
): T {
  const raw = values[name];
  if (raw === undefined) return fallback;
  const v = validate(spec(name), String(raw), where) as T;
  if (values['backend'] !== 'webgpu') throw new CliUsageError(`${where}: --${name} ${what}; add --backend webgpu or drop it`);
  return v;
}

/** --tol, --rel, --field-rel, --digest-rel: only with --check. */
function checkTolerance(values: Record<string, string | boolean | undefined>, where: string): CheckTolerance {
  const t: CheckTolerance = { ...DEFAULT_CHECK_TOLERANCE };
  const names = { tol: 'abs', rel: 'rel', 'field-rel': 'fieldRel', 'digest-rel': 'digestRel' } as const;
  for (const [flag, key] of Object.entries(names)) {
    const raw = values[flag] as string | undefined;
    if (raw === undefined) continue;
    const n = validate(spec(flag), raw, where) as number;
    if (values['check'] !== true && values['check-every'] === undefined)
      throw new CliUsageError(
        `${where}: --${flag} is a tolerance of --check; add --check (e.g. --check --${flag} ${raw}) or --check-every K`,
      );
    t[key] = n;
  }
  return t;
}

/** --no-rotation, --no-coalescing, --bitmap-alloc, --own-first-block, and the combinations they refuse. */
function allocatorFlags(values: Record<string, string | boolean | undefined>, where: string): RunOptions['allocator'] {
  const bitmapAlloc = values['bitmap-alloc'] === true;
  if (bitmapAlloc && values['no-coalescing'] === true) {
    throw new CliUsageError(`${where}: --bitmap-alloc never coalesces (one object per block); drop --no-coalescing`);
  }
  if (bitmapAlloc && values['backend'] !== undefined && values['backend'] !== 'ts') {
    throw new CliUsageError(`${where}: --bitmap-alloc has no SOA arrays for the ${String(values['backend'])} kernels; use --backend ts`);
  }
  if (bitmapAlloc && values['block-size'] === 'largest') {
    throw new CliUsageError(`${where}: --bitmap-alloc blocks hold one object of the largest class already; drop --block-size largest`);
  }
  if (bitmapAlloc && values['own-first-block'] === true) {
    throw new CliUsageError(`${where}: --bitmap-alloc takes every object's block from the free blocks already; drop --own-first-block`);
  }
  return {
    rotation: values['no-rotation'] !== true,
    coalescing: !bitmapAlloc && values['no-coalescing'] !== true,
    bitmapAlloc,
    ownFirstBlock: values['own-first-block'] === true,
  };
}

/** --dump, --init, --render*: values and the rules that tie them together. */
function stateAndRenderFlags(
  app: App,
  values: Record<string, string | boolean | undefined>,
  where: string,
  given: string[],
): Pick<RunOptions, 'dump' | 'init' | 'render' | 'given'> {
  const out: Pick<RunOptions, 'dump' | 'init' | 'render' | 'given'> = { given };
  const get = (name: string): string | number | undefined => {
    const raw = values[name] as string | undefined;
    return raw === undefined ? undefined : validate(spec(name), raw, where);
  };
  const dump = get('dump');
  const init = get('init');
  if (dump !== undefined) out.dump = String(dump);
  if (init !== undefined) out.init = String(init);
  const render = get('render');
  const every = get('render-every') as number | undefined;
  const scale = get('render-scale') as number | undefined;
  if (render === undefined) {
    const orphan = every !== undefined ? '--render-every' : scale !== undefined ? '--render-scale' : null;
    if (orphan) throw new CliUsageError(`${where}: ${orphan} needs --render FILE (e.g. --render out.png ${orphan} 10)`);
    return out;
  }
  if (app.picture === undefined) {
    throw new CliUsageError(
      `${where}: --render: this app has no picture; pictures are drawn by the grid apps (wa-tor, game-of-life, generation, sugarscape), traffic, structure and barnes-hut`,
    );
  }
  out.render = { path: String(render), ...(every !== undefined ? { every } : {}), ...(scale !== undefined ? { scale } : {}) };
  return out;
}

/** The options of a plain `smmo run <app>`. */
function defaults(app: App): RunOptions {
  const params: AppParams = {};
  for (const f of app.flags) params[f.name] = f.type === 'switch' ? 0 : f.default;
  return {
    iterations: app.iterations,
    seed: DEFAULT_SEED,
    threads: 1,
    backend: 'ts',
    heapBytes: undefined,
    checked: false,
    interpret: false,
    allocator: { rotation: true, coalescing: true, bitmapAlloc: false, ownFirstBlock: false },
    gpuValidation: true,
    gpuKernels: 'auto',
    gpuFloats: 'double-single',
    blockSize: 'smallest',
    check: false,
    tolerance: { ...DEFAULT_CHECK_TOLERANCE },
    json: false,
    quiet: false,
    help: false,
    params,
  };
}

function spec(name: string): FlagSpec {
  return COMMON_FLAGS.find((s) => s.name === name)!;
}

/** Check one flag value; returns it converted (number for numeric kinds). */
export function validate(s: FlagSpec, raw: string, where: string): number | string {
  const bad = (wanted: string, example: string): CliUsageError =>
    new CliUsageError(`${where}: --${s.name} must be ${wanted}, got '${raw}' (e.g. --${s.name} ${example})`);
  switch (s.kind) {
    case 'count':
    case 'positive':
    case 'u32': {
      // Digits only: '1e3', '0x10', '2.0' and '' are rejected rather than guessed at.
      const n = /^\d+$/.test(raw) ? Number(raw) : NaN;
      const min = s.kind === 'positive' ? 1 : 0;
      const max = s.max ?? 0xffffffff;
      if (!(n >= min && n <= max)) {
        throw bad(`an integer in ${min} … ${max}`, s.example ?? (s.kind === 'u32' ? '7' : String(Math.min(100, max))));
      }
      return n;
    }
    case 'float': {
      const n = raw.trim() === '' ? NaN : Number(raw);
      if (!Number.isFinite(n)) throw bad('a finite number', '0.5');
      return n;
    }
    case 'tolerance': {
      const n = raw.trim() === '' ? NaN : Number(raw);
      if (!(n >= 0) || !Number.isFinite(n)) throw bad('a number ≥ 0', s.example ?? '1e-5');
      return n;
    }
    case 'path':
      if (raw === '') throw bad('a file path', 'data/input.pgm');
      return raw;
    case 'size': {
      let n: number;
      try {
        n = parseSize(raw);
      } catch (e) {
        if (e instanceof SmmoError) throw bad('a size in bytes or with a unit', '64MB');
        throw e;
      }
      if (!(n > 0)) throw bad('a positive size', '64MB');
      return n;
    }
    case 'choice':
      if (!s.choices!.includes(raw)) throw bad(`one of ${s.choices!.join(', ')}`, s.choices![0]!);
      return raw;
    case 'switch':
      return raw;
  }
}

/** Turn a util.parseArgs error into one line that says what was wrong and what to do. */
function parseError(e: unknown, args: readonly string[], specs: readonly FlagSpec[], where: string): Error {
  const code = (e as { code?: string }).code;
  const message = (e as Error).message ?? String(e);
  const quoted = /'([^']*)'/.exec(message)?.[1] ?? '';
  const help = `see '${where} --help'`;
  switch (code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION': {
      const guess = closest(quoted.replace(/^-+/, '').split('=')[0]!, [...specs.map((s) => s.name), 'help']);
      return new CliUsageError(
        `${where}: unknown flag ${quoted}${guess ? ` (did you mean --${guess}?)` : ''}; ${help} for the flags it accepts`,
      );
    }
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE': {
      const name = quoted.replace(/^-+/, '').split(' ')[0]!;
      const s = specs.find((x) => x.name === name);
      if (s?.kind === 'switch' || name === 'help') return new CliUsageError(`${where}: --${name} takes no value; write just --${name}`);
      const at = args.indexOf(`--${name}`);
      const next = at >= 0 ? args[at + 1] : undefined;
      if (next !== undefined) {
        return new CliUsageError(
          `${where}: --${name} needs a value but is followed by '${next}'; write --${name} ${s?.value ?? 'VALUE'}` +
            (next.startsWith('-') && next.length > 1 && /^-\d/.test(next)
              ? ` (a value starting with '-' must be written --${name}=${next})`
              : ''),
        );
      }
      return new CliUsageError(`${where}: --${name} needs a value: --${name} ${s?.value ?? 'VALUE'}; ${help}`);
    }
    case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
      return new CliUsageError(`${where}: unexpected argument '${quoted}' (flags are written --name value); ${help}`);
    default:
      return e instanceof Error ? e : new Error(String(e));
  }
}

/** The candidate nearest to `word` by edit distance, if it is near enough to be a typo. */
export function closest(word: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestD = Infinity;
  for (const c of candidates) {
    const d = editDistance(word, c);
    if (d < bestD) {
      bestD = d;
      best = c;
    }
  }
  return best !== undefined && bestD <= Math.max(1, Math.floor(best.length / 3)) ? best : undefined;
}

// ------------------------------------------------------------------ help text

/** Two-column flag list: `  --name VALUE   description (default …)`. */
export function formatFlags(specs: readonly FlagSpec[], extra: readonly [string, string][] = []): string {
  const rows: [string, string][] = specs.map((s) => [
    `--${s.name}${s.value ? ` ${s.value}` : ''}`,
    s.description + (s.defaultText !== undefined ? ` (default: ${s.defaultText})` : ''),
  ]);
  rows.push(...extra);
  const width = Math.max(...rows.map((r) => r[0].length)) + 3;
  return rows.map(([l, r]) => `  ${l.padEnd(width)}${r}`).join('\n');
}
