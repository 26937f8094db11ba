/**
 * Do-alls on the calling thread whose compiled method creates objects of classes the
 * do-all does not visit take their lanes from the allocation words and copy no iteration
 * word (runtime/thread.ts readsAllocation R1, runtime/doall.ts F1):
 *  - they leave the heap that interpreted methods leave, byte for byte (but the iteration
 *    words: test/helpers/heap-bytes.ts), after every round
 *    (creating, and creating while deleting the lane's own object), on runtimes of one thread
 *    and through doAll;
 *  - they copy no iteration word (ThreadContext.copyIteration is not called); a method that
 *    creates objects of the class it visits still does, and visits none of its new objects;
 *  - the core's reclaim of empty blocks when none is free (core.rs K3) may give an empty
 *    listed block of the visited class to the created class in the middle of the pass: the
 *    generated runner skips it (its type is no longer its class), as the interpreted
 *    method, whose lanes come from the snapshot's copy, does — the heaps stay equal.
 */
import test from 'ava';
import { createRuntime, HeapExhaustedError, type Runtime } from '../index.js';
import { MIN_HEAP_BYTES } from '../runtime/layout.js';
import type { ThreadContext } from '../runtime/thread.js';
import { heapDifference } from './helpers/heap-bytes.js';
import { MODULE_URL, Seed, Sprout } from './direct-create.fixtures.js';

async function make(compile: boolean, heap: number | string = '4MB'): Promise<Runtime> {
  return createRuntime({ classes: [Seed, Sprout], heap, threads: 1, compile, modules: [MODULE_URL], seed: 3 });
}

/** Count the calls of the calling thread's copyIteration (the snapshot's copy of iteration words) from now on. */
function countCopies(rt: Runtime): { n: number } {
  const ctx = rt.context as unknown as ThreadContext;
  const c = { n: 0 };
  const copy = ctx.copyIteration.bind(ctx);
  ctx.copyIteration = (from: number, to: number): void => {
    c.n++;
    copy(from, to);
  };
  return c;
}

test('creating objects of another class: no iteration word copied, the interpreted heap byte for byte', async (t) => {
  const compiled = await make(true);
  const interpreted = await make(false);
  const runs = [compiled, interpreted];
  try {
    for (const rt of runs) for (let i = 0; i < 2000; i++) rt.create(Seed, { v: i });
    const copies = countCopies(compiled);
    for (let round = 0; round < 6; round++) {
      for (const rt of runs) {
        await rt.parallelDo(Seed, 'sprout', 3 + round);
        rt.doAll(Seed, 'sproutAndDie');
        // Between do-alls: Seeds created and deleted outside passes.
        for (let i = 0; i < 50; i++) rt.create(Seed, { v: 5000 + round * 100 + i });
      }
      t.is(heapDifference(compiled, interpreted), null, `round ${round}`);
      t.is(compiled.count(Sprout), interpreted.count(Sprout));
    }
    t.is(copies.n, 0, 'no snapshot copy on the compiled runtime');
    t.deepEqual(compiled.stats().compiled['Seed.sprout']?.compiled, true);
    compiled.validateHeap();
    // The last sproutAndDie deleted every odd Seed alive then; the even ones and the later ones remain.
    let odd = 0;
    compiled.deviceDo(Seed, (s) => {
      if (s.v < 5000 && (s.v & 1) === 1) odd++;
    });
    t.is(odd, 0);
  } finally {
    for (const rt of runs) await rt.close();
  }
});

test('creating objects of the visited class still copies, and visits none of the new objects', async (t) => {
  const rt = await make(true);
  try {
    for (let i = 0; i < 500; i++) rt.create(Seed, { v: i });
    const copies = countCopies(rt);
    rt.doAll(Seed, 'spawnSeed');
    t.is(copies.n, 1, 'one snapshot copy');
    t.is(rt.count(Seed), 1000, 'each of the 500 spawned once');
  } finally {
    await rt.close();
  }
});

test('an empty listed block given to the created class in the middle of the pass is skipped (core K3)', async (t) => {
  const runs = [await make(true, MIN_HEAP_BYTES), await make(false, MIN_HEAP_BYTES)];
  try {
    const slots = runs[0]!.table.byClass(Seed)!.slots;
    const facts: string[] = [];
    for (const rt of runs) {
      // Seeds over at least two blocks; the lowest block keeps its Seeds, the others are emptied later.
      const seeds = [];
      for (let i = 0; i < 3 * slots; i++) seeds.push(rt.create(Seed, { v: 0 }));
      const blocks = [...new Set(seeds.map((s) => s.handle >>> 5))].sort((x, y) => x - y);
      const low = blocks[0]!;
      let first = true;
      for (const s of seeds) {
        if (s.handle >>> 5 !== low)
          s.v = 100; // emptied below
        else if (first) {
          s.v = 1; // the one that creates
          first = false;
        } else s.v = 2;
      }
      // Fill the heap with Sprouts: no free block, no free Sprout slot.
      let sprouts = 0;
      for (;;) {
        try {
          rt.create(Sprout, { from: -1 });
          sprouts++;
        } catch (e) {
          if (!(e instanceof HeapExhaustedError)) throw e;
          break;
        }
      }
      // Empty every Seed block but the lowest: they stay listed (kept or open, core.rs K1, K4).
      rt.doAll(Seed, 'dieFrom', 100);
      // The create of the one Seed with v = 1 finds no free block: the core gives back the
      // empty Seed blocks (K3) and opens one of them for the Sprout. The lanes of that block
      // must not run Seed.sproutOne (they would read the Sprout as a Seed).
      rt.doAll(Seed, 'sproutOne');
      facts.push(`${rt.count(Seed)} seeds, ${rt.count(Sprout) - sprouts} new sprouts`);
      let visits = 0;
      rt.deviceDo(Seed, (s) => {
        visits += s.w;
      });
      facts.push(`visits ${visits}`);
      rt.validateHeap();
    }
    t.deepEqual(facts[0], `${slots} seeds, 1 new sprouts`);
    t.deepEqual(facts.slice(0, 2), facts.slice(2), 'compiled as interpreted');
    t.is(facts[1], `visits ${slots}`, 'every Seed of the lowest block visited once, nothing else');
    t.is(heapDifference(runs[0]!, runs[1]!), null, 'the same heap bytes');
  } finally {
    for (const rt of runs) await rt.close();
  }
});
