#!/usr/bin/env node
// Build the WebAssembly kernels (wasm/) from source: smmo_simd.wasm (simd128) and
// smmo_scalar.wasm (the same crate without simd128), into wasm/pkg/, where runtime/wasm.ts
// loads them. No crates.io, no wasm-bindgen: a #![no_std] cdylib with raw `extern "C"`
// exports, compiled by rustc directly (or by cargo with --cargo).
//
// wasm/pkg/ is COMMITTED and shipped in the npm package (package.json `files`), so that
// users of `npm install` need no Rust. Whoever changes wasm/src (or the flags below) runs
// this script and commits wasm/pkg/ with the change: test/wasm-build.test.ts rebuilds the
// modules from source and fails when the bytes differ from the committed ones.
//
//   node scripts/build-wasm.mjs            build when out of date: when the sources or flags
//                                          differ from the stamp in wasm/pkg/build.json (the
//                                          compiler is not part of it: a committed build is not
//                                          redone because another rustc is installed); prints
//                                          sizes + sha256. Needs no rustc when up to date.
//   node scripts/build-wasm.mjs --force    rebuild
//   node scripts/build-wasm.mjs --check    rebuild into a temporary folder and require the
//                                          same bytes as wasm/pkg (reproducible build, and
//                                          wasm/pkg is what the sources build)
//   node scripts/build-wasm.mjs --cargo    build through cargo (wasm/.cargo/config.toml holds
//                                          the same flags); --out DIR writes (or checks) elsewhere
//   --crate DIR                            build the crate in DIR instead of wasm/ (the mutation
//                                          script builds mutated copies, scripts/mutate-rust.mjs)
//   --only simd|scalar                     build one of the two modules
//   --debug-assertions --out DIR           a checking build, for tests only: the same modules with
//                                          -C debug-assertions=on (the crate's debug_assert!s, and
//                                          overflow checks, trap when they fail); never into wasm/pkg,
//                                          which ships the release build (test/wasm-debug.test.ts)
//
// Reproducible bytes need the same compiler: the committed modules are built with Debian's
// rustc 1.63 (/usr/bin/rustc, tried first); build.json records the version.
//
// Toolchain: rustc with the wasm32-unknown-unknown target. Tried in this order: $SMMO_RUSTC,
// /usr/bin/rustc (Debian/Ubuntu: `apt-get install -y rustc libstd-rust-dev-wasm32 cargo`,
// rustc 1.63, checked), `rustc` on PATH (rustup: `rustup target add wasm32-unknown-unknown`).
// rustup's rustc may come first on PATH without the target, hence /usr/bin/rustc first.
//
// wasm-pack: `cd wasm && wasm-pack build --release --target nodejs --no-typescript` runs cargo
// with wasm/.cargo/config.toml (the simd build) and then wasm-bindgen, which requires the
// crate to depend on `wasm-bindgen` (add it where crates.io is reachable); the .wasm it
// leaves in wasm/target/wasm32-unknown-unknown/release/smmo_wasm.wasm is the kernel module
// runtime/wasm.ts loads (copy it to wasm/pkg/smmo_simd.wasm). Not tested here: wasm-pack
// cannot be installed on this machine.
//
// Memory contract (wasm/src/lib.rs): the module imports the heap memory (shared) and owns
// [0, __heap_base): stack first, then static data. --initial-memory=RESERVED_BYTES (read from
// wasm/src/layout.rs, generated from runtime/layout.ts) makes the LINK FAIL if stack + data
// do not fit below the heap. `-C lto=fat` is required: it recompiles the precompiled
// core/std with +atomics, without which --shared-memory refuses to link them.
import { createHash } from 'node:crypto';
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const TARGET = 'wasm32-unknown-unknown';
const args = process.argv.slice(2);
const flag = (name) => args.includes(name);
const value = (name) => (args.indexOf(name) >= 0 ? args[args.indexOf(name) + 1] : undefined);
const crate = value('--crate') ?? join(root, 'wasm');
const outDir = value('--out') ?? join(root, 'wasm', 'pkg');
const only = value('--only');
const useCargo = flag('--cargo');
const debugAssertions = flag('--debug-assertions');

function fail(msg) {
  console.error(`build-wasm: ${msg}`);
  process.exit(1);
}

if (debugAssertions && (value('--out') === undefined || useCargo || flag('--check')))
  fail(
    '--debug-assertions builds a checking variant for tests: give --out DIR (wasm/pkg ships the release build), without --cargo or --check',
  );

// ------------------------------------------------------------------ toolchain

const INSTALL_HINT =
  'install rustc with the wasm32-unknown-unknown target:\n' +
  '  Debian/Ubuntu:  apt-get install -y rustc libstd-rust-dev-wasm32 cargo\n' +
  '  rustup:         rustup target add wasm32-unknown-unknown\n' +
  'or point SMMO_RUSTC at a rustc that has it.';

function hasWasmTarget(rustc) {
  try {
    const dir = execFileSync(rustc, ['--print', 'target-libdir', '--target', TARGET], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    return existsSync(dir) && readdirSync(dir).some((f) => f.startsWith('libcore-'));
  } catch {
    return false;
  }
}

function findRustc() {
  const tried = [];
  for (const c of [process.env.SMMO_RUSTC, '/usr/bin/rustc', 'rustc']) {
    if (!c || tried.includes(c)) continue;
    tried.push(c);
    if (hasWasmTarget(c)) return c;
  }
  fail(`no rustc with the ${TARGET} target found (tried ${tried.join(', ')}); ${INSTALL_HINT}`);
}

// ------------------------------------------------------------------ flags

const layoutRs = readFileSync(join(crate, 'src', 'layout.rs'), 'utf8');
const reserved = Number(/pub const RESERVED_BYTES: u32 = (\d+);/.exec(layoutRs)?.[1]);
if (!Number.isInteger(reserved) || reserved <= 0)
  fail('wasm/src/layout.rs has no RESERVED_BYTES; regenerate it: npx tsc -p . && node scripts/gen-layout.mjs');

const LINK_ARGS = [
  '--import-memory', // the heap's memory comes from the host as env.memory
  '--shared-memory', // declared shared: one memory for every thread's instance
  '--max-memory=4294967296', // the import's declared maximum (wasm32: 4 GiB); a smaller heap fits it
  `--initial-memory=${reserved}`, // the import's minimum, and the guard: stack + data ≤ RESERVED_BYTES
  '-zstack-size=16384', // default stack (unused: each thread's instance gets its own, runtime/wasm.ts)
  '--export=__stack_pointer', // per-thread stacks (needs mutable-globals)
];
const ALL_VARIANTS = {
  simd: '+simd128,+atomics,+bulk-memory,+mutable-globals',
  scalar: '-simd128,+atomics,+bulk-memory,+mutable-globals',
};
if (only !== undefined && !(only in ALL_VARIANTS)) fail(`--only must be simd or scalar, got ${only}`);
const VARIANTS = only === undefined ? ALL_VARIANTS : { [only]: ALL_VARIANTS[only] };
const CODEGEN = [
  ...['-C', 'opt-level=3', '-C', 'lto=fat', '-C', 'codegen-units=1', '-C', 'panic=abort', '-C', 'strip=symbols'],
  // The checking build: debug_assert! on (and with it overflow checks); a failed one traps.
  ...(debugAssertions ? ['-C', 'debug-assertions=on'] : []),
];
// v0 symbol names spell out generic arguments, so the two instances of a generic function
// (the allocator core is generic over its memory operations) sort the same way in every
// build; legacy names end in a hash of the crate metadata, which cargo sets and the direct
// rustc build does not, and the code's function order followed it. (Also in
// wasm/.cargo/config.toml; cargo passes the rest of CODEGEN through wasm/Cargo.toml.)
const MANGLING = ['-C', 'symbol-mangling-version=v0'];
// No absolute path of this checkout in the artifact: the same bytes from any clone.
const REMAP = `--remap-path-prefix=${crate}=/smmo`;

function rustcArgs(features, out) {
  return [
    '--edition',
    '2021',
    '--crate-type',
    'cdylib',
    '--crate-name',
    'smmo_wasm',
    '--target',
    TARGET,
    ...CODEGEN,
    ...MANGLING,
    REMAP,
    '-C',
    `target-feature=${features}`,
    ...LINK_ARGS.flatMap((a) => ['-C', `link-arg=${a}`]),
    join(crate, 'src', 'lib.rs'),
    '-o',
    out,
  ];
}

// ------------------------------------------------------------------ build

function buildOne(rustc, variant, dir) {
  const out = join(dir, `smmo_${variant}.wasm`);
  const t0 = performance.now();
  let r;
  if (useCargo) {
    const cargo = process.env.SMMO_CARGO ?? (rustc === '/usr/bin/rustc' ? '/usr/bin/cargo' : 'cargo');
    const targetDir = join(crate, 'target', variant);
    // The simd build takes its flags from wasm/.cargo/config.toml (what `cargo build` and
    // wasm-pack use there), so identical bytes also prove that file agrees with LINK_ARGS;
    // the scalar build overrides them (RUSTFLAGS replaces the config's rustflags).
    const env = { ...process.env, RUSTC: rustc, CARGO_TARGET_DIR: targetDir };
    delete env.RUSTFLAGS;
    if (variant !== 'simd')
      env.RUSTFLAGS = ['-C', `target-feature=${VARIANTS[variant]}`, ...MANGLING, ...LINK_ARGS.map((a) => `-C link-arg=${a}`)].join(' ');
    r = spawnSync(cargo, ['build', '--offline', '--release', '--target', TARGET, '-q'], { cwd: crate, stdio: 'inherit', env });
    if (r.status === 0) copyFileSync(join(targetDir, TARGET, 'release', 'smmo_wasm.wasm'), out);
  } else {
    r = spawnSync(rustc, rustcArgs(VARIANTS[variant], out), { cwd: crate, stdio: 'inherit' });
  }
  if (r.error) fail(`could not run the compiler: ${r.error.message}; ${INSTALL_HINT}`);
  if (r.status !== 0) fail(`the ${variant} build failed (exit ${r.status ?? r.signal}); see the compiler output above`);
  chmodSync(out, 0o644); // a data file, committed: the same mode from every build
  const bytes = readFileSync(out);
  return { variant, file: out, bytes: bytes.length, sha256: sha256(bytes), seconds: (performance.now() - t0) / 1000 };
}

const sha256 = (b) => createHash('sha256').update(b).digest('hex');

/** What decides whether a build is up to date: flags and every source file (not the compiler: see the top). */
function stampOf() {
  const h = createHash('sha256');
  h.update(JSON.stringify({ LINK_ARGS, VARIANTS, CODEGEN, MANGLING }));
  // Every source file, sub-folders included (wasm/src/alloc/).
  const walk = (dir, rel) => {
    for (const e of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      if (e.isDirectory()) walk(join(dir, e.name), `${rel}${e.name}/`);
      else h.update(`${rel}${e.name}`).update(readFileSync(join(dir, e.name)));
    }
  };
  walk(join(crate, 'src'), '');
  h.update(readFileSync(join(crate, 'Cargo.toml')));
  return h.digest('hex');
}

const stamp = stampOf();
const manifestFile = join(outDir, 'build.json');
const readManifest = () => {
  try {
    return JSON.parse(readFileSync(manifestFile, 'utf8'));
  } catch {
    return null;
  }
};

if (flag('--check')) {
  const manifest = readManifest();
  if (manifest === null) fail(`nothing to check: ${manifestFile} does not exist or is not JSON; build first: node scripts/build-wasm.mjs`);
  const rustc = findRustc();
  const version = execFileSync(rustc, ['--version'], { encoding: 'utf8' }).trim();
  const tmp = mkdtempSync(join(tmpdir(), 'smmo-wasm-'));
  try {
    let same = true;
    for (const v of Object.keys(VARIANTS)) {
      const r = buildOne(rustc, v, tmp);
      const file = join(outDir, `smmo_${v}.wasm`);
      const shipped = existsSync(file) ? sha256(readFileSync(file)) : '(missing)';
      const ok = r.sha256 === shipped && r.sha256 === manifest.files?.[`smmo_${v}.wasm`]?.sha256;
      console.log(`${ok ? 'same' : 'DIFFERENT'}  smmo_${v}.wasm  rebuilt ${r.sha256}  in ${outDir}: ${shipped}`);
      same &&= ok;
    }
    if (manifest.stamp !== stamp) {
      console.log(`DIFFERENT  the sources or flags changed since ${manifestFile} was written (stamp ${manifest.stamp} ≠ ${stamp})`);
      same = false;
    }
    if (!same) {
      const other = manifest.rustc !== version ? ` (they were built with ${manifest.rustc}; reproducible bytes need that compiler)` : '';
      fail(
        `the modules in ${outDir} are not what these sources build with ${version}${other}; ` +
          'rebuild them with `node scripts/build-wasm.mjs --force` and commit wasm/pkg/ with the change to wasm/src',
      );
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  process.exit(0);
}

if (!flag('--force')) {
  const m = readManifest();
  const intact =
    m !== null &&
    Object.keys(m.files ?? {}).length === Object.keys(VARIANTS).length &&
    Object.entries(m.files).every(([f, info]) => existsSync(join(outDir, f)) && sha256(readFileSync(join(outDir, f))) === info.sha256);
  if (intact && m.stamp === stamp) {
    console.log(`build-wasm: ${outDir} is up to date (built with ${m.rustc})`);
    process.exit(0);
  }
}

const rustc = findRustc();
const version = execFileSync(rustc, ['--version'], { encoding: 'utf8' }).trim();
mkdirSync(outDir, { recursive: true });
const results = Object.keys(VARIANTS).map((v) => buildOne(rustc, v, outDir));
for (const r of results) {
  console.log(`build-wasm: smmo_${r.variant}.wasm ${String(r.bytes).padStart(6)} bytes  ${r.seconds.toFixed(1)} s  sha256 ${r.sha256}`);
}
// No time or path in it: the same sources give the same manifest on any machine.
const manifest = {
  rustc: version,
  stamp,
  files: Object.fromEntries(results.map((r) => [`smmo_${r.variant}.wasm`, { bytes: r.bytes, sha256: r.sha256 }])),
};
writeFileSync(manifestFile, JSON.stringify(manifest, null, 2) + '\n');
console.log(
  debugAssertions
    ? `build-wasm: wrote ${outDir} (${version}): the checking build, debug assertions on (not for wasm/pkg)`
    : `build-wasm: wrote ${outDir} (${version}); commit wasm/pkg/ if wasm/src changed`,
);
