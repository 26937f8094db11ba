/**
 * The user-style models (bench/models/: walkers, epidemic, particles): the smmo version — interpreted and
 * compiled, on 1 and 2 threads — and the plain typed-array version give the same digest
 * after every step, and the heap stays valid; the model really creates and deletes walkers.
 */
import test, { type ExecutionContext } from 'ava';
import { createRuntime, type Runtime, type SmmoClass } from '../index.js';
import * as Epidemic from '../bench/models/epidemic.js';
import { PlainEpidemic } from '../bench/models/epidemic-plain.js';
import * as Particles from '../bench/models/particles.js';
import { PlainParticles } from '../bench/models/particles-plain.js';
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
        t.is(digest(rt, tiles), expected[i]!, `compile ${compile}, ${threads} threads, step ${i + 1}`);
        t.is(rt.count(Walker), populations[i]!);
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

/** A model's smmo side and plain side, for the shared test below. */
interface ModelUnderTest<W> {
  readonly classes: readonly SmmoClass[];
  readonly moduleUrl: string;
  readonly counted: SmmoClass;
  init(rt: Runtime, width: number, height: number): Promise<W>;
  step(rt: Runtime, world: W): Promise<void>;
  digest(rt: Runtime, world: W): number;
  plain(width: number, height: number): { step(): void; digest(): number; population(): number; created: number; deleted: number };
}

/**
 * Plain JS, interpreted and compiled on 1 and 2 threads give the same digest and the same
 * population after every step, the heap stays valid, every method compiles, and objects
 * are really created and deleted.
 */
async function agree<W>(t: ExecutionContext, m: ModelUnderTest<W>, width: number, height: number, steps: number): Promise<number[]> {
  const plain = m.plain(width, height);
  const expected: number[] = [];
  const populations: number[] = [];
  for (let i = 0; i < steps; i++) {
    plain.step();
    expected.push(plain.digest());
    populations.push(plain.population());
  }
  // The smmo runs below agree with these counts step by step, so they create and delete too.
  t.true(plain.created > 0 && plain.deleted > 0, `created ${plain.created}, deleted ${plain.deleted}`);
  for (const [compile, threads] of [
    [false, 1],
    [true, 1],
    [true, 2],
  ] as const) {
    const rt = await createRuntime({ classes: m.classes, heap: '16MB', compile, threads, modules: [m.moduleUrl], inlineBlocks: 0 });
    try {
      const world = await m.init(rt, width, height);
      for (let i = 0; i < steps; i++) {
        await m.step(rt, world);
        rt.validateHeap();
        t.is(m.digest(rt, world), expected[i]!, `compile ${compile}, ${threads} threads, step ${i + 1}`);
        t.is(rt.count(m.counted), populations[i]!);
      }
      if (compile) {
        const c = rt.stats().compiled;
        t.is(Object.keys(c).length, 4);
        // Compiled whole: no fallback and no part left as JavaScript.
        t.true(
          Object.values(c).every((s) => s.compiled && s.javascript === undefined),
          JSON.stringify(c),
        );
      }
    } finally {
      await rt.close();
    }
  }
  return populations;
}

test('epidemic: plain JS, interpreted and compiled methods on 1 and 2 threads agree after every step', async (t) => {
  const populations = await agree(
    t,
    {
      classes: Epidemic.CLASSES,
      moduleUrl: Epidemic.MODULE_URL,
      counted: Epidemic.Person,
      init: Epidemic.init,
      step: Epidemic.step,
      digest: Epidemic.digest,
      plain: (w, h) => new PlainEpidemic(w, h),
    },
    W,
    H,
    STEPS,
  );
  t.true(new Set(populations).size > 3, `populations ${populations.join(' ')}`);
  // The disease spreads: the plain model has infected persons after the first steps.
  const p = new PlainEpidemic(W, H);
  const infected: number[] = [];
  for (let i = 0; i < STEPS; i++) {
    p.step();
    infected.push(p.infected());
  }
  t.true(new Set(infected).size > 3 && infected.every((k) => k > 0), `infected ${infected.join(' ')}`);
});

test('particles: plain JS, interpreted and compiled methods on 1 and 2 threads agree after every step', async (t) => {
  const populations = await agree(
    t,
    {
      classes: Particles.CLASSES,
      moduleUrl: Particles.MODULE_URL,
      counted: Particles.Particle,
      init: Particles.init,
      step: Particles.step,
      digest: Particles.digest,
      plain: (w, h) => new PlainParticles(w, h),
    },
    W,
    H,
    3 * STEPS,
  );
  t.true(new Set(populations).size > 10, `populations ${populations.join(' ')}`);
});
