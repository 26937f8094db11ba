#!/usr/bin/env node
// Every `unsafe` in the Rust sources says why it is sound, in a comment right above it
// (part of `npm run lint`, through scripts/lint-rust.mjs; Rust 1.63's clippy, whose
// `undocumented_unsafe_blocks` lint checks the same, cannot run on this crate: see there).
//
//   node scripts/check-unsafe.mjs [DIR]   check every .rs file under DIR (default wasm/src)
//
// The rule, for each `unsafe` keyword in code (not in a comment or a string literal):
// * the comment lines directly above the line that holds it (attribute lines `#[…]` may
//   stand between) contain `SAFETY:`, as `// SAFETY: why the caller's guarantees make
//   this sound (bounds, alignment, no aliasing &mut, atomics where others may write)`.
//   When that line starts by closing a bracket (`} = unsafe { T::read(p) };` after a
//   pattern rustfmt spread over lines), the comment above the statement's first line counts;
// * or, for an `unsafe fn` / `unsafe extern "C" fn` / `unsafe trait` (a contract, not a
//   use), its doc comment has a `# Safety` section saying what the caller guarantees —
//   Rust's convention; a `// SAFETY:` comment is accepted there as well. An `unsafe fn`
//   that implements a trait's method (in an `impl Trait for Type` block) needs neither:
//   the trait's declaration has the `# Safety` section. The unsafe blocks inside it do.
// A line with several `unsafe`s needs the comment once. Exit 1 with `file:line: …` for
// every `unsafe` without one.
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The source with comments and string/char literals blanked (same length, newlines kept), so
 * that a keyword search sees code only. Handles line comments, nested block comments, "…", b"…", r#"…"#, '…'.
 */
export function codeOnly(src) {
  const out = src.split('');
  const blank = (from, to) => {
    for (let k = from; k < to; k++) if (out[k] !== '\n') out[k] = ' ';
  };
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    const next = src[i + 1];
    if (c === '/' && next === '/') {
      const end = src.indexOf('\n', i);
      const stop = end < 0 ? src.length : end;
      blank(i, stop);
      i = stop;
    } else if (c === '/' && next === '*') {
      let depth = 1;
      let k = i + 2;
      while (k < src.length && depth > 0) {
        if (src[k] === '/' && src[k + 1] === '*') {
          depth++;
          k += 2;
        } else if (src[k] === '*' && src[k + 1] === '/') {
          depth--;
          k += 2;
        } else k++;
      }
      blank(i, k);
      i = k;
    } else if (c === 'r' && /^r#*"/.test(src.slice(i, i + 260)) && !/[A-Za-z0-9_]/.test(src[i - 1] ?? '')) {
      const hashes = /^r(#*)"/.exec(src.slice(i, i + 260))[1];
      const close = '"' + hashes;
      const start = i + 2 + hashes.length;
      const end = src.indexOf(close, start);
      const stop = end < 0 ? src.length : end + close.length;
      blank(i, stop);
      i = stop;
    } else if (c === '"') {
      let k = i + 1;
      while (k < src.length && src[k] !== '"') k += src[k] === '\\' ? 2 : 1;
      blank(i, k + 1);
      i = k + 1;
    } else if (c === "'") {
      // A char literal ('x', '\n', '\u{..}') or a lifetime ('a): only the former is blanked.
      const m = /^'(?:\\(?:u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.)|[^\\'\n])'/.exec(src.slice(i, i + 16));
      if (m) {
        blank(i, i + m[0].length);
        i += m[0].length;
      } else i++;
    } else i++;
  }
  return out.join('');
}

/** Problems in one file's text: `{ line, message }` (1-based lines). */
export function undocumentedUnsafe(src) {
  const lines = src.split('\n');
  const code = codeOnly(src).split('\n');
  const problems = [];
  for (let n = 0; n < code.length; n++) {
    const on = [...code[n].matchAll(/\bunsafe\b/g)];
    if (on.length === 0) continue;
    // The comment block right above the line, or above the line where its statement starts
    // when the line starts by closing a bracket (`} = unsafe { T::read(p) };` after a
    // multi-line pattern): the line of the matching opening bracket, and so on.
    const comment = [];
    for (const start of statementLines(code, n)) comment.push(...commentAbove(lines, start));
    const text = comment.join('\n');
    const contracts = on.filter((m) => /^unsafe\s+(?:extern\s+(?:"[^"]*"\s*)?)?(?:fn|trait)\b/.test(code[n].slice(m.index)));
    const isContract = contracts.length > 0;
    const ok =
      /SAFETY:/.test(text) ||
      (isContract && comment.some((l) => /^\/\/[/!]\s*# Safety\b/.test(l))) ||
      // A trait's unsafe method implemented in an `impl Trait for Type` block: the trait's
      // declaration carries the contract (its `# Safety`), as rustdoc and clippy see it.
      (isContract && /^\s*unsafe\s+fn\b/.test(code[n]) && inTraitImpl(code, n, contracts[0].index));
    if (!ok)
      problems.push({
        line: n + 1,
        message: isContract
          ? '`unsafe fn` without a `# Safety` doc section (or a `// SAFETY:` comment) saying what its callers guarantee'
          : '`unsafe` without a `// SAFETY:` comment right above it saying why it is sound',
      });
  }
  return problems;
}

/** The comment lines directly above line `n` (attribute lines `#[…]` may stand between). */
function commentAbove(lines, n) {
  const comment = [];
  for (let k = n - 1; k >= 0; k--) {
    const t = lines[k].trim();
    if (t.startsWith('//')) comment.push(t);
    else if (!(t.startsWith('#[') || t.startsWith('#!['))) break;
  }
  return comment;
}

/**
 * Line `n`, and while the line (code only) starts with a closing bracket, the line of the
 * bracket it closes.
 */
function statementLines(code, n) {
  const out = [n];
  let line = n;
  for (;;) {
    const m = /^\s*[)}\]]/.exec(code[line]);
    if (!m) return out;
    // Walk back from that bracket to the one it closes.
    let depth = 0;
    let l = line;
    let col = m[0].length - 1;
    let found = -1;
    while (l >= 0 && found < 0) {
      for (let c = col; c >= 0; c--) {
        const ch = code[l][c];
        if (ch === ')' || ch === '}' || ch === ']') depth++;
        else if (ch === '(' || ch === '{' || ch === '[') {
          depth--;
          if (depth === 0) {
            found = l;
            break;
          }
        }
      }
      l--;
      if (l >= 0) col = code[l].length - 1;
    }
    if (found < 0 || found === line) return out;
    out.push(found);
    line = found;
  }
}

/** Whether the item at line `n`, column `col` stands directly in an `impl Trait for Type { … }` block. */
function inTraitImpl(code, n, col) {
  let depth = 0;
  for (let l = n; l >= 0; l--) {
    for (let c = l === n ? col - 1 : code[l].length - 1; c >= 0; c--) {
      const ch = code[l][c];
      if (ch === ')' || ch === '}' || ch === ']') depth++;
      else if (ch === '(' || ch === '{' || ch === '[') {
        if (depth === 0) {
          if (ch !== '{') return false;
          // The opener's statement: its line and, for a header wrapped by rustfmt, the lines above it.
          const head = [];
          for (let k = l; k >= 0 && k > l - 4; k--) {
            head.unshift(code[k]);
            if (/^\s*(?:unsafe\s+)?impl\b/.test(code[k])) break;
          }
          return /^\s*(?:unsafe\s+)?impl\b[^{]*\bfor\b/.test(head.join(' '));
        }
        depth--;
      }
    }
  }
  return false;
}

function rustFiles(dir) {
  const files = [];
  for (const e of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
    if (e.isDirectory()) files.push(...rustFiles(join(dir, e.name)));
    else if (e.name.endsWith('.rs')) files.push(join(dir, e.name));
  }
  return files;
}

/** Every problem under `dir`, as `path:line: message` lines (paths relative to the cwd). */
export function checkDir(dir) {
  const out = [];
  for (const f of rustFiles(dir)) {
    for (const p of undocumentedUnsafe(readFileSync(f, 'utf8'))) out.push(`${relative(process.cwd(), f) || f}:${p.line}: ${p.message}`);
  }
  return out;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const root = join(dirname(fileURLToPath(import.meta.url)), '..');
  const dir = process.argv[2] ?? join(root, 'wasm', 'src');
  const problems = checkDir(dir);
  for (const p of problems) process.stderr.write(`${p}\n`);
  if (problems.length > 0) {
    process.stderr.write(
      `check-unsafe: ${problems.length} unsafe without a SAFETY comment (scripts/check-unsafe.mjs says what it wants)\n`,
    );
    process.exit(1);
  }
  process.stdout.write(`check-unsafe: every unsafe under ${relative(process.cwd(), dir) || dir} has its SAFETY comment\n`);
}
