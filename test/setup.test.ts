/**
 * scripts/setup.mjs's decisions (scripts/setup-lib.mjs), without root and without apt:
 *  - the Rust → wasm32 toolchain counts as present only when rust-lld runs, and its
 *    packages name lld-14 (Debian's rustc only suggests it: without it the wasm link fails);
 *  - apt-get waits, bounded, for an apt/dpkg lock that another process holds, and says
 *    which lock and which process; other failures end at once. A fake apt-get plays the
 *    busy machine.
 */
import test from 'ava';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

interface SetupLib {
  RUST_PACKAGES: string[];
  neededPackages(
    have: { wasmStd: boolean; lld: boolean; swiftShader: boolean; vulkanLoader: boolean; rustfmt?: boolean },
    env?: Record<string, string | undefined>,
  ): string[];
  heldLock(stderr: string): { lock: string; holder: string } | null;
  runApt(
    args: string[],
    opts: { aptGet?: string; waitMs?: number; pollMs?: number; log?: (m: string) => void; echo?: (s: string) => void },
  ): number;
}

const lib = (await import(new URL('../../scripts/setup-lib.mjs', import.meta.url).href)) as SetupLib;
const quiet = (): void => {};
const all = { wasmStd: true, lld: true, swiftShader: true, vulkanLoader: true };

test('the Rust packages name lld-14, and a rustc whose rust-lld does not run needs them', (t) => {
  t.true(lib.RUST_PACKAGES.includes('lld-14'));
  t.deepEqual(lib.neededPackages(all), []);
  t.deepEqual(lib.neededPackages({ ...all, wasmStd: false }), lib.RUST_PACKAGES);
  // rustc installed without lld-14 (the fresh-machine defect: /usr/bin/rust-lld dangles)
  t.deepEqual(lib.neededPackages({ ...all, lld: false }), lib.RUST_PACKAGES);
  t.deepEqual(lib.neededPackages({ ...all, wasmStd: false, lld: false }, { SMMO_RUSTC: '/opt/rustc' }), []);
  t.deepEqual(lib.neededPackages({ ...all, swiftShader: false, vulkanLoader: false }), ['chromium', 'libvulkan1']);
  t.deepEqual(lib.neededPackages({ ...all, swiftShader: false }, { SMMO_SETUP_NO_GPU: '1' }), []);
  // npm run lint checks the Rust format with Debian's rustfmt (scripts/lint-rust.mjs)
  t.deepEqual(lib.neededPackages({ ...all, rustfmt: false }), ['rustfmt']);
  t.deepEqual(lib.neededPackages({ ...all, rustfmt: true }), []);
  // setup.mjs decides with these functions
  const setup = readFileSync(new URL('../../scripts/setup.mjs', import.meta.url), 'utf8');
  t.regex(setup, /neededPackages\(have, process\.env\)/);
  t.regex(setup, /runApt\(args/);
});

test('heldLock reads the lock and its holder from apt-get messages', (t) => {
  t.deepEqual(lib.heldLock('E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (apt-get)\n'), {
    lock: '/var/lib/dpkg/lock-frontend',
    holder: 'process 4242 (apt-get)',
  });
  t.deepEqual(lib.heldLock('E: Could not get lock /var/lib/apt/lists/lock. It is held by process 77\n'), {
    lock: '/var/lib/apt/lists/lock',
    holder: 'process 77',
  });
  t.is(lib.heldLock('E: Unable to locate package nosuch\n'), null);
  t.is(lib.heldLock("E: dpkg was interrupted, you must manually run 'dpkg --configure -a' to correct the problem.\n"), null);
});

/** A fake apt-get that reports a held lock on its first `busy` runs (a negative count: always), then succeeds. */
function fakeApt(dir: string, busy: number, other = ''): string {
  const file = join(dir, 'apt-get');
  writeFileSync(join(dir, 'n'), '0');
  writeFileSync(
    file,
    `#!/bin/sh\nn=$(cat "${dir}/n"); n=$((n+1)); echo $n > "${dir}/n"\n` +
      (other !== '' ? `echo "${other}" >&2; exit 100\n` : '') +
      `if [ ${busy} -lt 0 ] || [ $n -le ${busy} ]; then echo "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (apt-get)" >&2; exit 100; fi\nexit 0\n`,
  );
  chmodSync(file, 0o755);
  return file;
}

test('runApt waits for a held lock, saying which one and who holds it, then goes on', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'smmo-apt-'));
  try {
    const logs: string[] = [];
    const status = lib.runApt(['install', '-y', 'lld-14'], {
      aptGet: fakeApt(dir, 2),
      pollMs: 20,
      waitMs: 60_000,
      echo: quiet,
      log: (m) => logs.push(m),
    });
    t.is(status, 0);
    t.is(readFileSync(join(dir, 'n'), 'utf8').trim(), '3', 'two tries refused, the third ran');
    t.is(
      logs.filter((l) => l.startsWith('waiting for /var/lib/dpkg/lock-frontend, held by process 4242 (apt-get)')).length,
      2,
      logs.join('\n'),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('runApt gives up on a lock held past its bound, and does not retry other failures', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'smmo-apt-'));
  try {
    const logs: string[] = [];
    const t0 = Date.now();
    const status = lib.runApt(['update'], { aptGet: fakeApt(dir, -1), pollMs: 50, waitMs: 300, echo: quiet, log: (m) => logs.push(m) });
    t.is(status, 100);
    t.true(Date.now() - t0 < 30_000, 'bounded');
    t.true(Number(readFileSync(join(dir, 'n'), 'utf8')) >= 2);
    t.regex(logs[logs.length - 1]!, /^gave up after 0 s waiting for \/var\/lib\/dpkg\/lock-frontend \(held by process 4242 \(apt-get\)\)/);

    const logs2: string[] = [];
    const other = lib.runApt(['install', 'nosuch'], {
      aptGet: fakeApt(dir, 0, 'E: Unable to locate package nosuch'),
      pollMs: 50,
      waitMs: 60_000,
      echo: quiet,
      log: (m) => logs2.push(m),
    });
    t.is(other, 100);
    t.is(readFileSync(join(dir, 'n'), 'utf8').trim(), '1', 'not a lock: one try');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
