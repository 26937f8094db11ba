/**
 * Several Allocator instances over one small heap, standing for threads t1 … t4: the
 * fixture of the forced-interleaving tests (interleavings.test.ts, kept-blocks.test.ts).
 */
import { Allocator } from '../../runtime/allocator.js';
import { Heap } from '../../runtime/heap.js';
import { f32, f64, object } from '../../runtime/index.js';
import { MIN_HEAP_BYTES, planTypes, type TypeLayout } from '../../runtime/layout.js';

/** 4 bytes: 32 slots per block. */
export class A extends object({ x: f32 }) {}
/** 16 bytes: 8 slots per block (bits 8…31 pre-set). */
export class B extends object({ y: f64, z: f64 }) {}

export interface Fixture {
  heap: Heap;
  tA: TypeLayout;
  tB: TypeLayout;
  /** Threads. */
  t1: Allocator;
  t2: Allocator;
  t3: Allocator;
  t4: Allocator;
}

/** A fresh heap of classes A and B and four allocators keeping `keep` blocks per type (0: the paper's allocator). */
export function allocatorFixture(keep: number): Fixture {
  const table = planTypes([A, B]);
  const heap = Heap.create(table, MIN_HEAP_BYTES);
  return {
    heap,
    tA: table.byClass(A)!,
    tB: table.byClass(B)!,
    t1: new Allocator(heap, 11, keep),
    t2: new Allocator(heap, 22, keep),
    t3: new Allocator(heap, 33, keep),
    t4: new Allocator(heap, 44, keep),
  };
}
