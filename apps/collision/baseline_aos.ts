/**
 * collision baseline, AOS: an array of plain objects, one per body; merged bodies are
 * removed by compacting the array in place (order kept), no allocation after the start.
 * Same phases, rules and float arithmetic as the smmo app (body.ts): sums in float64,
 * every stored field rounded to f32 (Math.fround), ties broken by array index where
 * smmo uses the id (its index at the start: compaction keeps the order, so index order
 * is id order and ties go the same way). The digest agrees within the tolerance of the
 * README.
 */
import type { Baseline, BaselineRun } from '../baselines/baseline.js';
import { Random } from '../random.js';
import { DAMPENING, DT, G, MERGE_THRESHOLD } from './body.js';
import { checkBodies, DEFAULTS, drawBody } from './collision.js';

const f = Math.fround;
const THRESHOLD_SQ = MERGE_THRESHOLD * MERGE_THRESHOLD;

interface BodyRecord {
  mergeTarget: BodyRecord | null;
  posX: number;
  posY: number;
  velX: number;
  velY: number;
  forceX: number;
  forceY: number;
  mass: number;
  hasIncomingMerge: boolean;
  successfulMerge: boolean;
}

export class CollisionAos implements BaselineRun {
  private readonly bodies: BodyRecord[] = [];

  constructor(n: number, seed: number) {
    checkBodies(n);
    const rng = new Random(seed);
    for (let i = 0; i < n; i++) {
      const v = drawBody(rng);
      this.bodies.push({
        mergeTarget: null,
        posX: f(v.posX),
        posY: f(v.posY),
        velX: f(v.velX),
        velY: f(v.velY),
        forceX: 0,
        forceY: 0,
        mass: f(v.mass),
        hasIncomingMerge: false,
        successfulMerge: false,
      });
    }
  }

  step(): void {
    const bodies = this.bodies;
    const n = bodies.length;
    // --- GRAVITY ---
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
    // --- MERGE ---
    for (const b of bodies) {
      b.mergeTarget = null;
      b.hasIncomingMerge = false;
      b.successfulMerge = false;
    }
    for (const b of bodies) {
      let best = -1;
      let bestD = Infinity;
      for (let j = 0; j < n; j++) {
        const o = bodies[j]!;
        if (!(o.mass < b.mass)) continue;
        const dx = b.posX - o.posX;
        const dy = b.posY - o.posY;
        const d = dx * dx + dy * dy;
        if (d < THRESHOLD_SQ && (d < bestD || (d === bestD && j < best))) {
          best = j;
          bestD = d;
        }
      }
      if (best >= 0) b.mergeTarget = bodies[best]!;
    }
    for (let i = 0; i < n; i++) {
      const b = bodies[i]!;
      const t = b.mergeTarget;
      if (t === null || t.mergeTarget !== null) continue;
      const dx0 = b.posX - t.posX;
      const dy0 = b.posY - t.posY;
      const mine = dx0 * dx0 + dy0 * dy0;
      let won = true;
      for (let j = 0; j < n && won; j++) {
        const o = bodies[j]!;
        if (!(o.mass > t.mass)) continue;
        const dx = o.posX - t.posX;
        const dy = o.posY - t.posY;
        const d = dx * dx + dy * dy;
        if (d > mine || (d === mine && j >= i)) continue;
        if (o.mergeTarget === t) won = false;
      }
      b.successfulMerge = won;
    }
    for (const b of bodies) {
      if (!b.successfulMerge) continue;
      const t = b.mergeTarget!;
      const mass = b.mass + t.mass;
      const velX = (b.velX * b.mass + t.velX * t.mass) / mass;
      const velY = (b.velY * b.mass + t.velY * t.mass) / mass;
      t.mass = f(mass);
      t.velX = f(velX);
      t.velY = f(velY);
      t.posX = f((b.posX + t.posX) / 2);
      t.posY = f((b.posY + t.posY) / 2);
      t.hasIncomingMerge = true;
    }
    let k = 0;
    for (let i = 0; i < n; i++) if (!bodies[i]!.successfulMerge) bodies[k++] = bodies[i]!;
    bodies.length = k;
  }

  digest(): number {
    let sum = 0;
    for (const b of this.bodies) sum += b.posX + 2 * b.posY + 3 * b.velX + 4 * b.velY;
    return this.bodies.length + sum;
  }

  counts(): Record<string, number> {
    return { Body: this.bodies.length };
  }
}

const baseline: Baseline = {
  app: 'collision',
  layout: 'aos',
  create: (params, seed) => new CollisionAos(Number(params['bodies'] ?? DEFAULTS.bodies), seed),
};
export default baseline;
