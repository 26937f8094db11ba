#!/usr/bin/env node
// The Rust half of `npm run lint`: every `unsafe` under wasm/src says why it is sound
// (scripts/check-unsafe.mjs: a `// SAFETY:` comment right above each unsafe block, a
// `# Safety` doc section on each unsafe fn), and the sources must be formatted as
// rustfmt formats them (wasm/rustfmt.toml: edition 2021, lines up to 140 columns).
// Debian's rustfmt (/usr/bin/rustfmt, the `rustfmt` package: scripts/setup.mjs installs
// it) — the one that matches the project's rustc 1.63 — not a rustup toolchain that
// may come first on PATH. `npm run format:rust` (this script with --write) formats them.
//
// Not here: clippy. Debian's rust-clippy 1.63 cannot read its own wasm32 standard library
// ("found invalid metadata files for crate `core`", E0786), and on the host target the
// SIMD kernels' core::arch::wasm32 does not exist; so clippy does not run in CI.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkDir } from './check-unsafe.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const rustfmt = process.env.SMMO_RUSTFMT ?? '/usr/bin/rustfmt';
const write = process.argv.includes('--write');

// The SAFETY comments first: they need no tool. With --write (formatting) they are not checked.
let failed = false;
if (!write) {
  const problems = checkDir(join(root, 'wasm', 'src'));
  for (const p of problems) process.stderr.write(`${p}\n`);
  if (problems.length > 0) {
    process.stderr.write(
      `lint-rust: ${problems.length} unsafe without a SAFETY comment; say why each is sound (scripts/check-unsafe.mjs describes the rule).\n`,
    );
    failed = true;
  }
}

if (!existsSync(rustfmt)) {
  process.stderr.write(
    `lint-rust: ${rustfmt} not found. Install Debian's rustfmt (node scripts/setup.mjs does: apt-get install -y rustfmt), or point SMMO_RUSTFMT at a rustfmt 1.5 (Rust 1.63).\n`,
  );
  process.exit(2);
}
const args = [
  '--edition',
  '2021',
  '--config-path',
  join(root, 'wasm', 'rustfmt.toml'),
  ...(write ? [] : ['--check']),
  join(root, 'wasm', 'src', 'lib.rs'),
];
const r = spawnSync(rustfmt, args, { stdio: 'inherit' });
if (r.status !== 0) {
  if (!write) process.stderr.write('lint-rust: wasm/src is not formatted as rustfmt formats it; `npm run format:rust` fixes it.\n');
  process.exit(r.status ?? 1);
}
if (failed) process.exit(1);
