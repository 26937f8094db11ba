/**
 * barnes-hut classes: a 2-D Barnes–Hut n-body simulation whose quadtree is kept up to
 * date every step by creating and deleting tree nodes, as DynaSOAr's dynamic Barnes–Hut
 * example (prg-titech/dynasoar, example barnes-hut-dynamic, commit a4f956c; the
 * DynaSOAr paper, "DynaSOAr: A Parallel Memory Allocator for Object-Oriented
 * Programming on GPUs with Efficient Memory Access", ECOOP 2019, §6 lists it among
 * the benchmarks).
 *
 * Classes (the original's): abstract NodeBase (parent, centre of mass or position, mass,
 * index in the parent), BodyNode (a body: velocity, force) and TreeNode (a square of the
 * quadtree: 4 children, its box [p1, p2)). Children 0 … 3 are the lower-left,
 * lower-right, upper-left and upper-right quarters; a child slot holds a TreeNode, a
 * BodyNode or nothing.
 *
 * The phases of a step (barnes-hut.ts runs them):
 *   TreeNode.initializeFrontier / summarize / updateFrontier
 *                       bottom-up: every TreeNode's mass and centre of mass from its
 *                       children, level by level from the leaves (the original's BFS)
 *   BodyNode.computeForce  walk the tree from the root: a TreeNode whose box holds the
 *                       body, or whose centre of mass is within `threshold` of it, is
 *                       opened; otherwise it pulls as one mass. Children in order 0 … 3.
 *   BodyNode.update     v += F·dt/m, p += v·dt, bounce off the walls of [-1, 1)²
 *   BodyNode.clearNode  a body no longer in its slot (box and quarter) leaves its parent
 *   BodyNode.descend / claim / TreeNode.settle, repeated until no body is detached:
 *                       (re-)insertion, see "Insertion" below
 *   TreeNode.initializeFrontier / collapse / updateFrontier
 *                       bottom-up: a TreeNode without children is deleted; one whose only
 *                       child is a body hands the body to its parent and is deleted
 *
 * Insertion. The original inserts every detached body concurrently with compare-and-swap
 * on the child slots (a body that finds another body in its slot builds a TreeNode for
 * both and tries to install it; the loser of a race deletes its TreeNode and retries).
 * smmo inserts in rounds of three phases in which every object is written by one owner:
 *   descend  a detached body walks down from its cursor (the root at first) to the
 *            deepest TreeNode whose box holds it and names itself in that node's claim
 *            slot for its quarter; it writes the root's `pending` flag (the same value
 *            `true` from every writer).
 *   claim    a detached body that does not find its own handle in its claim slot marks
 *            the slot as wanted by several (`multi`, again only `true` is written).
 *   settle   each TreeNode settles its claimed slots: a slot claimed by exactly one body
 *            and empty gets that body; a slot claimed by several, or holding a body,
 *            gets a new TreeNode (its quarter of the box) into which the resident body,
 *            if any, moves. Only this TreeNode writes its slots, its new child, its
 *            resident body and its single claimant (a body claims one slot per round).
 * The claim slot is written by every claimant (the last write stays, which depends on
 * the threads), but its value is used only when exactly one body claimed the slot;
 * whether a slot has one claimant or several does not depend on the order. So each round
 * makes the same tree for any order of the bodies and any number of threads: a slot
 * becomes a TreeNode exactly when two or more bodies (residents or claimants) end up in
 * its square, as when the bodies are inserted one by one (the baselines do that, in id
 * order, and get the same tree).
 *
 * Floats are float64 (the original's fields are double): a TreeNode sums its children
 * in the order 0 … 3 and a body adds the pulls in the order of the walk, so every value
 * is the same whatever the order of the objects.
 */
import { array, bool, f64, i8, object, ref, u32 } from '../../runtime/index.js';

/** Time step (kDt). */
export const DT = 0.0075;
/** Gravitational constant (kGravityConstant). */
export const G = 6.673e-11;
/** Added to the squared distance (kDampeningFactor). */
export const DAMPENING = 0.05;
/** A TreeNode is opened when its centre of mass is within this distance of the body (kDistThreshold). */
export const DIST_THRESHOLD = 0.25;
/** Masses are drawn in [0.5, 1) · MAX_MASS (kMaxMass). */
export const MAX_MASS = 1000;
/** The largest position inside the box (the original clamps to 0.99999999). */
export const UPPER = 0.99999999;
/** A TreeNode narrower than this is not split: two bodies share one position. */
export const MIN_WIDTH = 2 ** -40;

/** A node of the quadtree: a body or a square (abstract). */
export abstract class NodeBase extends object(
  {
    parent: ref<TreeNode>('TreeNode'), // null: the root, or a body that is not in the tree
    posX: f64, // a body's position; a TreeNode's centre of mass
    posY: f64,
    mass: f64, // a TreeNode's: the sum of its bodies'
    childIndex: i8, // the slot of the parent that holds this node
  },
  { abstract: true },
) {}

/** A body. */
export class BodyNode extends NodeBase.extend({
  velX: f64,
  velY: f64,
  forceX: f64,
  forceY: f64,
  id: u32, // 0 … bodies-1 in creation order (digests, pictures): not a handle
  cursor: ref<TreeNode>('TreeNode'), // while detached: the deepest TreeNode known to hold it (null: the root)
}) {
  /** Zero the force, then add the pull of the tree's nodes, walking it from the root without recursion. */
  computeForce(root: number, threshold: number): void {
    const ctx = this.runtime;
    const self = this.handle;
    const bx = this.posX;
    const by = this.posY;
    const bm = this.mass;
    let fx = 0;
    let fy = 0;
    let node = ctx.get(TreeNode, root);
    let c = 0;
    for (;;) {
      if (c < 4) {
        const child = node.children.get(c);
        c++;
        if (child === null) continue;
        const x = child.posX;
        const y = child.posY;
        const dx = x - bx;
        const dy = y - by;
        const dist = Math.sqrt(dx * dx + dy * dy);
        if (child instanceof TreeNode) {
          if ((bx >= child.p1X && bx < child.p2X && by >= child.p1Y && by < child.p2Y) || dist <= threshold) {
            node = child; // too close: open it
            c = 0;
            continue;
          }
        } else if (child.handle === self) continue;
        const f = (G * child.mass * bm) / (dist * dist + DAMPENING);
        fx += (f * dx) / dist;
        fy += (f * dy) / dist;
        continue;
      }
      // All children of `node` done: back to its parent, at the next slot.
      const up = node.parent;
      if (up === null) break;
      c = node.childIndex + 1;
      node = up;
    }
    this.forceX = fx;
    this.forceY = fy;
  }

  /** v += F·dt/m; p += v·dt; a body leaving [-1, 1)² is put on the wall and its velocity component negated. */
  update(dt: number): void {
    const m = this.mass;
    const vx = this.velX + (this.forceX * dt) / m;
    const vy = this.velY + (this.forceY * dt) / m;
    let x = this.posX + vx * dt;
    let y = this.posY + vy * dt;
    let nvx = vx;
    let nvy = vy;
    if (x < -1) {
      nvx = -vx;
      x = -1;
    } else if (x > UPPER) {
      nvx = -vx;
      x = UPPER;
    }
    if (y < -1) {
      nvy = -vy;
      y = -1;
    } else if (y > UPPER) {
      nvy = -vy;
      y = UPPER;
    }
    this.velX = nvx;
    this.velY = nvy;
    this.posX = x;
    this.posY = y;
  }

  /** Leave the parent when the body is no longer in its slot (outside the box, or in another quarter). */
  clearNode(): void {
    const p = this.parent;
    if (p === null) return;
    if (slotOf(p.p1X, p.p1Y, p.p2X, p.p2Y, this.posX, this.posY) === this.childIndex) return;
    p.children.set(this.childIndex, null);
    this.parent = null;
    this.cursor = null;
  }

  /** Insertion round, phase 1: walk down to the deepest TreeNode holding the body and claim its slot there. */
  descend(root: number): void {
    if (this.parent !== null) return;
    const ctx = this.runtime;
    const x = this.posX;
    const y = this.posY;
    const cursor = this.cursor;
    let node = cursor === null ? ctx.get(TreeNode, root) : cursor;
    let c = slotOf(node.p1X, node.p1Y, node.p2X, node.p2Y, x, y);
    if (c < 0) throw new Error(`barnes-hut: body ${this.id} at (${x}, ${y}) is outside its cursor's box`);
    for (;;) {
      const child = node.children.get(c);
      if (child instanceof TreeNode) {
        node = child;
        c = slotOf(node.p1X, node.p1Y, node.p2X, node.p2Y, x, y);
      } else break;
    }
    this.cursor = node;
    this.childIndex = c;
    node.claim.set(c, this.handle);
    ctx.get(TreeNode, root).pending = true;
  }

  /** Insertion round, phase 2: a claimant that was overwritten marks its slot as claimed by several. */
  claim(): void {
    if (this.parent !== null) return;
    const node = this.cursor!;
    const c = this.childIndex;
    if (node.claim.get(c) !== this.handle) node.multi.set(c, true);
  }
}

/** A square of the quadtree, [p1X, p2X) × [p1Y, p2Y). */
export class TreeNode extends NodeBase.extend({
  children: array(ref<NodeBase>('NodeBase'), 4),
  p1X: f64,
  p1Y: f64,
  p2X: f64,
  p2Y: f64,
  claim: array(u32, 4), // insertion: a handle of a body that wants the slot (0: none)
  multi: array(bool, 4), // insertion: more than one body wants the slot
  frontier: bool, // bottom-up passes: ready to be processed in this round
  done: bool, // bottom-up passes: processed
  pending: bool, // the root's: some body was detached in the last descend
}) {
  /** Start a bottom-up pass: the nodes without TreeNode children are the first frontier. */
  initializeFrontier(): void {
    const ch = this.children;
    let leaf = true;
    for (let i = 0; i < 4; i++) if (ch.get(i) instanceof TreeNode) leaf = false;
    this.frontier = leaf;
    this.done = false;
  }

  /** A node becomes frontier once every TreeNode child is done. */
  updateFrontier(): void {
    if (this.done) return;
    const ch = this.children;
    for (let i = 0; i < 4; i++) {
      const child = ch.get(i);
      if (child instanceof TreeNode) {
        if (!child.done) return;
      }
    }
    this.frontier = true;
  }

  /** Mass and centre of mass from the children, summed in the order 0 … 3 (the original's bfs_step). */
  summarize(): void {
    if (!this.frontier) return;
    this.frontier = false;
    const ch = this.children;
    let m = 0;
    let sx = 0;
    let sy = 0;
    for (let i = 0; i < 4; i++) {
      const child = ch.get(i);
      if (child === null) continue;
      const cm = child.mass;
      m += cm;
      sx += cm * child.posX;
      sy += cm * child.posY;
    }
    this.mass = m;
    this.posX = m > 0 ? sx / m : 0;
    this.posY = m > 0 ? sy / m : 0;
    this.done = true;
  }

  /** Delete a node without children; hand a single body child to the parent and delete the node (the original's collapse_tree). */
  collapse(): void {
    if (!this.frontier) return;
    this.frontier = false;
    const p = this.parent;
    if (p !== null) {
      const ch = this.children;
      let n = 0;
      let single = -1;
      for (let i = 0; i < 4; i++) {
        if (ch.get(i) !== null) {
          n++;
          single = i;
        }
      }
      if (n === 0) {
        p.children.set(this.childIndex, null);
        this.destroy();
        return;
      }
      if (n === 1) {
        const only = ch.get(single);
        if (only instanceof BodyNode) {
          const slot = this.childIndex;
          only.parent = p;
          only.childIndex = slot;
          p.children.set(slot, only);
          this.destroy();
          return;
        }
      }
    }
    this.done = true;
  }

  /** Insertion round, phase 3: give each claimed slot to its single claimant, or split it. */
  settle(): void {
    const ctx = this.runtime;
    const ch = this.children;
    for (let c = 0; c < 4; c++) {
      const h = this.claim.get(c);
      if (h === 0) continue;
      const several = this.multi.get(c);
      this.claim.set(c, 0);
      this.multi.set(c, false);
      const resident = ch.get(c);
      if (resident === null && !several) {
        const body = ctx.get(BodyNode, h);
        ch.set(c, body);
        body.parent = this;
        body.childIndex = c;
        body.cursor = null;
        continue;
      }
      // Split: a new TreeNode for quarter c; the resident body moves into it.
      const x1 = this.p1X;
      const y1 = this.p1Y;
      const x2 = this.p2X;
      const y2 = this.p2Y;
      const mx = (x1 + x2) / 2;
      const my = (y1 + y2) / 2;
      if (x2 - x1 < MIN_WIDTH * 2)
        throw new Error(`barnes-hut: bodies share one position near (${mx}, ${my}): the quadtree cannot separate them`);
      const right = (c & 1) !== 0;
      const top = (c & 2) !== 0;
      const t = ctx.create(TreeNode);
      t.parent = this;
      t.childIndex = c;
      t.p1X = right ? mx : x1;
      t.p2X = right ? x2 : mx;
      t.p1Y = top ? my : y1;
      t.p2Y = top ? y2 : my;
      if (resident instanceof BodyNode) {
        const i = slotOf(t.p1X, t.p1Y, t.p2X, t.p2Y, resident.posX, resident.posY);
        t.children.set(i, resident);
        resident.parent = t;
        resident.childIndex = i;
      }
      ch.set(c, t);
    }
  }
}

/**
 * The slot of the box [x1, x2) × [y1, y2) that holds (x, y): 0 lower left, 1 lower right,
 * 2 upper left, 3 upper right (a point on a midpoint goes up / right, so each quarter is
 * half-open like the box); -1 outside the box.
 */
export function slotOf(x1: number, y1: number, x2: number, y2: number, x: number, y: number): number {
  if (x < x1 || x >= x2 || y < y1 || y >= y2) return -1;
  return (x >= (x1 + x2) / 2 ? 1 : 0) + (y >= (y1 + y2) / 2 ? 2 : 0);
}

/** Every class of the app, the abstract one first. */
export const CLASSES = [NodeBase, BodyNode, TreeNode];
