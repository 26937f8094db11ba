/**
 * The `smmo` command, run as a user runs it (node bin/smmo.js … in a child process):
 * the --json contract, exit codes and messages for bad command lines, help texts, and
 * README.md's CLI reference, which must be the same text as the help.
 * Also unit tests of the progress bar (fake terminal, fake clock).
 */
import test from 'ava';
import { describeChild, lastJson, smmo } from './helpers/child.js';
import { readFileSync } from 'node:fs';
import { appNames, loadApp } from '../apps/registry.js';
import { COMMON_FLAGS } from '../cli/flags.js';
import { formatDuration, ProgressBar, progressBar } from '../cli/progress.js';

/** `text` as a regular expression that matches it literally. */
function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

// ------------------------------------------------------------------ run

test('run nbody --bodies 2000 --iterations 10 --json: last stdout line is the summary object (issue 2 acceptance)', async (t) => {
  const r = await smmo(['run', 'nbody', '--bodies', '2000', '--iterations', '10', '--json']);
  t.is(r.code, 0, describeChild(r));
  t.is(r.stderr, '', 'no progress bar or other output on stderr when it is not a terminal');
  const j = lastJson(r.stdout);
  t.is(j['app'], 'nbody');
  t.is(j['backend'], 'ts');
  t.is(j['threads'], 1);
  t.is(j['iterations'], 10);
  t.deepEqual(j['objects'], { Body: 2000 });
  t.deepEqual(j['params'], { bodies: 2000 });
  t.is(j['seed'], 42);
  t.true(typeof j['seconds'] === 'number' && (j['seconds'] as number) > 0);
  t.true(typeof j['initSeconds'] === 'number');
  t.true(Number.isFinite(j['digest']));
  const heap = j['heap'] as Record<string, number>;
  // 2000 bodies at 32 per block (Body is the only class, so it gets 32 slots).
  t.is(heap['usedBlocks'], Math.ceil(2000 / 32));
  t.true(heap['blocks']! > heap['usedBlocks']!);
  t.true(heap['bytes']! >= heap['blocks']! * heap['blockBytes']!);
  t.is(heap['fragmentation'], (63 * 32 - 2000) / (63 * 32));
  t.is(typeof j['node'], 'string');
  t.is(typeof (j['machine'] as Record<string, unknown>)['cores'], 'number');
});

test('run: the digest depends on the seed and only on the seed', async (t) => {
  const [a, b, c] = await Promise.all([
    smmo(['run', 'nbody', '--bodies', '100', '--iterations', '5', '--json']),
    smmo(['run', 'nbody', '--bodies', '100', '--iterations', '5', '--json', '--seed', '42']),
    smmo(['run', 'nbody', '--bodies', '100', '--iterations', '5', '--json', '--seed', '7']),
  ]);
  for (const r of [a, b, c]) t.is(r.code, 0, describeChild(r));
  t.is(lastJson(a.stdout)['digest'], lastJson(b.stdout)['digest']);
  t.not(lastJson(a.stdout)['digest'], lastJson(c.stdout)['digest']);
  t.is(lastJson(c.stdout)['seed'], 7);
});

test("run --threads 2: the workers find the app's classes (registry module URL) and give the same result", async (t) => {
  // 4000 bodies = 125 blocks: above the runtime's inline threshold, so the workers run the passes.
  const args = ['run', 'nbody', '--bodies', '4000', '--iterations', '1', '--json'];
  const [one, two] = await Promise.all([smmo([...args, '--threads', '1']), smmo([...args, '--threads', '2'])]);
  t.is(one.code, 0, describeChild(one));
  t.is(two.code, 0, describeChild(two));
  t.is(lastJson(two.stdout)['threads'], 2);
  t.deepEqual(lastJson(two.stdout)['objects'], { Body: 4000 });
  t.is(lastJson(two.stdout)['digest'], lastJson(one.stdout)['digest']);
});

test('run --no-rotation / --no-coalescing / --bitmap-alloc / --own-first-block: the allocator variant is in --json, the digest is the default one', async (t) => {
  const base = ['run', 'wa-tor', '--width', '40', '--height', '32', '--iterations', '8', '--json'];
  const runs = await Promise.all(
    [[], ['--no-rotation', '--no-coalescing'], ['--bitmap-alloc'], ['--own-first-block', '--threads', '2']].map((extra) =>
      smmo([...base, ...extra]),
    ),
  );
  for (const r of runs) t.is(r.code, 0, r.stderr);
  const [def, flat, bitmap, own] = runs.map((r) => lastJson(r.stdout));
  t.deepEqual(own!['allocator'], { rotation: true, coalescing: true, bitmapAlloc: false, ownFirstBlock: true });
  t.is(own!['digest'], def!['digest']);
  t.deepEqual(def!['allocator'], { rotation: true, coalescing: true, bitmapAlloc: false, ownFirstBlock: false });
  t.deepEqual(flat!['allocator'], { rotation: false, coalescing: false, bitmapAlloc: false, ownFirstBlock: false });
  t.deepEqual(bitmap!['allocator'], { rotation: true, coalescing: false, bitmapAlloc: true, ownFirstBlock: false });
  t.is(flat!['digest'], def!['digest']);
  t.is(bitmap!['digest'], def!['digest']);
  const heap = bitmap!['heap'] as Record<string, number>;
  t.is(heap['fragmentation'], 0, 'BitmapAlloc: one object per block');
  t.true(heap['bytes']! > (def!['heap'] as Record<string, number>)['bytes']!, 'the default heap grows for BitmapAlloc');
  const bad = await smmo(['run', 'wa-tor', '--bitmap-alloc', '--no-coalescing']);
  t.is(bad.code, 2);
  t.regex(bad.stderr, /--bitmap-alloc never coalesces/);
  const wasm = await smmo(['run', 'wa-tor', '--bitmap-alloc', '--backend', 'wasm']);
  t.is(wasm.code, 2);
  t.regex(wasm.stderr, /use --backend ts/);
  const both = await smmo(['run', 'wa-tor', '--bitmap-alloc', '--own-first-block']);
  t.is(both.code, 2);
  t.regex(both.stderr, /drop --own-first-block/);
});

test('run: human summary names app, backend, threads, iterations, time, digest, objects and heap', async (t) => {
  const r = await smmo(['run', 'nbody', '--bodies', '64', '--iterations', '3']);
  t.is(r.code, 0, describeChild(r));
  for (const key of ['app', 'backend', 'threads', 'iterations', 'seconds', 'digest', 'objects', 'heap']) {
    t.regex(r.stdout, new RegExp(`^${key}\\s`, 'm'), `summary has a '${key}' row`);
  }
  t.regex(r.stdout, /iterations\/s/);
  t.regex(r.stdout, /Body 64/);
  t.regex(r.stdout, /2 \/ \d+ blocks used/);
  t.regex(r.stdout, /fragmentation 0\.0 %/);
});

test('run --checked validates the heap at the end; --quiet prints nothing', async (t) => {
  const [checked, quiet] = await Promise.all([
    smmo(['run', 'nbody', '--bodies', '50', '--iterations', '2', '--checked', '--json']),
    smmo(['run', 'nbody', '--bodies', '50', '--iterations', '2', '--quiet']),
  ]);
  t.is(checked.code, 0, describeChild(checked));
  t.is(lastJson(checked.stdout)['checked'], true);
  t.is(lastJson(checked.stdout)['heapValidated'], true);
  t.is(quiet.code, 0, describeChild(quiet));
  t.is(quiet.stdout, '');
  t.is(quiet.stderr, '');
});

test('run: --iterations 0 creates the objects and reports them', async (t) => {
  const r = await smmo(['run', 'nbody', '--bodies', '10', '--iterations', '0', '--json']);
  t.is(r.code, 0, describeChild(r));
  t.is(lastJson(r.stdout)['iterations'], 0);
  t.deepEqual(lastJson(r.stdout)['objects'], { Body: 10 });
});

// ------------------------------------------------------------------ bad command lines (exit 2)

async function usageError(t: import('ava').ExecutionContext, args: string[], ...expected: RegExp[]): Promise<void> {
  const r = await smmo(args);
  t.is(r.code, 2, `exit code of smmo ${args.join(' ')}`);
  t.is(r.stdout, '');
  const lines = r.stderr.trimEnd().split('\n');
  t.is(lines.length, 1, `one line on stderr, got:\n${r.stderr}`);
  for (const re of expected) t.regex(lines[0]!, re);
}

test('bad flag → exit 2, names the flag, suggests the near one and --help', (t) =>
  usageError(t, ['run', 'nbody', '--bodys', '10'], /unknown flag --bodys/, /did you mean --bodies\?/, /smmo run nbody --help/));

test('bad values → exit 2 naming flag, value and a good example', async (t) => {
  await Promise.all([
    usageError(t, ['run', 'nbody', '--bodies', 'many'], /--bodies must be an integer in 1 … 4294967295, got 'many'/, /e\.g\. --bodies \d+/),
    usageError(t, ['run', 'nbody', '--iterations', '1.5'], /--iterations must be an integer/, /got '1\.5'/),
    usageError(t, ['run', 'nbody', '--seed=-1'], /--seed must be an integer in 0 … 4294967295/),
    usageError(t, ['run', 'nbody', '--threads', '0'], /--threads must be an integer in 1/),
    usageError(t, ['run', 'nbody', '--backend', 'cuda'], /--backend must be one of ts, wasm, webgpu, got 'cuda'/),
    usageError(t, ['run', 'nbody', '--bodies'], /--bodies needs a value/),
    usageError(t, ['run', 'nbody', '--json=yes'], /--json takes no value/),
    usageError(t, ['run', 'nbody', 'extra'], /unexpected argument 'extra'/),
  ]);
});

test('bad --heap value → exit 2 with an example of a good size', async (t) => {
  await Promise.all([
    usageError(t, ['run', 'nbody', '--heap', 'lots'], /--heap must be a size in bytes or with a unit, got 'lots'/, /64MB/),
    // Parses, but is smaller than any heap: the runtime's UsageError becomes a usage error of the CLI.
    usageError(t, ['run', 'nbody', '--heap', '1KB'], /^smmo run nbody: heap size 1000 bytes is out of range/),
  ]);
});

test('unknown app or command → exit 2 listing what exists', async (t) => {
  const apps = appNames().join(', ');
  await Promise.all([
    usageError(t, ['run', 'nbdy'], /unknown app 'nbdy'/, /did you mean 'nbody'\?/, new RegExp(`the apps are ${apps}`)),
    usageError(t, ['run'], /which app\?/),
    usageError(t, ['frobnicate'], /unknown command 'frobnicate'/, /smmo --help/),
    usageError(t, ['nbody'], /to run the app: smmo run nbody/),
    usageError(t, []),
  ]);
});

// ------------------------------------------------------------------ runtime errors (exit 1)

test('heap too small for the objects → exit 1 with the HeapExhaustedError message', async (t) => {
  const r = await smmo(['run', 'nbody', '--bodies', '100000', '--heap', '2MB', '--iterations', '1', '--json']);
  t.is(r.code, 1, describeChild(r));
  t.is(r.stdout, '');
  t.regex(r.stderr, /^smmo run nbody: HeapExhaustedError: heap exhausted: no free block left for a new Body block/);
  t.regex(r.stderr, /--heap SIZE/);
  t.notRegex(r.stderr, /\n\s+at /, 'no stack trace for an smmo error');
});

// ------------------------------------------------------------------ help and version

test('run <app> --help documents every flag of every app, with defaults', async (t) => {
  for (const name of appNames()) {
    const app = (await loadApp(name))!;
    const r = await smmo(['run', name, '--help']);
    t.is(r.code, 0, describeChild(r));
    for (const f of COMMON_FLAGS) t.regex(r.stdout, new RegExp(`^  --${f.name}\\b`, 'm'), `${name}: --${f.name}`);
    for (const f of app.flags) {
      t.regex(r.stdout, new RegExp(`^  --${f.name}\\b.*${escape(f.description)}`, 'm'), `${name}: --${f.name}`);
      if (f.default !== undefined) t.regex(r.stdout, new RegExp(`--${f.name}\\b.*\\(default: ${escape(String(f.default))}\\)`));
    }
    t.regex(r.stdout, new RegExp(`--iterations K .*\\(default: ${app.iterations}\\)`));
    const viaHelp = await smmo(['help', name]);
    t.is(viaHelp.stdout, r.stdout, `smmo help ${name} = smmo run ${name} --help`);
  }
});

test('--help lists commands and apps; --version prints the package version', async (t) => {
  const [help, version, runHelp] = await Promise.all([smmo(['--help']), smmo(['--version']), smmo(['help', 'run'])]);
  t.is(help.code, 0, describeChild(help));
  t.regex(help.stdout, /smmo run <app> \[flags\]/);
  for (const name of appNames()) t.regex(help.stdout, new RegExp(`^  ${name}\\s`, 'm'));
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  t.is(version.stdout, `smmo ${pkg.version}\n`);
  t.is(runHelp.code, 0, describeChild(runHelp));
  for (const f of COMMON_FLAGS) t.regex(runHelp.stdout, new RegExp(`--${f.name}\\b`));
  // An unknown topic: exit 2, and the message lists every topic, the commands included.
  const unknown = await smmo(['help', 'bnch']);
  t.is(unknown.code, 2, describeChild(unknown));
  t.regex(unknown.stderr, /no help on 'bnch' \(did you mean 'bench'\?\); the topics are run, compare, bench, nbody/);
});

test("README's CLI reference is the CLI's own help text", async (t) => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const blocks = [...readme.matchAll(/<!-- output of: smmo ([^>]*?) -->\s*```text\n([\s\S]*?)```/g)];
  t.true(blocks.length >= 2, 'README has the help blocks (<!-- output of: smmo … --> then a ```text block)');
  for (const [, command, text] of blocks) {
    const r = await smmo(command!.split(' '));
    t.is(r.code, 0, describeChild(r));
    t.is(text, r.stdout, `README's block for 'smmo ${command}' differs from the CLI: paste the output of 'node bin/smmo.js ${command}'`);
  }
});

// ------------------------------------------------------------------ progress bar

function fakeTerminal(columns = 100): { isTTY: boolean; columns: number; out: string[]; write(s: string): boolean } {
  const out: string[] = [];
  return { isTTY: true, columns, out, write: (s: string) => (out.push(s), true) };
}

test('progress bar: at most one redraw per 100 ms, always the last iteration, erased at the end', (t) => {
  const term = fakeTerminal();
  let now = 0;
  const bar = new ProgressBar(term, 'nbody', 1000, 100, () => now);
  for (let k = 1; k <= 1000; k++) {
    now += 1; // 1 ms per iteration: 1000 ms in all
    bar.update(k);
  }
  t.true(term.out.length >= 9 && term.out.length <= 11, `${term.out.length} redraws in 1 s`);
  t.regex(term.out[term.out.length - 1]!, /1000\/1000\s+100%/);
  bar.finish();
  t.is(term.out[term.out.length - 1], '\r\x1b[2K');
});

test('progress bar: shows k/K, percent, elapsed and ETA within the terminal width', (t) => {
  const line = new ProgressBar(fakeTerminal(80), 'nbody', 200, 100, () => 0).render(50, 2000);
  t.regex(line, /^nbody [█░]+\s+50\/200\s+25%\s+elapsed 2\.0s\s+ETA 6\.0s$/);
  t.true([...line].length <= 80, line);
  // On a wide terminal the bar has its full 40 cells, a quarter of them filled.
  const wide = new ProgressBar(fakeTerminal(200), 'nbody', 200, 100, () => 0).render(50, 2000);
  t.is([...wide].filter((c) => c === '█').length, 10);
  t.is([...wide].filter((c) => c === '░').length, 30);
});

test('--check tolerances: --tol, --rel, --field-rel, --digest-rel reach the report; bad values or no --check → exit 2', async (t) => {
  const r = await smmo([
    'run',
    'nbody',
    '--bodies',
    '64',
    '--iterations',
    '2',
    '--check',
    '--field-rel',
    '1e-3',
    '--tol',
    '1e-9',
    '--json',
  ]);
  t.is(r.code, 0, describeChild(r));
  const check = lastJson(r.stdout)['check'] as {
    ok: boolean;
    tolerance: unknown;
    fields: Record<string, { beyond: number; scale: number }>;
  };
  t.true(check.ok);
  t.deepEqual(check.tolerance, { abs: 1e-9, rel: 0, fieldRel: 1e-3, digestRel: 1e-5 });
  t.is(check.fields['Body.posX']!.beyond, 0);
  t.true(check.fields['Body.posX']!.scale > 0);
  await Promise.all([
    usageError(t, ['run', 'nbody', '--check', '--field-rel=-1'], /--field-rel must be a number ≥ 0, got '-1' \(e\.g\. --field-rel 1e-5\)/),
    usageError(t, ['run', 'nbody', '--check', '--digest-rel', 'Infinity'], /--digest-rel must be a number ≥ 0/),
    usageError(t, ['run', 'nbody', '--tol', '1e-6'], /--tol is a tolerance of --check; add --check/),
  ]);
});

test('progress bar: none when stderr is not a terminal or with --json/--quiet', (t) => {
  t.is(progressBar({ isTTY: false, write: () => true }, 'x', 10, true), null);
  t.is(progressBar({ write: () => true }, 'x', 10, true), null);
  t.is(progressBar(fakeTerminal(), 'x', 10, false), null);
  t.not(progressBar(fakeTerminal(), 'x', 10, true), null);
});

test('formatDuration', (t) => {
  t.is(formatDuration(0.84), '0.8s');
  t.is(formatDuration(125), '2m05s');
  t.is(formatDuration(3720), '1h02m');
  t.is(formatDuration(Infinity), '?');
});

test('--check compares a WASM run with the TypeScript reference field by field and passes within tolerance', async (t) => {
  const r = await smmo(['run', 'nbody', '--bodies', '200', '--iterations', '3', '--backend', 'wasm', '--check', '--json']);
  t.is(r.code, 0, describeChild(r));
  const report = lastJson(r.stdout);
  const check = report['check'] as { ok: boolean; fields: Record<string, { rel: number }>; digest: { rel: number } };
  t.true(check.ok);
  t.deepEqual(Object.keys(check.fields).sort(), [
    'Body.forceX',
    'Body.forceY',
    'Body.mass',
    'Body.posX',
    'Body.posY',
    'Body.velX',
    'Body.velY',
  ]);
  t.true(check.digest.rel <= 1e-5);
  t.deepEqual(report['kernels'], { 'Body.computeForce': 'wasm', 'Body.update': 'wasm' });
});
