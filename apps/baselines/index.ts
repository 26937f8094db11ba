/**
 * The baselines by app name, loaded on demand (as apps/registry.ts loads the apps):
 * `await loadBaseline('wa-tor', 'soa')`. See baseline.ts for what a baseline is.
 */
import type { Baseline } from './baseline.js';

export type { Baseline, BaselineRun } from './baseline.js';

type Loader = () => Promise<{ default: Baseline }>;

export const BASELINES: ReadonlyMap<string, Readonly<Record<'aos' | 'soa', Loader>>> = new Map([
  ['nbody', { aos: () => import('../nbody/baseline_aos.js'), soa: () => import('../nbody/baseline_soa.js') }],
  ['collision', { aos: () => import('../collision/baseline_aos.js'), soa: () => import('../collision/baseline_soa.js') }],
  ['wa-tor', { aos: () => import('../wa-tor/baseline_aos.js'), soa: () => import('../wa-tor/baseline_soa.js') }],
  ['game-of-life', { aos: () => import('../game-of-life/baseline_aos.js'), soa: () => import('../game-of-life/baseline_soa.js') }],
  ['generation', { aos: () => import('../generation/baseline_aos.js'), soa: () => import('../generation/baseline_soa.js') }],
  ['traffic', { aos: () => import('../traffic/baseline_aos.js'), soa: () => import('../traffic/baseline_soa.js') }],
  ['structure', { aos: () => import('../structure/baseline_aos.js'), soa: () => import('../structure/baseline_soa.js') }],
  ['sugarscape', { aos: () => import('../sugarscape/baseline_aos.js'), soa: () => import('../sugarscape/baseline_soa.js') }],
  ['barnes-hut', { aos: () => import('../barnes-hut/baseline_aos.js'), soa: () => import('../barnes-hut/baseline_soa.js') }],
]);

/**
 * Apps that have no AOS/SOA baselines on purpose, and why (their READMEs say more). Every
 * registered app is in BASELINES or here (test/apps-nbody.test.ts checks it); `smmo bench`
 * lists their baseline cases as skipped with this reason.
 */
export const WITHOUT_BASELINES: ReadonlyMap<string, string> = new Map([
  [
    'linux-scalability',
    "an allocator micro-benchmark: what it measures is smmo's allocator, which a program without dynamic allocation does not have",
  ],
]);

/** The baseline of `app` with `layout`; undefined when the app has none. */
export async function loadBaseline(app: string, layout: 'aos' | 'soa'): Promise<Baseline | undefined> {
  const entry = BASELINES.get(app);
  if (entry === undefined) return undefined;
  const b = (await entry[layout]()).default;
  if (b.app !== app || b.layout !== layout)
    throw new Error(`apps/baselines: entry ${app}/${layout} loads the ${b.app}/${b.layout} baseline`);
  return b;
}
