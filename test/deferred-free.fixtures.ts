/** The class of test/compiler-deferred-free.test.ts, in a module of its own so that worker threads can import it. */
import { i32, object } from '../index.js';

export const DEFERRED_FREE_FIXTURES = import.meta.url;

export class Mote extends object({ v: i32, w: i32 }) {
  /** Delete itself when v is a multiple of k. */
  cull(k: number): void {
    if (this.v % k === 0) this.destroy();
    else this.w += 1;
  }

  /** Deleted twice when v is 37. */
  twice(): void {
    if (this.v === 37) {
      this.destroy();
      this.destroy();
    }
  }

  /** Multiples of 3 delete themselves; the lane of v = at throws (after the deletions of its block's earlier lanes). */
  boom(at: number): void {
    if (this.v % 3 === 0) this.destroy();
    if (this.v === at) throw new RangeError(`boom at ${at}`);
  }

  /** Deletes itself and, now and then, another object: not deferred. */
  cullOther(k: number): void {
    if (this.v % k === 0) {
      const other = this.runtime.get(Mote, this.w);
      this.destroy();
      if (other.v !== this.v) other.destroy();
    }
  }

  /** Creates a replacement, then deletes itself. */
  replace(k: number): void {
    if (this.v % k === 0) {
      this.runtime.create(Mote).v = this.v + 1;
      this.destroy();
    }
  }

  /** Deletes itself, or now and then creates another mote (a lane after deleted ones may call into the core's allocation). */
  spawnOrDie(k: number): void {
    if (this.v % k === 0) this.destroy();
    else if (this.v % 3 === 0) this.runtime.create(Mote, { v: this.v + 100000, w: 1 });
  }

  /** Deletes itself, then creates a Spark (another class). */
  dieThenSpark(k: number): void {
    if (this.v % k === 0) {
      this.destroy();
      this.runtime.create(Spark).at = this.v;
    }
  }

  /** Counts the live motes while deleting itself: not deferred. */
  census(k: number): void {
    let n = 0;
    this.runtime.deviceDo(Mote, () => void n++);
    this.w = n;
    if (this.v % k === 0) this.destroy();
  }
}

/** A second class for Mote.dieThenSpark. */
export class Spark extends object({ at: i32 }) {}
