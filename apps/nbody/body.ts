/**
 * nbody (APPS.md): bodies under mutual gravity; no allocation after the start.
 * The class and constants follow the original DynaSOAr example (commit a4f956c).
 */
import { f32, KERNELS, object } from '../../runtime/index.js';
import { bodyKernels } from './kernels.js';

export const DT = 0.02;
export const G = 6.673e-11;
export const MAX_MASS = 1000;
/** Added to the squared distance (the original's kDampeningFactor). */
export const DAMPENING = 0.05;

/**
 * The running force sum of computeForce. A float64 `let` that the deviceDo callback adds
 * to lives in the closure's context, and V8 (Node 20) allocates a new heap number for
 * every write there: two per pair of bodies, a young-generation GC every few ms (measured
 * on the dev VM: 752 scavenges in 4 steps of 4 000 bodies). A Float64Array slot is
 * written in place. One per thread (module state is per worker); computeForce does not
 * nest.
 */
const FORCE_SUM = new Float64Array(2);

export class Body extends object({
  posX: f32, // position in [-1, 1]²
  posY: f32,
  velX: f32,
  velY: f32,
  forceX: f32, // force summed by computeForce
  forceY: f32,
  mass: f32,
}) {
  /** WASM implementations of computeForce and update (backend 'wasm'; apps/nbody/kernels.ts). */
  static readonly [KERNELS] = bodyKernels;

  /**
   * Zero the force, then add the pull of every other body (deviceDo over Body).
   * Sums are kept in float64 locals and stored as f32 once (the original adds into the
   * f32 field each time; results agree within the tolerance stated in the README).
   */
  computeForce(): void {
    const px = this.posX;
    const py = this.posY;
    const m = this.mass;
    const self = this.handle;
    const sum = FORCE_SUM;
    sum[0] = 0;
    sum[1] = 0;
    this.runtime.deviceDo(Body, (other) => {
      if (other.handle === self) return;
      // Towards the other body, as the original's apply_force (which runs on `other`).
      const dx = other.posX - px;
      const dy = other.posY - py;
      const dist = Math.sqrt(dx * dx + dy * dy);
      const f = (G * m * other.mass) / (dist * dist + DAMPENING);
      sum[0] += (f * dx) / dist;
      sum[1] += (f * dy) / dist;
    });
    this.forceX = sum[0]!;
    this.forceY = sum[1]!;
  }

  /** v += F·dt/m; p += v·dt; bounce off the walls of [-1, 1]². */
  update(dt: number): void {
    this.velX += (this.forceX * dt) / this.mass;
    this.velY += (this.forceY * dt) / this.mass;
    this.posX += this.velX * dt;
    this.posY += this.velY * dt;
    if (this.posX < -1 || this.posX > 1) this.velX = -this.velX;
    if (this.posY < -1 || this.posY > 1) this.velY = -this.velY;
  }
}
