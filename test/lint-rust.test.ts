/**
 * scripts/lint-rust.mjs, the Rust half of `npm run lint`: on a copy of wasm/ it passes as
 * the sources are, and fails on a clippy warning (clippy runs with warnings as errors when a
 * `cargo clippy` is installed; without one it says that it skipped clippy, and
 * SMMO_REQUIRE_CLIPPY=1 turns that into an error).
 */
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeChild, runNode } from './helpers/child.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SCRIPT = join(ROOT, 'scripts', 'lint-rust.mjs');
const hasClippy = spawnSync('cargo', ['clippy', '--version']).status === 0;

/** A copy of wasm/ (sources and config, no build output) in a temporary folder. */
function copyWasm(): string {
  const dir = mkdtempSync(join(tmpdir(), 'smmo-lint-rust-'));
  for (const f of ['src', '.cargo', 'Cargo.toml', 'rustfmt.toml']) cpSync(join(ROOT, 'wasm', f), join(dir, f), { recursive: true });
  return dir;
}

test('lint-rust passes on the sources as they are; with a clippy warning it fails when clippy is installed', async (t) => {
  t.timeout(600_000);
  const dir = copyWasm();
  try {
    const clean = await runNode([SCRIPT, '--wasm-dir', dir], { limitMs: 300_000 });
    t.is(clean.code, 0, describeChild(clean));
    // Clippy's precedence lint: `a * b | c * d` without parentheses.
    const lanes = join(dir, 'src', 'lanes.rs');
    const src = readFileSync(lanes, 'utf8');
    const bad = src.replace('((n & 1) * 0xff) | ((n & 2) * 0x7f80)', '(n & 1) * 0xff | (n & 2) * 0x7f80');
    t.not(bad, src, 'the line the test changes is still in lanes.rs');
    writeFileSync(lanes, bad);
    const r = await runNode([SCRIPT, '--wasm-dir', dir], { limitMs: 300_000 });
    if (hasClippy) {
      t.not(r.code, 0, describeChild(r));
      t.regex(r.stderr, /clippy .* found problems in wasm\/src/);
    } else {
      t.is(r.code, 0, describeChild(r));
      t.regex(r.stderr, /clippy skipped/);
      const required = await runNode([SCRIPT, '--wasm-dir', dir], { limitMs: 300_000, env: { ...process.env, SMMO_REQUIRE_CLIPPY: '1' } });
      t.is(required.code, 2, describeChild(required));
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('without a cargo clippy, lint-rust says it skipped clippy; SMMO_REQUIRE_CLIPPY=1 makes that an error', async (t) => {
  const dir = copyWasm();
  try {
    const env = { ...process.env, SMMO_CARGO: join(dir, 'no-such-cargo') };
    const r = await runNode([SCRIPT, '--wasm-dir', dir], { limitMs: 120_000, env });
    t.is(r.code, 0, describeChild(r));
    t.regex(r.stderr, /no `.*no-such-cargo clippy` on this machine: clippy skipped/);
    const required = await runNode([SCRIPT, '--wasm-dir', dir], { limitMs: 120_000, env: { ...env, SMMO_REQUIRE_CLIPPY: '1' } });
    t.is(required.code, 2, describeChild(required));
    t.regex(required.stderr, /SMMO_REQUIRE_CLIPPY=1 makes that an error/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
