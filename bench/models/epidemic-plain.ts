/**
 * The epidemic model (epidemic.ts) written as plain single-threaded JavaScript over typed
 * arrays: what a programmer writes for speed without smmo. Persons never move and at most
 * one lives on a cell, so the person's fields are stored per cell with an occupancy flag
 * (a birth sets the flag, a death clears it). Same rules, same hash, same order of
 * passes, so the digest is the same exactly.
 */
import {
  BIRTH,
  DEATH,
  DEATH_SICK,
  IMMUNE_DAYS,
  INFECT,
  INFECTED,
  MAX_AGE,
  RECOVERED,
  SALT_BIRTH,
  SALT_DEATH,
  SALT_INFECT,
  SALT_SPARK,
  SICK_DAYS,
  SPARK,
  SUSCEPTIBLE,
  chance,
  startOf,
} from './epidemic.js';

export class PlainEpidemic {
  readonly n: number;
  private readonly neighbors: Int32Array;
  private readonly alive: Uint8Array;
  private readonly born: Uint8Array;
  private readonly state: Uint8Array;
  private readonly days: Uint16Array;
  private readonly age: Uint16Array;
  private readonly caught: Uint8Array;
  private t = 0;
  /** Persons born and died so far. */
  created = 0;
  deleted = 0;

  constructor(
    readonly width: number,
    readonly height: number,
  ) {
    const n = (this.n = width * height);
    this.neighbors = new Int32Array(4 * n);
    this.alive = new Uint8Array(n);
    this.born = new Uint8Array(n);
    this.state = new Uint8Array(n);
    this.days = new Uint16Array(n);
    this.age = new Uint16Array(n);
    this.caught = new Uint8Array(n);
    for (let i = 0; i < n; i++) {
      const x = i % width;
      const y = (i - x) / width;
      const at = (xx: number, yy: number): number => ((yy + height) % height) * width + ((xx + width) % width);
      this.neighbors[4 * i] = at(x - 1, y);
      this.neighbors[4 * i + 1] = at(x, y - 1);
      this.neighbors[4 * i + 2] = at(x + 1, y);
      this.neighbors[4 * i + 3] = at(x, y + 1);
      const s = startOf(i);
      if (s.person) {
        this.alive[i] = 1;
        this.age[i] = s.age;
        this.state[i] = s.infected ? INFECTED : SUSCEPTIBLE;
      }
    }
  }

  step(): void {
    const { n, neighbors, alive, born, state, days, age, caught } = this;
    const t = ++this.t;
    // Person.expose
    for (let i = 0; i < n; i++) {
      if (alive[i] === 0) continue;
      caught[i] = 0;
      if (state[i] !== SUSCEPTIBLE) continue;
      if (chance(t, i, SALT_SPARK) < SPARK) {
        caught[i] = 1;
        continue;
      }
      for (let d = 0; d < 4; d++) {
        const j = neighbors[4 * i + d]!;
        if (alive[j] === 1 && state[j] === INFECTED && chance(t, 4 * i + d, SALT_INFECT) < INFECT) {
          caught[i] = 1;
          break;
        }
      }
    }
    // Person.progress
    for (let i = 0; i < n; i++) {
      if (alive[i] === 0) continue;
      age[i]! += 1;
      if (caught[i] === 1) {
        state[i] = INFECTED;
        days[i] = 0;
      } else if (state[i] === INFECTED) {
        days[i]! += 1;
        if (days[i]! >= SICK_DAYS) {
          state[i] = RECOVERED;
          days[i] = 0;
        }
      } else if (state[i] === RECOVERED) {
        days[i]! += 1;
        if (days[i]! >= IMMUNE_DAYS) {
          state[i] = SUSCEPTIBLE;
          days[i] = 0;
        }
      }
      const risk = state[i] === INFECTED ? DEATH_SICK : DEATH;
      if (age[i]! >= MAX_AGE || chance(t, i, SALT_DEATH) < risk) {
        alive[i] = 0;
        this.deleted++;
      }
    }
    // Cell.census
    for (let i = 0; i < n; i++) {
      born[i] = 0;
      if (alive[i] === 1) continue;
      let parents = 0;
      for (let d = 0; d < 4; d++) {
        const j = neighbors[4 * i + d]!;
        if (alive[j] === 1 && state[j] !== INFECTED) parents++;
      }
      born[i] = parents > 0 && chance(t, i, SALT_BIRTH) < parents * BIRTH ? 1 : 0;
    }
    // Cell.birth: a new person starts with every field zero.
    for (let i = 0; i < n; i++) {
      if (born[i] === 0) continue;
      this.created++;
      alive[i] = 1;
      state[i] = SUSCEPTIBLE;
      days[i] = 0;
      age[i] = 0;
      caught[i] = 0;
    }
  }

  /** Persons alive. */
  population(): number {
    let k = 0;
    for (let i = 0; i < this.n; i++) k += this.alive[i]!;
    return k;
  }

  /** Infected persons. */
  infected(): number {
    let k = 0;
    for (let i = 0; i < this.n; i++) if (this.alive[i] === 1 && this.state[i] === INFECTED) k++;
    return k;
  }

  /** epidemic.ts digest(): the same FNV-1a over the cells in index order. */
  digest(): number {
    let h = 0x811c9dc5;
    const add = (x: number): void => {
      h = Math.imul(h ^ x, 0x01000193) >>> 0;
    };
    for (let i = 0; i < this.n; i++) {
      if (this.alive[i] === 0) add(0xffffffff);
      else add(this.state[i]! | (this.days[i]! << 8) | (this.age[i]! << 16));
    }
    return h;
  }
}
