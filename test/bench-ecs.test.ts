/**
 * The ECS comparison's cases (bench/ecs/): every case — smmo compiled and interpreted,
 * piecs, bitecs — runs each suite at the original entity counts for a few ops and passes
 * its own check; every smmo method runs compiled (checkCompiled); and the checks are not
 * vacuous: a wrong op count, a world left in the wrong state, or a method that falls back
 * to the interpreter makes them throw. No timing is asserted.
 */
import test from 'ava';
import { fileURLToPath } from 'node:url';
import { IMPLS, setupCase, type Impl } from '../bench/ecs/cases.js';
import { pairedSummary, runPaired } from '../bench/ecs/paired.js';
import { CaseCheckError, SUITE_NAMES, doubled, measure, type EcsCase } from '../bench/ecs/harness.js';
import { checkCompiled, smmoRuntime, type SmmoCase } from '../bench/ecs/smmo/common.js';
import { summarise } from '../bench/ecs/profile.js';
import { A as CycleA, B as CycleB } from '../bench/ecs/smmo/entity_cycle.js';
import { A as AddA, B as AddB } from '../bench/ecs/smmo/add_remove.js';
import { object, u32 } from '../runtime/index.js';

const OPS = 3;

/** Suites whose final state tells how many ops ran (the others check what each system does instead). */
const countsOps = (impl: string, suite: string): boolean =>
  !(impl.startsWith('smmo') && (suite === 'entity_cycle' || suite === 'add_remove'));

for (const suite of SUITE_NAMES) {
  for (const impl of IMPLS) {
    test(`${suite} / ${impl}: ${OPS} ops give the suite's result, and the check tells a wrong op count`, async (t) => {
      const c: EcsCase = await setupCase(impl, suite);
      try {
        for (let i = 0; i < OPS; i++) c.step();
        if (countsOps(impl, suite)) {
          // Before the passing check: an smmo check may run an update of its own.
          const e = t.throws(() => c.check(OPS + 1));
          t.true(e instanceof CaseCheckError, String(e));
        }
        t.notThrows(() => c.check(OPS));
        if (impl === 'smmo-largest')
          for (const s of Object.values((c as SmmoCase).runtime.stats().types)) t.is(s.slotsPerBlock, 32, "blockSize 'largest'");
        if (impl === 'smmo' || impl === 'smmo-largest') {
          const compiled = (c as SmmoCase).runtime.stats().compiled;
          t.true(Object.keys(compiled).length > 0);
          t.true(
            Object.values(compiled).every((s) => s.compiled && s.javascript === undefined),
            JSON.stringify(compiled),
          );
        }
        if (impl === 'smmo-interpreted') t.deepEqual((c as SmmoCase).runtime.stats().compiled, {});
        if (impl.startsWith('smmo')) (c as SmmoCase).runtime.validateHeap();
      } finally {
        await c.close?.();
      }
    });
  }
}

test('entity_cycle and add_remove (smmo): the check fails when a B is left over or an A is gone', async (t) => {
  for (const [suite, A, B] of [
    ['entity_cycle', CycleA, CycleB],
    ['add_remove', AddA, AddB],
  ] as const) {
    for (const spoil of ['extra B', 'missing A'] as const) {
      const c = (await setupCase('smmo', suite)) as SmmoCase;
      try {
        c.step();
        const rt = c.runtime;
        if (spoil === 'extra B') rt.create(B);
        else {
          let victim = 0;
          rt.deviceDo(A, (a) => void (victim = a.handle));
          rt.destroy(rt.get(A, victim));
        }
        const e = t.throws(() => c.check(1), undefined, `${suite}, ${spoil}`);
        t.true(e instanceof CaseCheckError, String(e));
      } finally {
        await c.close?.();
      }
    }
  }
});

let calls = 0;
/** Writes a module-level `let`: a compiled method calls it as JavaScript. */
function counted(x: number): number {
  calls++;
  return x + 1;
}

class Fallback extends object({ v: u32 }) {
  guarded(): void {
    for (const k in { a: 1 }) this.v += k.length;
  }
  plain(): void {
    this.v += 1;
  }
  partly(): void {
    this.v = counted(this.v);
  }
}

test('checkCompiled fails loudly when a method falls back, runs parts as JavaScript, or never ran', async (t) => {
  const rt = await smmoRuntime([Fallback], { compile: true });
  try {
    rt.create(Fallback);
    rt.doAll(Fallback, 'plain');
    t.notThrows(() => checkCompiled(rt, { compile: true }, ['Fallback.plain']));
    const never = t.throws(() => checkCompiled(rt, { compile: true }, ['Fallback.plain', 'Fallback.other']));
    t.regex(never.message, /Fallback\.other never ran/);
    rt.doAll(Fallback, 'guarded');
    const fell = t.throws(() => checkCompiled(rt, { compile: true }, ['Fallback.plain', 'Fallback.guarded']));
    t.true(fell instanceof CaseCheckError);
    t.regex(fell.message, /Fallback\.guarded fell back to the interpreter: .*for…in/);
    rt.doAll(Fallback, 'partly');
    t.is(calls, 1);
    const js = t.throws(() => checkCompiled(rt, { compile: true }, ['Fallback.plain', 'Fallback.partly']));
    t.regex(js.message, /Fallback\.partly runs parts as JavaScript/);
    t.throws(() => checkCompiled(rt, { compile: false }, []), { instanceOf: CaseCheckError });
  } finally {
    await rt.close();
  }
});

test('doubled() follows u32 and i32 wrap-around', (t) => {
  t.is(doubled(1, 3, 'u32'), 8);
  t.is(doubled(1, 31, 'u32'), 2 ** 31);
  t.is(doubled(1, 31, 'i32'), -(2 ** 31));
  t.is(doubled(1, 32, 'u32'), 0);
  t.is(doubled(1, 1e6, 'i32'), 0);
  t.is(doubled(3, 2, 'i32'), 12);
});

test('measure() runs doubling cycles, then the estimated count, and counts every op', (t) => {
  let calls = 0;
  const m = measure(() => {
    calls++;
  }, 2);
  t.is(m.totalOps, calls);
  t.true(m.count >= 1);
  t.true(m.opsPerSecond > 0);
  // The doubling phase runs 1 + 2 + 4 + … ops: 2^k - 1 of them before the final count.
  const doubling = calls - m.count;
  t.is(doubling & (doubling + 1), 0, `doubling ops ${doubling}`);
});

test('profile summary: self time, inclusive time and categories by the innermost named frame', (t) => {
  const frame = (id: number, functionName: string, children: number[] = []) => ({
    id,
    callFrame: { functionName, url: functionName === 'step' ? 'file:///x/ecs.js' : '', lineNumber: 4 },
    children,
  });
  // (root) → step → doAll → run_A_m → allocate ; doAll → snapshot ; (root) → (garbage collector)
  const profile = {
    nodes: [
      frame(1, '(root)', [2, 7]),
      frame(2, 'step', [3]),
      frame(3, 'doAll', [4, 6]),
      frame(4, 'run_A_m', [5]),
      frame(5, 'allocate'),
      frame(6, 'snapshot'),
      frame(7, '(garbage collector)'),
    ],
    samples: [4, 4, 5, 6, 3, 7, 2],
    timeDeltas: [1000, 1000, 2000, 3000, 500, 1500, 1000],
  };
  const s = summarise(profile, ['doAll', 'step']);
  t.is(s.totalMs, 10);
  t.deepEqual(s.self[0], ['snapshot', 3]);
  t.deepEqual(
    s.self.find(([k]) => k.startsWith('step')),
    ['step ecs.js:5', 1],
  );
  t.is(s.total.get('doAll'), 7.5);
  t.is(s.total.get('step'), 8.5);
  t.is(s.categories.get('compiled loop'), 2);
  t.is(s.categories.get('allocate (create)'), 2);
  t.is(s.categories.get('snapshot'), 3);
  t.is(s.categories.get('per-pass dispatch and checks'), 0.5);
  t.is(s.categories.get('setup and harness'), 1);
  t.is(s.categories.get('garbage collector'), 1.5);
  t.is(s.categories.get('other'), 0);
});

test('paired method: ratios within rounds, medians over them, a failed case left out', (t) => {
  const rounds = [
    { smmo: 100, piecs: 50, bitecs: 80 },
    { smmo: 60, piecs: 120, bitecs: 40 },
    { smmo: 90, piecs: 100, bitecs: 30 },
  ];
  const s = pairedSummary(rounds, ['smmo', 'piecs', 'bitecs']);
  t.deepEqual(s.ratios, [100 / 80, 60 / 120, 90 / 100], 'each round against its own best peer');
  t.deepEqual(s.ratio, { median: 0.9, min: 0.5, max: 1.25 });
  t.deepEqual(s.opsPerSecond, { smmo: 90, piecs: 100, bitecs: 40 });
  t.is(s.bestPeer, 'piecs');
  const none = pairedSummary([{ piecs: 10 }], ['smmo', 'piecs']);
  t.deepEqual(none.ratios, [null]);
  t.is(none.ratio, null);
});

test('paired method: children answer round after round and pass their checks; a child that fails is reported, not measured', async (t) => {
  const script = fileURLToPath(new URL('../bench/ecs.js', import.meta.url));
  const r = await runPaired(script, 'frag_iter', ['smmo', 'piecs'], 3, 20);
  t.deepEqual(r.failed, []);
  t.is(r.rounds.length, 3);
  for (const round of r.rounds) {
    t.true(round.smmo! > 0 && round.piecs! > 0, JSON.stringify(round));
  }
  t.true(r.counts.smmo! >= 1 && r.counts.piecs! >= 1);
  // An implementation the child does not know: it exits before answering.
  const bad = await runPaired(script, 'frag_iter', ['smmo', 'nonesuch' as Impl], 2, 20);
  t.is(bad.failed.length, 1);
  t.is(bad.failed[0]!.impl, 'nonesuch' as Impl);
  t.regex(bad.failed[0]!.error, /unknown implementation 'nonesuch'/);
  t.is(bad.rounds.length, 2);
  for (const round of bad.rounds) t.deepEqual(Object.keys(round), ['smmo']);
});
