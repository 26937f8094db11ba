/**
 * The 32-bit FNV-1a hash the apps' digests use for sets of cells: each value is fed
 * as 4 bytes, little-endian, in the order given. The smmo apps and their baselines
 * share this one definition, so their digests can be compared exactly.
 */
export const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/** Fold one 32-bit value into hash `h` (start with FNV_OFFSET). */
export function fnvWord(h: number, word: number): number {
  h = Math.imul(h ^ (word & 0xff), FNV_PRIME);
  h = Math.imul(h ^ ((word >>> 8) & 0xff), FNV_PRIME);
  h = Math.imul(h ^ ((word >>> 16) & 0xff), FNV_PRIME);
  h = Math.imul(h ^ (word >>> 24), FNV_PRIME);
  return h >>> 0;
}

/** FNV-1a of a sequence of 32-bit values. */
export function fnvWords(words: ArrayLike<number>): number {
  let h = FNV_OFFSET;
  for (let i = 0; i < words.length; i++) h = fnvWord(h, words[i]!);
  return h;
}
