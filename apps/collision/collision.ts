/**
 * The collision simulation: initial state, step (the list of do-all phases) and digest.
 */
import { UsageError, type Runtime } from '../../runtime/index.js';
import { Random } from '../random.js';
import { Body, DT, MAX_MASS } from './body.js';

export { Body };
export const CLASSES = [Body];
/** The original's defaults (configuration.h: kNumBodies, kIterations). */
export const DEFAULTS = { bodies: 40000, iterations: 2000 };

/** Initial bodies: per body, five draws from Random(seed) in this order (as apps/nbody). */
export interface BodyInit {
  posX: number;
  posY: number;
  velX: number;
  velY: number;
  mass: number;
}

/** The i-th body's initial values, drawing from `rng` (positions in [-1, 1), small velocities). */
export function drawBody(rng: Random): BodyInit {
  const posX = 2 * rng.next() - 1;
  const posY = 2 * rng.next() - 1;
  const velX = (rng.next() - 0.5) / 1000;
  const velY = (rng.next() - 0.5) / 1000;
  const mass = (rng.next() / 2 + 0.5) * MAX_MASS;
  return { posX, posY, velX, velY, mass };
}

export function checkBodies(n: number): void {
  if (!Number.isInteger(n) || n < 1 || n > 1 << 26)
    throw new UsageError(`collision: --bodies must be an integer in 1 … ${1 << 26}, got ${n}`);
}

/** Create `n` bodies; the i-th gets id i (body.ts: merge ties go to the lower id). */
export async function init(rt: Runtime, n: number, seed: number): Promise<void> {
  checkBodies(n);
  const rng = new Random(seed);
  await rt.parallelNew(Body, n, (b, i) => {
    const v = drawBody(rng);
    b.id = i;
    b.posX = v.posX;
    b.posY = v.posY;
    b.velX = v.velX;
    b.velY = v.velY;
    b.mass = v.mass;
  });
}

/** Create the given bodies (tests, hand-made scenes), in order, the i-th with id i (as init); returns their handles. */
export async function initBodies(rt: Runtime, bodies: readonly BodyInit[]): Promise<number[]> {
  const handles: number[] = [];
  await rt.parallelNew(Body, bodies.length, (b, i) => {
    const v = bodies[i]!;
    b.id = i;
    b.posX = v.posX;
    b.posY = v.posY;
    b.velX = v.velX;
    b.velY = v.velY;
    b.mass = v.mass;
    handles[i] = b.handle;
  });
  return handles;
}

/** A phase of a step: its name (the method) and the do-all that runs it. */
export type Phase = readonly [name: string, run: (rt: Runtime) => Promise<void>];

/** One iteration, as the list of its do-all phases (profile.ts times them one by one). */
export const PHASES: readonly Phase[] = [
  // --- GRAVITY ---
  ['computeForce', (rt) => rt.parallelDo(Body, 'computeForce')],
  ['update', (rt) => rt.parallelDo(Body, 'update', DT)],
  // --- MERGE ---
  ['initializeMerge', (rt) => rt.parallelDo(Body, 'initializeMerge')],
  ['prepareMerge', (rt) => rt.parallelDo(Body, 'prepareMerge')],
  ['resolveMerge', (rt) => rt.parallelDo(Body, 'resolveMerge')],
  ['updateMerge', (rt) => rt.parallelDo(Body, 'updateMerge')],
  ['deleteMerged', (rt) => rt.parallelDo(Body, 'deleteMerged')],
];

/** One iteration. */
export async function step(rt: Runtime): Promise<void> {
  for (const [, run] of PHASES) await run(rt);
}

/** Number of bodies plus Σ posX + 2·posY + 3·velX + 4·velY (summed in float64). */
export function digest(rt: Runtime): number {
  let sum = 0;
  rt.deviceDo(Body, (b) => {
    sum += b.posX + 2 * b.posY + 3 * b.velX + 4 * b.velY;
  });
  return rt.count(Body) + sum;
}
