/**
 * The exact-scan fallback of the bitmaps (wasm/src/alloc/bitmap.rs B3: scan_find_set) and
 * the allocator core's paths that depend on it (find_and_clear, and core.rs new_block's
 * scan of `active` when `free` is empty), forced on one thread through their bindings
 * (runtime/allocator.ts WasmBitmaps and Allocator).
 *
 * The upper levels of a hierarchical bitmap are only eventually consistent: between a
 * SET-FIRST at level 0 and the matching set of the upper bit, try_find_set (top-down)
 * cannot see the new bit. find_and_clear then falls back on scan_find_set, a scan of
 * level 0, and new_block, when `free` is empty, looks for an active block of the type
 * with the same scan before it gives up. These paths are rare under real concurrency, so
 * the tests build the inconsistent state by writing the bitmap's words (an upper bit left
 * clear, as while a set is in flight) and check that nothing set is missed: bit 31 of a
 * container and of the last one, containers that are not full (bits not a multiple of
 * 32), the scan wrapping around from any seed, with and without rotation.
 */
import test from 'ava';
import { HeapExhaustedError } from '../runtime/errors.js';
import type { HierarchicalBitmap } from '../runtime/bitmap.js';
import { allocatorFixture, type Fixture } from './helpers/allocators.js';
import { bitAt, flipBit, levelCount } from './helpers/corrupt.js';
import { moduleBitmap } from './helpers/module-bitmap.js';

const SEEDS = [...Array.from({ length: 70 }, (_, k) => k), 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff, 2654435761];

/** Positions worth testing in a bitmap of `bits`: the ends of containers, the last one. */
function edges(bits: number): number[] {
  const last = Math.ceil(bits / 32) - 1;
  const ps = [0, 1, 30, 31, 32, 63, 64, 32 * last, 32 * last + 31, bits - 1, bits >> 1];
  return [...new Set(ps.filter((p) => p < bits))];
}

const SIZES = [1, 2, 31, 32, 33, 63, 64, 65, 1000, 1024, 1025, 2000];

test('scanFindSet finds a lone level-0 bit whose upper bits are clear, from every seed, with and without rotation (issue 17, survivor 4)', (t) => {
  for (const bits of SIZES) {
    const { all, bm, ops } = moduleBitmap(bits);
    for (const p of edges(bits)) {
      ops.reset(bm);
      flipBit(all, bm, 0, p); // level 0 only: a set whose upper bits are not written yet
      let misses = 0;
      for (const seed of SEEDS) {
        if (ops.scanFindSet(bm, seed) !== p) misses++;
        if (ops.scanFindSet(bm, seed, false) !== p) misses++;
        // For a one-level bitmap there is nothing above: the fast search sees it too.
        if (levelCount(bm) > 1 && ops.tryFindSet(bm, seed) !== -1) misses++;
      }
      t.is(misses, 0, `bits=${bits}, position ${p}`);
    }
  }
});

test('scanFindSet returns -1 on an empty bitmap and a set bit whenever any level-0 bit is set', (t) => {
  for (const bits of SIZES) {
    const { all, bm, ops } = moduleBitmap(bits);
    for (const seed of SEEDS) t.is(ops.scanFindSet(bm, seed), -1, `bits=${bits}, seed ${seed}`);
    // Every other container holds bit 31 of itself (or the last position): any seed finds one of them.
    const set = new Set<number>();
    for (let c = 0; c < Math.ceil(bits / 32); c += 2) set.add(Math.min(32 * c + 31, bits - 1));
    for (const p of set) flipBit(all, bm, 0, p);
    const found = new Set<number>();
    for (const seed of SEEDS) {
      const p = ops.scanFindSet(bm, seed);
      t.true(set.has(p), `bits=${bits}, seed ${seed}: ${p} is not set`);
      found.add(p);
    }
    // The scan starts at a container chosen by the seed: different seeds find different bits.
    if (set.size >= 2) t.true(found.size >= 2, `bits=${bits}: the seed chooses where the scan starts`);
    // Without rotation it starts at container 0, whatever the seed.
    for (const seed of SEEDS) t.is(ops.scanFindSet(bm, seed, false), Math.min(31, bits - 1), `bits=${bits}, seed ${seed}, no rotation`);
  }
});

test('findAndClear falls back on the scan when the hierarchy hides the set bits', (t) => {
  for (const bits of [33, 64, 1000, 1025, 2000]) {
    const { all, bm, ops } = moduleBitmap(bits);
    for (const c of [0, Math.ceil(bits / 32) - 1]) {
      // Two bits in container c (bit 31 and the one below, or the container's last valid
      // ones), no upper bit: taking one leaves the container non-empty, so the clear
      // does not need the upper bit that a concurrent set would still write.
      const hi = Math.min(32 * c + 31, bits - 1);
      const lo = hi - 1;
      if (lo >>> 5 !== c) continue; // the last container of 33 positions holds one
      for (const seed of [0, 29, 30, 31, 1000]) {
        for (const rotate of [true, false]) {
          ops.reset(bm);
          flipBit(all, bm, 0, hi);
          flipBit(all, bm, 0, lo);
          // find_and_clear's first attempt searches with seed + 1.
          t.is(ops.tryFindSet(bm, seed + 1, rotate), -1, 'the fast search cannot see them');
          const p = ops.findAndClear(bm, seed, rotate);
          const what = `bits=${bits}, container ${c}, seed ${seed}, rotate ${rotate}`;
          t.true(p === hi || p === lo, `${what}: got ${p}`);
          // Without rotation the scan starts at bit 0 of container 0: it takes the lower one.
          if (!rotate) t.is(p, lo, what);
          t.false(bitAt(all, bm, 0, p), 'the bit it returned is cleared');
          t.true(bitAt(all, bm, 0, p === hi ? lo : hi), 'the other bit stays set');
          t.is(ops.scanFindSet(bm, seed, rotate), p === hi ? lo : hi, `${what}: the scan finds the other one`);
        }
      }
    }
  }
});

test('findAndClear of a consistent bitmap never needs the scan but agrees with it; -1 once empty', (t) => {
  const { bm, ops } = moduleBitmap(1025);
  ops.set(bm, 1024);
  ops.set(bm, 31);
  t.is(ops.scanFindSet(bm, 0), 31);
  const got = [ops.findAndClear(bm, 5), ops.findAndClear(bm, 5)].sort((a, b) => a - b);
  t.deepEqual(got, [31, 1024]);
  t.is(ops.findAndClear(bm, 5), -1);
  t.is(ops.scanFindSet(bm, 5), -1);
  const problems: string[] = [];
  bm.validate(problems);
  t.deepEqual(problems, []);
});

// ------------------------------------------------------------------ new_block with `free` empty

/**
 * Fill the fixture's heap with objects of A (32 slots per block), then release `open`
 * slots of block `partial` (1 … numBlocks - 1): `free` is empty and `partial` is the one
 * active block of A. The allocators keep blocks (K1), so that K5 (own first blocks) can be
 * switched on.
 */
function fullHeapBut(partial: number, open: number): Fixture {
  const f = allocatorFixture(4);
  const slots = (f.heap.numBlocks - 1) * 32;
  const out = new Uint32Array(slots);
  f.t1.allocateMany(f.tA, slots, out);
  f.t1.flushKept();
  if (f.heap.free.count() !== 0) throw new Error('fixture: free blocks left');
  if (f.heap.active[f.tA.id]!.count() !== 0) throw new Error('fixture: the heap is not full');
  for (let s = 0; s < open; s++) f.t1.release(partial, s);
  const active = f.heap.active[f.tA.id]!;
  if (active.count() !== 1 || !active.get(partial)) throw new Error(`fixture: block ${partial} is not the one active block`);
  f.heap.validate();
  return f;
}

/** Blocks whose active bit is bit 31 of its container, and others, for a heap of `n` blocks. */
function partials(n: number): number[] {
  return [...new Set([31, 63, 1, 32, n - 1])].filter((b) => b >= 1 && b < n);
}

/** The block of the handle `allocate` returns, or -1 with the error's message when it throws. */
function blockOf(allocate: () => number): { block: number; error: string } {
  try {
    return { block: allocate() >>> 5, error: '' };
  } catch (e) {
    return { block: -1, error: (e as Error).message };
  }
}

test('new_block with no free block takes the active block of the type (K5 first block of a pass)', (t) => {
  const n = allocatorFixture(4).heap.numBlocks;
  t.true(n > 64, `a heap of ${n} blocks`);
  for (const partial of partials(n)) {
    const f = fullHeapBut(partial, 1);
    // t2 runs in a multi-threaded runtime: its first block of a pass comes from new_block,
    // not from `active`. `free` is empty, so new_block must find the partial block by its scan.
    f.t2.setOwnFirstBlock(true);
    const got = blockOf(() => f.t2.allocate(f.tA));
    t.is(got.block, partial, `block ${partial} ${got.error}`);
    f.heap.validate();
    t.is(f.heap.active[f.tA.id]!.count(), 0, 'that block is now full');
    // Now the heap is really full.
    f.t2.flushKept();
    f.t3.setOwnFirstBlock(true);
    t.throws(() => f.t3.allocate(f.tA), { instanceOf: HeapExhaustedError });
    t.throws(() => f.t3.allocate(f.tB), { instanceOf: HeapExhaustedError });
    f.heap.validate();
  }
});

test('an active block hidden by an upper bit not yet set is found when no block is free (one thread)', (t) => {
  const n = allocatorFixture(4).heap.numBlocks;
  for (const partial of partials(n)) {
    const f = fullHeapBut(partial, 2);
    const active = f.heap.active[f.tA.id]!;
    // The container of `partial` is non-empty at level 0 but its level-1 bit is clear: the
    // state while the set that made the block active is still in flight.
    flipBit(f.heap.i32, active, 1, partial >>> 5);
    t.is(f.bitmaps.tryFindSet(active, 0), -1);
    const got = blockOf(() => f.t3.allocate(f.tA)); // no hint, no kept block: select_block fails, new_block scans
    t.is(got.block, partial, `block ${partial} ${got.error}`);
    flipBit(f.heap.i32, active, 1, partial >>> 5); // the set completes
    f.heap.validate();
    t.is(f.heap.liveInBlock(partial), 31);
  }
});

/**
 * Three full blocks of A, then `freed` slots of the second one released: the one active
 * block of A (`partial`), while most of the heap's blocks are still free.
 */
function oneActiveBlock(freed: number): { f: Fixture; partial: number; active: HierarchicalBitmap } {
  const f = allocatorFixture(4);
  const out = new Uint32Array(3 * 32);
  f.t1.allocateMany(f.tA, out.length, out);
  f.t1.flushKept();
  const partial = out[40]! >>> 5;
  for (let k = 0; k < freed; k++) f.t1.release(partial, out[40 + k]! & 31);
  return { f, partial, active: f.heap.active[f.tA.id]! };
}

test('an active block behind an upper bit whose container was just emptied is found before a free block is opened (select_block, find_set)', (t) => {
  const n = allocatorFixture(4).heap.numBlocks;
  t.true(n > 64, `a heap of ${n} blocks: at least two containers at level 0`);
  const { f, partial, active } = oneActiveBlock(2);
  t.is(active.count(), 1);
  t.true(f.heap.free.count() > 0, 'free blocks exist');
  // In flight, as another thread could leave it: the clear that emptied another container
  // has not reached level 1 yet (its level-1 bit still set). Every seed whose rotated
  // descent goes there first fails; the descent with backtracking goes on to `partial`.
  const other = partial >>> 5 === 0 ? 1 : 0;
  flipBit(f.heap.i32, active, 1, other);
  let failing = 0;
  for (const seed of SEEDS) {
    if (f.bitmaps.tryFindSet(active, seed) === -1) failing++;
    t.is(f.bitmaps.findSet(active, seed), partial, `find_set, seed ${seed}`);
  }
  t.true(failing > 0, 'some seeds send the plain descent into the emptied container');
  const freeBefore = f.heap.free.count();
  f.t3.seed = SEEDS.find((s) => f.bitmaps.tryFindSet(active, s) === -1)!; // (the core adds the attempt number)
  const got = blockOf(() => f.t3.allocate(f.tA)); // no hint, no kept block, K5 off
  t.is(got.block, partial, `the partly filled block, not a new one ${got.error}`);
  t.is(f.heap.free.count(), freeBefore, 'no block taken from free');
  flipBit(f.heap.i32, active, 1, other); // the clear completes
  f.heap.validate();
  t.is(f.heap.liveInBlock(partial), 31);
});

test('select_block: a block whose upper bit is not written yet (a set in flight) may be missed; then a free block is opened and the heap stays valid', (t) => {
  const { f, partial, active } = oneActiveBlock(1);
  // Both in flight: the set that made `partial` active has not reached level 1, and the
  // clear of another container has not either. No descent reaches `partial` (bitmap.rs B5):
  // select_block opens a free block rather than scanning every container of the heap.
  const other = partial >>> 5 === 0 ? 1 : 0;
  flipBit(f.heap.i32, active, 1, partial >>> 5);
  flipBit(f.heap.i32, active, 1, other);
  for (const seed of SEEDS) t.is(f.bitmaps.findSet(active, seed), -1, `seed ${seed}`);
  t.is(f.bitmaps.scanFindSet(active, 0) >>> 0, partial, 'the exact scan still sees it');
  const freeBefore = f.heap.free.count();
  const got = blockOf(() => f.t3.allocate(f.tA));
  t.not(got.block, partial, got.error);
  t.is(f.heap.free.count(), freeBefore - 1, 'one block taken from free');
  flipBit(f.heap.i32, active, 1, partial >>> 5); // both operations complete
  flipBit(f.heap.i32, active, 1, other);
  f.heap.validate();
  t.is(f.heap.liveInBlock(partial), 31);
});
