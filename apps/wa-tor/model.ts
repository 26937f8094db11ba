/**
 * wa-tor classes: fish and sharks on a torus of cells, as the original DynaSOAr example
 * (example/wa-tor/dynasoar, commit a4f956c). Constants from its configuration.h.
 *
 * A step is two rounds, fish then sharks, of four phases each:
 *   Cell.prepare   clear the five request flags
 *   X.prepare      each agent asks, with its own random stream, for one neighbouring
 *                  cell (fish: a free one; sharks: one with a fish, else a free one) by
 *                  raising that cell's request flag for the direction it comes from, or
 *                  raises its own cell's "stay" flag (index 4) when there is none
 *   Cell.decide    a requested cell picks one requester with *its own* random stream
 *                  and sets that agent's newPosition
 *   X.update       chosen agents move (a shark eats the fish there), spawn a child into
 *                  the cell they left when their egg timer is past the threshold;
 *                  sharks whose energy ran out die
 *
 * Who writes what (why results do not depend on the number of threads or the order in
 * which objects are visited; the original resolves conflicts the same way):
 *  - X.prepare writes its own fields and one request flag of one neighbour: flag d of
 *    cell C can only be raised by the agent on C's neighbour in direction d, so no two
 *    agents write the same byte; it reads `agent` of neighbouring cells, which nobody
 *    writes in this phase.
 *  - Cell.decide writes newPosition of at most one agent, an agent that requested this
 *    cell and no other; random numbers come from the cell's stream.
 *  - X.update writes the cell it leaves (nobody requested it: it was occupied) and the
 *    cell it enters (only the agent that cell chose enters it). A shark deletes at most
 *    the fish on the cell it was granted. New agents get their stream seed from the
 *    parent's stream.
 *
 * Backends: with `--backend wasm` every pass runs as a Rust kernel (declared in
 * kernels.ts): Cell.prepare, Cell.decide, Fish.prepare, Shark.prepare in wasm/src/wator.rs,
 * the allocating Fish.update and Shark.update in wasm/src/wator_update.rs (through the
 * allocator core), with the same rules and writes; with `--backend webgpu` every pass runs
 * as a WGSL kernel (runtime/webgpu/wgsl/wator_*.wgsl, the same rules and writes, docs/webgpu.md
 * "wa-tor: every pass on the GPU"); the methods below stay the reference. Every reference read here makes a view object, which is most
 * of these methods' cost: the methods read each reference once (README "Performance").
 */
import { array, bool, KERNELS, object, ref, u32, type SmmoContext } from '../../runtime/index.js';
import { cellKernels, fishKernels, sharkKernels } from './kernels.js';
import { nextInFields, seedAgentFields } from './stream.js';

/** An agent spawns when its egg timer is above this (kSpawnThreshold). */
export const SPAWN_THRESHOLD = 4;
/** Energy a shark gains by eating a fish (kEngeryBoost). */
export const ENERGY_BOOST = 4;
/** Energy of a new shark (kEngeryStart). */
export const ENERGY_START = 2;

/** Neighbour directions (index into Cell.neighbors and Cell.neighborRequest). */
export const LEFT = 0;
export const TOP = 1;
export const RIGHT = 2;
export const BOTTOM = 3;
/** Request index of "the agent on this cell stays". */
export const STAY = 4;

/** A cell of the torus. */
export class Cell extends object({
  randomState: array(u32, 4), // the cell's own stream: picks among requesters
  neighbors: array(ref<Cell>('Cell'), 4), // LEFT, TOP, RIGHT, BOTTOM (wrapping around)
  agent: ref<Agent>('Agent'), // the fish or shark on this cell, or null
  neighborRequest: array(bool, 5), // LEFT … BOTTOM: that neighbour's agent asks to come here; STAY
}) {
  static readonly [KERNELS] = cellKernels; // prepare, decide (kernels.ts)

  prepare(): void {
    // A loop, not five calls: one call site of the inline array's set() stays within V8's
    // inlining budget (measured: the unrolled form was 1.5× slower).
    const r = this.neighborRequest;
    for (let i = 0; i < 5; i++) r.set(i, false);
  }

  decide(): void {
    const r = this.neighborRequest;
    if (r.get(STAY)) {
      // The agent here found nowhere to go: it has priority and stays.
      this.agent!.newPosition = this;
      return;
    }
    let candidates = 0; // directions of requesters, 3 bits each, in direction order
    let n = 0;
    for (let i = 0; i < 4; i++) {
      if (r.get(i)) candidates |= i << (3 * n++);
    }
    if (n === 0) return; // most cells: nobody asked
    const chosen = (candidates >>> (3 * (nextInFields(this.randomState) % n))) & 7;
    this.neighbors.get(chosen)!.agent!.newPosition = this;
  }
}

/** A fish or a shark. */
export abstract class Agent extends object(
  {
    randomState: array(u32, 4), // the agent's own stream: picks among neighbours
    position: ref<Cell>('Cell'), // the cell it is on
    newPosition: ref<Cell>('Cell'), // the cell it may move to (granted by Cell.decide)
  },
  { abstract: true },
) {
  /**
   * Stay put unless a request succeeds (the original's fallback): ask for a random
   * neighbouring cell that holds a fish (only when `wantFish`), else for a free one,
   * drawing from this agent's stream, by raising that cell's request flag for the
   * direction this agent comes from; with neither, raise this cell's STAY flag.
   *
   * One pass over the four neighbours collects both candidate sets (each neighbour's
   * views are made once: every reference read makes a view), and a stream number is
   * drawn only when a set is used, exactly as the original's two tries in a row.
   */
  protected requestMove(wantFish: boolean): void {
    const cell = this.position!;
    this.newPosition = cell;
    const nb = cell.neighbors;
    const c0 = nb.get(LEFT)!;
    const c1 = nb.get(TOP)!;
    const c2 = nb.get(RIGHT)!;
    const c3 = nb.get(BOTTOM)!;
    let fish = 0; // directions of the candidates, 3 bits each, in direction order
    let nFish = 0;
    let free = 0;
    let nFree = 0;
    // LEFT is direction 0: a candidate there adds to the count only.
    const a0 = c0.agent;
    if (a0 === null) nFree = 1;
    else if (wantFish && a0 instanceof Fish) nFish = 1;
    const a1 = c1.agent;
    if (a1 === null) free |= TOP << (3 * nFree++);
    else if (wantFish && a1 instanceof Fish) fish |= TOP << (3 * nFish++);
    const a2 = c2.agent;
    if (a2 === null) free |= RIGHT << (3 * nFree++);
    else if (wantFish && a2 instanceof Fish) fish |= RIGHT << (3 * nFish++);
    const a3 = c3.agent;
    if (a3 === null) free |= BOTTOM << (3 * nFree++);
    else if (wantFish && a3 instanceof Fish) fish |= BOTTOM << (3 * nFish++);
    let chosen: number;
    if (nFish > 0) chosen = (fish >>> (3 * (nextInFields(this.randomState) % nFish))) & 7;
    else if (nFree > 0) chosen = (free >>> (3 * (nextInFields(this.randomState) % nFree))) & 7;
    else {
      cell.neighborRequest.set(STAY, true);
      return;
    }
    // The chosen neighbour sees this agent in the opposite direction.
    const target = chosen === LEFT ? c0 : chosen === TOP ? c1 : chosen === RIGHT ? c2 : c3;
    target.neighborRequest.set((chosen + 2) & 3, true);
  }

  /** Move from cell `from` to cell `to` (this agent's position and newPosition). */
  protected move(from: Cell, to: Cell): void {
    from.agent = null;
    to.agent = this;
    this.position = to;
  }

  /** The seed of a child: the next number of this agent's stream. */
  protected childSeed(): number {
    return nextInFields(this.randomState);
  }
}

/** A fish: moves to a free neighbouring cell and spawns behind it. */
export class Fish extends Agent.extend({
  eggTimer: u32, // steps since it last spawned
}) {
  static readonly [KERNELS] = fishKernels; // prepare (kernels.ts)

  prepare(): void {
    this.eggTimer += 1;
    this.requestMove(false);
  }

  update(): void {
    // Each reference is read once (a read makes a view).
    const from = this.position!;
    const to = this.newPosition!;
    if (from.handle === to.handle) return;
    this.move(from, to);
    if (this.eggTimer > SPAWN_THRESHOLD) {
      spawnFish(this.runtime, from, this.childSeed());
      this.eggTimer = 0;
    }
  }
}

/** A shark: eats a neighbouring fish if it can, else moves to a free cell; dies when its energy runs out. */
export class Shark extends Agent.extend({
  energy: u32, // steps it can still live without eating
  eggTimer: u32, // steps since it last spawned
}) {
  static readonly [KERNELS] = sharkKernels; // prepare (kernels.ts)

  prepare(): void {
    this.eggTimer += 1;
    this.energy -= 1;
    // A shark with no energy left does not move; Shark.update removes it.
    if (this.energy !== 0) this.requestMove(true);
  }

  update(): void {
    const from = this.position!;
    if (this.energy === 0) {
      from.agent = null;
      this.destroy();
      return;
    }
    const to = this.newPosition!;
    if (from.handle === to.handle) return;
    const prey = to.agent;
    if (prey instanceof Fish) {
      this.energy += ENERGY_BOOST;
      prey.destroy(); // move() below overwrites to.agent
    }
    this.move(from, to);
    if (this.eggTimer > SPAWN_THRESHOLD) {
      spawnShark(this.runtime, from, this.childSeed());
      this.eggTimer = 0;
    }
  }
}

/** Create a fish on `cell` with a stream seeded from `seed` (the original's Fish(seed)). */
export function spawnFish(ctx: SmmoContext, cell: Cell, seed: number): void {
  // Fields are set one by one rather than through create()'s init object: cheaper on this hot path.
  const fish = ctx.create(Fish);
  fish.eggTimer = seed % SPAWN_THRESHOLD;
  fish.position = cell;
  fish.newPosition = cell;
  seedAgentFields(fish.randomState, seed);
  cell.agent = fish;
}

/** Create a shark on `cell` with a stream seeded from `seed` (the original's Shark(seed)). */
export function spawnShark(ctx: SmmoContext, cell: Cell, seed: number): void {
  const shark = ctx.create(Shark);
  shark.energy = ENERGY_START;
  shark.eggTimer = seed % SPAWN_THRESHOLD;
  shark.position = cell;
  shark.newPosition = cell;
  seedAgentFields(shark.randomState, seed);
  cell.agent = shark;
}

/** Every class of the app, the abstract one included. */
export const CLASSES = [Cell, Agent, Fish, Shark];
