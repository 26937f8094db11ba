/**
 * The kernel modules are built from source, reproducibly: rebuilding wasm/ gives the bytes
 * that dist/wasm holds (the modules every other test ran), and cargo gives the same bytes
 * as the direct rustc build — for the simd build with the flags of wasm/.cargo/config.toml
 * (what `cargo build` and wasm-pack use), so that file cannot drift from the script.
 * Needs rustc with the wasm32 target (scripts/setup.mjs installs it; npm test's pretest).
 */
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SCRIPT = join(ROOT, 'scripts', 'build-wasm.mjs');

function run(args: string[]): { status: number | null; out: string } {
  const r = spawnSync(process.execPath, [SCRIPT, ...args], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

test('a rebuild from source gives the bytes in dist/wasm', (t) => {
  const r = run(['--check']);
  t.is(r.status, 0, r.out);
  t.regex(r.out, /same {2}smmo_simd\.wasm/);
  t.regex(r.out, /same {2}smmo_scalar\.wasm/);
});

test('the cargo build gives the same bytes as the direct rustc build', (t) => {
  if (!existsSync('/usr/bin/cargo')) {
    t.pass('no /usr/bin/cargo on this machine: the direct rustc route is the one the project uses');
    return;
  }
  const out = mkdtempSync(join(tmpdir(), 'smmo-cargo-'));
  try {
    const r = run(['--cargo', '--force', '--out', out]);
    t.is(r.status, 0, r.out);
    for (const f of ['smmo_simd.wasm', 'smmo_scalar.wasm']) {
      t.deepEqual(readFileSync(join(out, f)), readFileSync(join(ROOT, 'dist', 'wasm', f)), f);
    }
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});
