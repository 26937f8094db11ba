/** The classes of test/direct-create.test.ts: a class whose methods create objects of another class. */
import { i32, object, ref } from '../index.js';

export const MODULE_URL = import.meta.url;

export class Sprout extends object({ from: i32, seed: ref<Seed>('Seed'), pad: i32 }) {}

export class Seed extends object({ v: i32, w: i32, last: ref<Sprout>('Sprout') }) {
  /** A Sprout for every Seed with v ≡ 0 (mod k), remembered in `last`; the others count the visit. */
  sprout(k: number): void {
    if (this.v % k === 0) this.last = this.runtime.create(Sprout, { from: this.v, seed: this });
    else this.w += 1;
  }

  /** The Seeds with v === 1 create one Sprout; a lane of any other object adds to w. */
  sproutOne(): void {
    if (this.v === 1) this.runtime.create(Sprout, { from: 1 });
    this.w += 1;
  }

  /** A Sprout, then the Seed deletes itself when its v is odd (game-of-life's updates do both). */
  sproutAndDie(): void {
    this.runtime.create(Sprout, { from: this.v, seed: null });
    if ((this.v & 1) === 1) this.destroy();
  }

  /** Deletes the Seed when v ≥ k. */
  dieFrom(k: number): void {
    if (this.v >= k) this.destroy();
  }

  /** Creates another Seed: a do-all of this reads the iteration words (its new objects must not be visited). */
  spawnSeed(): void {
    if (this.v < 1000) this.runtime.create(Seed, { v: this.v + 1000 });
  }
}
