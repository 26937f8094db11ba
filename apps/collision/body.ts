/**
 * collision: n-body gravity where bodies that come closer than a threshold
 * merge; bodies only disappear. Class, phases and constants follow the original
 * DynaSOAr example (example/collision, commit a4f956c; configuration.h).
 *
 * Merging. In the original, prepare_merge lets a body X pick, as its merge target, a
 * lighter body B closer than the threshold that has no incoming merge yet, and mark B;
 * which X wins a B wanted by several is a race ("Only one can win. That's OK."), and
 * update_merge writes the merged state into B. smmo resolves the race by a rule that
 * does not depend on visiting order or thread count, in phases where every body writes
 * only its own fields or, in one phase, fields of a body that exactly one writer owns:
 *
 *   prepareMerge  X.mergeTarget = the nearest lighter body within the threshold
 *                 (ties: the lower id). Writes X only.
 *   resolveMerge  X.successfulMerge = X's target B has no target of its own (as the
 *                 original) and X is the nearest body targeting B (ties: the lower
 *                 id). Writes X only; reads targets fixed by the previous phase.
 *   updateMerge   the winner X writes the merged body into B: mass sum, mass-weighted
 *                 velocity, mean position; B.hasIncomingMerge = true. Each B has at most
 *                 one winner, and a B that is written has no target, so it is not itself
 *                 a winner writing elsewhere: all writes go to distinct bodies and no
 *                 body that is written is read by another (B's own pass does nothing).
 *   deleteMerged  a winner deletes itself.
 *
 * Ties. Exact ties of squared distances go to the body that comes first in the order
 * (id, handle): `id` is the body's index at the start (init; a merged body is the target,
 * which keeps its id), so the order is the bodies' creation order, which every backend,
 * thread count and the baselines (array index) share and which defragmentation (objects
 * move: handles change, ids do not; runtime/defrag.ts F2) keeps. The handle only breaks a
 * tie of equal ids, which init never makes (ids are unique); it keeps the order total, so
 * each target has exactly one winner whatever ids a hand-made heap holds (the write
 * ownership above needs that).
 *
 * Floats: sums are done in float64 and stored as f32 (the original computes in f32);
 * see the README for what this means for digests.
 */
import { bool, f32, KERNELS, object, ref, u32 } from '../../runtime/index.js';
import { GPU_KERNELS } from '../../runtime/kernel-spec.js';
import { collisionGpuKernels, collisionKernels } from './kernels.js';
import { move, pullOfOthers } from '../nbody/body.js';

/** Time step (kTimeInterval). */
export const DT = 0.05;
export const G = 6.673e-11;
/** Masses are drawn in [0.5, 1) · MAX_MASS (kMaxMass). */
export const MAX_MASS = 75;
/** Added to the squared distance (kDampeningFactor). */
export const DAMPENING = 0.05;
/** Bodies closer than this merge (kMergeThreshold, an f32 in the original). */
export const MERGE_THRESHOLD = Math.fround(0.005);
/** Bodies merge when their squared distance (in float64) is below this. */
export const THRESHOLD_SQ = MERGE_THRESHOLD * MERGE_THRESHOLD;

export class Body extends object({
  mergeTarget: ref<Body>('Body'), // the lighter body this one merges into (this one then disappears)
  posX: f32, // position in [-1, 1]²
  posY: f32,
  velX: f32,
  velY: f32,
  forceX: f32, // summed by computeForce
  forceY: f32,
  mass: f32,
  hasIncomingMerge: bool, // another body merged into this one in this step
  successfulMerge: bool, // this body merged into its mergeTarget and is deleted
  id: u32, // the body's index at the start (init); merge ties go to the lower id (the comment at the top)
}) {
  /** WASM implementations of computeForce, update, prepareMerge and resolveMerge (backend 'wasm'), each with its WGSL kernel (backend 'webgpu'; apps/collision/kernels.ts). */
  static readonly [KERNELS] = collisionKernels(G, DAMPENING, THRESHOLD_SQ);
  /** WGSL kernels of initializeMerge, updateMerge and deleteMerged (backend 'webgpu' only; apps/collision/kernels.ts). */
  static readonly [GPU_KERNELS] = collisionGpuKernels();

  /** Zero the force, then add the pull of every other body (deviceDo over Body), as nbody. */
  computeForce(): void {
    pullOfOthers(this, Body, G, DAMPENING);
  }

  /** v += F·dt/m; p += v·dt; bounce off the walls of [-1, 1]², as nbody. */
  update(dt: number): void {
    move(this, dt);
  }

  initializeMerge(): void {
    this.mergeTarget = null;
    this.hasIncomingMerge = false;
    this.successfulMerge = false;
  }

  /** Pick the nearest lighter body within the threshold (ties: the lower id, then the lower handle). */
  prepareMerge(): void {
    const px = this.posX;
    const py = this.posY;
    const m = this.mass;
    let best = 0;
    let bestId = 0;
    let bestD = Infinity;
    this.runtime.deviceDo(Body, (other) => {
      if (!(other.mass < m)) return; // lighter bodies only (so never this one)
      const dx = px - other.posX;
      const dy = py - other.posY;
      const d = dx * dx + dy * dy;
      if (!(d < THRESHOLD_SQ && d <= bestD)) return;
      // d < bestD, or an exact tie (then best ≠ 0: bestD is finite): (id, handle) order.
      const id = other.id;
      if (d < bestD || id < bestId || (id === bestId && other.handle < best)) {
        best = other.handle;
        bestId = id;
        bestD = d;
      }
    });
    if (best !== 0) this.mergeTarget = this.runtime.get(Body, best);
  }

  /** Win the merge into mergeTarget: it keeps still, and no nearer body (ties: lower id, then lower handle) wants it. */
  resolveMerge(): void {
    const target = this.mergeTarget;
    if (target === null || target.mergeTarget !== null) return;
    const bx = target.posX;
    const by = target.posY;
    const bm = target.mass;
    const th = target.handle;
    const self = this.handle;
    const selfId = this.id;
    const dx0 = this.posX - bx;
    const dy0 = this.posY - by;
    const mine = dx0 * dx0 + dy0 * dy0;
    let won = true;
    this.runtime.deviceDo(Body, (other) => {
      // Only heavier bodies close to the target can target it; read mergeTarget last (it costs a view).
      if (!won || !(other.mass > bm)) return;
      const dx = other.posX - bx;
      const dy = other.posY - by;
      const d = dx * dx + dy * dy;
      if (d > mine) return;
      // An exact tie: only a body before this one in (id, handle) order beats it (this one itself does not).
      if (d === mine && (other.id > selfId || (other.id === selfId && other.handle >= self))) return;
      if (other.mergeTarget?.handle === th) won = false;
    });
    this.successfulMerge = won;
  }

  /** The winner moves its mass and momentum into its target. */
  updateMerge(): void {
    if (!this.successfulMerge) return;
    const t = this.mergeTarget!;
    const m = this.mass;
    const tm = t.mass;
    const mass = m + tm;
    const velX = (this.velX * m + t.velX * tm) / mass;
    const velY = (this.velY * m + t.velY * tm) / mass;
    t.mass = mass;
    t.velX = velX;
    t.velY = velY;
    t.posX = (this.posX + t.posX) / 2;
    t.posY = (this.posY + t.posY) / 2;
    t.hasIncomingMerge = true;
  }

  deleteMerged(): void {
    if (this.successfulMerge) this.destroy();
  }
}
