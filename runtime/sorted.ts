/** Searches in ascending arrays of handles (state files keep each class's handles sorted). */

/** Index of `h` in the ascending array `a`, or -1. */
export function indexOfSorted(a: Uint32Array, h: number): number {
  let lo = 0;
  let hi = a.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const v = a[mid]!;
    if (v === h) return mid;
    if (v < h) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}
