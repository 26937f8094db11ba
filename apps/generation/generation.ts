/**
 * generation: initial state, step (the list of do-all phases) and digest.
 *
 * Start: the original's "burst" input (dataset_loader.cu, load_burst): crosses on two
 * square lattices; or, with --density, a random field where each cell is alive with
 * probability `density`, drawn in cell order from apps/random.ts's xoshiro128** seeded
 * with the run's seed (as game-of-life's random start).
 */
import { UsageError, type Runtime } from '../../runtime/index.js';
import type { AppParams } from '../app.js';
import { cellTable, resetCellTable } from '../grid.js';
import { fnvWord, FNV_OFFSET } from '../hash.js';
import { Random } from '../random.js';
import {
  Agent,
  Alive,
  Candidate,
  Cell,
  CELL_ALIVE,
  CELL_CANDIDATE,
  CELL_DYING,
  CELL_EMPTY,
  CELL_NEW,
  CLASSES,
  newAlive,
  NUM_STATES,
} from './model.js';

export { CLASSES };

/**
 * The original's values (configuration.h, dataset_loader.cu): a 5000 × 5000 grid,
 * 25 000 iterations, crosses with arms of 100 cells (kBurstLen).
 */
export const ORIGINAL = { iterations: 25_000, width: 5000, height: 5000, cross: 100 };

/** smmo's defaults: the original's input on a smaller grid, for fewer iterations (README: "Defaults"). */
export const DEFAULTS = { iterations: 500, width: 1000, height: 1000, cross: 100 };

/** An initial state: grid size and the ids of the live cells (state 0), ascending. */
export interface GenStart {
  width: number;
  height: number;
  alive: Int32Array;
}

/** Cells of the largest grid accepted (the heap must hold one Cell per grid cell). */
export const MAX_CELLS = 1 << 28;

/** The start that the app's parameters describe (--width/--height with --cross or --density). */
export function startFromParams(params: AppParams, seed: number): GenStart {
  const width = Number(params['width'] ?? DEFAULTS.width);
  const height = Number(params['height'] ?? DEFAULTS.height);
  if (params['density'] !== undefined) {
    if (params['cross'] !== undefined)
      throw new UsageError('generation: give either --cross (crosses) or --density (a random start), not both');
    return randomStart(width, height, Number(params['density']), seed);
  }
  return burstStart(width, height, Number(params['cross'] ?? DEFAULTS.cross));
}

/**
 * The original's load_burst: crosses with arms of `len` cells (kBurstLen) centred on two
 * lattices with spacing 2.1·len, the first from (len + 10, len + 10), the second shifted
 * by 1.05·len in x and y; a centre is used while it is below size − len − 10. The
 * positions are computed in integers exactly as the original's `int += double` loops
 * (truncation; 2.1·100 = 210, 1.05·100 = 105). Grids smaller than 2·len + 21 get no cross.
 */
export function burstStart(width: number, height: number, len: number): GenStart {
  checkSize(width, height);
  if (!Number.isInteger(len) || len < 5) throw new UsageError(`generation: --cross must be an integer ≥ 5 (the arm length), got ${len}`);
  const ids = new Set<number>();
  const cross = (cx: number, cy: number): void => {
    const add = (x: number, y: number): void => {
      const px = cx + x;
      const py = cy + y;
      // The original has no bounds check (a centre's arms always fit); these always fit too.
      if (px >= 0 && px < width && py >= 0 && py < height) ids.add(py * width + px);
    };
    // The cross's shape, row by row (build_block).
    for (let y = -len; y <= -6; y++) add(0, y);
    const rows: [number, number][] = [
      [-5, 1],
      [-4, 1],
      [-3, 3],
      [-2, 3],
      [-1, 5],
      [0, len],
      [1, 5],
      [2, 3],
      [3, 3],
      [4, 1],
      [5, 1],
    ];
    for (const [y, half] of rows) for (let x = -half; x <= half; x++) add(x, y);
    for (let y = 6; y <= len; y++) add(0, y);
  };
  const first = len + 10;
  const shift = Math.trunc(first + 1.05 * len);
  for (const start of [first, shift]) {
    for (let dx = start; dx < width - len - 10; dx = Math.trunc(dx + 2.1 * len)) {
      for (let dy = start; dy < height - len - 10; dy = Math.trunc(dy + 2.1 * len)) cross(dx, dy);
    }
  }
  return { width, height, alive: Int32Array.from([...ids].sort((a, b) => a - b)) };
}

/** Each cell alive with probability `density`, in cell order, from Random(seed). */
export function randomStart(width: number, height: number, density: number, seed: number): GenStart {
  checkSize(width, height);
  if (!(density >= 0 && density <= 1)) throw new UsageError(`generation: --density must be in 0 … 1, got ${density}`);
  const rng = new Random(seed);
  const ids: number[] = [];
  for (let i = 0; i < width * height; i++) if (rng.next() < density) ids.push(i);
  return { width, height, alive: Int32Array.from(ids) };
}

/** A start from explicit live cells given as [x, y] pairs (tests, patterns). */
export function startFromCells(width: number, height: number, cells: readonly (readonly [number, number])[]): GenStart {
  checkSize(width, height);
  const ids = new Set<number>();
  for (const [x, y] of cells) {
    if (!Number.isInteger(x) || !Number.isInteger(y) || x < 0 || y < 0 || x >= width || y >= height) {
      throw new UsageError(`generation: cell (${x}, ${y}) is outside the ${width} × ${height} grid`);
    }
    ids.add(y * width + x);
  }
  return { width, height, alive: Int32Array.from([...ids].sort((a, b) => a - b)) };
}

function checkSize(width: number, height: number): void {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1 || width * height > MAX_CELLS) {
    throw new UsageError(`generation: the grid must be 1 … ${MAX_CELLS} cells with integer sides, got ${width} × ${height}`);
  }
}

// ------------------------------------------------------------------ smmo version

const grids = new WeakMap<Runtime, { width: number; height: number }>();

function gridOf(rt: Runtime): { width: number; height: number } {
  const g = grids.get(rt);
  if (g === undefined) throw new UsageError('generation: this runtime has no grid; call init() first');
  return g;
}

/** The grid's size (state files: App.saveState). */
export function gridSize(rt: Runtime): { width: number; height: number } {
  return { ...gridOf(rt) };
}

/** What Cell.kind must be for agent `a` (model.ts). */
function kindOf(a: Agent | null): number {
  if (a === null) return CELL_EMPTY;
  if (a instanceof Candidate) return CELL_CANDIDATE;
  const alive = a as Alive;
  return alive.state !== 0 ? CELL_DYING : alive.isNew ? CELL_NEW : CELL_ALIVE;
}

/**
 * Take over a runtime whose cells and agents were loaded from a state file (`--init`)
 * instead of init(): record the grid's size and check that every agent's cellId names
 * a cell of the grid that holds that agent, and that every cell's kind says what its
 * agent is (model.ts; UsageError otherwise).
 */
export function adoptGrid(rt: Runtime, width: number, height: number): void {
  checkSize(width, height);
  if (grids.has(rt)) throw new UsageError('generation: this runtime already has a grid');
  grids.set(rt, { width, height });
  resetCellTable(rt.context);
  const cells = cellTable(rt.context, Cell, width * height);
  let problem: string | null = null;
  rt.deviceDo(Agent, (a) => {
    if (problem !== null) return;
    const id = a.cellId;
    if (!(id >= 0 && id < cells.length)) problem = `agent ${a.handle} has cellId ${id}, outside the ${width} × ${height} grid`;
    else if (rt.get(Cell, cells[id]!).agent?.handle !== a.handle)
      problem = `agent ${a.handle} has cellId ${id}, but that cell holds another agent`;
    else if (a instanceof Alive && a.state > NUM_STATES) problem = `Alive ${a.handle} has state ${a.state} (at most ${NUM_STATES})`;
  });
  if (problem === null) {
    let id = 0;
    rt.deviceDo(Cell, (c) => {
      if (problem === null) {
        const want = kindOf(c.agent);
        if (c.kind !== want) problem = `cell ${id} has kind ${c.kind}, but its agent calls for ${want} (Cell.kind: model.ts)`;
      }
      id++;
    });
  }
  if (problem !== null) throw new UsageError(`the loaded state is not a valid generation grid: ${problem}`);
}

/**
 * Colours of `picture`: 0 empty (black), 1 Candidate (dark blue), then 2 … 255 grey
 * levels for the Alives: white for state 0, darker as the state grows (pixelOf).
 */
export const PALETTE: readonly (readonly [number, number, number])[] = [
  [0, 0, 0],
  [40, 48, 110],
  ...Array.from({ length: 254 }, (_, i) => [i + 2, i + 2, i + 2] as const),
];

/** The palette index of an Alive in `state`: 255 for state 0 down to 2 for state NUM_STATES. */
export function pixelOf(state: number): number {
  return 255 - Math.floor((state * 253) / NUM_STATES);
}

/** One pixel per cell: empty, Candidate or an Alive's grey level by state (PALETTE). */
export function picture(rt: Runtime): { width: number; height: number; palette: typeof PALETTE; pixels: Uint8Array } {
  const { width, height } = gridOf(rt);
  const pixels = new Uint8Array(width * height);
  rt.deviceDo(Alive, (a) => {
    pixels[a.cellId] = pixelOf(a.state);
  });
  rt.deviceDo(Candidate, (c) => {
    pixels[c.cellId] = 1;
  });
  return { width, height, palette: PALETTE, pixels };
}

/** Create the cells and the live agents, then the Candidates around them (as the original's load_game + Alive::update). */
export async function init(rt: Runtime, start: GenStart): Promise<void> {
  const { width, height, alive } = start;
  if (grids.has(rt)) throw new UsageError('generation: init() was already called on this runtime');
  grids.set(rt, { width, height });
  await rt.parallelNew(Cell, width * height);
  resetCellTable(rt.context);
  const cells = cellTable(rt.context, Cell, width * height);
  for (let i = 0; i < alive.length; i++) {
    const id = alive[i]!;
    const cell = rt.get(Cell, cells[id]!);
    cell.agent = newAlive(rt.context, id);
    cell.kind = CELL_NEW;
  }
  await rt.parallelDo(Alive, 'createCandidates', width, height);
}

/** One generation. */
export async function step(rt: Runtime): Promise<void> {
  const { width, height } = gridOf(rt);
  // --- DECIDE ---
  await rt.parallelDo(Candidate, 'prepare', width, height);
  await rt.parallelDo(Alive, 'prepare', width, height);
  // --- APPLY ---
  await rt.parallelDo(Candidate, 'update', width, height);
  await rt.parallelDo(Alive, 'update', width, height);
  // --- NEW CANDIDATES ---
  await rt.parallelDo(Alive, 'createCandidates', width, height);
}

/** The state of every cell: -1 empty or Candidate, else the Alive's state (tests, digest). */
export function cellStates(rt: Runtime): Int16Array {
  const { width, height } = gridOf(rt);
  const states = new Int16Array(width * height).fill(-1);
  rt.deviceDo(Alive, (a) => {
    states[a.cellId] = a.state;
  });
  return states;
}

/** The digest of the Alives: see digestOf. */
export function digest(rt: Runtime): number {
  return digestOf(cellStates(rt));
}

/**
 * The number of Alives plus the 32-bit FNV-1a hash of (cell id, state) of every Alive
 * in ascending cell id, each fed as a 4-byte word (apps/hash.ts). `states`: per cell, -1
 * for no Alive, else its state (shared with the baselines).
 */
export function digestOf(states: ArrayLike<number>): number {
  let h = FNV_OFFSET;
  let n = 0;
  for (let i = 0; i < states.length; i++) {
    const s = states[i]!;
    if (s < 0) continue;
    h = fnvWord(fnvWord(h, i), s);
    n++;
  }
  return n + h;
}
