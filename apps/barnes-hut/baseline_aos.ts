/**
 * barnes-hut baseline, AOS: plain JavaScript objects for bodies and tree nodes, the tree
 * as object references, recursion for the bottom-up passes and the force walk, and the
 * detached bodies inserted one by one in id order (no rounds: one thread).
 *
 * Same initial bodies, phases, float64 arithmetic in the same order and tree rules as
 * the smmo app (model.ts): inserting one by one makes the same tree as the smmo
 * version's rounds, so the digest is the same exactly.
 */
import type { Baseline, BaselineRun } from '../baselines/baseline.js';
import { bodiesOf, checkParams, checksumOf, digestOf, drawBodies, termOf, thresholdOf, type BodyInit } from './barnes-hut.js';
import { DAMPENING, DT, G, MIN_WIDTH, slotOf, UPPER } from './model.js';

interface Body {
  kind: 'body';
  id: number;
  parent: Tree | null;
  childIndex: number;
  posX: number;
  posY: number;
  mass: number;
  velX: number;
  velY: number;
  forceX: number;
  forceY: number;
}

interface Tree {
  kind: 'tree';
  parent: Tree | null;
  childIndex: number;
  posX: number;
  posY: number;
  mass: number;
  children: (Tree | Body | null)[];
  p1X: number;
  p1Y: number;
  p2X: number;
  p2Y: number;
}

function tree(parent: Tree | null, childIndex: number, p1X: number, p1Y: number, p2X: number, p2Y: number): Tree {
  return { kind: 'tree', parent, childIndex, posX: 0, posY: 0, mass: 0, children: [null, null, null, null], p1X, p1Y, p2X, p2Y };
}

export class BarnesHutAos implements BaselineRun {
  private readonly bodies: Body[];
  private readonly root = tree(null, 0, -1, -1, 1, 1);
  private treeNodes = 1;

  constructor(
    init: readonly BodyInit[],
    private readonly threshold: number,
  ) {
    this.bodies = init.map((b, id) => ({ kind: 'body', id, parent: null, childIndex: 0, ...b, forceX: 0, forceY: 0 }));
    for (const b of this.bodies) this.insert(b);
  }

  /** Walk down to the deepest TreeNode holding `b`; take an empty slot, or split a slot holding a body. */
  private insert(b: Body): void {
    let node = this.root;
    for (;;) {
      const c = slotOf(node.p1X, node.p1Y, node.p2X, node.p2Y, b.posX, b.posY);
      const child = node.children[c]!;
      if (child === null) {
        node.children[c] = b;
        b.parent = node;
        b.childIndex = c;
        return;
      }
      if (child.kind === 'tree') {
        node = child;
        continue;
      }
      const mx = (node.p1X + node.p2X) / 2;
      const my = (node.p1Y + node.p2Y) / 2;
      if (node.p2X - node.p1X < MIN_WIDTH * 2) throw new Error(`barnes-hut: bodies share one position near (${mx}, ${my})`);
      const right = (c & 1) !== 0;
      const top = (c & 2) !== 0;
      const t = tree(node, c, right ? mx : node.p1X, top ? my : node.p1Y, right ? node.p2X : mx, top ? node.p2Y : my);
      this.treeNodes++;
      const i = slotOf(t.p1X, t.p1Y, t.p2X, t.p2Y, child.posX, child.posY);
      t.children[i] = child;
      child.parent = t;
      child.childIndex = i;
      node.children[c] = t;
      node = t;
    }
  }

  private summarize(t: Tree): void {
    let m = 0;
    let sx = 0;
    let sy = 0;
    for (const child of t.children) {
      if (child === null) continue;
      if (child.kind === 'tree') this.summarize(child);
      m += child.mass;
      sx += child.mass * child.posX;
      sy += child.mass * child.posY;
    }
    t.mass = m;
    t.posX = m > 0 ? sx / m : 0;
    t.posY = m > 0 ? sy / m : 0;
  }

  private pull(t: Tree, b: Body): void {
    for (const child of t.children) {
      if (child === null) continue;
      const dx = child.posX - b.posX;
      const dy = child.posY - b.posY;
      const dist = Math.sqrt(dx * dx + dy * dy);
      if (child.kind === 'tree') {
        if ((b.posX >= child.p1X && b.posX < child.p2X && b.posY >= child.p1Y && b.posY < child.p2Y) || dist <= this.threshold) {
          this.pull(child, b);
          continue;
        }
      } else if (child === b) continue;
      const f = (G * child.mass * b.mass) / (dist * dist + DAMPENING);
      b.forceX += (f * dx) / dist;
      b.forceY += (f * dy) / dist;
    }
  }

  /** Post-order: delete empty TreeNodes, replace a TreeNode holding one body by the body. */
  private collapse(t: Tree): void {
    for (const child of t.children) if (child !== null && child.kind === 'tree') this.collapse(child);
    const p = t.parent;
    if (p === null) return;
    let n = 0;
    let only: Tree | Body | null = null;
    for (const child of t.children) {
      if (child !== null) {
        n++;
        only = child;
      }
    }
    if (n === 0) {
      p.children[t.childIndex] = null;
      this.treeNodes--;
    } else if (n === 1 && only!.kind === 'body') {
      only!.parent = p;
      only!.childIndex = t.childIndex;
      p.children[t.childIndex] = only;
      this.treeNodes--;
    }
  }

  step(): void {
    this.summarize(this.root);
    for (const b of this.bodies) {
      b.forceX = 0;
      b.forceY = 0;
      this.pull(this.root, b);
    }
    for (const b of this.bodies) {
      const vx = b.velX + (b.forceX * DT) / b.mass;
      const vy = b.velY + (b.forceY * DT) / b.mass;
      let x = b.posX + vx * DT;
      let y = b.posY + vy * DT;
      b.velX = vx;
      b.velY = vy;
      if (x < -1) {
        b.velX = -vx;
        x = -1;
      } else if (x > UPPER) {
        b.velX = -vx;
        x = UPPER;
      }
      if (y < -1) {
        b.velY = -vy;
        y = -1;
      } else if (y > UPPER) {
        b.velY = -vy;
        y = UPPER;
      }
      b.posX = x;
      b.posY = y;
    }
    const detached: Body[] = [];
    for (const b of this.bodies) {
      const p = b.parent!;
      if (slotOf(p.p1X, p.p1Y, p.p2X, p.p2Y, b.posX, b.posY) === b.childIndex) continue;
      p.children[b.childIndex] = null;
      b.parent = null;
      detached.push(b);
    }
    for (const b of detached) this.insert(b);
    this.collapse(this.root);
  }

  digest(): number {
    const terms = new Float64Array(this.bodies.length);
    for (const b of this.bodies) terms[b.id] = termOf(b.posX, b.posY, b.velX, b.velY);
    return digestOf({ bodies: this.bodies.length, treeNodes: this.treeNodes, checksum: checksumOf(terms) });
  }

  counts(): Record<string, number> {
    return { BodyNode: this.bodies.length, TreeNode: this.treeNodes };
  }
}

const baseline: Baseline = {
  app: 'barnes-hut',
  layout: 'aos',
  create(params, seed) {
    checkParams(params);
    return new BarnesHutAos(drawBodies(bodiesOf(params), seed), thresholdOf(params));
  },
};
export default baseline;
