/**
 * wa-tor baseline, SOA: one typed array per field of a cell, the fields of the agent on
 * a cell included (as the original's baseline_soa: no agent objects, no allocation
 * after the start). A moving agent's fields are copied to the cell it enters.
 *
 * Same phases, streams and conflict rules as the smmo app (model.ts), so the digest is
 * the same exactly; `active` as in baseline_aos.ts.
 */
import type { Baseline, BaselineRun } from '../baselines/baseline.js';
import { fnvWord, FNV_OFFSET } from '../hash.js';
import { ENERGY_BOOST, ENERGY_START, SPAWN_THRESHOLD, STAY } from './model.js';
import { nextInArray, seedAgentStream, seedCellStream } from './stream.js';
import { checkSize, KIND_FISH, KIND_SHARK, neighborId, sizeOf } from './wator.js';

const NONE = 0;
const FISH = KIND_FISH;
const SHARK = KIND_SHARK;

export class WatorSoa implements BaselineRun {
  readonly n: number;
  // Per cell i (streams: 4 words at 4i; requests: 5 flags at 5i). Neighbours are computed.
  private readonly random: Uint32Array;
  private readonly request: Uint8Array;
  // The agent on cell i.
  private readonly agentType: Uint8Array;
  private readonly agentRandom: Uint32Array;
  private readonly newPosition: Int32Array;
  private readonly eggTimer: Uint32Array;
  private readonly energy: Uint32Array;
  private readonly active: Uint8Array;

  constructor(
    readonly width: number,
    readonly height: number,
    seed: number,
  ) {
    checkSize(width, height);
    const n = (this.n = width * height);
    this.random = new Uint32Array(4 * n);
    this.request = new Uint8Array(5 * n);
    this.agentType = new Uint8Array(n);
    this.agentRandom = new Uint32Array(4 * n);
    this.newPosition = new Int32Array(n);
    this.eggTimer = new Uint32Array(n);
    this.energy = new Uint32Array(n);
    this.active = new Uint8Array(n);
    for (let i = 0; i < n; i++) {
      seedCellStream(this.random, 4 * i, seed, i);
      const kind = nextInArray(this.random, 4 * i) % 4;
      if (kind === 0) this.spawn(i, FISH, nextInArray(this.random, 4 * i));
      else if (kind === 1) this.spawn(i, SHARK, nextInArray(this.random, 4 * i));
    }
    this.active.fill(1);
  }

  step(): void {
    // --- FISH ---
    this.request.fill(0);
    this.agentPrepare(FISH);
    this.cellDecide();
    this.agentUpdate(FISH);
    // --- SHARKS ---
    this.request.fill(0);
    this.agentPrepare(SHARK);
    this.cellDecide();
    this.agentUpdate(SHARK);
  }

  private spawn(i: number, type: number, seed: number): void {
    seedAgentStream(this.agentRandom, 4 * i, seed);
    this.agentType[i] = type;
    this.eggTimer[i] = seed % SPAWN_THRESHOLD;
    this.energy[i] = type === SHARK ? ENERGY_START : 0;
    this.active[i] = 0;
  }

  private agentPrepare(type: number): void {
    const { agentType, eggTimer, energy, newPosition, request } = this;
    for (let i = 0; i < this.n; i++) {
      if (agentType[i] !== type) continue;
      eggTimer[i]!++;
      if (type === SHARK && --energy[i]! === 0) continue; // dies in the update
      newPosition[i] = i;
      if (type === SHARK && this.request_(i, FISH)) continue;
      if (!this.request_(i, NONE)) request[5 * i + STAY] = 1;
    }
  }

  /** Request a random neighbour whose agentType is `want`, from the agent's stream. */
  private request_(i: number, want: number): boolean {
    const { agentType, width, height } = this;
    let candidates = 0;
    let k = 0;
    for (let d = 0; d < 4; d++) if (agentType[neighborId(i, d, width, height)] === want) candidates |= d << (3 * k++);
    if (k === 0) return false;
    const d = (candidates >>> (3 * (nextInArray(this.agentRandom, 4 * i) % k))) & 7;
    this.request[5 * neighborId(i, d, width, height) + ((d + 2) % 4)] = 1;
    return true;
  }

  private cellDecide(): void {
    const { request, newPosition, width, height } = this;
    for (let i = 0; i < this.n; i++) {
      const r = 5 * i;
      if (request[r + STAY] !== 0) {
        newPosition[i] = i;
        continue;
      }
      let candidates = 0;
      let k = 0;
      for (let d = 0; d < 4; d++) if (request[r + d] !== 0) candidates |= d << (3 * k++);
      if (k === 0) continue;
      const d = (candidates >>> (3 * (nextInArray(this.random, 4 * i) % k))) & 7;
      newPosition[neighborId(i, d, width, height)] = i;
    }
  }

  private agentUpdate(type: number): void {
    const { agentType, agentRandom, newPosition, eggTimer, energy, active } = this;
    for (let i = 0; i < this.n; i++) {
      if (agentType[i] !== type || active[i] === 0) continue;
      if (type === SHARK && energy[i] === 0) {
        agentType[i] = NONE;
        continue;
      }
      const t = newPosition[i]!;
      if (t === i) continue;
      if (type === SHARK && agentType[t] === FISH) energy[i]! += ENERGY_BOOST; // the fish is eaten (overwritten below)
      agentType[t] = type;
      agentRandom.copyWithin(4 * t, 4 * i, 4 * i + 4);
      eggTimer[t] = eggTimer[i]!;
      energy[t] = energy[i]!;
      newPosition[t] = t;
      active[t] = 0;
      agentType[i] = NONE;
      if (eggTimer[t]! > SPAWN_THRESHOLD) {
        this.spawn(i, type, nextInArray(agentRandom, 4 * t));
        eggTimer[t] = 0;
      }
    }
    active.fill(1);
  }

  digest(): number {
    let h = FNV_OFFSET;
    let fish = 0;
    let sharks = 0;
    for (let i = 0; i < this.n; i++) {
      const t = this.agentType[i]!;
      if (t === NONE) continue;
      if (t === FISH) fish++;
      else sharks++;
      h = fnvWord(h, 4 * i + t);
    }
    return 3 * fish + 7 * sharks + h;
  }

  counts(): Record<string, number> {
    let fish = 0;
    let sharks = 0;
    for (let i = 0; i < this.n; i++) {
      if (this.agentType[i] === FISH) fish++;
      else if (this.agentType[i] === SHARK) sharks++;
    }
    return { Cell: this.n, Fish: fish, Shark: sharks };
  }
}

const baseline: Baseline = {
  app: 'wa-tor',
  layout: 'soa',
  create: (params, seed) => new WatorSoa(...sizeOf(params), seed),
};
export default baseline;
