/**
 * generation baseline, SOA: one typed array per field of a cell, and typed-array lists
 * of cell ids (occupied cells, candidates), allocated once at the start. Same algorithm
 * and phases as the smmo app (model.ts), so the digest is the same exactly.
 */
import type { Baseline, BaselineRun } from '../baselines/baseline.js';
import { digestOf, startFromParams, type GenStart } from './generation.js';
import { ACTION_DIE, ACTION_NONE, ACTION_SPAWN, NUM_STATES, SPAWN, STAY_ALIVE } from './model.js';

const NONE = 0;
const ALIVE = 1;
const CANDIDATE = 2;

export class GenerationSoa implements BaselineRun {
  readonly width: number;
  readonly height: number;
  // Per cell.
  private readonly agent: Uint8Array; // NONE | ALIVE | CANDIDATE
  private readonly state: Uint8Array; // an Alive's state, 0 … NUM_STATES
  private readonly action: Int8Array; // ACTION_*
  private readonly isNew: Uint8Array;
  // Lists of cell ids; every cell is in at most one list, so each holds width·height.
  private alive: Int32Array;
  private candidates: Int32Array;
  private nextAlive: Int32Array;
  private nextCandidates: Int32Array;
  private numAlive = 0;
  private numCandidates = 0;

  constructor(start: GenStart) {
    const n = start.width * start.height;
    this.width = start.width;
    this.height = start.height;
    this.agent = new Uint8Array(n);
    this.state = new Uint8Array(n);
    this.action = new Int8Array(n);
    this.isNew = new Uint8Array(n);
    this.alive = new Int32Array(n);
    this.candidates = new Int32Array(n);
    this.nextAlive = new Int32Array(n);
    this.nextCandidates = new Int32Array(n);
    for (const id of start.alive) {
      this.agent[id] = ALIVE;
      this.isNew[id] = 1;
      this.alive[this.numAlive++] = id;
    }
    for (let i = 0; i < this.numAlive; i++) this.numCandidates = this.createCandidates(this.alive[i]!, this.candidates, this.numCandidates);
  }

  step(): void {
    const { agent, state, action, isNew } = this;
    // --- DECIDE ---
    for (let i = 0; i < this.numCandidates; i++) {
      const id = this.candidates[i]!;
      const n = this.aliveNeighbours(id);
      if (((SPAWN >> n) & 1) !== 0) action[id] = ACTION_SPAWN;
      else if (n === 0) action[id] = ACTION_DIE;
    }
    for (let i = 0; i < this.numAlive; i++) {
      const id = this.alive[i]!;
      if (state[id] !== 0) continue;
      isNew[id] = 0;
      if (((STAY_ALIVE >> this.aliveNeighbours(id)) & 1) === 0) action[id] = ACTION_DIE;
    }
    // --- APPLY ---
    const alive = this.nextAlive;
    const candidates = this.nextCandidates;
    let na = 0;
    let nc = 0;
    for (let i = 0; i < this.numCandidates; i++) {
      const id = this.candidates[i]!;
      if (action[id] === ACTION_SPAWN) {
        agent[id] = ALIVE;
        state[id] = 0;
        action[id] = ACTION_NONE;
        isNew[id] = 1;
        alive[na++] = id;
      } else if (action[id] === ACTION_DIE) {
        agent[id] = NONE;
        action[id] = ACTION_NONE;
      } else candidates[nc++] = id;
    }
    for (let i = 0; i < this.numAlive; i++) {
      const id = this.alive[i]!;
      const s = state[id]!;
      if (s === 0) {
        if (action[id] === ACTION_DIE) {
          state[id] = 1;
          action[id] = ACTION_NONE;
        }
        alive[na++] = id;
      } else if (s < NUM_STATES) {
        state[id] = s + 1;
        alive[na++] = id;
      } else {
        agent[id] = CANDIDATE;
        action[id] = ACTION_NONE;
        candidates[nc++] = id;
      }
    }
    // --- NEW CANDIDATES ---
    for (let i = 0; i < na; i++) {
      const id = alive[i]!;
      if (isNew[id] !== 0) nc = this.createCandidates(id, candidates, nc);
    }
    this.nextAlive = this.alive;
    this.nextCandidates = this.candidates;
    this.alive = alive;
    this.candidates = candidates;
    this.numAlive = na;
    this.numCandidates = nc;
  }

  /** Alives in state 0 among the neighbours of cell `id` (own cell excluded). */
  private aliveNeighbours(id: number): number {
    const { width, height, agent, state } = this;
    const x = id % width;
    const y = (id - x) / width;
    const x0 = x > 0 ? x - 1 : 0;
    const x1 = x < width - 1 ? x + 1 : x;
    const y0 = y > 0 ? y - 1 : 0;
    const y1 = y < height - 1 ? y + 1 : y;
    let n = 0;
    for (let ny = y0; ny <= y1; ny++) {
      for (let c = ny * width + x0, end = ny * width + x1; c <= end; c++) {
        if (c !== id && agent[c] === ALIVE && state[c] === 0) n++;
      }
    }
    return n;
  }

  /** As Alive.createCandidates; appends to out[at …] and returns the new length. */
  private createCandidates(id: number, out: Int32Array, at: number): number {
    const { width, height, agent, action } = this;
    const x = id % width;
    const y = (id - x) / width;
    for (let dx = -1; dx <= 1; dx++) {
      const nx = x + dx;
      if (nx < 0 || nx >= width) continue;
      for (let dy = -1; dy <= 1; dy++) {
        const ny = y + dy;
        if (ny < 0 || ny >= height) continue;
        const target = ny * width + nx;
        if (agent[target] === NONE && this.firstNewAliveAround(nx, ny) === id) {
          agent[target] = CANDIDATE;
          action[target] = ACTION_NONE;
          out[at++] = target;
        }
      }
    }
    return at;
  }

  private firstNewAliveAround(x: number, y: number): number {
    const { width, height, agent, isNew } = this;
    for (let dx = -1; dx <= 1; dx++) {
      const nx = x + dx;
      if (nx < 0 || nx >= width) continue;
      for (let dy = -1; dy <= 1; dy++) {
        const ny = y + dy;
        if (ny < 0 || ny >= height) continue;
        const c = ny * width + nx;
        if (agent[c] === ALIVE && isNew[c] !== 0) return c;
      }
    }
    return -1;
  }

  /** Per cell: -1 without an Alive, else its state (digestOf's input). */
  states(): Int16Array {
    const out = new Int16Array(this.agent.length);
    for (let i = 0; i < out.length; i++) out[i] = this.agent[i] === ALIVE ? this.state[i]! : -1;
    return out;
  }

  digest(): number {
    return digestOf(this.states());
  }

  counts(): Record<string, number> {
    return { Cell: this.agent.length, Alive: this.numAlive, Candidate: this.numCandidates };
  }
}

const baseline: Baseline = {
  app: 'generation',
  layout: 'soa',
  create: (params, seed) => new GenerationSoa(startFromParams(params, seed)),
};
export default baseline;
