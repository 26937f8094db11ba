// The decisions of scripts/setup.mjs, as functions a test can call without root or apt:
// which Debian packages a machine lacks, and how apt-get is run (waiting, bounded, for the
// apt/dpkg locks that another apt process holds).
//
// Why lld-14 is named: Debian's `rustc` only *suggests* `lld-14`, and setup installs with
// --no-install-recommends, so /usr/bin/rust-lld (→ lld-14) would be a dangling link and the
// wasm32 link step fails (`"rust-lld" "-flavor" "wasm" …`). A machine where lld-14 was once
// installed by hand hides that; so the rust toolchain is only "there" when rust-lld runs.
//
// Lock waiting: apt-get fails at once ("E: Could not get lock /var/lib/dpkg/lock-frontend.
// It is held by process 4242 (apt-get)") when another apt or dpkg runs, e.g. unattended
// upgrades or a second `npm test` on a busy machine. runApt retries such a failure every
// pollMs for at most waitMs in all (default 5 min), saying what it waits for; any other
// failure, or the deadline, ends it with the apt-get exit status.
import { spawnSync } from 'node:child_process';

/** The Debian packages of the Rust → wasm32 toolchain (lld-14 explicitly: see above). */
export const RUST_PACKAGES = ['rustc', 'libstd-rust-dev-wasm32', 'cargo', 'lld-14'];

/** Longest wait for the apt/dpkg locks, in all (ms). */
export const LOCK_WAIT_MS = 5 * 60 * 1000;
/** Pause between two tries while a lock is held (ms). */
export const LOCK_POLL_MS = 5000;

/**
 * The packages to install. `have` says what the machine has: rustc with the wasm32 std
 * (`wasmStd`), a rust-lld that runs (`lld`), SwiftShader (`swiftShader`), the Vulkan loader
 * (`vulkanLoader`), Debian's rustfmt (`rustfmt`: `npm run lint` checks the Rust sources'
 * format with it, scripts/lint-rust.mjs); `env` is process.env (SMMO_RUSTC: a rustc of the
 * user's own, nothing to install; SMMO_SETUP_NO_GPU: skip the WebGPU packages).
 */
export function neededPackages(have, env = {}) {
  const needed = [];
  if (!env.SMMO_RUSTC && (!have.wasmStd || !have.lld)) needed.push(...RUST_PACKAGES);
  if (have.rustfmt === false) needed.push('rustfmt');
  if (!env.SMMO_SETUP_NO_GPU && !have.swiftShader) needed.push('chromium');
  if (!env.SMMO_SETUP_NO_GPU && !have.vulkanLoader) needed.push('libvulkan1');
  return needed;
}

/** Whether rust-lld runs (it is what rustc links wasm32 modules with). */
export function lldRuns(lld = '/usr/bin/rust-lld') {
  const r = spawnSync(lld, ['-flavor', 'wasm', '--version'], { stdio: 'ignore' });
  return r.status === 0;
}

/**
 * The lock apt-get failed on, from its stderr: { lock, holder } (holder: "process 4242
 * (apt-get)" when apt names it), or null when the failure is not a held lock.
 */
export function heldLock(stderr) {
  const m = /Could not get lock ([^\s.]+(?:\.[^\s.]+)*)\.?(?: It is held by (process \d+(?: \([^)]*\))?))?/.exec(stderr);
  if (m) return { lock: m[1], holder: m[2] ?? 'another process' };
  if (/Unable to acquire the dpkg frontend lock|Unable to lock (the )?(administration )?directory|dpkg was interrupted/.test(stderr)) {
    // "dpkg was interrupted" is not a lock; it needs `dpkg --configure -a`: not retried.
    if (/dpkg was interrupted/.test(stderr)) return null;
    return { lock: 'the dpkg/apt lock', holder: 'another process' };
  }
  return null;
}

function sleep(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * Run `aptGet args` (stdout shown as it comes, stderr passed to `echo` after each try). Returns its
 * exit status: 0, the status of a failure that is not a held lock, or the status of the
 * last try once waitMs has passed. Never waits longer than waitMs (plus one try).
 */
export function runApt(args, opts = {}) {
  const {
    aptGet = 'apt-get',
    waitMs = LOCK_WAIT_MS,
    pollMs = LOCK_POLL_MS,
    log = () => {},
    echo = (text) => process.stderr.write(text),
    env = process.env,
  } = opts;
  const deadline = Date.now() + waitMs;
  for (let attempt = 1; ; attempt++) {
    log(`$ ${aptGet} ${args.join(' ')}${attempt > 1 ? ` (try ${attempt})` : ''}`);
    const r = spawnSync(aptGet, args, { stdio: ['inherit', 'inherit', 'pipe'], encoding: 'utf8', env });
    if (r.error) {
      log(`could not run ${aptGet}: ${r.error.message}`);
      return 1;
    }
    if (r.stderr) echo(r.stderr);
    if (r.status === 0) return 0;
    const held = heldLock(r.stderr ?? '');
    const left = deadline - Date.now();
    if (held === null) return r.status ?? 1;
    if (left <= 0) {
      log(
        `gave up after ${Math.round(waitMs / 1000)} s waiting for ${held.lock} (held by ${held.holder}); ` +
          'let the other apt/dpkg process finish (or stop it), then run `node scripts/setup.mjs` again',
      );
      return r.status ?? 1;
    }
    log(
      `waiting for ${held.lock}, held by ${held.holder}: next try in ${Math.round(Math.min(pollMs, left) / 1000)} s (giving up in ${Math.round(left / 1000)} s)`,
    );
    sleep(Math.min(pollMs, left));
  }
}
