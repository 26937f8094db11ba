/**
 * What the docs promise about errors is what smmo does:
 *  - README "Troubleshooting" quotes messages exactly (`…` marks a shortened part): each
 *    quoted line is produced here, by the CLI or by createRuntime, and matched;
 *  - exit codes: an unavailable GPU backend exits 1, a bad command line 2;
 *  - README's table: objectCounts() gives live objects per concrete class (not blocks);
 *  - arguments over 16 KiB are refused alike on one thread and on worker threads;
 *  - relative `modules` paths are refused with the URL form to use;
 *  - messages that used to mislead: a parameter that needs a heap beyond the largest names
 *    the flag; --render-scale names its range and a good value; an app's own message is
 *    not prefixed with its name twice.
 */
import test from 'ava';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRuntime, f32, object, u32, UsageError, type Runtime } from '../index.js';
import { webgpuPackageAvailable } from '../runtime/webgpu/device.js';
import { describeChild, REPO_ROOT, smmo } from './helpers/child.js';
import { Spinner, TIMEOUT_FIXTURES } from './timeout.fixtures.js';

const README = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');

class Dot extends object({ x: f32 }) {}

/** The message of what `fn` throws. */
async function messageOf(fn: () => Promise<unknown>): Promise<string> {
  try {
    await fn();
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error('expected an error');
}

/** A README line as a regular expression: `…` matches anything; a trailing `…` leaves the rest open. */
function pattern(line: string): RegExp {
  const open = line.endsWith('…');
  const body = (open ? line.slice(0, -1) : line)
    .split('…')
    .map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*?');
  return new RegExp(`^${body}${open ? '' : '$'}`);
}

test('README Troubleshooting: every quoted message is what smmo prints', async (t) => {
  const section = README.slice(README.indexOf('## Troubleshooting'), README.indexOf('## Project layout'));
  t.true(section.length > 500, 'the section exists');
  const quoted = [...section.matchAll(/```text\n([\s\S]*?)```/g)].flatMap((m) => m[1]!.trim().split('\n'));
  t.true(quoted.length >= 6, `${quoted.length} quoted lines`);

  const produced: string[] = [];
  // No GPU adapter: a Vulkan driver file that does not exist (or no `webgpu` package at all).
  const gpu = await smmo(['run', 'nbody', '--bodies', '64', '--iterations', '1', '--backend', 'webgpu'], {
    env: { ...process.env, VK_ICD_FILENAMES: '/nonexistent/icd.json' },
  });
  t.is(gpu.code, 1, `an unavailable backend exits 1: ${describeChild(gpu)}`);
  const gpuLine = gpu.stderr.trim().split('\n').pop()!;
  t.regex(gpuLine, (await webgpuPackageAvailable()) ? /\(no-adapter\)/ : /\(no-package\)/);
  if (await webgpuPackageAvailable()) produced.push(gpuLine);
  else t.log('no `webgpu` package: the no-adapter line is not produced here');
  // The kernel module missing (a broken install), as the CLI says it (exit 2).
  const dir = mkdtempSync(join(tmpdir(), 'smmo-nowasm-'));
  try {
    const wasm = await messageOf(() =>
      createRuntime({ classes: [Dot], heap: '2MB', backend: 'wasm', wasm: { dir: join(dir, 'wasm', 'pkg') } }),
    );
    produced.push(`smmo run nbody: ${wasm}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const threads = await smmo(['run', 'nbody', '--bodies', '100', '--iterations', '1', '--threads', '100000']);
  t.is(threads.code, 2);
  produced.push(threads.stderr.trim());
  produced.push(await messageOf(() => createRuntime({ classes: [Dot], threads: 100_000 })));
  produced.push(await messageOf(() => createRuntime({ classes: [Dot], threads: 2 })));
  produced.push(await messageOf(() => createRuntime({ classes: [Dot], threads: 2, modules: ['./model.js'] })));
  const heap = await smmo(['run', 'collision', '--bodies', '20000', '--iterations', '1', '--heap', '1200000']);
  t.is(heap.code, 1, describeChild(heap));
  produced.push(heap.stderr.trim());

  for (const line of quoted)
    t.true(
      produced.some((p) => pattern(line).test(p)),
      `README quotes a message smmo does not print:\n${line}\nprinted:\n${produced.join('\n')}`,
    );
  for (const p of produced)
    t.true(
      quoted.some((line) => pattern(line).test(p)),
      `not quoted in README Troubleshooting:\n${p}`,
    );

  // The inline message of parameters too large for any heap.
  const big = await smmo(['run', 'nbody', '--bodies', '4294967295', '--iterations', '1']);
  t.is(big.code, 2);
  t.true(section.includes(`\`${big.stderr.trim()}\``), big.stderr);
});

test('exit codes in --help: an unavailable backend is a failed run (1), not a bad command line (2)', async (t) => {
  const help = await smmo(['--help']);
  t.regex(help.stdout, /1 {3}the run failed: .*\n.*GpuUnavailableError \(--backend webgpu without a usable adapter\)/);
  t.false(/backend the runtime cannot provide is an error \(exit code 2\)/.test(README));
});

test("README's table: objectCounts() gives live objects per concrete class", async (t) => {
  t.regex(
    README,
    /\| `rt\.count\(C\)`, `rt\.objectCounts\(\)`, `rt\.stats\(\)` +\| live objects of `C` and its subclasses; live objects per concrete class/,
  );
  class Few extends object({ n: u32 }) {}
  const rt = await createRuntime({ classes: [Dot, Few], heap: '2MB' });
  try {
    for (let i = 0; i < 70; i++) rt.create(Dot);
    rt.create(Few);
    t.deepEqual(rt.objectCounts(), { Dot: 70, Few: 1 });
    t.is(rt.stats().types['Dot']!.blocks, 3, 'blocks are another number');
  } finally {
    await rt.close();
  }
});

test('arguments over 16 KiB are refused alike on one thread and on worker threads', async (t) => {
  const big = 'x'.repeat(20_000);
  type Loose = (cls: unknown, method: string, ...args: unknown[]) => Promise<void>;
  const doAll = (rt: Runtime, method: string, ...args: unknown[]): Promise<void> =>
    (rt.parallelDo as unknown as Loose).call(rt, Spinner, method, ...args);
  const newAll = (rt: Runtime, method: string, ...args: unknown[]): Promise<void> =>
    (rt.parallelNew as unknown as (c: unknown, n: number, m: string, ...a: unknown[]) => Promise<void>).call(
      rt,
      Spinner,
      1,
      method,
      ...args,
    );
  const messages: string[] = [];
  for (const threads of [1, 2]) {
    const rt = await createRuntime({
      classes: [Spinner],
      heap: '2MB',
      threads,
      inlineBlocks: 0,
      ...(threads > 1 ? { modules: [TIMEOUT_FIXTURES] } : {}),
    });
    try {
      await rt.parallelNew(Spinner, 64);
      const e = await t.throwsAsync(doAll(rt, 'inc', big), { instanceOf: UsageError });
      messages.push(e!.message);
      await t.throwsAsync(newAll(rt, 'hang', big), { instanceOf: UsageError, message: /at most 16384 \(16 KiB\)/ });
      await t.throwsAsync(doAll(rt, 'inc', { f: () => 1 }), { instanceOf: UsageError, message: /passed by value \(structured clone\)/ });
      await doAll(rt, 'inc', 'y'.repeat(4000)); // under the limit: fine
      let counts = 0;
      rt.deviceDo(Spinner, (s) => (counts += s.count));
      t.is(counts, 64, 'the refused passes ran nothing');
    } finally {
      await rt.close();
    }
  }
  t.is(messages[0], messages[1], 'the same message on 1 and 2 threads');
  t.regex(
    messages[0]!,
    /^parallelDo\(Spinner, 'inc'\): arguments take 200\d\d bytes serialized; at most 16384 \(16 KiB\) can be passed to a pass, on one thread as on worker threads/,
  );
  t.regex(README, /may take at most 16 KiB serialized, on one thread as on\s+worker threads/);
});

test('a relative modules path is refused with the URL form to pass', async (t) => {
  for (const m of ['./model.js', '../lib/model.js', 'model.js']) {
    await t.throwsAsync(createRuntime({ classes: [Dot], threads: 2, modules: [m] }), {
      instanceOf: UsageError,
      message: `modules: '${m}' is a relative path, which worker threads would resolve against smmo's own worker file, not your module; pass new URL('${m}', import.meta.url) (or an absolute file: URL, e.g. pathToFileURL(path))`,
    });
  }
});

test('messages that used to mislead name the flag, the range and the app once', async (t) => {
  const big = await smmo(['run', 'nbody', '--bodies', '4294967295', '--iterations', '1']);
  t.is(big.code, 2);
  t.is(
    big.stderr.trim(),
    'smmo run nbody: --bodies 4294967295 would need a heap of 274880004032 bytes, more than the largest heap (4294901760 bytes, 4.0 GiB): choose smaller values',
  );
  const scale = await smmo(['run', 'wa-tor', '--render', join(tmpdir(), 'never.png'), '--render-scale', '0']);
  t.is(scale.code, 2);
  t.is(scale.stderr.trim(), "smmo run wa-tor: --render-scale must be an integer in 1 … 64, got '0' (e.g. --render-scale 4)");
  const both = await smmo(['run', 'game-of-life', '--input', join(REPO_ROOT, 'README.md'), '--width', '10', '--iterations', '1']);
  t.is(both.code, 2);
  t.is(both.stderr.trim(), 'smmo run game-of-life: give either --input FILE or --width/--height (a random start), not both');
});
