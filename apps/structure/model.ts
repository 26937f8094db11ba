/**
 * structure classes: fracture of a spring mesh, as the DynaSOAr version of DynaSOAr's
 * structure example (its NodeBase, AnchorNode, AnchorPullNode, Node and Spring classes).
 * Constants: mesh.ts.
 *
 * A step (structure.ts step()) is:
 *   AnchorPullNode.pull            pos += vel·dt
 *   40 × compute:
 *     Spring.computeForce          force = factor · max(0, length − rest length); a spring
 *                                  above its maximum force marks itself broken
 *     NodeBase.removeBrokenSprings a node clears the slots of its broken springs; a node
 *                                  that loses its last spring deletes itself
 *     Spring.deleteBroken          broken springs delete themselves
 *     Node.move                    velocity += (Σ spring forces along the springs)·dt / mass
 *     Node.updatePosition          pos += vel·dt
 *   BFS from the anchors:
 *     NodeBase.initializeBfs       anchors (AnchorNode, AnchorPullNode) 0, others MAX_DISTANCE
 *     NodeBase.bfsVisit(i)         for i = 0, 1, …: an unreached node with a neighbour at
 *                                  distance i takes distance i + 1; until none does
 *     Spring.bfsDelete             a spring of an unreached node deletes itself
 *     NodeBase.bfsDelete           an unreached node that still had springs deletes itself
 *
 * Who writes what (why results do not depend on the number of threads or the order in
 * which objects are visited): every method writes only its own object, except that
 * bfsVisit raises the one flag of the Bfs object and records the level (every writer of a
 * pass writes the same values: `true`, i + 1). Springs
 * read their nodes' positions, which nobody writes in that pass; move reads neighbour
 * positions and spring forces, which nobody writes in that pass (the position update is
 * its own pass; in the original, move reads positions that other nodes are writing);
 * bfsVisit reads neighbour distances, which change only from MAX_DISTANCE to i + 1 in the
 * pass, never to or from i. The original's removal (Spring::self_destruct →
 * NodeBase::remove_spring, atomicSub on the node's spring count, the node destroyed by
 * the spring that removed its last spring) becomes the removeBrokenSprings pass: the node
 * itself clears the slots and deletes itself. Each node sums its spring forces in slot
 * order, every operation rounded to f32 (Math.fround), so the floats are the same bit for
 * bit whatever runs them.
 */
import { array, bool, f32, i32, object, ref, u32 } from '../../runtime/index.js';
import { DT, MAX_DEGREE, MAX_DISTANCE, VELOCITY_DAMPENING } from './mesh.js';

/** What every node has (abstract: the original's NodeBase). */
export abstract class NodeBase extends object(
  {
    springs: array(ref<Spring>('Spring'), MAX_DEGREE), // null where none
    posX: f32,
    posY: f32,
    numSprings: i32,
    distance: i32, // BFS distance from the nearest anchor; MAX_DISTANCE: unreached
    id: u32, // index in the mesh (mesh.ts), for digests
  },
  { abstract: true },
) {
  /** Clear the slots of broken springs; delete this node when its last spring is gone. */
  removeBrokenSprings(): void {
    const springs = this.springs;
    let n = this.numSprings;
    if (n === 0) return;
    for (let i = 0; i < MAX_DEGREE; i++) {
      const s = springs.get(i);
      if (s !== null && s.deleteFlag) {
        springs.set(i, null);
        n--;
      }
    }
    this.numSprings = n;
    if (n === 0) this.destroy();
  }

  initializeBfs(): void {
    this.distance = this instanceof AnchorNode ? 0 : MAX_DISTANCE;
  }

  /** BFS level `level`: an unreached node next to a node at `level` is at level + 1 (`bfs`: the Bfs object's handle). */
  bfsVisit(level: number, bfs: number): void {
    if (this.distance !== MAX_DISTANCE) return;
    const springs = this.springs;
    for (let i = 0; i < MAX_DEGREE; i++) {
      const s = springs.get(i);
      if (s === null) continue;
      const p1 = s.p1!;
      const other = p1.is(this) ? s.p2! : p1;
      if (other.distance === level) {
        this.distance = level + 1;
        const flag = this.runtime.get(Bfs, bfs);
        flag.grew = true;
        flag.levels = level + 1;
        return;
      }
    }
  }

  /** After Spring.bfsDelete: an unreached node that had springs goes with them. */
  bfsDelete(): void {
    if (this.distance === MAX_DISTANCE && this.numSprings > 0) this.destroy();
  }
}

/** A fixed node: distance 0 in the BFS. */
export class AnchorNode extends NodeBase.extend({}) {}

/** An anchor that moves with a constant velocity (pulls the mesh). */
export class AnchorPullNode extends AnchorNode.extend({
  velX: f32,
  velY: f32,
}) {
  pull(): void {
    this.posX = Math.fround(this.posX + Math.fround(this.velX * DT));
    this.posY = Math.fround(this.posY + Math.fround(this.velY * DT));
  }
}

/** A free node with a mass, moved by its springs. */
export class Node extends NodeBase.extend({
  velX: f32,
  velY: f32,
  mass: f32,
}) {
  /** Node::move's velocity update (the positions move in updatePosition). */
  move(): void {
    const x = this.posX;
    const y = this.posY;
    const springs = this.springs;
    let forceX = 0;
    let forceY = 0;
    for (let i = 0; i < MAX_DEGREE; i++) {
      const s = springs.get(i);
      if (s === null) continue;
      const p1 = s.p1!;
      const to = p1.is(this) ? s.p2! : p1;
      const dx = Math.fround(to.posX - x);
      const dy = Math.fround(to.posY - y);
      const dist = Math.fround(Math.sqrt(Math.fround(Math.fround(dx * dx) + Math.fround(dy * dy))));
      const force = s.force;
      forceX = Math.fround(forceX + Math.fround(Math.fround(dx / dist) * force));
      forceY = Math.fround(forceY + Math.fround(Math.fround(dy / dist) * force));
    }
    const mass = this.mass;
    const keep = Math.fround(1 - VELOCITY_DAMPENING);
    this.velX = Math.fround(Math.fround(this.velX + Math.fround(Math.fround(forceX * DT) / mass)) * keep);
    this.velY = Math.fround(Math.fround(this.velY + Math.fround(Math.fround(forceY * DT) / mass)) * keep);
  }

  updatePosition(): void {
    this.posX = Math.fround(this.posX + Math.fround(this.velX * DT));
    this.posY = Math.fround(this.posY + Math.fround(this.velY * DT));
  }
}

/** A spring between two nodes. */
export class Spring extends object({
  p1: ref<NodeBase>('NodeBase'),
  p2: ref<NodeBase>('NodeBase'),
  springFactor: f32,
  initialLength: f32,
  force: f32,
  maxForce: f32,
  deleteFlag: bool, // broken (computeForce)
}) {
  computeForce(): void {
    const p1 = this.p1!;
    const p2 = this.p2!;
    const dx = Math.fround(p1.posX - p2.posX);
    const dy = Math.fround(p1.posY - p2.posY);
    const dist = Math.fround(Math.sqrt(Math.fround(Math.fround(dx * dx) + Math.fround(dy * dy))));
    const displacement = Math.max(0, Math.fround(dist - this.initialLength));
    const force = Math.fround(this.springFactor * displacement);
    this.force = force;
    if (force > this.maxForce) this.deleteFlag = true;
  }

  deleteBroken(): void {
    if (this.deleteFlag) this.destroy();
  }

  /** A spring of a node that no anchor reaches (both its nodes are) goes. */
  bfsDelete(): void {
    if (this.p1!.distance === MAX_DISTANCE || this.p2!.distance === MAX_DISTANCE) this.destroy();
  }
}

/** The BFS's continue flag (the original's device global dev_bfs_continue): one object. */
export class Bfs extends object({
  grew: bool, // a node took a distance in the last bfsVisit pass
  levels: i32, // the deepest level of the last BFS
  // Padding: every class's block size follows the smallest class's objects (32 of them
  // per block, runtime/layout.ts); without it the one Bfs object would shrink the
  // blocks of the millions of springs and nodes to a few slots each.
  padding: array(u32, 6),
}) {}

/** Every class of the app. */
export const CLASSES = [NodeBase, AnchorNode, AnchorPullNode, Node, Spring, Bfs];
