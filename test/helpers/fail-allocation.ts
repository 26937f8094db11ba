/**
 * Out-of-memory injection for the tests of reorder's O6 and defrag's F5: a method of a
 * prototype made to throw what a failed ArrayBuffer allocation throws on the calls `when`
 * picks (counted from 1), and put back by `restore()`. Patch and restore around synchronous
 * calls only, or in a serial test: a concurrent test of the same file would meet the patch.
 */
export function failAllocation<P extends object, K extends keyof P>(
  proto: P,
  name: K,
  when: (call: number) => boolean,
): { calls: () => number; restore: () => void } {
  const original = proto[name] as (...args: unknown[]) => unknown;
  let calls = 0;
  proto[name] = function (this: unknown, ...args: unknown[]): unknown {
    if (when(++calls)) throw new RangeError('Array buffer allocation failed');
    return original.apply(this, args);
  } as P[K];
  return { calls: () => calls, restore: () => void (proto[name] = original as P[K]) };
}
