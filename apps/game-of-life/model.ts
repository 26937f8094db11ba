/**
 * game-of-life classes: Conway's rules with work proportional to the live cells, as the
 * original DynaSOAr example (example/game-of-life/dynasoar, commit a4f956c).
 *
 * Every grid cell is a Cell; a cell holds at most one Agent: an Alive (a live cell) or
 * a Candidate (an empty cell next to a live one, the only dead cells that can come
 * alive). Only agents are visited, so a step costs O(live cells), not O(grid).
 * No wrap-around: cells outside the grid are dead. Cell ids: apps/grid.ts (cell i is
 * the Cell with the i-th smallest handle; x = i mod width, y = ⌊i / width⌋).
 *
 * Who writes what, per phase (why the result is the same for any number of threads):
 *  - Candidate.prepare, Alive.prepare: each agent writes only its own fields; they read
 *    which neighbouring cells hold an Alive (nobody creates or deletes agents here).
 *  - Candidate.update, Alive.update: an agent replaces itself (new agent in its own cell,
 *    then deletes itself); it reads nothing of other agents.
 *  - Alive.createCandidates: a new Alive puts a Candidate into each empty neighbouring
 *    cell for which it is the *designated creator*: the first new Alive around that
 *    cell in the original's scan order (dx, then dy, from -1 to 1). The designation only
 *    reads which cells hold a new Alive, which no one changes in this phase, so exactly
 *    one agent writes each such cell, whatever the visiting order.
 *    The original does this inside Alive.update, where dying Alives are deleted while
 *    other threads read their `isNew`; smmo runs it as a separate phase after
 *    Alive.update so that no object read by a method can be deleted under it. The
 *    outcome is the same: a dying Alive becomes a Candidate, never an empty cell.
 *
 * Cell.state (not in the original): what the cell holds, written together with
 * Cell.agent by the agent that owns the cell (or the designated creator). Neighbour
 * tests read it instead of following `agent` (one view per neighbour, not two: each
 * view costs an object allocation, and aliveNeighbours runs up to 8 lookups per agent per step).
 * Invariant between passes: state = CELL_EMPTY ⇔ agent = null; CELL_CANDIDATE ⇔ a
 * Candidate; CELL_ALIVE / CELL_NEW ⇔ an Alive with isNew false / true. In Alive.prepare
 * a new Alive moves its cell from CELL_NEW to CELL_ALIVE while others read it, but they
 * only ask "alive?", which both values answer alike.
 *
 * Backends: with `--backend wasm` all five passes run as the Rust kernels of
 * wasm/src/gol.rs (declared in kernels.ts), with the same rules, reads and writes, the
 * allocating ones through the allocator core; with `--backend webgpu` as the WGSL kernels
 * runtime/webgpu/wgsl/gol_*.wgsl (the allocating ones through alloc.wgsl); the methods
 * below stay the reference.
 */
import { bool, i32, i8, KERNELS, object, ref, u8, type SmmoContext } from '../../runtime/index.js';
import { cellTable } from '../grid.js';
import { aliveKernels, candidateKernels } from './kernels.js';

export const ACTION_NONE = 0;
export const ACTION_DIE = 1;
export const ACTION_SPAWN = 2;

/** Values of Cell.state. */
export const CELL_EMPTY = 0;
export const CELL_CANDIDATE = 1;
export const CELL_ALIVE = 2; // an Alive that is not new
export const CELL_NEW = 3; // an Alive that came alive in this step

/** One grid cell. */
export class Cell extends object({
  agent: ref<Agent>('Agent'), // the Alive or Candidate here, or null
  state: u8, // CELL_*: what `agent` is (see the file header)
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

  /**
   * Live cells among the (up to) 8 neighbours of this agent's cell, counted up to 4: the
   * rules only tell 0, 2, 3 and "more than 3" apart, so the count stops there. The own
   * cell is not looked at: it holds this agent.
   */
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
        if (c !== id && ctx.get(Cell, cells[c]!).state >= CELL_ALIVE && ++n > 3) return n;
      }
    }
    return n;
  }
}

/** A live cell. */
export class Alive extends Agent.extend({
  isNew: bool, // came alive in this step: must still create its Candidates
}) {
  static readonly [KERNELS] = aliveKernels; // prepare, update, createCandidates (kernels.ts)

  /** Decide: die with fewer than 2 or more than 3 live neighbours. */
  prepare(width: number, height: number): void {
    if (this.isNew) {
      this.isNew = false;
      const ctx = this.runtime;
      this.cell(ctx, cellTable(ctx, Cell, width * height), this.cellId).state = CELL_ALIVE;
    }
    const neighbours = this.aliveNeighbours(width, height);
    if (neighbours < 2 || neighbours > 3) this.action = ACTION_DIE;
  }

  /** A dying Alive becomes a Candidate (its cell may come alive again). */
  update(width: number, height: number): void {
    if (this.isNew || this.action !== ACTION_DIE) return;
    const ctx = this.runtime;
    const id = this.cellId;
    const cell = this.cell(ctx, cellTable(ctx, Cell, width * height), id);
    cell.agent = newCandidate(ctx, id);
    cell.state = CELL_CANDIDATE;
    this.destroy();
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
        if (cell.state === CELL_EMPTY && this.isCreatorOf(ctx, cells, nx, ny, width, height)) {
          cell.agent = newCandidate(ctx, target);
          cell.state = CELL_CANDIDATE;
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
        if (this.cell(ctx, cells, c).state === CELL_NEW) return c === this.cellId;
      }
    }
    // Unreachable: this Alive is new and next to (x, y).
    throw new Error(`game-of-life: no new Alive next to cell (${x}, ${y}), yet Alive ${this.handle} at cell ${this.cellId} is new`);
  }
}

/** An empty cell next to a live one. */
export class Candidate extends Agent.extend({}) {
  static readonly [KERNELS] = candidateKernels; // prepare, update (kernels.ts)

  /** Decide: come alive with exactly 3 live neighbours; disappear with none. */
  prepare(width: number, height: number): void {
    const n = this.aliveNeighbours(width, height);
    if (n === 3) this.action = ACTION_SPAWN;
    else if (n === 0) this.action = ACTION_DIE;
  }

  /** Carry out the decision: become an Alive, or leave the cell empty. */
  update(width: number, height: number): void {
    const action = this.action;
    if (action === ACTION_NONE) return;
    const ctx = this.runtime;
    const id = this.cellId;
    const cell = this.cell(ctx, cellTable(ctx, Cell, width * height), id);
    if (action === ACTION_SPAWN) {
      cell.agent = newAlive(ctx, id);
      cell.state = CELL_NEW;
    } else {
      cell.agent = null;
      cell.state = CELL_EMPTY;
    }
    this.destroy();
  }
}

// Fields set one by one rather than through create()'s init object, which looks each
// key up by name (measured: a tenth of the update passes).

/** A new Alive (isNew) in cell `cellId`; the caller links it from the cell and sets the cell's state to CELL_NEW. */
export function newAlive(ctx: SmmoContext, cellId: number): Alive {
  const a = ctx.create(Alive);
  a.cellId = cellId;
  a.isNew = true;
  return a;
}

/** A new Candidate in cell `cellId`; the caller links it from the cell and sets the cell's state to CELL_CANDIDATE. */
function newCandidate(ctx: SmmoContext, cellId: number): Candidate {
  const c = ctx.create(Candidate);
  c.cellId = cellId;
  return c;
}

/** Every class of the app, the abstract one included. */
export const CLASSES = [Cell, Agent, Alive, Candidate];
