/**
 * sugarscape classes: agents that move to the richest free cell, harvest its sugar,
 * age, starve and mate, on a grid whose sugar grows and diffuses; as DynaSOAr's
 * sugarscape example (prg-titech/dynasoar, commit a4f956c). Constants and the small
 * integer rules: rules.ts. No wrap-around: cells outside the grid do not exist. Cell
 * ids: apps/grid.ts (cell i is the Cell with the i-th smallest handle; x = i mod width).
 *
 * Neighbourhoods are scanned as the original does: dx outer, dy inner, each from −r to
 * r. Agents see radius `vision` (1 for every agent: the original draws 1 + random_int(0,
 * 1)). Cells (for requesters) and females (for proposers) look at radius MAX_VISION (2)
 * in the original; smmo passes them `reach`, the largest vision of any agent (step():
 * never above MAX_VISION, and it cannot grow: a child's vision is the average of its
 * parents'). An agent only requests or proposes within its vision, so no requester lies
 * beyond `reach`, and the scan visits the same requesters in the same order: the result
 * is the original's (test/apps-sugarscape.test.ts compares it with radius MAX_VISION
 * step by step).
 *
 * Who writes what, per phase (why the result is the same for any number of threads and
 * any visiting order):
 *  - Cell.growSugar, Cell.prepareDiffuse: the cell's own fields.
 *  - Cell.updateDiffuse: its own sugar; reads the neighbours' sugarDiffusion, which
 *    nobody writes in this phase.
 *  - Agent.ageAndMetabolize: its own fields; a dying agent empties its own cell.
 *  - Agent.prepareMove: its own cellRequest and random stream; reads cells' sugar and kind.
 *  - Cell.decidePermission: a free cell picks one of the agents that requested it, with
 *    *its own* random stream in scan order, and sets that agent's permission. An agent
 *    requests one cell, so at most one cell writes it.
 *  - Agent.updateMove: an agent with permission leaves its cell (nobody requested an
 *    occupied cell) and enters the requested one (only it was chosen there); then it
 *    harvests its own cell.
 *  - Male.propose: its own femaleRequest; reads females' sugar, endowment and age.
 *  - Female.decideProposal: picks the richest male that proposed to her (the first in
 *    scan order on ties) and sets his proposalAccepted; a male proposes to one female.
 *  - Male.proposeOffspringTarget: its own cellRequest and stream.
 *  - Cell.decidePermission again, for those requests.
 *  - Male.mate: a male with an accepted proposal and permission changes his female (only
 *    he was accepted by her) and puts a child into the cell that chose him; the child's
 *    stream seed is drawn from that cell's stream (nobody else uses it in this phase).
 * The original resolves every conflict the same way (per-object curand streams, scan
 * order), so it has no race that changes the result; smmo keeps that.
 *
 * Cell.kind (EMPTY, MALE, FEMALE; the original's CellInfo::agent_type, which it computes
 * only for drawing) is kept with Cell.agent by whoever writes `agent`, so that neighbour
 * tests read one byte instead of following a reference. Invariant between phases:
 * kind = EMPTY ⇔ agent = null, MALE ⇔ a Male, FEMALE ⇔ a Female.
 *
 * Backends: there are no WASM kernels; with `--backend wasm` these methods run as
 * TypeScript (compiled, as on `ts`), and `--json`'s `kernels` says so.
 */
import { array, bool, i32, object, ref, u32, u8, type SmmoContext } from '../../runtime/index.js';
import { cellTable } from '../grid.js';
import { nextInFields, seedAgentFields } from '../wa-tor/stream.js';
import { chance, diffusionOf, EMPTY, FEMALE, grown, MALE, MAX_VISION, readyToMate, shareOf } from './rules.js';

/** One grid cell. */
export class Cell extends object({
  randomState: array(u32, 4), // the cell's own stream: picks among requesters, seeds children
  agent: ref<Agent>('Agent'), // the Male or Female here, or null
  sugarDiffusion: i32, // sugar leaving this cell in this step's diffusion
  sugar: i32,
  sugarCapacity: i32,
  growRate: i32,
  cellId: i32,
  kind: u8, // EMPTY | MALE | FEMALE: what `agent` is (file header)
}) {
  growSugar(): void {
    this.sugar = grown(this.sugar, this.sugarCapacity, this.growRate);
  }

  prepareDiffuse(): void {
    const d = diffusionOf(this.sugar);
    this.sugarDiffusion = d;
    this.sugar -= d;
  }

  /** Add ⌊d / 8⌋ of every neighbour's diffusion d within MAX_VISION (own cell excluded). */
  updateDiffuse(width: number, height: number): void {
    const ctx = this.runtime;
    const cells = cellTable(ctx, Cell, width * height);
    const id = this.cellId;
    const x = id % width;
    const y = (id - x) / width;
    const x0 = Math.max(x - MAX_VISION, 0);
    const x1 = Math.min(x + MAX_VISION, width - 1);
    const y0 = Math.max(y - MAX_VISION, 0);
    const y1 = Math.min(y + MAX_VISION, height - 1);
    let add = 0;
    for (let ny = y0; ny <= y1; ny++) {
      for (let c = ny * width + x0, end = ny * width + x1; c <= end; c++) {
        if (c !== id) add += shareOf(ctx.get(Cell, cells[c]!).sugarDiffusion);
      }
    }
    this.sugar += add;
  }

  /**
   * A free cell picks one of the agents within `reach` whose cellRequest is this cell:
   * the turn-th such agent in scan order replaces the one picked so far with probability
   * 1 / turn, drawn from this cell's stream (the original's rule). Occupied cells are
   * never requested (agents request free cells, and nobody moves in between).
   */
  decidePermission(width: number, height: number, reach: number): void {
    if (this.kind !== EMPTY) return;
    const ctx = this.runtime;
    const cells = cellTable(ctx, Cell, width * height);
    const id = this.cellId;
    const me = this.handle;
    const x = id % width;
    const y = (id - x) / width;
    let turn = 0;
    let selected = 0;
    for (let dx = -reach; dx <= reach; dx++) {
      const nx = x + dx;
      if (nx < 0 || nx >= width) continue;
      for (let dy = -reach; dy <= reach; dy++) {
        const ny = y + dy;
        if (ny < 0 || ny >= height) continue;
        const n = ctx.get(Cell, cells[ny * width + nx]!);
        if (n.kind === EMPTY) continue;
        const agent = n.agent!;
        if (agent.cellRequest?.handle !== me) continue;
        turn++;
        if (chance(nextInFields(this.randomState), turn)) selected = agent.handle;
      }
    }
    if (selected !== 0) ctx.get(Agent, selected).permission = true;
  }
}

/** A Male or a Female (abstract). */
export abstract class Agent extends object(
  {
    randomState: array(u32, 4), // the agent's own stream
    cell: ref<Cell>('Cell'), // the cell it is on
    cellRequest: ref<Cell>('Cell'), // the cell it asks for (a move, or a Male's child)
    vision: i32,
    age: i32,
    maxAge: i32,
    sugar: i32,
    metabolism: i32,
    endowment: i32,
    permission: bool, // granted cellRequest (Cell.decidePermission)
  },
  { abstract: true },
) {
  /** Cell.kind of this agent: MALE or FEMALE. */
  abstract kindCode(): number;

  /** Grow one step older and burn `metabolism` sugar; die (emptying the cell) past maxAge or without sugar. */
  ageAndMetabolize(): void {
    const age = this.age + 1;
    this.age = age;
    const sugar = this.sugar - this.metabolism;
    this.sugar = sugar;
    if (age > this.maxAge || sugar <= 0) {
      const cell = this.cell!;
      cell.agent = null;
      cell.kind = EMPTY;
      this.destroy();
    }
  }

  /**
   * Request the free cell with the most sugar within `vision` (own cell excluded); among
   * equally rich ones, the turn-th replaces the one chosen so far with probability 1 /
   * turn (this agent's stream). As the original, the search starts from sugar 0, so a
   * free cell with no sugar is a candidate too; null when no neighbour is free.
   */
  prepareMove(width: number, height: number): void {
    const ctx = this.runtime;
    const cells = cellTable(ctx, Cell, width * height);
    const id = this.cell!.cellId;
    const x = id % width;
    const y = (id - x) / width;
    const v = this.vision;
    let target = -1;
    let targetSugar = 0;
    let turn = 0;
    for (let dx = -v; dx <= v; dx++) {
      const nx = x + dx;
      if (nx < 0 || nx >= width) continue;
      for (let dy = -v; dy <= v; dy++) {
        const ny = y + dy;
        if ((dx === 0 && dy === 0) || ny < 0 || ny >= height) continue;
        const c = ny * width + nx;
        const n = ctx.get(Cell, cells[c]!);
        if (n.kind !== EMPTY) continue;
        const s = n.sugar;
        if (s > targetSugar) {
          target = c;
          targetSugar = s;
          turn = 1;
        } else if (s === targetSugar) {
          turn++;
          if (chance(nextInFields(this.randomState), turn)) target = c;
        }
      }
    }
    this.cellRequest = target < 0 ? null : ctx.get(Cell, cells[target]!);
  }

  /** Move if permitted, then harvest all the sugar of the cell; clear the request. */
  updateMove(): void {
    let cell = this.cell!;
    if (this.permission) {
      const to = this.cellRequest!;
      cell.agent = null;
      cell.kind = EMPTY;
      to.agent = this;
      to.kind = this.kindCode();
      this.cell = to;
      cell = to;
    }
    const amount = cell.sugar;
    cell.sugar = 0;
    this.sugar += amount;
    this.cellRequest = null;
    this.permission = false;
  }

  /** Agent.ready_to_mate (rules.ts). */
  readyToMate(): boolean {
    return readyToMate(this.sugar, this.endowment, this.age);
  }
}

/** A male agent: proposes to a female and, when accepted, creates the child. */
export class Male extends Agent.extend({
  femaleRequest: ref<Female>('Female'), // the female he proposes to
  proposalAccepted: bool,
}) {
  kindCode(): number {
    return MALE;
  }

  /** When ready to mate: propose to the ready Female with the most sugar within `vision` (the first in scan order on ties). */
  propose(width: number, height: number): void {
    if (!this.readyToMate()) return;
    const ctx = this.runtime;
    const cells = cellTable(ctx, Cell, width * height);
    const id = this.cell!.cellId;
    const x = id % width;
    const y = (id - x) / width;
    const v = this.vision;
    let target = 0;
    let targetSugar = -1;
    for (let dx = -v; dx <= v; dx++) {
      const nx = x + dx;
      if (nx < 0 || nx >= width) continue;
      for (let dy = -v; dy <= v; dy++) {
        const ny = y + dy;
        if (ny < 0 || ny >= height) continue;
        const n = ctx.get(Cell, cells[ny * width + nx]!);
        if (n.kind !== FEMALE) continue;
        const f = n.agent!;
        if (f.readyToMate() && f.sugar > targetSugar) {
          target = f.handle;
          targetSugar = f.sugar;
        }
      }
    }
    this.femaleRequest = target === 0 ? null : ctx.get(Female, target);
  }

  /** When accepted: request a random free cell within `vision` for the child (reservoir sampling, this male's stream). */
  proposeOffspringTarget(width: number, height: number): void {
    if (!this.proposalAccepted) return;
    const ctx = this.runtime;
    const cells = cellTable(ctx, Cell, width * height);
    const id = this.cell!.cellId;
    const x = id % width;
    const y = (id - x) / width;
    const v = this.vision;
    let target = -1;
    let turn = 0;
    for (let dx = -v; dx <= v; dx++) {
      const nx = x + dx;
      if (nx < 0 || nx >= width) continue;
      for (let dy = -v; dy <= v; dy++) {
        const ny = y + dy;
        if ((dx === 0 && dy === 0) || ny < 0 || ny >= height) continue;
        const c = ny * width + nx;
        if (ctx.get(Cell, cells[c]!).kind !== EMPTY) continue;
        turn++;
        if (chance(nextInFields(this.randomState), turn)) target = c;
      }
    }
    this.cellRequest = target < 0 ? null : ctx.get(Cell, cells[target]!);
  }

  /**
   * With an accepted proposal and permission for the cell: both parents give half their
   * endowment; the child gets the parents' averages (integer division) and is a Male with
   * probability 1/2 (this male's stream), its stream seeded by the target cell's. Then
   * every mating field is cleared.
   */
  mate(): void {
    if (this.proposalAccepted && this.permission) {
      const f = this.femaleRequest!;
      const target = this.cellRequest!;
      f.numChildren += 1;
      const endowment = Math.trunc((this.endowment + f.endowment) / 2);
      this.sugar -= Math.trunc(this.endowment / 2);
      f.sugar -= Math.trunc(f.endowment / 2);
      const vision = Math.trunc((this.vision + f.vision) / 2);
      const maxAge = Math.trunc((this.maxAge + f.maxAge) / 2);
      const metabolism = Math.trunc((this.metabolism + f.metabolism) / 2);
      const male = chance(nextInFields(this.randomState), 2); // curand_uniform() <= 0.5
      const seed = nextInFields(target.randomState);
      if (male) newMale(this.runtime, target, seed, vision, 0, maxAge, endowment, metabolism);
      else newFemale(this.runtime, target, seed, vision, 0, maxAge, endowment, metabolism, f.maxChildren);
    }
    this.permission = false;
    this.proposalAccepted = false;
    this.femaleRequest = null;
    this.cellRequest = null;
  }
}

/** A female agent: accepts one proposal per step while she has fewer than maxChildren children. */
export class Female extends Agent.extend({
  maxChildren: i32,
  numChildren: i32,
}) {
  kindCode(): number {
    return FEMALE;
  }

  /** Accept the Male within `reach` with the most sugar among those that proposed to her (the first in scan order on ties). */
  decideProposal(width: number, height: number, reach: number): void {
    if (this.numChildren >= this.maxChildren) return;
    const ctx = this.runtime;
    const cells = cellTable(ctx, Cell, width * height);
    const id = this.cell!.cellId;
    const me = this.handle;
    const x = id % width;
    const y = (id - x) / width;
    let selected = 0;
    let selectedSugar = -1;
    for (let dx = -reach; dx <= reach; dx++) {
      const nx = x + dx;
      if (nx < 0 || nx >= width) continue;
      for (let dy = -reach; dy <= reach; dy++) {
        const ny = y + dy;
        if (ny < 0 || ny >= height) continue;
        const n = ctx.get(Cell, cells[ny * width + nx]!);
        if (n.kind !== MALE) continue;
        const m = ctx.get(Male, n.agent!.handle); // kind MALE: a Male (file header)
        if (m.femaleRequest?.handle === me && m.sugar > selectedSugar) {
          selected = m.handle;
          selectedSugar = m.sugar;
        }
      }
    }
    if (selected !== 0) ctx.get(Male, selected).proposalAccepted = true;
  }
}

/** Fields common to a new agent on `cell` (the Agent constructor): sugar = endowment, stream seeded from `seed`. */
function setAgent(
  a: Agent,
  cell: Cell,
  seed: number,
  vision: number,
  age: number,
  maxAge: number,
  endowment: number,
  metabolism: number,
): void {
  a.cell = cell;
  a.vision = vision;
  a.age = age;
  a.maxAge = maxAge;
  a.sugar = endowment;
  a.endowment = endowment;
  a.metabolism = metabolism;
  seedAgentFields(a.randomState, seed);
}

/** Create a Male on the free cell `cell` and put it there. */
export function newMale(
  ctx: SmmoContext,
  cell: Cell,
  seed: number,
  vision: number,
  age: number,
  maxAge: number,
  endowment: number,
  metabolism: number,
): Male {
  const m = ctx.create(Male);
  setAgent(m, cell, seed, vision, age, maxAge, endowment, metabolism);
  cell.agent = m;
  cell.kind = MALE;
  return m;
}

/** Create a Female on the free cell `cell` and put it there. */
export function newFemale(
  ctx: SmmoContext,
  cell: Cell,
  seed: number,
  vision: number,
  age: number,
  maxAge: number,
  endowment: number,
  metabolism: number,
  maxChildren: number,
): Female {
  const f = ctx.create(Female);
  setAgent(f, cell, seed, vision, age, maxAge, endowment, metabolism);
  f.maxChildren = maxChildren;
  cell.agent = f;
  cell.kind = FEMALE;
  return f;
}

/** Every class of the app, the abstract one included. */
export const CLASSES = [Cell, Agent, Male, Female];
