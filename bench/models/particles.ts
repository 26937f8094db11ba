/**
 * A user-style model, written against smmo's public API the way a new user would write
 * it: particles drift through the cells of a width × height box (not a torus), pushed by
 * a fixed swirl field and away from crowded cells; particles that leave the box are
 * deleted and source cells emit new ones (objects created and deleted every step).
 *
 * Cell: index, position, the 3 × 3 cells around it (references, (dy+1)·3 + dx+1, itself
 * in the middle, null outside the box), its field, whether it is a source, and its
 * particles as a linked list (head → Particle.next → …) with their count. Particle: f32
 * position and velocity, its cell (null once it left the box), and links.
 *
 * A step is 4 do-alls:
 *   Particle.move   accelerate (field + pressure from the neighbours' counts), clamp the
 *                   speed below one cell per step, move, and find the cell it lands in
 *                   among the 3 × 3 around its old one (null: it left the box)
 *   Cell.rebin      build the new list: walk the old lists of the 3 × 3 cells around and
 *                   take the particles that landed here (in that order), count them
 *   Particle.expire a particle that left the box is deleted; the others adopt the new link
 *   Cell.emit       the new list becomes the list; a source emits a particle with
 *                   probability EMIT (position and velocity from a hash)
 *
 * Chance is a counter-based hash of (SEED, step, cell index, salt), never Math.random.
 * Every pass reads what earlier passes wrote and writes only its own object's fields (a
 * particle's new link is written only by the one cell it landed in; old lists are not
 * changed while they are read), so the result does not depend on the visiting order or
 * the number of threads; the plain typed-array version (particles-plain.ts) gives the
 * same digest exactly. Particles are never deleted while a list still to be read holds
 * them: `move` marks them, `rebin` leaves them out, `expire` deletes them.
 */
import { array, bool, f32, i32, object, ref, type Runtime, type SmmoObject } from '../../runtime/index.js';

export const MODULE_URL = import.meta.url;

export const SEED = 0x6c8e9cf5;
export const DAMP = 0.98;
export const PUSH = 0.004;
/** Below one cell per step: a particle lands in one of the 3 × 3 cells around its old one. */
export const VMAX = 0.7;
export const EMIT = Math.floor(0.5 * 2 ** 32);
export const SALT_EMIT = 1;
export const SALT_SPOT = 2;

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
  x: i32,
  y: i32,
  around: array(ref<Cell>('Cell'), 9),
  fx: f32,
  fy: f32,
  source: bool,
  count: i32,
  head: ref<Particle>('Particle'),
  fresh: ref<Particle>('Particle'),
}) {
  rebin(): void {
    let first: Particle | null = null;
    let last: Particle | null = null;
    let n = 0;
    for (let k = 0; k < 9; k++) {
      const c = this.around.get(k);
      if (c === null) continue;
      let p = c.head;
      while (p !== null) {
        const to = p.cell;
        if (to !== null && to.handle === this.handle) {
          p.link = null;
          if (last === null) first = p;
          else last.link = p;
          last = p;
          n++;
        }
        p = p.next;
      }
    }
    this.fresh = first;
    this.count = n;
  }

  emit(step: number): void {
    this.head = this.fresh;
    this.fresh = null;
    if (!this.source || chance(step, this.index, SALT_EMIT) >= EMIT) return;
    const h = chance(step, this.index, SALT_SPOT);
    const p = this.runtime.create(Particle, {
      x: this.x + ((h & 0xff) + 0.5) / 256,
      y: this.y + (((h >>> 8) & 0xff) + 0.5) / 256,
      vx: (((h >>> 16) & 0xff) - 127.5) / 512,
      vy: (((h >>> 24) & 0xff) - 127.5) / 512,
      cell: this,
      next: this.head,
    });
    this.head = p;
    this.count += 1;
  }
}

/** The particle count of a cell, 0 outside the box. */
function countOf(c: Cell | null): number {
  return c === null ? 0 : c.count;
}

export class Particle extends object({
  x: f32,
  y: f32,
  vx: f32,
  vy: f32,
  cell: ref<Cell>('Cell'),
  next: ref<Particle>('Particle'),
  link: ref<Particle>('Particle'),
}) {
  move(): void {
    const c = this.cell!;
    const px = countOf(c.around.get(3)) - countOf(c.around.get(5));
    const py = countOf(c.around.get(1)) - countOf(c.around.get(7));
    const vx = Math.fround(Math.max(-VMAX, Math.min(VMAX, this.vx * DAMP + c.fx + px * PUSH)));
    const vy = Math.fround(Math.max(-VMAX, Math.min(VMAX, this.vy * DAMP + c.fy + py * PUSH)));
    const x = Math.fround(this.x + vx);
    const y = Math.fround(this.y + vy);
    this.vx = vx;
    this.vy = vy;
    this.x = x;
    this.y = y;
    const dx = Math.floor(x) - c.x;
    const dy = Math.floor(y) - c.y;
    this.cell = c.around.get((dy + 1) * 3 + dx + 1);
  }

  expire(): void {
    if (this.cell === null) this.destroy();
    else this.next = this.link;
  }
}

export const CLASSES = [Cell, Particle];

/** A cell's field (a swirl about the centre with a slight outward drift) and whether it is a source. */
export function startOf(i: number, width: number, height: number): { fx: number; fy: number; source: boolean } {
  const x = i % width;
  const y = (i - x) / width;
  const rx = (x + 0.5 - width / 2) / width;
  const ry = (y + 0.5 - height / 2) / height;
  let h = Math.imul(i ^ 0x5bd1e995, 0x27d4eb2d);
  h ^= h >>> 15;
  h = Math.imul(h, 0x165667b1);
  h ^= h >>> 13;
  return { fx: 0.01 * (rx - 2 * ry), fy: 0.01 * (ry + 2 * rx), source: (h & 15) === 0 };
}

export interface World {
  readonly cells: number[];
  /** Steps done. */
  t: number;
}

/** Create the cells of a width × height box (no particles yet: the sources emit them). */
export async function init(rt: Runtime, width: number, height: number): Promise<World> {
  const cells: number[] = [];
  await rt.parallelNew(Cell, width * height, (c, i) => {
    const s = startOf(i, width, height);
    c.index = i;
    c.x = i % width;
    c.y = (i - (i % width)) / width;
    c.fx = s.fx;
    c.fy = s.fy;
    c.source = s.source;
    cells.push(c.handle);
  });
  for (let i = 0; i < cells.length; i++) {
    const x = i % width;
    const y = (i - x) / width;
    const c = rt.get(Cell, cells[i]!);
    for (let dy = -1; dy <= 1; dy++)
      for (let dx = -1; dx <= 1; dx++) {
        const xx = x + dx;
        const yy = y + dy;
        if (xx >= 0 && xx < width && yy >= 0 && yy < height) c.around.set((dy + 1) * 3 + dx + 1, rt.get(Cell, cells[yy * width + xx]!));
      }
  }
  return { cells, t: 0 };
}

export async function step(rt: Runtime, world: World): Promise<void> {
  const t = ++world.t;
  await rt.parallelDo(Particle, 'move');
  await rt.parallelDo(Cell, 'rebin');
  await rt.parallelDo(Particle, 'expire');
  await rt.parallelDo(Cell, 'emit', t);
}

/** FNV-1a over the cells in index order: the count, then each particle's x, y, vx, vy bits in list order. */
export function digest(rt: Runtime, world: World): number {
  const f = new Float32Array(1);
  const u = new Uint32Array(f.buffer);
  let h = 0x811c9dc5;
  const add = (x: number): void => {
    h = Math.imul(h ^ x, 0x01000193) >>> 0;
  };
  type P = SmmoObject & { x: number; y: number; vx: number; vy: number; next: P | null };
  for (const handle of world.cells) {
    const c = rt.get(Cell, handle);
    add(c.count);
    for (let p: P | null = c.head; p !== null; p = p.next) {
      for (const v of [p.x, p.y, p.vx, p.vy]) {
        f[0] = v;
        add(u[0]!);
      }
    }
  }
  return h;
}
