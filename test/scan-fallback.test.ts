/**
 * The exact-scan fallback of the bitmaps (bitmap.ts B3) and the allocator paths that
 * depend on it, forced on one thread.
 *
 * The upper levels of a hierarchical bitmap are only eventually consistent: between a
 * SET-FIRST at level 0 and the matching set of the upper bit, tryFindSet (top-down)
 * cannot see the new bit. findAndClear then falls back on scanFindSet, a scan of level 0,
 * and newBlock, when `free` is empty, looks for an active block of the type with the
 * same scan before it gives up. These paths are rare under real concurrency, so the
 * tests build the inconsistent state by writing the bitmap's words (an upper bit left
 * clear, as while a set is in flight) and check that nothing set is missed: bit 31 of
 * the last container, containers that are not full (bits not a multiple of 32), the
 * scan wrapping around from any seed.
 */
import test from 'ava';
import { bitmapWords, HierarchicalBitmap } from '../runtime/bitmap.js';
import { HeapExhaustedError } from '../runtime/errors.js';
import { bitAt, flipBit, levelCount } from './helpers/corrupt.js';
import { allocatorFixture } from './helpers/allocators.js';

const SEEDS = [...Array.from({ length: 70 }, (_, k) => k), 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff, 2654435761];

function bitmapOf(bits: number): { mem: Int32Array; bm: HierarchicalBitmap } {
  const mem = new Int32Array(new SharedArrayBuffer((bitmapWords(bits) + 2) * 4));
  return { mem, bm: new HierarchicalBitmap(mem, 1, bits, `bm(${bits})`) };
}

/** Positions worth testing in a bitmap of `bits`: the ends of containers, the last one. */
function edges(bits: number): number[] {
  const last = Math.ceil(bits / 32) - 1;
  const ps = [0, 1, 30, 31, 32, 63, 64, 32 * last, 32 * last + 31, bits - 1, bits >> 1];
  return [...new Set(ps.filter((p) => p < bits))];
}

const SIZES = [1, 2, 31, 32, 33, 63, 64, 65, 1000, 1024, 1025, 2000];

test('scanFindSet finds a lone level-0 bit whose upper bits are clear, from every seed (issue 17, survivor 4)', (t) => {
  for (const bits of SIZES) {
    for (const p of edges(bits)) {
      const { mem, bm } = bitmapOf(bits);
      flipBit(mem, bm, 0, p); // level 0 only: a set() whose upper bits are not written yet
      let misses = 0;
      for (const seed of SEEDS) {
        if (bm.scanFindSet(seed) !== p) misses++;
        // For a one-level bitmap there is nothing above: the fast search sees it too.
        if (levelCount(bm) > 1 && bm.tryFindSet(seed) !== -1) misses++;
      }
      t.is(misses, 0, `bits=${bits}, position ${p}`);
    }
  }
});

test('scanFindSet returns -1 on an empty bitmap and a set bit whenever any level-0 bit is set', (t) => {
  for (const bits of SIZES) {
    const { mem, bm } = bitmapOf(bits);
    for (const seed of SEEDS) t.is(bm.scanFindSet(seed), -1, `bits=${bits}, seed ${seed}`);
    // Every other container holds bit 31 of itself (or the last position): any seed finds one of them.
    const set = new Set<number>();
    for (let c = 0; c < Math.ceil(bits / 32); c += 2) set.add(Math.min(32 * c + 31, bits - 1));
    for (const p of set) flipBit(mem, bm, 0, p);
    const found = new Set<number>();
    for (const seed of SEEDS) {
      const p = bm.scanFindSet(seed);
      t.true(set.has(p), `bits=${bits}, seed ${seed}: ${p} is not set`);
      found.add(p);
    }
    // The scan starts at a container chosen by the seed: different seeds find different bits.
    if (set.size >= 2) t.true(found.size >= 2, `bits=${bits}: the seed chooses where the scan starts`);
  }
});

test('findAndClear falls back on the scan when the hierarchy hides the set bits', (t) => {
  for (const bits of [33, 64, 1000, 1025, 2000]) {
    for (const c of [0, Math.ceil(bits / 32) - 1]) {
      // Two bits in container c (bit 31 and the one below, or the container's last valid
      // ones), no upper bit: taking one leaves the container non-empty, so the clear
      // does not need the upper bit that a concurrent set would still write.
      const hi = Math.min(32 * c + 31, bits - 1);
      const lo = hi - 1;
      if (lo >>> 5 !== c) continue; // the last container of 33 positions holds one
      for (const seed of [0, 29, 30, 31, 1000]) {
        const { mem, bm } = bitmapOf(bits);
        flipBit(mem, bm, 0, hi);
        flipBit(mem, bm, 0, lo);
        t.is(bm.tryFindSet(seed + 1), -1, 'the fast search cannot see them');
        const p = bm.findAndClear(seed);
        t.true(p === hi || p === lo, `bits=${bits}, container ${c}, seed ${seed}: got ${p}`);
        t.false(bitAt(mem, bm, 0, p), 'the bit it returned is cleared');
        t.true(bitAt(mem, bm, 0, p === hi ? lo : hi), 'the other bit stays set');
      }
    }
  }
});

test('findAndClear of a consistent bitmap never needs the scan but agrees with it; -1 once empty', (t) => {
  const { bm } = bitmapOf(1025);
  bm.set(1024);
  bm.set(31);
  t.is(bm.scanFindSet(0), 31);
  const got = [bm.findAndClear(5), bm.findAndClear(5)].sort((a, b) => a - b);
  t.deepEqual(got, [31, 1024]);
  t.is(bm.findAndClear(5), -1);
  t.is(bm.scanFindSet(5), -1);
  const problems: string[] = [];
  bm.validate(problems);
  t.deepEqual(problems, []);
});

// ------------------------------------------------------------------ newBlock with `free` empty

/**
 * Fill the fixture's heap with objects of A (32 slots) so that `free` is empty and one
 * block keeps `open` free slots; returns that block. The allocators keep blocks (K1), so
 * that K5 (own first blocks) can be switched on.
 */
function fillAllButSlots(open: number): { f: ReturnType<typeof allocatorFixture>; partial: number } {
  const f = allocatorFixture(4);
  const slots = (f.heap.numBlocks - 1) * 32 - open;
  const out = new Uint32Array(slots);
  f.t1.allocateMany(f.tA, slots, out);
  f.t1.flushKept();
  if (f.heap.free.count() !== 0) throw new Error('fixture: free blocks left');
  const active = f.heap.active[f.tA.id]!;
  if (active.count() !== 1) throw new Error(`fixture: ${active.count()} active blocks, expected 1`);
  const partial = active.scanFindSet(0);
  f.heap.validate();
  return { f, partial };
}

test('newBlock with no free block takes the active block of the type (K5 first block of a pass)', (t) => {
  const { f, partial } = fillAllButSlots(1);
  // t2 runs in a multi-threaded runtime: its first block of a pass comes from newBlock,
  // not from `active`. `free` is empty, so newBlock must find t1's partial block.
  f.t2.setOwnFirstBlock(true);
  const h = f.t2.allocate(f.tA);
  t.is(h >>> 5, partial);
  f.heap.validate();
  t.is(f.heap.active[f.tA.id]!.count(), 0, 'that block is now full');
  // Now the heap is really full.
  f.t2.flushKept();
  f.t3.setOwnFirstBlock(true);
  t.throws(() => f.t3.allocate(f.tA), { instanceOf: HeapExhaustedError });
  t.throws(() => f.t3.allocate(f.tB), { instanceOf: HeapExhaustedError });
  f.heap.validate();
});

test('an active block hidden by an upper bit not yet set is found when no block is free (one thread)', (t) => {
  const { f, partial } = fillAllButSlots(2);
  const active = f.heap.active[f.tA.id]!;
  // The container of `partial` is non-empty at level 0 but its level-1 bit is clear: the
  // state while the set that made the block active is still in flight.
  flipBit(f.heap.i32, active, 1, partial >>> 5);
  t.is(active.tryFindSet(0), -1);
  const h = f.t3.allocate(f.tA); // no hint, no kept block: selectBlock fails, newBlock scans
  t.is(h >>> 5, partial);
  flipBit(f.heap.i32, active, 1, partial >>> 5); // the set completes
  f.heap.validate();
  t.is(f.heap.liveInBlock(partial), 31);
});
