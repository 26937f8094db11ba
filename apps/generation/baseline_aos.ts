/**
 * generation baseline, AOS: one plain object per grid cell and two lists of cell ids
 * (occupied cells, candidates), no allocation after the start. Same algorithm and phases
 * as the smmo app (model.ts), so the digest is the same exactly.
 */
import type { Baseline, BaselineRun } from '../baselines/baseline.js';
import { digestOf, startFromParams, type GenStart } from './generation.js';
import { ACTION_DIE, ACTION_NONE, ACTION_SPAWN, NUM_STATES, SPAWN, STAY_ALIVE } from './model.js';

const NONE = 0;
const ALIVE = 1;
const CANDIDATE = 2;

interface CellRecord {
  agent: number; // NONE | ALIVE | CANDIDATE
  state: number; // an Alive's state, 0 … NUM_STATES
  action: number; // ACTION_*
  isNew: boolean;
}

export class GenerationAos implements BaselineRun {
  private readonly cells: CellRecord[];
  private alive: number[] = [];
  private candidates: number[] = [];
  private nextAlive: number[] = [];
  private nextCandidates: number[] = [];
  readonly width: number;
  readonly height: number;

  constructor(start: GenStart) {
    this.width = start.width;
    this.height = start.height;
    this.cells = Array.from({ length: start.width * start.height }, () => ({ agent: NONE, state: 0, action: ACTION_NONE, isNew: false }));
    for (const id of start.alive) {
      this.cells[id] = { agent: ALIVE, state: 0, action: ACTION_NONE, isNew: true };
      this.alive.push(id);
    }
    for (const id of this.alive) this.createCandidates(id, this.candidates);
  }

  step(): void {
    const cells = this.cells;
    // --- DECIDE ---
    for (const id of this.candidates) {
      const n = this.aliveNeighbours(id);
      if (((SPAWN >> n) & 1) !== 0) cells[id]!.action = ACTION_SPAWN;
      else if (n === 0) cells[id]!.action = ACTION_DIE;
    }
    for (const id of this.alive) {
      const c = cells[id]!;
      if (c.state !== 0) continue;
      c.isNew = false;
      if (((STAY_ALIVE >> this.aliveNeighbours(id)) & 1) === 0) c.action = ACTION_DIE;
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
        c.state = 0;
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
      if (c.state === 0) {
        if (c.action === ACTION_DIE) {
          c.state = 1;
          c.action = ACTION_NONE;
        }
        alive.push(id);
      } else if (c.state < NUM_STATES) {
        c.state++;
        alive.push(id);
      } else {
        c.agent = CANDIDATE;
        c.action = ACTION_NONE;
        candidates.push(id);
      }
    }
    // --- NEW CANDIDATES ---
    for (const id of alive) if (cells[id]!.isNew) this.createCandidates(id, candidates);
    this.nextAlive = this.alive;
    this.nextCandidates = this.candidates;
    this.alive = alive;
    this.candidates = candidates;
  }

  /** Alives in state 0 among the neighbours of cell `id` (own cell excluded). */
  private aliveNeighbours(id: number): number {
    const { width, height, cells } = this;
    const x = id % width;
    const y = (id - x) / width;
    let n = 0;
    for (let ny = Math.max(y - 1, 0); ny <= Math.min(y + 1, height - 1); ny++) {
      for (let nx = Math.max(x - 1, 0); nx <= Math.min(x + 1, width - 1); nx++) {
        const c = ny * width + nx;
        if (c !== id && cells[c]!.agent === ALIVE && cells[c]!.state === 0) n++;
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
    return digestOf(this.cells.map((c) => (c.agent === ALIVE ? c.state : -1)));
  }

  counts(): Record<string, number> {
    return { Cell: this.cells.length, Alive: this.alive.length, Candidate: this.candidates.length };
  }
}

const baseline: Baseline = {
  app: 'generation',
  layout: 'aos',
  create: (params, seed) => new GenerationAos(startFromParams(params, seed)),
};
export default baseline;
