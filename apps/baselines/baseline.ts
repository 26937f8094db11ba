/**
 * Baselines: each app written without smmo and without dynamic allocation, as the
 * original's `baseline_aos` / `baseline_soa` (DynaSOAr repository), to measure what the runtime
 * costs and saves:
 *
 *   aos  an array of plain JavaScript objects, one per simulated entity (what a JS
 *        programmer writes first);
 *   soa  hand-written typed arrays, one per field (what a JS programmer writes for speed).
 *
 * Each follows the smmo app phase by phase, with the same initial state, random streams
 * and conflict rules, so it prints the same digest (exactly for integer digests;
 * nbody and collision within the tolerance their READMEs state). f32 fields of the
 * smmo classes are f32 here too (Float32Array, or Math.fround on every store in AOS).
 */
import type { AppParams } from '../app.js';

/** One initialised simulation. */
export interface BaselineRun {
  /** One iteration (the same phases as the smmo app's step). */
  step(iteration: number): void;
  /** The same digest as the smmo app's. */
  digest(): number;
  /** Live entities per smmo class name (e.g. { Fish: 10, Shark: 3 }); classes without entities are 0. */
  counts(): Record<string, number>;
}

export interface Baseline {
  /** The app this is a baseline of (its registry name). */
  app: string;
  layout: 'aos' | 'soa';
  /**
   * Set up the initial state from the app's parameters (as the CLI passes them, defaults
   * applied) and seed.
   */
  create(params: AppParams, seed: number): BaselineRun;
}
