/**
 * "Did you mean …?" for names the user typed: option keys of createRuntime, CLI flags,
 * commands and apps.
 */

/** Levenshtein distance. */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length]!;
}

/**
 * The candidate a mistyped `word` most likely meant, or undefined: the same name in
 * another case; else the longest candidate that `word` extends or that extends `word`
 * (heapBytes → heap, thread → threads); else the nearest by edit distance when it is
 * near enough to be a typo (at most a third of the candidate's length, at least 1).
 */
export function closestName(word: string, candidates: readonly string[]): string | undefined {
  const lower = word.toLowerCase();
  const same = candidates.find((c) => c.toLowerCase() === lower);
  if (same !== undefined) return same;
  const related = candidates
    .filter((c) => c.length >= 3 && (lower.startsWith(c.toLowerCase()) || c.toLowerCase().startsWith(lower)) && lower.length >= 3)
    .sort((a, b) => Math.abs(a.length - word.length) - Math.abs(b.length - word.length));
  if (related.length > 0) return related[0];
  let best: string | undefined;
  let bestD = Infinity;
  for (const c of candidates) {
    const d = editDistance(lower, c.toLowerCase());
    if (d < bestD) {
      bestD = d;
      best = c;
    }
  }
  return best !== undefined && bestD <= Math.max(1, Math.floor(best.length / 3)) ? best : undefined;
}
