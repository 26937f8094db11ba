/**
 * What an application module provides to the CLI, the tests and the benchmarks.
 * Each app lives in apps/<name>/ and its index.ts default-exports an App.
 */
import type { DefragResult, ReorderResult, Runtime, SmmoClass } from '../runtime/index.js';

/** A command-line flag an app accepts besides the common ones. */
export interface AppFlag {
  /** Flag name without dashes, e.g. 'bodies'. */
  name: string;
  /** 'int' (positive integer), 'float', 'path', or 'switch' (no value: 1 when given, else 0). */
  type: 'int' | 'float' | 'path' | 'switch';
  description: string;
  /** Default value; undefined: no default (optional flag). */
  default?: number | string;
  /** Largest value of an 'int' flag (default 4294967295). */
  max?: number;
}

export type AppParams = Record<string, number | string | undefined>;

/**
 * A picture of a grid app's state (`smmo run --render`): one pixel per grid cell, row
 * by row from the top left, each pixel an index into `palette` (RGB triples).
 */
export interface Picture {
  width: number;
  height: number;
  /** Colours, [r, g, b] with components 0 … 255; at most 256. */
  palette: readonly (readonly [number, number, number])[];
  /** width × height palette indices. */
  pixels: Uint8Array;
}

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
  /** The app's digest: one number that sums the final state (each app says what it sums). */
  digest(rt: Runtime): number;
  /**
   * State files (`--dump`, runtime/state.ts): what the app keeps outside the heap (a
   * grid's size), as numbers. Leave out when the whole state is in the heap.
   */
  saveState?(rt: Runtime): Record<string, number>;
  /**
   * `--init FILE`: take over a runtime whose objects were loaded from a state file
   * instead of calling init(); `saved` is what saveState returned (empty without it).
   */
  restoreState?(rt: Runtime, saved: Record<string, number>): void;
  /** `--render`: the current state as a picture (grid apps; others leave it out). */
  picture?(rt: Runtime): Picture;
  /**
   * What the app measured besides the digest (linux-scalability: ns per allocation):
   * `json` goes into `--json`'s report as `results`, `summary` rows into the human summary.
   */
  results?(rt: Runtime): AppResults;
  /**
   * `smmo run --defrag N` (runtime/defrag.ts): what defragmentation may move, or, as a
   * string, why this app refuses --defrag. Left out: the app refuses it (nobody has
   * checked whether it keeps handles outside the heap or orders anything by handle).
   */
  defrag?: AppDefrag | string;
  /**
   * `smmo run --reorder K` (Runtime.reorder): which classes to put into the order of which
   * field, or, as a string, why this app refuses --reorder. Left out: the app refuses it.
   * Only for apps whose results do not depend on handles (the digest is the same with it).
   */
  reorder?: AppReorder | string;
  /**
   * How `--check`, `--check-every` and `smmo compare` match the objects of a class whose
   * handles differ between the two runs (runtime/compare.ts): class name → a field that
   * names the object in both (a reference to an object matched by handle or rank, or a
   * number), e.g. `{ Fish: 'position' }` — a fish is the fish on its cell. Objects created
   * during a run on several threads get handles in whatever order the threads allocated;
   * without a key they are matched by rank, which pairs different objects. Classes left
   * out are matched by rank.
   */
  matchKeys?: Readonly<Record<string, string | readonly string[]>>;
}

/** How an app takes part in `--defrag` (App.defrag). */
export interface AppDefrag {
  /**
   * The classes whose objects may move (abstract ones stand for their subclasses). Leave
   * out classes that something outside the heap names by handle or by handle rank (the
   * grid apps' cells, apps/grid.ts).
   */
  classes: readonly SmmoClass[];
  /** Called after each defragmentation when the app keeps handles outside the heap: apply result.remap to them. */
  remap?(rt: Runtime, result: DefragResult): void;
  /**
   * Whether results stay the same: 'exact' (integer state: the digest is the same with and
   * without --defrag), or why they may differ (a rule or a float sum that follows handle
   * order); the CLI prints it as a warning and --json reports it.
   */
  results: 'exact' | string;
}

/** How an app takes part in `--reorder` (App.reorder). */
export interface AppReorder {
  /** The classes to reorder (abstract ones stand for their subclasses), as for App.defrag. */
  classes: readonly SmmoClass[];
  /** The field they are ordered by: a reference to the object they belong to (a cell), or an integer id of it. */
  by: string;
  /** Called after each reorder when the app keeps handles outside the heap: apply result.remap to them. */
  remap?(rt: Runtime, result: ReorderResult): void;
}

/** An app's own figures after a run (App.results). */
export interface AppResults {
  /** [label, text] rows appended to the human summary. */
  summary: [string, string][];
  json: Record<string, unknown>;
}
