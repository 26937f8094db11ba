/**
 * The apps the CLI, the tests and the benchmarks know by name.
 *
 * Each entry is the URL of apps/<name>/index.js, whose default export is an `App`
 * (apps/app.ts). It is imported on demand, so `smmo run nbody` loads no other app; and
 * worker threads import the same module to find the app's classes (the runtime's
 * `modules` option). To add an app: create apps/<name>/index.ts and add one line
 * below. The map's order is the order `smmo --help` lists the apps in.
 */
import type { App } from './app.js';

export const APPS: ReadonlyMap<string, URL> = new Map([
  ['nbody', new URL('./nbody/index.js', import.meta.url)],
  ['collision', new URL('./collision/index.js', import.meta.url)],
  ['wa-tor', new URL('./wa-tor/index.js', import.meta.url)],
  ['game-of-life', new URL('./game-of-life/index.js', import.meta.url)],
  ['generation', new URL('./generation/index.js', import.meta.url)],
  ['traffic', new URL('./traffic/index.js', import.meta.url)],
  ['linux-scalability', new URL('./linux-scalability/index.js', import.meta.url)],
  ['structure', new URL('./structure/index.js', import.meta.url)],
  ['sugarscape', new URL('./sugarscape/index.js', import.meta.url)],
  ['barnes-hut', new URL('./barnes-hut/index.js', import.meta.url)],
]);

/** Names of every registered app, in registry order. */
export function appNames(): string[] {
  return [...APPS.keys()];
}

/** URL of the module of the app registered as `name` (for the runtime's `modules` option). */
export function appModule(name: string): URL | undefined {
  return APPS.get(name);
}

/** Load the app registered as `name`; undefined when there is none. */
export async function loadApp(name: string): Promise<App | undefined> {
  const url = APPS.get(name);
  if (url === undefined) return undefined;
  const app = ((await import(url.href)) as { default: App }).default;
  if (app?.name !== name)
    throw new Error(`apps/registry.ts: entry '${name}' loads ${url.href}, whose default export is not an App named '${name}'`);
  return app;
}
