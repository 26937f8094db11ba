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
 */
import { bool, i32, i8, object, ref, type SmmoContext } from '../../runtime/index.js';
import { cellTable } from '../grid.js';

export const ACTION_NONE = 0;
export const ACTION_DIE = 1;
export const ACTION_SPAWN = 2;

/** One grid cell. */
export class Cell extends object({
  agent: ref<Agent>('Agent'), // the Alive or Candidate here, or null
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

  /** Alive agents in the 3 × 3 block of cells around this agent's cell, its own cell included. */
  protected aliveAround(width: number, height: number): number {
    const ctx = this.runtime;
    const cells = cellTable(ctx, Cell, width * height);
    const id = this.cellId;
    const x = id % width;
    const y = (id - x) / width;
    let n = 0;
    for (let dx = -1; dx <= 1; dx++) {
      const nx = x + dx;
      if (nx < 0 || nx >= width) continue;
      for (let dy = -1; dy <= 1; dy++) {
        const ny = y + dy;
        if (ny < 0 || ny >= height) continue;
        if (this.cell(ctx, cells, ny * width + nx).agent instanceof Alive) n++;
      }
    }
    return n;
  }
}

/** A live cell. */
export class Alive extends Agent.extend({
  isNew: bool, // came alive in this step: must still create its Candidates
}) {
  /** Decide: die with fewer than 2 or more than 3 live neighbours. */
  prepare(width: number, height: number): void {
    this.isNew = false;
    const neighbours = this.aliveAround(width, height) - 1; // aliveAround counts this cell too
    if (neighbours < 2 || neighbours > 3) this.action = ACTION_DIE;
  }

  /** A dying Alive becomes a Candidate (its cell may come alive again). */
  update(width: number, height: number): void {
    if (this.isNew || this.action !== ACTION_DIE) return;
    const ctx = this.runtime;
    const id = this.cellId;
    const cell = this.cell(ctx, cellTable(ctx, Cell, width * height), id);
    cell.agent = ctx.create(Candidate, { cellId: id });
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
        if (cell.agent === null && this.isCreatorOf(ctx, cells, nx, ny, width, height)) {
          cell.agent = ctx.create(Candidate, { cellId: target });
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
        const a = this.cell(ctx, cells, ny * width + nx).agent;
        if (a instanceof Alive && a.isNew) return a.handle === this.handle;
      }
    }
    // Unreachable: this Alive is new and next to (x, y).
    throw new Error(`game-of-life: no new Alive next to cell (${x}, ${y}), yet Alive ${this.handle} at cell ${this.cellId} is new`);
  }
}

/** An empty cell next to a live one. */
export class Candidate extends Agent.extend({}) {
  /** Decide: come alive with exactly 3 live neighbours; disappear with none. */
  prepare(width: number, height: number): void {
    const n = this.aliveAround(width, height);
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
    cell.agent = action === ACTION_SPAWN ? ctx.create(Alive, { cellId: id, isNew: true }) : null;
    this.destroy();
  }
}

/** Every class of the app, the abstract one included. */
export const CLASSES = [Cell, Agent, Alive, Candidate];
