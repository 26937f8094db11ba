/**
 * What an application module provides to the CLI, the tests and the benchmarks.
 * Each app lives in apps/<name>/ and its index.ts default-exports an App.
 */
import type { Runtime, SmmoClass } from '../runtime/index.js';

/** A command-line flag an app accepts besides the common ones. */
export interface AppFlag {
  /** Flag name without dashes, e.g. 'bodies'. */
  name: string;
  /** 'int' (positive integer), 'float', or 'path'. */
  type: 'int' | 'float' | 'path';
  description: string;
  /** Default value; undefined: no default (optional flag). */
  default?: number | string;
}

export type AppParams = Record<string, number | string | undefined>;

export interface App {
  name: string;
  /** One line for `smmo --help`. */
  summary: string;
  /** Every class, abstract ones included (the runtime's `classes`). */
  classes: readonly SmmoClass[];
  /** App-specific flags (the common ones: --iterations, --seed, --threads, --backend, --heap, --checked, --json). */
  flags: readonly AppFlag[];
  /** Default iteration count (the original's). */
  iterations: number;
  /** Heap size to use when --heap is not given, from the parsed params. */
  heapFor(params: AppParams): number;
  /** Create the initial objects. */
  init(rt: Runtime, params: AppParams, seed: number): Promise<void>;
  /** One iteration: the list of do-all phases. */
  step(rt: Runtime, iteration: number): Promise<void>;
  /** The app's digest (APPS.md / issue text: what it sums). */
  digest(rt: Runtime): number;
}
