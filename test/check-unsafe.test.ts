/**
 * scripts/check-unsafe.mjs, the SAFETY-comment rule of `npm run lint` (scripts/lint-rust.mjs):
 *  - every `unsafe` in wasm/src has a `// SAFETY:` comment right above it (an unsafe fn: a
 *    `# Safety` doc section, or none when it implements a trait's unsafe method);
 *  - the rule itself, on small sources: which `unsafe`s it reports, by line, and which it
 *    does not (comments, strings, multi-line statements, attributes, trait impls);
 *  - the command's exit status and `file:line` report.
 */
import test from 'ava';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeChild, runNode } from './helpers/child.js';

interface CheckUnsafe {
  undocumentedUnsafe(src: string): { line: number; message: string }[];
  checkDir(dir: string): string[];
}

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SCRIPT = join(ROOT, 'scripts', 'check-unsafe.mjs');
const lib = (await import(new URL('../../scripts/check-unsafe.mjs', import.meta.url).href)) as CheckUnsafe;

/** The lines the rule reports in `lines` (1-based). */
const reported = (lines: string[]): number[] => lib.undocumentedUnsafe(lines.join('\n')).map((p) => p.line);

test('every unsafe in wasm/src has its SAFETY comment', (t) => {
  t.deepEqual(lib.checkDir(join(ROOT, 'wasm', 'src')), []);
});

test('an unsafe block needs a SAFETY: comment right above its line', (t) => {
  t.deepEqual(reported(['fn f(p: *const u32) -> u32 {', '    // SAFETY: p is valid.', '    unsafe { *p }', '}']), []);
  t.deepEqual(reported(['fn f(p: *const u32) -> u32 {', '    unsafe { *p }', '}']), [2]);
  // Not right above: a blank line or code between.
  t.deepEqual(reported(['    // SAFETY: p is valid.', '', '    let a = unsafe { *p };']), [3]);
  t.deepEqual(reported(['    // SAFETY: p is valid.', '    let b = 1;', '    let a = unsafe { *p };']), [3]);
  // The word must be SAFETY: (what reviewers and clippy look for).
  t.deepEqual(reported(['    // Safe: p is valid.', '    let a = unsafe { *p };']), [2]);
  // A multi-line comment counts when one of its lines says SAFETY:.
  t.deepEqual(reported(['    // SAFETY: p is valid,', '    // and aligned.', '    let a = unsafe { *p };']), []);
  // One comment for one line, even with two blocks on it.
  t.deepEqual(reported(['    // SAFETY: both valid.', '    let a = unsafe { *p } + unsafe { *q };']), []);
  // unsafe impl needs it as well.
  t.deepEqual(reported(['struct S;', 'unsafe impl Send for S {}']), [2]);
  t.deepEqual(reported(['struct S;', '// SAFETY: S holds nothing.', 'unsafe impl Send for S {}']), []);
});

test('a statement that starts on an earlier line takes the comment above its first line', (t) => {
  const lines = [
    'fn f(params: u32) {',
    '    // SAFETY: the host wrote the table.',
    '    let Table {',
    '        a,',
    '        b,',
    '    } = unsafe { Table::read(params) };',
    '}',
  ];
  t.deepEqual(reported(lines), []);
  t.deepEqual(reported(lines.filter((l) => !l.includes('SAFETY'))), [5]);
});

test('an unsafe fn needs a # Safety doc section, unless it implements a trait method', (t) => {
  const documented = [
    '/// Reads.',
    '///',
    '/// # Safety',
    '/// p is valid.',
    '#[inline(always)]',
    'pub unsafe fn read(p: *const u32) -> u32 {',
    '    0',
    '}',
  ];
  t.deepEqual(reported(documented), []);
  t.deepEqual(reported(['/// Reads.', '#[no_mangle]', 'pub unsafe extern "C" fn read(p: u32) -> u32 {', '    0', '}']), [3]);
  // In an inherent impl: needs its own.
  t.deepEqual(reported(['impl S {', '    unsafe fn read(&self) -> u32 {', '        0', '    }', '}']), [2]);
  // Implementing a trait's unsafe method: the trait's declaration carries the contract.
  t.deepEqual(
    reported(['impl Mem for Atomic {', '    #[inline(always)]', '    unsafe fn load(w: u32) -> u32 {', '        0', '    }', '}']),
    [],
  );
  t.deepEqual(
    reported([
      'impl<T: Copy> Vector',
      '    for Wrap<T>',
      '{',
      '    unsafe fn load(p: *const T) -> Self {',
      '        todo!()',
      '    }',
      '}',
    ]),
    [],
  );
  // ... but the block inside still needs its comment.
  t.deepEqual(reported(['impl Mem for Atomic {', '    unsafe fn load(w: u32) -> u32 {', '        unsafe { *ptr(w) }', '    }', '}']), [3]);
});

test('unsafe in comments, doc comments, strings and identifiers is not code', (t) => {
  t.deepEqual(
    reported([
      '//! Nothing unsafe here.',
      '/// An unsafe helper? No.',
      '/* unsafe { block comment } /* nested unsafe */ still comment */',
      'const S: &str = "unsafe { in a string }";',
      'const B: &[u8] = b"unsafe";',
      'const R: &str = r#"unsafe "quoted" inside"#;',
      "const C: char = '\"'; // a quote char must not open a string: unsafe",
      '#![deny(unsafe_op_in_unsafe_fn)]',
      "fn f<'a>(x: &'a u32) -> &'a u32 { x }",
    ]),
    [],
  );
});

test('the command exits 1 and names file:line for each unsafe without a comment', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'smmo-check-unsafe-'));
  try {
    mkdirSync(join(dir, 'sub'));
    writeFileSync(join(dir, 'ok.rs'), '// SAFETY: fine.\nstatic X: u32 = unsafe { 0 };\n');
    writeFileSync(join(dir, 'sub', 'bad.rs'), 'fn f(p: *const u32) -> u32 {\n    unsafe { *p }\n}\n');
    const bad = await runNode([SCRIPT, dir], { cwd: dir });
    t.is(bad.code, 1, describeChild(bad));
    t.regex(bad.stderr, /sub\/bad\.rs:2: `unsafe` without a `\/\/ SAFETY:` comment/);
    t.notRegex(bad.stderr, /ok\.rs/);
    rmSync(join(dir, 'sub'), { recursive: true });
    const good = await runNode([SCRIPT, dir], { cwd: dir });
    t.is(good.code, 0, describeChild(good));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
