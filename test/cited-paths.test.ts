/**
 * The project's docs stand on their own: every repository file that a code comment or a
 * Markdown document cites (`runtime/allocator.ts`, `docs/benchmarks.md`, `wasm/README.md`,
 * a bare `heap.ts` …) exists in the repository. A citation of a file that lives elsewhere
 * (design notes of the team, another checkout) fails here with the file and line.
 *
 * What counts as a citation: a token that looks like a file path with one of the
 * extensions below, in a comment of a source file (// … and /* … *\/ lines) or anywhere
 * in a Markdown file. It resolves when it names a file relative to the repository root,
 * to the citing file's folder, or to that folder under dist/ (compiled code resolves
 * `../../package.json` from dist/cli/); a `.js` name also resolves to its `.ts` source;
 * a bare name (no folder) resolves when a file of that name exists anywhere in the
 * repository. Not citations: absolute paths, URLs, outputs that are not in the
 * repository (dist/, node_modules/, bench-results/), string literals of example code
 * (`new URL('./model.js', import.meta.url)`: right after a quote), and the names in
 * EXTERNAL.
 */
import test from 'ava';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Names that look like files but name something outside the repository, each on purpose. */
const EXTERNAL = new Map([
  ['Node.js', 'the JavaScript runtime'],
  ['benchmark.js', 'the npm package `benchmark`'],
  ['tm.pgm', "the input image of DynaSOAr's game-of-life example (in its repository, not shipped with smmo)"],
]);
/** Folders whose files are made by builds and benchmarks, not kept in the repository. */
const GENERATED = /^(dist|node_modules|wasm\/target|bench-results|coverage)\//;

const CODE = /\.(ts|mjs|js|rs|wgsl|c)$/;
const DOC = /\.md$/;
const TOKEN =
  /(?<![\w.@/-])(\/?(?:\.{1,2}\/)*(?:[\w.-]+\/)*[\w-]+(?:\.[\w-]+)*\.(?:ts|mjs|js|md|rs|toml|wgsl|json|c|sh|pgm|svg))(?![\w/-])/g;

/** Tracked files and new files git does not ignore. */
function repoFiles(): string[] {
  const out = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8' });
  return [...new Set(out.split('\n').filter((f) => f !== '' && existsSync(join(ROOT, f))))];
}

/** [line number, text] of the lines (or line tails) that are comments; every line of a Markdown file. */
export function commentLines(text: string, file: string): [number, string][] {
  const lines = text.split('\n');
  if (DOC.test(file)) return lines.map((l, i) => [i + 1, l]);
  const out: [number, string][] = [];
  let inBlock = false;
  lines.forEach((l, i) => {
    const t = l.trim();
    if (inBlock) {
      out.push([i + 1, l]);
      if (t.includes('*/')) inBlock = false;
      return;
    }
    if (t.startsWith('/*')) {
      out.push([i + 1, l]);
      if (!t.includes('*/')) inBlock = true;
      return;
    }
    const c = l.indexOf('//');
    if (c >= 0 && !/[a-z]+:$/.test(l.slice(0, c))) out.push([i + 1, l.slice(c)]);
  });
  return out;
}

/** Citations in `file` that name no file of the repository, as "file:line: token". */
export function missingCitations(file: string, text: string, files: ReadonlySet<string>, names: ReadonlySet<string>): string[] {
  const bad: string[] = [];
  for (const [n, line] of commentLines(text, file)) {
    for (const m of line.matchAll(TOKEN)) {
      const p = m[1]!;
      if (p.startsWith('/') || GENERATED.test(p) || EXTERNAL.has(p)) continue;
      if (/\bhttps?:\/\/\S*$/.test(line.slice(0, m.index))) continue; // part of a URL
      if (m.index > 0 && (line[m.index - 1] === "'" || line[m.index - 1] === '"')) continue; // a string literal of example code
      const candidates = p.endsWith('.js') ? [p, p.slice(0, -3) + '.ts'] : [p];
      const found = candidates.some((c) =>
        c.includes('/')
          ? [c, join(dirname(file), c), join('dist', dirname(file), c)].some((r) => files.has(r) || existsSync(join(ROOT, r)))
          : names.has(c),
      );
      if (!found) bad.push(`${file}:${n}: ${p}`);
    }
  }
  return bad;
}

test('every repository file cited in a comment or a document exists', (t) => {
  const files = repoFiles();
  t.true(files.length > 50, 'git ls-files lists the repository');
  const set = new Set(files);
  const names = new Set(files.map((f) => basename(f)));
  const bad: string[] = [];
  let checked = 0;
  for (const f of files) {
    // This file's own fixtures cite missing files on purpose.
    if ((!CODE.test(f) && !DOC.test(f)) || f === 'test/cited-paths.test.ts') continue;
    checked++;
    bad.push(...missingCitations(f, readFileSync(join(ROOT, f), 'utf8'), set, names));
  }
  t.true(checked > 50);
  t.deepEqual(bad, [], `cited but not in the repository:\n  ${bad.join('\n  ')}`);
});

test('the checker finds citations of missing files, and accepts existing ones', (t) => {
  const files = new Set(['runtime/heap.ts', 'README.md', 'package.json']);
  const names = new Set(['heap.ts', 'README.md', 'package.json']);
  const code = [
    '/**',
    ' * See DESIGN.md "The heap" and runtime/heap.ts; test/wasm-layout.test.ts checks it.',
    ' */',
    'const x = 1; // heap.ts H1, APPS.md',
    "const url = 'DESIGN.md'; // not a comment before the slashes",
  ].join('\n');
  t.deepEqual(missingCitations('runtime/x.ts', code, files, names), [
    'runtime/x.ts:2: DESIGN.md',
    'runtime/x.ts:2: test/wasm-layout.test.ts',
    'runtime/x.ts:4: APPS.md',
  ]);
  t.deepEqual(
    missingCitations(
      'docs/x.md',
      "see [the heap](../runtime/heap.ts), ./worker.js, Node.js and new URL('./model.js', import.meta.url)",
      files,
      names,
    ),
    ['docs/x.md:1: ./worker.js'],
  );
});
