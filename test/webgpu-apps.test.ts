/**
 * Every app's GPU path on the adapter CI has (SwiftShader; issue 14 item 4): `smmo run
 * <app> --backend webgpu --check` at a small size runs every pass on the GPU (hand-written
 * WGSL kernels, or WGSL generated from the compiled method) except those listed in
 * TS_PASSES, which run on the CPU (never silently: `--json` `kernels` names the backend of
 * each pass), and `--check` compares the result with the TypeScript reference
 * from the same start: every field by the comparator's rules and the app's digest, within
 * --check's default tolerance (objects the GPU creates are paired by the app's match key);
 * and the heap stays on the GPU: at most two whole-heap uploads and downloads in the run
 * (`--json` `gpu.transfers`; every size here runs at least two iterations, so a copy per
 * iteration would show).
 * Apps registered later are covered by the same loop: a size for each is required below.
 */
import test from 'ava';
import { appNames } from '../apps/registry.js';
import { webgpuPackageAvailable } from '../runtime/webgpu/device.js';
import { describeChild, lastJson, smmo } from './helpers/child.js';

const available = await webgpuPackageAvailable();
const SKIP = '[skipped: the optional npm package `webgpu` is not installed; `npm install` installs it]';

/** A small size per app (its own flags) and the iterations. */
const SMALL: Record<string, string[]> = {
  nbody: ['--bodies', '256', '--iterations', '3'],
  collision: ['--bodies', '256', '--iterations', '3'],
  'wa-tor': ['--width', '32', '--height', '32', '--iterations', '6'],
  'game-of-life': ['--width', '32', '--height', '32', '--iterations', '6'],
  generation: ['--width', '48', '--height', '48', '--cross', '5', '--iterations', '6'],
  traffic: ['--intersections', '20', '--iterations', '20'],
  'linux-scalability': ['--lanes', '64', '--k', '4', '--iterations', '2'],
  structure: ['--nodes', '300', '--iterations', '4'],
  sugarscape: ['--width', '32', '--height', '32', '--iterations', '4'],
  'barnes-hut': ['--bodies', '200', '--iterations', '3'],
};

/**
 * The passes that may run in TypeScript on WebGPU, per app: none (every pass must run on
 * the GPU, hand-written or generated; barnes-hut's f64 passes in double-single arithmetic,
 * linux-scalability's handles in a local typed array). A change that sends a pass back to
 * TypeScript fails here.
 */
const TS_PASSES: Record<string, readonly string[]> = {};

test('every registered app has a small size here', (t) => {
  t.deepEqual(
    appNames().filter((a) => SMALL[a] === undefined),
    [],
  );
});

for (const app of appNames()) {
  (available ? test : test.skip)(
    `${app} --backend webgpu --check: within tolerance of the TypeScript reference${available ? '' : ` ${SKIP}`}`,
    async (t) => {
      const r = await smmo(['run', app, ...(SMALL[app] ?? []), '--backend', 'webgpu', '--check', '--json']);
      t.is(r.code, 0, describeChild(r));
      const j = lastJson(r.stdout);
      t.is(j['backend'], 'webgpu');
      const kernels = j['kernels'] as Record<string, string>;
      t.true(Object.keys(kernels).length > 0, 'every pass is named with its backend');
      t.true(
        Object.values(kernels).every((b) => b === 'webgpu' || b === 'ts'),
        JSON.stringify(kernels),
      );
      t.deepEqual(
        Object.entries(kernels)
          .filter(([, b]) => b !== 'webgpu')
          .map(([m]) => m)
          .sort(),
        [...(TS_PASSES[app] ?? [])],
        'the passes in TypeScript',
      );
      const transfers = (j['gpu'] as { transfers: { uploads: number; downloads: number } }).transfers;
      t.true(transfers.uploads <= 2 && transfers.downloads <= 2, `whole-heap copies: ${JSON.stringify(transfers)}`);
      const check = j['check'] as { ok: boolean; digest: { rel: number } };
      t.true(check.ok, JSON.stringify(check).slice(0, 2000));
      t.log(
        `${app}: ${Object.entries(kernels)
          .map(([m, b]) => `${m} ${b}`)
          .join(', ')}; digest rel ${check.digest.rel}`,
      );
    },
  );
}
