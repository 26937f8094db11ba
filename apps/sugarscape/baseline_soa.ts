/**
 * sugarscape baseline, SOA: one typed array per field, allocated once. A cell holds at
 * most one agent, so agent fields are indexed by the agent's cell id too (a move copies
 * them to the new cell; a death clears the cell's kind); a pass over agents visits the
 * occupied cells listed at its start. References are cell ids (−1 for none). Same start,
 * random streams, phases and conflict rules as the smmo app (model.ts), so the digest is
 * the same exactly.
 */
import type { Baseline, BaselineRun } from '../baselines/baseline.js';
import { nextInArray, seedAgentStream } from '../wa-tor/stream.js';
import { digestOf, newStates, randomStart, reachOfStart, sizeOf, type CellStates, type SugarStart } from './sugarscape.js';
import { chance, diffusionOf, EMPTY, FEMALE, grown, MALE, MAX_VISION, readyToMate, shareOf } from './rules.js';

export class SugarscapeSoa implements BaselineRun {
  readonly width: number;
  readonly height: number;
  /** The scan radius of cells and females: as the smmo app's (sugarscape.ts Grid), or MAX_VISION when given. */
  readonly reach: number;
  // Cells.
  private readonly sugar: Int32Array;
  private readonly diffusion: Int32Array;
  private readonly capacity: Int32Array;
  private readonly growRate: Int32Array;
  private readonly cellStream: Uint32Array; // 4 words per cell
  private readonly kind: Uint8Array; // EMPTY | MALE | FEMALE
  // Agents, by cell id.
  private readonly agentStream: Uint32Array; // 4 words per cell
  private readonly request: Int32Array;
  private readonly vision: Int32Array;
  private readonly age: Int32Array;
  private readonly maxAge: Int32Array;
  private readonly agentSugar: Int32Array;
  private readonly metabolism: Int32Array;
  private readonly endowment: Int32Array;
  private readonly permission: Uint8Array;
  private readonly femaleRequest: Int32Array;
  private readonly accepted: Uint8Array;
  private readonly maxChildren: Int32Array;
  private readonly numChildren: Int32Array;
  /** Occupied cells at the start of a pass. */
  private readonly list: Int32Array;

  constructor(start: SugarStart, reach?: number) {
    const n = start.width * start.height;
    this.width = start.width;
    this.height = start.height;
    this.reach = reach ?? reachOfStart(start);
    this.sugar = Int32Array.from(start.sugar);
    this.diffusion = new Int32Array(n);
    this.capacity = Int32Array.from(start.capacity);
    this.growRate = Int32Array.from(start.growRate);
    this.cellStream = Uint32Array.from(start.streams);
    this.kind = new Uint8Array(n);
    this.agentStream = new Uint32Array(4 * n);
    this.request = new Int32Array(n).fill(-1);
    this.vision = new Int32Array(n);
    this.age = new Int32Array(n);
    this.maxAge = new Int32Array(n);
    this.agentSugar = new Int32Array(n);
    this.metabolism = new Int32Array(n);
    this.endowment = new Int32Array(n);
    this.permission = new Uint8Array(n);
    this.femaleRequest = new Int32Array(n).fill(-1);
    this.accepted = new Uint8Array(n);
    this.maxChildren = new Int32Array(n);
    this.numChildren = new Int32Array(n);
    this.list = new Int32Array(n);
    for (const a of start.agents) {
      this.place(a.cell, a.kind, a.seed, a.vision, a.age, a.maxAge, a.endowment, a.metabolism, a.maxChildren);
      this.agentSugar[a.cell] = a.sugar;
      this.numChildren[a.cell] = a.numChildren;
    }
  }

  /** A new agent in the free cell `c` (the Agent constructor). */
  private place(
    c: number,
    kind: number,
    seed: number,
    vision: number,
    age: number,
    maxAge: number,
    endowment: number,
    metabolism: number,
    maxChildren: number,
  ): void {
    this.kind[c] = kind;
    seedAgentStream(this.agentStream, 4 * c, seed);
    this.request[c] = -1;
    this.vision[c] = vision;
    this.age[c] = age;
    this.maxAge[c] = maxAge;
    this.agentSugar[c] = endowment;
    this.metabolism[c] = metabolism;
    this.endowment[c] = endowment;
    this.permission[c] = 0;
    this.femaleRequest[c] = -1;
    this.accepted[c] = 0;
    this.maxChildren[c] = kind === FEMALE ? maxChildren : 0;
    this.numChildren[c] = 0;
  }

  /** Move the agent in cell `from` to the free cell `to`. */
  private move(from: number, to: number): void {
    this.kind[to] = this.kind[from]!;
    this.kind[from] = EMPTY;
    this.agentStream.copyWithin(4 * to, 4 * from, 4 * from + 4);
    for (const f of [
      this.vision,
      this.age,
      this.maxAge,
      this.agentSugar,
      this.metabolism,
      this.endowment,
      this.maxChildren,
      this.numChildren,
    ]) {
      f[to] = f[from]!;
    }
    this.request[to] = -1;
    this.request[from] = -1;
    this.permission[to] = 0;
    this.permission[from] = 0;
    this.femaleRequest[to] = -1;
    this.accepted[to] = 0;
  }

  /** List the occupied cells (of `only`, or any kind) into `list`; returns how many. */
  private occupied(only = EMPTY): number {
    const { kind, list } = this;
    let k = 0;
    for (let c = 0; c < kind.length; c++) if (kind[c] !== EMPTY && (only === EMPTY || kind[c] === only)) list[k++] = c;
    return k;
  }

  step(): void {
    const { sugar, diffusion, kind, agentStream, request, agentSugar, permission, femaleRequest, accepted, list } = this;
    const n = sugar.length;
    // --- SUGAR ---
    for (let c = 0; c < n; c++) sugar[c] = grown(sugar[c]!, this.capacity[c]!, this.growRate[c]!);
    for (let c = 0; c < n; c++) {
      const d = diffusionOf(sugar[c]!);
      diffusion[c] = d;
      sugar[c] = sugar[c]! - d;
    }
    for (let c = 0; c < n; c++) {
      let add = 0;
      this.around(c, MAX_VISION, false, (nb) => {
        add += shareOf(diffusion[nb]!);
      });
      sugar[c] = sugar[c]! + add;
    }
    // --- AGE, MOVE, HARVEST ---
    let k = this.occupied();
    for (let i = 0; i < k; i++) {
      const c = list[i]!;
      this.age[c] = this.age[c]! + 1;
      agentSugar[c] = agentSugar[c]! - this.metabolism[c]!;
      if (this.age[c]! > this.maxAge[c]! || agentSugar[c]! <= 0) kind[c] = EMPTY;
    }
    k = this.occupied();
    for (let i = 0; i < k; i++) {
      const c = list[i]!;
      let target = -1;
      let targetSugar = 0;
      let turn = 0;
      this.around(c, this.vision[c]!, false, (nb) => {
        if (kind[nb] !== EMPTY) return;
        const s = sugar[nb]!;
        if (s > targetSugar) {
          target = nb;
          targetSugar = s;
          turn = 1;
        } else if (s === targetSugar) {
          turn++;
          if (chance(nextInArray(agentStream, 4 * c), turn)) target = nb;
        }
      });
      request[c] = target;
    }
    this.decidePermissions();
    for (let i = 0; i < k; i++) {
      let c = list[i]!;
      if (permission[c] !== 0) {
        const to = request[c]!;
        this.move(c, to);
        c = to;
      }
      agentSugar[c] = agentSugar[c]! + sugar[c]!;
      sugar[c] = 0;
      request[c] = -1;
      permission[c] = 0;
    }
    // --- MATE ---
    k = this.occupied(MALE);
    for (let i = 0; i < k; i++) {
      const m = list[i]!;
      if (!readyToMate(agentSugar[m]!, this.endowment[m]!, this.age[m]!)) continue;
      let target = -1;
      let targetSugar = -1;
      this.around(m, this.vision[m]!, true, (nb) => {
        if (kind[nb] === FEMALE && readyToMate(agentSugar[nb]!, this.endowment[nb]!, this.age[nb]!) && agentSugar[nb]! > targetSugar) {
          target = nb;
          targetSugar = agentSugar[nb]!;
        }
      });
      femaleRequest[m] = target;
    }
    k = this.occupied(FEMALE);
    for (let i = 0; i < k; i++) {
      const f = list[i]!;
      if (this.numChildren[f]! >= this.maxChildren[f]!) continue;
      let selected = -1;
      let selectedSugar = -1;
      this.around(f, this.reach, true, (nb) => {
        if (kind[nb] === MALE && femaleRequest[nb] === f && agentSugar[nb]! > selectedSugar) {
          selected = nb;
          selectedSugar = agentSugar[nb]!;
        }
      });
      if (selected >= 0) accepted[selected] = 1;
    }
    k = this.occupied(MALE);
    for (let i = 0; i < k; i++) {
      const m = list[i]!;
      if (accepted[m] === 0) continue;
      let target = -1;
      let turn = 0;
      this.around(m, this.vision[m]!, false, (nb) => {
        if (kind[nb] !== EMPTY) return;
        turn++;
        if (chance(nextInArray(agentStream, 4 * m), turn)) target = nb;
      });
      request[m] = target;
    }
    this.decidePermissions();
    for (let i = 0; i < k; i++) {
      const m = list[i]!;
      if (accepted[m] !== 0 && permission[m] !== 0) {
        const f = femaleRequest[m]!;
        const to = request[m]!;
        const { endowment, vision, maxAge, metabolism } = this;
        this.numChildren[f] = this.numChildren[f]! + 1;
        const cEndowment = Math.trunc((endowment[m]! + endowment[f]!) / 2);
        agentSugar[m] = agentSugar[m]! - Math.trunc(endowment[m]! / 2);
        agentSugar[f] = agentSugar[f]! - Math.trunc(endowment[f]! / 2);
        const cVision = Math.trunc((vision[m]! + vision[f]!) / 2);
        const cMaxAge = Math.trunc((maxAge[m]! + maxAge[f]!) / 2);
        const cMetabolism = Math.trunc((metabolism[m]! + metabolism[f]!) / 2);
        const male = chance(nextInArray(agentStream, 4 * m), 2);
        const seed = nextInArray(this.cellStream, 4 * to);
        this.place(to, male ? MALE : FEMALE, seed, cVision, 0, cMaxAge, cEndowment, cMetabolism, this.maxChildren[f]!);
      }
      permission[m] = 0;
      accepted[m] = 0;
      femaleRequest[m] = -1;
      request[m] = -1;
    }
  }

  /** Cell.decidePermission for every free cell. */
  private decidePermissions(): void {
    const { kind, request, permission, cellStream } = this;
    for (let c = 0; c < kind.length; c++) {
      if (kind[c] !== EMPTY) continue;
      let turn = 0;
      let selected = -1;
      this.around(c, this.reach, true, (nb) => {
        if (kind[nb] === EMPTY || request[nb] !== c) return;
        turn++;
        if (chance(nextInArray(cellStream, 4 * c), turn)) selected = nb;
      });
      if (selected >= 0) permission[selected] = 1;
    }
  }

  /** fn(n) for every cell n within radius r of cell c, in the original's scan order (dx, then dy); c itself only with `self`. */
  private around(c: number, r: number, self: boolean, fn: (n: number) => void): void {
    const { width, height } = this;
    const x = c % width;
    const y = (c - x) / width;
    for (let dx = -r; dx <= r; dx++) {
      const nx = x + dx;
      if (nx < 0 || nx >= width) continue;
      for (let dy = -r; dy <= r; dy++) {
        const ny = y + dy;
        if (ny < 0 || ny >= height || (!self && dx === 0 && dy === 0)) continue;
        fn(ny * width + nx);
      }
    }
  }

  /** Per-cell state (digestOf's input). */
  states(): CellStates {
    const n = this.sugar.length;
    const out = newStates(n);
    out.sugar.set(this.sugar);
    for (let c = 0; c < n; c++) {
      const k = this.kind[c]!;
      if (k === EMPTY) continue;
      out.kind[c] = k;
      out.agentSugar[c] = this.agentSugar[c]!;
      out.agentAge[c] = this.age[c]!;
      out.children[c] = this.numChildren[c]!;
    }
    return out;
  }

  digest(): number {
    return digestOf(this.states());
  }

  counts(): Record<string, number> {
    let males = 0;
    let females = 0;
    for (const k of this.kind) {
      if (k === MALE) males++;
      else if (k === FEMALE) females++;
    }
    return { Cell: this.kind.length, Male: males, Female: females };
  }
}

const baseline: Baseline = {
  app: 'sugarscape',
  layout: 'soa',
  create: (params, seed) => {
    const { width, height } = sizeOf(params);
    return new SugarscapeSoa(randomStart(width, height, seed));
  },
};
export default baseline;
