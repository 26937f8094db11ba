/**
 * bench/memory.ts (paper Fig. 11): every app with baselines has a size spec whose size
 * parameter is one of the app's flags; a whole search (calibration, bracket, bisection,
 * report, SVG) runs end to end at a tiny budget for a grid app (game-of-life) and a
 * non-grid one (structure); a bad --apps is a usage error.
 */
import test from 'ava';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BASELINES } from '../apps/baselines/index.js';
import { loadApp } from '../apps/registry.js';
import { paramsAt, SPECS, unitsOf } from '../bench/memory.js';
import { describeChild, runNode } from './helpers/child.js';
import { parseXml } from './bench-apps-xml.js';

const SCRIPT = fileURLToPath(new URL('../bench/memory.js', import.meta.url));

test('SPECS: one per app with baselines; the size parameter is a flag of the app', async (t) => {
  t.deepEqual(Object.keys(SPECS).sort(), [...BASELINES.keys()].sort());
  for (const [name, spec] of Object.entries(SPECS)) {
    const app = (await loadApp(name))!;
    const flags = app.flags.map((f) => f.name);
    for (const k of Object.keys(paramsAt(spec, spec.calibration))) t.true(flags.includes(k), `${name}: --${k}`);
    t.true(Number.isInteger(spec.iterations) && spec.iterations >= 0, name);
  }
  t.is(unitsOf(SPECS['wa-tor']!, 100), 10_000);
  t.deepEqual(paramsAt(SPECS['wa-tor']!, 100), { width: 100, height: 100 });
  t.is(unitsOf(SPECS['structure']!, 100), 100);
  t.deepEqual(paramsAt(SPECS['structure']!, 100), { nodes: 100 });
  t.deepEqual(paramsAt(SPECS['generation']!, 64), { cross: 20, width: 64, height: 64 });
});

test('a search end to end at 2 MiB: game-of-life (grid side) and structure (nodes)', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'smmo-bench-memory-'));
  try {
    const out = join(dir, 'm.json');
    const plot = join(dir, 'm.svg');
    const r = await runNode([
      SCRIPT,
      ...['--apps', 'game-of-life,structure', '--budgets', '2', '--precision', '0.25'],
      ...['--iterations-game-of-life', '2', '--iterations-structure', '1', '--out', out, '--plot', plot],
    ]);
    t.is(r.code, 0, describeChild(r));
    const report = JSON.parse(readFileSync(out, 'utf8')) as {
      summary: {
        app: string;
        param: string;
        aos: { maxSize: number; maxUnits: number; failSize: number };
        smmo: { maxSize: number; maxUnits: number; failSize: number };
        ratio: number;
      }[];
      settings: { iterations: Record<string, number> };
    };
    t.deepEqual(report.settings.iterations, { 'game-of-life': 2, structure: 1 });
    t.deepEqual(
      report.summary.map((s) => [s.app, s.param]),
      [
        ['game-of-life', 'side'],
        ['structure', 'nodes'],
      ],
    );
    for (const s of report.summary)
      for (const impl of [s.aos, s.smmo]) {
        t.true(impl.maxSize > 0 && impl.maxSize < impl.failSize, `${s.app}: ${JSON.stringify(impl)}`);
        t.is(impl.maxUnits, s.param === 'side' ? impl.maxSize ** 2 : impl.maxSize);
      }
    // The SOA heap holds a structure node in far fewer bytes than a JS object graph does.
    t.true(report.summary.find((s) => s.app === 'structure')!.ratio > 1);
    t.notThrows(() => parseXml(readFileSync(plot, 'utf8')));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('--apps with an app without a size spec is a usage error (exit 2)', async (t) => {
  const r = await runNode([SCRIPT, '--apps', 'linux-scalability']);
  t.is(r.code, 2, describeChild(r));
  t.regex(r.stderr, /'linux-scalability' is not one of nbody, collision, wa-tor/);
});
