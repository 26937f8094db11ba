/**
 * nbody: bodies under mutual gravity; no allocation after the start.
 * The class and constants follow the original DynaSOAr example (commit a4f956c).
 */
import { f32, KERNELS, object, type SmmoClass, type SmmoObject } from '../../runtime/index.js';
import { gravityKernels } from './kernels.js';

export const DT = 0.02;
export const G = 6.673e-11;
export const MAX_MASS = 1000;
/** Added to the squared distance (the original's kDampeningFactor). */
export const DAMPENING = 0.05;

/** The fields of a gravitating body: nbody's Body, and collision's, which adds merge fields. */
export interface Gravitating extends SmmoObject {
  posX: number;
  posY: number;
  velX: number;
  velY: number;
  forceX: number;
  forceY: number;
  mass: number;
}

/**
 * computeForce of nbody and collision (the WASM kernel of both is nbody_compute_force,
 * apps/nbody/kernels.ts gravityKernels): zero the force of `body`, then add the pull of
 * every other object of `cls` (deviceDo). Sums in float64, stored as f32 once (the
 * original adds into the f32 field each time; results agree within the tolerance stated
 * in the README).
 */
export function pullOfOthers<C extends SmmoClass<Gravitating>>(body: Gravitating, cls: C, g: number, dampening: number): void {
  const px = body.posX;
  const py = body.posY;
  const m = body.mass;
  const self = body.handle;
  // The running sum in two locals that the callback adds to. Compiled (the default), the
  // callback is inlined and they are locals of the loop; interpreted, V8 keeps them in the
  // closure's context and allocates a heap number per write (measured on the dev VM, 3 000
  // bodies: interpreted 84 → 112 ms per step against a module Float64Array, compiled 75 →
  // 69 ms, and the method has no JavaScript left in it).
  let fx = 0;
  let fy = 0;
  body.runtime.deviceDo(cls, (other) => {
    if (other.handle === self) return;
    // Towards the other body, as the original's apply_force (which runs on `other`).
    const dx = other.posX - px;
    const dy = other.posY - py;
    const dist = Math.sqrt(dx * dx + dy * dy);
    const f = (g * m * other.mass) / (dist * dist + dampening);
    fx += (f * dx) / dist;
    fy += (f * dy) / dist;
  });
  body.forceX = fx;
  body.forceY = fy;
}

/** update of nbody and collision: v += F·dt/m; p += v·dt; bounce off the walls of [-1, 1]². */
export function move(body: Gravitating, dt: number): void {
  body.velX += (body.forceX * dt) / body.mass;
  body.velY += (body.forceY * dt) / body.mass;
  body.posX += body.velX * dt;
  body.posY += body.velY * dt;
  if (body.posX < -1 || body.posX > 1) body.velX = -body.velX;
  if (body.posY < -1 || body.posY > 1) body.velY = -body.velY;
}

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
  static readonly [KERNELS] = gravityKernels(G, DAMPENING);

  /** Zero the force, then add the pull of every other body (deviceDo over Body). */
  computeForce(): void {
    pullOfOthers(this, Body, G, DAMPENING);
  }

  /** v += F·dt/m; p += v·dt; bounce off the walls of [-1, 1]². */
  update(dt: number): void {
    move(this, dt);
  }
}
