/**
 * Shared fast-check settings for the property tests.
 *
 * Runs are seeded so CI is deterministic; set SMMO_FC_SEED to explore other seeds, and
 * SMMO_FC_RUNS to run more cases. On failure fast-check's error names the seed and the
 * shrunk counterexample's path: re-run with `SMMO_FC_SEED=<seed>` to reproduce it.
 */
import type { Parameters } from 'fast-check';

export const FC_SEED = process.env['SMMO_FC_SEED'] !== undefined ? Number(process.env['SMMO_FC_SEED']) : 0x5eed2019;

/** fast-check parameters: the suite's seed, `numRuns` cases (scaled by SMMO_FC_RUNS / 100). */
export function fcParams<T>(numRuns: number): Parameters<T> {
  const scale = process.env['SMMO_FC_RUNS'] !== undefined ? Number(process.env['SMMO_FC_RUNS']) / 100 : 1;
  return { seed: FC_SEED, numRuns: Math.max(1, Math.round(numRuns * scale)) };
}
