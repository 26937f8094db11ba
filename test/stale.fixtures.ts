/**
 * Classes for test/stale-foreign.test.ts; worker threads import this module
 * (options.modules: [STALE_FIXTURES]) and find the classes by name.
 */
import { f32, object, ref, u32 } from '../runtime/index.js';

export const STALE_FIXTURES = import.meta.url;

/** A node with a value, a reference and a method that replaces the object by a new one. */
export class Node extends object({ value: u32, weight: f32, next: ref<Node>('Node') }) {
  /** Delete this object and create another Node (which may take a freed slot). */
  replace(): void {
    const v = this.value;
    this.destroy();
    this.runtime.create(Node, { value: v + 1000 });
  }

  /** Read `other`'s value into weight (a do-all argument that is an smmo object). */
  copyFrom(other: Node): void {
    this.weight = other.value;
  }

  bump(): void {
    this.value += 1;
  }
}

/** Larger than Node: its blocks have fewer slots and other field offsets. */
export class Wide extends object({ a: f32, b: f32, c: f32, d: f32, e: f32, f: f32, g: f32, h: f32 }) {}

export const CLASSES = [Node, Wide];
