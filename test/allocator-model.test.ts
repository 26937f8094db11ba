/**
 * The Rust allocator core against the TypeScript oracle (test/oracle/allocator.ts, the
 * allocator smmo used before the core moved to Rust): random operation sequences on both,
 * from the same start, on one thread, must give byte-identical heaps after every step.
 *
 * Each case makes two heaps of the same classes and settings (variant: DynaSOAr,
 * NoShift, NoCoal or BitmapAlloc; kept blocks 0 … 4; the core's atomic or plain memory
 * path; with or without a per-slot generation array), and three "threads" on each: three
 * OracleAllocators on one, three Allocators (bindings of the core) on the other, with the
 * same seeds. Operations: allocate, allocateMany, release, flushKept, reclaimEmpty,
 * setOwnFirstBlock, warps (warpBegin, per lane the lanes left, allocations and
 * releases inside, warpEnd: the coalescing of core.rs C1–C4), and several objects of one
 * block released together (the core's release_many, a compiled method's deferred
 * self-deletions) against the oracle releasing them one by one in slot order. After every
 * operation:
 *  - the same handles (or the same error class) on both sides;
 *  - every byte of the two heaps equal, from the header to the end, except the allocator
 *    states and their claim words (the oracle keeps its state in JavaScript);
 *  - each thread's state equal: hints, kept stacks, K5 flags, warp caches;
 *  - both heaps valid (validateHeap's H1–H5).
 */
import test from 'ava';
import fc from 'fast-check';
import { Allocator } from '../runtime/allocator.js';
import { Heap } from '../runtime/heap.js';
import { HeapExhaustedError, InvalidHandleError } from '../runtime/index.js';
import {
  H_STATE_CLAIM,
  HEADER_OFFSET,
  MAX_ALLOC_STATES,
  MIN_HEAP_BYTES,
  planTypes,
  S_TYPES,
  TS_CACHE_BLOCK,
  TS_CACHE_MASK,
  TS_FRESH,
  TS_HINT,
  TS_KEPT,
  TS_WANT,
  TS_WORDS,
  type TypeLayout,
  type TypeTable,
} from '../runtime/layout.js';
import { A, B } from './helpers/allocators.js';
import { FC_SEED, fcParams } from './helpers/fc.js';
import { seedNote } from './helpers/seed.js';
import { OracleAllocator } from './oracle/allocator.js';

type Variant = 'dynasoar' | 'noshift' | 'nocoal' | 'bitmap';

interface Setup {
  variant: Variant;
  keep: number;
  atomic: boolean;
  gen: boolean;
}

type Op =
  | { op: 'alloc'; th: number; cls: 0 | 1; n: number }
  | { op: 'many'; th: number; cls: 0 | 1; n: number }
  | { op: 'free'; th: number; pick: number }
  | { op: 'freeBlock'; th: number; pick: number; subset: number }
  | { op: 'flush'; th: number }
  | { op: 'reclaim'; th: number }
  | { op: 'own'; th: number; on: boolean }
  | { op: 'warp'; th: number; lanes: { cls: 0 | 1; n: number; free: number }[] };

/** The class table, with the generation array of each type on its first field's SOA array when `gen`. */
function tableFor(setup: Setup): TypeTable {
  const table = planTypes([A, B], { bitmapAlloc: setup.variant === 'bitmap' });
  if (!setup.gen) return table;
  const types = table.types.map((t): TypeLayout => ({ ...t, genOffset: t.fields[0]!.offsets[0]! }));
  return { ...table, types, byClass: (cls) => types.find((t) => t.cls === cls) };
}

function heapFor(setup: Setup, table: TypeTable): Heap {
  return Heap.create(table, MIN_HEAP_BYTES, {
    keepBlocks: setup.keep,
    atomic: setup.atomic,
    rotation: setup.variant !== 'noshift',
    coalescing: setup.variant === 'dynasoar' || setup.variant === 'noshift',
  });
}

/** The core's state of allocator `a` in the oracle's shape (OracleAllocator.snapshotState). */
function coreState(a: Allocator, types: number, keep: number): ReturnType<OracleAllocator['snapshotState']> {
  const i32 = a.heap.i32;
  const w = (t: number, k: number): number => i32[a.state + S_TYPES + t * TS_WORDS + k]!;
  const kept = (t: number): number[] => {
    const base = a.state + S_TYPES + types * TS_WORDS + t * keep;
    return [...i32.subarray(base, base + w(t, TS_KEPT))];
  };
  return {
    hint: Array.from({ length: types }, (_, t) => w(t, TS_HINT)),
    keptCount: Array.from({ length: types }, (_, t) => w(t, TS_KEPT)),
    kept: Array.from({ length: types }, (_, t) => kept(t)),
    fresh: Array.from({ length: types }, (_, t) => w(t, TS_FRESH)),
    cacheBlock: Array.from({ length: types }, (_, t) => (w(t, TS_CACHE_MASK) !== 0 ? w(t, TS_CACHE_BLOCK) : 0)),
    cacheMask: Array.from({ length: types }, (_, t) => w(t, TS_CACHE_MASK)),
    want: Array.from({ length: types }, (_, t) => w(t, TS_WANT)),
  };
}

/** '' if the two heaps hold the same bytes outside the states and their claim words, else where they first differ. */
function compareHeaps(o: Heap, r: Heap): string {
  const p = r.plan;
  const claimFrom = HEADER_OFFSET + H_STATE_CLAIM * 4;
  const claimTo = claimFrom + (MAX_ALLOC_STATES / 32) * 4;
  const statesFrom = p.stateWord * 4;
  const statesTo = (p.stateWord + p.states * p.stateWords) * 4;
  for (const [from, to] of [
    [HEADER_OFFSET, claimFrom],
    [claimTo, statesFrom],
    [statesTo, p.heapBytes],
  ] as const) {
    const a = Buffer.from(o.buffer, from, to - from);
    const b = Buffer.from(r.buffer, from, to - from);
    if (a.equals(b)) continue;
    for (let i = 0; i < a.length; i += 4) {
      if (a.readUInt32LE(i) !== b.readUInt32LE(i)) {
        const at = from + i;
        const bid = Math.floor((at - p.blocksOffset) / p.blockBytes);
        const where = at >= p.blocksOffset ? `block ${bid} +${(at - p.blocksOffset) % p.blockBytes}` : `byte ${at}`;
        return `heaps differ at ${where}: oracle 0x${a.readUInt32LE(i).toString(16)}, core 0x${b.readUInt32LE(i).toString(16)}`;
      }
    }
  }
  return '';
}

/** Run `f` on one side; its result, or the error's class name (and reason) as a comparable string. */
function attempt<T>(f: () => T): T | string {
  try {
    return f();
  } catch (e) {
    if (e instanceof HeapExhaustedError) return `HeapExhaustedError(${e.typeName})`;
    if (e instanceof InvalidHandleError) return `InvalidHandleError(${e.reason}, ${e.handle})`;
    throw e;
  }
}

/** Run `ops` on the oracle and on the core; '' or the first difference. */
function runModel(setup: Setup, ops: readonly Op[]): string {
  const table = tableFor(setup);
  const ho = heapFor(setup, table);
  const hr = heapFor(setup, table);
  const seeds = [11, 22, 33];
  const oracle = seeds.map((s) => new OracleAllocator(ho, s));
  const core = seeds.map((s) => new Allocator(hr, s));
  const types = [table.types[0]!, table.types[1]!];
  const live: number[] = []; // handles alive (the same on both sides)
  let problem = compareHeaps(ho, hr);
  if (problem) return `after formatting: ${problem}`;
  const same = (what: string, a: unknown, b: unknown): string =>
    JSON.stringify(a) === JSON.stringify(b) ? '' : `${what}: oracle ${JSON.stringify(a)}, core ${JSON.stringify(b)}`;
  const release = (th: number, pick: number): string => {
    if (live.length === 0) return '';
    const [h] = live.splice(pick % live.length, 1);
    return same(
      'release',
      attempt(() => oracle[th]!.releaseHandle(h!)),
      attempt(() => core[th]!.releaseHandle(h!)),
    );
  };
  const alloc = (th: number, cls: number): string => {
    const a = attempt(() => oracle[th]!.allocate(types[cls]!));
    const b = attempt(() => core[th]!.allocate(types[cls]!));
    if (typeof a === 'number' && a === b) live.push(a);
    return same('allocate', a, b);
  };
  for (const [i, o] of ops.entries()) {
    const step = `#${i} ${JSON.stringify(o)}`;
    const oa = oracle[o.th]!;
    const ca = core[o.th]!;
    switch (o.op) {
      case 'alloc':
        for (let k = 0; k < o.n && !problem; k++) problem = alloc(o.th, o.cls);
        break;
      case 'many': {
        const outO = new Uint32Array(o.n);
        const outR = new Uint32Array(o.n);
        const a = attempt(() => oa.allocateMany(types[o.cls]!, o.n, outO));
        const b = attempt(() => ca.allocateMany(types[o.cls]!, o.n, outR));
        // On an error the oracle leaves the handles it wrote (and released again) in its array: compare those on success only.
        problem = same('allocateMany', [a ?? 'ok', a === undefined ? [...outO] : []], [b ?? 'ok', b === undefined ? [...outR] : []]);
        if (!problem && a === undefined) live.push(...outO);
        break;
      }
      case 'free':
        problem = release(o.th, o.pick);
        break;
      case 'freeBlock': {
        if (live.length === 0) break;
        const bid = live[o.pick % live.length]! >>> 5;
        // A subset of the block's live objects (at least the picked one), ascending slots.
        const picked = live.filter((h) => h >>> 5 === bid && (h === live[o.pick % live.length] || ((o.subset >>> (h & 31)) & 1) === 1));
        picked.sort((x, y) => x - y);
        let mask = 0;
        for (const h of picked) {
          mask |= 1 << (h & 31);
          live.splice(live.indexOf(h), 1);
        }
        const a = attempt(() => picked.forEach((h) => oa.releaseHandle(h)));
        const b = attempt(() => ca.releaseMany(bid, mask));
        problem = same('releaseMany', a ?? 'ok', b ?? 'ok');
        break;
      }
      case 'flush':
        oa.flushKept();
        ca.flushKept();
        break;
      case 'reclaim':
        problem = same('reclaimEmpty', oa.reclaimEmpty(), ca.reclaimEmpty());
        break;
      case 'own':
        oa.setOwnFirstBlock(o.on);
        ca.setOwnFirstBlock(o.on);
        break;
      case 'warp': {
        const lanes = o.lanes.length;
        oa.warpBegin(lanes);
        ca.warpBegin(lanes);
        for (let k = 0; k < lanes && !problem; k++) {
          oa.lane(lanes - k); // what the executor stores before lane k
          hr.i32[ca.laneWord] = lanes - k;
          const lane = o.lanes[k]!;
          for (let j = 0; j < lane.n && !problem; j++) problem = alloc(o.th, lane.cls);
          if (!problem && lane.free > 0) problem = release(o.th, lane.free);
        }
        oa.warpEnd();
        ca.warpEnd();
        break;
      }
    }
    if (!problem) problem = compareHeaps(ho, hr);
    for (let th = 0; th < 3 && !problem; th++) {
      problem = same(`state of thread ${th}`, oracle[th]!.snapshotState(), coreState(core[th]!, table.types.length, setup.keep));
    }
    if (!problem) {
      try {
        ho.validate();
        hr.validate();
      } catch (e) {
        problem = (e as Error).message;
      }
    }
    if (problem) return `${JSON.stringify(setup)} ${step}: ${problem}`;
  }
  return '';
}

const th = fc.nat(2);
const cls = fc.constantFrom(0 as const, 1 as const);
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ op: fc.constant('alloc' as const), th, cls, n: fc.integer({ min: 1, max: 40 }) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('many' as const), th, cls, n: fc.integer({ min: 1, max: 100 }) }) },
  { weight: 6, arbitrary: fc.record({ op: fc.constant('free' as const), th, pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('freeBlock' as const), th, pick: fc.nat(), subset: fc.integer() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('flush' as const), th }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('reclaim' as const), th }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('own' as const), th, on: fc.boolean() }) },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('warp' as const),
      th,
      lanes: fc.array(fc.record({ cls, n: fc.integer({ min: 0, max: 3 }), free: fc.nat(50) }), { minLength: 1, maxLength: 32 }),
    }),
  },
);
const setupArb: fc.Arbitrary<Setup> = fc
  .record({
    variant: fc.constantFrom<Variant>('dynasoar', 'noshift', 'nocoal', 'bitmap'),
    keep: fc.integer({ min: 0, max: 4 }),
    atomic: fc.boolean(),
    gen: fc.boolean(),
  })
  .map((s) => (s.variant === 'bitmap' ? { ...s, keep: 0 } : s));

test('random operation sequences give byte-identical heaps on the oracle and on the Rust core (fast-check)', (t) => {
  t.log(seedNote(FC_SEED));
  fc.assert(
    fc.property(setupArb, fc.array(opArb, { maxLength: 80 }), (setup, ops) => {
      const problem = runModel(setup, ops);
      if (problem) throw new Error(problem); // fast-check adds the seed and shrinks
    }),
    fcParams(200),
  );
  t.pass('fast-check found no counterexample (it throws with the seed otherwise)');
});

test('a long deterministic sequence per variant fills the heap, empties it and coalesces in warps', (t) => {
  for (const variant of ['dynasoar', 'noshift', 'nocoal', 'bitmap'] as const) {
    for (const atomic of [false, true]) {
      const ops: Op[] = [{ op: 'own', th: 1, on: true }];
      for (let round = 0; round < 4; round++) {
        ops.push({ op: 'many', th: round % 3, cls: 1, n: 100 });
        for (let k = 0; k < 6; k++) ops.push({ op: 'alloc', th: k % 3, cls: (k % 2) as 0 | 1, n: 40 });
        ops.push({ op: 'warp', th: 2, lanes: Array.from({ length: 32 }, (_, k) => ({ cls: (k % 2) as 0 | 1, n: k % 3, free: k * 7 })) });
        for (let k = 0; k < 120; k++) ops.push({ op: 'free', th: k % 3, pick: k * 7919 + round });
        ops.push({ op: 'flush', th: round % 3 }, { op: 'reclaim', th: (round + 1) % 3 });
      }
      const setup = { variant, keep: variant === 'bitmap' ? 0 : 3, atomic, gen: true };
      t.is(runModel(setup, ops), '', JSON.stringify(setup));
    }
  }
});

test('the model notices a difference (sanity check of the harness)', (t) => {
  const setup: Setup = { variant: 'dynasoar', keep: 2, atomic: false, gen: false };
  const table = tableFor(setup);
  const ho = heapFor(setup, table);
  const hr = heapFor(setup, table);
  t.is(compareHeaps(ho, hr), '');
  const a = new Allocator(hr, 11);
  const o = new OracleAllocator(ho, 11);
  t.is(a.allocate(table.types[0]!), o.allocate(table.types[0]!));
  t.is(compareHeaps(ho, hr), '', 'the same allocation on both sides');
  const h = a.allocate(table.types[0]!);
  t.regex(compareHeaps(ho, hr), /heaps differ at block \d+ \+0: oracle 0x[0-9a-f]+, core 0x[0-9a-f]+/, 'one more object in the core');
  o.allocate(table.types[0]!);
  t.is(compareHeaps(ho, hr), '');
  const other = new OracleAllocator(ho, 12);
  other.releaseHandle(h);
  t.regex(compareHeaps(ho, hr), /heaps differ/, 'a release on one side');
});

test('full blocks emptied by one mask: kept while the stack has room, retired after, as the oracle', (t) => {
  // Six full blocks of A (allocateMany fills them, so none is a hint), then each released
  // whole by one releaseMany (FIRST and EMPTY in one call): the first `keep` go to the
  // kept stack, the others are retired. The random sequences rarely empty a full block in
  // one call with room on the stack; a core that retired such blocks passed them.
  for (const atomic of [false, true]) {
    for (const keep of [0, 2]) {
      const ops: Op[] = [{ op: 'many', th: 0, cls: 0, n: 32 * 6 }];
      for (let k = 0; k < 6; k++) ops.push({ op: 'freeBlock', th: 0, pick: 0, subset: -1 });
      ops.push({ op: 'flush', th: 0 }, { op: 'many', th: 0, cls: 0, n: 40 });
      const setup: Setup = { variant: 'dynasoar', keep, atomic, gen: true };
      t.is(runModel(setup, ops), '', JSON.stringify(setup));
    }
  }
});

test('C5: on one thread a full warp that the open block cannot take whole goes to a kept block, as the oracle', (t) => {
  // Three full blocks of A emptied whole (kept), an 8-lane warp (it opens one of them and
  // leaves it with 24 free slots), then 32-lane warps: on one thread each takes a kept block
  // whole while one is left and the open block keeps its 24 slots; on several threads every
  // such warp spills (§4.2). The random sequences rarely build this state.
  const lanes = (n: number): { cls: 0; n: number; free: number }[] => Array.from({ length: n }, () => ({ cls: 0 as const, n: 1, free: 0 }));
  for (const atomic of [false, true]) {
    const ops: Op[] = [{ op: 'many', th: 0, cls: 0, n: 32 * 3 }];
    for (let k = 0; k < 3; k++) ops.push({ op: 'freeBlock', th: 0, pick: 0, subset: -1 });
    ops.push({ op: 'warp', th: 0, lanes: lanes(8) });
    for (let k = 0; k < 3; k++) ops.push({ op: 'warp', th: 0, lanes: lanes(32) });
    ops.push({ op: 'warp', th: 0, lanes: lanes(20) });
    t.is(runModel({ variant: 'dynasoar', keep: 4, atomic, gen: false }, ops), '', `atomic ${atomic}`);
  }
});
