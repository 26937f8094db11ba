/**
 * The nbody simulation: initial state, step (the list of do-all phases) and digest.
 */
import type { Runtime } from '../../runtime/index.js';
import { Random } from '../random.js';
import { Body, DT, MAX_MASS } from './body.js';

export { Body };
export const CLASSES = [Body];
export const DEFAULTS = { bodies: 20000, iterations: 3000 };

/** Create `n` bodies as the original (uniform positions in [-1,1), small velocities). */
export async function init(rt: Runtime, n: number, seed: number): Promise<void> {
  const rng = new Random(seed);
  await rt.parallelNew(Body, n, (b) => {
    b.posX = 2 * rng.next() - 1;
    b.posY = 2 * rng.next() - 1;
    b.velX = (rng.next() - 0.5) / 1000;
    b.velY = (rng.next() - 0.5) / 1000;
    b.mass = (rng.next() / 2 + 0.5) * MAX_MASS;
  });
}

/** One iteration. */
export async function step(rt: Runtime): Promise<void> {
  await rt.parallelDo(Body, 'computeForce');
  await rt.parallelDo(Body, 'update', DT);
}

/** The original's checksum: Σ posX + 2·posY + 3·velX + 4·velY (summed in float64). */
export function digest(rt: Runtime): number {
  let sum = 0;
  rt.deviceDo(Body, (b) => {
    sum += b.posX + 2 * b.posY + 3 * b.velX + 4 * b.velY;
  });
  return sum;
}
