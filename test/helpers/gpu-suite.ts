/**
 * What every WebGPU test file shares: whether the optional npm package `webgpu` is there
 * (without it the file's GPU tests are skipped, and their titles say why), GPU tests that
 * run one at a time, and one device for the whole file, acquired before its tests and
 * closed after them.
 */
import test from 'ava';
import { GpuContext, webgpuPackageAvailable } from '../../runtime/webgpu/device.js';

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
