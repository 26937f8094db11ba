/**
 * The fast-check arbitrary of the defragmentation tests' random heaps (test/defrag.fixtures.ts
 * Shape: how many objects of each class, how many deleted, how dense the references), shared
 * by test/defrag.test.ts, defrag-parallel.test.ts and defrag-wasm.test.ts. Unbiased:
 * fast-check's bias towards small values would make most heaps too small to move anything.
 * Also the property that compares two ways of defragmenting on random heaps at 1, 2 and 4
 * threads (defrag-parallel, defrag-wasm), and the checks every comparison of two
 * defragmentations ends with (remapAndHeapProblems). Kept out of the fixtures module, which worker
 * threads import.
 */
import type { ExecutionContext } from 'ava';
import fc from 'fast-check';
import type { DefragResult, Runtime } from '../../index.js';
import type { Shape } from '../defrag.fixtures.js';
import { fcParams } from './fc.js';

export function shapeArbitrary(): fc.Arbitrary<Shape> {
  return fc.noBias(
    fc.record({
      seed: fc.integer({ min: 1, max: 2 ** 31 - 1 }),
      fish: fc.integer({ min: 0, max: 1500 }),
      sharks: fc.integer({ min: 0, max: 400 }),
      holders: fc.integer({ min: 0, max: 300 }),
      kill: fc.integer({ min: 0, max: 95 }).map((x) => x / 100),
      density: fc.integer({ min: 0, max: 100 }).map((x) => x / 100),
    }),
  );
}

/** What one comparison found: its differences (empty: equal) and the objects it moved. */
export interface Compared {
  problems: string[];
  moved: number;
}

/**
 * fast-check over random heaps (30 runs, seeded by the suite): for each, a factor n in 1 … 6
 * and a thread count of 1, 2 or 4, `compare` runs on that thread count's pair of runtimes
 * (made once by `pair`, closed at the end); a difference fails the property with the shrunk
 * case, also printed when the test ends. Returns the runs and the objects moved.
 */
export async function comparedOnRandomHeaps(
  t: ExecutionContext,
  pair: (threads: number) => Promise<[Runtime, Runtime]>,
  compare: (a: Runtime, b: Runtime, shape: Shape, n: number, threads: number) => Promise<Compared>,
): Promise<{ runs: number; moved: number }> {
  const pairs = new Map<number, [Runtime, Runtime]>();
  let runs = 0;
  let moved = 0;
  let lastFailure = '';
  t.teardown(() => {
    if (lastFailure !== '') console.log(`last failure (shrunk): ${lastFailure}`);
  });
  try {
    for (const threads of [1, 2, 4]) pairs.set(threads, await pair(threads));
    await fc.assert(
      fc.asyncProperty(shapeArbitrary(), fc.noBias(fc.integer({ min: 1, max: 6 })), fc.constantFrom(1, 2, 4), async (s, n, threads) => {
        const [a, b] = pairs.get(threads)!;
        const r = await compare(a, b, s, n, threads);
        runs++;
        moved += r.moved;
        if (r.problems.length > 0) {
          lastFailure = `threads=${threads} n=${n} ${JSON.stringify(s)}: ${r.problems.slice(0, 3).join('; ')}`;
          throw new Error(lastFailure);
        }
      }),
      fcParams(30),
    );
  } finally {
    for (const [a, b] of pairs.values()) {
      await a.close();
      await b.close();
    }
  }
  return { runs, moved };
}

/**
 * The checks that end every comparison of two defragmentations of one heap, as text (empty:
 * none): the first of the `handles` handles that `a` and `b` map differently, and
 * validateHeap() of each runtime in `validate`.
 */
export function remapAndHeapProblems(a: DefragResult, b: DefragResult, handles: number, validate: readonly Runtime[]): string[] {
  const out: string[] = [];
  for (let h = 0; h < handles; h++) {
    if (a.remap(h) !== b.remap(h)) {
      out.push(`remap(${h}): ${a.remap(h)} vs ${b.remap(h)}`);
      break;
    }
  }
  for (const rt of validate) {
    try {
      rt.validateHeap();
    } catch (e) {
      out.push(`validateHeap: ${String(e)}`);
    }
  }
  return out;
}
