/**
 * Shared fast-check settings for the property tests.
 *
 * Runs are seeded so CI is deterministic: the suite's seed (test/helpers/seed.ts: SMMO_SEED,
 * else a fixed default), or SMMO_FC_SEED to change the property tests' seed alone; set
 * SMMO_FC_RUNS to run more cases. On failure fast-check's error names the seed and the
 * shrunk counterexample's path: re-run with `SMMO_SEED=<seed>` to reproduce it.
 */
import type { Parameters } from 'fast-check';
import { testSeed } from './seed.js';

export const FC_SEED = process.env['SMMO_FC_SEED'] !== undefined ? Number(process.env['SMMO_FC_SEED']) : testSeed();

/** fast-check parameters: the suite's seed, `numRuns` cases (scaled by SMMO_FC_RUNS / 100). */
export function fcParams<T>(numRuns: number): Parameters<T> {
  const scale = process.env['SMMO_FC_RUNS'] !== undefined ? Number(process.env['SMMO_FC_RUNS']) / 100 : 1;
  return { seed: FC_SEED, numRuns: Math.max(1, Math.round(numRuns * scale)) };
}
