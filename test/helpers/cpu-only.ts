/**
 * A class with a method that has no kernel of any backend, exported from a module that
 * worker threads can import (options.modules): test/webgpu-nbody.test.ts runs it next to
 * collision's GPU passes, with generated WGSL kernels off (`webgpu.generate: false`), so
 * that a 'webgpu' runtime with threads has passes on the GPU and passes on the workers in
 * one step.
 */
import { f64, object } from '../../runtime/index.js';

export class Tally extends object({ x: f64, y: f64 }) {
  /** x += k (no [KERNELS] or [GPU_KERNELS]: on WebGPU a generated kernel, unless generation is off). */
  bump(k: number): void {
    this.x += k;
  }
}
