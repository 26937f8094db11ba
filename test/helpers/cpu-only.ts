/**
 * A class with a method that has no kernel of any backend, exported from a module that
 * worker threads can import (options.modules): test/webgpu-nbody.test.ts runs it next to
 * collision's GPU passes, so that a 'webgpu' runtime with threads has passes on the GPU
 * and passes on the workers in one step.
 */
import { f64, object } from '../../runtime/index.js';

export class Tally extends object({ x: f64, y: f64 }) {
  /** x += k (TypeScript only: no [KERNELS]). */
  bump(k: number): void {
    this.x += k;
  }
}
