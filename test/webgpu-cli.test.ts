/**
 * Issue 5 acceptance through the command line: `smmo run nbody --bodies 512 --iterations 3
 * --backend webgpu --json` agrees with `--backend ts` (digest within 1e-3 relative; in
 * practice ~1e-12), and the report names the backend that ran.
 */
import test from 'ava';
import { describeChild, lastJson, smmo } from './helpers/child.js';
import { webgpuPackageAvailable } from '../runtime/webgpu/device.js';

const available = await webgpuPackageAvailable();
const SKIP = '[skipped: the optional npm package `webgpu` is not installed; `npm install` installs it]';
if (!available) console.log(`webgpu-cli.test: ${SKIP}`);

function run(args: string[]): Promise<Record<string, unknown>> {
  return smmo(args).then((r) => {
    if (r.code !== 0) throw new Error(describeChild(r));
    return lastJson(r.stdout);
  });
}

(available ? test : test.skip)(
  `smmo run nbody --backend webgpu --json agrees with --backend ts${available ? '' : ` ${SKIP}`}`,
  async (t) => {
    const common = ['run', 'nbody', '--bodies', '512', '--iterations', '3', '--json'];
    const [gpu, ts] = await Promise.all([run([...common, '--backend', 'webgpu']), run([...common, '--backend', 'ts'])]);
    t.is(gpu['backend'], 'webgpu');
    t.is(ts['backend'], 'ts');
    t.deepEqual(gpu['objects'], { Body: 512 });
    const a = gpu['digest'] as number;
    const b = ts['digest'] as number;
    const rel = Math.abs(a - b) / Math.abs(b);
    t.log(`digest webgpu ${a}, ts ${b}, relative difference ${rel.toExponential(2)}`);
    t.true(rel <= 1e-3, `relative difference ${rel}`);
  },
);
