/**
 * The walkers model (walkers.ts) written as plain single-threaded JavaScript over typed
 * arrays: what a programmer writes for speed without smmo. Same rules, same f32 fields,
 * same order of floating-point operations per object, so the digest is the same exactly.
 * Walkers live in a pool of slots with a free list; a pass visits the walkers alive when
 * it starts (children made during `live` are not visited), as a do-all does.
 */
import { BITE, GROW, MOVE_COST, SPLIT_AT, START_ENERGY, UPKEEP, startOf } from './walkers.js';

export class PlainWalkers {
  readonly n: number;
  private readonly grass: Float32Array;
  private readonly neighbors: Int32Array;
  private readonly walkerAt: Int32Array;
  private readonly winner: Int32Array;
  private readonly energy: Float32Array;
  private readonly tile: Int32Array;
  private readonly target: Int32Array;
  private readonly from: Int32Array;
  private readonly alive: Uint8Array;
  private readonly free: Int32Array;
  private freeCount = 0;
  /** Walkers alive at the start of the running pass. */
  private readonly list: Int32Array;
  private listCount = 0;

  constructor(
    readonly width: number,
    readonly height: number,
  ) {
    const n = (this.n = width * height);
    this.grass = new Float32Array(n);
    this.neighbors = new Int32Array(4 * n);
    this.walkerAt = new Int32Array(n).fill(-1);
    this.winner = new Int32Array(n).fill(-1);
    // At most one walker per tile: n slots.
    this.energy = new Float32Array(n);
    this.tile = new Int32Array(n);
    this.target = new Int32Array(n).fill(-1);
    this.from = new Int32Array(n).fill(-1);
    this.alive = new Uint8Array(n);
    this.free = new Int32Array(n);
    this.list = new Int32Array(n);
    for (let s = n - 1; s >= 0; s--) this.free[this.freeCount++] = s;
    for (let i = 0; i < n; i++) {
      const x = i % width;
      const y = (i - x) / width;
      const at = (xx: number, yy: number): number => ((yy + height) % height) * width + ((xx + width) % width);
      this.neighbors[4 * i] = at(x - 1, y);
      this.neighbors[4 * i + 1] = at(x, y - 1);
      this.neighbors[4 * i + 2] = at(x + 1, y);
      this.neighbors[4 * i + 3] = at(x, y + 1);
      const s = startOf(i);
      this.grass[i] = s.grass;
      if (s.walker) this.walkerAt[i] = this.spawn(i, START_ENERGY);
    }
  }

  private spawn(tile: number, energy: number): number {
    const w = this.free[--this.freeCount]!;
    this.alive[w] = 1;
    this.energy[w] = energy;
    this.tile[w] = tile;
    this.target[w] = -1;
    this.from[w] = -1;
    return w;
  }

  private snapshot(): void {
    let k = 0;
    for (let w = 0; w < this.n; w++) if (this.alive[w] === 1) this.list[k++] = w;
    this.listCount = k;
  }

  step(): void {
    const { grass, neighbors, walkerAt, winner, energy, tile, target, from, list } = this;
    for (let i = 0; i < this.n; i++) {
      grass[i] = Math.min(1, grass[i]! + GROW);
      winner[i] = -1;
    }
    this.snapshot();
    for (let k = 0; k < this.listCount; k++) {
      const w = list[k]!;
      const here = tile[w]!;
      let best = -1;
      let most = grass[here]!;
      for (let d = 0; d < 4; d++) {
        const t = neighbors[4 * here + d]!;
        if (walkerAt[t] === -1 && grass[t]! > most) {
          best = t;
          most = grass[t]!;
        }
      }
      target[w] = best;
      from[w] = -1;
    }
    for (let i = 0; i < this.n; i++) {
      let best = -1;
      let bestEnergy = -Infinity;
      for (let d = 0; d < 4; d++) {
        const w = walkerAt[neighbors[4 * i + d]!]!;
        if (w !== -1 && target[w] === i && energy[w]! > bestEnergy) {
          best = w;
          bestEnergy = energy[w]!;
        }
      }
      winner[i] = best;
    }
    for (let k = 0; k < this.listCount; k++) {
      const w = list[k]!;
      const t = target[w]!;
      if (t === -1 || winner[t] !== w) continue;
      const here = tile[w]!;
      walkerAt[here] = -1;
      walkerAt[t] = w;
      tile[w] = t;
      from[w] = here;
      energy[w]! -= MOVE_COST;
    }
    for (let k = 0; k < this.listCount; k++) {
      const w = list[k]!;
      const here = tile[w]!;
      const bite = Math.min(grass[here]!, BITE);
      grass[here]! -= bite;
      energy[w]! += bite - UPKEEP;
      const f = from[w]!;
      if (f !== -1 && energy[w]! > SPLIT_AT) {
        energy[w]! /= 2;
        walkerAt[f] = this.spawn(f, energy[w]!);
      } else if (energy[w]! <= 0) {
        walkerAt[here] = -1;
        this.alive[w] = 0;
        this.free[this.freeCount++] = w;
      }
    }
  }

  walkers(): number {
    return this.n - this.freeCount;
  }

  /** walkers.ts digest(): the same FNV-1a over the tiles in index order. */
  digest(): number {
    const f = new Float32Array(1);
    const u = new Uint32Array(f.buffer);
    let h = 0x811c9dc5;
    const add = (x: number): void => {
      h = Math.imul(h ^ x, 0x01000193) >>> 0;
    };
    for (let i = 0; i < this.n; i++) {
      f[0] = this.grass[i]!;
      add(u[0]!);
      const w = this.walkerAt[i]!;
      if (w === -1) add(0xffffffff);
      else {
        f[0] = this.energy[w]!;
        add(u[0]!);
      }
    }
    return h;
  }
}
