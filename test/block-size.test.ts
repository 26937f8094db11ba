/**
 * RuntimeOptions.blockSize (runtime/layout.ts BlockSizePolicy): which class a block is
 * sized for.
 *  - 'smallest' (default, the paper's §3): the smallest class fills 32 slots, a larger one
 *    gets as many as fit; 'largest': the largest class fills 32 slots, so every class gets 32;
 *  - the apps give the default's digests with 'largest' on 1 and 2 threads and on the wasm
 *    kernels (they read the per-class offsets of whatever layout the table has), with a
 *    valid heap after every step;
 *  - bad values and combinations are UsageErrors (CLI: exit 2) that say what to do.
 */
import test from 'ava';
import { CLASSES as GOL, digest as golDigest, init as golInit, randomStart, step as golStep } from '../apps/game-of-life/gol.js';
import { CLASSES as WATOR, digest as watorDigest, init as watorInit, step as watorStep } from '../apps/wa-tor/wator.js';
import { createRuntime, f32, f64, object, UsageError, type RuntimeOptions } from '../index.js';
import { BLOCK_DATA_OFFSET, MIN_HEAP_BYTES, planTypes } from '../runtime/layout.js';
import { lastJson, smmo } from './helpers/child.js';

class Light extends object({ a: f32 }) {}
class Heavy extends object({ a: f32, b: f32, c: f64 }) {}

test("planTypes: 'smallest' sizes the block for the smallest class, 'largest' gives every class 32 slots", (t) => {
  const slots = (table: ReturnType<typeof planTypes>): number[] => table.concreteIds.map((id) => table.types[id]!.slots);
  const small = planTypes([Light, Heavy]);
  const large = planTypes([Light, Heavy], { blockSize: 'largest' });
  t.is(small.blockSize, 'smallest');
  t.is(large.blockSize, 'largest');
  // Light: 32 × f32 = 128 data bytes. Heavy: 32 × (4 + 4 + 8) = 512; in 128 bytes it gets 8 (32 + 32 + 64).
  t.is(small.blockBytes, BLOCK_DATA_OFFSET + 128);
  t.deepEqual(slots(small), [32, 8]);
  t.is(large.blockBytes, BLOCK_DATA_OFFSET + 512);
  t.deepEqual(slots(large), [32, 32]);
  // The same classes in the other order: the policy, not the order, decides.
  t.is(planTypes([Heavy, Light], { blockSize: 'largest' }).blockBytes, BLOCK_DATA_OFFSET + 512);
  // Heavy's arrays in its block: a, b at 32 slots × 4 bytes, c at 32 × 8.
  const heavy = large.types[large.concreteIds[1]!]!;
  t.deepEqual(
    heavy.fields.map((f) => [f.name, f.offsets[0]]),
    [
      ['a', BLOCK_DATA_OFFSET],
      ['b', BLOCK_DATA_OFFSET + 128],
      ['c', BLOCK_DATA_OFFSET + 256],
    ],
  );
  t.throws(() => planTypes([Light], { blockSize: 'huge' as 'largest' }), { instanceOf: UsageError, message: /blockSize must be one of/ });
});

for (const [threads, backend] of [
  [1, 'ts'],
  [2, 'ts'],
  [1, 'wasm'],
] as const) {
  test(`wa-tor 48 × 40 and game-of-life 48 × 48 with blockSize 'largest' give the default's digests (${threads} thread${threads > 1 ? 's' : ''}, ${backend})`, async (t) => {
    const digests: Record<string, [number, number]> = {};
    for (const blockSize of ['smallest', 'largest'] as const) {
      const common: Partial<RuntimeOptions> = { threads, blockSize, backend, inlineBlocks: 0 };
      const wa = await createRuntime({
        classes: WATOR,
        heap: '16MB',
        modules: [new URL('../apps/wa-tor/index.js', import.meta.url).href],
        ...common,
      });
      const gol = await createRuntime({
        classes: GOL,
        heap: '16MB',
        modules: [new URL('../apps/game-of-life/index.js', import.meta.url).href],
        ...common,
      });
      try {
        if (blockSize === 'largest') {
          for (const rt of [wa, gol]) for (const s of Object.values(rt.stats().types)) t.is(s.slotsPerBlock, 32);
        } else
          t.true(
            Object.values(gol.stats().types).some((s) => s.slotsPerBlock < 32),
            'the default gives some class fewer slots',
          );
        await watorInit(wa, 48, 40, 7);
        await golInit(gol, randomStart(48, 48, 0.3, 7));
        for (let k = 0; k < 12; k++) {
          await watorStep(wa);
          await golStep(gol);
          wa.validateHeap();
          gol.validateHeap();
        }
        digests[blockSize] = [watorDigest(wa), golDigest(gol)];
      } finally {
        await wa.close();
        await gol.close();
      }
    }
    t.deepEqual(digests['largest'], digests['smallest']);
  });
}

test('blockSize: bad values and combinations are UsageErrors that say what to do', async (t) => {
  const bad: [RuntimeOptions, RegExp][] = [
    [{ classes: [Light], blockSize: 'big' as 'largest' }, /option blockSize must be 'smallest' or 'largest', got 'big'/],
    [
      { classes: [Light], blockSize: 'largest', allocator: { bitmapAlloc: true } },
      /bitmapAlloc blocks hold one object.*leave blockSize unset/,
    ],
    // bitmapAlloc with ownFirstBlock was ignored silently before; now it is refused as on the CLI.
    [
      { classes: [Light], allocator: { bitmapAlloc: true, ownFirstBlock: true } },
      /bitmapAlloc takes every object's block.*leave ownFirstBlock unset/,
    ],
  ];
  for (const [options, message] of bad) {
    await t.throwsAsync(createRuntime({ heap: MIN_HEAP_BYTES, ...options }), { instanceOf: UsageError, message });
  }
});

test('run --block-size largest: in --json, every class 32 slots, the default digest; bad values exit 2', async (t) => {
  const base = ['run', 'game-of-life', '--width', '40', '--height', '40', '--iterations', '6', '--json'];
  const [def, large, bad, both] = await Promise.all([
    smmo(base),
    smmo([...base, '--block-size', 'largest']),
    smmo([...base, '--block-size', 'medium']),
    smmo(['run', 'wa-tor', '--bitmap-alloc', '--block-size', 'largest']),
  ]);
  t.is(def.code, 0, def.stderr);
  t.is(large.code, 0, large.stderr);
  const d = lastJson(def.stdout);
  const l = lastJson(large.stdout);
  t.is(l['digest'], d['digest']);
  const heap = (j: Record<string, unknown>): Record<string, unknown> => j['heap'] as Record<string, unknown>;
  t.is(heap(d)['blockSize'], 'smallest');
  t.is(heap(l)['blockSize'], 'largest');
  t.true((heap(l)['blockBytes'] as number) > (heap(d)['blockBytes'] as number));
  t.is(bad.code, 2);
  t.regex(bad.stderr, /--block-size.*one of smallest, largest/);
  t.is(both.code, 2);
  t.regex(both.stderr, /drop --block-size largest/);
});
