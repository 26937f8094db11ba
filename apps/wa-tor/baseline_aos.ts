/**
 * wa-tor baseline, AOS: one plain JavaScript object per cell that also holds the fields
 * of the agent on it (as the original's baseline_aos: no agent objects, no allocation
 * after the start). A moving agent's fields are copied to the cell it enters.
 *
 * Same phases, streams and conflict rules as the smmo app (model.ts), so the digest is
 * the same exactly. As in the original baseline, an `active` flag keeps an update pass
 * from visiting an agent twice (after it moved to a cell further down the scan) or a
 * newborn: the smmo pass only visits objects that existed when it started.
 */
import type { Baseline, BaselineRun } from '../baselines/baseline.js';
import { fnvWord, FNV_OFFSET } from '../hash.js';
import { ENERGY_BOOST, ENERGY_START, SPAWN_THRESHOLD, STAY } from './model.js';
import { nextInArray, nextInWords, seedAgentStream, seedCellStream, type StreamWords } from './stream.js';
import { checkSize, KIND_FISH, KIND_SHARK, neighborId, sizeOf } from './wator.js';

const NONE = 0;
const FISH = KIND_FISH;
const SHARK = KIND_SHARK;

interface CellRecord {
  random: StreamWords; // the cell's stream
  request: boolean[]; // LEFT … BOTTOM, STAY
  // The agent on this cell, if agentType is not NONE:
  agentType: number;
  agentRandom: StreamWords;
  newPosition: number;
  eggTimer: number;
  energy: number;
  active: boolean;
}

const words = (w: Uint32Array): StreamWords => ({ s0: w[0]!, s1: w[1]!, s2: w[2]!, s3: w[3]! });

export class WatorAos implements BaselineRun {
  private readonly cells: CellRecord[];
  private readonly scratch = new Uint32Array(4);

  constructor(
    readonly width: number,
    readonly height: number,
    seed: number,
  ) {
    checkSize(width, height);
    const stream = new Uint32Array(4); // the cell stream (this.scratch is spawn's)
    this.cells = [];
    for (let i = 0; i < width * height; i++) {
      seedCellStream(stream, 0, seed, i);
      const kind = nextInArray(stream, 0) % 4;
      const c: CellRecord = {
        random: { s0: 0, s1: 0, s2: 0, s3: 0 },
        request: [false, false, false, false, false],
        agentType: NONE,
        agentRandom: { s0: 0, s1: 0, s2: 0, s3: 0 },
        newPosition: i,
        eggTimer: 0,
        energy: 0,
        active: true,
      };
      this.cells.push(c);
      if (kind === 0) this.spawn(c, FISH, nextInArray(stream, 0));
      else if (kind === 1) this.spawn(c, SHARK, nextInArray(stream, 0));
      c.random = words(stream);
    }
    for (const c of this.cells) c.active = true;
  }

  step(): void {
    // --- FISH ---
    this.cellPrepare();
    this.agentPrepare(FISH);
    this.cellDecide();
    this.agentUpdate(FISH);
    // --- SHARKS ---
    this.cellPrepare();
    this.agentPrepare(SHARK);
    this.cellDecide();
    this.agentUpdate(SHARK);
  }

  private spawn(c: CellRecord, type: number, seed: number): void {
    seedAgentStream(this.scratch, 0, seed);
    const r = c.agentRandom;
    r.s0 = this.scratch[0]!;
    r.s1 = this.scratch[1]!;
    r.s2 = this.scratch[2]!;
    r.s3 = this.scratch[3]!;
    c.agentType = type;
    c.eggTimer = seed % SPAWN_THRESHOLD;
    c.energy = type === SHARK ? ENERGY_START : 0;
    c.active = false;
  }

  private cellPrepare(): void {
    for (const c of this.cells) c.request.fill(false);
  }

  private agentPrepare(type: number): void {
    const cells = this.cells;
    for (let i = 0; i < cells.length; i++) {
      const c = cells[i]!;
      if (c.agentType !== type) continue;
      c.eggTimer++;
      if (type === SHARK) {
        c.energy--;
        if (c.energy === 0) continue; // dies in the update
      }
      c.newPosition = i;
      if (type === SHARK && this.request(c, i, FISH)) continue;
      if (!this.request(c, i, NONE)) c.request[STAY] = true;
    }
  }

  /** Request a random neighbour whose agentType is `want`, from the agent's stream. */
  private request(c: CellRecord, i: number, want: number): boolean {
    const { cells, width, height } = this;
    let candidates = 0; // directions, 3 bits each (no temporary arrays)
    let k = 0;
    for (let d = 0; d < 4; d++) if (cells[neighborId(i, d, width, height)]!.agentType === want) candidates |= d << (3 * k++);
    if (k === 0) return false;
    const d = (candidates >>> (3 * (nextInWords(c.agentRandom) % k))) & 7;
    cells[neighborId(i, d, width, height)]!.request[(d + 2) % 4] = true;
    return true;
  }

  private cellDecide(): void {
    const cells = this.cells;
    for (let i = 0; i < cells.length; i++) {
      const c = cells[i]!;
      if (c.request[STAY]) {
        c.newPosition = i;
        continue;
      }
      let candidates = 0;
      let k = 0;
      for (let d = 0; d < 4; d++) if (c.request[d]) candidates |= d << (3 * k++);
      if (k === 0) continue;
      const d = (candidates >>> (3 * (nextInWords(c.random) % k))) & 7;
      cells[neighborId(i, d, this.width, this.height)]!.newPosition = i;
    }
  }

  private agentUpdate(type: number): void {
    const cells = this.cells;
    for (let i = 0; i < cells.length; i++) {
      const c = cells[i]!;
      if (c.agentType !== type || !c.active) continue;
      if (type === SHARK && c.energy === 0) {
        c.agentType = NONE;
        continue;
      }
      if (c.newPosition === i) continue;
      const to = cells[c.newPosition]!;
      if (type === SHARK && to.agentType === FISH) c.energy += ENERGY_BOOST; // the fish is eaten (overwritten below)
      // Enter: the agent's fields move to the new cell (the stream object is swapped, not copied).
      const r = to.agentRandom;
      to.agentRandom = c.agentRandom;
      c.agentRandom = r;
      to.agentType = type;
      to.eggTimer = c.eggTimer;
      to.energy = c.energy;
      to.newPosition = c.newPosition;
      to.active = false;
      c.agentType = NONE;
      if (to.eggTimer > SPAWN_THRESHOLD) {
        this.spawn(c, type, nextInWords(to.agentRandom));
        to.eggTimer = 0;
      }
    }
    for (const c of cells) c.active = true;
  }

  digest(): number {
    let h = FNV_OFFSET;
    let fish = 0;
    let sharks = 0;
    this.cells.forEach((c, i) => {
      if (c.agentType === FISH) fish++;
      else if (c.agentType === SHARK) sharks++;
      else return;
      h = fnvWord(h, 4 * i + c.agentType);
    });
    return 3 * fish + 7 * sharks + h;
  }

  counts(): Record<string, number> {
    let fish = 0;
    let sharks = 0;
    for (const c of this.cells) {
      if (c.agentType === FISH) fish++;
      else if (c.agentType === SHARK) sharks++;
    }
    return { Cell: this.cells.length, Fish: fish, Shark: sharks };
  }
}

const baseline: Baseline = {
  app: 'wa-tor',
  layout: 'aos',
  create: (params, seed) => new WatorAos(...sizeOf(params), seed),
};
export default baseline;
