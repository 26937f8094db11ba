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
 *                 (ties: the lower handle). Writes X only.
 *   resolveMerge  X.successfulMerge = X's target B has no target of its own (as the
 *                 original) and X is the nearest body targeting B (ties: the lower
 *                 handle). Writes X only; reads targets fixed by the previous phase.
 *   updateMerge   the winner X writes the merged body into B: mass sum, mass-weighted
 *                 velocity, mean position; B.hasIncomingMerge = true. Each B has at most
 *                 one winner, and a B that is written has no target, so it is not itself
 *                 a winner writing elsewhere: all writes go to distinct bodies and no
 *                 body that is written is read by another (B's own pass does nothing).
 *   deleteMerged  a winner deletes itself.
 *
 * Floats: sums are done in float64 and stored as f32 (the original computes in f32);
 * see the README for what this means for digests.
 */
import { bool, f32, KERNELS, object, ref } from '../../runtime/index.js';
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

  /** Pick the nearest lighter body within the threshold (ties: the lower handle). */
  prepareMerge(): void {
    const px = this.posX;
    const py = this.posY;
    const m = this.mass;
    let best = 0;
    let bestD = Infinity;
    this.runtime.deviceDo(Body, (other) => {
      if (!(other.mass < m)) return; // lighter bodies only (so never this one)
      const dx = px - other.posX;
      const dy = py - other.posY;
      const d = dx * dx + dy * dy;
      if (d < THRESHOLD_SQ && (d < bestD || (d === bestD && other.handle < best))) {
        best = other.handle;
        bestD = d;
      }
    });
    if (best !== 0) this.mergeTarget = this.runtime.get(Body, best);
  }

  /** Win the merge into mergeTarget: it keeps still, and no nearer body (ties: lower handle) wants it. */
  resolveMerge(): void {
    const target = this.mergeTarget;
    if (target === null || target.mergeTarget !== null) return;
    const bx = target.posX;
    const by = target.posY;
    const bm = target.mass;
    const th = target.handle;
    const self = this.handle;
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
      if (d > mine || (d === mine && other.handle >= self)) return;
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
