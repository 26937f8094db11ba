/**
 * A user-style model, written against smmo's public API the way a new user would write
 * it (plain classes, references followed like properties, objects created and deleted
 * in methods, no tuning): walkers graze on a torus of tiles.
 *
 * Tile: grass (grows every step), its 4 neighbours (references), the walker on it, and
 * the walker that won it this step. Walker: energy, the tile it stands on, the tile it
 * wants, the tile it left.
 *
 * A step is 5 do-alls:
 *   Tile.grow       grass += rate (at most 1); forget last step's winner
 *   Walker.choose   want the free neighbour with the most grass, if it has more than here
 *   Tile.award      among the neighbours' walkers that want this tile, the one with the
 *                   most energy wins it (ties: the lowest direction)
 *   Walker.move     a winner moves (costs energy)
 *   Walker.live     eat; a walker that moved and has energy to spare leaves a child on
 *                   the tile it left; a walker without energy dies
 *
 * Every pass writes only what no other object of the pass reads or writes, so the
 * result does not depend on the visiting order or the number of threads; the plain
 * typed-array version (walkers-plain.ts) gives the same digest exactly.
 */
import { array, f32, object, ref, type Runtime, type SmmoObject } from '../../runtime/index.js';

export const MODULE_URL = import.meta.url;

export const GROW = 0.02;
export const MOVE_COST = 0.02;
export const UPKEEP = 0.04;
export const BITE = 0.3;
export const SPLIT_AT = 1.2;
export const START_ENERGY = 0.8;

interface TileLike extends SmmoObject {
  grass: number;
}

export class Tile extends object({
  grass: f32,
  neighbors: array(ref<Tile>('Tile'), 4),
  walker: ref<Walker>('Walker'),
  winner: ref<Walker>('Walker'),
}) {
  grow(rate: number): void {
    this.grass = Math.min(1, this.grass + rate);
    this.winner = null;
  }

  award(): void {
    let best: Walker | null = null;
    let bestEnergy = -Infinity;
    for (let d = 0; d < 4; d++) {
      const w = this.neighbors.get(d)!.walker;
      if (w !== null && w.target !== null && w.target.handle === this.handle && w.energy > bestEnergy) {
        best = w;
        bestEnergy = w.energy;
      }
    }
    this.winner = best;
  }
}

export class Walker extends object({
  energy: f32,
  tile: ref<Tile>('Tile'),
  target: ref<Tile>('Tile'),
  from: ref<Tile>('Tile'),
}) {
  choose(): void {
    const here = this.tile!;
    let best: Tile | null = null;
    let most: number = here.grass;
    for (let d = 0; d < 4; d++) {
      const n = here.neighbors.get(d)!;
      if (n.walker === null && n.grass > most) {
        best = n;
        most = n.grass;
      }
    }
    this.target = best;
    this.from = null;
  }

  move(): void {
    const t = this.target;
    if (t === null || t.winner === null || t.winner.handle !== this.handle) return;
    const here = this.tile!;
    here.walker = null;
    t.walker = this;
    this.tile = t;
    this.from = here;
    this.energy -= MOVE_COST;
  }

  live(): void {
    const here = this.tile!;
    const bite = Math.min(here.grass, BITE);
    here.grass -= bite;
    this.energy += bite - UPKEEP;
    const from = this.from;
    if (from !== null && this.energy > SPLIT_AT) {
      this.energy /= 2;
      const child = this.runtime.create(Walker, { energy: this.energy, tile: from });
      from.walker = child;
    } else if (this.energy <= 0) {
      here.walker = null;
      this.destroy();
    }
  }
}

export const CLASSES = [Tile, Walker];

/** The grass a tile starts with, and whether a walker starts there (a hash of its index). */
export function startOf(i: number): { grass: number; walker: boolean } {
  let h = Math.imul(i ^ 0x5bd1e995, 0x27d4eb2d);
  h ^= h >>> 15;
  h = Math.imul(h, 0x165667b1);
  h ^= h >>> 13;
  return { grass: ((h >>> 8) & 0xffff) / 65536, walker: (h & 7) === 0 };
}

/** Create the tiles and walkers of a width × height torus; returns the tile handles by index. */
export async function init(rt: Runtime, width: number, height: number): Promise<number[]> {
  const tiles: number[] = [];
  await rt.parallelNew(Tile, width * height, (t, i) => {
    t.grass = startOf(i).grass;
    tiles.push(t.handle);
  });
  for (let i = 0; i < tiles.length; i++) {
    const x = i % width;
    const y = (i - x) / width;
    const t = rt.get(Tile, tiles[i]!);
    const at = (xx: number, yy: number): Tile => rt.get(Tile, tiles[((yy + height) % height) * width + ((xx + width) % width)]!);
    t.neighbors.set(0, at(x - 1, y));
    t.neighbors.set(1, at(x, y - 1));
    t.neighbors.set(2, at(x + 1, y));
    t.neighbors.set(3, at(x, y + 1));
    if (startOf(i).walker) t.walker = rt.create(Walker, { energy: START_ENERGY, tile: t });
  }
  return tiles;
}

export async function step(rt: Runtime): Promise<void> {
  await rt.parallelDo(Tile, 'grow', GROW);
  await rt.parallelDo(Walker, 'choose');
  await rt.parallelDo(Tile, 'award');
  await rt.parallelDo(Walker, 'move');
  await rt.parallelDo(Walker, 'live');
}

/** FNV-1a over the tiles in index order: the grass bits, then the energy bits of the walker there (all ones: none). */
export function digest(rt: Runtime, tiles: readonly number[]): number {
  const f = new Float32Array(1);
  const u = new Uint32Array(f.buffer);
  let h = 0x811c9dc5;
  const add = (x: number): void => {
    h = Math.imul(h ^ x, 0x01000193) >>> 0;
  };
  for (const handle of tiles) {
    const t: TileLike & { walker: Walker | null } = rt.get(Tile, handle);
    f[0] = t.grass;
    add(u[0]!);
    const w = t.walker;
    if (w === null) add(0xffffffff);
    else {
      f[0] = w.energy;
      add(u[0]!);
    }
  }
  return h;
}
