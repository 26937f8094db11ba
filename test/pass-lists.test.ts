/**
 * What a do-all's snapshot may skip (runtime/thread.ts snapshotLists L1–L3, runBlocks R1):
 *  - block lists are reused while the block-set epoch stands still, and walked again as
 *    soon as a block joins or leaves a class — so a do-all visits objects created in a new
 *    block and none of a retired one (a core that forgot to bump the epoch fails here);
 *  - a do-all whose compiled method changes no allocation word reads the allocation words
 *    and copies no iteration word, and still visits exactly the live objects, also of a
 *    class with fewer than 32 slots a block (its pre-set high bits are not lanes);
 *  - a do-all that creates objects copies the iteration words and does not visit its own
 *    new objects;
 *  - a defrag whose WebAssembly rewrite keeps its forwarding masks in the block list R
 *    (runtime/defrag-wasm.ts) makes the next do-all walk again, even when it moved nothing;
 *  - a heap snapshot put back (runtime/pass-hook.ts restoreHeap), whose epoch word is older
 *    than the lists' and may, bumped once, equal it: the next do-all walks again.
 * Every check compares with the same program run interpreted (compile: false), which
 * copies the iteration words before every pass.
 */
import test from 'ava';
import { createRuntime, f64, i32, object, type Runtime } from '../index.js';
import { BLOCK_ITER_WORD } from '../runtime/layout.js';
import { heapSnapshot, restoreHeap } from '../runtime/pass-hook.js';
import type { ThreadContext } from '../runtime/thread.js';

/** 32 slots a block (the smallest class). */
class Dot extends object({ v: i32 }) {
  bump(): void {
    this.v += 1;
  }
  /** Creates a Dot per lane and counts the visit: the new ones must not be visited by this pass. */
  split(): void {
    if (this.v >= 0) this.runtime.create(Dot).v = -1000;
    this.v += 1;
  }
}

/** Fewer than 32 slots a block (the block size follows Dot), so its allocation words have pre-set high bits. */
class Big extends object({ a: f64, b: f64, c: f64, v: i32 }) {
  bump(): void {
    this.v += 10;
  }
}

const CLASSES = [Dot, Big];

const contextOf = (rt: Runtime): ThreadContext => rt.context as unknown as ThreadContext;

async function make(compile: boolean): Promise<Runtime> {
  return createRuntime({ classes: CLASSES, heap: '8MB', threads: 1, compile, seed: 3 });
}

/** Run `check` on a compiled and an interpreted runtime of the same program, then close both. */
async function withBoth(check: (compiled: Runtime, interpreted: Runtime) => Promise<void> | void): Promise<void> {
  const compiled = await make(true);
  const interpreted = await make(false);
  try {
    await check(compiled, interpreted);
  } finally {
    await compiled.close();
    await interpreted.close();
  }
}

/** Every object's class and v, sorted: what a run computed, independent of handles. */
function state(rt: Runtime): string {
  const rows: string[] = [];
  rt.deviceDo(Dot, (o) => rows.push(`D${o.v}`));
  rt.deviceDo(Big, (o) => rows.push(`B${o.v}`));
  return rows.sort().join(' ');
}

test('block lists are reused while no block joins or leaves a class, walked again when one does', async (t) => {
  await withBoth(async (compiled, interpreted) => {
    const ctx = contextOf(compiled);
    const dots = new Map<Runtime, number[]>();
    for (const rt of [compiled, interpreted]) {
      const hs: number[] = [];
      for (let i = 0; i < 40; i++) hs.push(rt.create(Dot, { v: i }).handle);
      dots.set(rt, hs);
    }
    const step = (what: string, reused: boolean): void => {
      const before = ctx.listsReused;
      for (const rt of [compiled, interpreted]) rt.doAll(Dot, 'bump');
      t.is(ctx.listsReused - before, reused ? 1 : 0, `${what}: lists ${reused ? '' : 'not '}reused`);
      t.is(state(compiled), state(interpreted), what);
    };
    step('first do-all', false);
    step('nothing changed', true);
    // One more object in a block that is already listed: no block joins, the lists stand.
    for (const rt of [compiled, interpreted]) dots.get(rt)!.push(rt.create(Dot, { v: 500 }).handle);
    step('an object in a listed block', true);
    // Enough to open new blocks: Dot's list grows.
    for (const rt of [compiled, interpreted]) for (let i = 0; i < 100; i++) dots.get(rt)!.push(rt.create(Dot, { v: 1000 + i }).handle);
    step('objects in new blocks', false);
    step('nothing changed again', true);
    // Empty the last blocks: a runtime of one thread keeps them with Dot across passes (the
    // allocator's kept blocks, K2) — the lists stand — until validateHeap() gives them back.
    for (const rt of [compiled, interpreted]) {
      const hs = dots.get(rt)!;
      for (const h of hs.splice(40)) rt.destroy(rt.get(Dot, h));
    }
    step('after the deletions, the emptied blocks kept', true);
    for (const rt of [compiled, interpreted]) rt.validateHeap();
    step('after the retired blocks', false);
    // Another class's do-all, then Dot's again: each list was written by one walk.
    for (const rt of [compiled, interpreted]) for (let i = 0; i < 5; i++) rt.create(Big, { v: i });
    for (const rt of [compiled, interpreted]) rt.doAll(Big, 'bump');
    step('Dot after a do-all over Big', false);
    t.is(compiled.count(Dot), 40);
    compiled.validateHeap();
  });
});

test('a do-all that changes no allocation word reads the allocation words and copies no iteration word', async (t) => {
  await withBoth(async (compiled, interpreted) => {
    const handles = new Map<Runtime, number[]>();
    for (const rt of [compiled, interpreted]) {
      const hs: number[] = [];
      for (let i = 0; i < 70; i++) hs.push(rt.create(Big, { v: i }).handle);
      handles.set(rt, hs);
    }
    const heap = compiled.heap;
    const iterationWords = (): number[] => {
      const words: number[] = [];
      compiled.deviceDo(Big, (o) => words.push(heap.i32[heap.blockWord(o.handle >>> 5) + BLOCK_ITER_WORD]!));
      return words;
    };
    for (let round = 0; round < 4; round++) {
      const before = iterationWords();
      for (const rt of [compiled, interpreted]) rt.doAll(Big, 'bump');
      t.deepEqual(iterationWords(), before, `round ${round}: the compiled do-all wrote no iteration word`);
      t.is(state(compiled), state(interpreted), `round ${round}`);
      // Between do-alls: delete some (their slots must not be lanes) and create some in the holes.
      for (const rt of [compiled, interpreted]) {
        const hs = handles.get(rt)!;
        for (let k = 0; k < 3; k++) rt.destroy(rt.get(Big, hs.splice(round * 5 + k * 7, 1)[0]!));
        for (let k = 0; k < 2; k++) hs.push(rt.create(Big, { v: 100 * (round + 1) + k }).handle);
      }
    }
    for (const rt of [compiled, interpreted]) rt.doAll(Big, 'bump');
    t.is(state(compiled), state(interpreted), 'last round');
    t.is(compiled.count(Big), 70 - 4 * 3 + 4 * 2);
    t.true(compiled.stats().compiled['Big.bump']?.compiled === true);
    compiled.validateHeap();
  });
});

test('a do-all that creates objects copies the iteration words and does not visit its new objects', async (t) => {
  await withBoth(async (compiled, interpreted) => {
    for (const rt of [compiled, interpreted]) for (let i = 0; i < 50; i++) rt.create(Dot, { v: i });
    for (const rt of [compiled, interpreted]) {
      rt.doAll(Dot, 'bump'); // reads the allocation words
      rt.doAll(Dot, 'split'); // must snapshot: the new Dots (v = -1000) are not lanes
      rt.doAll(Dot, 'bump');
    }
    t.is(state(compiled), state(interpreted));
    t.is(compiled.count(Dot), 100);
    let fresh = 0;
    compiled.deviceDo(Dot, (o) => {
      if (o.v === -999) fresh++; // created by split and not visited by it, bumped once afterwards
    });
    t.is(fresh, 50);
    compiled.validateHeap();
  });
});

test('a defrag on WebAssembly lanes overwrites R: the next do-all walks the bitmaps again', async (t) => {
  const rt = await createRuntime({ classes: CLASSES, heap: '8MB', threads: 1, backend: 'wasm', wasm: { defragLanes: 'wasm' }, seed: 3 });
  try {
    const ctx = contextOf(rt);
    for (let i = 0; i < 64; i++) rt.create(Dot, { v: i }); // two full blocks: nothing to merge
    rt.doAll(Dot, 'bump');
    rt.doAll(Dot, 'bump');
    const reused = ctx.listsReused;
    t.true(reused > 0, 'the second do-all reused the lists');
    const result = rt.defrag(Dot);
    t.is(result.stats.objectsMoved, 0, 'a compact heap: the defrag moved nothing');
    rt.doAll(Dot, 'bump');
    t.is(ctx.listsReused, reused, 'the do-all after the defrag walked again');
    let sum = 0;
    rt.deviceDo(Dot, (o) => void (sum += o.v));
    t.is(sum, (63 * 64) / 2 + 3 * 64);
    rt.validateHeap();
  } finally {
    await rt.close();
  }
});

test('a heap snapshot put back: the next do-all walks again even when the epoch word comes back to the lists’ value', async (t) => {
  const rt = await make(true);
  try {
    const hs: number[] = [];
    for (let i = 0; i < 70; i++) hs.push(rt.create(Dot, { v: i }).handle); // two full blocks and one of 6
    rt.doAll(Dot, 'bump');
    const snap = await heapSnapshot(rt);
    const epoch = rt.heap.blockSetEpoch();
    const last = Math.max(...hs.map((h) => h >>> 5));
    for (const h of hs.filter((x) => x >>> 5 === last)) rt.destroy(rt.get(Dot, h)); // empties the third block
    rt.doAll(Dot, 'bump'); // the emptied block stays kept (a runtime of one thread, K2) …
    t.is(rt.heap.blockSetEpoch(), epoch, 'no block retired by the pass');
    rt.validateHeap(); // … until validateHeap() gives it back
    t.is(rt.heap.blockSetEpoch(), epoch + 1, 'one block retired');
    rt.doAll(Dot, 'bump'); // lists of two blocks, at epoch + 1
    await restoreHeap(rt, snap); // three blocks again; the word says epoch, + 1 for the rewrite
    rt.doAll(Dot, 'bump');
    let sum = 0;
    rt.deviceDo(Dot, (o) => void (sum += o.v));
    t.is(rt.count(Dot), 70);
    t.is(sum, (69 * 70) / 2 + 2 * 70, 'the restored objects, bumped once before the snapshot and once after it');
    rt.validateHeap();
  } finally {
    await rt.close();
  }
});
