/**
 * wa-tor's WASM kernels (wasm/src/wator.rs and wator_update.rs, declared in
 * apps/wa-tor/kernels.ts) against the TypeScript methods they implement: Cell.prepare,
 * Cell.decide, Fish.prepare, Shark.prepare, and the allocating Fish.update and Shark.update.
 *
 *  - pass by pass, the heap (every block, headers and dead lanes included, the allocator's
 *    bitmaps and states; not the block list and iteration words, which hold the last
 *    snapshot: helpers/heap-bytes.ts) is byte-identical
 *    after each of the eight do-alls of a step on backend ts and on both builds of the
 *    module (simd128 and scalar): one thread, so the allocator hands out the same handles;
 *  - whole runs: the digest is the same on ts and wasm, on 1, 2 and 4 threads, and the
 *    model's invariants and validateHeap() hold;
 *  - checked mode: the same heap as ts (the slot generations a deletion bumps);
 *  - a heap too small for the agents: the allocating kernel fails with the same
 *    HeapExhaustedError as the method (in the same MethodError), the heap stays valid;
 *  - the kernel-parameter extension (runtime/kernels.ts: `field` with `class`, `typeId`)
 *    refuses an abstract or unknown class with a UsageError naming it (the do-all reports
 *    it wrapped in its MethodError).
 */
import test from 'ava';
import { Agent, Cell, Fish, Shark } from '../apps/wa-tor/model.js';
import { checkInvariants, CLASSES, digest, init, step } from '../apps/wa-tor/wator.js';
import { createRuntime, HeapExhaustedError, KERNELS, MethodError, type KernelSpec, type Runtime, type SmmoClass } from '../index.js';
import type { WasmVariant } from '../runtime/wasm.js';
import { persistentHeapBytes } from './helpers/heap-bytes.js';

const MODULE = new URL('../apps/wa-tor/index.js', import.meta.url);
const THREADED = { inlineBlocks: 0, startTimeoutMs: 120_000 };
/** Room for the cells and the start's agents of 64 × 48, not for the agents the first steps breed (measured). */
const FULL_HEAP = 1_245_184;

async function runtimeFor(
  width: number,
  height: number,
  seed: number,
  backend: 'ts' | 'wasm',
  threads = 1,
  variant?: WasmVariant,
): Promise<Runtime> {
  const rt = await createRuntime({
    classes: CLASSES,
    heap: (2 << 20) + width * height * 112, // small: the tests copy and compare the whole heap after every pass
    backend,
    threads,
    modules: [MODULE],
    ...(variant ? { wasm: { variant } } : {}),
    ...(threads > 1 ? THREADED : {}),
  });
  await init(rt, width, height, seed);
  return rt;
}

const PASSES: readonly [SmmoClass, string][] = [
  [Cell, 'prepare'],
  [Fish, 'prepare'],
  [Cell, 'decide'],
  [Fish, 'update'],
  [Cell, 'prepare'],
  [Shark, 'prepare'],
  [Cell, 'decide'],
  [Shark, 'update'],
];

/**
 * The heap past the reserved region (blocks with headers and all lanes, dead ones
 * included; the allocator's bitmaps and states), less the block list and the iteration
 * words: those hold the last snapshot, which covers every class for a kernel and only
 * the classes a compiled method reaches on backend ts (helpers/heap-bytes.ts).
 */
function blockBytes(rt: Runtime): Uint8Array {
  return persistentHeapBytes(rt);
}

function firstDiff(a: Uint8Array, b: Uint8Array): number {
  if (a.length !== b.length) return Math.min(a.length, b.length);
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return i;
  return -1;
}

for (const [w, h, seed, steps] of [
  [40, 30, 7, 14],
  [5, 3, 1, 10], // a small torus: neighbours repeat, crowded cells, many STAYs
] as const) {
  test(`each pass leaves the heap byte-identical on ts, wasm simd and wasm scalar (${w} × ${h}, ${steps} steps)`, async (t) => {
    const ts = await runtimeFor(w, h, seed, 'ts');
    const simd = await runtimeFor(w, h, seed, 'wasm', 1, 'simd');
    const scalar = await runtimeFor(w, h, seed, 'wasm', 1, 'scalar');
    const changed = new Set<number>();
    try {
      t.is(firstDiff(blockBytes(simd), blockBytes(ts)), -1, 'identical heaps after init');
      for (let k = 0; k < steps; k++) {
        for (const [p, [cls, method]] of PASSES.entries()) {
          const before = blockBytes(ts);
          for (const rt of [ts, simd, scalar]) await rt.parallelDo(cls as typeof Cell, method as 'prepare');
          const want = blockBytes(ts);
          if (firstDiff(before, want) !== -1) changed.add(p);
          const label = `step ${k}, ${cls.name}.${method}`;
          t.is(firstDiff(blockBytes(simd), want), -1, `${label}: simd`);
          t.is(firstDiff(blockBytes(scalar), want), -1, `${label}: scalar`);
        }
      }
      // No pass was a no-op on these runs, so every comparison above compared real work.
      t.deepEqual([...changed].sort(), [0, 1, 2, 3, 4, 5, 6, 7]);
      t.deepEqual(simd.stats().backend.methods, {
        'Cell.prepare': 'wasm',
        'Fish.prepare': 'wasm',
        'Cell.decide': 'wasm',
        'Fish.update': 'wasm',
        'Shark.prepare': 'wasm',
        'Shark.update': 'wasm',
      });
      t.is(ts.stats().backend.methods['Cell.decide'], 'ts');
      checkInvariants(simd);
      simd.validateHeap();
    } finally {
      for (const rt of [ts, simd, scalar]) await rt.close();
    }
  });
}

test('the same digest on ts and wasm, 1, 2 and 4 threads (64 × 48, 15 steps)', async (t) => {
  const digests: number[] = [];
  for (const [backend, threads] of [
    ['ts', 1],
    ['wasm', 1],
    ['wasm', 2],
    ['ts', 2],
    ['wasm', 4],
  ] as const) {
    const rt = await runtimeFor(64, 48, 42, backend, threads);
    try {
      for (let k = 0; k < 15; k++) await step(rt);
      checkInvariants(rt);
      rt.validateHeap();
      digests.push(digest(rt));
      t.true(rt.count(Fish) > 0 && rt.count(Shark) > 0, `${backend} × ${threads}: both kinds alive`);
    } finally {
      await rt.close();
    }
  }
  t.deepEqual(digests, [digests[0], digests[0], digests[0], digests[0], digests[0]]);
});

test('checked mode: the allocating kernels bump the slot generations as destroy() does (heaps byte-identical to ts)', async (t) => {
  const rts: Runtime[] = [];
  for (const backend of ['ts', 'wasm'] as const) {
    const rt = await createRuntime({ classes: CLASSES, heap: 4 << 20, backend, checked: true, modules: [MODULE] });
    await init(rt, 30, 20, 5);
    rts.push(rt);
  }
  const [ts, wasm] = rts as [Runtime, Runtime];
  try {
    for (let k = 0; k < 10; k++) {
      await step(ts);
      await step(wasm);
      t.is(firstDiff(blockBytes(wasm), blockBytes(ts)), -1, `step ${k}`);
    }
    t.is(wasm.stats().backend.methods['Shark.update'], 'wasm');
    checkInvariants(wasm);
    wasm.validateHeap();
  } finally {
    await ts.close();
    await wasm.close();
  }
});

test('a full heap inside an allocating kernel: HeapExhaustedError as on ts, and a valid heap', async (t) => {
  const errors: string[] = [];
  const heaps: Uint8Array[] = [];
  for (const backend of ['ts', 'wasm'] as const) {
    const rt = await createRuntime({ classes: CLASSES, heap: FULL_HEAP, backend, modules: [MODULE] });
    try {
      await init(rt, 64, 48, 42);
      let e: unknown = null;
      try {
        for (let k = 0; k < 40; k++) await step(rt);
      } catch (err) {
        e = err;
      }
      t.true(e instanceof MethodError, `${backend}: expected a MethodError, got ${String(e)}`);
      t.true((e as MethodError).cause instanceof HeapExhaustedError, `${backend}: expected a HeapExhaustedError cause`);
      errors.push((e as MethodError).message);
      rt.validateHeap();
      heaps.push(persistentHeapBytes(rt));
    } finally {
      await rt.close();
    }
  }
  t.regex(errors[0]!, /^(Fish|Shark)\.update threw on object \d+ \(calling thread\): HeapExhaustedError/);
  t.is(errors[1], errors[0]);
  t.is(firstDiff(heaps[1]!, heaps[0]!), -1, 'the same heap after the failed pass');
});

// A Cell subclass whose prepare kernel names a class it cannot use.
class AbstractRefCell extends Cell {
  static override readonly [KERNELS] = (): readonly KernelSpec[] => [
    {
      method: 'prepare',
      export: 'wator_cell_prepare',
      params: { requests: { kind: 'field', name: 'position', type: 'ref', elements: 5, class: 'Agent' } },
    },
  ];
}
class UnknownTypeCell extends Cell {
  static override readonly [KERNELS] = (): readonly KernelSpec[] => [
    {
      method: 'prepare',
      export: 'wator_cell_prepare',
      params: { requests: { kind: 'field', name: 'neighborRequest', type: 'bool', elements: 5, class: 'Whale' } },
    },
  ];
}

for (const [cls, pattern] of [
  [AbstractRefCell, /class Agent, which is abstract/],
  [UnknownTypeCell, /class Whale, which is not registered/],
] as const) {
  test(`a kernel parameter naming ${cls === AbstractRefCell ? 'an abstract' : 'an unknown'} class is refused, naming it`, async (t) => {
    const rt = await createRuntime({ classes: [Cell, Agent, Fish, Shark, cls], heap: '4MB', backend: 'wasm' });
    try {
      rt.create(cls);
      // The pass reports the kernel's UsageError (wrapped by the do-all as a MethodError).
      const e = await t.throwsAsync(rt.parallelDo(cls, 'prepare'), { message: pattern });
      t.regex(e!.message, new RegExp(`UsageError: ${cls.name}\\.prepare: its kernel reads`));
    } finally {
      await rt.close();
    }
  });
}
