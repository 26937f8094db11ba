/** The classes of test/compiler-spans.test.ts, in a module of their own (the compiler reads their source). */
import { i32, object } from '../index.js';

export const SPANS_FIXTURES = import.meta.url;

/** Factors read through arrays: the compiled methods of Tripled and Doubled differ in their statics only. */
const DOUBLE = [2];
const TRIPLE = [3];

export abstract class Part extends object({ v: i32 }, { abstract: true }) {
  bump(k: number): void {
    this.v += k;
  }

  /** Deletes the lane's own object when m divides v; the others count up. */
  cut(m: number): void {
    if (this.v % m === 0) this.destroy();
    else this.v += 1;
  }

  /** Throws on the object whose v is `at`; the others count up. */
  trip(at: number): void {
    if (this.v === at) throw new RangeError(`trip at ${at}`);
    this.v += 1;
  }
}

export class P1 extends Part {}
export class P2 extends Part {}
/** Between P2 and P3 in the class list: another layout, so its compiled bump is other code. */
export class Wide extends Part.extend({ w: i32 }) {}
export class P3 extends Part {}
/** No objects in the tests: a class without blocks between P3 and P4. */
export class Empty extends Part {}
export class P4 extends Part {}

export class Doubled extends Part {
  scale(): void {
    this.v = this.v * DOUBLE[0]!;
  }
}

export class Tripled extends Part {
  scale(): void {
    this.v = this.v * TRIPLE[0]!;
  }
}

/** No objects at first; its bump creates one: a do-all over Part is then no longer one that may read allocation words. */
export class Spawner extends Part {
  override bump(k: number): void {
    if (this.v >= 0) this.runtime.create(Spawner, { v: -1 });
    this.v += k;
  }
}

export const SPAN_CLASSES = [Part, P1, P2, Wide, P3, Empty, P4, Doubled, Tripled, Spawner];
