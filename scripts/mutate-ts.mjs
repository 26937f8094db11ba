#!/usr/bin/env node
// Mutation testing of the TypeScript core with StrykerJS (@stryker-mutator/core, its
// command test runner). Stryker mutates the COMPILED modules (dist/**/*.js: tsc output,
// ES2022, one JS line per TS line nearly everywhere) and runs, for each mutant, only the
// ava test files that exercise that module (ava --fail-fast). Mutating the .ts sources
// would need a tsc build per mutant (the tests run from dist/); mutating dist/ needs
// none: Stryker's mutation switching puts every mutant of a file into one instrumented
// copy, and the command runner picks one per run (__STRYKER_ACTIVE_MUTANT__). A mutant is
// killed when a test fails or the run times out; it survives when every test passes.
// docs/mutation.md records a run and judges every survivor.
//
//   npm run mutation                       (= npm run build && node scripts/mutate-ts.mjs)
//   node scripts/mutate-ts.mjs --only G    just the groups whose name contains G (G1|G2: any)
//   node scripts/mutate-ts.mjs --concurrency N   test processes at once (default 2)
//   node scripts/mutate-ts.mjs --ava-concurrency N   test files one ava process runs at once
//                                          (ava's --concurrency; default: ava's, the cores)
//   node scripts/mutate-ts.mjs --incremental     reuse reports/mutation/<group>.incremental.json:
//                                          only mutants of changed code run again (Stryker's
//                                          --incremental; the command runner cannot see which
//                                          tests changed, so after changing tests run in full)
//
// One Stryker run per group (a module, or part of one, and its tests), in a sandbox copy
// under .stryker-tmp/; Stryker's JSON reports go to reports/mutation/<group>.json, a summary
// per group (score, time, every survivor with its dist/ place) to <group>.summary.json, and
// the summary of the groups run is printed at the end and written beside them as JSON (the
// run's summary). Not part of CI (see docs/mutation.md for how long it
// takes). The Rust allocator core has its own: npm run mutation:rust (docs/mutation-rust.md).
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Stryker } from '@stryker-mutator/core';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const value = (name) => (args.indexOf(name) >= 0 ? args[args.indexOf(name) + 1] : undefined);
const only = value('--only');
const concurrency = Number(value('--concurrency') ?? 2);
const incremental = args.includes('--incremental');
const avaConcurrency = value('--ava-concurrency');

/**
 * Lines `from`–`to` (1-based, inclusive) of dist/<file>: the method `name` of a class,
 * from its first line to the closing brace at the same indentation.
 */
function methodLines(file, name) {
  const lines = readFileSync(join(root, 'dist', file), 'utf8').split('\n');
  const start = lines.findIndex((l) => new RegExp(`^(\\s+)${name}\\(.*\\{$`).test(l));
  if (start < 0) throw new Error(`${file}: no method ${name}`);
  const indent = /^\s+/.exec(lines[start])[0];
  const end = lines.findIndex((l, i) => i > start && l === `${indent}}`);
  return `dist/${file}:${start + 1}-${end + 1}`;
}

/** The tests each mutant of runtime/thread.ts runs (fast ones that go through ThreadContext). */
const THREAD_TESTS = [
  'allocator',
  'checked',
  'stale-foreign',
  'coalescing',
  'kept-blocks',
  'own-first',
  'snapshot',
  'schedule',
  'workers',
  'apps-wator-rules',
  'thread-context',
];

/** test/state's tests that run in-process: not the CLI's, not the apps' dump-and-resume runs. */
const STATE_IN_PROCESS = ['!CLI:*', '!*dump after K*'];

/** The groups: what to mutate (dist/ paths, Stryker's file:from-to for part of a file) and the tests. */
const GROUPS = [
  { name: 'bitmap', mutate: () => ['dist/runtime/bitmap.js'], tests: ['bitmap', 'heap-validate'] },
  {
    name: 'heap-validate',
    mutate: () => [methodLines('runtime/heap.js', 'validate'), 'dist/runtime/heap.js:' + hexLines()],
    tests: ['heap-validate'],
  },
  // The rest of runtime/heap.ts: the constructor, Heap.create (sizes, the flags it
  // formats), Heap.attach (a worker's view of the same heap), flags, dispose, format (the
  // header and type table the core reads), blockWord/blockOffset/blockType, liveInBlock.
  {
    name: 'heap-rest',
    mutate: () => [`dist/runtime/heap.js:1-${lineOf('runtime/heap.js', /^ {4}validate\(\) \{$/) - 1}`],
    tests: [
      'heap-create',
      'heap-validate',
      'variants',
      'allocator',
      'options',
      'own-first',
      'kept-blocks',
      'scan-fallback',
      'workers',
      'wasm-module',
    ],
  },
  // The comparator (runtime/compare.ts) and smmo compare's command around it (cli/compare.ts).
  {
    name: 'compare',
    mutate: () => ['dist/runtime/compare.js', 'dist/cli/compare.js'],
    tests: ['compare', 'compare-check', 'compare-rules'],
  },
  // runtime/state.ts, the loading side (readState … readClass, checkReferences, restoreState):
  // 833 mutants in the whole file are more than a run can afford here, and so are
  // test/state's app round trips and CLI tests (18 s a run under load): the in-process
  // tests (bad files, columns, handles, references, metadata; row order; every field kind
  // round-tripped through restoreState) are what a mutant runs (see docs/mutation.md).
  {
    name: 'state-read',
    mutate: () => [functionLines('runtime/state.js', 'readState', 'describe')],
    tests: ['state', 'state-metadata'],
    match: STATE_IN_PROCESS,
  },
  {
    name: 'state-restore',
    mutate: () => [functionLines('runtime/state.js', 'indexOf', 'peekStateApp')],
    tests: ['state', 'state-restore'],
    match: STATE_IN_PROCESS,
  },
  // The writing side of runtime/state.ts (arrowTypeName … prepareStateDir: columns, handles,
  // Arrow tables, the metadata, the directory), describe() (type names in messages) and
  // peekStateApp: every state the tests read is written here, so the round trips judge it.
  {
    name: 'state-write',
    mutate: () => [
      functionLines('runtime/state.js', 'arrowTypeName', 'readState'),
      functionLines('runtime/state.js', 'describe', 'indexOf'),
      `dist/runtime/state.js:${lineOf('runtime/state.js', /^export function peekStateApp\(/)}-${lineCount('runtime/state.js')}`,
    ],
    tests: ['state', 'state-metadata', 'state-restore', 'state-write'],
    match: STATE_IN_PROCESS,
  },
  // cli/state.ts: --dump and --init (the state's parameters against the app's flags, the
  // warnings): test/cli-state (in-process, each rule at its edge) and test/state's CLI
  // tests, one CLI child process after another (slow: run it on a machine with many cores).
  { name: 'cli-state', mutate: () => ['dist/cli/state.js'], tests: ['cli-state', 'state'], match: ['CLI:*', 'cli-state:*'] },
  // runtime/thread.ts, one thread's side of a runtime, in two groups (each small enough for
  // one run of ten minutes on 16 cores): views, checked-mode checks, create/destroy, get,
  // count, deviceDo (up to runBlocks); then the do-all executor (runBlocks, runnerFor), pass
  // lists and iteration snapshots, zeroing and initial values, occupancy. The tests: the
  // allocator's through the runtime, checked mode and stale handles, coalescing, kept and
  // own first blocks, snapshots, scheduling, workers, wa-tor's rules.
  {
    name: 'thread-views',
    mutate: () => [`dist/runtime/thread.js:1-${lineOf('runtime/thread.js', /^ {4}runBlocks\(/) - 1}`],
    tests: THREAD_TESTS,
  },
  {
    name: 'thread-passes',
    mutate: () => [`dist/runtime/thread.js:${lineOf('runtime/thread.js', /^ {4}runBlocks\(/)}-${lineCount('runtime/thread.js')}`],
    tests: THREAD_TESTS,
  },
];

/** 1-based number of the first line of dist/<file> that matches `re`. */
function lineOf(file, re) {
  const n = readFileSync(join(root, 'dist', file), 'utf8')
    .split('\n')
    .findIndex((l) => re.test(l));
  if (n < 0) throw new Error(`${file}: no line matches ${re}`);
  return n + 1;
}

/** Lines in dist/<file>. */
function lineCount(file) {
  return readFileSync(join(root, 'dist', file), 'utf8').split('\n').length;
}

/** Lines of dist/<file> from top-level function `from` up to (not including) function `to`. */
function functionLines(file, from, to) {
  const lines = readFileSync(join(root, 'dist', file), 'utf8').split('\n');
  const at = (name) => lines.findIndex((l) => new RegExp(`^(export )?(async )?function ${name}\\(`).test(l));
  if (at(from) < 0 || at(to) < 0) throw new Error(`${file}: no function ${from} or ${to}`);
  return `dist/${file}:${at(from) + 1}-${at(to)}`;
}

/** The lines of heap.js's hex() (validate's messages). */
function hexLines() {
  const lines = readFileSync(join(root, 'dist/runtime/heap.js'), 'utf8').split('\n');
  const start = lines.findIndex((l) => l.startsWith('function hex('));
  const end = lines.findIndex((l, i) => i > start && l === '}');
  return `${start + 1}-${end + 1}`;
}

// ava from the project's node_modules by absolute path: Stryker links node_modules into its
// sandbox only when it is a directory, not when it is itself a symlink (a git worktree's).
const ava = `node ${JSON.stringify(join(root, 'node_modules/ava/entrypoints/cli.mjs'))} --fail-fast`;
mkdirSync(join(root, 'reports/mutation'), { recursive: true });
const summary = [];
const started = Date.now();
for (const g of GROUPS) {
  if (only && !only.split('|').some((k) => g.name.includes(k))) continue;
  const t0 = Date.now();
  const results = await new Stryker({
    testRunner: 'command',
    commandRunner: {
      command: [
        ava,
        ...(avaConcurrency ? [`--concurrency=${avaConcurrency}`] : []),
        ...(g.match ?? []).map((m) => `--match='${m}'`),
        ...g.tests.map((t) => `dist/test/${t}.test.js`),
      ].join(' '),
    },
    mutate: g.mutate(),
    coverageAnalysis: 'off',
    concurrency,
    // Timeouts: a mutant that makes a bounded loop unbounded is killed after this.
    timeoutMS: 10000,
    timeoutFactor: 2,
    reporters: ['progress', 'json'],
    jsonReporter: { fileName: `reports/mutation/${g.name}.json` },
    incremental,
    incrementalFile: `reports/mutation/${g.name}.incremental.json`,
    tempDirName: '.stryker-tmp',
    cleanTempDir: true,
    // The sandbox gets what the tests read: dist/, wasm/pkg, test fixtures, package.json.
    ignorePatterns: ['wasm/target', 'bench-results', 'reports', '.carry', '.gl', 'docs'],
    logLevel: 'info',
    fileLogLevel: 'off',
  }).runMutationTest();
  const seconds = (Date.now() - t0) / 1000;
  const count = (s) => results.filter((r) => r.status === s).length;
  const killed = count('Killed') + count('Timeout');
  const survived = results.filter((r) => r.status === 'Survived' || r.status === 'NoCoverage');
  const valid = killed + survived.length;
  const score = valid ? (100 * killed) / valid : 100;
  const row = {
    group: g.name,
    mutate: g.mutate(),
    tests: g.tests,
    match: g.match,
    mutants: results.length,
    killed,
    timeout: count('Timeout'),
    survived: survived.length,
    errors: count('CompileError') + count('RuntimeError'),
    ignored: count('Ignored'),
    score: Math.round(score * 100) / 100,
    seconds: Math.round(seconds),
    survivors: survived.map((r) => ({
      id: r.id,
      file: r.fileName.replace(/^.*?dist\//, 'dist/'),
      line: r.location.start.line,
      column: r.location.start.column + 1,
      mutator: r.mutatorName,
      replacement: r.replacement,
      status: r.status,
    })),
  };
  summary.push(row);
  writeFileSync(join(root, `reports/mutation/${g.name}.summary.json`), JSON.stringify(row, null, 2) + '\n');
  console.log(`\n[mutation] ${g.name}: ${killed}/${valid} killed (${row.score} %), ${row.seconds} s`);
}
const total = summary.reduce((a, r) => ({ killed: a.killed + r.killed, valid: a.valid + r.killed + r.survived }), {
  killed: 0,
  valid: 0,
});
const out = { date: new Date().toISOString(), seconds: Math.round((Date.now() - started) / 1000), total, groups: summary };
writeFileSync(join(root, 'reports/mutation/summary.json'), JSON.stringify(out, null, 2) + '\n');
console.log('\n[mutation] summary');
for (const r of summary) {
  console.log(
    `  ${r.group.padEnd(14)} ${String(r.killed).padStart(4)}/${String(r.killed + r.survived).padEnd(4)} ${r.score} %  ${r.seconds} s`,
  );
  for (const s of r.survivors) console.log(`    survived ${s.file}:${s.line}:${s.column} ${s.mutator}: ${JSON.stringify(s.replacement)}`);
}
const score = total.valid ? (100 * total.killed) / total.valid : 100;
console.log(`  total          ${total.killed}/${total.valid} ${score.toFixed(2)} %  ${out.seconds} s`);
