/**
 * Assertions on the `--json` report of `smmo run` that the app tests share: which methods
 * were compiled, and where each ran (`kernels`).
 */
import type { ExecutionContext } from 'ava';

/** Every method in `methods` was compiled and ran as TypeScript (`compiled[m].compiled`, `kernels[m] === 'ts'`). */
export function compiledAsTs(t: ExecutionContext, report: Record<string, unknown>, methods: readonly string[]): void {
  const compiled = report['compiled'] as Record<string, { compiled: boolean }>;
  const kernels = report['kernels'] as Record<string, string>;
  for (const m of methods) {
    t.true(compiled[m]?.compiled, m);
    t.is(kernels[m], 'ts', m);
  }
}

/** Every method in `methods` ran as TypeScript on `backend` (an app without kernels there: never a silent fallback). */
export function ranAsTs(t: ExecutionContext, report: Record<string, unknown>, methods: readonly string[], backend: string): void {
  const kernels = report['kernels'] as Record<string, string>;
  for (const m of methods) t.is(kernels[m], 'ts', `${backend}: ${m} runs as ts`);
}
