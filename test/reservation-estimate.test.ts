/**
 * (wasm/src/alloc/core.rs C7) On a heap of several threads, a warp's first reservation of a
 * type asks for what the thread's last warp took of it (TS_WANT), not for every lane left;
 * another lane of the same warp that finds the cache empty asks for the lanes left (C2).
 * Played by hand on one Allocator (the core's binding) over an atomic heap, the warp words
 * stored as a do-all executor stores them (C1): what each reservation took is read from the
 * state (S_CACHED, TS_CACHE_MASK, TS_WANT) and from the block's allocation word.
 *  - a sparse creator (one lane of 32 creates): C2 once, then one slot per warp, nothing
 *    cached and nothing given back;
 *  - a second create in the same warp asks for the lanes left; the warp's end counts what
 *    the warp took (two) for the next warp;
 *  - a warp whose lanes all create keeps one reservation of its lanes left;
 *  - one thread (a Plain heap) keeps C2.
 * Where a test deletes a warp's objects after it, the next warp finds its block empty again,
 * so that what a reservation takes is what it asked for, not what the block had left.
 */
import test from 'ava';
import type { Allocator } from '../runtime/allocator.js';
import { S_CACHED, S_TYPES, TS_CACHE_MASK, TS_WANT, TS_WORDS, type TypeLayout } from '../runtime/layout.js';
import { allocatorFixture } from './helpers/allocators.js';

const word = (a: Allocator, k: number): number => a.heap.i32[a.state + k]!;
const perType = (a: Allocator, t: TypeLayout, k: number): number => word(a, S_TYPES + t.id * TS_WORDS + k);
const popc = (x: number): number => {
  let n = 0;
  for (let v = x >>> 0; v !== 0; v &= v - 1) n++;
  return n;
};

/**
 * One warp of `lanes` lanes on allocator `a`: before each lane the lanes left (C1), then the
 * creates of that lane (`creates[k]` objects of `t`). Returns, per create, how many slots
 * were cached right after it (what its reservation kept for later lanes), and the handles.
 */
function warp(a: Allocator, t: TypeLayout, lanes: number, creates: readonly number[]): { cachedAfter: number[]; handles: number[] } {
  const cachedAfter: number[] = [];
  const handles: number[] = [];
  a.warpBegin(lanes);
  for (let k = 0; k < lanes; k++) {
    a.heap.i32[a.laneWord] = lanes - k;
    for (let j = 0; j < (creates[k] ?? 0); j++) {
      handles.push(a.allocate(t));
      cachedAfter.push(popc(perType(a, t, TS_CACHE_MASK)));
    }
  }
  a.warpEnd();
  return { cachedAfter, handles };
}

/** warp(), then every object it made deleted again (outside the warp): the next warp finds the block as before. */
function warpAndDelete(
  a: Allocator,
  t: TypeLayout,
  lanes: number,
  creates: readonly number[],
): { cachedAfter: number[]; handles: number[] } {
  const w = warp(a, t, lanes, creates);
  for (const h of w.handles) a.release(h >>> 5, h & 31);
  return w;
}

test('several threads: a sparse creator reserves one slot per warp after the first warp (C7)', (t) => {
  const f = allocatorFixture(4, true);
  const a = f.t1;
  const one = [1]; // lane 0 of 32 creates one object
  const w1 = warp(a, f.tA, 32, one);
  t.deepEqual(w1.cachedAfter, [31], 'the first warp has no estimate: C2 reserves the 32 lanes left');
  t.is(perType(a, f.tA, TS_WANT), 1, 'its end gave 31 back: the warp took one');
  for (let i = 0; i < 5; i++) {
    const w = warp(a, f.tA, 32, one);
    t.deepEqual(w.cachedAfter, [0], `warp ${i + 2}: one slot reserved, nothing cached`);
    t.is(word(a, S_CACHED), 0);
  }
  t.is(perType(a, f.tA, TS_WANT), 1);
  f.heap.validate();
});

test('several threads: a second create in the warp asks for the lanes left, and the next warp for what this one took (C7)', (t) => {
  const f = allocatorFixture(4, true);
  const a = f.t1;
  warp(a, f.tA, 32, [1]); // the estimate: 1
  // Lanes 0 and 5 create: lane 0 reserves 1 (the estimate), lane 5 finds the cache empty in
  // the same warp and reserves its 27 lanes left (C2), of which 26 go back at the end.
  const creates = new Array<number>(32).fill(0);
  creates[0] = 1;
  creates[5] = 1;
  const w = warp(a, f.tA, 32, creates);
  t.deepEqual(w.cachedAfter, [0, 26]);
  t.is(perType(a, f.tA, TS_WANT), 2, 'the warp took two');
  const next = warp(a, f.tA, 32, [1]);
  t.deepEqual(next.cachedAfter, [1], 'the next warp reserves two for its first create');
  t.is(perType(a, f.tA, TS_WANT), 1);
  f.heap.validate();
});

test('several threads: lanes that all create keep one reservation of the lanes left (C7)', (t) => {
  const f = allocatorFixture(4, true);
  const a = f.t1;
  warpAndDelete(a, f.tA, 32, [1]); // a sparse warp first: the estimate is 1
  const all = new Array<number>(32).fill(1);
  const w = warpAndDelete(a, f.tA, 32, all);
  // The first create reserves the estimate (1); lane 1 finds the cache empty: 31 lanes left.
  t.deepEqual(w.cachedAfter.slice(0, 3), [0, 30, 29]);
  t.is(perType(a, f.tA, TS_WANT), 32, 'nothing went back: the warp took 32');
  const again = warpAndDelete(a, f.tA, 32, all);
  t.deepEqual(again.cachedAfter.slice(0, 2), [31, 30], 'the next full warp: one reservation of 32');
  t.is(new Set(again.handles.map((h) => h >>> 5)).size, 1, 'its objects in one block');
  f.heap.validate();
});

test('one thread (a Plain heap): every warp reserves the lanes left, as C2', (t) => {
  const f = allocatorFixture(4, false);
  const a = f.t1;
  for (let i = 0; i < 3; i++) {
    const w = warpAndDelete(a, f.tA, 32, [1]);
    t.deepEqual(w.cachedAfter, [31], `warp ${i + 1}`);
  }
  t.is(perType(a, f.tA, TS_WANT), 0, 'no estimate kept');
  f.heap.validate();
});
