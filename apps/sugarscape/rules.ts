/**
 * sugarscape: the constants and the small pure rules that the smmo classes (model.ts)
 * and both baselines share, so that all three compute the same integers. Constants are
 * the original's (the DynaSOAr repository's sugarscape example and its configuration,
 * prg-titech/dynasoar commit a4f956c).
 *
 * Random numbers: every cell and every agent has its own xoshiro128** stream
 * (apps/wa-tor/stream.ts: cell streams seeded from the run's seed and the cell id,
 * agent streams from one 32-bit seed). A draw is a 32-bit unsigned integer u; the
 * original's curand_uniform (in (0, 1]) is (u + 1) / 2³², its random_int(a, b) is
 * u mod (b − a) + a.
 */

/** Probability that a cell starts with a Male (kProbMale). */
export const PROB_MALE = 0.12;
/** Probability that a cell starts with a Female, after the Male's (kProbFemale). */
export const PROB_FEMALE = 0.15;
/** The neighbourhood radius of cells (diffusion, permissions, proposals; kMaxVision). */
export const MAX_VISION = 2;
export const MAX_AGE = 100;
export const MAX_ENDOWMENT = 200;
export const MAX_METABOLISM = 80;
/** Sugar a cell can hold (kSugarCapacity). */
export const SUGAR_CAPACITY = 3500;
/** At most this much sugar diffuses out of a cell per step (kMaxSugarDiffusion). */
export const MAX_SUGAR_DIFFUSION = 60;
/** An agent must be at least this old to mate (kMinMatingAge). */
export const MIN_MATING_AGE = 22;
/** max_children is drawn from 2 … MAX_CHILDREN − 1 (kMaxChildren). */
export const MAX_CHILDREN = 8;
/** The grow rate of the richest cells (create_cells: max_grow_rate). */
export const MAX_GROW_RATE = 50;

/** Values of Cell.kind: what the cell holds (the original's CellInfo::agent_type). */
export const EMPTY = 0;
export const MALE = 1;
export const FEMALE = 2;

const TWO_32 = 4294967296;

/** The original's curand_uniform from a 32-bit draw: (u + 1) / 2³², in (0, 1]. */
export function uniform(u: number): number {
  return (u + 1) / TWO_32;
}

/**
 * `curand_uniform() <= 1 / turn`, exactly, for a draw u and turn ≥ 1: (u + 1) · turn ≤ 2³²
 * (the product is an integer below 2⁵³). Reservoir sampling: the turn-th candidate
 * replaces the one chosen so far with probability 1 / turn.
 */
export function chance(u: number, turn: number): boolean {
  return (u + 1) * turn <= TWO_32;
}

/** The original's random_int(a, b) from a 32-bit draw: u mod (b − a) + a. */
export function randomInt(u: number, a: number, b: number): number {
  return (u % (b - a)) + a;
}

/** A cell's grow rate from a uniform number r (the Cell constructor): 2 % full, 2 % half, 4 % quarter, else 0. */
export function growRateOf(r: number): number {
  if (r <= 0.02) return MAX_GROW_RATE;
  if (r <= 0.04) return Math.trunc(0.5 * MAX_GROW_RATE);
  if (r <= 0.08) return Math.trunc(0.25 * MAX_GROW_RATE);
  return 0;
}

/** Cell.grow_sugar: the cell's sugar after growing (towards the capacity; above it, down to it). */
export function grown(sugar: number, capacity: number, growRate: number): number {
  return sugar + Math.min(capacity - sugar, growRate);
}

/** Cell.prepare_diffuse: the sugar that leaves a cell, ⌊sugar / 8⌋ but at most MAX_SUGAR_DIFFUSION. */
export function diffusionOf(sugar: number): number {
  // The original's int = 0.125f · int: exact in f32 for these magnitudes, truncated.
  return Math.min(Math.trunc(0.125 * sugar), MAX_SUGAR_DIFFUSION);
}

/**
 * Cell.update_diffuse's share of one neighbour's diffusion d: the original adds
 * 0.125f · d to an int, truncating each time, i.e. ⌊d / 8⌋ (d ≥ 0), so the sum over the
 * (up to) 24 neighbours does not depend on their order.
 */
export function shareOf(d: number): number {
  return d >> 3;
}

/** Agent.ready_to_mate: sugar ≥ ⌊2 · endowment / 3⌋ and age ≥ MIN_MATING_AGE. */
export function readyToMate(sugar: number, endowment: number, age: number): boolean {
  return sugar >= Math.trunc((endowment * 2) / 3) && age >= MIN_MATING_AGE;
}

/** What create_agents draws for one cell, from the cell's stream (`next`), in the original's order. */
export interface AgentDraw {
  /** EMPTY, MALE or FEMALE. */
  kind: number;
  vision: number;
  maxAge: number;
  endowment: number;
  metabolism: number;
  maxChildren: number;
}

/**
 * create_agents for one cell: r, then vision, max age, endowment, metabolism and max
 * children (always drawn, as the original), then the kind from r.
 */
export function drawAgent(next: () => number): AgentDraw {
  const r = uniform(next());
  const vision = MAX_VISION / 2 + randomInt(next(), 0, MAX_VISION / 2);
  const maxAge = Math.trunc((MAX_AGE * 2) / 3) + randomInt(next(), 0, Math.trunc(MAX_AGE / 3));
  const endowment = Math.trunc(MAX_ENDOWMENT / 4) + randomInt(next(), 0, Math.trunc((MAX_ENDOWMENT * 3) / 4));
  const metabolism = Math.trunc(MAX_METABOLISM / 3) + randomInt(next(), 0, Math.trunc((MAX_METABOLISM * 2) / 3));
  const maxChildren = randomInt(next(), 2, MAX_CHILDREN);
  // The original compares floats: r < 0.12f, r < 0.12f + 0.15f.
  const kind = r < PROB_MALE ? MALE : r < PROB_MALE + PROB_FEMALE ? FEMALE : EMPTY;
  return { kind, vision, maxAge, endowment, metabolism, maxChildren };
}
