/**
 * The snapshot's copy fused into the pass (runtime/doall.ts F1–F2, KIND_DO_COPY): on the
 * executor, a do-all whose compiled method creates no object, deletes none but the lane's
 * own, calls no JavaScript and has no deviceDo sets each block's iteration word in the claim
 * that runs the block instead of in a copy pass of its own. Checked here on 3 threads with
 * every pass sent to the workers:
 *  - such do-alls fuse (counters.fusedCopies) and visit exactly the objects live when they
 *    started — objects created and deleted outside passes between do-alls included — with
 *    the same results as one thread;
 *  - a method that deletes its own object fuses too, and leaves the heap that one thread
 *    and interpreted methods leave;
 *  - a method that creates objects, one that deletes another object, one with a deviceDo
 *    and an interpreted one do not fuse; the creating one would visit its own new objects
 *    if it did (the count after the pass tells).
 */
import test from 'ava';
import { createRuntime, type Runtime } from '../index.js';
import type { PassRunner } from '../runtime/doall.js';
import { Item, MODULE_URL } from './fused-copy.fixtures.js';

const passesOf = (rt: Runtime): PassRunner => (rt as unknown as { passes: PassRunner }).passes;

async function make(threads: number, compile = true): Promise<Runtime> {
  return createRuntime({
    classes: [Item],
    heap: '8MB',
    threads,
    compile,
    modules: [MODULE_URL],
    inlineBlocks: 0,
    inlineMicros: 0,
    seed: 5,
  });
}

/** Every live Item's (v, w, next's v), sorted by v: what a run computed, independent of handles. */
function state(rt: Runtime): string {
  const rows: string[] = [];
  rt.deviceDo(Item, (o) => rows.push(`${o.v}:${o.w}:${o.next === null ? '-' : o.next.v}`));
  return rows.sort().join(' ');
}

test('fusable do-alls fuse their copy and give the results of one thread, with objects created and deleted between them', async (t) => {
  const one = await make(1);
  const three = await make(3);
  try {
    for (const rt of [one, three]) {
      const items = [];
      for (let i = 0; i < 700; i++) items.push(rt.create(Item, { v: i }));
      for (let i = 0; i < items.length; i++) items[i]!.next = items[(i * 7 + 3) % items.length]!;
    }
    const before = { ...passesOf(three).counters };
    for (let round = 0; round < 6; round++) {
      for (const rt of [one, three]) {
        await rt.parallelDo(Item, 'bump', round + 1);
        await rt.parallelDo(Item, 'pull');
        // Between do-alls: new objects (must be visited by the next do-all) and deleted ones (must not).
        for (let i = 0; i < 40; i++) rt.create(Item, { v: 5000 + round * 100 + i });
        const victims: number[] = [];
        rt.deviceDo(Item, (o) => {
          if (o.v % 11 === round) victims.push(o.handle);
        });
        for (const h of victims) {
          rt.deviceDo(Item, (o) => {
            if (o.next !== null && o.next.handle === h) o.next = null;
          });
          rt.destroy(rt.get(Item, h));
        }
      }
      t.is(state(three), state(one), `round ${round}`);
      three.validateHeap();
    }
    const after = passesOf(three).counters;
    t.is(after.fusedCopies - before.fusedCopies, 12, 'every bump and pull fused its copy');
    t.is(after.copyPasses, before.copyPasses, 'no copy pass of its own');
  } finally {
    await one.close();
    await three.close();
  }
});

test('a creating pass does not fuse, and visits none of its new objects', async (t) => {
  const rt = await make(3);
  try {
    for (let i = 0; i < 3000; i++) rt.create(Item, { v: i });
    const before = passesOf(rt).counters.fusedCopies;
    await rt.parallelDo(Item, 'spawn');
    t.is(passesOf(rt).counters.fusedCopies, before, 'spawn creates objects: no fusion');
    t.is(rt.count(Item), 6000, 'each of the 3000 objects spawned once; no new object was visited');
    rt.validateHeap();
  } finally {
    await rt.close();
  }
});

test('a pass that deletes only its own objects fuses, and leaves the heap of one thread and of interpreted methods', async (t) => {
  const one = await make(1);
  const three = await make(3);
  const interpreted = await make(3, false);
  const runs = [one, three, interpreted];
  try {
    for (const rt of runs) for (let i = 0; i < 3000; i++) rt.create(Item, { v: i });
    const before = { ...passesOf(three).counters };
    for (let round = 0; round < 5; round++) {
      for (const rt of runs) {
        await rt.parallelDo(Item, 'thin', round);
        await rt.parallelDo(Item, 'bump', 1);
        // Between do-alls: new objects, some of which the next thin deletes.
        for (let i = 0; i < 90; i++) rt.create(Item, { v: 9000 + round * 100 + i });
        rt.validateHeap();
      }
      t.is(state(three), state(one), `round ${round}: 3 threads as one`);
      t.is(state(interpreted), state(one), `round ${round}: compiled as interpreted`);
      t.is(three.count(Item), one.count(Item));
    }
    const after = passesOf(three).counters;
    t.is(after.fusedCopies - before.fusedCopies, 10, 'every thin and bump fused its copy');
    t.is(after.copyPasses, before.copyPasses, 'no copy pass of its own');
    // Every object whose v ≡ k (mod 7) for a round k at or after its creation is gone.
    let wrong = 0;
    three.deviceDo(Item, (o) => {
      if (o.v < 9000 && o.v % 7 <= 4) wrong++;
    });
    t.is(wrong, 0);
  } finally {
    for (const rt of runs) await rt.close();
  }
});

test('passes that delete another object, iterate or run interpreted do not fuse', async (t) => {
  const rt = await make(3);
  try {
    for (let i = 0; i < 3000; i++) rt.create(Item, { v: i });
    const c = passesOf(rt).counters;
    // Pairs: even i's next is i + 1, so dropNext deletes each odd object once.
    const handles: number[] = [];
    rt.deviceDo(Item, (o) => {
      handles[o.v] = o.handle;
    });
    for (let i = 0; i + 1 < 3000; i += 2) rt.get(Item, handles[i]!).next = rt.get(Item, handles[i + 1]!);
    for (const m of ['dropNext', 'count', 'logs'] as const) {
      const before = c.fusedCopies;
      await rt.parallelDo(Item, m);
      t.is(c.fusedCopies, before, `${m}: no fusion`);
    }
    t.is(rt.count(Item), 1500);
    let seen = -1;
    rt.deviceDo(Item, (o) => {
      seen = o.w;
    });
    t.true(seen >= 1, 'count and logs ran');
    const fusedBefore = c.fusedCopies;
    await rt.parallelDo(Item, 'bump', 1);
    t.is(c.fusedCopies, fusedBefore + 1, 'bump still fuses');
    rt.validateHeap();
  } finally {
    await rt.close();
  }
});

test("blocks the calling thread kept from deletes outside passes go back before a pass starts (K2')", async (t) => {
  // Every thread gives its kept blocks back at the end of its share, when other threads may
  // still be copying iteration words; giving a block back locks it (all allocation bits set).
  // A block emptied before the pass must therefore be gone before the first copy: checked
  // at the moment the pass is handed to the executor.
  const rt = await make(3);
  try {
    const main = rt.main;
    const pool = rt.pool!;
    const items = [];
    for (let i = 0; i < 400; i++) items.push(rt.create(Item, { v: i }));
    await rt.parallelDo(Item, 'bump', 1); // the calling thread's kept blocks are flushed after a pass
    t.is(main.allocator.keptBlocks(), 0);
    // Deletes outside passes empty whole blocks: the calling thread keeps them (core.rs K1).
    const slots = rt.table.byClass(Item)!.slots;
    for (const o of items.slice(0, 3 * slots)) rt.destroy(o);
    t.true(main.allocator.keptBlocks() > 0, 'blocks kept between passes');
    const seen: number[] = [];
    const run = pool.run.bind(pool);
    pool.run = (spec, ctx) => {
      seen.push(main.allocator.keptBlocks());
      return run(spec, ctx);
    };
    await rt.parallelDo(Item, 'bump', 2);
    t.true(seen.length > 0, 'the pass ran on the executor');
    t.deepEqual(
      seen,
      seen.map(() => 0),
      'no kept block when a pass is forked',
    );
    t.is(rt.count(Item), 400 - 3 * slots);
    rt.validateHeap();
  } finally {
    await rt.close();
  }
});
