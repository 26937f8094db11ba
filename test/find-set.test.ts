/**
 * The descent with backtracking of the hierarchical bitmaps (wasm/src/alloc/bitmap.rs B5,
 * `find_set`), which the allocator core's select_block uses when the plain rotated descent
 * (Alg. 4, try_find_set) fails while the top container says that some block is active:
 *  - on a consistent hierarchy it returns exactly what try_find_set returns (same rotation);
 *  - it looks past upper bits whose containers are empty (a CLEAR-LAST in flight) and finds
 *    a set bit elsewhere, where try_find_set fails;
 *  - it misses only bits whose upper bits are not written yet (a SET-FIRST in flight), and
 *    returns -1 when every set upper bit leads to an empty container;
 *  - its loads are bounded (MAX_DESCENT_LOADS = 256): many stale upper bits end the search.
 * The states in flight are built by writing the bitmap's words (test/helpers/corrupt.ts).
 */
import test from 'ava';
import fc from 'fast-check';
import { bitAt, containerIndex, flipBit, levelCount, setConsistent } from './helpers/corrupt.js';
import { moduleBitmap } from './helpers/module-bitmap.js';

const SEEDS = [0, 1, 2, 5, 31, 32, 33, 1023, 1024, 0x7fffffff, 0x80000000, 0xffffffff, 2654435761, 0x12345678];

test('find_set equals try_find_set on consistent bitmaps (random sets, every seed, with and without rotation)', (t) => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 40000 }),
      fc.array(fc.nat(), { maxLength: 60 }),
      fc.array(fc.nat(), { maxLength: 8 }),
      (bits, raw, seeds) => {
        const { all, bm, ops } = moduleBitmap(bits);
        for (const r of raw) setConsistent(all, bm, r % bits);
        for (const seed of [...SEEDS, ...seeds]) {
          for (const rotate of [true, false]) {
            const want = ops.tryFindSet(bm, seed, rotate);
            const got = ops.findSet(bm, seed, rotate);
            if (got !== want) return false;
            if (raw.length > 0 && (got < 0 || !bm.get(got))) return false;
            if (raw.length === 0 && got !== -1) return false;
          }
        }
        return true;
      },
    ),
    { numRuns: 150 },
  );
  t.pass();
});

test('find_set looks past upper bits whose containers were emptied (a clear in flight) where try_find_set fails', (t) => {
  for (const bits of [2000, 40000, 1 << 20]) {
    const { all, bm, ops } = moduleBitmap(bits);
    t.true(levelCount(bm) >= 3 || bits === 2000, `bits=${bits}: ${levelCount(bm)} levels`);
    // One real bit near the end; stale level-1 bits (their level-0 containers empty) in
    // every other container of the first level-1 word: most rotations meet a stale one first.
    const real = bits - 7;
    setConsistent(all, bm, real);
    for (let c = 0; c < 32 && c * 32 < bits; c += 2) {
      if (c === real >>> 5) continue;
      setConsistent(all, bm, c * 32 + 3);
      flipBit(all, bm, 0, c * 32 + 3); // level 0 cleared, its upper bits not yet
    }
    let failing = 0;
    for (let k = 0; k < 300; k++) {
      const seed = Math.imul(k, 0x9e3779b1) >>> 0; // spread over every level's rotation
      if (ops.tryFindSet(bm, seed) === -1) failing++;
      t.is(ops.findSet(bm, seed), real, `bits=${bits}, seed ${seed}`);
      t.is(ops.findSet(bm, seed, false), real, `bits=${bits}, seed ${seed}, no rotation`);
    }
    t.true(failing > 0, `bits=${bits}: the plain descent fails for some seeds`);
  }
});

test('find_set returns -1 when every set upper bit leads to an empty container, and misses a bit whose upper bits are not written yet', (t) => {
  const bits = 40000;
  const { all, bm, ops } = moduleBitmap(bits);
  for (const p of [5, 700, 33000]) {
    setConsistent(all, bm, p);
    flipBit(all, bm, 0, p); // stale path
  }
  for (const seed of SEEDS) t.is(ops.findSet(bm, seed), -1, `all stale, seed ${seed}`);
  // A set in flight: level 0 written, its level-1 bit not yet (its level-2 bit is set by
  // another container of the same level-1 word: 700 and 701 share a level-1 container).
  const hidden = 32 * 25 + 9; // container 25: same level-1 container (0) as 700's container 21
  flipBit(all, bm, 0, hidden);
  t.true(bitAt(all, bm, 0, hidden));
  t.false(bitAt(all, bm, 1, hidden >>> 5));
  for (const seed of SEEDS) t.is(ops.findSet(bm, seed), -1, `hidden bit, seed ${seed}`);
  t.is(ops.scanFindSet(bm, 0), hidden, 'the exact scan of level 0 sees it');
  // Once the set completes, the descent finds it.
  all[containerIndex(bm, 1, hidden >>> 10)]! |= 1 << ((hidden >>> 5) & 31);
  for (const seed of SEEDS) t.is(ops.findSet(bm, seed), hidden, `completed, seed ${seed}`);
});

test('find_set gives up after a bounded number of loads when stale upper bits abound', (t) => {
  // 2^20 bits: 1024 level-1 bits. Make 600 of them stale (container emptied) and put the one
  // real bit in the container that the rotation reaches last: beyond 256 loads, -1.
  const bits = 1 << 20;
  const { all, bm, ops } = moduleBitmap(bits);
  for (let c = 0; c < 600; c++) {
    setConsistent(all, bm, c * 32);
    flipBit(all, bm, 0, c * 32);
  }
  const real = 1000 * 32 + 1;
  setConsistent(all, bm, real);
  t.is(ops.findSet(bm, 0, false), -1, 'no rotation: the stale containers come first and spend the budget');
  t.is(ops.scanFindSet(bm, 0, false), real);
  // With fewer stale bits than the budget, the real one is found.
  for (let c = 0; c < 500; c++) flipBit(all, bm, 1, c); // 500 stale level-1 bits cleared: 100 left
  t.is(ops.findSet(bm, 0, false), real);
});
