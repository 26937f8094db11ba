/**
 * A user-style model, written against smmo's public API the way a new user would write
 * it: an epidemic (susceptible → infected → recovered → susceptible again) among persons
 * living on the cells of a torus.
 *
 * Cell: its index, its 4 neighbours (references), the person living there (or null),
 * and whether a person is born there this step. Person: state, days in that state, age,
 * its cell, and whether it caught the disease this step. Persons do not move; they are
 * born on empty cells and die (objects created and deleted every step).
 *
 * A step is 4 do-alls:
 *   Person.expose   a susceptible person catches the disease from each infected
 *                   neighbour with probability INFECT (and out of nowhere with SPARK)
 *   Person.progress age; the caught fall ill; the ill recover after SICK_DAYS, the
 *                   recovered lose their immunity after IMMUNE_DAYS; a person dies with
 *                   probability DEATH (DEATH_SICK when ill) or at MAX_AGE
 *   Cell.census     an empty cell gets a birth with probability BIRTH per healthy neighbour
 *   Cell.birth      the person is created
 *
 * Chance is a counter-based hash of (SEED, step, cell index, salt), never Math.random,
 * so every version and thread count draws the same numbers. Every pass reads what the
 * previous passes wrote and writes only its own object's fields (a dying person clears
 * its own cell's reference; a cell creates only its own person), so the result does not
 * depend on the visiting order or the number of threads; the plain typed-array version
 * (epidemic-plain.ts) gives the same digest exactly.
 */
import { array, bool, i32, object, ref, u16, u8, type Runtime, type SmmoObject } from '../../runtime/index.js';

export const MODULE_URL = import.meta.url;

export const SEED = 0x2545f491;
export const SUSCEPTIBLE = 0;
export const INFECTED = 1;
export const RECOVERED = 2;
export const SICK_DAYS = 6;
export const IMMUNE_DAYS = 30;
export const MAX_AGE = 400;
/** Probabilities as thresholds of a 32-bit hash. */
const P = 2 ** 32;
export const INFECT = Math.floor(0.25 * P);
export const SPARK = Math.floor(0.0002 * P);
export const DEATH = Math.floor(0.004 * P);
export const DEATH_SICK = Math.floor(0.02 * P);
export const BIRTH = Math.floor(0.03 * P);
export const SALT_INFECT = 1;
export const SALT_SPARK = 2;
export const SALT_DEATH = 3;
export const SALT_BIRTH = 4;

/** A counter-based hash of (SEED, step, key, salt): a uint32, the same in every version. */
export function chance(step: number, key: number, salt: number): number {
  let h = Math.imul(SEED ^ Math.imul(step, 0x9e3779b1), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13) ^ key, 0xc2b2ae35);
  h = Math.imul(h ^ (h >>> 16) ^ Math.imul(salt, 0x27d4eb2d), 0x165667b1);
  h ^= h >>> 15;
  return h >>> 0;
}

export class Cell extends object({
  index: i32,
  neighbors: array(ref<Cell>('Cell'), 4),
  person: ref<Person>('Person'),
  born: bool,
}) {
  census(step: number): void {
    this.born = false;
    if (this.person !== null) return;
    let parents = 0;
    for (let d = 0; d < 4; d++) {
      const p = this.neighbors.get(d)!.person;
      if (p !== null && p.state !== INFECTED) parents++;
    }
    this.born = parents > 0 && chance(step, this.index, SALT_BIRTH) < parents * BIRTH;
  }

  birth(): void {
    if (this.born) this.person = this.runtime.create(Person, { cell: this });
  }
}

export class Person extends object({
  state: u8,
  days: u16,
  age: u16,
  cell: ref<Cell>('Cell'),
  caught: bool,
}) {
  expose(step: number): void {
    this.caught = false;
    if (this.state !== SUSCEPTIBLE) return;
    const here = this.cell!;
    if (chance(step, here.index, SALT_SPARK) < SPARK) {
      this.caught = true;
      return;
    }
    for (let d = 0; d < 4; d++) {
      const p = here.neighbors.get(d)!.person;
      if (p !== null && p.state === INFECTED && chance(step, 4 * here.index + d, SALT_INFECT) < INFECT) {
        this.caught = true;
        return;
      }
    }
  }

  progress(step: number): void {
    this.age += 1;
    if (this.caught) {
      this.state = INFECTED;
      this.days = 0;
    } else if (this.state === INFECTED) {
      this.days += 1;
      if (this.days >= SICK_DAYS) {
        this.state = RECOVERED;
        this.days = 0;
      }
    } else if (this.state === RECOVERED) {
      this.days += 1;
      if (this.days >= IMMUNE_DAYS) {
        this.state = SUSCEPTIBLE;
        this.days = 0;
      }
    }
    const here = this.cell!;
    const risk = this.state === INFECTED ? DEATH_SICK : DEATH;
    if (this.age >= MAX_AGE || chance(step, here.index, SALT_DEATH) < risk) {
      here.person = null;
      this.destroy();
    }
  }
}

export const CLASSES = [Cell, Person];

/** Whether a person starts on cell i, infected or not, and its age (a hash of the index). */
export function startOf(i: number): { person: boolean; infected: boolean; age: number } {
  let h = Math.imul(i ^ 0x5bd1e995, 0x27d4eb2d);
  h ^= h >>> 15;
  h = Math.imul(h, 0x165667b1);
  h ^= h >>> 13;
  return { person: (h & 3) !== 0, infected: ((h >>> 2) & 127) === 0, age: (h >>> 16) % MAX_AGE };
}

export interface World {
  readonly cells: number[];
  /** Steps done. */
  t: number;
}

/** Create the cells and persons of a width × height torus. */
export async function init(rt: Runtime, width: number, height: number): Promise<World> {
  const cells: number[] = [];
  await rt.parallelNew(Cell, width * height, (c, i) => {
    c.index = i;
    cells.push(c.handle);
  });
  for (let i = 0; i < cells.length; i++) {
    const x = i % width;
    const y = (i - x) / width;
    const c = rt.get(Cell, cells[i]!);
    const at = (xx: number, yy: number): Cell => rt.get(Cell, cells[((yy + height) % height) * width + ((xx + width) % width)]!);
    c.neighbors.set(0, at(x - 1, y));
    c.neighbors.set(1, at(x, y - 1));
    c.neighbors.set(2, at(x + 1, y));
    c.neighbors.set(3, at(x, y + 1));
    const s = startOf(i);
    if (s.person) c.person = rt.create(Person, { cell: c, age: s.age, state: s.infected ? INFECTED : SUSCEPTIBLE });
  }
  return { cells, t: 0 };
}

export async function step(rt: Runtime, world: World): Promise<void> {
  const t = ++world.t;
  await rt.parallelDo(Person, 'expose', t);
  await rt.parallelDo(Person, 'progress', t);
  await rt.parallelDo(Cell, 'census', t);
  await rt.parallelDo(Cell, 'birth');
}

/** FNV-1a over the cells in index order: the person's state, days and age (all ones: none). */
export function digest(rt: Runtime, world: World): number {
  let h = 0x811c9dc5;
  const add = (x: number): void => {
    h = Math.imul(h ^ x, 0x01000193) >>> 0;
  };
  for (const handle of world.cells) {
    const p: (SmmoObject & { state: number; days: number; age: number }) | null = rt.get(Cell, handle).person;
    if (p === null) add(0xffffffff);
    else add(p.state | (p.days << 8) | (p.age << 16));
  }
  return h;
}
