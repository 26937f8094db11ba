#!/usr/bin/env node
// Make a fresh clone ready to run and test: npm packages, the Rust → wasm32 toolchain,
// the TypeScript build and the WebAssembly build. Each step is skipped when its
// result is already there. Used by `npm test` (pretest) and by .ci/run.
//
//   node scripts/setup.mjs            # everything that is missing
//   SMMO_SETUP_NO_APT=1 ...           # never call apt-get; fail with instructions instead
//   SMMO_SETUP_NO_GPU=1 ...           # skip the software WebGPU packages (chromium, libvulkan1)
//
// apt-get waits for an apt/dpkg lock another process holds (at most 5 minutes, saying
// which lock and which process); see setup-lib.mjs.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { lldRuns, neededPackages, runApt } from './setup-lib.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const log = (msg) => process.stderr.write(`[setup] ${msg}\n`);

function run(cmd, args, opts = {}) {
  log(`$ ${cmd} ${args.join(' ')}`);
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', ...opts });
  if (r.status !== 0) {
    log(`failed: ${cmd} ${args.join(' ')} (exit ${r.status ?? r.signal})`);
    process.exit(r.status || 1);
  }
}

function newest(dir, exts) {
  let t = 0;
  if (!existsSync(dir)) return 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) t = Math.max(t, newest(p, exts));
    else if (exts.some((x) => e.name.endsWith(x))) t = Math.max(t, statSync(p).mtimeMs);
  }
  return t;
}

// 1. npm packages
if (!existsSync(join(root, 'node_modules', '.package-lock.json'))) {
  run('npm', [existsSync(join(root, 'package-lock.json')) ? 'ci' : 'install', '--no-audit', '--no-fund', '--ignore-scripts']);
}

// 2. System packages (decided in setup-lib.mjs). Rust → wasm32: Debian's rustc ships a
// wasm32 std (crates.io is not needed) and links with rust-lld, which is lld-14: named
// explicitly, since rustc only suggests it. apt-get waits (bounded) for a held apt/dpkg lock.
const wasmStd = () => {
  try {
    const sysroot = execFileSync('/usr/bin/rustc', ['--print', 'sysroot'], { encoding: 'utf8' }).trim();
    return existsSync(join(sysroot, 'lib', 'rustlib', 'wasm32-unknown-unknown'));
  } catch {
    return false;
  }
};
// WebGPU on machines without a GPU: SwiftShader's Vulkan driver ships in Debian's
// chromium package; Dawn (npm `webgpu`) loads it through the Vulkan loader (libvulkan1).
const swiftShader = () => existsSync('/usr/lib/chromium/vk_swiftshader_icd.json');
const vulkanLoader = () =>
  ['/usr/lib/x86_64-linux-gnu/libvulkan.so.1', '/usr/lib/aarch64-linux-gnu/libvulkan.so.1'].some((f) => existsSync(f));

const have = {
  wasmStd: wasmStd(),
  lld: lldRuns(),
  swiftShader: swiftShader(),
  vulkanLoader: vulkanLoader(),
  rustfmt: spawnSync('/usr/bin/rustfmt', ['--version'], { stdio: 'ignore' }).status === 0,
};
const needed = neededPackages(have, process.env);
if (needed.length > 0) {
  if (needed.includes('lld-14') && have.wasmStd) log('rustc is installed but /usr/bin/rust-lld (lld-14) does not run: installing lld-14');
  const canApt = process.getuid?.() === 0 && !process.env.SMMO_SETUP_NO_APT && spawnSync('apt-get', ['--version']).status === 0;
  if (!canApt) {
    log(`missing system packages: ${needed.join(' ')}. Install them:`);
    log(`  Debian/Ubuntu: sudo apt-get install -y --no-install-recommends ${needed.join(' ')}`);
    log('  (rustup users: rustup target add wasm32-unknown-unknown, then set SMMO_RUSTC=$(which rustc);');
    log('   with a GPU driver installed, chromium/libvulkan1 are not needed: set SMMO_SETUP_NO_GPU=1)');
    process.exit(1);
  }
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const apt = (args) => {
    const status = runApt(args, { log, env });
    if (status !== 0) {
      log(`failed: apt-get ${args.join(' ')} (exit ${status})`);
      process.exit(status);
    }
  };
  apt(['update', '-qq']);
  apt(['install', '-y', '-qq', '--no-install-recommends', ...needed]);
  if (needed.includes('lld-14') && !lldRuns()) {
    // lld-14 counted as installed, yet its program does not run (a damaged or removed file).
    apt(['install', '-y', '-qq', '--no-install-recommends', '--reinstall', 'lld-14']);
    if (!lldRuns()) {
      log('/usr/bin/rust-lld still does not run after reinstalling lld-14; `rust-lld -flavor wasm --version` must work to link wasm32');
      process.exit(1);
    }
  }
}

// 3. TypeScript build (when any source is newer than the build)
const srcDirs = ['runtime', 'workers', 'apps', 'cli', 'test', 'bench', 'examples'].map((d) => join(root, d));
const srcTime = Math.max(...srcDirs.map((d) => newest(d, ['.ts'])), statSync(join(root, 'tsconfig.json')).mtimeMs);
const outTime = newest(join(root, 'dist'), ['.js']);
if (outTime < srcTime) run(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', root]);

// 4. WebAssembly build into wasm/pkg/ (committed): the script skips it, without needing rustc,
//    while the sources match the stamp in wasm/pkg/build.json, so the committed files stay.
if (existsSync(join(root, 'scripts', 'build-wasm.mjs'))) run(process.execPath, [join(root, 'scripts', 'build-wasm.mjs')]);
