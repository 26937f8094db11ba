/**
 * sugarscape baseline, AOS: one plain object per cell and per agent, agents in an array
 * (children appended, the dead filtered out), no smmo runtime. Same start, random
 * streams, phases and conflict rules as the smmo app (model.ts), so the digest is the
 * same exactly.
 */
import type { Baseline, BaselineRun } from '../baselines/baseline.js';
import { nextInWords, seedAgentStream, type StreamWords } from '../wa-tor/stream.js';
import { digestOf, newStates, randomStart, reachOfStart, sizeOf, type CellStates, type SugarStart } from './sugarscape.js';
import { chance, diffusionOf, FEMALE, grown, MALE, MAX_VISION, readyToMate, shareOf } from './rules.js';

interface CellRec {
  sugar: number;
  diffusion: number;
  capacity: number;
  growRate: number;
  rs: StreamWords;
  agent: AgentRec | null;
}

interface AgentRec {
  male: boolean;
  cell: number; // cell id
  request: number; // requested cell id, -1 for none
  vision: number;
  age: number;
  maxAge: number;
  sugar: number;
  metabolism: number;
  endowment: number;
  permission: boolean;
  rs: StreamWords;
  femaleRequest: AgentRec | null; // males
  accepted: boolean; // males
  maxChildren: number; // females
  numChildren: number; // females
}

const scratch = new Uint32Array(4);

function agentStream(seed: number): StreamWords {
  seedAgentStream(scratch, 0, seed);
  return { s0: scratch[0]!, s1: scratch[1]!, s2: scratch[2]!, s3: scratch[3]! };
}

export class SugarscapeAos implements BaselineRun {
  readonly width: number;
  readonly height: number;
  /** The scan radius of cells and females: as the smmo app's (sugarscape.ts Grid), or MAX_VISION when given. */
  readonly reach: number;
  private readonly cells: CellRec[];
  private agents: AgentRec[] = [];

  constructor(start: SugarStart, reach?: number) {
    this.width = start.width;
    this.height = start.height;
    this.reach = reach ?? reachOfStart(start);
    const s = start.streams;
    this.cells = Array.from({ length: start.width * start.height }, (_, i) => ({
      sugar: start.sugar[i]!,
      diffusion: 0,
      capacity: start.capacity[i]!,
      growRate: start.growRate[i]!,
      rs: { s0: s[4 * i]!, s1: s[4 * i + 1]!, s2: s[4 * i + 2]!, s3: s[4 * i + 3]! },
      agent: null,
    }));
    for (const a of start.agents) {
      const rec = this.newAgent(a.kind === MALE, a.cell, a.seed, a.vision, a.age, a.maxAge, a.endowment, a.metabolism, a.maxChildren);
      rec.sugar = a.sugar;
      rec.numChildren = a.numChildren;
    }
  }

  private newAgent(
    male: boolean,
    cell: number,
    seed: number,
    vision: number,
    age: number,
    maxAge: number,
    endowment: number,
    metabolism: number,
    maxChildren: number,
  ): AgentRec {
    const a: AgentRec = {
      male,
      cell,
      request: -1,
      vision,
      age,
      maxAge,
      sugar: endowment,
      metabolism,
      endowment,
      permission: false,
      rs: agentStream(seed),
      femaleRequest: null,
      accepted: false,
      maxChildren: male ? 0 : maxChildren,
      numChildren: 0,
    };
    this.cells[cell]!.agent = a;
    this.agents.push(a);
    return a;
  }

  step(): void {
    const cells = this.cells;
    // --- SUGAR ---
    for (const c of cells) c.sugar = grown(c.sugar, c.capacity, c.growRate);
    for (const c of cells) {
      c.diffusion = diffusionOf(c.sugar);
      c.sugar -= c.diffusion;
    }
    for (let id = 0; id < cells.length; id++) {
      let add = 0;
      this.forEachAround(id, MAX_VISION, false, (n) => {
        add += shareOf(cells[n]!.diffusion);
      });
      cells[id]!.sugar += add;
    }
    // --- AGE, MOVE, HARVEST ---
    for (const a of this.agents) {
      a.age += 1;
      a.sugar -= a.metabolism;
      if (a.age > a.maxAge || a.sugar <= 0) cells[a.cell]!.agent = null;
    }
    this.agents = this.agents.filter((a) => cells[a.cell]!.agent === a);
    for (const a of this.agents) {
      let target = -1;
      let targetSugar = 0;
      let turn = 0;
      this.forEachAround(a.cell, a.vision, false, (n) => {
        const c = cells[n]!;
        if (c.agent !== null) return;
        if (c.sugar > targetSugar) {
          target = n;
          targetSugar = c.sugar;
          turn = 1;
        } else if (c.sugar === targetSugar) {
          turn++;
          if (chance(nextInWords(a.rs), turn)) target = n;
        }
      });
      a.request = target;
    }
    this.decidePermissions();
    for (const a of this.agents) {
      if (a.permission) {
        cells[a.cell]!.agent = null;
        cells[a.request]!.agent = a;
        a.cell = a.request;
      }
      const c = cells[a.cell]!;
      a.sugar += c.sugar;
      c.sugar = 0;
      a.request = -1;
      a.permission = false;
    }
    // --- MATE ---
    for (const m of this.agents) {
      if (!m.male || !readyToMate(m.sugar, m.endowment, m.age)) continue;
      let target: AgentRec | null = null;
      let targetSugar = -1;
      this.forEachAround(m.cell, m.vision, true, (n) => {
        const f = cells[n]!.agent;
        if (f !== null && !f.male && readyToMate(f.sugar, f.endowment, f.age) && f.sugar > targetSugar) {
          target = f;
          targetSugar = f.sugar;
        }
      });
      m.femaleRequest = target;
    }
    for (const f of this.agents) {
      if (f.male || f.numChildren >= f.maxChildren) continue;
      let selected: AgentRec | null = null;
      let selectedSugar = -1;
      this.forEachAround(f.cell, this.reach, true, (n) => {
        const m = cells[n]!.agent;
        if (m !== null && m.male && m.femaleRequest === f && m.sugar > selectedSugar) {
          selected = m;
          selectedSugar = m.sugar;
        }
      });
      if (selected !== null) (selected as AgentRec).accepted = true;
    }
    for (const m of this.agents) {
      if (!m.male || !m.accepted) continue;
      let target = -1;
      let turn = 0;
      this.forEachAround(m.cell, m.vision, false, (n) => {
        if (cells[n]!.agent !== null) return;
        turn++;
        if (chance(nextInWords(m.rs), turn)) target = n;
      });
      m.request = target;
    }
    this.decidePermissions();
    const parents = this.agents.length;
    for (let i = 0; i < parents; i++) {
      const m = this.agents[i]!;
      if (!m.male) continue;
      if (m.accepted && m.permission) {
        const f = m.femaleRequest!;
        f.numChildren += 1;
        const endowment = Math.trunc((m.endowment + f.endowment) / 2);
        m.sugar -= Math.trunc(m.endowment / 2);
        f.sugar -= Math.trunc(f.endowment / 2);
        const vision = Math.trunc((m.vision + f.vision) / 2);
        const maxAge = Math.trunc((m.maxAge + f.maxAge) / 2);
        const metabolism = Math.trunc((m.metabolism + f.metabolism) / 2);
        const male = chance(nextInWords(m.rs), 2);
        const seed = nextInWords(cells[m.request]!.rs);
        this.newAgent(male, m.request, seed, vision, 0, maxAge, endowment, metabolism, f.maxChildren);
      }
      m.permission = false;
      m.accepted = false;
      m.femaleRequest = null;
      m.request = -1;
    }
  }

  /** Cell.decidePermission for every free cell. */
  private decidePermissions(): void {
    const cells = this.cells;
    for (let id = 0; id < cells.length; id++) {
      const c = cells[id]!;
      if (c.agent !== null) continue;
      let turn = 0;
      let selected: AgentRec | null = null;
      this.forEachAround(id, this.reach, true, (n) => {
        const a = cells[n]!.agent;
        if (a === null || a.request !== id) return;
        turn++;
        if (chance(nextInWords(c.rs), turn)) selected = a;
      });
      if (selected !== null) (selected as AgentRec).permission = true;
    }
  }

  /** Call fn(n) for every cell n within radius r of cell id, in the original's scan order (dx, then dy); the cell itself only with `self`. */
  private forEachAround(id: number, r: number, self: boolean, fn: (n: number) => void): void {
    const { width, height } = this;
    const x = id % width;
    const y = (id - x) / width;
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
    const out = newStates(this.cells.length);
    this.cells.forEach((c, i) => {
      out.sugar[i] = c.sugar;
      const a = c.agent;
      if (a === null) return;
      out.kind[i] = a.male ? MALE : FEMALE;
      out.agentSugar[i] = a.sugar;
      out.agentAge[i] = a.age;
      out.children[i] = a.numChildren;
    });
    return out;
  }

  digest(): number {
    return digestOf(this.states());
  }

  counts(): Record<string, number> {
    let males = 0;
    for (const a of this.agents) if (a.male) males++;
    return { Cell: this.cells.length, Male: males, Female: this.agents.length - males };
  }
}

const baseline: Baseline = {
  app: 'sugarscape',
  layout: 'aos',
  create: (params, seed) => {
    const { width, height } = sizeOf(params);
    return new SugarscapeAos(randomStart(width, height, seed));
  },
};
export default baseline;
