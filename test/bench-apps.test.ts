/**
 * `smmo bench` end to end at tiny sizes: the JSON report has one row per app × backend ×
 * thread count plus the baselines, with consistent statistics and agreeing digests; the
 * SVG is well-formed XML with an <svg> root and one bar per measured row; bad flags
 * exit with code 2 and name the flag.
 */
import test from 'ava';
import { describeChild, smmo } from './helpers/child.js';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BenchReport } from '../bench/apps.js';
import { parseXml } from './bench-apps-xml.js';

const WASM_BUILT = existsSync(fileURLToPath(new URL('../../wasm/pkg/smmo_simd.wasm', import.meta.url)));

// The CLI runs through test/helpers/child.ts smmo(): no short wall-clock kill (it made
// this test fail under load with "exit 1, empty stderr"); the helper kills only after a
// generous limit, and then the assertion message says that the test killed it, after how
// long and why.

test('smmo bench: tiny sizes → JSON rows per app × backend × threads and baselines, and an SVG chart', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'smmo-bench-apps-'));
  try {
    const out = join(dir, 'r.json');
    const plot = join(dir, 'r.svg');
    const r = await smmo([
      'bench',
      '--apps',
      'nbody,wa-tor',
      '--backends',
      'ts,wasm',
      '--threads',
      '1,2',
      '--nbody-bodies',
      '64',
      '--wa-tor-size',
      '16x16',
      '--iterations',
      '3',
      '--warmup',
      '1',
      '--repeat',
      '2',
      '--out',
      out,
      '--plot',
      plot,
      '--quiet',
    ]);
    t.is(r.code, 0, describeChild(r));
    t.is(r.stderr, '', '--quiet: no progress lines');
    t.regex(r.stdout, /^nbody \(64 bodies, 3 iterations after 1 warm-up, 2 repeats\)$/m);
    t.regex(r.stdout, /^wa-tor \(16×16, /m);
    t.regex(r.stdout, /machine: .+, \d+ cores, .*load average/);

    const report = JSON.parse(readFileSync(out, 'utf8')) as BenchReport;
    t.is(report.kind, 'smmo-bench-apps');
    t.true(report.machine.cores >= 1 && report.machine.loadStart.length === 3 && report.machine.loadEnd.length === 3);
    const labels = (app: string): string[] => report.rows.filter((x) => x.app === app).map((x) => x.label);
    const expected = ['smmo ts ×1', 'smmo ts ×2', 'smmo wasm ×1', 'smmo wasm ×2', 'baseline AOS', 'baseline SOA'];
    t.deepEqual(labels('nbody'), expected);
    t.deepEqual(labels('wa-tor'), expected);

    // nbody's and wa-tor's wasm rows ran their kernels (where the module is built), else say why not.
    const kernelOf = { nbody: 'Body.computeForce', 'wa-tor': 'Cell.decide' } as const;
    for (const app of ['nbody', 'wa-tor'] as const) {
      for (const row of report.rows.filter((x) => x.app === app && x.backend === 'wasm')) {
        if (WASM_BUILT) {
          t.is(row.skipped, undefined, app);
          t.is(row.kernels?.[kernelOf[app]], 'wasm', app);
        } else t.truthy(row.skipped, app);
      }
    }

    const measured = report.rows.filter((x) => x.skipped === undefined);
    t.true(measured.length >= 8);
    for (const row of measured) {
      const what = `${row.app} ${row.label}`;
      t.is(row.repeats.length, 2, what);
      t.is(row.iterations, 3, what);
      t.true(row.min > 0 && row.min <= row.median && row.median <= row.max, what);
      t.true(row.cpuMedian > 0 && row.iterationMedian > 0, what);
      t.true(row.deterministic, `${what}: every repeat gives the same digest`);
      t.true(row.digestAgrees, `${what}: digest agrees with the app's smmo ts ×1 row`);
      t.true(row.vsSoa !== undefined && row.vsSoa > 0, what);
    }
    // Same app, same seed: the digests are equal across implementations (wa-tor exactly).
    const watorDigests = new Set(measured.filter((x) => x.app === 'wa-tor').map((x) => x.digest));
    t.is(watorDigests.size, 1);
    t.is(report.rows.find((x) => x.app === 'wa-tor' && x.impl === 'soa')!.vsSoa, 1);

    const elements = parseXml(readFileSync(plot, 'utf8'));
    t.is(elements[0]!.name, 'svg');
    t.is(elements[0]!.attrs['xmlns'], 'http://www.w3.org/2000/svg');
    const bars = elements.filter((e) => e.name === 'path' && e.attrs['class'] === 'bar');
    t.is(bars.length, measured.length, 'one bar per measured row');
    for (const b of bars) t.regex(b.attrs['d']!, /^M[\d.]+ [\d.]+V[\d.]+H[\d.]+V[\d.]+Z$/);
    t.deepEqual(
      bars.map((b) => b.attrs['data-label']),
      measured.map((x) => x.label),
    );
    t.is(elements.filter((e) => e.name === 'path' && e.attrs['class'] === 'range').length, measured.length);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('smmo bench --help documents the flags; bad flags exit 2 naming the flag', async (t) => {
  const help = await smmo(['bench', '--help']);
  t.is(help.code, 0);
  for (const flag of [
    '--apps',
    '--backends',
    '--threads',
    '--baselines',
    '--size',
    '--iterations',
    '--repeat',
    '--out',
    '--plot',
    '--wa-tor-size',
  ])
    t.true(help.stdout.includes(flag), flag);
  t.is((await smmo(['help', 'bench'])).stdout, help.stdout);

  const bad: [string[], RegExp][] = [
    [['--bogus'], /unknown flag --bogus/],
    [['--apps', 'nbdy'], /--apps: unknown 'nbdy' \(did you mean 'nbody'\?\)/],
    [['--backends', 'cuda'], /--backends: unknown 'cuda'/],
    [['--threads', '1,x'], /--threads must be a comma-separated list/],
    [['--threads', '0'], /--threads/],
    [['--size', 'huge'], /--size must be one of small, medium/],
    [['--iterations', '0'], /--iterations must be an integer in 1/],
    [['--repeat', '-1'], /--repeat/],
    [['--wa-tor-size', '16'], /--wa-tor-size must be WIDTHxHEIGHT/],
    [['--baselines', 'aos,xyz'], /--baselines: unknown 'xyz'/],
    [['--backends', 'ts', '--backends', 'x'], /--backends/],
    [['extra'], /unexpected argument 'extra'/],
    [['--quiet=yes'], /--quiet takes no value/],
  ];
  for (const [args, message] of bad) {
    const r = await smmo(['bench', ...args]);
    t.is(r.code, 2, args.join(' '));
    t.regex(r.stderr, message, args.join(' '));
    t.is(r.stderr.trim().split('\n').length, 1, `${args.join(' ')}: one line`);
    t.is(r.stdout, '', args.join(' '));
  }
});
