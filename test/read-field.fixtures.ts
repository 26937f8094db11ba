/** The class of test/read-field.test.ts, in a module of its own (worker threads import it). */
import { array, bool, f64, i32, object, ref, u16 } from '../index.js';

export const MODULE = import.meta.url;

export class Flag extends object({ n: i32, on: bool, arr: array(u16, 3), x: f64, peer: ref<Flag>('Flag') }) {
  bump(): void {
    this.n += 1;
    this.on = !this.on;
    this.arr.set(1, this.arr.get(1) + 2);
    this.x = this.x * 0.5 + 1;
  }

  /** Objects with an odd n go. */
  cull(): void {
    if (this.n % 2 !== 0) this.destroy();
  }
}
