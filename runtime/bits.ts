/**
 * Bit tricks on 32-bit words (paper §4.3: ffs and popc instead of bit loops).
 * All functions take and return plain numbers; words are treated as unsigned.
 */

/** Number of set bits. */
export function popc(x: number): number {
  x = x - ((x >>> 1) & 0x55555555);
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  x = (x + (x >>> 4)) & 0x0f0f0f0f;
  return Math.imul(x, 0x01010101) >>> 24;
}

/** Index of the lowest set bit, or -1 for 0. */
export function ffs(x: number): number {
  return x === 0 ? -1 : 31 - Math.clz32(x & -x);
}

/** Rotate right by r (0…31). */
export function rotr(x: number, r: number): number {
  r &= 31;
  return r === 0 ? x | 0 : (x >>> r) | (x << (32 - r));
}

/**
 * Index of any set bit of x, starting the search at bit `start` and wrapping around
 * (bitmap rotation, paper §4.2), or -1 for 0.
 */
export function ffsFrom(x: number, start: number): number {
  if (x === 0) return -1;
  start &= 31;
  const high = start === 0 ? x : x & (-1 << start);
  return high !== 0 ? 31 - Math.clz32(high & -high) : 31 - Math.clz32(x & -x);
}

/** Mask with the n lowest bits set (0 ≤ n ≤ 32). */
export function lowMask(n: number): number {
  return n >= 32 ? -1 : (1 << n) - 1;
}

/**
 * The k lowest set bits of x (k ≥ 0), as a mask: applies x &= x - 1 k times on the
 * complement (paper §4.3's trick for "the i-th set bit").
 */
export function lowestSetBits(x: number, k: number): number {
  let rest = x;
  for (let i = 0; i < k && rest !== 0; i++) rest &= rest - 1;
  return x & ~rest;
}

/** Index of the n-th (0-based) set bit of x, or -1 if x has fewer than n + 1 set bits. */
export function nthSetBit(x: number, n: number): number {
  for (let i = 0; i < n && x !== 0; i++) x &= x - 1;
  return ffs(x);
}
