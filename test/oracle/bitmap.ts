/**
 * TEST ORACLE — not part of the runtime. The TypeScript hierarchical bitmap (paper §4.1,
 * Alg. 3–5) that smmo used before its bitmap operations moved into the allocator core
 * (wasm/src/alloc/bitmap.rs), kept as the reference the model test
 * (test/allocator-model.test.ts) compares the Rust core with, plus the NoShift switch
 * (`rotate`). Invariants B1–B3: see wasm/src/alloc/bitmap.rs.
 */
import { bitmapLevelWords } from '../../runtime/bitmap.js';
import { ffsFrom, popc } from '../../runtime/bits.js';
import { andWord, loadWord, orWord, retryPause, type Words } from './shared.js';

/** bitmap.rs MAX_DESCENT_LOADS: the bound on one findSet's container loads. */
const MAX_DESCENT_LOADS = 256;

export class OracleBitmap {
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
    /** Bitmap rotation (§4.2); false: every search starts at bit 0 (NoShift). */
    readonly rotate = true,
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

  /** Set the bit, changing it from 0 to 1: waits (bounded) while it is already 1. */
  set(pos: number): void {
    this.setAt(0, pos);
  }

  /** Set the bit if it is 0; returns whether this call changed it. */
  trySet(pos: number): boolean {
    const mask = 1 << (pos & 31);
    const prev = orWord(this.mem, this.levelBase[0]! + (pos >>> 5), mask);
    if ((prev & mask) !== 0) return false; // someone else's bit: nothing changed
    if (prev === 0 && this.top > 0) this.setAt(1, pos >>> 5); // SET-FIRST: our duty
    return true;
  }

  /** Clear the bit, changing it from 1 to 0: waits (bounded) while it is already 0 (Alg. 3). */
  clear(pos: number): void {
    this.clearAt(0, pos);
  }

  /** Clear the bit if it is 1; returns whether this call changed it. */
  tryClear(pos: number): boolean {
    return this.tryClearAt(0, pos);
  }

  private setAt(level: number, pos: number): void {
    const idx = this.levelBase[level]! + (pos >>> 5);
    const mask = 1 << (pos & 31);
    for (let attempt = 1; ; attempt++) {
      const prev = orWord(this.mem, idx, mask);
      if ((prev & mask) === 0) {
        // We changed the bit. If the container was empty, we own the upper bit.
        if (prev === 0 && level < this.top) this.setAt(level + 1, pos >>> 5);
        return;
      }
      // Already set: a concurrent clear has not happened yet; wait for it (Alg. 3 l. 6).
      retryPause(attempt, `${this.name}.set(${pos}) at level ${level}`);
    }
  }

  private clearAt(level: number, pos: number): void {
    for (let attempt = 1; ; attempt++) {
      if (this.tryClearAt(level, pos)) return;
      // Already clear: a concurrent set has not happened yet; wait for it.
      retryPause(attempt, `${this.name}.clear(${pos}) at level ${level}`);
    }
  }

  private tryClearAt(level: number, pos: number): boolean {
    const mask = 1 << (pos & 31);
    const prev = andWord(this.mem, this.levelBase[level]! + (pos >>> 5), ~mask);
    if ((prev & mask) === 0) return false;
    // CLEAR-LAST: this atomic emptied the container, so we clear the upper bit.
    if (prev === mask && level < this.top) this.clearAt(level + 1, pos >>> 5);
    return true;
  }

  // ---------------------------------------------------------------- searching

  /**
   * Position of some set bit, or -1 (Alg. 4). Top-down; at each level the search
   * starts at a bit chosen by `seed` (bitmap rotation, §4.2) so that threads with
   * different seeds tend to pick different bits. May return -1 while bits are set (B3).
   */
  tryFindSet(seed: number): number {
    let pos = 0;
    for (let level = this.top; level >= 0; level--) {
      const word = loadWord(this.mem, this.levelBase[level]! + pos);
      const bit = ffsFrom(word, this.rotate ? (seed >>> (level * 5)) + level : 0);
      if (bit < 0) return -1;
      pos = pos * 32 + bit;
    }
    return pos;
  }

  /**
   * Position of some set bit reachable through set upper bits, or -1 (bitmap.rs B5): the
   * descent of tryFindSet with backtracking, the same rotated order at each level, at most
   * MAX_DESCENT_LOADS container loads.
   */
  findSet(seed: number): number {
    const at: number[] = [];
    const left: number[] = [];
    let level = this.top;
    at[level] = 0;
    left[level] = loadWord(this.mem, this.levelBase[level]!);
    let loads = 1;
    for (;;) {
      const bits = left[level]!;
      if (bits === 0) {
        if (level === this.top) return -1;
        level++;
        continue;
      }
      const bit = ffsFrom(bits, this.rotate ? (seed >>> (level * 5)) + level : 0);
      left[level] = bits & ~(1 << bit);
      const pos = at[level]! * 32 + bit;
      if (level === 0) return pos;
      if (loads >= MAX_DESCENT_LOADS) return -1;
      level--;
      loads++;
      at[level] = pos;
      left[level] = loadWord(this.mem, this.levelBase[level]! + pos);
    }
  }

  /** Whether the top container has a bit set (with nothing in flight: whether any bit is set). */
  anyAtTop(): boolean {
    return loadWord(this.mem, this.levelBase[this.top]!) !== 0;
  }

  /** Position of some set bit by a scan of level 0 (exact when nothing is in flight), or -1. */
  scanFindSet(seed: number): number {
    const base = this.levelBase[0]!;
    const n = this.levelWords[0]!;
    const start = n > 0 && this.rotate ? (seed >>> 0) % n : 0;
    for (let k = 0; k < n; k++) {
      const c = (start + k) % n;
      const word = loadWord(this.mem, base + c);
      if (word !== 0) return c * 32 + ffsFrom(word, this.rotate ? seed : 0);
    }
    return -1;
  }

  /**
   * Find a set bit, clear it atomically and return its position; -1 only if a full
   * scan found no set bit. ("clear()" of §4.1.)
   */
  findAndClear(seed: number): number {
    for (let attempt = 1; ; attempt++) {
      let pos = this.tryFindSet(seed + attempt);
      // The hierarchy may be transiently inconsistent (B3): look past stale upper bits (B5),
      // then confirm "empty" by a scan.
      if (pos < 0) pos = this.findSet(seed + attempt);
      if (pos < 0) pos = this.scanFindSet(seed + attempt);
      if (pos < 0) return -1;
      if (this.tryClear(pos)) return pos;
      // Another thread cleared that bit first: pick again.
      retryPause(attempt, `${this.name}.findAndClear`);
    }
  }

  /**
   * Write the positions of all set bits into `out` (from index 0) and return their
   * count (Alg. 5). Upper levels select which containers to read, so empty regions cost
   * nothing. Meant for quiescent bitmaps (between do-all passes).
   */
  indices(out: Uint32Array | Int32Array): number {
    // Containers to read at the current level; starts with the top level's only one.
    let selected: number[] = [0];
    for (let level = this.top; level > 0; level--) {
      const next: number[] = [];
      const base = this.levelBase[level]!;
      for (const c of selected) {
        let word = loadWord(this.mem, base + c);
        while (word !== 0) {
          const bit = 31 - Math.clz32(word & -word);
          next.push(c * 32 + bit);
          word &= word - 1;
        }
      }
      selected = next;
    }
    let r = 0;
    const base0 = this.levelBase[0]!;
    for (const c of selected) {
      let word = loadWord(this.mem, base0 + c);
      while (word !== 0) {
        const bit = 31 - Math.clz32(word & -word);
        out[r++] = c * 32 + bit;
        word &= word - 1;
      }
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

  // ---------------------------------------------------------------- maintenance

  /** Set every position 0…bits-1 (levels built consistently). Not thread-safe. */
  fill(): void {
    this.reset();
    let n = this.bits;
    for (let level = 0; level <= this.top; level++) {
      const base = this.levelBase[level]!;
      const full = n >>> 5;
      for (let c = 0; c < full; c++) this.mem[base + c] = -1;
      if ((n & 31) !== 0) this.mem[base + full] = (1 << (n & 31)) - 1;
      n = Math.ceil(n / 32);
    }
  }

  /** Clear every word of every level. Not thread-safe. */
  reset(): void {
    for (let level = 0; level <= this.top; level++) {
      const base = this.levelBase[level]!;
      this.mem.fill(0, base, base + this.levelWords[level]!);
    }
  }
}
