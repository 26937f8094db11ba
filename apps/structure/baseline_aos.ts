/**
 * structure baseline, AOS: one plain JavaScript object per node and per spring; deleted
 * ones are dropped from the arrays after the pass that deletes them.
 *
 * Same mesh (mesh.ts), phases, f32 arithmetic (Math.fround on every operation) and rules
 * as the smmo app (model.ts), so the digest is the same exactly.
 */
import type { Baseline, BaselineRun } from '../baselines/baseline.js';
import {
  buildMesh,
  checkMesh,
  COMPUTE_ITERATIONS,
  digestOf,
  distanceF32,
  DT,
  KIND_ANCHOR,
  KIND_ANCHOR_PULL,
  KIND_NODE,
  MAX_DEGREE,
  MAX_DISTANCE,
  nodeWord,
  springWord,
  VELOCITY_DAMPENING,
  type Mesh,
} from './mesh.js';
import { nodesOf } from './structure.js';

const fr = Math.fround;

interface NodeObject {
  id: number;
  kind: number;
  springs: (SpringObject | null)[];
  posX: number;
  posY: number;
  velX: number;
  velY: number;
  mass: number;
  numSprings: number;
  distance: number;
  alive: boolean;
}

interface SpringObject {
  p1: NodeObject;
  p2: NodeObject;
  springFactor: number;
  initialLength: number;
  force: number;
  maxForce: number;
  deleteFlag: boolean;
}

export class StructureAos implements BaselineRun {
  private nodes: NodeObject[] = [];
  private springs: SpringObject[] = [];

  constructor(mesh: Mesh) {
    checkMesh(mesh);
    for (let i = 0; i < mesh.nodes; i++) {
      const pull = mesh.kind[i] === KIND_ANCHOR_PULL;
      this.nodes.push({
        id: i,
        kind: mesh.kind[i]!,
        springs: new Array<SpringObject | null>(MAX_DEGREE).fill(null),
        posX: mesh.posX[i]!,
        posY: mesh.posY[i]!,
        velX: pull ? mesh.velX[i]! : 0,
        velY: pull ? mesh.velY[i]! : 0,
        mass: mesh.kind[i] === KIND_NODE ? mesh.mass[i]! : 0,
        numSprings: 0,
        distance: 0,
        alive: true,
      });
    }
    for (let s = 0; s < mesh.springs; s++) {
      const p1 = this.nodes[mesh.p1[s]!]!;
      const p2 = this.nodes[mesh.p2[s]!]!;
      const spring: SpringObject = {
        p1,
        p2,
        springFactor: mesh.springFactor[s]!,
        initialLength: distanceF32(p1.posX, p1.posY, p2.posX, p2.posY),
        force: 0,
        maxForce: mesh.maxForce[s]!,
        deleteFlag: false,
      };
      p1.springs[p1.numSprings++] = spring;
      p2.springs[p2.numSprings++] = spring;
      this.springs.push(spring);
    }
  }

  step(): void {
    for (const n of this.nodes) {
      if (n.kind !== KIND_ANCHOR_PULL) continue;
      n.posX = fr(n.posX + fr(n.velX * DT));
      n.posY = fr(n.posY + fr(n.velY * DT));
    }
    for (let k = 0; k < COMPUTE_ITERATIONS; k++) this.compute();
    this.bfsAndDelete();
  }

  private compute(): void {
    // Spring.computeForce
    for (const s of this.springs) {
      const dist = distanceF32(s.p1.posX, s.p1.posY, s.p2.posX, s.p2.posY);
      s.force = fr(s.springFactor * Math.max(0, fr(dist - s.initialLength)));
      if (s.force > s.maxForce) s.deleteFlag = true;
    }
    // NodeBase.removeBrokenSprings
    let nodesDeleted = false;
    for (const n of this.nodes) {
      if (n.numSprings === 0) continue;
      for (let i = 0; i < MAX_DEGREE; i++) {
        const s = n.springs[i];
        if (s?.deleteFlag === true) {
          n.springs[i] = null;
          n.numSprings--;
        }
      }
      if (n.numSprings === 0) {
        n.alive = false;
        nodesDeleted = true;
      }
    }
    if (nodesDeleted) this.nodes = this.nodes.filter((n) => n.alive);
    // Spring.deleteBroken
    if (this.springs.some((s) => s.deleteFlag)) this.springs = this.springs.filter((s) => !s.deleteFlag);
    // Node.move
    const keep = fr(1 - VELOCITY_DAMPENING);
    for (const n of this.nodes) {
      if (n.kind !== KIND_NODE) continue;
      let fx = 0;
      let fy = 0;
      for (const s of n.springs) {
        if (s === null) continue;
        const to = s.p1 === n ? s.p2 : s.p1;
        const dx = fr(to.posX - n.posX);
        const dy = fr(to.posY - n.posY);
        const dist = fr(Math.sqrt(fr(fr(dx * dx) + fr(dy * dy))));
        fx = fr(fx + fr(fr(dx / dist) * s.force));
        fy = fr(fy + fr(fr(dy / dist) * s.force));
      }
      n.velX = fr(fr(n.velX + fr(fr(fx * DT) / n.mass)) * keep);
      n.velY = fr(fr(n.velY + fr(fr(fy * DT) / n.mass)) * keep);
    }
    // Node.updatePosition
    for (const n of this.nodes) {
      if (n.kind !== KIND_NODE) continue;
      n.posX = fr(n.posX + fr(n.velX * DT));
      n.posY = fr(n.posY + fr(n.velY * DT));
    }
  }

  private bfsAndDelete(): void {
    for (const n of this.nodes) n.distance = n.kind === KIND_NODE ? MAX_DISTANCE : 0;
    const reached: NodeObject[] = [];
    for (let level = 0; level < MAX_DISTANCE - 1; level++) {
      reached.length = 0;
      for (const n of this.nodes) {
        if (n.distance !== MAX_DISTANCE) continue;
        for (const s of n.springs) {
          if (s !== null && (s.p1 === n ? s.p2 : s.p1).distance === level) {
            reached.push(n);
            break;
          }
        }
      }
      if (reached.length === 0) break;
      for (const n of reached) n.distance = level + 1;
    }
    this.springs = this.springs.filter((s) => s.p1.distance !== MAX_DISTANCE && s.p2.distance !== MAX_DISTANCE);
    this.nodes = this.nodes.filter((n) => n.distance !== MAX_DISTANCE || n.numSprings === 0);
  }

  digest(): number {
    let sum = 0;
    for (const n of this.nodes) {
      const moving = n.kind !== KIND_ANCHOR;
      sum = (sum + nodeWord(n.id, n.kind, n.distance, n.numSprings, n.posX, n.posY, moving ? n.velX : 0, moving ? n.velY : 0)) >>> 0;
    }
    for (const s of this.springs) sum = (sum + springWord(s.p1.id, s.p2.id, s.force)) >>> 0;
    return digestOf(this.nodes.length, sum);
  }

  /** The original's checksum, Σ p1.x · p2.y · force over springs (structure.ts checksum). */
  checksum(): number {
    let sum = 0;
    for (const s of this.springs) sum += s.p1.posX * s.p2.posY * s.force;
    return sum;
  }

  counts(): Record<string, number> {
    const c: Record<string, number> = { AnchorNode: 0, AnchorPullNode: 0, Node: 0, Spring: this.springs.length, Bfs: 1 };
    for (const n of this.nodes) {
      if (n.kind === KIND_NODE) c['Node']!++;
      else if (n.kind === KIND_ANCHOR_PULL) c['AnchorPullNode']!++;
      else c['AnchorNode']!++;
    }
    return c;
  }
}

const baseline: Baseline = {
  app: 'structure',
  layout: 'aos',
  create: (params, seed) => new StructureAos(buildMesh(nodesOf(params), seed)),
};
export default baseline;
