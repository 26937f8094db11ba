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

  /** Deletes every object with an odd v: not fusable. */
  cull(): void {
    if ((this.v & 1) === 1) this.destroy();
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
