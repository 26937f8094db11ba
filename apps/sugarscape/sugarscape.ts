/**
 * sugarscape: initial state, step (the list of do-all phases), digest and picture.
 *
 * Start (the original's create_cells and create_agents): every cell starts with no
 * sugar, capacity SUGAR_CAPACITY and a grow rate drawn from its stream; then each cell
 * draws an agent (12 % Male, 15 % Female, else none) with its vision, max age,
 * endowment, metabolism and max children, and an agent's stream seed. The start is
 * computed once on the main thread as a `SugarStart` (every cell's fields and stream
 * state after those draws, and the agents), which the smmo version and both baselines
 * load; so all three start from the same state.
 */
import { UsageError, type Runtime } from '../../runtime/index.js';
import { MAX_HEAP_BYTES } from '../../runtime/layout.js';
import type { AppParams, Picture } from '../app.js';
import { cellTable, resetCellTable } from '../grid.js';
import { fnvWord, FNV_OFFSET } from '../hash.js';
import { nextInArray, seedCellStream, storeStream } from '../wa-tor/stream.js';
import { Agent, Cell, CLASSES, Female, Male, newFemale, newMale } from './model.js';
import { drawAgent, EMPTY, FEMALE, growRateOf, MALE, MAX_VISION, SUGAR_CAPACITY, uniform } from './rules.js';

export { CLASSES };

/** The original's size (its configuration): 1700 × 1700 cells, 10 000 iterations (about 33 minutes on 16 CPU threads). */
export const ORIGINAL = { width: 1700, height: 1700, iterations: 10_000 };
/** `smmo run sugarscape` without flags: the original's grid, 100 iterations (about 2 minutes on one thread); the original's run with --iterations 10000. */
export const DEFAULTS = { width: ORIGINAL.width, height: ORIGINAL.height, iterations: 100 };

/** Heap bytes per grid cell (App.heapFor): a Cell (≈ 41 bytes in its block) and at most one agent (≤ 57), with room for partly empty blocks. */
export const HEAP_PER_CELL = 128;
/** Heap bytes besides the cells (App.heapFor). */
export const HEAP_BASE = 16 << 20;
/** Cells of the largest grid accepted: the largest whose heap (HEAP_BASE + HEAP_PER_CELL a cell) fits the 4 GiB limit. */
export const MAX_CELLS = Math.floor((MAX_HEAP_BYTES - HEAP_BASE) / HEAP_PER_CELL);

/** One agent of a start. */
export interface AgentStart {
  cell: number;
  /** MALE or FEMALE. */
  kind: number;
  /** Seed of its stream (apps/wa-tor/stream.ts seedAgentStream). */
  seed: number;
  vision: number;
  age: number;
  maxAge: number;
  /** Its sugar; a new agent has its endowment. */
  sugar: number;
  endowment: number;
  metabolism: number;
  /** Females only (0 for Males). */
  maxChildren: number;
  numChildren: number;
}

/** An initial state: per-cell fields (index = cell id) and the agents (at most one per cell). */
export interface SugarStart {
  width: number;
  height: number;
  sugar: Int32Array;
  capacity: Int32Array;
  growRate: Int32Array;
  /** Four stream words per cell. */
  streams: Uint32Array;
  agents: AgentStart[];
}

/** The grid size that the parameters give (--width, --height), checked. */
export function sizeOf(params: AppParams): { width: number; height: number } {
  const width = Number(params['width'] ?? DEFAULTS.width);
  const height = Number(params['height'] ?? DEFAULTS.height);
  checkSize(width, height);
  return { width, height };
}

function checkSize(width: number, height: number): void {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1 || width * height > MAX_CELLS) {
    throw new UsageError(`sugarscape: the grid must be 1 … ${MAX_CELLS} cells with integer sides, got ${width} × ${height}`);
  }
}

/** The original's random start on a width × height grid, from the run's seed (per-cell streams). */
export function randomStart(width: number, height: number, seed: number): SugarStart {
  checkSize(width, height);
  const n = width * height;
  const start = emptyStart(width, height, seed);
  const s = start.streams;
  for (let id = 0; id < n; id++) {
    const at = 4 * id;
    const next = (): number => nextInArray(s, at);
    start.growRate[id] = growRateOf(uniform(next()));
    const d = drawAgent(next);
    if (d.kind === EMPTY) continue;
    start.agents.push({
      cell: id,
      kind: d.kind,
      seed: next(), // the Agent constructor: curand_init(cell->random_int(...))
      vision: d.vision,
      age: 0,
      maxAge: d.maxAge,
      sugar: d.endowment,
      endowment: d.endowment,
      metabolism: d.metabolism,
      maxChildren: d.kind === FEMALE ? d.maxChildren : 0,
      numChildren: 0,
    });
  }
  return start;
}

/**
 * A start with no sugar, capacity SUGAR_CAPACITY, grow rate 0 and no agents, each cell's
 * stream freshly seeded from (seed, id): for hand-built cases (tests), which then set
 * sugar, grow rates and agents.
 */
export function emptyStart(width: number, height: number, seed: number): SugarStart {
  checkSize(width, height);
  const n = width * height;
  const streams = new Uint32Array(4 * n);
  for (let id = 0; id < n; id++) seedCellStream(streams, 4 * id, seed, id);
  return {
    width,
    height,
    sugar: new Int32Array(n),
    capacity: new Int32Array(n).fill(SUGAR_CAPACITY),
    growRate: new Int32Array(n),
    streams,
    agents: [],
  };
}

/** Check a start (hand-built ones especially): sizes, one agent per cell, fields in range. */
export function checkStart(start: SugarStart): void {
  const { width, height } = start;
  checkSize(width, height);
  const n = width * height;
  if (start.sugar.length !== n || start.capacity.length !== n || start.growRate.length !== n || start.streams.length !== 4 * n)
    throw new UsageError(`sugarscape: a start's per-cell arrays must have ${n} entries (4 per cell for streams)`);
  const seen = new Uint8Array(n);
  for (const a of start.agents) {
    if (!Number.isInteger(a.cell) || a.cell < 0 || a.cell >= n)
      throw new UsageError(`sugarscape: agent cell ${a.cell} is outside the ${width} × ${height} grid`);
    if (seen[a.cell] !== 0) throw new UsageError(`sugarscape: two agents in cell ${a.cell}`);
    seen[a.cell] = 1;
    if (a.kind !== MALE && a.kind !== FEMALE) throw new UsageError(`sugarscape: agent kind must be MALE (1) or FEMALE (2), got ${a.kind}`);
    if (!(a.vision >= 1 && a.vision <= MAX_VISION))
      throw new UsageError(`sugarscape: agent vision must be 1 … ${MAX_VISION}, got ${a.vision}`);
    for (const key of ['seed', 'vision', 'age', 'maxAge', 'sugar', 'endowment', 'metabolism', 'maxChildren', 'numChildren'] as const) {
      const v = a[key];
      const max = key === 'seed' ? 0xffffffff : 0x7fffffff;
      const min = key === 'sugar' ? -0x80000000 : 0;
      if (!Number.isInteger(v) || v < min || v > max)
        throw new UsageError(`sugarscape: agent ${key} must be an integer in ${min} … ${max}, got ${v}`);
    }
    if (a.numChildren > a.maxChildren)
      throw new UsageError(`sugarscape: agent numChildren ${a.numChildren} is above its maxChildren ${a.maxChildren}`);
  }
}

// ------------------------------------------------------------------ smmo version

/**
 * A runtime's grid: its size and `reach`, the largest vision of any agent at the start
 * (at least 1). No agent's vision ever exceeds it (a child's is the average of its
 * parents'), so Cell.decidePermission and Female.decideProposal scan that radius
 * instead of MAX_VISION with the same result (model.ts).
 */
interface Grid {
  width: number;
  height: number;
  reach: number;
}

const grids = new WeakMap<Runtime, Grid>();

function gridOf(rt: Runtime): Grid {
  const g = grids.get(rt);
  if (g === undefined) throw new UsageError('sugarscape: this runtime has no grid; call init() first');
  return g;
}

/** The grid's size (state files: App.saveState). */
export function gridSize(rt: Runtime): { width: number; height: number } {
  const { width, height } = gridOf(rt);
  return { width, height };
}

/** The scan radius of a runtime's cells and females (Grid). */
export function reachOf(rt: Runtime): number {
  return gridOf(rt).reach;
}

/** The largest vision of the agents of `start`, at least 1 (Grid's reach). */
export function reachOfStart(start: SugarStart): number {
  let reach = 1;
  for (const a of start.agents) reach = Math.max(reach, a.vision);
  return reach;
}

/**
 * Create the cells and agents of `start`. `reach`: the scan radius of cells and females
 * (Grid), by default reachOfStart(start); tests pass MAX_VISION to check that the
 * shortcut changes nothing.
 */
export async function initFromStart(rt: Runtime, start: SugarStart, reach = reachOfStart(start)): Promise<void> {
  checkStart(start);
  const { width, height } = start;
  if (grids.has(rt)) throw new UsageError('sugarscape: init() was already called on this runtime');
  if (!Number.isInteger(reach) || reach < reachOfStart(start) || reach > MAX_VISION)
    throw new UsageError(`sugarscape: reach must be an integer from the agents' largest vision to ${MAX_VISION}, got ${reach}`);
  grids.set(rt, { width, height, reach });
  const n = width * height;
  await rt.parallelNew(Cell, n);
  resetCellTable(rt.context);
  const cells = cellTable(rt.context, Cell, n);
  const words = start.streams;
  for (let id = 0; id < n; id++) {
    const c = rt.get(Cell, cells[id]!);
    c.cellId = id;
    c.sugar = start.sugar[id]!;
    c.sugarCapacity = start.capacity[id]!;
    c.growRate = start.growRate[id]!;
    storeStream(c.randomState, words, 4 * id);
  }
  for (const a of start.agents) {
    const cell = rt.get(Cell, cells[a.cell]!);
    const agent =
      a.kind === MALE
        ? newMale(rt.context, cell, a.seed, a.vision, a.age, a.maxAge, a.endowment, a.metabolism)
        : newFemale(rt.context, cell, a.seed, a.vision, a.age, a.maxAge, a.endowment, a.metabolism, a.maxChildren);
    agent.sugar = a.sugar;
    if (agent instanceof Female) agent.numChildren = a.numChildren;
  }
}

/** The random start of the parameters (--width, --height) and seed. */
export async function init(rt: Runtime, params: AppParams, seed: number): Promise<void> {
  const { width, height } = sizeOf(params);
  await initFromStart(rt, randomStart(width, height, seed));
}

/** One iteration: the original's twelve do-alls, in its order. */
export async function step(rt: Runtime): Promise<void> {
  const { width, height, reach } = gridOf(rt);
  // --- SUGAR ---
  await rt.parallelDo(Cell, 'growSugar');
  await rt.parallelDo(Cell, 'prepareDiffuse');
  await rt.parallelDo(Cell, 'updateDiffuse', width, height);
  // --- AGE, MOVE, HARVEST ---
  await rt.parallelDo(Agent, 'ageAndMetabolize');
  await rt.parallelDo(Agent, 'prepareMove', width, height);
  await rt.parallelDo(Cell, 'decidePermission', width, height, reach);
  await rt.parallelDo(Agent, 'updateMove');
  // --- MATE ---
  await rt.parallelDo(Male, 'propose', width, height);
  await rt.parallelDo(Female, 'decideProposal', width, height, reach);
  await rt.parallelDo(Male, 'proposeOffspringTarget', width, height);
  await rt.parallelDo(Cell, 'decidePermission', width, height, reach);
  await rt.parallelDo(Male, 'mate');
}

/** Per-cell state for the digest and the picture (index = cell id). */
export interface CellStates {
  sugar: Int32Array;
  /** EMPTY, MALE or FEMALE. */
  kind: Uint8Array;
  agentSugar: Int32Array;
  agentAge: Int32Array;
  /** A Female's children (0 otherwise). */
  children: Int32Array;
}

/** The state of every cell (tests, digest, picture). */
export function cellStates(rt: Runtime): CellStates {
  const { width, height } = gridOf(rt);
  const n = width * height;
  const out = newStates(n);
  rt.deviceDo(Cell, (c) => {
    out.sugar[c.cellId] = c.sugar;
  });
  rt.deviceDo(Agent, (a) => {
    const id = a.cell!.cellId;
    out.kind[id] = a instanceof Male ? MALE : FEMALE;
    out.agentSugar[id] = a.sugar;
    out.agentAge[id] = a.age;
    if (a instanceof Female) out.children[id] = a.numChildren;
  });
  return out;
}

export function newStates(n: number): CellStates {
  return {
    sugar: new Int32Array(n),
    kind: new Uint8Array(n),
    agentSugar: new Int32Array(n),
    agentAge: new Int32Array(n),
    children: new Int32Array(n),
  };
}

/** The digest of the grid: see digestOf. */
export function digest(rt: Runtime): number {
  return digestOf(cellStates(rt));
}

/**
 * Males + Females, plus the 32-bit FNV-1a hash (apps/hash.ts) of, in ascending cell id,
 * every cell's sugar and, for an occupied cell, (id, kind, the agent's sugar, age,
 * children). All integers: equal state gives an equal digest, exactly.
 */
export function digestOf(s: CellStates): number {
  let h = FNV_OFFSET;
  let agents = 0;
  for (let i = 0; i < s.sugar.length; i++) {
    h = fnvWord(h, s.sugar[i]!);
    const k = s.kind[i]!;
    if (k === EMPTY) continue;
    agents++;
    h = fnvWord(fnvWord(fnvWord(fnvWord(fnvWord(h, i), k), s.agentSugar[i]!), s.agentAge[i]!), s.children[i]!);
  }
  return agents + h;
}

/** Sugar shades of the picture (index 0 … SHADES − 1), then a Male's and a Female's colour. */
export const SHADES = 250;
export const MALE_PIXEL = SHADES;
export const FEMALE_PIXEL = SHADES + 1;

/**
 * The original's rendering: sugar as a yellow level (sugar / capacity, black to full
 * yellow, above the capacity full), Males blue, Females red.
 */
export const PALETTE: readonly (readonly [number, number, number])[] = [
  ...Array.from({ length: SHADES }, (_, i) => {
    const l = Math.round((i * 255) / (SHADES - 1));
    return [l, l, 0] as const;
  }),
  [0, 0, 255],
  [255, 0, 0],
];

/** The palette index of a free cell with `sugar`. */
export function sugarPixel(sugar: number): number {
  return Math.min(SHADES - 1, Math.max(0, Math.floor((sugar * (SHADES - 1)) / SUGAR_CAPACITY)));
}

/** One pixel per cell (PALETTE). */
export function pictureOf(width: number, height: number, s: CellStates): Picture {
  const pixels = new Uint8Array(width * height);
  for (let i = 0; i < pixels.length; i++) {
    const k = s.kind[i]!;
    pixels[i] = k === MALE ? MALE_PIXEL : k === FEMALE ? FEMALE_PIXEL : sugarPixel(s.sugar[i]!);
  }
  return { width, height, palette: PALETTE, pixels };
}

export function picture(rt: Runtime): Picture {
  const { width, height } = gridOf(rt);
  return pictureOf(width, height, cellStates(rt));
}

/**
 * The invariants between steps (tests; `--init` checks them too): every agent's cell
 * holds it; every cell's kind says what its agent is; no request, permission or
 * proposal is left over; cell ids are the cells' ranks; vision is 1 … MAX_VISION; a
 * Female has at most maxChildren children. Returns the first violation, or null.
 */
export function invariantViolation(rt: Runtime): string | null {
  const { width, height } = gridOf(rt);
  const n = width * height;
  const cells = cellTable(rt.context, Cell, n);
  let problem: string | null = null;
  let id = 0;
  rt.deviceDo(Cell, (c) => {
    if (problem !== null) return;
    if (c.cellId !== id) problem = `cell with handle ${c.handle} has cellId ${c.cellId}, but it is cell ${id}`;
    const a = c.agent;
    const want = a === null ? EMPTY : a instanceof Male ? MALE : FEMALE;
    if (c.kind !== want) problem = `cell ${id} has kind ${c.kind}, but its agent calls for ${want}`;
    else if (a !== null && a.cell?.handle !== c.handle) problem = `cell ${id} holds agent ${a.handle}, whose cell is another`;
    id++;
  });
  if (problem !== null) return problem;
  rt.deviceDo(Agent, (a) => {
    if (problem !== null) return;
    const c = a.cell;
    if (c === null || rt.get(Cell, cells[c.cellId]!).agent?.handle !== a.handle) problem = `agent ${a.handle}'s cell does not hold it`;
    else if (a.cellRequest !== null || a.permission) problem = `agent ${a.handle} has a request or permission left over`;
    else if (a.vision < 1 || a.vision > MAX_VISION) problem = `agent ${a.handle} has vision ${a.vision}`;
    else if (a instanceof Male && (a.femaleRequest !== null || a.proposalAccepted)) problem = `Male ${a.handle} has a proposal left over`;
    else if (a instanceof Female && (a.numChildren < 0 || a.numChildren > a.maxChildren))
      problem = `Female ${a.handle} has ${a.numChildren} of at most ${a.maxChildren} children`;
  });
  return problem;
}

/**
 * Take over a runtime whose objects were loaded from a state file (`--init`) instead of
 * init(): record the grid's size and check the invariants (UsageError otherwise).
 */
export function adoptGrid(rt: Runtime, width: number, height: number): void {
  checkSize(width, height);
  if (grids.has(rt)) throw new UsageError('sugarscape: this runtime already has a grid');
  // The reach of the loaded agents (an upper bound from now on, as at init()).
  let reach = 1;
  rt.deviceDo(Agent, (a) => void (reach = Math.max(reach, a.vision)));
  grids.set(rt, { width, height, reach: Math.min(reach, MAX_VISION) });
  resetCellTable(rt.context);
  let problem: string | null;
  try {
    problem = invariantViolation(rt);
  } catch (e) {
    problem = e instanceof Error ? e.message : String(e);
  }
  if (problem !== null) {
    grids.delete(rt);
    throw new UsageError(`the loaded state is not a valid sugarscape grid: ${problem}`);
  }
}
