/**
 * The user-style walkers model (bench/models/): the smmo version — interpreted and
 * compiled, on 1 and 2 threads — and the plain typed-array version give the same digest
 * after every step, and the heap stays valid; the model really creates and deletes walkers.
 */
import test from 'ava';
import { createRuntime } from '../index.js';
import { CLASSES, MODULE_URL, Walker, digest, init, step } from '../bench/models/walkers.js';
import { PlainWalkers } from '../bench/models/walkers-plain.js';

const W = 40;
const H = 33;
const STEPS = 12;

test('walkers: plain JS, interpreted and compiled methods on 1 and 2 threads agree after every step', async (t) => {
  const plain = new PlainWalkers(W, H);
  const expected: number[] = [];
  const populations: number[] = [];
  for (let i = 0; i < STEPS; i++) {
    plain.step();
    expected.push(plain.digest());
    populations.push(plain.walkers());
  }
  // Walkers are born and die: the population changes from step to step.
  t.true(new Set(populations).size > 3, `populations ${populations.join(' ')}`);
  for (const [compile, threads] of [
    [false, 1],
    [true, 1],
    [true, 2],
  ] as const) {
    const rt = await createRuntime({ classes: CLASSES, heap: '16MB', compile, threads, modules: [MODULE_URL], inlineBlocks: 0 });
    try {
      const tiles = await init(rt, W, H);
      for (let i = 0; i < STEPS; i++) {
        await step(rt);
        rt.validateHeap();
        t.is(digest(rt, tiles), expected[i], `compile ${compile}, ${threads} threads, step ${i + 1}`);
        t.is(rt.count(Walker), populations[i]);
      }
      if (compile)
        t.true(
          Object.values(rt.stats().compiled).every((s) => s.compiled),
          JSON.stringify(rt.stats().compiled),
        );
    } finally {
      await rt.close();
    }
  }
});
