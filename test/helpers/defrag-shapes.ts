/**
 * The fast-check arbitrary of the defragmentation tests' random heaps (test/defrag.fixtures.ts
 * Shape: how many objects of each class, how many deleted, how dense the references), shared
 * by test/defrag.test.ts, defrag-parallel.test.ts and defrag-wasm.test.ts. Unbiased:
 * fast-check's bias towards small values would make most heaps too small to move anything.
 * Kept out of the fixtures module, which worker threads import.
 */
import fc from 'fast-check';
import type { Shape } from '../defrag.fixtures.js';

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
