/**
 * barnes-hut baseline, SOA: typed arrays per field of the bodies (indexed by id) and of
 * the tree nodes (a pool with a free list, grown by doubling). A child slot holds 0
 * (empty), t + 1 (tree node t) or -(b + 1) (body b). The force walk follows parent links
 * (no stack); the bottom-up passes visit the nodes in reverse depth-first order
 * (children before parents); detached bodies are inserted one by one in id order.
 *
 * Same initial bodies, phases, float64 arithmetic in the same order and tree rules as
 * the smmo app (model.ts), so the digest is the same exactly.
 */
import type { Baseline, BaselineRun } from '../baselines/baseline.js';
import { bodiesOf, checkParams, checksumOf, digestOf, drawBodies, termOf, thresholdOf, type BodyInit } from './barnes-hut.js';
import { DAMPENING, DT, G, MIN_WIDTH, slotOf, UPPER } from './model.js';

export class BarnesHutSoa implements BaselineRun {
  private readonly n: number;
  private readonly posX: Float64Array;
  private readonly posY: Float64Array;
  private readonly velX: Float64Array;
  private readonly velY: Float64Array;
  private readonly mass: Float64Array;
  /** The tree node holding the body (always set between steps). */
  private readonly parent: Int32Array;
  private readonly childIndex: Int8Array;
  // Tree nodes.
  private cap = 0;
  private tParent = new Int32Array(0); // -1: root
  private tChildIndex = new Int8Array(0);
  private tChildren = new Int32Array(0);
  private tP1X = new Float64Array(0);
  private tP1Y = new Float64Array(0);
  private tP2X = new Float64Array(0);
  private tP2Y = new Float64Array(0);
  private tMass = new Float64Array(0);
  private tPosX = new Float64Array(0);
  private tPosY = new Float64Array(0);
  private free: number[] = [];
  private used = 0;
  private treeNodes = 0;
  private order = new Int32Array(0);
  private stack = new Int32Array(0);

  constructor(
    init: readonly BodyInit[],
    private readonly threshold: number,
  ) {
    const n = (this.n = init.length);
    this.posX = Float64Array.from(init, (b) => b.posX);
    this.posY = Float64Array.from(init, (b) => b.posY);
    this.velX = Float64Array.from(init, (b) => b.velX);
    this.velY = Float64Array.from(init, (b) => b.velY);
    this.mass = Float64Array.from(init, (b) => b.mass);
    this.parent = new Int32Array(n).fill(-1);
    this.childIndex = new Int8Array(n);
    this.grow(Math.max(16, n));
    this.newTree(-1, 0, -1, -1, 1, 1);
    for (let b = 0; b < n; b++) this.insert(b);
  }

  private grow(cap: number): void {
    const copy = <T extends Float64Array | Int32Array | Int8Array>(a: T, make: (k: number) => T, k: number): T => {
      const out = make(k);
      out.set(a);
      return out;
    };
    this.tParent = copy(this.tParent, (k) => new Int32Array(k), cap);
    this.tChildIndex = copy(this.tChildIndex, (k) => new Int8Array(k), cap);
    this.tChildren = copy(this.tChildren, (k) => new Int32Array(k), cap * 4);
    for (const f of ['tP1X', 'tP1Y', 'tP2X', 'tP2Y', 'tMass', 'tPosX', 'tPosY'] as const)
      this[f] = copy(this[f], (k) => new Float64Array(k), cap);
    this.order = new Int32Array(cap);
    this.stack = new Int32Array(cap * 4);
    this.cap = cap;
  }

  private newTree(parent: number, childIndex: number, p1X: number, p1Y: number, p2X: number, p2Y: number): number {
    let t = this.free.pop();
    if (t === undefined) {
      if (this.used === this.cap) this.grow(this.cap * 2);
      t = this.used++;
    }
    this.tParent[t] = parent;
    this.tChildIndex[t] = childIndex;
    this.tChildren.fill(0, t * 4, t * 4 + 4);
    this.tP1X[t] = p1X;
    this.tP1Y[t] = p1Y;
    this.tP2X[t] = p2X;
    this.tP2Y[t] = p2Y;
    this.tMass[t] = 0;
    this.tPosX[t] = 0;
    this.tPosY[t] = 0;
    this.treeNodes++;
    return t;
  }

  private insert(b: number): void {
    const { posX, posY } = this;
    const x = posX[b]!;
    const y = posY[b]!;
    let node = 0;
    for (;;) {
      const x1 = this.tP1X[node]!;
      const y1 = this.tP1Y[node]!;
      const x2 = this.tP2X[node]!;
      const y2 = this.tP2Y[node]!;
      const c = slotOf(x1, y1, x2, y2, x, y);
      const child = this.tChildren[node * 4 + c]!;
      if (child === 0) {
        this.tChildren[node * 4 + c] = -(b + 1);
        this.parent[b] = node;
        this.childIndex[b] = c;
        return;
      }
      if (child > 0) {
        node = child - 1;
        continue;
      }
      const mx = (x1 + x2) / 2;
      const my = (y1 + y2) / 2;
      if (x2 - x1 < MIN_WIDTH * 2) throw new Error(`barnes-hut: bodies share one position near (${mx}, ${my})`);
      const right = (c & 1) !== 0;
      const top = (c & 2) !== 0;
      const t = this.newTree(node, c, right ? mx : x1, top ? my : y1, right ? x2 : mx, top ? y2 : my);
      const r = -child - 1;
      const i = slotOf(this.tP1X[t]!, this.tP1Y[t]!, this.tP2X[t]!, this.tP2Y[t]!, posX[r]!, posY[r]!);
      this.tChildren[t * 4 + i] = child;
      this.parent[r] = t;
      this.childIndex[r] = i;
      this.tChildren[node * 4 + c] = t + 1;
      node = t;
    }
  }

  /** Tree nodes in depth-first order from the root (children in order 0 … 3 pushed reversed); returns their number. */
  private depthFirst(): number {
    const { order, stack, tChildren: ch } = this;
    let top = 0;
    let k = 0;
    stack[top++] = 0;
    while (top > 0) {
      const t = stack[--top]!;
      order[k++] = t;
      for (let i = 3; i >= 0; i--) {
        const c = ch[t * 4 + i]!;
        if (c > 0) stack[top++] = c - 1;
      }
    }
    return k;
  }

  private summarize(): void {
    const { order, tChildren: ch, tMass, tPosX, tPosY, mass, posX, posY } = this;
    for (let k = this.depthFirst() - 1; k >= 0; k--) {
      const t = order[k]!;
      let m = 0;
      let sx = 0;
      let sy = 0;
      for (let i = 0; i < 4; i++) {
        const c = ch[t * 4 + i]!;
        if (c === 0) continue;
        let cm: number, cx: number, cy: number;
        if (c > 0) {
          cm = tMass[c - 1]!;
          cx = tPosX[c - 1]!;
          cy = tPosY[c - 1]!;
        } else {
          cm = mass[-c - 1]!;
          cx = posX[-c - 1]!;
          cy = posY[-c - 1]!;
        }
        m += cm;
        sx += cm * cx;
        sy += cm * cy;
      }
      tMass[t] = m;
      tPosX[t] = m > 0 ? sx / m : 0;
      tPosY[t] = m > 0 ? sy / m : 0;
    }
  }

  private force(b: number): [number, number] {
    const { tChildren: ch, tMass, tPosX, tPosY, tP1X, tP1Y, tP2X, tP2Y, mass, posX, posY } = this;
    const bx = posX[b]!;
    const by = posY[b]!;
    const bm = mass[b]!;
    const self = -(b + 1);
    let fx = 0;
    let fy = 0;
    let node = 0;
    let c = 0;
    for (;;) {
      if (c < 4) {
        const child = ch[node * 4 + c]!;
        c++;
        if (child === 0) continue;
        let x: number, y: number, m: number;
        if (child > 0) {
          x = tPosX[child - 1]!;
          y = tPosY[child - 1]!;
          m = tMass[child - 1]!;
        } else {
          if (child === self) continue;
          x = posX[-child - 1]!;
          y = posY[-child - 1]!;
          m = mass[-child - 1]!;
        }
        const dx = x - bx;
        const dy = y - by;
        const dist = Math.sqrt(dx * dx + dy * dy);
        if (child > 0) {
          const t = child - 1;
          if ((bx >= tP1X[t]! && bx < tP2X[t]! && by >= tP1Y[t]! && by < tP2Y[t]!) || dist <= this.threshold) {
            node = t;
            c = 0;
            continue;
          }
        }
        const f = (G * m * bm) / (dist * dist + DAMPENING);
        fx += (f * dx) / dist;
        fy += (f * dy) / dist;
        continue;
      }
      const up = this.tParent[node]!;
      if (up < 0) break;
      c = this.tChildIndex[node]! + 1;
      node = up;
    }
    return [fx, fy];
  }

  private collapse(): void {
    const { order, tChildren: ch } = this;
    for (let k = this.depthFirst() - 1; k >= 1; k--) {
      const t = order[k]!;
      const p = this.tParent[t]!;
      const slot = p * 4 + this.tChildIndex[t]!;
      let n = 0;
      let only = 0;
      for (let i = 0; i < 4; i++) {
        const c = ch[t * 4 + i]!;
        if (c !== 0) {
          n++;
          only = c;
        }
      }
      if (n === 0) {
        ch[slot] = 0;
      } else if (n === 1 && only < 0) {
        const b = -only - 1;
        this.parent[b] = p;
        this.childIndex[b] = this.tChildIndex[t]!;
        ch[slot] = only;
      } else continue;
      this.free.push(t);
      this.treeNodes--;
    }
  }

  step(): void {
    const { n, posX, posY, velX, velY, mass } = this;
    this.summarize();
    const fx = new Float64Array(n);
    const fy = new Float64Array(n);
    for (let b = 0; b < n; b++) [fx[b], fy[b]] = this.force(b);
    for (let b = 0; b < n; b++) {
      const vx = velX[b]! + (fx[b]! * DT) / mass[b]!;
      const vy = velY[b]! + (fy[b]! * DT) / mass[b]!;
      let x = posX[b]! + vx * DT;
      let y = posY[b]! + vy * DT;
      velX[b] = vx;
      velY[b] = vy;
      if (x < -1) {
        velX[b] = -vx;
        x = -1;
      } else if (x > UPPER) {
        velX[b] = -vx;
        x = UPPER;
      }
      if (y < -1) {
        velY[b] = -vy;
        y = -1;
      } else if (y > UPPER) {
        velY[b] = -vy;
        y = UPPER;
      }
      posX[b] = x;
      posY[b] = y;
    }
    const detached: number[] = [];
    for (let b = 0; b < n; b++) {
      const p = this.parent[b]!;
      if (slotOf(this.tP1X[p]!, this.tP1Y[p]!, this.tP2X[p]!, this.tP2Y[p]!, posX[b]!, posY[b]!) === this.childIndex[b]) continue;
      this.tChildren[p * 4 + this.childIndex[b]!] = 0;
      this.parent[b] = -1;
      detached.push(b);
    }
    for (const b of detached) this.insert(b);
    this.collapse();
  }

  digest(): number {
    const terms = new Float64Array(this.n);
    for (let b = 0; b < this.n; b++) terms[b] = termOf(this.posX[b]!, this.posY[b]!, this.velX[b]!, this.velY[b]!);
    return digestOf({ bodies: this.n, treeNodes: this.treeNodes, checksum: checksumOf(terms) });
  }

  counts(): Record<string, number> {
    return { BodyNode: this.n, TreeNode: this.treeNodes };
  }
}

const baseline: Baseline = {
  app: 'barnes-hut',
  layout: 'soa',
  create(params, seed) {
    checkParams(params);
    return new BarnesHutSoa(drawBodies(bodiesOf(params), seed), thresholdOf(params));
  },
};
export default baseline;
