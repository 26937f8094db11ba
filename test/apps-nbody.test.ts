/**
 * nbody baselines (apps/nbody/baseline_*.ts): the same start as the smmo app and a
 * digest within tolerance after several steps.
 */
import test from 'ava';
import { BASELINES, loadBaseline, WITHOUT_BASELINES } from '../apps/baselines/index.js';
import { appNames } from '../apps/registry.js';
import { NbodyAos } from '../apps/nbody/baseline_aos.js';
import { NbodySoa } from '../apps/nbody/baseline_soa.js';
import { CLASSES, digest, init, step } from '../apps/nbody/nbody.js';
import { createRuntime } from '../index.js';

/**
 * Tolerance on the digest per body. Both sides sum forces in float64 and store f32; the
 * only difference is the order of the sum (smmo: handle order, baselines: index order),
 * which changes the float64 sum by ~1e-16 relative and so, rarely, flips the rounding
 * of an f32 store by one ulp (~1e-7 relative). Over a few steps that stays far below 1e-6.
 */
const TOLERANCE_PER_BODY = 1e-6;

test('smmo, AOS and SOA nbody agree (400 bodies, 10 steps)', async (t) => {
  const n = 400;
  const rt = await createRuntime({ classes: CLASSES, heap: '16MB' });
  const aos = new NbodyAos(n, 42);
  const soa = new NbodySoa(n, 42);
  try {
    await init(rt, n, 42);
    t.is(aos.digest(), digest(rt), 'same start');
    t.is(soa.digest(), digest(rt), 'same start');
    const before = digest(rt);
    for (let k = 0; k < 10; k++) {
      await step(rt);
      aos.step();
      soa.step();
    }
    const d = digest(rt);
    t.not(d, before, 'the bodies moved');
    t.true(Math.abs(aos.digest() - d) <= TOLERANCE_PER_BODY * n, `AOS ${aos.digest()} vs ${d}`);
    t.true(Math.abs(soa.digest() - d) <= TOLERANCE_PER_BODY * n, `SOA ${soa.digest()} vs ${d}`);
    t.deepEqual(aos.counts(), { Body: n });
  } finally {
    await rt.close();
  }
});

test('the baselines registry has an AOS and an SOA baseline for every app, or says why not', async (t) => {
  for (const app of ['nbody', 'collision', 'wa-tor', 'game-of-life', 'generation', 'traffic', 'structure', 'sugarscape', 'barnes-hut']) {
    for (const layout of ['aos', 'soa'] as const) {
      const b = await loadBaseline(app, layout);
      t.is(b?.app, app);
      t.is(b?.layout, layout);
    }
  }
  t.is(await loadBaseline('no-such-app', 'aos'), undefined);
  // Every registered app: both baselines, or none and a reason (never silently neither).
  t.deepEqual([...WITHOUT_BASELINES.keys()], ['linux-scalability']);
  for (const app of appNames()) {
    const without = WITHOUT_BASELINES.get(app);
    t.is(BASELINES.has(app), without === undefined, app);
    if (without !== undefined) {
      t.true(without.length > 20, `${app}: a reason`);
      t.is(await loadBaseline(app, 'aos'), undefined);
      t.is(await loadBaseline(app, 'soa'), undefined);
    }
  }
});
