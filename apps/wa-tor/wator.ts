/**
 * wa-tor: initial state, step (the list of do-all phases), digest and invariants.
 *
 * Start (the original's setup_cells): cell i draws from its own stream (stream.ts) a
 * kind, uniform in 0 … 3: 0 → a fish, 1 → a shark, else empty; a new agent's stream
 * seed is the cell's next number. Cell ids: apps/grid.ts (x = i mod width,
 * y = ⌊i / width⌋); the torus wraps in both directions.
 */
import { UsageError, type Runtime } from '../../runtime/index.js';
import type { AppParams } from '../app.js';
import { cellTable, resetCellTable } from '../grid.js';
import { fnvWord, FNV_OFFSET } from '../hash.js';
import { Agent, BOTTOM, Cell, CLASSES, Fish, LEFT, RIGHT, Shark, spawnFish, spawnShark, TOP } from './model.js';
import { nextInArray, seedCellStream, storeStream } from './stream.js';

export { CLASSES };

/** The original's defaults (configuration.h: kSizeX, kSizeY, kNumIterations). */
export const DEFAULTS = { width: 2048, height: 2560, iterations: 500 };

/** Agent kinds in the grid hash. */
export const KIND_FISH = 1;
export const KIND_SHARK = 2;

/** Cell id of the neighbour of cell `i` in direction `d` (LEFT, TOP, RIGHT, BOTTOM), wrapping around. */
export function neighborId(i: number, d: number, width: number, height: number): number {
  const x = i % width;
  const y = (i - x) / width;
  switch (d) {
    case LEFT:
      return y * width + (x === 0 ? width - 1 : x - 1);
    case TOP:
      return (y === 0 ? height - 1 : y - 1) * width + x;
    case RIGHT:
      return y * width + (x === width - 1 ? 0 : x + 1);
    default:
      return (y === height - 1 ? 0 : y + 1) * width + x;
  }
}

/** Cell ids of the four neighbours of cell `i` (LEFT, TOP, RIGHT, BOTTOM order), wrapping around. */
export function neighborIds(i: number, width: number, height: number): [number, number, number, number] {
  const x = i % width;
  const y = (i - x) / width;
  const left = y * width + (x === 0 ? width - 1 : x - 1);
  const right = y * width + (x === width - 1 ? 0 : x + 1);
  const top = (y === 0 ? height - 1 : y - 1) * width + x;
  const bottom = (y === height - 1 ? 0 : y + 1) * width + x;
  const out: [number, number, number, number] = [0, 0, 0, 0];
  out[LEFT] = left;
  out[TOP] = top;
  out[RIGHT] = right;
  out[BOTTOM] = bottom;
  return out;
}

/** [width, height] from the app's parameters (defaults where absent). */
export function sizeOf(params: AppParams): [number, number] {
  return [Number(params['width'] ?? DEFAULTS.width), Number(params['height'] ?? DEFAULTS.height)];
}

export function checkSize(width: number, height: number): void {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1 || width * height > 1 << 27) {
    throw new UsageError(`wa-tor: the torus must have 1 … ${1 << 27} cells with integer sides, got ${width} × ${height}`);
  }
}

const grids = new WeakMap<Runtime, { width: number; height: number }>();

function gridOf(rt: Runtime): { width: number; height: number } {
  const g = grids.get(rt);
  if (g === undefined) throw new UsageError('wa-tor: this runtime has no torus; call init() first');
  return g;
}

/** The torus's size (state files: App.saveState). */
export function gridSize(rt: Runtime): { width: number; height: number } {
  return { ...gridOf(rt) };
}

/**
 * Take over a runtime whose cells and agents were loaded from a state file (`--init`)
 * instead of init(): record the torus's size and check the model's invariants, so that
 * a state file that is not a torus of this size is refused here (UsageError) rather
 * than failing in a step.
 */
export function adoptGrid(rt: Runtime, width: number, height: number): void {
  checkSize(width, height);
  if (grids.has(rt)) throw new UsageError('wa-tor: this runtime already has a torus');
  grids.set(rt, { width, height });
  resetCellTable(rt.context);
  const cells = cellTable(rt.context, Cell, width * height); // checks the number of cells
  // checkInvariants' rules, in one pass in cell-id order (deviceDo visits cells by ascending handle).
  let problem: string | null = null;
  let i = 0;
  rt.deviceDo(Cell, (c) => {
    if (problem !== null) return;
    const nb = c.neighbors;
    for (let d = 0; d < 4; d++) {
      if (nb.get(d)?.handle !== cells[neighborId(i, d, width, height)])
        problem = `cell ${i}: neighbour ${d} is not cell ${neighborId(i, d, width, height)}`;
    }
    const a = c.agent;
    if (a !== null && a.position?.handle !== c.handle)
      problem = `cell ${i} holds agent ${a.handle}, whose position is ${a.position?.handle ?? 'null'}`;
    i++;
  });
  rt.deviceDo(Agent, (a) => {
    if (problem === null && a.position?.agent?.handle !== a.handle)
      problem = `agent ${a.handle} is not on the cell it names (${a.position?.handle ?? 'null'})`;
  });
  if (problem !== null) throw new UsageError(`the loaded state is not a valid ${width} × ${height} torus: ${problem}`);
}

/** Colours of `picture`: water, fish, shark (indices 0, KIND_FISH, KIND_SHARK). */
export const PALETTE: readonly (readonly [number, number, number])[] = [
  [10, 28, 58],
  [80, 210, 120],
  [235, 70, 45],
];

/** One pixel per cell, in cell-id order: water, fish or shark (PALETTE). */
export function picture(rt: Runtime): { width: number; height: number; palette: typeof PALETTE; pixels: Uint8Array } {
  const { width, height } = gridOf(rt);
  const pixels = new Uint8Array(width * height);
  forEachCell(rt, (i, kind) => {
    pixels[i] = kind;
  });
  return { width, height, palette: PALETTE, pixels };
}

/** Create the cells, link them into a torus and place the first fish and sharks. */
export async function init(rt: Runtime, width: number, height: number, seed: number): Promise<void> {
  checkSize(width, height);
  if (grids.has(rt)) throw new UsageError('wa-tor: init() was already called on this runtime');
  grids.set(rt, { width, height });
  const n = width * height;
  await rt.parallelNew(Cell, n);
  const ctx = rt.context;
  resetCellTable(ctx);
  const cells = cellTable(ctx, Cell, n);
  const stream = new Uint32Array(4);
  // ctx.get, not rt.get: the handles come from the cell table, so the full check of every
  // lookup (rt.get always checks) is not needed here; checked mode still checks them.
  for (let i = 0; i < n; i++) {
    const cell = ctx.get(Cell, cells[i]!);
    const nb = neighborIds(i, width, height);
    const links = cell.neighbors;
    for (let d = 0; d < 4; d++) links.set(d, ctx.get(Cell, cells[nb[d]!]!));
    seedCellStream(stream, 0, seed, i);
    const kind = nextInArray(stream, 0) % 4;
    if (kind === 0) spawnFish(ctx, cell, nextInArray(stream, 0));
    else if (kind === 1) spawnShark(ctx, cell, nextInArray(stream, 0));
    storeStream(cell.randomState, stream);
  }
}

/** One iteration: eight do-alls, as the original. */
export async function step(rt: Runtime): Promise<void> {
  // --- FISH ---
  await rt.parallelDo(Cell, 'prepare');
  await rt.parallelDo(Fish, 'prepare');
  await rt.parallelDo(Cell, 'decide');
  await rt.parallelDo(Fish, 'update');
  // --- SHARKS ---
  await rt.parallelDo(Cell, 'prepare');
  await rt.parallelDo(Shark, 'prepare');
  await rt.parallelDo(Cell, 'decide');
  await rt.parallelDo(Shark, 'update');
}

/** Call fn(cell id, kind) for every cell in id order; kind 0 = empty, KIND_FISH, KIND_SHARK. */
export function forEachCell(rt: Runtime, fn: (id: number, kind: number) => void): void {
  const { width, height } = gridOf(rt);
  const cells = cellTable(rt.context, Cell, width * height);
  const kindOf = (c: Cell): number => {
    const a = c.agent;
    return a === null ? 0 : a instanceof Fish ? KIND_FISH : KIND_SHARK;
  };
  // deviceDo visits cells in ascending handle order, i.e. in id order (grid.ts); walk
  // the table instead if that ever stops holding.
  let i = 0;
  let inOrder = true;
  rt.deviceDo(Cell, (c) => {
    if (!inOrder) return;
    if (c.handle !== cells[i]) inOrder = false;
    else fn(i++, kindOf(c));
  });
  if (!inOrder) for (; i < cells.length; i++) fn(i, kindOf(rt.get(Cell, cells[i]!)));
}

/**
 * 3·fish + 7·sharks (the original's checksum) plus the FNV-1a hash of the words
 * 4·i + kind of the occupied cells i, in id order (kind 1 = fish, 2 = shark).
 */
export function digest(rt: Runtime): number {
  let h = FNV_OFFSET;
  forEachCell(rt, (i, kind) => {
    if (kind !== 0) h = fnvWord(h, 4 * i + kind);
  });
  return 3 * rt.count(Fish) + 7 * rt.count(Shark) + h;
}

/**
 * Check the model's invariants; throws an Error naming the first violation:
 * every agent's cell holds that agent (so no cell holds two), every occupied cell's
 * agent stands on it, the neighbour links form the torus.
 */
export function checkInvariants(rt: Runtime): void {
  const { width, height } = gridOf(rt);
  const cells = cellTable(rt.context, Cell, width * height);
  let occupied = 0;
  for (let i = 0; i < cells.length; i++) {
    const c = rt.get(Cell, cells[i]!);
    const nb = neighborIds(i, width, height);
    for (let d = 0; d < 4; d++) {
      if (c.neighbors.get(d)?.handle !== cells[nb[d]!]) throw new Error(`wa-tor: cell ${i}: neighbour ${d} is not cell ${nb[d]}`);
    }
    const a = c.agent;
    if (a === null) continue;
    occupied++;
    if (a.position?.handle !== c.handle)
      throw new Error(`wa-tor: cell ${i} holds agent ${a.handle}, whose position is ${a.position?.handle ?? 'null'}`);
  }
  let agents = 0;
  rt.deviceDo(Agent, (a) => {
    agents++;
    const p = a.position;
    if (p === null) throw new Error(`wa-tor: agent ${a.handle} has no position`);
    if (p.agent?.handle !== a.handle)
      throw new Error(`wa-tor: agent ${a.handle} stands on cell ${p.handle}, which holds ${p.agent?.handle ?? 'nothing'}`);
  });
  if (agents !== occupied) throw new Error(`wa-tor: ${agents} agents but ${occupied} occupied cells`);
  if (agents !== rt.count(Fish) + rt.count(Shark)) throw new Error(`wa-tor: count(Agent) disagrees with the agents visited`);
}
