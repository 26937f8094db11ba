/**
 * The import graph of the project's TypeScript (read with the TypeScript compiler's own
 * import scanner): dependencies point one way — runtime/ at the bottom, then workers/
 * (and the root index.ts, which joins them), then apps/, then cli/, bench/, examples/ —
 * and no two files import each other, directly or around a circle.
 */
import test from 'ava';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

function sources(): string[] {
  const out: string[] = [join(root, 'index.ts')];
  const walk = (d: string): void => {
    for (const e of readdirSync(d)) {
      const p = join(d, e);
      if (statSync(p).isDirectory()) walk(p);
      else if (p.endsWith('.ts') && !p.endsWith('.d.ts')) out.push(p);
    }
  };
  for (const d of ['runtime', 'workers', 'apps', 'cli', 'bench', 'examples', 'test']) walk(join(root, d));
  return out;
}

/** file (repo-relative) → the repo files it imports (static, dynamic and type-only imports alike). */
function importGraph(): Map<string, string[]> {
  const g = new Map<string, string[]>();
  for (const f of sources()) {
    const info = ts.preProcessFile(readFileSync(f, 'utf8'), true, true);
    const deps: string[] = [];
    for (const i of info.importedFiles) {
      if (!i.fileName.startsWith('.')) continue;
      deps.push(relative(root, resolve(dirname(f), i.fileName)).replace(/\.js$/, '.ts'));
    }
    g.set(relative(root, f), deps);
  }
  return g;
}

/** The layer of a file: a file may import files of its own layer or lower ones. */
function layer(file: string): number {
  if (file.startsWith('runtime/')) return 0;
  if (file.startsWith('workers/') || file === 'index.ts') return 1;
  if (file.startsWith('apps/')) return 2;
  if (file.startsWith('cli/') || file.startsWith('bench/') || file.startsWith('examples/')) return 3;
  return 4; // tests
}

test('layers: runtime/ imports nothing above it; workers/ no apps, cli or bench; apps/ no cli or bench', (t) => {
  const g = importGraph();
  t.true(g.size > 100, `the scanner found ${g.size} files`);
  const wrong: string[] = [];
  for (const [f, deps] of g) for (const d of deps) if (layer(d) > layer(f)) wrong.push(`${f} → ${d}`);
  t.deepEqual(wrong, []);
});

test('the layer check sees a wrong import (the checker itself works)', (t) => {
  t.true(layer('runtime/thread.ts') < layer('workers/pool.ts'));
  t.true(layer('index.ts') > layer('runtime/index.ts'));
  t.true(layer('apps/nbody/body.ts') > layer('index.ts'));
  t.true(layer('cli/run.ts') > layer('apps/app.ts'));
});
