/**
 * generation classes: a "Generations" cellular automaton with 255 states, as DynaSOAr's
 * `example/generation` (prg-titech/dynasoar, commit a4f956c; "Game of Life with 255
 * states"), with work proportional to the occupied cells.
 *
 * Rules (the original's configuration.h and dynasoar/generation.cu):
 *  - An Alive is in state 0 (alive) or in one of the states 1 … 255 (dying). Only Alives
 *    in state 0 count as neighbours.
 *  - An Alive in state 0 stays in state 0 if it has 0, 2, 3, 5, 6, 7 or 8 neighbours in
 *    state 0 (STAY_ALIVE); otherwise it goes to state 1.
 *  - An Alive in state s, 1 ≤ s < 255, goes to state s + 1 whatever its neighbours; one in
 *    state 255 is replaced by a Candidate (its cell may come alive again).
 *  - A Candidate (an empty cell next to a new Alive) comes alive (a new Alive, state 0)
 *    with 3, 4, 6 or 8 neighbours in state 0 (SPAWN); with none it disappears.
 *  - Dying Alives occupy their cell: no Candidate is put there, nothing spawns there.
 * No wrap-around: cells outside the grid are empty. Cell ids: apps/grid.ts.
 *
 * Who writes what, per phase (why the result is the same for any number of threads):
 *  - Candidate.prepare, Alive.prepare: each agent writes only its own fields (and a new
 *    Alive its own cell's kind, NEW → ALIVE, which both count as "state 0"); they read
 *    which neighbouring cells hold an Alive in state 0.
 *  - Candidate.update, Alive.update: an agent changes its own fields and cell, or replaces
 *    itself (new agent in its own cell, then deletes itself); it reads nothing of others.
 *  - Alive.createCandidates: a new Alive puts a Candidate into each empty neighbouring
 *    cell for which it is the *designated creator*: the first new Alive around that cell
 *    in the original's scan order (dx, then dy, from -1 to 1). The designation reads only
 *    which cells hold a new Alive, which nobody changes in this phase, so exactly one
 *    agent writes each such cell, whatever the visiting order. The original does this
 *    inside Alive::update and settles who writes with an atomicCAS on Cell::reserved_;
 *    smmo runs it as a phase of its own after Alive.update (as game-of-life does), so no
 *    object read by a method is deleted under it. Alive.update never empties a cell, so
 *    the empty cells — and so the Candidates created — are the same.
 *
 * Cell.kind (the original has `reserved_: int` instead, the CAS flag that the designated
 * creator replaces): what the cell holds, written together with Cell.agent by the agent
 * that owns the cell (or the designated creator). Neighbour tests read it instead of
 * following `agent` (one view per neighbour instead of two), as game-of-life's
 * Cell.state. Invariant between passes: EMPTY ⇔ agent = null; CANDIDATE ⇔ a Candidate;
 * ALIVE / NEW ⇔ an Alive in state 0 with isNew false / true; DYING ⇔ an Alive in state
 * 1 … 255.
 *
 * Backends: there are no WASM kernels; with `--backend wasm` these methods run as
 * TypeScript (compiled, as on `ts`).
 */
import { bool, i32, i8, object, ref, u8, type SmmoContext } from '../../runtime/index.js';
import { cellTable } from '../grid.js';

export const ACTION_NONE = 0;
export const ACTION_DIE = 1;
export const ACTION_SPAWN = 2;

/** The last state of a dying Alive (the original's kNumStates). */
export const NUM_STATES = 255;
/** Bit n set: an Alive in state 0 with n neighbours in state 0 stays in state 0 (kStayAlive: 0, 2, 3, 5, 6, 7, 8). */
export const STAY_ALIVE = 0b111101101;
/** Bit n set: a Candidate with n neighbours in state 0 comes alive (kSpawnNew: 3, 4, 6, 8). */
export const SPAWN = 0b101011000;

/** Values of Cell.kind. */
export const CELL_EMPTY = 0;
export const CELL_CANDIDATE = 1;
export const CELL_ALIVE = 2; // an Alive in state 0 that is not new
export const CELL_NEW = 3; // an Alive (state 0) that came alive in this step
export const CELL_DYING = 4; // an Alive in state 1 … NUM_STATES

/** One grid cell. */
export class Cell extends object({
  agent: ref<Agent>('Agent'), // the Alive or Candidate here, or null
  kind: u8, // CELL_*: what `agent` is (see the file header)
}) {}

/** What lives in a cell (abstract: every agent is an Alive or a Candidate). */
export abstract class Agent extends object(
  {
    cellId: i32, // index of the agent's cell
    action: i8, // ACTION_NONE | ACTION_DIE | ACTION_SPAWN, decided by prepare
  },
  { abstract: true },
) {
  /** The cell with id `id` (ids: apps/grid.ts). */
  protected cell(ctx: SmmoContext, cells: Uint32Array, id: number): Cell {
    return ctx.get(Cell, cells[id]!);
  }

  /** Alives in state 0 among the (up to) 8 neighbours of this agent's cell (own cell excluded). */
  protected aliveNeighbours(width: number, height: number): number {
    const ctx = this.runtime;
    const cells = cellTable(ctx, Cell, width * height);
    const id = this.cellId;
    const x = id % width;
    const y = (id - x) / width;
    const x0 = x > 0 ? x - 1 : 0;
    const x1 = x < width - 1 ? x + 1 : x;
    const y0 = y > 0 ? y - 1 : 0;
    const y1 = y < height - 1 ? y + 1 : y;
    let n = 0;
    for (let ny = y0; ny <= y1; ny++) {
      for (let c = ny * width + x0, end = ny * width + x1; c <= end; c++) {
        if (c !== id) {
          const kind = ctx.get(Cell, cells[c]!).kind;
          if (kind === CELL_ALIVE || kind === CELL_NEW) n++;
        }
      }
    }
    return n;
  }
}

/** An occupied cell: alive (state 0) or dying (states 1 … NUM_STATES). */
export class Alive extends Agent.extend({
  state: u8, // 0: alive; 1 … NUM_STATES: dying
  isNew: bool, // came alive in this step: must still create its Candidates
}) {
  /** Decide (state 0 only): start dying unless the number of state-0 neighbours is in STAY_ALIVE. */
  prepare(width: number, height: number): void {
    if (this.state !== 0) return;
    if (this.isNew) {
      this.isNew = false;
      const ctx = this.runtime;
      this.cell(ctx, cellTable(ctx, Cell, width * height), this.cellId).kind = CELL_ALIVE;
    }
    const n = this.aliveNeighbours(width, height);
    if (((STAY_ALIVE >> n) & 1) === 0) this.action = ACTION_DIE;
  }

  /** Age: state 0 → 1 when dying, s → s + 1 below NUM_STATES, and after NUM_STATES become a Candidate. */
  update(width: number, height: number): void {
    if (this.isNew) return;
    const state = this.state;
    if (state === 0) {
      if (this.action !== ACTION_DIE) return;
      this.state = 1;
      this.action = ACTION_NONE;
      const ctx = this.runtime;
      this.cell(ctx, cellTable(ctx, Cell, width * height), this.cellId).kind = CELL_DYING;
    } else if (state < NUM_STATES) {
      this.state = state + 1;
    } else {
      const ctx = this.runtime;
      const id = this.cellId;
      const cell = this.cell(ctx, cellTable(ctx, Cell, width * height), id);
      cell.agent = newCandidate(ctx, id);
      cell.kind = CELL_CANDIDATE;
      this.destroy();
    }
  }

  /** A new Alive puts Candidates into the empty cells around it that it is the designated creator of. */
  createCandidates(width: number, height: number): void {
    if (!this.isNew) return;
    const ctx = this.runtime;
    const cells = cellTable(ctx, Cell, width * height);
    const id = this.cellId;
    const x = id % width;
    const y = (id - x) / width;
    for (let dx = -1; dx <= 1; dx++) {
      const nx = x + dx;
      if (nx < 0 || nx >= width) continue;
      for (let dy = -1; dy <= 1; dy++) {
        const ny = y + dy;
        if (ny < 0 || ny >= height) continue;
        const target = ny * width + nx;
        const cell = this.cell(ctx, cells, target);
        if (cell.kind === CELL_EMPTY && this.isCreatorOf(ctx, cells, nx, ny, width, height)) {
          cell.agent = newCandidate(ctx, target);
          cell.kind = CELL_CANDIDATE;
        }
      }
    }
  }

  /** Whether this is the first new Alive around cell (x, y) in scan order (dx, then dy). */
  private isCreatorOf(ctx: SmmoContext, cells: Uint32Array, x: number, y: number, width: number, height: number): boolean {
    for (let dx = -1; dx <= 1; dx++) {
      const nx = x + dx;
      if (nx < 0 || nx >= width) continue;
      for (let dy = -1; dy <= 1; dy++) {
        const ny = y + dy;
        if (ny < 0 || ny >= height) continue;
        // CELL_NEW ⇔ the cell holds a new Alive (file header); one cell holds one agent.
        const c = ny * width + nx;
        if (this.cell(ctx, cells, c).kind === CELL_NEW) return c === this.cellId;
      }
    }
    // Unreachable: this Alive is new and next to (x, y).
    throw new Error(`generation: no new Alive next to cell (${x}, ${y}), yet Alive ${this.handle} at cell ${this.cellId} is new`);
  }
}

/** An empty cell next to an Alive in state 0 (the only empty cells that can come alive). */
export class Candidate extends Agent.extend({}) {
  /** Decide: come alive with a number of state-0 neighbours in SPAWN; disappear with none. */
  prepare(width: number, height: number): void {
    const n = this.aliveNeighbours(width, height);
    if (((SPAWN >> n) & 1) !== 0) this.action = ACTION_SPAWN;
    else if (n === 0) this.action = ACTION_DIE;
  }

  /** Carry out the decision: become a new Alive (state 0), or leave the cell empty. */
  update(width: number, height: number): void {
    const action = this.action;
    if (action === ACTION_NONE) return;
    const ctx = this.runtime;
    const id = this.cellId;
    const cell = this.cell(ctx, cellTable(ctx, Cell, width * height), id);
    if (action === ACTION_SPAWN) {
      cell.agent = newAlive(ctx, id);
      cell.kind = CELL_NEW;
    } else {
      cell.agent = null;
      cell.kind = CELL_EMPTY;
    }
    this.destroy();
  }
}

// Fields set one by one rather than through create()'s init object (game-of-life: model.ts).

/** A new Alive (state 0, isNew) in cell `cellId`; the caller links it from the cell and sets the cell's kind to CELL_NEW. */
export function newAlive(ctx: SmmoContext, cellId: number): Alive {
  const a = ctx.create(Alive);
  a.cellId = cellId;
  a.isNew = true;
  return a;
}

/** A new Candidate in cell `cellId`; the caller links it from the cell and sets the cell's kind to CELL_CANDIDATE. */
function newCandidate(ctx: SmmoContext, cellId: number): Candidate {
  const c = ctx.create(Candidate);
  c.cellId = cellId;
  return c;
}

/** Every class of the app, the abstract one included. */
export const CLASSES = [Cell, Agent, Alive, Candidate];
