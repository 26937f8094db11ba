/**
 * The seed of the suite's randomised tests: SMMO_SEED when set (an integer 0 … 4294967295),
 * else a fixed default, so that every run draws the same cases and a failure can be
 * replayed. Every test that draws random numbers takes its seed here (never from
 * Math.random or the clock; test/seed.test.ts checks), and says which seed it used with
 * `t.log(seedNote(seed))`: "seed N (replay: SMMO_SEED=N)". The fast-check property tests
 * take it through test/helpers/fc.ts (where SMMO_FC_SEED, if set, overrides it for them
 * alone).
 */

/** The seed when SMMO_SEED is not set. */
export const DEFAULT_TEST_SEED = 0x5eed2019;

/** SMMO_SEED of `env` (default: this process's environment), or DEFAULT_TEST_SEED. */
export function testSeed(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env['SMMO_SEED'];
  if (raw === undefined || raw.trim() === '') return DEFAULT_TEST_SEED;
  const n = /^\s*\d+\s*$/.test(raw) ? Number(raw) : NaN;
  if (!(n <= 0xffffffff)) throw new Error(`SMMO_SEED must be an integer in 0 … 4294967295, got '${raw}'`);
  return n;
}

/** "seed N (replay: SMMO_SEED=N)", for t.log. */
export function seedNote(seed: number = testSeed()): string {
  return `seed ${seed} (replay: SMMO_SEED=${seed})`;
}
