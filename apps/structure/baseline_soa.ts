/**
 * structure baseline, SOA: typed arrays per field, nodes and springs by their index in
 * the mesh (nothing is created after the start, so a deleted node or spring only clears
 * its `alive` flag); a node's spring slots are MAX_DEGREE spring indices (-1: none).
 *
 * Same mesh (mesh.ts), phases, f32 arithmetic and rules as the smmo app (model.ts), so
 * the digest is the same exactly.
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

export class StructureSoa implements BaselineRun {
  private readonly n: number;
  private readonly kind: Uint8Array;
  private readonly nodeAlive: Uint8Array;
  private readonly posX: Float32Array;
  private readonly posY: Float32Array;
  private readonly velX: Float32Array;
  private readonly velY: Float32Array;
  private readonly mass: Float32Array;
  private readonly numSprings: Int32Array;
  private readonly distance: Int32Array;
  private readonly slots: Int32Array;
  private readonly m: number;
  private readonly springAlive: Uint8Array;
  private readonly p1: Int32Array;
  private readonly p2: Int32Array;
  private readonly springFactor: Float32Array;
  private readonly initialLength: Float32Array;
  private readonly force: Float32Array;
  private readonly maxForce: Float32Array;
  private readonly deleteFlag: Uint8Array;

  constructor(mesh: Mesh) {
    checkMesh(mesh);
    const n = (this.n = mesh.nodes);
    this.kind = mesh.kind.slice();
    this.nodeAlive = new Uint8Array(n).fill(1);
    this.posX = mesh.posX.slice();
    this.posY = mesh.posY.slice();
    this.velX = new Float32Array(n);
    this.velY = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      if (mesh.kind[i] === KIND_ANCHOR_PULL) {
        this.velX[i] = mesh.velX[i]!;
        this.velY[i] = mesh.velY[i]!;
      }
    }
    this.mass = mesh.mass.slice();
    this.numSprings = new Int32Array(n);
    this.distance = new Int32Array(n);
    this.slots = new Int32Array(n * MAX_DEGREE).fill(-1);
    const m = (this.m = mesh.springs);
    this.springAlive = new Uint8Array(m).fill(1);
    this.p1 = mesh.p1.slice();
    this.p2 = mesh.p2.slice();
    this.springFactor = mesh.springFactor.slice();
    this.maxForce = mesh.maxForce.slice();
    this.initialLength = new Float32Array(m);
    this.force = new Float32Array(m);
    this.deleteFlag = new Uint8Array(m);
    for (let s = 0; s < m; s++) {
      const a = this.p1[s]!;
      const b = this.p2[s]!;
      this.initialLength[s] = distanceF32(this.posX[a]!, this.posY[a]!, this.posX[b]!, this.posY[b]!);
      this.slots[a * MAX_DEGREE + this.numSprings[a]!] = s;
      this.numSprings[a]!++;
      this.slots[b * MAX_DEGREE + this.numSprings[b]!] = s;
      this.numSprings[b]!++;
    }
  }

  step(): void {
    const { n, kind, nodeAlive, posX, posY, velX, velY } = this;
    // AnchorPullNode.pull
    for (let i = 0; i < n; i++) {
      if (nodeAlive[i] === 1 && kind[i] === KIND_ANCHOR_PULL) {
        posX[i] = fr(posX[i]! + fr(velX[i]! * DT));
        posY[i] = fr(posY[i]! + fr(velY[i]! * DT));
      }
    }
    for (let k = 0; k < COMPUTE_ITERATIONS; k++) this.compute();
    this.bfsAndDelete();
  }

  private compute(): void {
    const { n, m, kind, nodeAlive, posX, posY, velX, velY, mass, numSprings, slots } = this;
    const { springAlive, p1, p2, force, deleteFlag } = this;
    // Spring.computeForce
    for (let s = 0; s < m; s++) {
      if (springAlive[s] !== 1) continue;
      const a = p1[s]!;
      const b = p2[s]!;
      const dist = distanceF32(posX[a]!, posY[a]!, posX[b]!, posY[b]!);
      const f = fr(this.springFactor[s]! * Math.max(0, fr(dist - this.initialLength[s]!)));
      force[s] = f;
      if (f > this.maxForce[s]!) deleteFlag[s] = 1;
    }
    // NodeBase.removeBrokenSprings
    for (let i = 0; i < n; i++) {
      if (nodeAlive[i] !== 1 || numSprings[i] === 0) continue;
      let c = numSprings[i]!;
      for (let j = i * MAX_DEGREE; j < (i + 1) * MAX_DEGREE; j++) {
        const s = slots[j]!;
        if (s >= 0 && deleteFlag[s] === 1) {
          slots[j] = -1;
          c--;
        }
      }
      numSprings[i] = c;
      if (c === 0) nodeAlive[i] = 0;
    }
    // Spring.deleteBroken
    for (let s = 0; s < m; s++) if (deleteFlag[s] === 1) springAlive[s] = 0;
    // Node.move
    const keep = fr(1 - VELOCITY_DAMPENING);
    for (let i = 0; i < n; i++) {
      if (nodeAlive[i] !== 1 || kind[i] !== KIND_NODE) continue;
      const x = posX[i]!;
      const y = posY[i]!;
      let fx = 0;
      let fy = 0;
      for (let j = i * MAX_DEGREE; j < (i + 1) * MAX_DEGREE; j++) {
        const s = slots[j]!;
        if (s < 0) continue;
        const to = p1[s] === i ? p2[s]! : p1[s]!;
        const dx = fr(posX[to]! - x);
        const dy = fr(posY[to]! - y);
        const dist = fr(Math.sqrt(fr(fr(dx * dx) + fr(dy * dy))));
        fx = fr(fx + fr(fr(dx / dist) * force[s]!));
        fy = fr(fy + fr(fr(dy / dist) * force[s]!));
      }
      velX[i] = fr(fr(velX[i]! + fr(fr(fx * DT) / mass[i]!)) * keep);
      velY[i] = fr(fr(velY[i]! + fr(fr(fy * DT) / mass[i]!)) * keep);
    }
    // Node.updatePosition
    for (let i = 0; i < n; i++) {
      if (nodeAlive[i] !== 1 || kind[i] !== KIND_NODE) continue;
      posX[i] = fr(posX[i]! + fr(velX[i]! * DT));
      posY[i] = fr(posY[i]! + fr(velY[i]! * DT));
    }
  }

  private bfsAndDelete(): void {
    const { n, m, kind, nodeAlive, numSprings, distance, slots, springAlive, p1, p2 } = this;
    for (let i = 0; i < n; i++) distance[i] = kind[i] === KIND_NODE ? MAX_DISTANCE : 0;
    // Levels, each from the distances of the level before (as the smmo passes: a node
    // reached in this level does not pass the distance on in the same level).
    const next: number[] = [];
    for (let level = 0; level < MAX_DISTANCE - 1; level++) {
      next.length = 0;
      for (let i = 0; i < n; i++) {
        if (nodeAlive[i] !== 1 || distance[i] !== MAX_DISTANCE) continue;
        for (let j = i * MAX_DEGREE; j < (i + 1) * MAX_DEGREE; j++) {
          const s = slots[j]!;
          if (s < 0) continue;
          const other = p1[s] === i ? p2[s]! : p1[s]!;
          if (distance[other] === level) {
            next.push(i);
            break;
          }
        }
      }
      if (next.length === 0) break;
      for (const i of next) distance[i] = level + 1;
    }
    // Spring.bfsDelete, NodeBase.bfsDelete
    for (let s = 0; s < m; s++) {
      if (springAlive[s] === 1 && (distance[p1[s]!] === MAX_DISTANCE || distance[p2[s]!] === MAX_DISTANCE)) springAlive[s] = 0;
    }
    for (let i = 0; i < n; i++) if (nodeAlive[i] === 1 && distance[i] === MAX_DISTANCE && numSprings[i]! > 0) nodeAlive[i] = 0;
  }

  digest(): number {
    let sum = 0;
    let nodes = 0;
    for (let i = 0; i < this.n; i++) {
      if (this.nodeAlive[i] !== 1) continue;
      nodes++;
      const moving = this.kind[i] !== KIND_ANCHOR;
      sum =
        (sum +
          nodeWord(
            i,
            this.kind[i]!,
            this.distance[i]!,
            this.numSprings[i]!,
            this.posX[i]!,
            this.posY[i]!,
            moving ? this.velX[i]! : 0,
            moving ? this.velY[i]! : 0,
          )) >>>
        0;
    }
    for (let s = 0; s < this.m; s++)
      if (this.springAlive[s] === 1) sum = (sum + springWord(this.p1[s]!, this.p2[s]!, this.force[s]!)) >>> 0;
    return digestOf(nodes, sum);
  }

  /** The original's checksum, Σ p1.x · p2.y · force over springs (structure.ts checksum). */
  checksum(): number {
    let sum = 0;
    for (let s = 0; s < this.m; s++)
      if (this.springAlive[s] === 1) sum += this.posX[this.p1[s]!]! * this.posY[this.p2[s]!]! * this.force[s]!;
    return sum;
  }

  counts(): Record<string, number> {
    const c: Record<string, number> = { AnchorNode: 0, AnchorPullNode: 0, Node: 0, Spring: 0, Bfs: 1 };
    for (let i = 0; i < this.n; i++) {
      if (this.nodeAlive[i] !== 1) continue;
      const k = this.kind[i];
      if (k === KIND_NODE) c['Node']!++;
      else if (k === KIND_ANCHOR_PULL) c['AnchorPullNode']!++;
      else if (k === KIND_ANCHOR) c['AnchorNode']!++;
    }
    for (let s = 0; s < this.m; s++) c['Spring']! += this.springAlive[s]!;
    return c;
  }
}

const baseline: Baseline = {
  app: 'structure',
  layout: 'soa',
  create: (params, seed) => new StructureSoa(buildMesh(nodesOf(params), seed)),
};
export default baseline;
