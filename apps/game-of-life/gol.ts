/**
 * game-of-life: initial state, step (the list of do-all phases) and digest.
 *
 * Start: a PGM image (pixel value 0 = alive, as the original), or a random field where
 * each cell is alive with probability `density`, drawn in cell order from
 * apps/random.ts's xoshiro128** seeded with the run's seed.
 */
import { UsageError, type Runtime } from '../../runtime/index.js';
import type { AppParams } from '../app.js';
import { cellTable, resetCellTable } from '../grid.js';
import { fnvWord, FNV_OFFSET } from '../hash.js';
import { readPgm } from '../pgm.js';
import { Random } from '../random.js';
import { Agent, Alive, Candidate, Cell, CELL_ALIVE, CELL_CANDIDATE, CELL_EMPTY, CELL_NEW, CLASSES, newAlive } from './model.js';

export { CLASSES };

/** The original's iteration count; the size of its input (tm.pgm) for the random start. */
export const DEFAULTS = { iterations: 300, width: 1714, height: 1647, density: 0.25 };

/** An initial state: grid size and the ids of the live cells, ascending. */
export interface GolStart {
  width: number;
  height: number;
  alive: Int32Array;
}

/** Cells of the largest grid accepted (the heap must hold one Cell per grid cell). */
export const MAX_CELLS = 1 << 28;

/** The start that the app's parameters describe (--input FILE, or --width/--height/--density). */
export function startFromParams(params: AppParams, seed: number): GolStart {
  const input = params['input'];
  const width = params['width'];
  const height = params['height'];
  if (input !== undefined) {
    if (width !== undefined || height !== undefined) {
      throw new UsageError('game-of-life: give either --input FILE or --width/--height (a random start), not both');
    }
    return startFromPgm(String(input));
  }
  if ((width === undefined) !== (height === undefined)) {
    throw new UsageError('game-of-life: give both --width and --height (or neither, for the default 1714 × 1647)');
  }
  const density = params['density'] === undefined ? DEFAULTS.density : Number(params['density']);
  return randomStart(Number(width ?? DEFAULTS.width), Number(height ?? DEFAULTS.height), density, seed);
}

/** Live cells where the image's pixel value is 0 (the original's convention). */
export function startFromPgm(path: string): GolStart {
  const img = readPgm(path);
  let n = 0;
  for (let i = 0; i < img.pixels.length; i++) if (img.pixels[i] === 0) n++;
  const alive = new Int32Array(n);
  n = 0;
  for (let i = 0; i < img.pixels.length; i++) if (img.pixels[i] === 0) alive[n++] = i;
  return { width: img.width, height: img.height, alive };
}

/** Each cell alive with probability `density`, in cell order, from Random(seed). */
export function randomStart(width: number, height: number, density: number, seed: number): GolStart {
  checkSize(width, height);
  if (!(density >= 0 && density <= 1)) throw new UsageError(`game-of-life: --density must be in 0 … 1, got ${density}`);
  const rng = new Random(seed);
  const ids: number[] = [];
  for (let i = 0; i < width * height; i++) if (rng.next() < density) ids.push(i);
  return { width, height, alive: Int32Array.from(ids) };
}

/** A start from explicit live cells given as [x, y] pairs (tests, patterns). */
export function startFromCells(width: number, height: number, cells: readonly (readonly [number, number])[]): GolStart {
  checkSize(width, height);
  const ids = new Set<number>();
  for (const [x, y] of cells) {
    if (!Number.isInteger(x) || !Number.isInteger(y) || x < 0 || y < 0 || x >= width || y >= height) {
      throw new UsageError(`game-of-life: cell (${x}, ${y}) is outside the ${width} × ${height} grid`);
    }
    ids.add(y * width + x);
  }
  return { width, height, alive: Int32Array.from([...ids].sort((a, b) => a - b)) };
}

function checkSize(width: number, height: number): void {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1 || width * height > MAX_CELLS) {
    throw new UsageError(`game-of-life: the grid must be 1 … ${MAX_CELLS} cells with integer sides, got ${width} × ${height}`);
  }
}

// ------------------------------------------------------------------ smmo version

const grids = new WeakMap<Runtime, { width: number; height: number }>();

function gridOf(rt: Runtime): { width: number; height: number } {
  const g = grids.get(rt);
  if (g === undefined) throw new UsageError('game-of-life: this runtime has no grid; call init() first');
  return g;
}

/** The grid's size (state files: App.saveState). */
export function gridSize(rt: Runtime): { width: number; height: number } {
  return { ...gridOf(rt) };
}

/**
 * Take over a runtime whose cells and agents were loaded from a state file (`--init`)
 * instead of init(): record the grid's size and check that every agent's cellId names
 * a cell of the grid that holds that agent, and that every cell's state says what its
 * agent is (model.ts; UsageError otherwise).
 */
export function adoptGrid(rt: Runtime, width: number, height: number): void {
  checkSize(width, height);
  if (grids.has(rt)) throw new UsageError('game-of-life: this runtime already has a grid');
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
  });
  if (problem === null) {
    let id = 0;
    rt.deviceDo(Cell, (c) => {
      if (problem === null) {
        const a = c.agent;
        const want = a === null ? CELL_EMPTY : a instanceof Candidate ? CELL_CANDIDATE : (a as Alive).isNew ? CELL_NEW : CELL_ALIVE;
        if (c.state !== want) problem = `cell ${id} has state ${c.state}, but its agent calls for ${want} (Cell.state: model.ts)`;
      }
      id++;
    });
  }
  if (problem !== null) throw new UsageError(`the loaded state is not a valid game-of-life grid: ${problem}`);
}

/** Colours of `picture`: empty, alive, candidate. */
export const PALETTE: readonly (readonly [number, number, number])[] = [
  [12, 12, 16],
  [245, 245, 235],
  [70, 80, 140],
];

/** One pixel per cell: empty (0), alive (1) or candidate (2) (PALETTE). */
export function picture(rt: Runtime): { width: number; height: number; palette: typeof PALETTE; pixels: Uint8Array } {
  const { width, height } = gridOf(rt);
  const pixels = new Uint8Array(width * height);
  rt.deviceDo(Alive, (a) => {
    pixels[a.cellId] = 1;
  });
  rt.deviceDo(Candidate, (c) => {
    pixels[c.cellId] = 2;
  });
  return { width, height, palette: PALETTE, pixels };
}

/** Create the cells and the live agents, then the Candidates around them (as the original's load). */
export async function init(rt: Runtime, start: GolStart): Promise<void> {
  const { width, height, alive } = start;
  if (grids.has(rt)) throw new UsageError('game-of-life: init() was already called on this runtime');
  grids.set(rt, { width, height });
  await rt.parallelNew(Cell, width * height);
  resetCellTable(rt.context);
  const cells = cellTable(rt.context, Cell, width * height);
  for (let i = 0; i < alive.length; i++) {
    const id = alive[i]!;
    const cell = rt.get(Cell, cells[id]!);
    cell.agent = newAlive(rt.context, id);
    cell.state = CELL_NEW;
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

/** Ids of the live cells, ascending. */
export function aliveCells(rt: Runtime): Int32Array {
  const ids = new Int32Array(rt.count(Alive));
  let k = 0;
  rt.deviceDo(Alive, (a) => {
    ids[k++] = a.cellId;
  });
  return ids.sort();
}

/** Live cells plus the FNV-1a hash of their ids in cell order. */
export function digest(rt: Runtime): number {
  return digestOf(aliveCells(rt));
}

/** The digest of a set of live cell ids given in ascending order (shared with the baselines). */
export function digestOf(aliveAscending: ArrayLike<number>): number {
  let h = FNV_OFFSET;
  for (let i = 0; i < aliveAscending.length; i++) h = fnvWord(h, aliveAscending[i]!);
  return aliveAscending.length + h;
}
