/**
 * game-of-life baseline, AOS: one plain object per grid cell and two lists of cell ids
 * (live cells, candidates), no allocation after the start. Same algorithm and phases
 * as the smmo app (model.ts), so the digest is the same exactly.
 */
import type { Baseline, BaselineRun } from '../baselines/baseline.js';
import { digestOf, startFromParams, type GolStart } from './gol.js';
import { ACTION_DIE, ACTION_NONE, ACTION_SPAWN } from './model.js';

const NONE = 0;
const ALIVE = 1;
const CANDIDATE = 2;

interface CellRecord {
  agent: number; // NONE | ALIVE | CANDIDATE
  action: number; // ACTION_*
  isNew: boolean;
}

export class GolAos implements BaselineRun {
  private readonly cells: CellRecord[];
  private alive: number[] = [];
  private candidates: number[] = [];
  private nextAlive: number[] = [];
  private nextCandidates: number[] = [];
  readonly width: number;
  readonly height: number;

  constructor(start: GolStart) {
    this.width = start.width;
    this.height = start.height;
    this.cells = Array.from({ length: start.width * start.height }, () => ({ agent: NONE, action: ACTION_NONE, isNew: false }));
    for (const id of start.alive) {
      this.cells[id] = { agent: ALIVE, action: ACTION_NONE, isNew: true };
      this.alive.push(id);
    }
    for (const id of this.alive) this.createCandidates(id, this.candidates);
  }

  step(): void {
    const cells = this.cells;
    // --- DECIDE ---
    for (const id of this.candidates) {
      const n = this.aliveNeighbours(id);
      if (n === 3) cells[id]!.action = ACTION_SPAWN;
      else if (n === 0) cells[id]!.action = ACTION_DIE;
    }
    for (const id of this.alive) {
      const c = cells[id]!;
      c.isNew = false;
      const n = this.aliveNeighbours(id);
      if (n < 2 || n > 3) c.action = ACTION_DIE;
    }
    // --- APPLY ---
    const alive = this.nextAlive;
    const candidates = this.nextCandidates;
    alive.length = 0;
    candidates.length = 0;
    for (const id of this.candidates) {
      const c = cells[id]!;
      if (c.action === ACTION_SPAWN) {
        c.agent = ALIVE;
        c.action = ACTION_NONE;
        c.isNew = true;
        alive.push(id);
      } else if (c.action === ACTION_DIE) {
        c.agent = NONE;
        c.action = ACTION_NONE;
      } else candidates.push(id);
    }
    for (const id of this.alive) {
      const c = cells[id]!;
      if (c.action === ACTION_DIE) {
        c.agent = CANDIDATE;
        c.action = ACTION_NONE;
        candidates.push(id);
      } else alive.push(id);
    }
    // --- NEW CANDIDATES ---
    for (const id of alive) if (cells[id]!.isNew) this.createCandidates(id, candidates);
    this.nextAlive = this.alive;
    this.nextCandidates = this.candidates;
    this.alive = alive;
    this.candidates = candidates;
  }

  /** Live neighbours of cell `id` (own cell excluded), counted up to 4, as the smmo version's aliveNeighbours. */
  private aliveNeighbours(id: number): number {
    const { width, height, cells } = this;
    const x = id % width;
    const y = (id - x) / width;
    const x0 = x > 0 ? x - 1 : 0;
    const x1 = x < width - 1 ? x + 1 : x;
    const y0 = y > 0 ? y - 1 : 0;
    const y1 = y < height - 1 ? y + 1 : y;
    let n = 0;
    for (let ny = y0; ny <= y1; ny++) {
      for (let c = ny * width + x0, end = ny * width + x1; c <= end; c++) {
        if (c !== id && cells[c]!.agent === ALIVE && ++n > 3) return n;
      }
    }
    return n;
  }

  /** As Alive.createCandidates: Candidates in the empty cells around `id` that it is the first new Alive of. */
  private createCandidates(id: number, out: number[]): void {
    const { width, height, cells } = this;
    const x = id % width;
    const y = (id - x) / width;
    for (let dx = -1; dx <= 1; dx++) {
      const nx = x + dx;
      if (nx < 0 || nx >= width) continue;
      for (let dy = -1; dy <= 1; dy++) {
        const ny = y + dy;
        if (ny < 0 || ny >= height) continue;
        const target = ny * width + nx;
        const c = cells[target]!;
        if (c.agent === NONE && this.firstNewAliveAround(nx, ny) === id) {
          c.agent = CANDIDATE;
          c.action = ACTION_NONE;
          out.push(target);
        }
      }
    }
  }

  private firstNewAliveAround(x: number, y: number): number {
    const { width, height, cells } = this;
    for (let dx = -1; dx <= 1; dx++) {
      const nx = x + dx;
      if (nx < 0 || nx >= width) continue;
      for (let dy = -1; dy <= 1; dy++) {
        const ny = y + dy;
        if (ny < 0 || ny >= height) continue;
        const c = cells[ny * width + nx]!;
        if (c.agent === ALIVE && c.isNew) return ny * width + nx;
      }
    }
    return -1;
  }

  digest(): number {
    const ids: number[] = [];
    this.cells.forEach((c, i) => {
      if (c.agent === ALIVE) ids.push(i);
    });
    return digestOf(ids);
  }

  counts(): Record<string, number> {
    return { Cell: this.cells.length, Alive: this.alive.length, Candidate: this.candidates.length };
  }
}

const baseline: Baseline = {
  app: 'game-of-life',
  layout: 'aos',
  create: (params, seed) => new GolAos(startFromParams(params, seed)),
};
export default baseline;
