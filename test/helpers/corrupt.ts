/**
 * Corrupting a heap on purpose, for the tests of validateHeap() (heap.ts H1–H5) and of
 * HierarchicalBitmap.validate() (bitmap.ts B1–B2).
 *
 * Every helper writes words of the shared memory directly, addressed through the heap
 * layout (runtime/layout.ts: block header words) and the bitmap layout (a bitmap of
 * `bits` positions at word `base`, its levels one after the other, bitmapLevelWords).
 * Nothing here calls the allocator core or its bitmap operations (wasm/src/alloc), so a
 * test that uses these helpers checks the validators against the memory format alone, not
 * against what the core happens to write.
 */
import { bitmapLevelWords, type HierarchicalBitmap } from '../../runtime/bitmap.js';
import { HeapCorruptionError } from '../../runtime/errors.js';
import type { Heap } from '../../runtime/heap.js';
import { BLOCK_ALLOC_WORD, BLOCK_GEN_WORD, BLOCK_ITER_WORD, BLOCK_TYPE_WORD } from '../../runtime/layout.js';

/** The words of a block header. */
export type HeaderWord = 'alloc' | 'iter' | 'type' | 'gen';

const HEADER: Record<HeaderWord, number> = {
  alloc: BLOCK_ALLOC_WORD,
  iter: BLOCK_ITER_WORD,
  type: BLOCK_TYPE_WORD,
  gen: BLOCK_GEN_WORD,
};

/** Word index (into heap.i32) of header word `w` of block `b`. */
export function headerIndex(heap: Heap, b: number, w: HeaderWord): number {
  return heap.blocksWord + b * heap.blockWords + HEADER[w];
}

export function readHeader(heap: Heap, b: number, w: HeaderWord): number {
  return heap.i32[headerIndex(heap, b, w)]!;
}

export function writeHeader(heap: Heap, b: number, w: HeaderWord, value: number): void {
  heap.i32[headerIndex(heap, b, w)] = value;
}

/** Number of levels of `bm` (level 0 holds the positions, the last one is a single word). */
export function levelCount(bm: HierarchicalBitmap): number {
  return bitmapLevelWords(bm.bits).length;
}

/** Word index of container `c` of level `level` of `bm`. */
export function containerIndex(bm: HierarchicalBitmap, level: number, c: number): number {
  const words = bitmapLevelWords(bm.bits);
  if (level >= words.length) throw new Error(`bitmap ${bm.name} has ${words.length} levels, not ${level + 1}`);
  let at = bm.base;
  for (let l = 0; l < level; l++) at += words[l]!;
  return at + c;
}

/** Value of bit `pos` of level `level`. */
export function bitAt(mem: Int32Array, bm: HierarchicalBitmap, level: number, pos: number): boolean {
  return (mem[containerIndex(bm, level, pos >>> 5)]! & (1 << (pos & 31))) !== 0;
}

/** Flip bit `pos` of level `level` and nothing else: the levels above are left as they are. */
export function flipBit(mem: Int32Array, bm: HierarchicalBitmap, level: number, pos: number): void {
  mem[containerIndex(bm, level, pos >>> 5)]! ^= 1 << (pos & 31);
}

/** Set bit `pos` of level 0 and the bits above it, as a completed set() leaves them (B2 holds). */
export function setConsistent(mem: Int32Array, bm: HierarchicalBitmap, pos: number): void {
  const n = levelCount(bm);
  for (let level = 0; level < n; level++, pos >>>= 5) mem[containerIndex(bm, level, pos >>> 5)]! |= 1 << (pos & 31);
}

/** Clear bit `pos` of level 0 and every upper bit whose container becomes empty (B2 holds). */
export function clearConsistent(mem: Int32Array, bm: HierarchicalBitmap, pos: number): void {
  const n = levelCount(bm);
  for (let level = 0; level < n; level++, pos >>>= 5) {
    const i = containerIndex(bm, level, pos >>> 5);
    mem[i]! &= ~(1 << (pos & 31));
    if (mem[i] !== 0) return;
  }
}

/** What bm.validate() reports, as a list. */
export function bitmapProblems(bm: HierarchicalBitmap): string[] {
  const problems: string[] = [];
  bm.validate(problems);
  return problems;
}

/**
 * Run `check` (a validateHeap call), which must throw HeapCorruptionError; returns its
 * `problems`. Throws (failing the test) when `check` passes or throws anything else.
 */
export function corruptionReport(check: () => void): readonly string[] {
  try {
    check();
  } catch (e) {
    if (e instanceof HeapCorruptionError) return e.problems;
    throw e;
  }
  throw new Error('expected HeapCorruptionError: the heap validated although it was corrupted');
}
