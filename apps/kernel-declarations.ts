/**
 * The kernel declarations of every registered app (apps/registry.ts), for the generator of
 * wasm/src/params.rs (scripts/gen-kernel-params.mjs; runtime/kernel-params.ts P1): each
 * app's classes, each class's own static [KERNELS]. Read on demand, registers nothing.
 */
import { ownKernels } from '../runtime/kernel-spec.js';
import { renderKernelParamsRust } from '../runtime/kernel-params.js';
import type { KernelSpec } from '../runtime/index.js';
import { appNames, loadApp } from './registry.js';

/** Every kernel declaration of the apps, with where it comes from ('app: Class.method'). */
export async function appKernelDeclarations(): Promise<{ spec: KernelSpec; origin: string }[]> {
  const out: { spec: KernelSpec; origin: string }[] = [];
  for (const name of appNames()) {
    const app = await loadApp(name);
    for (const cls of app?.classes ?? [])
      for (const spec of ownKernels(cls)) out.push({ spec, origin: `${name}: ${cls.name}.${spec.method}` });
  }
  return out;
}

/** The text of wasm/src/params.rs. */
export async function renderAppKernelParams(): Promise<string> {
  return renderKernelParamsRust(await appKernelDeclarations());
}
