/**
 * Do-alls on real worker threads (workers/pool.ts): concurrent create/delete from every
 * thread with the heap's invariants checked after each pass, a wa-tor-like pass that
 * creates and deletes while it runs and must visit every object live at its start
 * exactly once, deviceDo's snapshot inside a pass, arguments by value, and nbody's
 * digest on 1, 2 and 4 threads.
 *
 * Seeded (test/helpers/seed.ts: SMMO_SEED, else a fixed default): the seed is printed
 * (t.log); replay with SMMO_SEED=<seed>. Thread
 * interleavings differ between runs, but every rule in the fixtures depends only on
 * the seed, so the *logical* outcome is the same and is compared with a 1-thread run.
 * `inlineBlocks: 0` forces every pass onto the workers, even the small ones here.
 * Three threads on the 2-core VM oversubscribe it on purpose: more preemption, more
 * interleavings.
 */
import test from 'ava';
import { createRuntime, type Runtime } from '../index.js';
import { seedNote, testSeed } from './helpers/seed.js';
import { SLOT_BITS } from '../runtime/layout.js';
import { ALL_ONES, BLOCK_ALLOC_WORD } from '../runtime/layout.js';
import { popc } from '../runtime/bits.js';
import { Agent, Driver, FIXTURES, ITEMS_PER_DRIVER, Item, Probe, Tomb, offspring } from './workers.fixtures.js';
import { CLASSES as NBODY_CLASSES, init as nbodyInit, step as nbodyStep, digest as nbodyDigest } from '../apps/nbody/nbody.js';

const SEED = testSeed();
const NBODY = new URL('../apps/nbody/nbody.js', import.meta.url).href;

function runtime(classes: Parameters<typeof createRuntime>[0]['classes'], threads: number, heap = '8MB'): Promise<Runtime> {
  return createRuntime({ classes, threads, heap, modules: [FIXTURES], inlineBlocks: 0, seed: SEED });
}

/**
 * Block-level accounting: every block is free xor used by exactly one type, and in a used
 * block live + free slots = its slots ("live + free = capacity"). Returns live objects per type id.
 */
function checkCapacity(rt: Runtime): Map<number, number> {
  const heap = rt.heap;
  const live = new Map<number, number>();
  let used = 0;
  for (const id of rt.table.concreteIds) {
    const t = rt.table.types[id]!;
    const list = new Uint32Array(heap.numBlocks);
    const n = heap.allocated[id]!.indices(list);
    used += n;
    let objects = 0;
    for (let i = 0; i < n; i++) {
      const alloc = heap.i32[heap.blockWord(list[i]!) + BLOCK_ALLOC_WORD]!;
      const taken = popc(alloc & ~t.highMask);
      const free = popc(~alloc & ~t.highMask);
      if (taken + free !== t.slots) throw new Error(`block ${list[i]}: live ${taken} + free ${free} != ${t.slots} slots`);
      if (alloc === ALL_ONES && taken === 0) throw new Error(`block ${list[i]} is used but invalidated`);
      objects += taken;
    }
    live.set(id, objects);
  }
  const free = heap.free.count();
  if (free + used !== heap.numBlocks - 1) throw new Error(`free ${free} + used ${used} blocks != ${heap.numBlocks - 1}`);
  return live;
}

// ------------------------------------------------------------------ concurrent create/delete

const workers: number[][] = [];

async function stressRun(threads: number, drivers: number, passes: number, check: (rt: Runtime, pass: number) => void): Promise<string[]> {
  const rt = await runtime([Driver, Item], threads);
  try {
    await rt.parallelNew(Driver, drivers, 'setup', SEED);
    const states: string[] = [];
    for (let p = 0; p < passes; p++) {
      await rt.parallelDo(Driver, 'churn', 5);
      check(rt, p);
      // The logical state: per driver index, the tags of its items by slot.
      const rows: string[] = new Array<string>(drivers);
      rt.deviceDo(Driver, (d) => {
        const tags: number[] = [];
        for (let s = 0; s < ITEMS_PER_DRIVER; s++) tags.push((d.items.get(s) as Item | null)?.tag ?? 0);
        rows[d.index] = tags.join(',');
      });
      states.push(rows.join(';'));
    }
    if (threads > 1) workers.push([...rt.pool!.work(), rt.stats().types['Driver']!.blocks]);
    return states;
  } finally {
    await rt.close();
  }
}

test.serial('concurrent create/delete on 3 threads keeps every invariant after every pass, same logical state as 1 thread', async (t) => {
  t.log(seedNote(SEED));
  const drivers = 320; // 64+ blocks of 5 Drivers
  const passes = 25;
  const check = (rt: Runtime, pass: number): void => {
    const where = `pass ${pass}, seed ${SEED}`;
    rt.validateHeap();
    const live = checkCapacity(rt);
    const held = new Map<number, number>(); // item handle -> driver handle
    rt.deviceDo(Driver, (d) => {
      for (let s = 0; s < ITEMS_PER_DRIVER; s++) {
        const it = d.items.get(s) as Item | null;
        if (it === null) continue;
        if (held.has(it.handle)) throw new Error(`${where}: item ${it.handle} held by drivers ${held.get(it.handle)} and ${d.handle}`);
        held.set(it.handle, d.handle);
        if (it.owner !== d.handle) throw new Error(`${where}: item ${it.handle} owned by ${it.owner}, held by ${d.handle}`);
      }
    });
    const seen = new Set<number>();
    rt.deviceDo(Item, (it) => {
      if (seen.has(it.handle)) throw new Error(`${where}: handle ${it.handle} enumerated twice`);
      seen.add(it.handle);
      if (!held.has(it.handle)) throw new Error(`${where}: item ${it.handle} is live but no driver holds it (leak)`);
    });
    if (seen.size !== held.size) throw new Error(`${where}: ${held.size} items held, ${seen.size} live`);
    if (rt.count(Item) !== held.size || live.get(rt.table.byClass(Item)!.id) !== held.size)
      throw new Error(`${where}: count(Item) disagrees`);
    if (rt.count(Driver) !== drivers) throw new Error(`${where}: ${rt.count(Driver)} drivers, expected ${drivers}`);
  };
  const many = await stressRun(3, drivers, passes, check);
  const one = await stressRun(1, drivers, passes, check);
  const work = workers.pop()!;
  const driverBlocks = work.pop()!;
  t.log(`blocks + objects run per thread (calling thread first): ${work.join(' ')}; ${driverBlocks} Driver blocks`);
  t.true(work[1]! > 0 && work[2]! > 0, 'both workers must have run blocks');
  t.is(
    work.reduce((a, b) => a + b, 0),
    passes * driverBlocks + drivers,
    'every Driver block of every pass, and every object of parallelNew, exactly once',
  );
  t.is(many.length, passes);
  for (let p = 0; p < passes; p++) t.is(many[p], one[p], `logical state after pass ${p} differs from 1 thread (seed ${SEED})`);
});

// ------------------------------------------------------------------ wa-tor-like visits

async function churnRun(t: { log(...a: unknown[]): void }, threads: number, rounds: number, copyBlocks?: number): Promise<number[]> {
  const rt = await runtime([Agent, Tomb], threads, '16MB');
  if (copyBlocks !== undefined) rt.snapshotCopyBlocks = copyBlocks;
  const populations: number[] = [];
  try {
    await rt.parallelNew(Agent, 640, 'setup', SEED);
    for (let round = 0; round < rounds; round++) {
      const where = `round ${round}, ${threads} threads, seed ${SEED}`;
      const before = new Map<number, { visits: number; seed: number }>();
      let expected = 0;
      rt.deviceDo(Agent, (a) => {
        before.set(a.handle, { visits: a.visits, seed: a.seed });
        expected += offspring(a.seed, round);
      });
      await rt.parallelDo(Agent, 'step', round);
      rt.validateHeap();
      checkCapacity(rt);
      const tombs = new Map<number, number>();
      rt.deviceDo(Tomb, (tb) => {
        if (tb.round !== round) throw new Error(`${where}: tomb of round ${tb.round}`);
        tombs.set(tb.victim, (tombs.get(tb.victim) ?? 0) + 1);
      });
      const visited = new Map<number, number>();
      rt.deviceDo(Agent, (a) => {
        if (a.lastVisited === round) visited.set(a.handle, a.visits);
        else if (a.lastVisited !== -1 && !before.has(a.handle))
          throw new Error(`${where}: new agent ${a.handle} has lastVisited ${a.lastVisited}`);
        else if (!before.has(a.handle) && a.visits !== 0) throw new Error(`${where}: new agent ${a.handle} was visited`);
      });
      for (const [h, n] of tombs)
        if (n !== 1 || !before.has(h)) throw new Error(`${where}: ${n} tombs for ${h} (live at start: ${before.has(h)})`);
      for (const [h, v] of visited) {
        const b = before.get(h);
        if (b === undefined) throw new Error(`${where}: agent ${h} created in this pass was visited`);
        if (v !== b.visits + 1) throw new Error(`${where}: agent ${h} visits ${b.visits} → ${v}`);
      }
      for (const h of before.keys()) {
        const n = (tombs.has(h) ? 1 : 0) + (visited.has(h) ? 1 : 0);
        if (n !== 1) throw new Error(`${where}: agent ${h} live at the start was visited ${n} times`);
      }
      if (rt.count(Agent) !== expected) throw new Error(`${where}: ${rt.count(Agent)} agents, the rules give ${expected}`);
      populations.push(expected);
      await rt.parallelDo(Tomb, 'remove');
      if (rt.count(Tomb) !== 0) throw new Error(`${where}: tombs left after remove`);
    }
    t.log(`${threads} threads: populations ${populations.join(' ')}${rt.pool ? `; work per thread ${rt.pool.work().join(' ')}` : ''}`);
    if (rt.pool) for (const w of rt.pool.work().slice(1)) if (w === 0) throw new Error('a worker thread ran no block');
    return populations;
  } finally {
    await rt.close();
  }
}

test.serial('a pass that creates and deletes (wa-tor-like) visits every object live at its start exactly once', async (t) => {
  t.log(seedNote(SEED));
  const many = await churnRun(t, 3, 10);
  const one = await churnRun(t, 1, 10);
  t.deepEqual(many, one);
  t.true(many[many.length - 1]! > 640, 'the population should have grown (the test would be weak otherwise)');
});

test.serial('the same, with every snapshot copied by the workers (schedule.ts P7)', async (t) => {
  t.log(seedNote(SEED));
  const many = await churnRun(t, 3, 10, 2);
  const one = await churnRun(t, 1, 10);
  t.deepEqual(many, one);
});

// ------------------------------------------------------------------ snapshot and arguments

test.serial('deviceDo inside a pass on workers sees exactly the objects live when the pass started', async (t) => {
  t.log(seedNote(SEED));
  const rt = await runtime([Driver, Item], 3);
  try {
    await rt.parallelNew(Driver, 256, 'setup', SEED);
    await rt.parallelNew(Item, 100);
    for (let p = 0; p < 3; p++) {
      const atStart = rt.count(Item);
      await rt.parallelDo(Driver, 'countThenCreate');
      const seen = new Set<number>();
      rt.deviceDo(Driver, (d) => void seen.add(d.seen));
      t.deepEqual([...seen], [atStart], `pass ${p}: every driver must count the ${atStart} items of the start`);
      t.is(rt.count(Item), atStart + 2 * 256);
      rt.validateHeap();
    }
  } finally {
    await rt.close();
  }
});

test.serial('arguments are passed by value; an smmo object argument arrives as the same object', async (t) => {
  t.log(seedNote(SEED));
  const rt = await runtime([Driver, Item], 2);
  try {
    await rt.parallelNew(Driver, 256, 'setup', SEED);
    const item = rt.create(Item, { tag: 4242 });
    await rt.parallelDo(Driver, 'pin', item, 4242);
    let n = 0;
    rt.deviceDo(Driver, (d) => {
      if (d.pinned?.handle === item.handle) n++;
    });
    t.is(n, 256);
    const err = await t.throwsAsync(() => rt.parallelDo(Driver, 'pin', item, 1));
    t.regex(err!.message, /Driver\.pin threw on object \d+/);
    t.regex(String((err!.cause as Error).message), /has tag 4242, expected 1/);
  } finally {
    await rt.close();
  }
});

test.serial('parallelNew with a method init runs on the workers: every index exactly once', async (t) => {
  t.log(seedNote(SEED));
  const rt = await runtime([Driver, Item], 3);
  try {
    const n = 5000;
    await rt.parallelNew(Driver, n, 'setup', SEED);
    const seen = new Uint8Array(n);
    rt.deviceDo(Driver, (d) => void seen[d.index]!++);
    t.true(seen.every((x) => x === 1));
    t.is(rt.count(Driver), n);
    rt.validateHeap();
    // Handles come from many blocks: more than one thread allocated (coalesced, per block).
    const blocks = new Set<number>();
    rt.deviceDo(Driver, (d) => void blocks.add(d.handle >>> SLOT_BITS));
    t.true(blocks.size >= Math.ceil(n / rt.table.byClass(Driver)!.slots));
  } finally {
    await rt.close();
  }
});

// ------------------------------------------------------------------ reproducibility

test.serial('nbody: the same digest on 1, 2 and 4 threads (exactly)', async (t) => {
  const digests: number[] = [];
  for (const threads of [1, 2, 4]) {
    const rt = await createRuntime({ classes: NBODY_CLASSES, threads, modules: [NBODY], inlineBlocks: 0, heap: '16MB' });
    try {
      await nbodyInit(rt, 1200, 7);
      for (let i = 0; i < 3; i++) await nbodyStep(rt);
      digests.push(nbodyDigest(rt));
      rt.validateHeap();
    } finally {
      await rt.close();
    }
  }
  t.log(`digests ${digests.join(' ')}`);
  // Exact: each body's force is summed by one lane in block-list order, whichever thread runs it.
  t.is(digests[1], digests[0]);
  t.is(digests[2], digests[0]);
});

// ------------------------------------------------------------------ sessions

test.serial('idle workers park their session and the next pass starts new ones', async (t) => {
  t.timeout(120_000); // a bound against hangs, not a speed requirement
  const rt = await createRuntime({ classes: [Probe], threads: 3, heap: '4MB', modules: [FIXTURES], inlineBlocks: 0, workerIdleMs: 30 });
  try {
    await rt.parallelNew(Probe, 640, 'setValue');
    for (let round = 0; round < 3; round++) {
      await new Promise((r) => setTimeout(r, 150)); // > workerIdleMs + one wait slice: every session has returned
      const before = rt.pool!.work();
      // 20 blocks of 32 × 200 µs on every thread: long enough for each restarted worker to take some.
      await rt.parallelDo(Probe, 'spin', 200);
      const after = rt.pool!.work();
      t.true(after[1]! > before[1]! && after[2]! > before[2]!, `round ${round}: both restarted workers ran blocks (${before} → ${after})`);
      rt.validateHeap();
    }
  } finally {
    await rt.close();
  }
});

test('inlineMicros: a small pass of a heavy method runs on the calling thread once, then on the workers; a light one stays inline', async (t) => {
  // Default inlineBlocks (64): 10 blocks is a "small" pass by block count. inlineMicros
  // 20 ms: far above a light pass (even its first, compiling run, on a loaded machine),
  // below the heavy one (≥ 32 ms).
  const rt = await createRuntime({ classes: [Probe], threads: 2, heap: '4MB', modules: [FIXTURES], inlineMicros: 20_000 });
  try {
    await rt.parallelNew(Probe, 320);
    const onWorkers = (): number => {
      let n = 0;
      rt.deviceDo(Probe, (p) => {
        if (p.value === 1) n++;
      });
      return n;
    };
    for (let i = 0; i < 3; i++) await rt.parallelDo(Probe, 'where', 0); // ~µs per block: below inlineMicros
    t.is(onWorkers(), 0, 'a light small pass runs on the calling thread');
    await rt.parallelDo(Probe, 'where', 100); // 320 × 100 µs ≥ 32 ms on the calling thread: its cost is now known
    t.is(onWorkers(), 0, 'first heavy run: inline (the estimate came from the light runs)');
    await rt.parallelDo(Probe, 'where', 100);
    t.true(onWorkers() > 0, 'second run: the workers took part');
    t.is(rt.count(Probe), 320);
    rt.validateHeap();
  } finally {
    await rt.close();
  }
});
