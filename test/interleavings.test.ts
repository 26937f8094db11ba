/**
 * Forced interleavings of the allocator's block transitions, on one thread, against the
 * Rust allocator core (wasm/src/alloc/core.rs) through its binding.
 *
 * Several Allocator instances over one Heap stand for threads t1, t2, … (each with its
 * own allocator state in the heap). Each test runs the core's atomic steps (allocate,
 * reserve, initializeBlock, invalidateLock / invalidateResolve, retireBlock — exported by
 * the core and bound as @internal for this purpose) one at a time in the order that makes
 * a race happen, and asserts the outcome. The first half of a release (Alg. 2 l. 1–4:
 * read the generation, clear the slot's bit) is the core's own release_begin, the first
 * half of its release (`releaseStep` below), so a thread can be "paused" right after it
 * learned that it emptied a block. The D1 rollbacks a core makes inside allocate() are read from its
 * state's rollback log (Allocator.rollbacks).
 *
 * Scenarios (runtime/allocator.ts D1–D3, paper §5.2, Alg. 1, 2, 7):
 *  D1  a reservation lands in a block that was freed and re-initialised for another type:
 *      the slot is rolled back and allocate() must return an object of the requested type
 *      (the original returned the object in the wrong block).
 *  D2  block ABA: between t1's EMPTY release and its invalidation, the block is re-used,
 *      emptied and freed by others, and re-initialised: t1's stale invalidation must fail
 *      and leave the re-initialised block allocated and valid.
 *  A7  Alg. 7's cases: the block was refilled before the lock; partly refilled; and a
 *      release that runs while the invalidation holds all bits (rollback, then retry).
 */
import test from 'ava';
import { INVALIDATE_FAILED, INVALIDATE_OWNED, INVALIDATE_RETRY, type Allocator } from '../runtime/allocator.js';
import { allocatorFixture, type Fixture } from './helpers/allocators.js';
import type { Heap } from '../runtime/heap.js';
import { ContentionError, retryLimits } from '../runtime/index.js';
import { ALL_ONES, BLOCK_ALLOC_WORD, BLOCK_GEN_WORD } from '../runtime/layout.js';

/** `keep` 0 (default here): the paper's allocator, every emptied block retired at once. */
const fixture = (keep = 0): Fixture => allocatorFixture(keep);

const blockOf = (h: number): number => h >>> 5;

function word(heap: Heap, bid: number, k: number): number {
  return Atomics.load(heap.i32, heap.blockWord(bid) + k);
}

/**
 * Alg. 2 l. 1–4, run by allocator `a` through the core's own first half of a release
 * (Allocator.releaseBegin, core.rs release_begin): the generation and type read while the
 * object still pins the block, then the slot's bit cleared. Returns what the releasing
 * thread learned: FIRST (it freed a slot of a full block: it must set the active bit) and
 * EMPTY (it freed the last object: it must invalidate the block). The thread is then
 * "paused" there; the test runs the rest (invalidate, retireBlock) when it chooses.
 */
function releaseStep(a: Allocator, heap: Heap, h: number): { gen: number; type: number; first: boolean; empty: boolean } {
  const { gen, type, before } = a.releaseBegin(h);
  const mask = 1 << (h & 31);
  return { gen, type, first: before === ALL_ONES, empty: (before & ~mask) === heap.highMask[type] };
}

/** "Thread `a` ran free.findAndClear() and it returned `bid`": the first step of newBlock (through the core's bitmap operations). */
function takeFreeBlock(f: Fixture, bid: number): boolean {
  return f.bitmaps.tryClear(f.heap.free, bid);
}

/**
 * The (block, slot) pairs allocator `a` rolls back from now on (Alg. 1 l. 17, D1): read
 * from its state's rollback log when `done()` is called.
 */
function watchRollbacks(a: Allocator): () => [number, number][] {
  const before = a.rollbackCount();
  return () => {
    const n = a.rollbackCount() - before;
    if (n > 8) throw new Error(`${n} rollbacks: more than the state's log holds (8)`);
    return n === 0 ? [] : a.rollbacks().slice(-n);
  };
}

// ------------------------------------------------------------------ D1: rollback after a type change

test('D1: a stale block choice re-initialised for another type is rolled back; allocate() returns the requested type', (t) => {
  const f = fixture();
  const { heap, tA, tB, t1, t2 } = f;
  const h1 = t1.allocate(tA); // t1 now prefers block b for A
  const b = blockOf(h1);
  // t2 deletes the object (b is emptied and freed), takes b for B and allocates in it.
  t2.releaseHandle(h1);
  t.true(heap.free.get(b));
  t.true(takeFreeBlock(f, b));
  t2.initializeBlock(b, tB);
  const hB = t2.allocate(tB);
  t.is(blockOf(hB), b, 'b is the only B block');
  heap.validate();
  // t1 reserves a slot in b, finds type B ≠ A, rolls back and selects again.
  const rollbacksOf = watchRollbacks(t1);
  const h2 = t1.allocate(tA);
  const rollbacks = rollbacksOf();
  t.is(rollbacks.length, 1, 'exactly one rollback');
  t.is(rollbacks[0]![0], b, 'the rollback was in the re-typed block');
  t.is(heap.blockType(blockOf(h2)), tA.id, 'the returned object is in a block of type A');
  t.not(blockOf(h2), b);
  // b is untouched: still B, t2's object its only one.
  t.is(heap.blockType(b), tB.id);
  t.is(heap.liveInBlock(b), 1);
  t.is(word(heap, b, BLOCK_ALLOC_WORD), heap.highMask[tB.id]! | (1 << (hB & 31)));
  heap.validate();
});

test('D1: the rollback may empty the re-typed block; the allocator then frees it and stays consistent', (t) => {
  const f = fixture();
  const { heap, tA, tB, t1, t2 } = f;
  const h1 = t1.allocate(tA);
  const b = blockOf(h1);
  t2.releaseHandle(h1);
  t.true(takeFreeBlock(f, b));
  t2.initializeBlock(b, tB); // t2 has not reserved a slot in b yet
  const rollbacksOf = watchRollbacks(t1);
  const h2 = t1.allocate(tA);
  const rollbacks = rollbacksOf();
  t.is(rollbacks.length, 1);
  t.is(heap.blockType(blockOf(h2)), tA.id);
  // The rolled-back slot was b's only object: t1's rollback emptied b, so t1 invalidated
  // and freed it (§5.2: "the rollback may trigger additional block bitmap updates"). t1
  // then took a free block for A, which may be b itself, in a third generation.
  t.not(heap.blockType(b), tB.id, 'b is no longer a B block');
  t.true(heap.free.get(b) || blockOf(h2) === b);
  if (blockOf(h2) === b) t.is(word(heap, b, BLOCK_GEN_WORD), 3);
  heap.validate();
  // t2 still believes it owns an empty B block b; its allocation of a B handles that.
  const hB = t2.allocate(tB);
  t.is(heap.blockType(blockOf(hB)), tB.id);
  heap.validate();
});

test('D1: rollback when the stolen slot was the last free one (FULL, then FIRST again)', (t) => {
  const f = fixture();
  const { heap, tA, tB, t1, t2 } = f;
  const b = blockOf(t1.allocate(tA));
  t2.releaseHandle(b * 32 + ffsSlot(heap, b));
  t.true(takeFreeBlock(f, b));
  t2.initializeBlock(b, tB);
  const mine = Array.from({ length: tB.slots - 1 }, () => t2.allocate(tB)); // 7 of 8 slots
  t.true(mine.every((h) => blockOf(h) === b));
  heap.validate();
  const rollbacksOf = watchRollbacks(t1);
  const h = t1.allocate(tA); // takes slot 8 of 8: the block is full for a moment
  const rollbacks = rollbacksOf();
  t.is(rollbacks.length, 1);
  t.is(heap.blockType(blockOf(h)), tA.id);
  t.true(heap.active[tB.id]!.get(b), 'the rollback made b active again');
  t.is(heap.liveInBlock(b), tB.slots - 1);
  heap.validate();
  // t2 can fill its block now.
  t.is(blockOf(t2.allocate(tB)), b);
  t.false(heap.active[tB.id]!.get(b));
  heap.validate();
});

test('D1: allocateMany with a stale block choice returns only objects of the requested type', (t) => {
  const f = fixture();
  const { heap, tA, tB, t1, t2 } = f;
  const first = new Uint32Array(1);
  t1.allocateMany(tA, 1, first);
  const b = blockOf(first[0]!);
  t2.releaseHandle(first[0]!);
  t.true(takeFreeBlock(f, b));
  t2.initializeBlock(b, tB);
  const hB = t2.allocate(tB);
  const rollbacksOf = watchRollbacks(t1);
  const out = new Uint32Array(70);
  t1.allocateMany(tA, 70, out);
  const rollbacks = rollbacksOf();
  t.true(rollbacks.length >= 1 && rollbacks.every(([bid]) => bid === b), 'rolled back in b only');
  t.is(new Set(out).size, 70, 'unique handles');
  t.true(
    [...out].every((h) => heap.blockType(blockOf(h)) === tA.id),
    'every handle is in an A block',
  );
  t.is(heap.liveInBlock(b), 1);
  t.is(word(heap, b, BLOCK_ALLOC_WORD), heap.highMask[tB.id]! | (1 << (hB & 31)));
  heap.validate();
});

/** Slot of some allocated object in block `bid` (its lowest allocated slot). */
function ffsSlot(heap: Heap, bid: number): number {
  const live = word(heap, bid, BLOCK_ALLOC_WORD) & ~heap.highMask[heap.blockType(bid)]!;
  return 31 - Math.clz32(live & -live);
}

// ------------------------------------------------------------------ D2: block ABA

/**
 * The common prefix of the ABA scenarios: t1 empties block b (generation g) and pauses;
 * t2 allocates in b; t3 deletes that object, invalidates b in generation g (legitimately)
 * and frees it. Returns b and g.
 */
function abaPrefix(f: Fixture): { b: number; g: number } {
  const { heap, tA, t1, t2, t3 } = f;
  const h1 = t1.allocate(tA);
  const b = blockOf(h1);
  const r1 = releaseStep(t1, heap, h1);
  if (!r1.empty) throw new Error('t1 should have emptied the block');
  const h2 = t2.allocate(tA);
  if (blockOf(h2) !== b) throw new Error('t2 should re-use the still-active block');
  t3.releaseHandle(h2); // EMPTY again; t3 invalidates in generation g and frees b
  return { b, g: r1.gen };
}

test('D2: a stale invalidation fails on a block re-initialised for another type (empty or not)', (t) => {
  const f = fixture();
  const { heap, tB, t1, t4 } = f;
  const { b, g } = abaPrefix(f);
  t.true(heap.free.get(b), 't3 freed the block');
  heap.validate();
  // t4 takes b for B: a new generation.
  t.true(takeFreeBlock(f, b));
  t4.initializeBlock(b, tB);
  t.is(word(heap, b, BLOCK_GEN_WORD), g + 1);
  // Empty, so the bitmap alone looks exactly like the block t1 emptied: a check by index
  // and bitmap (the original's) would let t1 take t4's block.
  t.is(word(heap, b, BLOCK_ALLOC_WORD), heap.highMask[tB.id]!);
  t.false(t1.invalidate(b, g), 'the stale invalidation must fail');
  t.is(word(heap, b, BLOCK_ALLOC_WORD), heap.highMask[tB.id]!, 'and roll its bits back');
  t.is(heap.blockType(b), tB.id);
  t.true(heap.allocated[tB.id]!.get(b));
  t.true(heap.active[tB.id]!.get(b));
  t.false(heap.free.get(b));
  heap.validate();
  // t4 goes on allocating in its block; a second stale attempt fails as well.
  const h = t4.allocate(tB);
  t.is(blockOf(h), b);
  t.false(t1.invalidate(b, g));
  t.is(heap.liveInBlock(b), 1);
  heap.validate();
  // And the block's life goes on normally.
  t4.releaseHandle(h);
  t.true(heap.free.get(b));
  heap.validate();
});

test('D2: a stale invalidation fails on a block re-initialised for the same type (ABA proper)', (t) => {
  const f = fixture();
  const { heap, tA, t1, t4 } = f;
  const { b, g } = abaPrefix(f);
  t.true(takeFreeBlock(f, b));
  t4.initializeBlock(b, tA);
  t.is(word(heap, b, BLOCK_ALLOC_WORD), heap.highMask[tA.id]!, 'empty in generation g + 1');
  t.false(t1.invalidate(b, g));
  t.true(heap.allocated[tA.id]!.get(b));
  heap.validate();
  const h = t4.allocate(tA);
  t.is(blockOf(h), b);
  heap.validate();
});

test('D2: a stale invalidation fails while the block is free, and while another thread owns it', (t) => {
  const f = fixture();
  const { heap, tA, t1, t2 } = f;
  const { b, g } = abaPrefix(f);
  // Free: the allocation bitmap is all ones.
  t.false(t1.invalidate(b, g));
  t.true(heap.free.get(b));
  heap.validate();
  // Owned: t2 emptied b in the same generation and won the invalidation, but has not
  // retired it yet. A second thread that also emptied it must not free it again.
  const f2 = fixture();
  const h1 = f2.t1.allocate(f2.tA);
  const b2 = blockOf(h1);
  const r1 = releaseStep(f2.t1, f2.heap, h1); // t1: EMPTY, paused
  const h2 = f2.t2.allocate(f2.tA);
  const r2 = releaseStep(f2.t2, f2.heap, h2); // t2: EMPTY as well, same generation
  t.true(r1.empty && r2.empty && r1.gen === r2.gen);
  t.true(f2.t2.invalidate(b2, r2.gen), 't2 wins');
  t.false(f2.t1.invalidate(b2, r1.gen), 't1 must lose: one block, one owner');
  f2.t2.retireBlock(b2, f2.tA.id);
  f2.heap.validate();
  t.true(f2.heap.free.get(b2));
  void tA;
  void t2;
});

test('control: an invalidation in the generation that emptied the block succeeds', (t) => {
  const { heap, tA, t1 } = fixture();
  const h = t1.allocate(tA);
  const b = blockOf(h);
  const r = releaseStep(t1, heap, h);
  t.true(r.empty);
  t.true(t1.invalidate(b, r.gen));
  t.is(word(heap, b, BLOCK_ALLOC_WORD), ALL_ONES, 'locked');
  t1.retireBlock(b, tA.id);
  t.true(heap.free.get(b));
  heap.validate();
  // …and with a generation that does not match it fails even though the block is empty.
  const h2 = t1.allocate(tA);
  const r2 = releaseStep(t1, heap, h2);
  t.false(t1.invalidate(blockOf(h2), r2.gen - 1));
  heap.validate();
});

// ------------------------------------------------------------------ Alg. 7 cases

test('Alg. 7: every slot was reserved again before the lock → fails without touching the bitmap', (t) => {
  const f = fixture();
  const { heap, tA, t1, t2 } = f;
  const h1 = t1.allocate(tA);
  const b = blockOf(h1);
  const r1 = releaseStep(t1, heap, h1);
  t.true(r1.empty);
  const refill = Array.from({ length: tA.slots }, () => t2.allocate(tA));
  t.true(
    refill.every((h) => blockOf(h) === b),
    'b refilled',
  );
  t.false(heap.active[tA.id]!.get(b), 'full blocks are not active');
  t.is(t1.invalidateResolve(b, r1.gen, t1.invalidateLock(b)), INVALIDATE_FAILED);
  t.is(word(heap, b, BLOCK_ALLOC_WORD), ALL_ONES);
  t.is(heap.liveInBlock(b), tA.slots);
  heap.validate();
});

test('Alg. 7: some slots were reserved again before the lock → rolled back, fails', (t) => {
  const f = fixture();
  const { heap, tA, t1, t2 } = f;
  const h1 = t1.allocate(tA);
  const b = blockOf(h1);
  const r1 = releaseStep(t1, heap, h1);
  const h2 = t2.allocate(tA);
  const h3 = t2.allocate(tA);
  t.true(blockOf(h2) === b && blockOf(h3) === b);
  const held = word(heap, b, BLOCK_ALLOC_WORD);
  const before = t1.invalidateLock(b);
  t.is(before, held);
  t.is(word(heap, b, BLOCK_ALLOC_WORD), ALL_ONES, 'all bits held');
  t.is(t1.invalidateResolve(b, r1.gen, before), INVALIDATE_FAILED);
  t.is(word(heap, b, BLOCK_ALLOC_WORD), held, 'exactly our bits given back');
  t.true(heap.active[tA.id]!.get(b));
  heap.validate();
});

test('Alg. 7: a release while the invalidation holds all bits empties the block → rollback clears active, retry owns it', (t) => {
  const f = fixture();
  const { heap, tA, t1, t2 } = f;
  const h1 = t1.allocate(tA);
  const b = blockOf(h1);
  const r1 = releaseStep(t1, heap, h1); // t1: EMPTY, pauses before invalidate
  const h2 = t2.allocate(tA); // t2 re-uses b
  t.is(blockOf(h2), b);
  const before = t1.invalidateLock(b); // t1 holds every bit
  t.is(before, 1 << (h2 & 31));
  const r3 = releaseStep(f.t3, heap, h2); // t3 deletes h2 meanwhile: it sees a FULL block
  t.true(r3.first, 't3 must set the active bit (Alg. 2 l. 6)');
  t.false(r3.empty, 't3 does not see the block empty: t1 stays responsible');
  t.true(heap.active[tA.id]!.get(b), 'the bit t3 wants to set is still set');
  // t1's rollback: another thread cleared a bit → clear active (so t3's set completes),
  // and the block is empty again in t1's generation → retry.
  t.is(t1.invalidateResolve(b, r1.gen, before), INVALIDATE_RETRY);
  t.false(heap.active[tA.id]!.get(b));
  t.is(word(heap, b, BLOCK_ALLOC_WORD), heap.highMask[tA.id]!);
  f.bitmaps.set(heap.active[tA.id]!, b); // t3 completes its release (Alg. 2 l. 6)
  t.is(t1.invalidateResolve(b, r1.gen, t1.invalidateLock(b)), INVALIDATE_OWNED);
  t1.retireBlock(b, tA.id);
  t.true(heap.free.get(b));
  t.false(heap.allocated[tA.id]!.get(b));
  heap.validate();
});

test('Alg. 7: a release while the invalidation holds all bits, block not empty after it → rollback, fails, block stays active', (t) => {
  const f = fixture();
  const { heap, tA, t1, t2 } = f;
  const h1 = t1.allocate(tA);
  const b = blockOf(h1);
  const r1 = releaseStep(t1, heap, h1);
  const h2 = t2.allocate(tA);
  const h3 = t2.allocate(tA);
  const before = t1.invalidateLock(b);
  const r3 = releaseStep(f.t3, heap, h3);
  t.true(r3.first);
  t.is(t1.invalidateResolve(b, r1.gen, before), INVALIDATE_FAILED);
  t.is(word(heap, b, BLOCK_ALLOC_WORD), 1 << (h2 & 31), 'only h2 is left');
  f.bitmaps.set(heap.active[tA.id]!, b); // the releaser's FIRST duty
  heap.validate();
  t.is(heap.liveInBlock(b), 1);
  // h2's owner deletes it later: a normal EMPTY release frees the block.
  t2.releaseHandle(h2);
  t.true(heap.free.get(b));
  heap.validate();
});

test('Alg. 7 via invalidate(): the whole loop after a refill and release by others', (t) => {
  // invalidate() = lock + resolve, retried while RETRY: check it composes the steps.
  const f = fixture();
  const { heap, tA, t1, t2 } = f;
  const h1 = t1.allocate(tA);
  const b = blockOf(h1);
  const r1 = releaseStep(t1, heap, h1);
  const h2 = t2.allocate(tA);
  t2.releaseHandle(h2); // t2 empties b in generation g too, and frees it
  t.true(heap.free.get(b));
  t.false(t1.invalidate(b, r1.gen), 'someone else already freed it');
  heap.validate();
});

// ------------------------------------------------------------------ bounded retries

test('a retry loop of the core gives up after retryLimits with a ContentionError naming the operation; the heap is unchanged', (t) => {
  const f = fixture();
  const { heap, tA, t1 } = f;
  const hs = Array.from({ length: 32 }, () => t1.allocate(tA)); // one full block: not active
  const b = blockOf(hs[0]!);
  t.false(heap.active[tA.id]!.get(b));
  // Forge the state a dead thread could leave: the active bit of the full block already set.
  // The next release frees the first slot (FIRST) and must set that bit: it waits for a
  // clear that never comes.
  f.bitmaps.set(heap.active[tA.id]!, b);
  const saved = { ...retryLimits };
  retryLimits.spinAttempts = 2;
  retryLimits.maxAttempts = 12;
  try {
    const started = Date.now();
    const e = t.throws(() => t1.releaseHandle(hs[3]!), { instanceOf: ContentionError });
    t.regex(e.message, new RegExp(`^active\\[A\\]\\.set\\(${b}\\) at level 0: gave up after 12 attempts`));
    t.true(Date.now() - started < 2000, 'the lowered limits reached the core');
  } finally {
    Object.assign(retryLimits, saved);
  }
  t.is(heap.liveInBlock(b), 31, 'the slot was freed before the wait');
});
