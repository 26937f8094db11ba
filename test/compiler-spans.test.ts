/**
 * Classes that share their compiled code, run as one pass (runtime/compiler/index.ts C4,
 * runtime/doall.ts S1), and the per-plan block lists behind it (runtime/thread.ts
 * snapshotLists L4). Checked here:
 *  - the concrete classes of a base whose inherited method compiles to the same code get
 *    one runner; a class laid out otherwise, or a method whose statics differ, gets its own
 *    (Doubled and Tripled differ in an array they read: sharing them would scale wrongly);
 *  - a do-all over the base calls that runner once per span of adjacent classes with
 *    blocks — P1 + P2, P3, the empty class alone, P4 + Doubled + Tripled — not once per
 *    class;
 *  - the heap is the interpreted one after every do-all, with objects created and deleted
 *    between do-alls (a class emptied and filled again, new blocks, the first objects of a
 *    class whose method creates objects) and do-alls over the base and over one class
 *    alternating (two plans, each with its own lists);
 *  - a lane that throws in a span is reported with its own class and handle, and the heap
 *    after it is the interpreted one;
 *  - a method that deletes its own object (and no other) also reads the allocation words
 *    and runs a span as one call, and leaves the interpreted heap byte for byte.
 */
import test from 'ava';
import { createRuntime, MethodError, type Runtime, type SmmoClass } from '../index.js';
import type { ThreadContext } from '../runtime/thread.js';
import type { CompileOutcome } from '../runtime/compiler/index.js';
import { heapDifference } from './helpers/heap-bytes.js';
import { Doubled, Empty, P1, P2, P3, P4, Part, SPAN_CLASSES, SPANS_FIXTURES, Spawner, Tripled, Wide } from './spans.fixtures.js';

const FILLED = [P1, P2, Wide, P3, P4, Doubled, Tripled] as const;

async function make(compile: boolean, perClass = 70): Promise<Runtime> {
  const rt = await createRuntime({ classes: SPAN_CLASSES, heap: '4MB', compile, seed: 4, modules: [SPANS_FIXTURES] });
  let v = 0;
  for (let i = 0; i < perClass; i++) for (const cls of FILLED) rt.create(cls as SmmoClass, { v: v++ });
  return rt;
}

function outcome(rt: Runtime, name: string): CompileOutcome & { compiled: true } {
  const c = (rt.context as unknown as ThreadContext).compileUse.get(name);
  if (c === undefined || !c.compiled) throw new Error(`${name} did not compile: ${JSON.stringify(c)}`);
  return c;
}

test('spans: one runner per distinct compiled code, by source and statics', async (t) => {
  const rt = await make(true);
  try {
    // The class order the spans below rely on.
    t.deepEqual(
      (rt.context as unknown as ThreadContext).table.types.filter((x) => !x.abstract).map((x) => x.name),
      ['P1', 'P2', 'Wide', 'P3', 'Empty', 'P4', 'Doubled', 'Tripled', 'Spawner'],
    );
    rt.doAll(Part, 'bump', 1);
    const shared = outcome(rt, 'P1.bump').run;
    for (const name of ['P2', 'P3', 'Empty', 'P4', 'Doubled', 'Tripled']) t.is(outcome(rt, `${name}.bump`).run, shared, name);
    t.not(outcome(rt, 'Wide.bump').run, shared, 'another layout: another runner');
    const before = new Map<number, number>();
    rt.deviceDo(Part, (o) => before.set(o.handle, o.v));
    rt.doAll(Doubled, 'scale');
    rt.doAll(Tripled, 'scale');
    t.not(outcome(rt, 'Doubled.scale').run, outcome(rt, 'Tripled.scale').run, 'the same source, other statics: other runners');
    t.is(outcome(rt, 'Doubled.scale').source.replace(/run_Doubled_/, 'run_Tripled_'), outcome(rt, 'Tripled.scale').source);
    let n = 0;
    rt.deviceDo(Doubled, (o) => void (n++, t.is(o.v, 2 * before.get(o.handle)!)));
    rt.deviceDo(Tripled, (o) => void (n++, t.is(o.v, 3 * before.get(o.handle)!)));
    t.is(n, 140);
  } finally {
    await rt.close();
  }
});

/**
 * Replace the compiled `method` of the classes that share P1's code (and of Empty, which
 * has no objects) by one wrapper of that runner that counts its calls; returns the count so far.
 */
function countSharedRuns(rt: Runtime, method: string): () => number {
  const shared = outcome(rt, `P1.${method}`).run;
  let calls = 0;
  const counted = ((...a: Parameters<typeof shared>) => {
    calls++;
    shared(...a);
  }) as typeof shared;
  for (const cls of [P1, P2, P3, Empty, P4, Doubled, Tripled]) (outcome(rt, `${cls.name}.${method}`) as { run: unknown }).run = counted;
  return () => calls;
}

test('spans: a do-all over the base calls the shared runner once per span of adjacent classes', async (t) => {
  const rt = await make(true);
  try {
    rt.doAll(Part, 'bump', 1); // compiles every class's bump
    const calls = countSharedRuns(rt, 'bump');
    rt.doAll(Part, 'bump', 1);
    // P1 + P2 | Wide (its own runner) | P3 | Empty (no blocks: a call of its own, over nothing) | P4 + Doubled + Tripled | Spawner (its own)
    t.is(calls(), 4);
    await rt.parallelDo(Part, 'bump', 1); // one thread: parallelDo is doAll
    t.is(calls(), 8);
    // Spawner's objects make the do-all one that creates: no spans, every class a pass (the empty one too).
    rt.create(Spawner, { v: 1 });
    rt.doAll(Part, 'bump', 1);
    t.is(calls(), 8 + 7); // P1, P2, P3, Empty, P4, Doubled, Tripled
  } finally {
    await rt.close();
  }
});

test('spans: a method that deletes its own object runs a span as one call and leaves the interpreted heap', async (t) => {
  const a = await make(false);
  const b = await make(true);
  try {
    for (const rt of [a, b]) rt.doAll(Part, 'cut', 97); // compiles every class's cut
    t.is(heapDifference(b, a), null, 'cut(97)');
    const calls = countSharedRuns(b, 'cut');
    // A class's v values step by 7, so each m deletes a part of every class, never all of one.
    for (const m of [11, 13, 17, 19]) {
      for (const rt of [a, b]) rt.doAll(Part, 'cut', m);
      t.is(heapDifference(b, a), null, `cut(${m})`);
      t.is(b.count(Part), a.count(Part));
    }
    t.is(calls(), 4 * 4, 'P1 + P2 | P3 | Empty | P4 + Doubled + Tripled in each do-all');
    t.true(b.count(Part) < 7 * 70 - 40, 'objects were deleted');
    for (const rt of [a, b]) rt.validateHeap();
    t.is(heapDifference(b, a), null, 'after validateHeap');
  } finally {
    await a.close();
    await b.close();
  }
});

test('spans: the interpreted heap after every do-all, with objects created and deleted between them', async (t) => {
  const a = await make(false);
  const b = await make(true);
  try {
    for (let round = 0; round < 6; round++) {
      for (const rt of [a, b]) {
        rt.doAll(Part, 'bump', round + 1);
        rt.doAll(P3, 'bump', 10);
      }
      t.is(heapDifference(b, a), null, `round ${round}: after the do-alls`);
      for (const rt of [a, b]) {
        // Empty P2 entirely on even rounds (its blocks leave), fill it again on odd ones; grow P4 by a block.
        if (round % 2 === 0) {
          const gone: number[] = [];
          rt.deviceDo(P2, (o) => void gone.push(o.handle));
          for (const h of gone) rt.destroy(rt.get(P2, h));
        } else for (let i = 0; i < 40; i++) rt.create(P2, { v: 1000 * round + i });
        for (let i = 0; i < 33; i++) rt.create(P4, { v: -i });
        if (round === 3) for (let i = 0; i < 5; i++) rt.create(Empty, { v: i });
        // From round 2 on, bump creates Spawners: the lists' fusable answer must be worked out again.
        if (round === 2) rt.create(Spawner, { v: 1 });
      }
      t.is(heapDifference(b, a), null, `round ${round}: after the creates and deletes`);
      for (const rt of [a, b]) rt.doAll(Part, 'bump', 1);
      t.is(heapDifference(b, a), null, `round ${round}: the do-all after them`);
      t.is(b.count(P2), a.count(P2));
      for (const rt of [a, b]) rt.validateHeap(); // both: it gives back the kept blocks of a one-thread runtime
    }
  } finally {
    await a.close();
    await b.close();
  }
});

test('spans: a lane that throws is named with its own class, and the heap is the interpreted one', async (t) => {
  for (const victim of [P2, P4, Tripled]) {
    const a = await make(false);
    const b = await make(true);
    try {
      for (const rt of [a, b]) rt.doAll(Part, 'bump', 0); // compile first: the spans form on the next do-all
      let at = 0;
      let handle = 0;
      let seen = 0;
      a.deviceDo(victim, (o) => {
        if (++seen === 40) [at, handle] = [o.v, o.handle]; // in the class's second block
      });
      t.not(handle, 0);
      for (const rt of [a, b]) {
        const e = t.throws(() => rt.doAll(Part, 'trip', at), { instanceOf: MethodError })!;
        t.is(e.typeName, victim.name, `${victim.name}: the class of the lane that threw`);
        t.is(e.handle, handle);
        t.regex(e.message, new RegExp(`^${victim.name}\\.trip threw on object ${handle} .*trip at ${at}`));
      }
      t.is(heapDifference(b, a), null, `${victim.name}: the heap after the throw`);
    } finally {
      await a.close();
      await b.close();
    }
  }
});

test('spans: a class laid out otherwise between two shared ones is its own pass', async (t) => {
  // Wide sits between P2 and P3; if a span ran over it with P1's code, Wide's v (at another
  // offset in its blocks) would stay and something else would change.
  const rt = await make(true);
  try {
    const v = new Map<number, number>();
    rt.deviceDo(Wide, (o) => v.set(o.handle, o.v));
    for (let k = 0; k < 3; k++) rt.doAll(Part, 'bump', 5);
    let n = 0;
    rt.deviceDo(Wide, (o) => {
      n++;
      t.is(o.v, v.get(o.handle)! + 15);
      t.is(o.w, 0);
    });
    t.is(n, 70);
  } finally {
    await rt.close();
  }
});

test('a do-all over one class after one over its base copies the iteration words of its own blocks', async (t) => {
  // The base's do-all walks every concrete class into R; the do-all over Tripled reuses that
  // walk (thread.ts L2), so Tripled's list does not start at R[0]. Its method reads an array
  // (not portable): its pass reads iteration words, which the snapshot must copy for
  // Tripled's blocks — not for the first blocks of R — or the object created in between
  // (in a block already listed, so no walk) is not visited.
  const a = await make(false);
  const b = await make(true);
  try {
    for (const rt of [a, b]) {
      rt.doAll(Part, 'bump', 1);
      rt.create(Tripled, { v: 1000 });
      rt.doAll(Tripled, 'scale');
    }
    t.is(heapDifference(b, a), null);
    const seen: number[] = [];
    b.deviceDo(Tripled, (o) => void (o.v === 3000 && seen.push(o.handle)));
    t.is(seen.length, 1, 'the new Tripled was scaled');
  } finally {
    await a.close();
    await b.close();
  }
});
