#!/usr/bin/env node
// The Rust half of `npm run lint`: every `unsafe` under wasm/src says why it is sound
// (scripts/check-unsafe.mjs: a `// SAFETY:` comment right above each unsafe block, a
// `# Safety` doc section on each unsafe fn), and the sources must be formatted as
// rustfmt formats them (wasm/rustfmt.toml: edition 2021, lines up to 140 columns).
// Debian's rustfmt (/usr/bin/rustfmt, the `rustfmt` package: scripts/setup.mjs installs
// it) — the one that matches the project's rustc 1.63 — not a rustup toolchain that
// may come first on PATH. `npm run format:rust` (this script with --write) formats them.
//
//
// Then clippy, with warnings as errors, when a `cargo clippy` is installed (rustup's: the
// machines CI runs on have one; Debian's rust-clippy 1.63 cannot read its own wasm32
// standard library, E0786). It checks the crate for the host target: the wasm32 target
// of rustup is not installed offline. So clippy sees the scalar build (the SIMD lane
// module is compiled only with simd128) and the allocator core, not the simd128 code.
// Without a cargo clippy it says so and skips (SMMO_REQUIRE_CLIPPY=1: fail instead).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkDir } from './check-unsafe.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const rustfmt = process.env.SMMO_RUSTFMT ?? '/usr/bin/rustfmt';
const write = process.argv.includes('--write');
// --wasm-dir DIR: lint a copy of wasm/ instead (test/lint-rust.test.ts).
const dirArg = process.argv.indexOf('--wasm-dir');
const wasmDir = dirArg > 0 ? process.argv[dirArg + 1] : join(root, 'wasm');

// The SAFETY comments first: they need no tool. With --write (formatting) they are not checked.
let failed = false;
if (!write) {
  const problems = checkDir(join(wasmDir, 'src'));
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
  join(wasmDir, 'rustfmt.toml'),
  ...(write ? [] : ['--check']),
  join(wasmDir, 'src', 'lib.rs'),
];
const r = spawnSync(rustfmt, args, { stdio: 'inherit' });
if (r.status !== 0) {
  if (!write) process.stderr.write('lint-rust: wasm/src is not formatted as rustfmt formats it; `npm run format:rust` fixes it.\n');
  process.exit(r.status ?? 1);
}
if (failed) process.exit(1);
if (!write) clippy();

function clippy() {
  const cargo = process.env.SMMO_CARGO ?? 'cargo';
  const version = spawnSync(cargo, ['clippy', '--version'], { encoding: 'utf8' });
  if (version.status !== 0) {
    const msg = `lint-rust: no \`${cargo} clippy\` on this machine: clippy skipped (a rustup toolchain with clippy runs it)`;
    if (process.env.SMMO_REQUIRE_CLIPPY === '1') {
      process.stderr.write(`${msg}; SMMO_REQUIRE_CLIPPY=1 makes that an error.\n`);
      process.exit(2);
    }
    process.stderr.write(`${msg}.\n`);
    return;
  }
  const vv = spawnSync(process.env.SMMO_CLIPPY_RUSTC ?? 'rustc', ['-vV'], { encoding: 'utf8' });
  const host = /^host: (\S+)$/m.exec(vv.stdout ?? '')?.[1];
  if (host === undefined) {
    process.stderr.write('lint-rust: could not read the host target from `rustc -vV`; clippy skipped.\n');
    return;
  }
  const r = spawnSync(
    cargo,
    ['clippy', '--offline', '--quiet', '--target', host, '--target-dir', join(tmpdir(), 'smmo-clippy'), '--', '-D', 'warnings'],
    { cwd: wasmDir, stdio: 'inherit' },
  );
  if (r.status !== 0) {
    process.stderr.write(`lint-rust: clippy (${version.stdout.trim()}, target ${host}) found problems in wasm/src.\n`);
    process.exit(r.status ?? 1);
  }
}
