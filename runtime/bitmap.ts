/**
 * Lock-free hierarchical bitmap (paper §4.1, Algorithms 3–5; correctness §5.1).
 *
 * Structure: level 0 holds one bit per position in 32-bit containers; level l+1 holds
 * one bit per container of level l, up to a top level of one container.
 *
 *   level 2:  [c]                      bit i set ⇔ container i of level 1 ≠ 0
 *   level 1:  [c c c … ]               bit j set ⇔ container j of level 0 ≠ 0
 *   level 0:  [c c c c c c c c … ]     the bits themselves, ⌈bits/32⌉ containers
 *
 * Invariants:
 *  (B1) level-0 bits at positions ≥ `bits`, and upper-level bits naming containers that
 *       do not exist, are always 0.
 *  (B2) container consistency, b(l+1, i) = (C(l, i) ≠ 0), holds whenever no operation is
 *       in flight (upper levels are *eventually* consistent). The thread whose atomic
 *       turned a container from 0 to non-0 (SET-FIRST) sets the upper bit; the one whose
 *       atomic turned it to 0 (CLEAR-LAST) clears it. Upper-level set/clear retry until
 *       they change the bit, so every linearisation alternates set and clear (§5.1).
 *  (B3) try-find-set may fail while bits are set (a transient inconsistency); callers
 *       that must not fail spuriously use findAndClear, which falls back to an exact scan.
 *
 * Every operation that changes or searches a bitmap while threads run (set, clear, trySet,
 * tryClear, tryFindSet, scanFindSet, findAndClear; Alg. 3–4) is in the allocator core,
 * wasm/src/alloc/bitmap.rs, the one implementation (runtime/allocator.ts WasmBitmaps binds
 * it for host code and tests). This file keeps what the host needs between passes, read
 * only: get, indices (Alg. 5), count, validate.
 *
 * The containers live in the shared heap (an Int32Array over the WebAssembly memory);
 * this object only holds where they are, so every thread can build its own view.
 */
import { popc } from './bits.js';
import { loadWord, type Words } from './shared.js';

/** Where the levels of a bitmap of `bits` positions sit, relative to its first word. */
export function bitmapLevelWords(bits: number): number[] {
  const words: number[] = [];
  let n = Math.max(1, bits);
  do {
    n = Math.ceil(n / 32);
    words.push(n);
  } while (n > 1);
  return words;
}

/** Words a bitmap of `bits` positions occupies (all levels). */
export function bitmapWords(bits: number): number {
  return bitmapLevelWords(bits).reduce((a, b) => a + b, 0);
}

export class HierarchicalBitmap {
  /** Absolute word index of each level's first container. */
  private readonly levelBase: Int32Array;
  private readonly levelWords: Int32Array;
  private readonly top: number;

  constructor(
    private readonly mem: Words,
    /** Absolute word index (Int32Array index) of the bitmap's first word. */
    readonly base: number,
    /** Number of positions. */
    readonly bits: number,
    /** Name used in error messages and validation reports. */
    readonly name: string,
  ) {
    const words = bitmapLevelWords(bits);
    this.levelBase = new Int32Array(words.length);
    this.levelWords = new Int32Array(words);
    let at = base;
    for (let l = 0; l < words.length; l++) {
      this.levelBase[l] = at;
      at += words[l]!;
    }
    this.top = words.length - 1;
  }

  // ---------------------------------------------------------------- single bits

  /** Value of the bit at `pos` (a plain atomic load of its container). */
  get(pos: number): boolean {
    return (loadWord(this.mem, this.levelBase[0]! + (pos >>> 5)) & (1 << (pos & 31))) !== 0;
  }

  // ---------------------------------------------------------------- enumeration (between passes)

  /**
   * Write the positions of all set bits into `out` from index `at`, in ascending order,
   * and return their count (Alg. 5). Upper levels select which containers to read, so
   * empty regions cost nothing: a depth-first walk from the top level, with no memory
   * allocated (it runs for every class before every pass). Meant for quiescent bitmaps
   * (between do-all passes).
   */
  indices(out: Uint32Array | Int32Array, at = 0): number {
    return this.walk(this.top, 0, out, at) - at;
  }

  /** indices() below container `c` of `level`: writes from out[r], returns the next free index. */
  private walk(level: number, c: number, out: Uint32Array | Int32Array, r: number): number {
    // Plain reads: a quiescent bitmap (no pass running) has no concurrent writer.
    let word = this.mem[this.levelBase[level]! + c]!;
    if (level === 0) {
      while (word !== 0) {
        out[r++] = c * 32 + (31 - Math.clz32(word & -word));
        word &= word - 1;
      }
      return r;
    }
    while (word !== 0) {
      r = this.walk(level - 1, c * 32 + (31 - Math.clz32(word & -word)), out, r);
      word &= word - 1;
    }
    return r;
  }

  /** Number of set bits (level 0). */
  count(): number {
    let n = 0;
    const base = this.levelBase[0]!;
    for (let c = 0; c < this.levelWords[0]!; c++) n += popc(loadWord(this.mem, base + c));
    return n;
  }

  // ---------------------------------------------------------------- validation

  /** Check (B1) and (B2); append a line per broken invariant to `problems`. Quiescent only. */
  validate(problems: string[]): void {
    let n = this.bits;
    for (let level = 0; level <= this.top; level++) {
      const base = this.levelBase[level]!;
      const words = this.levelWords[level]!;
      // (B1) padding bits above position n-1 of this level
      if ((n & 31) !== 0) {
        const last = this.mem[base + words - 1]!;
        if ((last & ~((1 << (n & 31)) - 1)) !== 0) {
          problems.push(`${this.name}: level ${level} has bits set beyond position ${n - 1}`);
        }
      }
      // (B2) consistency with the level above
      if (level < this.top) {
        const upper = this.levelBase[level + 1]!;
        for (let c = 0; c < words; c++) {
          const nonEmpty = this.mem[base + c] !== 0;
          const bit = (this.mem[upper + (c >>> 5)]! & (1 << (c & 31))) !== 0;
          if (nonEmpty !== bit) {
            problems.push(
              `${this.name}: level ${level + 1} bit ${c} is ${bit ? 1 : 0} but container ${c} of level ${level} is ${nonEmpty ? 'non-empty' : 'empty'}`,
            );
          }
        }
      }
      n = words;
    }
  }
}
