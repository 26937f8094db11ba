/**
 * The import graph of the project's TypeScript (read with the TypeScript compiler's own
 * import scanner): dependencies point one way — runtime/ at the bottom, then workers/
 * (and the root index.ts, which joins them), then apps/, then cli/, bench/, examples/ —
 * and no two files import each other, directly or around a circle (a strongly connected
 * component of the graph of more than one file; type-only imports count too: a cycle of
 * types is still two files that cannot be read, or moved, one without the other).
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

/**
 * The import cycles of `g`: its strongly connected components of more than one file, and
 * files that import themselves (Tarjan's algorithm, iterative, so that depth is no limit).
 */
function cycles(g: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  let next = 0;
  for (const root of g.keys()) {
    if (index.has(root)) continue;
    // Frames: [file, position in its dependency list].
    const frames: [string, number][] = [[root, 0]];
    index.set(root, next);
    low.set(root, next++);
    stack.push(root);
    onStack.add(root);
    while (frames.length > 0) {
      const frame = frames[frames.length - 1]!;
      const [v, i] = frame;
      const deps = (g.get(v) ?? []).filter((d) => g.has(d));
      if (i < deps.length) {
        frame[1]++;
        const w = deps[i]!;
        if (!index.has(w)) {
          index.set(w, next);
          low.set(w, next++);
          stack.push(w);
          onStack.add(w);
          frames.push([w, 0]);
        } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
        continue;
      }
      frames.pop();
      const parent = frames[frames.length - 1];
      if (parent) low.set(parent[0], Math.min(low.get(parent[0])!, low.get(v)!));
      if (low.get(v) === index.get(v)) {
        const scc: string[] = [];
        let w: string;
        do {
          w = stack.pop()!;
          onStack.delete(w);
          scc.push(w);
        } while (w !== v);
        if (scc.length > 1 || (g.get(v) ?? []).includes(v)) out.push(scc.sort());
      }
    }
  }
  return out;
}

test('no import cycle between files (type-only imports included)', (t) => {
  const g = importGraph();
  t.deepEqual(cycles(g), []);
});

test('the cycle check finds cycles (the checker itself works)', (t) => {
  const g = new Map<string, string[]>([
    ['a.ts', ['b.ts']],
    ['b.ts', ['c.ts', 'x/outside.ts']],
    ['c.ts', ['a.ts']],
    ['d.ts', ['a.ts', 'e.ts']],
    ['e.ts', ['e.ts']],
    ['f.ts', []],
  ]);
  t.deepEqual(cycles(g), [['a.ts', 'b.ts', 'c.ts'], ['e.ts']]);
  g.set('c.ts', []);
  t.deepEqual(cycles(g), [['e.ts']]);
  // And on the real graph with one import added: runtime/errors.ts → runtime/heap.ts (heap.ts imports errors.ts).
  const real = importGraph();
  t.true(real.get('runtime/heap.ts')!.includes('runtime/errors.ts'));
  real.set('runtime/errors.ts', [...real.get('runtime/errors.ts')!, 'runtime/heap.ts']);
  t.true(cycles(real).some((c) => c.includes('runtime/errors.ts') && c.includes('runtime/heap.ts')));
});

test('the layer check sees a wrong import (the checker itself works)', (t) => {
  t.true(layer('runtime/thread.ts') < layer('workers/pool.ts'));
  t.true(layer('index.ts') > layer('runtime/index.ts'));
  t.true(layer('apps/nbody/body.ts') > layer('index.ts'));
  t.true(layer('cli/run.ts') > layer('apps/app.ts'));
});
