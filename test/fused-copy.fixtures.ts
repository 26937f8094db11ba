/** The class of test/fused-copy.test.ts, in a module of its own so that worker threads can import it. */
import { i32, object, ref } from '../index.js';

export const MODULE_URL = import.meta.url;

export class Item extends object({ v: i32, w: i32, next: ref<Item>('Item') }) {
  /** Portable, no allocation: fusable. */
  bump(k: number): void {
    this.w += this.v * k;
  }

  /** Reads another object through a reference (still fusable: no iteration word read). */
  pull(): void {
    const n = this.next;
    if (n !== null) this.w += n.v;
  }

  /** Creates one object: not fusable (a fused copy could let the pass visit it). */
  spawn(): void {
    this.runtime.create(Item, { v: this.v + 1000 });
  }

  /** Deletes every object with an odd v — only the lane's own object: fusable. */
  cull(): void {
    if ((this.v & 1) === 1) this.destroy();
  }

  /** Deletes the lane's own object when v ≡ k (mod 7), else counts the visit: fusable. */
  thin(k: number): void {
    if (this.v % 7 === k % 7) this.destroy();
    else this.w += 1;
  }

  /** Deletes the object `next` refers to (another object): not fusable. */
  dropNext(): void {
    const n = this.next;
    if (n !== null) {
      this.next = null;
      n.destroy();
    }
  }

  /** Iterates every Item: not fusable (reads other blocks' iteration words). */
  count(): void {
    let n = 0;
    this.runtime.deviceDo(Item, () => {
      n++;
    });
    this.w = n;
  }

  /** Calls JavaScript (not portable): not fusable. */
  logs(): void {
    this.w = Math.max(this.w, String(this.v).length);
  }
}
