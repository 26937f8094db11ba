/**
 * ECS comparison: smmo on the five suites of noctjs/ecs-benchmark (packed_5, simple_iter,
 * frag_iter, entity_cycle, add_remove), in one run beside the two fastest JavaScript
 * structure-of-arrays ECS libraries there, piecs 0.4.0 and bitecs 0.3.34.
 *
 *   npm run bench:ecs
 *   node dist/bench/ecs.js [--runs 3 | --paired 11] [--suites packed_5,…] [--impls smmo,smmo-interpreted,smmo-largest,piecs,bitecs]
 *        [--ms 500] [--machine "2-core dev VM"] [--out bench-results/ecs.json] [--profile DIR]
 *        [--child-timeout S]
 *
 * The suites (noctjs/ecs-benchmark README; counts from its benchmark script, src/bench):
 *   packed_5      1 000 entities with A … E; five systems, each doubles one component
 *   simple_iter   1 000 entities each of (A,B), (A,B,C), (A,B,C,D), (A,B,C,E); three
 *                 systems swap A↔B, C↔D, C↔E
 *   frag_iter     26 component types A … Z, 100 entities of each, all with Data too; two
 *                 systems double Data and Z
 *   entity_cycle  1 000 entities with A; create an entity with B for each, then destroy
 *                 every entity with B
 *   add_remove    1 000 entities with A; add B to each, then remove B from each
 * One op is one update of the world: every system of the suite once.
 *
 * smmo's model (bench/ecs/smmo/*.ts): an entity is an object, its components are the
 * fields of its class, an entity kind (archetype) is a class, and component sets that
 * contain each other are subclasses (simple_iter: AB ← ABC ← ABCD, ABCE; frag_iter: 26
 * classes extending an abstract Data). A system is a do-all — the synchronous
 * `rt.doAll(C, 'method')` — of an ordinary method; creating and deleting entities are
 * `this.runtime.create` and `this.destroy()` inside do-alls. Every method must run
 * compiled (`rt.stats().compiled`; a case whose method falls back fails); the interpreted
 * variant (compile: false) is measured too, and 'smmo-largest' (compiled, with
 * RuntimeOptions.blockSize 'largest': every class 32 slots per block). Where the mapping
 * differs from an ECS:
 *  - an smmo object cannot gain or lose fields: add_remove's "add component B to an
 *    entity" creates a B object whose `entity` field refers to the entity (an A), and
 *    "remove B" deletes that object. So the B has a handle of its own; the entity cannot
 *    tell in O(1) whether it has a B (that needs a back reference: one more store per
 *    add and per remove); adding B twice gives two Bs, where an ECS ignores or refuses
 *    it. The other mapping, a flag field on A, allocates nothing but makes "entities
 *    with B" a pass over every A. In smmo, add_remove thus costs what entity_cycle costs
 *    plus one reference store; in an ECS it moves the entity between archetypes;
 *  - a query is a class: "entities with C and D" must be a class (or a base class) in
 *    smmo, where an ECS finds the matching archetypes itself; a query that cuts across
 *    the class hierarchy would need one do-all per class or a test in the method;
 *  - a do-all does not visit the objects created while it runs (it visits those that
 *    existed when it started); in entity_cycle this changes nothing, since the new
 *    entities have B, not A.
 * The peers (bench/ecs/piecs.ts, bench/ecs/bitecs.ts) are written from the libraries'
 * documented APIs to the same definitions, with the same start values as the smmo cases.
 *
 * Method (bench/ecs/harness.ts): each case in a fresh child process; the op runs 1, 2, 4, …
 * times until these runs add up to 500 ms, then a count estimated to take 500 ms runs once
 * more and gives ops/s (wall clock) — noctjs/ecs-benchmark's method. After the timing the
 * case checks its own result (field values after the ops run, entity counts, what each
 * structural system did); a case that fails its check reports no figure and the run exits
 * 1. `--runs N` repeats every case N times, in turn (suite by suite, implementation by
 * implementation, then again), so that a busy phase of a shared machine hits all of them
 * alike; the table shows the median. `--profile DIR` runs every child under
 * `node --cpu-prof` and writes DIR/<impl>-<suite>-<run>.cpuprofile.
 *
 * `--paired ROUNDS` (bench/ecs/paired.ts): per suite one child per implementation, set up
 * and warmed up once, then measured in turn round after round; smmo / best peer is taken
 * within each round and the table gives its median (lowest–highest). For hosts whose speed
 * drifts; where processes also land on cores of different speed, run it under `taskset -c
 * N` (every child inherits the one CPU; they run one at a time).
 *
 * Output: a table of ops/s per suite and implementation, and smmo's ratio to the best
 * peer; bench-results/ecs.json with every run, the machine and the load average.
 * Target (issue "Compiled methods"): smmo ≥ 1.0× piecs on all five suites.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { arch, cpus, loadavg, platform, totalmem } from 'node:os';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { IMPLS, IMPL_LABELS, PEERS, setupCase, type Impl } from './ecs/cases.js';
import { SUITES, SUITE_NAMES, measure, median, type Measurement, type Suite } from './ecs/harness.js';
import { pairedSummary, runPaired, serve, type PairedSuite } from './ecs/paired.js';
import { childTimeoutMs, runNodeChild } from './child.js';

interface ChildResult extends Measurement {
  impl: Impl;
  suite: Suite;
  setupMs: number;
}

const USAGE = `Usage: node dist/bench/ecs.js [--runs N | --paired ROUNDS] [--suites a,b] [--impls a,b] [--ms MS] [--machine NAME] [--out FILE] [--profile DIR] [--child-timeout S]
  suites: ${SUITE_NAMES.join(', ')}
  impls:  ${IMPLS.join(', ')}`;

function list<T extends string>(value: string, allowed: readonly T[], what: string): T[] {
  const out = value.split(',').filter((s) => s !== '');
  for (const s of out) {
    if (!(allowed as readonly string[]).includes(s)) {
      console.error(`bench/ecs: unknown ${what} '${s}' (one of ${allowed.join(', ')})\n${USAGE}`);
      process.exit(2);
    }
  }
  return out as T[];
}

/** In a child: set one case up, measure it, check it, print the measurement as JSON. */
async function child(impl: Impl, suite: Suite, targetMs: number): Promise<void> {
  const t0 = performance.now();
  const c = await setupCase(impl, suite);
  const setupMs = performance.now() - t0;
  const m = measure(() => c.step(), targetMs);
  c.check(m.totalOps);
  await c.close?.();
  const out: ChildResult = { impl, suite, setupMs, ...m };
  process.stdout.write(JSON.stringify(out) + '\n');
}

function version(pkg: string): string {
  try {
    const file = fileURLToPath(new URL(`../../node_modules/${pkg}/package.json`, import.meta.url));
    return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
  } catch {
    return '?';
  }
}

/**
 * The checkout's commit, with "+dirty" when tracked files differ from it: a copy of a working
 * tree (a device machine's) can carry a HEAD older than the code it runs, and the result
 * file must not name that commit as the code measured.
 */
function gitCommit(): string | null {
  const git = (...args: string[]): string => execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  try {
    const head = git('rev-parse', '--short', 'HEAD');
    return git('status', '--porcelain', '--untracked-files=no') === '' ? head : `${head}+dirty`;
  } catch {
    return null;
  }
}

const fmt = (x: number | undefined): string => (x === undefined ? '—' : Math.round(x).toLocaleString('en-US'));

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      child: { type: 'string' },
      serve: { type: 'string' },
      suite: { type: 'string' },
      paired: { type: 'string' },
      runs: { type: 'string', default: '3' },
      suites: { type: 'string', default: SUITE_NAMES.join(',') },
      impls: { type: 'string', default: IMPLS.join(',') },
      ms: { type: 'string', default: '500' },
      machine: { type: 'string', default: '' },
      out: { type: 'string', default: 'bench-results/ecs.json' },
      profile: { type: 'string' },
      'child-timeout': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const targetMs = Number(values.ms);
  const runs = Number(values.runs);
  if (!(targetMs > 0) || !Number.isInteger(runs) || runs < 1) {
    console.error(`bench/ecs: --ms must be a positive number and --runs a positive integer\n${USAGE}`);
    process.exit(2);
  }
  const paired = values.paired === undefined ? 0 : Number(values.paired);
  if (values.paired !== undefined && !(Number.isInteger(paired) && paired >= 1)) {
    console.error(`bench/ecs: --paired takes a positive number of rounds\n${USAGE}`);
    process.exit(2);
  }
  if (values.paired !== undefined && values.profile !== undefined) {
    console.error(`bench/ecs: --profile profiles the default method's children; leave out --paired\n${USAGE}`);
    process.exit(2);
  }
  // In a child: --child (the default method) or --serve (--paired) runs one case.
  const role = values.serve !== undefined ? 'serve' : values.child !== undefined ? 'child' : null;
  if (role !== null) {
    const [impl] = list(values[role]!, IMPLS, 'implementation');
    const [suite] = list(values.suite ?? '', SUITE_NAMES, 'suite');
    if (impl === undefined || suite === undefined) throw new Error(`--${role} needs an implementation and --suite`);
    await (role === 'serve' ? serve : child)(impl, suite, targetMs);
    return;
  }
  const suites = list(values.suites, SUITE_NAMES, 'suite');
  const impls = list(values.impls, IMPLS, 'implementation');
  const profileDir = values.profile === undefined ? null : resolve(values.profile);
  if (profileDir !== null) mkdirSync(profileDir, { recursive: true });

  const c = cpus();
  const machine = {
    name: values.machine,
    cpu: c[0]?.model ?? '?',
    cores: c.length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    platform: `${platform()} ${arch()}`,
    node: process.version,
    loadStart: loadavg(),
    loadEnd: [] as number[],
  };
  console.log(
    `ECS comparison: ${suites.join(', ')}; ${runs} run(s) of each case, ${targetMs} ms per measurement\n` +
      `machine: ${machine.name ? `${machine.name}, ` : ''}${machine.cpu}, ${machine.cores} cores, ${machine.platform}, Node.js ${machine.node}; ` +
      `load average ${machine.loadStart.map((x) => x.toFixed(2)).join(' ')}`,
  );

  const self = fileURLToPath(import.meta.url);
  if (paired > 0) {
    await mainPaired(self, suites, impls, paired, targetMs, machine, values.out);
    return;
  }
  const results = new Map<string, ChildResult[]>();
  const failures: { impl: Impl; suite: Suite; run: number; error: string }[] = [];
  for (let run = 1; run <= runs; run++) {
    for (const suite of suites) {
      for (const impl of impls) {
        const nodeArgs =
          profileDir === null ? [] : ['--cpu-prof', '--cpu-prof-dir', profileDir, '--cpu-prof-name', `${impl}-${suite}-${run}.cpuprofile`];
        const res = runNodeChild(self, ['--child', impl, '--suite', suite, '--ms', String(targetMs)], {
          nodeArgs,
          timeoutMs: childTimeoutMs(),
          maxBuffer: 16 << 20,
          stderr: 'pipe',
        });
        const last = res.stdout.trim().split('\n').pop() ?? '';
        if (res.failure !== undefined || !last.startsWith('{')) {
          const error = res.failure ?? `printed no result:\n${res.stderr.trim()}`;
          failures.push({ impl, suite, run, error });
          console.error(`run ${run}/${runs} ${suite.padEnd(12)} ${impl.padEnd(16)} FAILED:\n${error}`);
          continue;
        }
        const r = JSON.parse(last) as ChildResult;
        const key = `${suite}:${impl}`;
        (results.get(key) ?? results.set(key, []).get(key)!).push(r);
        console.error(
          `run ${run}/${runs} ${suite.padEnd(12)} ${impl.padEnd(16)} ${fmt(r.opsPerSecond).padStart(10)} ops/s  (${r.count} ops in ${r.ms.toFixed(0)} ms; ${r.totalOps} ops checked)`,
        );
      }
    }
  }
  machine.loadEnd = loadavg();

  const cell = (suite: Suite, impl: Impl): number | undefined => {
    const rs = results.get(`${suite}:${impl}`);
    return rs === undefined || rs.length === 0 ? undefined : median(rs.map((r) => r.opsPerSecond));
  };
  const rows = suites.map((suite) => {
    const ops = Object.fromEntries(impls.map((impl) => [impl, cell(suite, impl)])) as Partial<Record<Impl, number>>;
    const peers = PEERS.map((p) => ops[p]).filter((x): x is number => x !== undefined);
    const best = peers.length > 0 ? Math.max(...peers) : undefined;
    const bestPeer = best === undefined ? null : PEERS.find((p) => ops[p] === best)!;
    const ratio = (impl: Impl): number | null => (ops[impl] !== undefined && best !== undefined ? ops[impl]! / best : null);
    return {
      suite,
      count: SUITES[suite],
      opsPerSecond: ops,
      bestPeer,
      smmoVsBestPeer: ratio('smmo'),
      interpretedVsBestPeer: ratio('smmo-interpreted'),
    };
  });

  const header = ['suite', ...impls.map((i) => IMPL_LABELS[i]), 'smmo / best peer'];
  const table = rows.map((r) => [
    r.suite,
    ...impls.map((i) => fmt(r.opsPerSecond[i])),
    r.smmoVsBestPeer === null ? '—' : `${r.smmoVsBestPeer.toFixed(2)} (${r.bestPeer})`,
  ]);
  printTable(`ops/s, median of ${runs} run(s) (higher is better)`, header, table, machine.loadEnd);
  writeResult(
    values.out,
    machine,
    { targetMs, runs, process: 'one child process per case and run', figure: 'median ops/s (wall clock)' },
    {
      rows,
      runs: [...results.values()].flat(),
      failures,
    },
  );
  if (failures.length > 0) {
    console.error(`${failures.length} case run(s) failed`);
    process.exitCode = 1;
  }
}

/** The table: a title, the header and rows (first column left-aligned), then the load average. */
function printTable(title: string, header: string[], table: string[][], loadEnd: number[]): void {
  const widths = header.map((h, k) => Math.max(h.length, ...table.map((row) => row[k]!.length)));
  const line = (cells: string[]): string => cells.map((s, k) => (k === 0 ? s.padEnd(widths[k]!) : s.padStart(widths[k]!))).join('  ');
  console.log(`\n${title}`);
  console.log(line(header));
  for (const row of table) console.log(line(row));
  console.log(`load average at the end ${loadEnd.map((x) => x.toFixed(2)).join(' ')}`);
}

/** The JSON result file: what every run records (benchmark, date, commit, machine, method, versions), then `rest`. */
function writeResult(file: string, machine: object, method: object, rest: object): void {
  const out = resolve(file);
  mkdirSync(dirname(out), { recursive: true });
  const result = {
    benchmark: 'ecs',
    date: new Date().toISOString(),
    commit: gitCommit(),
    machine,
    method,
    versions: { piecs: version('piecs'), bitecs: version('bitecs') },
    ...rest,
  };
  writeFileSync(out, JSON.stringify(result, null, 2) + '\n');
  console.log(`wrote ${out}`);
}

/** --paired: every suite's children side by side, ratios within rounds (bench/ecs/paired.ts). */
async function mainPaired(
  self: string,
  suites: readonly Suite[],
  impls: readonly Impl[],
  rounds: number,
  targetMs: number,
  machine: { loadEnd: number[] } & Record<string, unknown>,
  outFile: string,
): Promise<void> {
  console.log(`paired: ${rounds} round(s) per suite, each implementation ${targetMs} ms per round, in a rotating order`);
  const suitesOut: (PairedSuite & ReturnType<typeof pairedSummary>)[] = [];
  for (const suite of suites) {
    const r = await runPaired(self, suite, impls, rounds, targetMs);
    for (const f of r.failed) console.error(`${suite.padEnd(12)} ${f.impl.padEnd(16)} FAILED: ${f.error}`);
    const summary = pairedSummary(r.rounds, impls);
    r.rounds.forEach((round, k) =>
      console.error(
        `${suite.padEnd(12)} round ${String(k + 1).padStart(2)}  ` +
          impls.map((i) => `${i} ${fmt(round[i])}`).join('  ') +
          (summary.ratios[k] === null ? '' : `  smmo/best ${summary.ratios[k]!.toFixed(2)}`),
      ),
    );
    suitesOut.push({ ...r, ...summary });
  }
  machine.loadEnd = loadavg();
  const header = ['suite', ...impls.map((i) => IMPL_LABELS[i]), 'smmo / best peer, median (min–max) of rounds'];
  const table = suitesOut.map((s) => [
    s.suite,
    ...impls.map((i) => fmt(s.opsPerSecond[i])),
    s.ratio === null
      ? '—'
      : `${s.ratio.median.toFixed(2)} (${s.ratio.min.toFixed(2)}–${s.ratio.max.toFixed(2)}) ${s.bestPeer ?? ''}`.trim(),
  ]);
  printTable(`ops/s, median of ${rounds} paired round(s) (higher is better)`, header, table, machine.loadEnd);
  writeResult(
    outFile,
    machine,
    {
      targetMs,
      paired: rounds,
      process: 'one child process per implementation and suite, measured in turn, round after round',
      figure: 'median ops/s over the rounds (wall clock); smmo / best peer within each round, its median',
    },
    {
      rows: suitesOut.map((s) => ({
        suite: s.suite,
        count: SUITES[s.suite],
        opsPerSecond: s.opsPerSecond,
        bestPeer: s.bestPeer,
        smmoVsBestPeer: s.ratio?.median ?? null,
        smmoVsBestPeerRange: s.ratio === null ? null : [s.ratio.min, s.ratio.max],
      })),
      paired: suitesOut.map((s) => ({ suite: s.suite, counts: s.counts, rounds: s.rounds, ratios: s.ratios, failed: s.failed })),
    },
  );
  const failed = suitesOut.reduce((n, s) => n + s.failed.length, 0);
  if (failed > 0) {
    console.error(`${failed} case(s) failed`);
    process.exitCode = 1;
  }
}

await main();
