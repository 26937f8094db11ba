/**
 * The kernel modules that smmo ships (wasm/pkg/, committed and in the npm package) are
 * what wasm/src builds, reproducibly: rebuilding from source gives the committed bytes
 * (so a change to wasm/src without `node scripts/build-wasm.mjs` and a commit of wasm/pkg
 * fails here), and cargo gives the same bytes as the direct rustc build — for the simd
 * build with the flags of wasm/.cargo/config.toml (what `cargo build` and wasm-pack use),
 * so that file cannot drift from the script. The default build does not rebuild over the
 * committed files while the sources are unchanged. Needs rustc with the wasm32 target
 * (scripts/setup.mjs installs it; npm test's pretest).
 */
import test from 'ava';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeChild, runNode } from './helpers/child.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PKG = join(ROOT, 'wasm', 'pkg');

function build(args: string[], root = ROOT): ReturnType<typeof runNode> {
  return runNode([join(root, 'scripts', 'build-wasm.mjs'), ...args], { cwd: root });
}

/** A copy of what build-wasm.mjs reads and writes (scripts/, wasm/ without target/), to change sources in. */
function scratchCopy(): string {
  const dir = mkdtempSync(join(tmpdir(), 'smmo-wasm-src-'));
  cpSync(join(ROOT, 'scripts'), join(dir, 'scripts'), { recursive: true });
  cpSync(join(ROOT, 'wasm'), join(dir, 'wasm'), { recursive: true, filter: (src) => !src.includes(join('wasm', 'target')) });
  return dir;
}

test('the runtime loads the shipped modules from wasm/pkg, listed in the package files', async (t) => {
  const { defaultWasmDir } = await import('../runtime/wasm.js');
  t.is(join(defaultWasmDir()), join(PKG, '/'));
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { files: string[] };
  t.true(pkg.files.includes('wasm/pkg'));
  const manifest = JSON.parse(readFileSync(join(PKG, 'build.json'), 'utf8')) as { rustc: string; files: Record<string, unknown> };
  t.deepEqual(Object.keys(manifest.files).sort(), ['smmo_scalar.wasm', 'smmo_simd.wasm']);
  t.regex(manifest.rustc, /^rustc \d+\.\d+\.\d+/);
});

test('a rebuild from source gives the bytes committed in wasm/pkg', async (t) => {
  const r = await build(['--check']);
  t.is(r.code, 0, describeChild(r));
  t.regex(r.stdout, /same {2}smmo_simd\.wasm/);
  t.regex(r.stdout, /same {2}smmo_scalar\.wasm/);
});

test('a change to wasm/src without a rebuild fails the check; the default build then rebuilds', async (t) => {
  const dir = scratchCopy();
  try {
    writeFileSync(
      join(dir, 'wasm', 'src', 'lib.rs'),
      readFileSync(join(dir, 'wasm', 'src', 'lib.rs'), 'utf8') + '\n#[no_mangle]\npub extern "C" fn smmo_test_probe() -> u32 {\n    7\n}\n',
    );
    const check = await build(['--check'], dir);
    t.is(check.code, 1, describeChild(check));
    t.regex(check.stdout, /DIFFERENT {2}smmo_simd\.wasm/);
    t.regex(check.stdout, /DIFFERENT {2}the sources or flags changed/);
    t.regex(check.stderr, /rebuild them with `node scripts\/build-wasm\.mjs --force` and commit wasm\/pkg\//);

    const again = await build([], dir);
    t.is(again.code, 0, describeChild(again));
    t.regex(again.stdout, /wrote .*wasm\/pkg/);
    t.notDeepEqual(readFileSync(join(dir, 'wasm', 'pkg', 'smmo_simd.wasm')), readFileSync(join(PKG, 'smmo_simd.wasm')));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('with unchanged sources the default build (what setup runs) leaves the committed files alone', async (t) => {
  const before = ['smmo_simd.wasm', 'smmo_scalar.wasm', 'build.json'].map((f) => statSync(join(PKG, f)).mtimeMs);
  const r = await build([]);
  t.is(r.code, 0, describeChild(r));
  t.regex(r.stdout, /is up to date/);
  t.deepEqual(
    ['smmo_simd.wasm', 'smmo_scalar.wasm', 'build.json'].map((f) => statSync(join(PKG, f)).mtimeMs),
    before,
  );
});

test('the cargo build gives the same bytes as the direct rustc build', async (t) => {
  if (!existsSync('/usr/bin/cargo')) {
    t.pass('no /usr/bin/cargo on this machine: the direct rustc route is the one the project uses');
    return;
  }
  const out = mkdtempSync(join(tmpdir(), 'smmo-cargo-'));
  try {
    const r = await build(['--cargo', '--force', '--out', out]);
    t.is(r.code, 0, describeChild(r));
    for (const f of ['smmo_simd.wasm', 'smmo_scalar.wasm']) {
      t.deepEqual(readFileSync(join(out, f)), readFileSync(join(PKG, f)), f);
    }
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});
