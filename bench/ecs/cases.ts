/**
 * Which implementations the ECS comparison runs, and how each sets a suite up. Modules
 * are imported on demand, so a child process loads one library only.
 */
import { SUITES, type EcsCase, type Suite } from './harness.js';
import type { SmmoSetup } from './smmo/common.js';

export const IMPLS = ['smmo', 'smmo-interpreted', 'smmo-largest', 'piecs', 'bitecs'] as const;
export type Impl = (typeof IMPLS)[number];

/** What the table calls each implementation. */
export const IMPL_LABELS: Record<Impl, string> = {
  smmo: 'smmo (compiled)',
  'smmo-interpreted': 'smmo (interpreted)',
  'smmo-largest': "smmo (compiled, blockSize 'largest')",
  piecs: 'piecs 0.4.0',
  bitecs: 'bitecs 0.3.34',
};

export const PEERS: readonly Impl[] = ['piecs', 'bitecs'];

export async function setupCase(impl: Impl, suite: Suite, count: number = SUITES[suite]): Promise<EcsCase> {
  switch (impl) {
    case 'piecs':
      return (await import('./piecs.js')).piecsCases[suite](count);
    case 'bitecs':
      return (await import('./bitecs.js')).bitecsCases[suite](count);
    case 'smmo':
    case 'smmo-interpreted':
    case 'smmo-largest': {
      const m = (await import(`./smmo/${suite}.js`)) as { setup: SmmoSetup };
      return m.setup(count, { compile: impl !== 'smmo-interpreted', blockSize: impl === 'smmo-largest' ? 'largest' : 'smallest' });
    }
  }
}
