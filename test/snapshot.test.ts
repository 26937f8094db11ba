/**
 * The pass-start view (runtime/thread.ts snapshot()): inside a do-all over Probe,
 * deviceDo(Mark) — a class the pass does not visit — must see exactly the Marks that
 * existed when the pass started and were not deleted since: not those created during
 * the pass (by this or another thread), not a Mark deleted before the walk. Between
 * passes, Marks created or deleted outside any pass must show in the next pass's view.
 * Each case runs on 1 and on 2 threads (workers take blocks: inlineBlocks 0), except
 * creating and deleting Marks in the same pass, which is exact on one thread only: on
 * several, a walk may visit a slot just before another thread frees it and a third
 * fills it again (a race in the user's program that no snapshot can exclude).
 *
 * These would fail for a snapshot that skipped the classes a pass does not visit (the
 * walk would see no Marks, or a stale set), or that copied a class's bits lazily at its
 * first deviceDo (the walk would see the Marks created earlier in the pass).
 */
import test, { type ExecutionContext } from 'ava';
import { createRuntime, type Runtime } from '../index.js';
import { CLASSES, CREATE, DELETE, FIXTURES, Mark, NEW, OLD, Probe } from './snapshot.fixtures.js';

const MARKS = 1000;
const PROBES = 3000;

async function setup(threads: number): Promise<{ rt: Runtime; marks: number[] }> {
  const rt = await createRuntime({
    classes: CLASSES,
    heap: '8MB',
    threads,
    ...(threads > 1 ? { modules: [FIXTURES], inlineBlocks: 0, startTimeoutMs: 120_000 } : {}),
  });
  const marks: number[] = [];
  for (let i = 0; i < MARKS; i++) {
    const m = rt.create(Mark);
    m.tag = OLD;
    marks.push(m.handle);
  }
  // Probe i deletes Mark i during the pass.
  for (let i = 0; i < PROBES; i++) rt.create(Probe).victim = i < MARKS ? rt.get(Mark, marks[i]!) : null;
  return { rt, marks };
}

interface Walk {
  order: number;
  thread: number;
  deleted: number;
  seen: number;
}

/**
 * Run probe(mode) over every Probe; check what holds on any thread count (each original
 * Probe visited once, the Probes it created not at all, no walk saw a Mark created in
 * the pass or its own deleted victim) and return the walks.
 */
async function probePass(t: ExecutionContext, rt: Runtime, mode: number): Promise<Walk[]> {
  await rt.parallelDo(Probe, 'probe', mode);
  const walks: Walk[] = [];
  let children = 0;
  const problems: string[] = [];
  rt.deviceDo(Probe, (p) => {
    if (p.child !== 0) {
      children++;
      if (p.visits !== 0) problems.push(`Probe ${p.handle}, created during the pass, was visited by it`);
      return;
    }
    if (p.visits !== 1) problems.push(`Probe ${p.handle} visited ${p.visits} times`);
    if (p.seenNew !== 0) problems.push(`Probe ${p.handle} saw ${p.seenNew} Marks created during the pass`);
    if (p.seenVictim !== 0) problems.push(`Probe ${p.handle} saw the Mark it had deleted`);
    walks.push({ order: p.order, thread: p.thread, deleted: p.deleted, seen: p.seen });
  });
  t.deepEqual(problems.slice(0, 5), []);
  t.is(walks.length, PROBES);
  t.is(children, (mode & CREATE) !== 0 ? PROBES : 0);
  rt.validateHeap();
  return walks;
}

/** On one thread, each walk sees the Marks less those deleted so far (by earlier Probes and itself). */
function checkSequential(t: ExecutionContext, walks: Walk[]): void {
  walks.sort((a, b) => a.order - b.order);
  let deleted = 0;
  let mismatches = 0;
  for (const w of walks) {
    deleted += w.deleted;
    if (w.seen !== MARKS - deleted) mismatches++;
  }
  t.is(mismatches, 0, 'walks that saw other than the Marks left at their time');
}

const threadsUsed = (walks: Walk[]): number => new Set(walks.map((w) => w.thread)).size;

test('one thread: deviceDo inside a pass sees the pass-start Marks, less those deleted, none created in the pass (slots reused)', async (t) => {
  const { rt } = await setup(1);
  try {
    const walks = await probePass(t, rt, CREATE | DELETE);
    checkSequential(t, walks);
    t.is(rt.count(Mark), MARKS - Math.min(MARKS, PROBES) + PROBES);
  } finally {
    await rt.close();
  }
});

for (const threads of [1, 2]) {
  test(`Marks created during a pass are not in its deviceDo view (${threads} thread(s))`, async (t) => {
    const { rt } = await setup(threads);
    try {
      const walks = await probePass(t, rt, CREATE);
      // Nothing is deleted: every walk sees exactly the pass-start Marks.
      t.deepEqual([...new Set(walks.map((w) => w.seen))], [MARKS]);
      t.is(rt.count(Mark), MARKS + PROBES);
      if (threads > 1) t.true(threadsUsed(walks) >= 2, 'the pass must run on the workers too');
    } finally {
      await rt.close();
    }
  });

  test(`Marks deleted during a pass are not in its deviceDo view (${threads} thread(s))`, async (t) => {
    const { rt } = await setup(threads);
    try {
      const walks = await probePass(t, rt, DELETE);
      const deletions = Math.min(MARKS, PROBES);
      t.is(
        walks.reduce((n, w) => n + w.deleted, 0),
        deletions,
      );
      if (threads === 1) checkSequential(t, walks);
      else {
        // Other threads' deletions may or may not have happened yet; the walker's own has.
        const outside = walks.filter((w) => w.seen > MARKS - w.deleted || w.seen < MARKS - deletions);
        t.deepEqual(outside.slice(0, 5), []);
        t.true(threadsUsed(walks) >= 2, 'the pass must run on the workers too');
      }
      t.is(rt.count(Mark), MARKS - deletions);
    } finally {
      await rt.close();
    }
  });

  test(`objects created and deleted between passes are in the next pass's view of a class it does not visit (${threads} thread(s))`, async (t) => {
    const { rt, marks } = await setup(threads);
    try {
      await rt.parallelDo(Probe, 'look');
      let wrong = 0;
      rt.deviceDo(Probe, (p) => {
        if (p.seen !== MARKS) wrong++;
      });
      t.is(wrong, 0, 'first pass: every Probe sees every Mark');
      // Outside any pass: 7 new Marks, 5 old ones deleted. The next pass over Probe (not
      // Mark) must see the new set.
      for (let i = 0; i < 7; i++) rt.create(Mark).tag = NEW;
      for (let i = 0; i < 5; i++) rt.destroy(rt.get(Mark, marks[MARKS - 1 - i]!));
      await rt.parallelDo(Probe, 'look');
      const seen = new Map<number, number>();
      rt.deviceDo(Probe, (p) => seen.set(p.seen, (seen.get(p.seen) ?? 0) + 1));
      t.deepEqual([...seen], [[MARKS + 7 - 5, PROBES]]);
      rt.validateHeap();
    } finally {
      await rt.close();
    }
  });
}
