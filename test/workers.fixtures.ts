/**
 * Classes for the worker-thread tests (test/workers*.test.ts). Worker threads import
 * this module (options.modules: [FIXTURES]) and find the classes by name.
 *
 * Every rule here is a function of an object's own fields and the pass arguments, never
 * of handles or of which thread runs it, so the logical outcome of a run (populations,
 * sums of seeds) is the same on 1 or N threads.
 */
import { isMainThread } from 'node:worker_threads';
import { array, f32, i32, object, ref, u32 } from '../runtime/index.js';

export const FIXTURES = import.meta.url;

/** A 32-bit mix (splitmix32 finaliser): the tests' per-object deterministic randomness. */
export function mix(a: number, b: number): number {
  let z = (Math.imul(a, 0x9e3779b9) + b + 0x7f4a7c15) | 0;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return (z ^ (z >>> 16)) >>> 0;
}

/**
 * On the calling thread only, busy-wait `micros` µs. The tests' small passes would
 * otherwise often finish on the calling thread before a sleeping worker wakes up (the
 * calling thread takes part in every pass); this makes sure the workers get blocks.
 * It changes no field, so results are the same on any number of threads.
 */
export function slowOnMain(micros: number): void {
  if (!isMainThread) return;
  const until = performance.now() + micros / 1000;
  while (performance.now() < until);
}

const sleepCell = new Int32Array(new SharedArrayBuffer(4));
/** Block this thread for `ms` (lets the other threads claim blocks while the calling thread is slow). */
function sleep(ms: number): void {
  Atomics.wait(sleepCell, 0, 0, ms);
}

// ------------------------------------------------------------------ wa-tor-like churn

/** Records that an Agent was visited by pass `round` and deleted itself. */
export class Tomb extends object({ victim: u32, round: i32 }) {
  remove(): void {
    this.destroy();
  }
}

/**
 * Visited once per pass: by a rule on (seed, round) it dies (leaving a Tomb), survives,
 * survives with one child, or dies with two children (children are not visited in the
 * pass that creates them).
 */
export class Agent extends object({ seed: u32, visits: u32, lastVisited: i32 }) {
  setup(index: number, seed: number): void {
    this.seed = mix(seed, index);
    this.lastVisited = -1;
  }

  step(round: number): void {
    slowOnMain(10);
    const rule = mix(this.seed, round) & 3;
    const rt = this.runtime;
    const children = rule === 2 ? 1 : rule === 3 ? 2 : 0;
    for (let k = 0; k < children; k++) rt.create(Agent, { seed: mix(this.seed ^ round, k + 1), lastVisited: -1 });
    if (rule === 0 || rule === 3) {
      rt.create(Tomb, { victim: this.handle, round });
      this.destroy();
    } else {
      this.visits += 1;
      this.lastVisited = round;
    }
  }
}

/** Live Agents after pass `round` of an Agent whose seed is `seed` (the rule of Agent.step). */
export function offspring(seed: number, round: number): number {
  return [0, 1, 2, 2][mix(seed, round) & 3]!;
}

// ------------------------------------------------------------------ create/delete stress

export const ITEMS_PER_DRIVER = 8;

export class Item extends object({ owner: u32, tag: u32 }) {}

/**
 * Owns up to 8 Items. Each `churn` does `ops` random steps from its own generator:
 * create an Item in an empty slot, or delete the Item in a full one.
 */
export class Driver extends object({
  index: u32,
  rng: u32,
  seen: i32,
  items: array(
    ref(() => Item),
    ITEMS_PER_DRIVER,
  ),
  pinned: ref(() => Item),
}) {
  setup(index: number, seed: number): void {
    slowOnMain(2);
    this.index = index;
    this.rng = mix(seed, index) | 1;
  }

  churn(ops: number): void {
    slowOnMain(10);
    const rt = this.runtime;
    for (let k = 0; k < ops; k++) {
      const r = (this.rng = mix(this.rng, k));
      const slot = r % ITEMS_PER_DRIVER;
      const it = this.items.get(slot) as Item | null;
      if (it === null) {
        this.items.set(slot, rt.create(Item, { owner: this.handle, tag: r }));
      } else {
        it.destroy();
        this.items.set(slot, null);
      }
    }
  }

  /** Count Items with deviceDo (must see exactly those live when the pass started), then create two. */
  countThenCreate(): void {
    slowOnMain(10);
    let n = 0;
    this.runtime.deviceDo(Item, () => {
      n++;
    });
    this.seen = n;
    for (let k = 0; k < 2; k++) this.runtime.create(Item, { owner: this.handle, tag: 7 });
  }

  /** An smmo object passed as an argument arrives as a view of the same object. */
  pin(item: Item, tag: number): void {
    if (item.tag !== tag) throw new Error(`pin: item ${item.handle} has tag ${item.tag}, expected ${tag}`);
    this.pinned = item;
  }
}

// ------------------------------------------------------------------ failures

export class Probe extends object({ value: f32, hits: u32 }) {
  setValue(index: number): void {
    this.value = index;
  }

  inc(): void {
    this.hits += 1;
  }

  /** inc, slow on the calling thread so that the workers surely take part. */
  incSlowOnMain(): void {
    slowOnMain(30);
    this.hits += 1;
  }

  throwAt(handle: number): void {
    this.hits += 1;
    if (this.handle === handle) throw new TypeError(`boom at ${handle}`);
  }

  /** Throws on a worker thread; the calling thread only sleeps, so that workers get blocks. */
  throwOnWorker(): void {
    if (isMainThread) sleep(1);
    else throw new RangeError(`thrown on a worker by ${this.handle}`);
  }

  initThrowAt(index: number, bad: number): void {
    this.value = index;
    if (index === bad) throw new Error(`init failed at index ${index}`);
  }

  /** A runtime error on a worker (deleting an object twice): its class must survive the trip. */
  destroyTwiceOnWorker(): void {
    if (isMainThread) {
      sleep(1);
      return;
    }
    this.destroy();
    this.destroy();
  }

  /** Ends a worker thread (process.exit in a worker ends only that thread). */
  exitOnWorker(): void {
    if (isMainThread) sleep(1);
    else process.exit(7);
  }

  /** Exhausts a worker's JS heap (run under resourceLimits). */
  oomOnWorker(): void {
    if (isMainThread) {
      sleep(1);
      return;
    }
    const keep: number[][] = [];
    for (;;) keep.push(new Array<number>(1 << 20).fill(keep.length));
  }

  /** Busy for `micros` µs on a worker thread; 1 ms on the calling thread (so that a worker gets blocks). */
  spinOnWorker(micros: number): void {
    if (isMainThread) sleep(1);
    else this.spin(micros);
  }

  /** Records where it ran (value 0: the calling thread, 1: a worker), after `micros` µs of work. */
  where(micros: number): void {
    if (micros > 0) this.spin(micros);
    this.value = isMainThread ? 0 : 1;
  }

  /** Loops for `micros` µs: a pass whose per-block cost is known. */
  spin(micros: number): void {
    const until = performance.now() + micros / 1000;
    while (performance.now() < until) this.hits += 1;
  }
}

export const CLASSES = { churn: [Agent, Tomb], stress: [Driver, Item], probe: [Probe] } as const;
