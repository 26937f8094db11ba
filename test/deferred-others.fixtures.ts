/** The classes of test/compiler-deferred-others.test.ts, in a module of their own so that worker threads can import them. */
import { i32, object, u32 } from '../index.js';

export const DEFERRED_OTHERS_FIXTURES = import.meta.url;

/** What a Twig is made of: the objects that Twig lanes create and delete. */
export class Leaf extends object({ x: i32 }) {}

/** A partner: the object a Twig's `w` names (the test gives every even twig one). */
export class Bud extends object({ y: i32 }) {}

/** A lane object; `w` names its Bud (by handle; 0: none), `next` another Twig (killNext). */
export class Twig extends object({ v: i32, w: u32, next: u32 }) {
  /** Creates n Leaves and deletes them again, `rounds` times (linux-scalability's lane). */
  churn(n: number, rounds: number): void {
    const rt = this.runtime;
    const held = new Uint32Array(n);
    for (let r = 0; r < rounds; r++) {
      for (let i = 0; i < n; i++) held[i] = rt.create(Leaf, { x: this.v + i }).handle;
      for (let i = 0; i < n; i++) rt.destroy(rt.get(Leaf, held[i]!));
    }
    this.v += 1;
  }

  /**
   * Seeded random creates and deletes (the stress test): 2n steps, each creating a Leaf
   * (while fewer than n are held) or deleting a random held one, so deletions come in any
   * order, across blocks, between creations; at the end, now and then, the Bud goes too.
   * What a lane does depends on (seed, v) only, not on the handles it gets.
   */
  mix(seed: number, n: number): void {
    const rt = this.runtime;
    const held = new Uint32Array(n);
    let count = 0;
    let h = Math.imul(seed ^ Math.imul(this.v, 0x27d4eb2d), 0x9e3779b1) >>> 0;
    for (let step = 0; step < 2 * n; step++) {
      h = Math.imul(h ^ (h >>> 15), 0x85ebca6b) >>> 0;
      if (count < n && (count === 0 || (h & 3) !== 0)) held[count++] = rt.create(Leaf, { x: h & 0xffff }).handle;
      else {
        const i = (h >>> 8) % count;
        rt.destroy(rt.get(Leaf, held[i]!));
        held[i] = held[--count]!;
      }
    }
    if (this.w !== 0 && (h & 16) !== 0) {
      rt.destroy(rt.get(Bud, this.w));
      this.w = 0;
    }
  }

  /** Creates n Leaves, deletes every other one (ascending, then descending), keeps the rest. */
  thin(n: number): void {
    const rt = this.runtime;
    const held = new Uint32Array(n);
    for (let i = 0; i < n; i++) held[i] = rt.create(Leaf, { x: i }).handle;
    for (let i = 0; i < n; i += 2) rt.destroy(rt.get(Leaf, held[i]!));
    for (let i = n - 1 - (n % 2); i > 0; i -= 2) if (i % 4 === 1) rt.destroy(rt.get(Leaf, held[i]!));
  }

  /** Where v is a multiple of k, deletes its Bud, and then itself when v is a multiple of 2k; every other lane makes a Leaf. */
  killPartner(k: number): void {
    if (this.w !== 0 && this.v % k === 0) {
      this.runtime.destroy(this.runtime.get(Bud, this.w));
      this.w = 0;
      if (this.v % (2 * k) === 0) this.destroy();
    } else this.runtime.create(Leaf).x = this.v;
  }

  /**
   * Deletes the Twig named by `next` where v is a multiple of k (not allowed in checked
   * mode: the pass may visit that Twig). The test names Twigs of later blocks, which a
   * pass on one thread visits after this one; a deferred deletion must have been made by
   * then, so the deleted Twig is not visited, as in an interpreted run (a visited one
   * would make a Leaf).
   */
  killNext(k: number): void {
    if (this.next !== 0 && this.v % k === 0) this.runtime.destroy(this.runtime.get(Twig, this.next));
    else this.runtime.create(Leaf).x = this.v;
  }

  /** Deletes its Bud and then creates a Twig (the core's allocation after a pending deletion). */
  killThenSpawn(k: number): void {
    if (this.w !== 0 && this.v % k === 0) {
      this.runtime.destroy(this.runtime.get(Bud, this.w));
      this.w = 0;
      this.runtime.create(Twig, { v: this.v + 100000, w: 0 });
    }
  }

  /** Deletes its Bud twice when v is `at`. */
  killTwice(at: number): void {
    if (this.w !== 0 && this.v === at) {
      const p = this.runtime.get(Bud, this.w);
      this.runtime.destroy(p);
      this.runtime.destroy(p);
    }
  }

  /** Buds of multiples of 4 are deleted; the lane of v = at throws after its deletion. */
  killBoom(at: number): void {
    if (this.w !== 0 && this.v % 4 === 0) {
      this.runtime.destroy(this.runtime.get(Bud, this.w));
      this.w = 0;
    }
    if (this.v === at) throw new RangeError(`boom at ${at}`);
  }

  /** Deletes its Bud and counts the Twigs: iterates a class, so not deferred. */
  killCensus(k: number): void {
    let n = 0;
    this.runtime.deviceDo(Twig, () => void n++);
    if (this.w !== 0 && this.v % k === 0) {
      this.runtime.destroy(this.runtime.get(Bud, this.w));
      this.w = 0;
      this.v += n;
    }
  }
}
