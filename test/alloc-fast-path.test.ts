/**
 * The allocator's JavaScript fast paths (runtime/alloc-fast-path.ts F1–F4): a cached slot
 * of the warp taken without a call into the core, and a release in the middle of a block on
 * a one-thread heap made in JavaScript.
 *
 * The oracle is the core itself: the same random sequence of warps, lanes, creates,
 * releases and iteration snapshots runs on two heaps formatted alike, once through
 * Allocator (fast paths) and once through the core's exports directly; the handles, every
 * word of the two heaps (header, bitmaps, type table, allocator states, blocks) and the
 * errors must be the same. Call counts check that the fast paths are taken where they
 * apply and never where they do not (a heap of several threads, BitmapAlloc, checked types).
 * Both fast paths touch only the calling thread's state (F1) or run only on heaps of one
 * thread (F2), so no other thread can interleave with them.
 */
import test, { type ExecutionContext } from 'ava';
import fc from 'fast-check';
import { Allocator } from '../runtime/allocator.js';
import { Heap, type HeapOptions } from '../runtime/heap.js';
import { createRuntime, f32, f64, InvalidHandleError, MethodError, object } from '../index.js';
import {
  BLOCK_ALLOC_WORD,
  BLOCK_ITER_WORD,
  HEADER_OFFSET,
  MIN_HEAP_BYTES,
  planTypes,
  S_CACHED,
  type TypeLayout,
} from '../runtime/layout.js';
import { FC_SEED, fcParams } from './helpers/fc.js';
import { persistentHeapBytes } from './helpers/heap-bytes.js';
import { seedNote } from './helpers/seed.js';

/** 4 bytes: 32 slots per block. */
class A extends object({ x: f32 }) {}
/** 16 bytes: 8 slots per block (bits 8…31 pre-set). */
class B extends object({ y: f64, z: f64 }) {}

/** A compiled method's creates and destroys (F1 inline in alloc_<id>, F2 through FastRelease, the core's rest). */
class Churn extends object({ n: f64 }) {
  churn(k: number): void {
    const rt = this.runtime;
    const held = new Uint32Array(k);
    for (let i = 0; i < k; i++) held[i] = rt.create(A).handle;
    for (let i = 0; i < k; i++) rt.destroy(rt.get(A, held[i]!));
    this.n += k;
  }
  twice(): void {
    const a = this.runtime.create(A);
    this.runtime.destroy(a);
    this.runtime.destroy(a);
  }
}

type Fn = (...a: number[]) => number;

interface Side {
  heap: Heap;
  alloc: Allocator;
  types: TypeLayout[];
  /** Calls of the core's exports made through the Allocator, by export name. */
  calls: Map<string, number>;
}

/** A heap of A and B, its exports counted, and one Allocator on it. */
function side(options: HeapOptions & { checked?: boolean; bitmapAlloc?: boolean }): Side {
  const table = planTypes([A, B], { checked: options.checked === true, bitmapAlloc: options.bitmapAlloc === true });
  const heap = Heap.create(table, MIN_HEAP_BYTES, options);
  const calls = new Map<string, number>();
  const wasm = heap.wasm;
  const fn = wasm.fn.bind(wasm);
  wasm.fn = (name: string): Fn | undefined => {
    const f = fn(name);
    if (f === undefined) return undefined;
    return (...a: number[]) => {
      calls.set(name, (calls.get(name) ?? 0) + 1);
      return f(...a);
    };
  };
  const alloc = new Allocator(heap, 7);
  wasm.fn = fn;
  return { heap, alloc, types: [table.byClass(A)!, table.byClass(B)!], calls };
}

const count = (s: Side, name: string): number => s.calls.get(name) ?? 0;

/** Every word of the heap proper (the module's stacks and scratch below HEADER_OFFSET excluded). */
function sameHeap(t: ExecutionContext, fast: Heap, core: Heap, when: string): boolean {
  const a = fast.i32;
  const b = core.i32;
  for (let w = HEADER_OFFSET >> 2; w < a.length; w++) {
    if (a[w] !== b[w]) {
      t.fail(`${when}: heap word ${w} differs (fast paths ${a[w]}, core ${b[w]})`);
      return false;
    }
  }
  return true;
}

/** What a step did: a handle, or the error's reason. */
function attempt(f: () => number): string {
  try {
    return String(f());
  } catch (e) {
    return e instanceof InvalidHandleError ? `${e.name}:${e.reason}` : `${(e as Error).name}`;
  }
}

type Op =
  | { op: 'warp'; lanes: number }
  | { op: 'lane'; left: number }
  | { op: 'end' }
  | { op: 'alloc'; type: number }
  | { op: 'free'; pick: number }
  | { op: 'twice'; pick: number }
  | { op: 'snap' };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 1, arbitrary: fc.record({ op: fc.constant('warp' as const), lanes: fc.integer({ min: 1, max: 40 }) }) },
  // Few lanes left, often: the warp's cache then runs empty through F1 (S_CACHED drops).
  { weight: 2, arbitrary: fc.record({ op: fc.constant('lane' as const), left: fc.integer({ min: 1, max: 6 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('end' as const) }) },
  { weight: 8, arbitrary: fc.record({ op: fc.constant('alloc' as const), type: fc.integer({ min: 0, max: 1 }) }) },
  { weight: 6, arbitrary: fc.record({ op: fc.constant('free' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('twice' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('snap' as const) }) },
);

/**
 * Run `ops` on two heaps formatted with `options`: through Allocator (fast) and through the
 * core's exports (core). Returns false at the first difference (already reported).
 */
function compare(t: ExecutionContext, options: HeapOptions & { checked?: boolean }, ops: readonly Op[]): boolean {
  const fast = side(options);
  const core = side(options);
  const allocate = core.heap.wasm.fn('smmo_alloc_allocate')!;
  const release = core.heap.wasm.fn('smmo_alloc_release')!;
  const coreAlloc = core.alloc;
  // The core's own error, as Allocator reports it: a failed release through the export
  // leaves the code in the state; Allocator.release (the core's path) reads it the same way.
  const coreRelease = (h: number): number => {
    if (release(coreAlloc.state, h >>> 5, h & 31) !== 0) coreAlloc.release(h >>> 5, h & 31); // rethrows the same error
    return 0;
  };
  const live: number[] = [];
  const freed: number[] = [];
  let inWarp = false;
  for (let i = 0; i < ops.length; i++) {
    const o = ops[i]!;
    const when = `step ${i} (${JSON.stringify(o)})`;
    switch (o.op) {
      case 'warp':
        if (inWarp) continue;
        fast.alloc.warpBegin(o.lanes);
        coreAlloc.warpBegin(o.lanes);
        inWarp = true;
        break;
      case 'lane':
        if (!inWarp) continue;
        fast.heap.i32[fast.alloc.laneWord] = o.left;
        core.heap.i32[coreAlloc.laneWord] = o.left;
        break;
      case 'end':
        fast.alloc.warpEnd();
        coreAlloc.warpEnd();
        inWarp = false;
        break;
      case 'alloc': {
        if (live.length >= 150) continue; // stay below the heap's size: exhaustion is not what is tested
        const a = attempt(() => fast.alloc.allocate(fast.types[o.type]!));
        const b = attempt(() => {
          const h = allocate(coreAlloc.state, core.types[o.type]!.id);
          if (h === 0) coreAlloc.allocate(core.types[o.type]!); // the core's error, thrown
          return h >>> 0;
        });
        if (a !== b) {
          t.fail(`${when}: allocate gave ${a} with the fast paths, ${b} through the core`);
          return false;
        }
        if (/^\d+$/.test(a)) live.push(Number(a));
        break;
      }
      case 'free':
      case 'twice': {
        const list = o.op === 'free' ? live : freed;
        if (list.length === 0) continue;
        const k = o.pick % list.length;
        const h = list[k]!;
        const a = attempt(() => (fast.alloc.releaseHandle(h), 0));
        const b = attempt(() => coreRelease(h));
        if (a !== b) {
          t.fail(`${when}: release of ${h} gave ${a} with the fast paths, ${b} through the core`);
          return false;
        }
        if (o.op === 'free') {
          live.splice(k, 1);
          freed.push(h);
        }
        break;
      }
      case 'snap':
        // The host's snapshot between do-alls: iteration bits = live slots of every used block.
        if (inWarp) continue;
        for (const s of [fast, core]) {
          for (let bid = 1; bid < s.heap.numBlocks; bid++) {
            const ty = s.heap.blockType(bid);
            const w = s.heap.blockWord(bid);
            s.heap.i32[w + BLOCK_ITER_WORD] = ty < 0 ? 0 : s.heap.i32[w + BLOCK_ALLOC_WORD]! & ~s.heap.highMask[ty]!;
          }
        }
        break;
    }
    if (!sameHeap(t, fast.heap, core.heap, when)) return false;
  }
  fast.alloc.warpEnd();
  coreAlloc.warpEnd();
  fast.heap.validate();
  core.heap.validate();
  fast.alloc.flushKept();
  coreAlloc.flushKept();
  return sameHeap(t, fast.heap, core.heap, 'after flushKept');
}

for (const [name, options] of [
  ['one thread, keep 0', { keepBlocks: 0, atomic: false }],
  ['one thread, keep 4', { keepBlocks: 4, atomic: false }],
  ['one thread, NoCoal', { keepBlocks: 4, atomic: false, coalescing: false }],
  ['one thread, checked types (generations: the core releases)', { keepBlocks: 4, atomic: false, checked: true }],
  ['several threads (atomics: the core releases)', { keepBlocks: 4, atomic: true }],
] as const) {
  test(`F1–F3: the same handles, errors and heap words as the core alone — ${name}`, (t) => {
    t.log(seedNote(FC_SEED));
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 1, maxLength: 120 }), (ops) => compare(t, options, ops)),
      fcParams(60),
    );
    t.pass();
  });
}

test('F1: a cached slot of the warp is taken without a call into the core; the core reserves once per block', (t) => {
  const s = side({ keepBlocks: 4, atomic: true });
  const [tA] = s.types;
  s.alloc.warpBegin(32);
  const handles: number[] = [];
  for (let i = 0; i < 32; i++) handles.push(s.alloc.allocate(tA!));
  t.is(s.heap.i32[s.alloc.state + S_CACHED], 0, 'the cache ran empty: S_CACHED back to 0');
  s.alloc.warpEnd();
  t.is(count(s, 'smmo_alloc_allocate'), 1, 'one coalesced reservation, 31 slots from the cache');
  t.is(count(s, 'smmo_alloc_warp_end'), 0, 'nothing cached at the end: no call');
  t.deepEqual(
    handles.map((h) => h & 31),
    Array.from({ length: 32 }, (_, i) => i),
    'lowest slot first (C2)',
  );
  t.is(new Set(handles.map((h) => h >>> 5)).size, 1);
  s.heap.validate();
});

test('F1: outside a warp every allocation is the core’s', (t) => {
  const s = side({ keepBlocks: 4, atomic: false });
  for (let i = 0; i < 5; i++) s.alloc.allocate(s.types[0]!);
  t.is(count(s, 'smmo_alloc_allocate'), 5);
});

test('F2: on a one-thread heap only the releases that change a block’s state reach the core', (t) => {
  const s = side({ keepBlocks: 4, atomic: false });
  const [tA] = s.types;
  const hs: number[] = [];
  for (let i = 0; i < 32; i++) hs.push(s.alloc.allocate(tA!)); // one full block
  const before = count(s, 'smmo_alloc_release');
  s.alloc.releaseHandle(hs[0]!); // FULL → ACTIVE: the core
  t.is(count(s, 'smmo_alloc_release_end'), 1);
  for (let i = 1; i < 31; i++) s.alloc.releaseHandle(hs[i]!); // the middle: JavaScript alone
  t.is(count(s, 'smmo_alloc_release_end'), 1, 'no call for the 30 releases in the middle');
  s.alloc.releaseHandle(hs[31]!); // EMPTY: the core
  t.is(count(s, 'smmo_alloc_release_end'), 2);
  t.is(count(s, 'smmo_alloc_release'), before, 'the core’s whole release is not used');
  s.heap.validate();
});

test('F2: a release whose slot is in the iteration bitmap (an object deleting itself in a do-all) is JavaScript’s too', (t) => {
  const s = side({ keepBlocks: 4, atomic: false });
  const [tA] = s.types;
  const hs: number[] = [];
  for (let i = 0; i < 32; i++) hs.push(s.alloc.allocate(tA!)); // one full block
  const w = s.heap.blockWord(hs[0]! >>> 5);
  s.heap.i32[w + BLOCK_ITER_WORD] = -1; // the snapshot of a do-all: every slot is a lane
  s.alloc.releaseHandle(hs[0]!); // FULL → ACTIVE: the core
  t.is(count(s, 'smmo_alloc_release_end'), 1);
  for (let i = 1; i < 31; i++) s.alloc.releaseHandle(hs[i]!);
  t.is(count(s, 'smmo_alloc_release_end'), 1, 'no call for the 30 releases in the middle');
  t.is(s.heap.i32[w + BLOCK_ITER_WORD], 1 << (hs[31]! & 31), 'each release cleared its iteration bit');
  s.alloc.releaseHandle(hs[31]!); // EMPTY: the core
  t.is(count(s, 'smmo_alloc_release_end'), 2);
  s.heap.validate();
});

test('F5: several slots of a block released together: JavaScript in the middle, the core at FIRST and EMPTY, the same heap as one by one', (t) => {
  const masks = (hs: number[], slots: number[][]): number[] => slots.map((ss) => ss.reduce((m, k) => m | (1 << (hs[k]! & 31)), 0));
  const groups = [[0, 5, 9], [1, 2, 3, 4], [6, 7, 8, 10, 11], Array.from({ length: 20 }, (_, i) => 12 + i)];
  const fast = side({ keepBlocks: 4, atomic: false });
  const one = side({ keepBlocks: 4, atomic: false });
  const [fa, oa] = [fast, one].map((s) => Array.from({ length: 32 }, () => s.alloc.allocate(s.types[0]!))) as [number[], number[]];
  t.deepEqual(fa, oa);
  const bid = fa[0]! >>> 5;
  t.true(
    fa.every((h) => h >>> 5 === bid),
    'one full block',
  );
  const w = fast.heap.blockWord(bid);
  for (const s of [fast, one]) s.heap.i32[w + BLOCK_ITER_WORD] = -1; // a do-all's snapshot
  masks(fa, groups).forEach((mask, g) => {
    fast.alloc.releaseMany(bid, mask);
    for (const k of groups[g]!) one.alloc.releaseHandle(oa[k]!);
    sameHeap(t, fast.heap, one.heap, `group ${g}`);
    // FULL → ACTIVE with the first group, EMPTY with the last: the core's; the groups between: JavaScript alone.
    t.is(count(fast, 'smmo_alloc_release_end_many'), g === groups.length - 1 ? 2 : 1, `group ${g}`);
  });
  t.is(count(fast, 'smmo_alloc_release_many'), 0, 'no whole release in the core');
  fast.heap.validate();
  // A slot already free: nothing written here, the core's release_many reports it (after the others).
  const hs = Array.from({ length: 4 }, () => fast.alloc.allocate(fast.types[0]!));
  t.true(
    hs.slice(0, 3).every((h) => h >>> 5 === hs[0]! >>> 5),
    'three in one block',
  );
  fast.alloc.releaseHandle(hs[1]!);
  const e = t.throws(() => fast.alloc.releaseMany(hs[0]! >>> 5, masks(hs, [[0, 1, 2]])[0]!), { instanceOf: InvalidHandleError });
  t.is(e.reason, 'deleted');
  t.is(count(fast, 'smmo_alloc_release_many'), 1);
  fast.heap.validate();
  // Several threads: every mask is the core's.
  const atomic = side({ keepBlocks: 4, atomic: true });
  const ah = Array.from({ length: 8 }, () => atomic.alloc.allocate(atomic.types[0]!));
  atomic.alloc.releaseMany(ah[0]! >>> 5, masks(ah, [[2, 3]])[0]!);
  t.is(count(atomic, 'smmo_alloc_release_many'), 1);
  t.is(count(atomic, 'smmo_alloc_release_end_many'), 0);
  atomic.heap.validate();
});

for (const [name, options] of [
  ['several threads', { keepBlocks: 4, atomic: true }],
  ['BitmapAlloc', { atomic: false, bitmapAlloc: true }],
  ['checked types', { keepBlocks: 4, atomic: false, checked: true }],
] as const) {
  test(`F2/F3: every release is the core’s on a heap of ${name}`, (t) => {
    const s = side(options);
    const hs: number[] = [];
    for (let i = 0; i < 4; i++) hs.push(s.alloc.allocate(s.types[0]!));
    for (const h of hs) s.alloc.releaseHandle(h);
    t.is(count(s, 'smmo_alloc_release'), 4);
    t.is(count(s, 'smmo_alloc_release_end'), 0);
    s.heap.validate();
  });
}

test('F3: bad handles get the core’s errors on a one-thread heap', (t) => {
  const s = side({ keepBlocks: 0, atomic: false });
  const [tA, tB] = s.types;
  const h = s.alloc.allocate(tA!);
  const keep = s.alloc.allocate(tA!);
  s.alloc.releaseHandle(h);
  const e = t.throws(() => s.alloc.releaseHandle(h), { instanceOf: InvalidHandleError });
  t.is(e.reason, 'deleted');
  t.regex(e.message, /not allocated \(deleted twice\?\)/);
  t.is(t.throws(() => s.alloc.releaseHandle(0), { instanceOf: InvalidHandleError }).reason, 'forged');
  t.is(t.throws(() => s.alloc.releaseHandle(s.heap.numBlocks * 32 + 1), { instanceOf: InvalidHandleError }).reason, 'forged');
  const hb = s.alloc.allocate(tB!);
  t.is(
    t.throws(() => s.alloc.releaseHandle((hb & ~31) | 9), { instanceOf: InvalidHandleError }).reason,
    'forged',
    'slot 9 of an 8-slot type',
  );
  let free = 1;
  while (s.heap.blockType(free) >= 0) free++;
  t.is(t.throws(() => s.alloc.releaseHandle(free * 32), { instanceOf: InvalidHandleError }).reason, 'free-block');
  s.alloc.releaseHandle(keep);
  s.alloc.releaseHandle(hb);
  s.heap.validate();
});

test('compiled methods: creates and destroys through the fast paths leave the interpreted heap; a double destroy is the core’s error', async (t) => {
  const heaps: Uint8Array[] = [];
  for (const compile of [false, true]) {
    const rt = await createRuntime({ classes: [A, B, Churn], heap: '4MB', compile, seed: 3 });
    await rt.parallelNew(Churn, 70);
    for (const k of [1, 7, 40]) await rt.parallelDo(Churn, 'churn', k);
    rt.validateHeap();
    if (compile) t.true(rt.stats().compiled['Churn.churn']?.compiled === true, JSON.stringify(rt.stats().compiled));
    heaps.push(persistentHeapBytes(rt)); // without the block lists: an interpreted do-all lists every class
    const e = await t.throwsAsync(rt.parallelDo(Churn, 'twice'));
    if (compile) t.true(rt.stats().compiled['Churn.twice']?.compiled === true, JSON.stringify(rt.stats().compiled));
    const cause = e instanceof MethodError ? e.cause : e;
    t.true(cause instanceof InvalidHandleError && cause.reason === 'deleted', `${String(cause)}`);
    await rt.close();
  }
  t.deepEqual(heaps[0], heaps[1]);
});
