/**
 * Which block a thread of a multi-threaded runtime allocates in first (the allocator core,
 * wasm/src/alloc/core.rs select_block, K5):
 *
 *  - by default, Alg. 1's order on every thread: the partly filled (active) blocks first,
 *    so a pass whose creates fit in the holes of existing blocks opens no new block;
 *  - with `allocator: { ownFirstBlock: true }` every thread that allocates takes a new
 *    block of its own first in each pass, holes or not;
 *  - either way every object is accounted for and the heap is valid.
 *
 * The holes: 256 Children created outside any pass, every second one destroyed (half of
 * each of their blocks free); then a do-all over 1280 Spawners on two threads (every pass
 * on the workers: inlineBlocks 0) in which one Spawner in 20 creates one Child: 64 creates,
 * fewer than the holes.
 */
import test from 'ava';
import { createRuntime, type Runtime } from '../index.js';
import { Child, COALESCING_FIXTURES, Spawner } from './coalescing.fixtures.js';

async function holesThenSpawn(ownFirstBlock: boolean | undefined): Promise<{ before: number; after: number; rt: Runtime }> {
  const rt = await createRuntime({
    classes: [Spawner, Child],
    heap: '4MB',
    threads: 2,
    modules: [COALESCING_FIXTURES],
    inlineBlocks: 0,
    ...(ownFirstBlock === undefined ? {} : { allocator: { ownFirstBlock } }),
  });
  const children = Array.from({ length: 256 }, () => rt.create(Child, { parent: 0 }));
  for (let i = 0; i < children.length; i += 2) rt.destroy(children[i]!);
  await rt.parallelNew(Spawner, 1280, (s, i) => (s.n = i % 20 === 0 ? 1 : 0));
  const before = rt.stats().types.Child!.blocks;
  await rt.parallelDo(Spawner, 'spawnQuietly');
  return { before, after: rt.stats().types.Child!.blocks, rt };
}

test('default: on two threads the creates of a pass fill the holes of partly filled blocks, no new block', async (t) => {
  const { before, after, rt } = await holesThenSpawn(undefined);
  try {
    t.false(rt.heap.flags.ownFirstBlock);
    t.true(before >= 256 / rt.stats().types.Child!.slotsPerBlock, `${before} blocks hold the 128 Children left`);
    t.is(after, before, 'no new block: 64 creates, 128 holes');
    t.is(rt.count(Child), 128 + 64);
    rt.validateHeap();
  } finally {
    await rt.close();
  }
});

test('ownFirstBlock: every thread that allocates in a pass opens a new block first', async (t) => {
  const { before, after, rt } = await holesThenSpawn(true);
  try {
    t.true(rt.heap.flags.ownFirstBlock);
    t.true(after > before, `new blocks despite the holes (${before} → ${after})`);
    t.true(after <= before + 2, 'at most one per thread and class (2 threads, one class created)');
    t.is(rt.count(Child), 128 + 64);
    rt.validateHeap();
  } finally {
    await rt.close();
  }
});
