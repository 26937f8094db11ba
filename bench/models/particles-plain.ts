/**
 * The particles model (particles.ts) written as plain single-threaded JavaScript over
 * typed arrays: what a programmer writes for speed without smmo. Particles live in a
 * pool of slots with a free list (the arrays double when it runs out); cells keep the
 * same linked lists (slot numbers, -1 for none), rebuilt in the same order, so the same
 * f32 operations in the same order give the same digest exactly.
 */
import { DAMP, EMIT, PUSH, SALT_EMIT, SALT_SPOT, VMAX, chance, startOf } from './particles.js';

export class PlainParticles {
  readonly n: number;
  private readonly cx: Int32Array;
  private readonly cy: Int32Array;
  private readonly around: Int32Array;
  private readonly fx: Float32Array;
  private readonly fy: Float32Array;
  private readonly source: Uint8Array;
  private readonly count: Int32Array;
  private readonly head: Int32Array;
  private readonly fresh: Int32Array;
  private cap = 0;
  private x = new Float32Array(0);
  private y = new Float32Array(0);
  private vx = new Float32Array(0);
  private vy = new Float32Array(0);
  private cell = new Int32Array(0);
  private next = new Int32Array(0);
  private link = new Int32Array(0);
  private alive = new Uint8Array(0);
  private free = new Int32Array(0);
  private freeCount = 0;
  private t = 0;
  /** Particles emitted and deleted so far. */
  created = 0;
  deleted = 0;

  constructor(
    readonly width: number,
    readonly height: number,
  ) {
    const n = (this.n = width * height);
    this.cx = new Int32Array(n);
    this.cy = new Int32Array(n);
    this.around = new Int32Array(9 * n).fill(-1);
    this.fx = new Float32Array(n);
    this.fy = new Float32Array(n);
    this.source = new Uint8Array(n);
    this.count = new Int32Array(n);
    this.head = new Int32Array(n).fill(-1);
    this.fresh = new Int32Array(n).fill(-1);
    for (let i = 0; i < n; i++) {
      const x = i % width;
      const y = (i - x) / width;
      const s = startOf(i, width, height);
      this.cx[i] = x;
      this.cy[i] = y;
      this.fx[i] = s.fx;
      this.fy[i] = s.fy;
      this.source[i] = s.source ? 1 : 0;
      for (let dy = -1; dy <= 1; dy++)
        for (let dx = -1; dx <= 1; dx++) {
          const xx = x + dx;
          const yy = y + dy;
          if (xx >= 0 && xx < width && yy >= 0 && yy < height) this.around[9 * i + (dy + 1) * 3 + dx + 1] = yy * width + xx;
        }
    }
    this.grow(Math.max(1024, n >> 2));
  }

  private grow(cap: number): void {
    const old = this.cap;
    const copy = <T extends Float32Array | Int32Array | Uint8Array>(a: T, make: (k: number) => T): T => {
      const b = make(cap);
      b.set(a);
      return b;
    };
    this.x = copy(this.x, (k) => new Float32Array(k));
    this.y = copy(this.y, (k) => new Float32Array(k));
    this.vx = copy(this.vx, (k) => new Float32Array(k));
    this.vy = copy(this.vy, (k) => new Float32Array(k));
    this.cell = copy(this.cell, (k) => new Int32Array(k));
    this.next = copy(this.next, (k) => new Int32Array(k));
    this.link = copy(this.link, (k) => new Int32Array(k));
    this.alive = copy(this.alive, (k) => new Uint8Array(k));
    this.free = copy(this.free, (k) => new Int32Array(k));
    for (let s = cap - 1; s >= old; s--) this.free[this.freeCount++] = s;
    this.cap = cap;
  }

  private countOf(c: number): number {
    return c === -1 ? 0 : this.count[c]!;
  }

  step(): void {
    const { n, cx, cy, around, fx, fy, count, head, fresh } = this;
    const t = ++this.t;
    // Particle.move
    {
      const { x, y, vx, vy, cell, alive } = this;
      for (let p = 0; p < this.cap; p++) {
        if (alive[p] === 0) continue;
        const c = cell[p]!;
        const a = 9 * c;
        const px = this.countOf(around[a + 3]!) - this.countOf(around[a + 5]!);
        const py = this.countOf(around[a + 1]!) - this.countOf(around[a + 7]!);
        const nvx = Math.fround(Math.max(-VMAX, Math.min(VMAX, vx[p]! * DAMP + fx[c]! + px * PUSH)));
        const nvy = Math.fround(Math.max(-VMAX, Math.min(VMAX, vy[p]! * DAMP + fy[c]! + py * PUSH)));
        const nx = Math.fround(x[p]! + nvx);
        const ny = Math.fround(y[p]! + nvy);
        vx[p] = nvx;
        vy[p] = nvy;
        x[p] = nx;
        y[p] = ny;
        const dx = Math.floor(nx) - cx[c]!;
        const dy = Math.floor(ny) - cy[c]!;
        cell[p] = around[a + (dy + 1) * 3 + dx + 1]!;
      }
    }
    // Cell.rebin
    {
      const { cell, next, link } = this;
      for (let i = 0; i < n; i++) {
        let first = -1;
        let last = -1;
        let k = 0;
        for (let d = 0; d < 9; d++) {
          const c = around[9 * i + d]!;
          if (c === -1) continue;
          for (let p = head[c]!; p !== -1; p = next[p]!) {
            if (cell[p] !== i) continue;
            link[p] = -1;
            if (last === -1) first = p;
            else link[last] = p;
            last = p;
            k++;
          }
        }
        fresh[i] = first;
        count[i] = k;
      }
    }
    // Particle.expire
    {
      const { cell, next, link, alive } = this;
      for (let p = 0; p < this.cap; p++) {
        if (alive[p] === 0) continue;
        if (cell[p] === -1) {
          alive[p] = 0;
          this.deleted++;
          this.free[this.freeCount++] = p;
        } else next[p] = link[p]!;
      }
    }
    // Cell.emit
    for (let i = 0; i < n; i++) {
      head[i] = fresh[i]!;
      fresh[i] = -1;
      if (this.source[i] === 0 || chance(t, i, SALT_EMIT) >= EMIT) continue;
      const h = chance(t, i, SALT_SPOT);
      if (this.freeCount === 0) this.grow(2 * this.cap);
      const p = this.free[--this.freeCount]!;
      this.created++;
      this.alive[p] = 1;
      this.x[p] = cx[i]! + ((h & 0xff) + 0.5) / 256;
      this.y[p] = cy[i]! + (((h >>> 8) & 0xff) + 0.5) / 256;
      this.vx[p] = (((h >>> 16) & 0xff) - 127.5) / 512;
      this.vy[p] = (((h >>> 24) & 0xff) - 127.5) / 512;
      this.cell[p] = i;
      this.next[p] = head[i]!;
      this.link[p] = -1;
      head[i] = p;
      count[i]! += 1;
    }
  }

  /** Particles alive. */
  population(): number {
    return this.cap - this.freeCount;
  }

  /** particles.ts digest(): the same FNV-1a over the cells in index order. */
  digest(): number {
    const f = new Float32Array(1);
    const u = new Uint32Array(f.buffer);
    let h = 0x811c9dc5;
    const add = (x: number): void => {
      h = Math.imul(h ^ x, 0x01000193) >>> 0;
    };
    for (let i = 0; i < this.n; i++) {
      add(this.count[i]!);
      for (let p = this.head[i]!; p !== -1; p = this.next[p]!) {
        for (const v of [this.x[p]!, this.y[p]!, this.vx[p]!, this.vy[p]!]) {
          f[0] = v;
          add(u[0]!);
        }
      }
    }
    return h;
  }
}
