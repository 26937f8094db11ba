/**
 * Device acquisition (runtime/webgpu/device.ts) in child processes, since the Vulkan
 * loader reads its environment once per Dawn instance and a test must not change this
 * process's adapter:
 *  - VK_ICD_FILENAMES pointing at a file that does not exist: no adapter, and the typed
 *    error GpuUnavailableError('no-adapter') says how to get one;
 *  - the `webgpu` package hidden by a module-resolution hook: GpuUnavailableError('no-package');
 *  - nothing set, SwiftShader installed, no GPU device node: smmo points Vulkan at
 *    SwiftShader by itself and gets an adapter.
 */
import test from 'ava';
import { describeChild, runNode } from './helpers/child.js';
import { existsSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { SWIFTSHADER_ICD, webgpuPackageAvailable } from '../runtime/webgpu/device.js';

const available = await webgpuPackageAvailable();
const SKIP = '[skipped: the optional npm package `webgpu` is not installed; `npm install` installs it]';
if (!available) console.log(`webgpu-adapter.test: ${SKIP}`);
const gtest = available ? test : test.skip;
const title = (s: string): string => (available ? s : `${s} ${SKIP}`);

const deviceJs = fileURLToPath(new URL('../runtime/webgpu/device.js', import.meta.url));

interface ChildResult {
  ok?: { description: string; software: boolean; autoSwiftShader: boolean };
  error?: { name: string; reason: string; message: string };
}

/** Acquire a device in a child process with this environment; report the adapter or the error as JSON. */
function acquireInChild(env: NodeJS.ProcessEnv, nodeArgs: string[] = []): Promise<ChildResult> {
  const script = `
    const { acquireGpu } = await import(${JSON.stringify(deviceJs)});
    try {
      const g = await acquireGpu();
      console.log(JSON.stringify({ ok: { description: g.info.description, software: g.info.software, autoSwiftShader: g.info.autoSwiftShader } }));
      await g.close();
    } catch (e) {
      console.log(JSON.stringify({ error: { name: e.name, reason: e.reason, message: e.message } }));
    }`;
  return runNode([...nodeArgs, '--input-type=module', '-e', script], { env }).then((r) => {
    const line = r.stdout.split('\n').find((l) => l.startsWith('{'));
    if (!line) throw new Error(`child printed no result: ${describeChild(r)}`);
    return JSON.parse(line) as ChildResult;
  });
}

function baseEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env['VK_ICD_FILENAMES'];
  delete env['VK_DRIVER_FILES'];
  return env;
}

gtest(title('no adapter (VK_ICD_FILENAMES names a missing file): GpuUnavailableError says how to get one'), async (t) => {
  const r = await acquireInChild({ ...baseEnv(), VK_ICD_FILENAMES: '/nonexistent/smmo-test-icd.json' });
  t.truthy(r.error, JSON.stringify(r));
  t.is(r.error!.name, 'GpuUnavailableError');
  t.is(r.error!.reason, 'no-adapter');
  t.regex(r.error!.message, /no WebGPU adapter/);
  t.regex(r.error!.message, /VK_ICD_FILENAMES=\/nonexistent\/smmo-test-icd\.json/);
  t.regex(r.error!.message, /chromium/);
  t.regex(r.error!.message, /vk_swiftshader_icd\.json/);
  t.regex(r.error!.message, /driver/);
});

test('the webgpu package missing: GpuUnavailableError(no-package) says how to install it', async (t) => {
  // A resolve hook that hides the package, as on a machine where the optional dependency was not installed.
  const hook = `export async function resolve(s, c, next) { if (s === 'webgpu') { const e = new Error("Cannot find package 'webgpu'"); e.code = 'ERR_MODULE_NOT_FOUND'; throw e; } return next(s, c); }`;
  const register = `import { register } from 'node:module'; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hook)}`)});`;
  const r = await acquireInChild(baseEnv(), ['--import', `data:text/javascript,${encodeURIComponent(register)}`]);
  t.truthy(r.error, JSON.stringify(r));
  t.is(r.error!.name, 'GpuUnavailableError');
  t.is(r.error!.reason, 'no-package');
  t.regex(r.error!.message, /npm install webgpu@0\.6\.2/);
});

const gpuNode = (): boolean => {
  try {
    if (readdirSync('/dev').some((n) => /^nvidia\d+$/.test(n) || n === 'kfd')) return true;
    return readdirSync('/dev/dri').some((n) => n.startsWith('renderD'));
  } catch {
    return false;
  }
};

gtest(title('nothing set, no GPU, SwiftShader installed: smmo selects SwiftShader by itself'), async (t) => {
  if (!existsSync(SWIFTSHADER_ICD) || gpuNode()) {
    t.log(
      `not this machine's case (${existsSync(SWIFTSHADER_ICD) ? 'it has a GPU device node' : `${SWIFTSHADER_ICD} is not installed`}): checking only that acquisition gives an adapter or the typed error`,
    );
    const r = await acquireInChild(baseEnv());
    t.true(r.ok !== undefined || r.error?.name === 'GpuUnavailableError', JSON.stringify(r));
    return;
  }
  const r = await acquireInChild(baseEnv());
  t.truthy(r.ok, JSON.stringify(r));
  t.true(r.ok!.autoSwiftShader);
  t.true(r.ok!.software);
  t.regex(r.ok!.description, /SwiftShader/);
});
