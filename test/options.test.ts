/**
 * createRuntime's options: a key RuntimeOptions does not have is a UsageError that names
 * it, lists the options and suggests the closest (heapBytes → heap, thread → threads);
 * values of the wrong kind are refused; `threads` is bounded by MAX_THREADS (64), also
 * on the command line (exit 2, before any thread starts). The example in runtime.ts's
 * header comment is run as written.
 */
import test from 'ava';
import { readFileSync } from 'node:fs';
import { Body } from '../apps/nbody/body.js';
import { createRuntime, f32, MAX_THREADS, object, UsageError, type RuntimeOptions } from '../index.js';
import { describeChild, smmo } from './helpers/child.js';

class Dot extends object({ x: f32 }) {}

const typo = (options: Record<string, unknown>): Promise<unknown> =>
  createRuntime({ classes: [Dot], heap: '2MB', ...options } as RuntimeOptions);

test('unknown option keys name the key, the closest option and every option', async (t) => {
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ heapBytes: 1 << 22 }, /unknown option 'heapBytes' \(did you mean 'heap'\?\)/],
    [{ thread: 2 }, /unknown option 'thread' \(did you mean 'threads'\?\)/],
    [{ chekced: true }, /unknown option 'chekced' \(did you mean 'checked'\?\)/],
    [{ Backend: 'wasm' }, /unknown option 'Backend' \(did you mean 'backend'\?\)/],
    [{ module: ['x'] }, /unknown option 'module' \(did you mean 'modules'\?\)/],
    [{ zzz: 1 }, /unknown option 'zzz'; the options are classes, heap, checked, threads/],
  ];
  for (const [options, message] of cases) {
    const e = await t.throwsAsync(typo(options), { instanceOf: UsageError, message }, JSON.stringify(options));
    t.regex(e!.message, /the options are classes, heap, checked, threads, modules, .*webgpu/);
  }
});

test('options of the wrong kind are refused', async (t) => {
  await t.throwsAsync(typo({ checked: 'yes' }), { instanceOf: UsageError, message: /option checked must be true or false, got 'yes'/ });
  await t.throwsAsync(typo({ seed: -1 }), { instanceOf: UsageError, message: /option seed must be an integer in 0 … 4294967295/ });
  await t.throwsAsync(typo({ modules: 'file:///x.js' }), { instanceOf: UsageError, message: /option modules must be an array of URLs/ });
  await t.throwsAsync(createRuntime(null as unknown as RuntimeOptions), { instanceOf: UsageError, message: /give an options object/ });
});

test(`threads is bounded: 1 … ${MAX_THREADS}, checked before any thread starts`, async (t) => {
  t.is(MAX_THREADS, 64);
  for (const threads of [0, -1, 1.5, MAX_THREADS + 1, 100_000, Number.NaN]) {
    await t.throwsAsync(typo({ threads }), { instanceOf: UsageError, message: /threads must be an integer in 1 … 64/ }, String(threads));
  }
  // 64 passes the bound; what stops this one is the missing `modules` (no thread is started).
  await t.throwsAsync(typo({ threads: MAX_THREADS }), { instanceOf: UsageError, message: /threads: 64 needs options\.modules/ });
});

test('smmo run --threads beyond 64 exits 2 with the bound, without starting threads', async (t) => {
  const r = await smmo(['run', 'nbody', '--bodies', '100', '--iterations', '1', '--threads', '100000']);
  t.is(r.code, 2, describeChild(r));
  t.is(r.stderr.trim(), "smmo run nbody: --threads must be an integer in 1 … 64, got '100000' (e.g. --threads 64)");
  t.is(r.stdout, '');
  const help = await smmo(['run', '--help']);
  t.regex(help.stdout, /--threads N +threads that run the do-alls, 1 … 64/);
});

test("the example in runtime.ts's header comment runs as written", async (t) => {
  const src = readFileSync(new URL('../../runtime/runtime.ts', import.meta.url), 'utf8');
  const header = src.slice(0, src.indexOf('*/'));
  const code = header
    .split('\n')
    .filter((l) => l.startsWith(' *   '))
    .map((l) => l.slice(5))
    .join('\n');
  t.regex(code, /createRuntime\(/);
  t.regex(code, /await rt\.close\(\);/, 'close() is awaited');
  const run = new Function('createRuntime', 'Body', `return (async () => {\n${code}\nreturn rt;\n})();`) as (
    c: typeof createRuntime,
    b: typeof Body,
  ) => Promise<{ count(c: unknown): number }>;
  const rt = await run(createRuntime, Body);
  t.throws(() => rt.count(Body), { message: /the runtime is closed/ }, 'the example closed its runtime');
});
