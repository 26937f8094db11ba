/**
 * nbody baseline, AOS: an array of plain objects, one per body. Same initial state
 * (Random(seed), five draws per body in nbody.ts's order) and arithmetic as the smmo
 * app (body.ts): sums in float64, every stored field rounded to f32 (Math.fround).
 * The digest agrees within the tolerance stated in test/apps-nbody.test.ts.
 */
import type { Baseline, BaselineRun } from '../baselines/baseline.js';
import { Random } from '../random.js';
import { DAMPENING, DT, G, MAX_MASS } from './body.js';
import { DEFAULTS } from './nbody.js';

const f = Math.fround;

interface BodyRecord {
  posX: number;
  posY: number;
  velX: number;
  velY: number;
  forceX: number;
  forceY: number;
  mass: number;
}

export class NbodyAos implements BaselineRun {
  private readonly bodies: BodyRecord[] = [];

  constructor(n: number, seed: number) {
    const rng = new Random(seed);
    for (let i = 0; i < n; i++) {
      // One statement per field, in nbody.ts's order of draws.
      const posX = f(2 * rng.next() - 1);
      const posY = f(2 * rng.next() - 1);
      const velX = f((rng.next() - 0.5) / 1000);
      const velY = f((rng.next() - 0.5) / 1000);
      const mass = f((rng.next() / 2 + 0.5) * MAX_MASS);
      this.bodies.push({ posX, posY, velX, velY, forceX: 0, forceY: 0, mass });
    }
  }

  step(): void {
    const bodies = this.bodies;
    const n = bodies.length;
    for (let i = 0; i < n; i++) {
      const b = bodies[i]!;
      let fx = 0;
      let fy = 0;
      for (let j = 0; j < n; j++) {
        if (j === i) continue;
        const o = bodies[j]!;
        const dx = o.posX - b.posX;
        const dy = o.posY - b.posY;
        const dist = Math.sqrt(dx * dx + dy * dy);
        const force = (G * b.mass * o.mass) / (dist * dist + DAMPENING);
        fx += (force * dx) / dist;
        fy += (force * dy) / dist;
      }
      b.forceX = f(fx);
      b.forceY = f(fy);
    }
    for (const b of bodies) {
      b.velX = f(b.velX + (b.forceX * DT) / b.mass);
      b.velY = f(b.velY + (b.forceY * DT) / b.mass);
      b.posX = f(b.posX + b.velX * DT);
      b.posY = f(b.posY + b.velY * DT);
      if (b.posX < -1 || b.posX > 1) b.velX = -b.velX;
      if (b.posY < -1 || b.posY > 1) b.velY = -b.velY;
    }
  }

  digest(): number {
    let sum = 0;
    for (const b of this.bodies) sum += b.posX + 2 * b.posY + 3 * b.velX + 4 * b.velY;
    return sum;
  }

  counts(): Record<string, number> {
    return { Body: this.bodies.length };
  }
}

const baseline: Baseline = {
  app: 'nbody',
  layout: 'aos',
  create: (params, seed) => new NbodyAos(Number(params['bodies'] ?? DEFAULTS.bodies), seed),
};
export default baseline;
