/**
 * nbody baseline, SOA: one Float32Array per field. Same initial state (Random(seed),
 * five draws per body in nbody.ts's order) and arithmetic as the smmo app (body.ts):
 * sums in float64, stored as f32. The digest agrees within the tolerance stated in
 * test/apps-nbody.test.ts.
 */
import type { Baseline, BaselineRun } from '../baselines/baseline.js';
import { Random } from '../random.js';
import { DAMPENING, DT, G, MAX_MASS } from './body.js';
import { DEFAULTS } from './nbody.js';

export class NbodySoa implements BaselineRun {
  private readonly posX: Float32Array;
  private readonly posY: Float32Array;
  private readonly velX: Float32Array;
  private readonly velY: Float32Array;
  private readonly forceX: Float32Array;
  private readonly forceY: Float32Array;
  private readonly mass: Float32Array;

  constructor(
    readonly n: number,
    seed: number,
  ) {
    this.posX = new Float32Array(n);
    this.posY = new Float32Array(n);
    this.velX = new Float32Array(n);
    this.velY = new Float32Array(n);
    this.forceX = new Float32Array(n);
    this.forceY = new Float32Array(n);
    this.mass = new Float32Array(n);
    const rng = new Random(seed);
    for (let i = 0; i < n; i++) {
      this.posX[i] = 2 * rng.next() - 1;
      this.posY[i] = 2 * rng.next() - 1;
      this.velX[i] = (rng.next() - 0.5) / 1000;
      this.velY[i] = (rng.next() - 0.5) / 1000;
      this.mass[i] = (rng.next() / 2 + 0.5) * MAX_MASS;
    }
  }

  step(): void {
    const { n, posX, posY, velX, velY, forceX, forceY, mass } = this;
    for (let i = 0; i < n; i++) {
      const px = posX[i]!;
      const py = posY[i]!;
      const m = mass[i]!;
      let fx = 0;
      let fy = 0;
      for (let j = 0; j < n; j++) {
        if (j === i) continue;
        const dx = posX[j]! - px;
        const dy = posY[j]! - py;
        const dist = Math.sqrt(dx * dx + dy * dy);
        const f = (G * m * mass[j]!) / (dist * dist + DAMPENING);
        fx += (f * dx) / dist;
        fy += (f * dy) / dist;
      }
      forceX[i] = fx;
      forceY[i] = fy;
    }
    for (let i = 0; i < n; i++) {
      velX[i] = velX[i]! + (forceX[i]! * DT) / mass[i]!;
      velY[i] = velY[i]! + (forceY[i]! * DT) / mass[i]!;
      posX[i] = posX[i]! + velX[i]! * DT;
      posY[i] = posY[i]! + velY[i]! * DT;
      if (posX[i]! < -1 || posX[i]! > 1) velX[i] = -velX[i]!;
      if (posY[i]! < -1 || posY[i]! > 1) velY[i] = -velY[i]!;
    }
  }

  digest(): number {
    let sum = 0;
    for (let i = 0; i < this.n; i++) sum += this.posX[i]! + 2 * this.posY[i]! + 3 * this.velX[i]! + 4 * this.velY[i]!;
    return sum;
  }

  counts(): Record<string, number> {
    return { Body: this.n };
  }
}

const baseline: Baseline = {
  app: 'nbody',
  layout: 'soa',
  create: (params, seed) => new NbodySoa(Number(params['bodies'] ?? DEFAULTS.bodies), seed),
};
export default baseline;
