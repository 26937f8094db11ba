/**
 * What every WebGPU test file shares: whether the optional npm package `webgpu` is there
 * (without it the file's GPU tests are skipped, and their titles say why), GPU tests that
 * run one at a time, and one device for the whole file, acquired before its tests and
 * closed after them.
 */
import test, { type ExecutionContext } from 'ava';
import { GpuContext, webgpuPackageAvailable } from '../../runtime/webgpu/device.js';
import { describeChild, lastJson, smmo } from './child.js';

const SKIP = '[skipped: the optional npm package `webgpu` is not installed; `npm install` installs it]';

/** Call once at the top of a test file (`file` names it in the skip message); registers the file's before/after hooks. */
export async function gpuSuite(file: string): Promise<{
  /** test.serial with the package, test.skip without. */
  gtest: typeof test.serial | typeof test.skip;
  /** A test title, with the reason appended when the tests are skipped. */
  title: (s: string) => string;
  /** The file's device (inside a gtest only). */
  gpu: () => GpuContext;
}> {
  const available = await webgpuPackageAvailable();
  if (!available) console.log(`${file}: ${SKIP}`);
  let device: GpuContext | null = null;
  test.before(async () => {
    if (available) device = await GpuContext.acquire();
  });
  test.after.always(async () => {
    await device?.close();
  });
  return {
    gtest: available ? test.serial : test.skip,
    title: (s) => (available ? s : `${s} ${SKIP}`),
    gpu: () => {
      if (device === null) throw new Error('gpuSuite: no GPU device (gpu() is for tests registered with gtest)');
      return device;
    },
  };
}

/**
 * `smmo <args> --json` on `--backend webgpu` and on `--backend ts` (a failed run throws with
 * the child's output); checks that the GPU run says backend webgpu and ran exactly the
 * passes `passes` (sorted), every one as a WGSL kernel. Returns both JSON results.
 */
export async function gpuAndTsRuns(
  t: ExecutionContext,
  args: readonly string[],
  passes: readonly string[],
): Promise<{ gpuRun: Record<string, unknown>; tsRun: Record<string, unknown> }> {
  const run = (backend: string): Promise<Record<string, unknown>> =>
    smmo([...args, '--backend', backend]).then((r) => {
      if (r.code !== 0) throw new Error(describeChild(r));
      return lastJson(r.stdout);
    });
  const gpuRun = await run('webgpu');
  const tsRun = await run('ts');
  t.is(gpuRun['backend'], 'webgpu');
  t.deepEqual(Object.keys(gpuRun['kernels'] as object).sort(), passes);
  t.true(
    Object.values(gpuRun['kernels'] as object).every((b) => b === 'webgpu'),
    JSON.stringify(gpuRun['kernels']),
  );
  return { gpuRun, tsRun };
}
