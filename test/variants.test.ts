/**
 * The allocator variants of the paper's study (§7, Fig. 13(d)) as runtime options
 * (RuntimeOptions.allocator; wasm/src/alloc/core.rs "Variants"):
 *  - every variant runs wa-tor and game-of-life to the default's digest on 1 and 2
 *    threads, with a valid heap after every step (the apps' results do not depend on
 *    where objects are placed);
 *  - NoShift: searches start at bit 0 (lowest slot, lowest free block); rotation spreads them;
 *  - BitmapAlloc: one object per block, blocks the size of the largest class, fields at
 *    natural alignment, one used block per object, no kept blocks, no coalescing;
 *  - bad combinations are UsageErrors.
 */
import test from 'ava';
import { CLASSES as GOL, digest as golDigest, init as golInit, randomStart, step as golStep } from '../apps/game-of-life/gol.js';
import { CLASSES as WATOR, digest as watorDigest, init as watorInit, step as watorStep } from '../apps/wa-tor/wator.js';
import { createRuntime, f32, f64, object, u8, UsageError, type AllocatorOptions } from '../index.js';
import { MIN_HEAP_BYTES, planTypes } from '../runtime/layout.js';

const WATOR_MODULE = new URL('../apps/wa-tor/index.js', import.meta.url).href;
const GOL_MODULE = new URL('../apps/game-of-life/index.js', import.meta.url).href;

const VARIANTS: Record<string, AllocatorOptions> = {
  dynasoar: {},
  noshift: { rotation: false },
  nocoal: { coalescing: false },
  bitmap: { bitmapAlloc: true },
};

for (const threads of [1, 2]) {
  test(`wa-tor 48 × 40 and game-of-life 48 × 48: every variant gives the default's digests (${threads} thread${threads > 1 ? 's' : ''})`, async (t) => {
    const digests: Record<string, [number, number]> = {};
    for (const [name, allocator] of Object.entries(VARIANTS)) {
      const common = { threads, allocator, inlineBlocks: 0 };
      const wa = await createRuntime({ classes: WATOR, heap: '16MB', modules: [WATOR_MODULE], ...common });
      const gol = await createRuntime({ classes: GOL, heap: '16MB', modules: [GOL_MODULE], ...common });
      try {
        await watorInit(wa, 48, 40, 7);
        await golInit(gol, randomStart(48, 48, 0.3, 7));
        for (let k = 0; k < 12; k++) {
          await watorStep(wa);
          await golStep(gol);
          wa.validateHeap();
          gol.validateHeap();
        }
        digests[name] = [watorDigest(wa), golDigest(gol)];
        if (name === 'bitmap') {
          const s = wa.stats();
          let objects = 0;
          for (const ty of Object.values(s.types)) objects += ty.objects;
          t.is(s.heap.usedBlocks, objects, 'BitmapAlloc: one used block per object');
          t.is(s.heap.fragmentation, 0);
        }
      } finally {
        await wa.close();
        await gol.close();
      }
    }
    for (const name of Object.keys(VARIANTS)) t.deepEqual(digests[name], digests['dynasoar'], name);
  });
}

class Small extends object({ a: f32 }) {}
class Mixed extends object({ flag: u8, x: f64, y: f32, z: u8 }) {}

test('NoShift: the lowest free slot and the lowest free block; rotation starts elsewhere', async (t) => {
  const flat = await createRuntime({ classes: [Small], heap: MIN_HEAP_BYTES, allocator: { rotation: false }, seed: 9 });
  const rot = await createRuntime({ classes: [Small], heap: MIN_HEAP_BYTES, seed: 9 });
  try {
    const hs = Array.from({ length: 5 }, () => flat.create(Small).handle);
    t.deepEqual(hs, [32, 33, 34, 35, 36], 'block 1 (the lowest free), slots 0 … 4');
    t.false(flat.heap.flags.rotation);
    const first = rot.create(Small).handle;
    t.true(first !== 32, `with rotation the first object is not slot 0 of block 1 (got ${first})`);
    t.true(rot.heap.flags.rotation);
  } finally {
    await flat.close();
    await rot.close();
  }
});

test('BitmapAlloc layout: one slot per block, the largest class sets the block, fields at natural alignment', async (t) => {
  const table = planTypes([Small, Mixed], { bitmapAlloc: true });
  const small = table.byClass(Small)!;
  const mixed = table.byClass(Mixed)!;
  t.is(small.slots, 1);
  t.is(mixed.slots, 1);
  t.is(small.highMask, ~1);
  // Mixed: flag u8 at 16, x f64 at 24 (8-aligned), y f32 at 32, z u8 at 36: 21 bytes of data, block 16 + 21 → 48.
  t.deepEqual(
    mixed.fields.map((f) => f.offsets[0]),
    [16, 24, 32, 36],
  );
  t.is(table.blockBytes, 48);
  t.true(table.bitmapAlloc);
  const rt = await createRuntime({ classes: [Small, Mixed], heap: MIN_HEAP_BYTES, allocator: { bitmapAlloc: true } });
  try {
    t.is(rt.heap.plan.keepBlocks, 0, 'no kept blocks');
    t.deepEqual(rt.heap.flags, { atomic: false, rotation: true, coalescing: false, bitmapAlloc: true, ownFirstBlock: false });
    const m = rt.create(Mixed, { flag: 1, x: 2.5, y: 3.5, z: 4 });
    const s = rt.create(Small, { a: 7 });
    t.deepEqual([m.flag, m.x, m.y, m.z, s.a], [1, 2.5, 3.5, 4, 7]);
    t.is(m.handle & 31, 0);
    t.not(m.handle >>> 5, s.handle >>> 5, 'one block each');
    rt.destroy(m);
    t.true(rt.heap.free.get(s.handle >>> 5) === false && rt.heap.free.get(m.handle >>> 5), 'a released object frees its block at once');
    rt.validateHeap();
  } finally {
    await rt.close();
  }
});

test('bad allocator options are UsageErrors that say what to do', async (t) => {
  const bad: [Parameters<typeof createRuntime>[0], RegExp][] = [
    [{ classes: [Small], allocator: { bitmapAlloc: true }, backend: 'wasm' }, /bitmapAlloc.*use backend 'ts'/],
    [{ classes: [Small], allocator: { bitmapAlloc: true, coalescing: true } }, /nothing to coalesce/],
    [{ classes: [Small], allocator: { bitmapAlloc: true }, keepBlocks: 4 }, /keeps no emptied blocks/],
    [{ classes: [Small], allocator: { shift: false } as AllocatorOptions }, /allocator\.shift is not an allocator option/],
    [{ classes: [Small], allocator: { rotation: 'no' } as unknown as AllocatorOptions }, /allocator\.rotation must be true or false/],
    [
      { classes: [Small], allocator: { ownFirstBlock: 1 } as unknown as AllocatorOptions },
      /allocator\.ownFirstBlock must be true or false/,
    ],
  ];
  for (const [options, message] of bad) {
    await t.throwsAsync(createRuntime({ heap: MIN_HEAP_BYTES, ...options }), { instanceOf: UsageError, message });
  }
});
