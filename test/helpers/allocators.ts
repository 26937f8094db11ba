/**
 * Several Allocator instances over one small heap, standing for threads t1 … t4: the
 * fixture of the forced-interleaving tests (interleavings.test.ts, kept-blocks.test.ts).
 * Every Allocator is the binding of the Rust allocator core (wasm/src/alloc/); they share
 * the heap's module instance and each claims its own allocator state. `bitmaps` changes
 * bitmaps through the core (the runtime's HierarchicalBitmap only reads), for the steps of
 * a "thread" that the tests play by hand.
 */
import { Allocator, WasmBitmaps } from '../../runtime/allocator.js';
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
  /** Bitmap operations of the core, on the heap's bitmaps. */
  bitmaps: WasmBitmaps;
}

/**
 * A fresh heap of classes A and B and four allocators keeping `keep` blocks per type (0: the
 * paper's allocator). `atomic`: the core's multi-threaded path (SeqCst atomics; default), or
 * its single-threaded one (plain loads and stores).
 */
export function allocatorFixture(keep: number, atomic = true): Fixture {
  const table = planTypes([A, B]);
  const heap = Heap.create(table, MIN_HEAP_BYTES, { keepBlocks: keep, atomic });
  return {
    heap,
    tA: table.byClass(A)!,
    tB: table.byClass(B)!,
    t1: new Allocator(heap, 11),
    t2: new Allocator(heap, 22),
    t3: new Allocator(heap, 33),
    t4: new Allocator(heap, 44),
    bitmaps: new WasmBitmaps(heap.wasm),
  };
}
