/**
 * collision baseline, SOA: one Float32Array per field (Int32Array for the merge target,
 * as an index); merged bodies are removed by compacting the arrays in place (order
 * kept), no allocation after the start. Same phases, rules and float arithmetic as the
 * smmo app (body.ts): sums in float64, every stored field an f32, ties broken by index
 * where smmo uses the id (its index at the start: compaction keeps the order, so index
 * order is id order and ties go the same way). The digest agrees within the tolerance of
 * the README.
 */
import type { Baseline, BaselineRun } from '../baselines/baseline.js';
import { Random } from '../random.js';
import { DAMPENING, DT, G, MERGE_THRESHOLD } from './body.js';
import { checkBodies, DEFAULTS, drawBody } from './collision.js';

const THRESHOLD_SQ = MERGE_THRESHOLD * MERGE_THRESHOLD;

export class CollisionSoa implements BaselineRun {
  private n: number;
  private readonly posX: Float32Array;
  private readonly posY: Float32Array;
  private readonly velX: Float32Array;
  private readonly velY: Float32Array;
  private readonly forceX: Float32Array;
  private readonly forceY: Float32Array;
  private readonly mass: Float32Array;
  private readonly mergeTarget: Int32Array; // index, -1 = none
  private readonly hasIncomingMerge: Uint8Array;
  private readonly successfulMerge: Uint8Array;

  constructor(n: number, seed: number) {
    checkBodies(n);
    this.n = n;
    this.posX = new Float32Array(n);
    this.posY = new Float32Array(n);
    this.velX = new Float32Array(n);
    this.velY = new Float32Array(n);
    this.forceX = new Float32Array(n);
    this.forceY = new Float32Array(n);
    this.mass = new Float32Array(n);
    this.mergeTarget = new Int32Array(n);
    this.hasIncomingMerge = new Uint8Array(n);
    this.successfulMerge = new Uint8Array(n);
    const rng = new Random(seed);
    for (let i = 0; i < n; i++) {
      const v = drawBody(rng);
      this.posX[i] = v.posX;
      this.posY[i] = v.posY;
      this.velX[i] = v.velX;
      this.velY[i] = v.velY;
      this.mass[i] = v.mass;
    }
  }

  step(): void {
    const { posX, posY, velX, velY, forceX, forceY, mass, mergeTarget, hasIncomingMerge, successfulMerge } = this;
    const n = this.n;
    // --- GRAVITY ---
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
    // --- MERGE ---
    mergeTarget.fill(-1, 0, n);
    hasIncomingMerge.fill(0, 0, n);
    successfulMerge.fill(0, 0, n);
    for (let i = 0; i < n; i++) {
      const px = posX[i]!;
      const py = posY[i]!;
      const m = mass[i]!;
      let best = -1;
      let bestD = Infinity;
      for (let j = 0; j < n; j++) {
        if (!(mass[j]! < m)) continue;
        const dx = px - posX[j]!;
        const dy = py - posY[j]!;
        const d = dx * dx + dy * dy;
        if (d < THRESHOLD_SQ && (d < bestD || (d === bestD && j < best))) {
          best = j;
          bestD = d;
        }
      }
      mergeTarget[i] = best;
    }
    for (let i = 0; i < n; i++) {
      const t = mergeTarget[i]!;
      if (t < 0 || mergeTarget[t]! >= 0) continue;
      const bx = posX[t]!;
      const by = posY[t]!;
      const bm = mass[t]!;
      const dx0 = posX[i]! - bx;
      const dy0 = posY[i]! - by;
      const mine = dx0 * dx0 + dy0 * dy0;
      let won = 1;
      for (let j = 0; j < n && won; j++) {
        if (!(mass[j]! > bm)) continue;
        const dx = posX[j]! - bx;
        const dy = posY[j]! - by;
        const d = dx * dx + dy * dy;
        if (d > mine || (d === mine && j >= i)) continue;
        if (mergeTarget[j] === t) won = 0;
      }
      successfulMerge[i] = won;
    }
    for (let i = 0; i < n; i++) {
      if (successfulMerge[i] === 0) continue;
      const t = mergeTarget[i]!;
      const m = mass[i]!;
      const tm = mass[t]!;
      const total = m + tm;
      const vx = (velX[i]! * m + velX[t]! * tm) / total;
      const vy = (velY[i]! * m + velY[t]! * tm) / total;
      mass[t] = total;
      velX[t] = vx;
      velY[t] = vy;
      posX[t] = (posX[i]! + posX[t]!) / 2;
      posY[t] = (posY[i]! + posY[t]!) / 2;
      hasIncomingMerge[t] = 1;
    }
    let k = 0;
    for (let i = 0; i < n; i++) {
      if (successfulMerge[i] !== 0) continue;
      posX[k] = posX[i]!;
      posY[k] = posY[i]!;
      velX[k] = velX[i]!;
      velY[k] = velY[i]!;
      forceX[k] = forceX[i]!;
      forceY[k] = forceY[i]!;
      mass[k] = mass[i]!;
      hasIncomingMerge[k] = hasIncomingMerge[i]!;
      k++;
    }
    this.n = k;
  }

  digest(): number {
    let sum = 0;
    for (let i = 0; i < this.n; i++) sum += this.posX[i]! + 2 * this.posY[i]! + 3 * this.velX[i]! + 4 * this.velY[i]!;
    return this.n + sum;
  }

  counts(): Record<string, number> {
    return { Body: this.n };
  }
}

const baseline: Baseline = {
  app: 'collision',
  layout: 'soa',
  create: (params, seed) => new CollisionSoa(Number(params['bodies'] ?? DEFAULTS.bodies), seed),
};
export default baseline;
