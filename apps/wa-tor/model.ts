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
 */
import { array, bool, object, ref, u32, type SmmoContext } from '../../runtime/index.js';
import { nextInFields, seedAgentStream, storeStream } from './stream.js';

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

// Scratch for seeding a new agent's stream (one per thread: module state is per worker).
const seedScratch = new Uint32Array(4);

/** A cell of the torus. */
export class Cell extends object({
  randomState: array(u32, 4), // the cell's own stream: picks among requesters
  neighbors: array(ref<Cell>('Cell'), 4), // LEFT, TOP, RIGHT, BOTTOM (wrapping around)
  agent: ref<Agent>('Agent'), // the fish or shark on this cell, or null
  neighborRequest: array(bool, 5), // LEFT … BOTTOM: that neighbour's agent asks to come here; STAY
}) {
  prepare(): void {
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
    let candidates = 0; // directions of requesters, 3 bits each
    let n = 0;
    for (let i = 0; i < 4; i++) {
      if (r.get(i)) candidates |= i << (3 * n++);
    }
    if (n === 0) return;
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
   * Ask for a random neighbouring cell that holds a fish (`wantFish`) or is free, drawing
   * from this agent's stream; false when there is none.
   */
  protected requestNeighbor(wantFish: boolean): boolean {
    const cell = this.position!;
    const neighbors = cell.neighbors;
    let candidates = 0;
    let n = 0;
    for (let i = 0; i < 4; i++) {
      const a = neighbors.get(i)!.agent;
      if (wantFish ? a instanceof Fish : a === null) candidates |= i << (3 * n++);
    }
    if (n === 0) return false;
    const chosen = (candidates >>> (3 * (nextInFields(this.randomState) % n))) & 7;
    // The chosen neighbour sees this agent in the opposite direction.
    neighbors.get(chosen)!.neighborRequest.set((chosen + 2) % 4, true);
    return true;
  }

  /** Stay put unless a request succeeds (the original's fallback). */
  protected stayUnlessRequested(wantFish: boolean): void {
    const cell = this.position!;
    this.newPosition = cell;
    if (wantFish && this.requestNeighbor(true)) return;
    if (!this.requestNeighbor(false)) cell.neighborRequest.set(STAY, true);
  }

  /** Move to newPosition: leave the old cell, enter the new one. Returns the old cell. */
  protected moveToNewPosition(): Cell {
    const from = this.position!;
    const to = this.newPosition!;
    from.agent = null;
    to.agent = this;
    this.position = to;
    return from;
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
  prepare(): void {
    this.eggTimer += 1;
    this.stayUnlessRequested(false);
  }

  update(): void {
    if (this.position!.handle === this.newPosition!.handle) return;
    const from = this.moveToNewPosition();
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
  prepare(): void {
    this.eggTimer += 1;
    this.energy -= 1;
    // A shark with no energy left does not move; Shark.update removes it.
    if (this.energy !== 0) this.stayUnlessRequested(true);
  }

  update(): void {
    if (this.energy === 0) {
      this.position!.agent = null;
      this.destroy();
      return;
    }
    const to = this.newPosition!;
    if (this.position!.handle === to.handle) return;
    const prey = to.agent;
    if (prey instanceof Fish) {
      this.energy += ENERGY_BOOST;
      prey.destroy();
      to.agent = null;
    }
    const from = this.moveToNewPosition();
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
  seedAgentStream(seedScratch, 0, seed);
  storeStream(fish.randomState, seedScratch);
  cell.agent = fish;
}

/** Create a shark on `cell` with a stream seeded from `seed` (the original's Shark(seed)). */
export function spawnShark(ctx: SmmoContext, cell: Cell, seed: number): void {
  const shark = ctx.create(Shark);
  shark.energy = ENERGY_START;
  shark.eggTimer = seed % SPAWN_THRESHOLD;
  shark.position = cell;
  shark.newPosition = cell;
  seedAgentStream(seedScratch, 0, seed);
  storeStream(shark.randomState, seedScratch);
  cell.agent = shark;
}

/** Every class of the app, the abstract one included. */
export const CLASSES = [Cell, Agent, Fish, Shark];
