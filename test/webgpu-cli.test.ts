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

(available ? test : test.skip)(
  `a software WebGPU adapter is named in the report's warnings and on stderr before the run; a GPU and the ts backend get no such note${available ? '' : ` ${SKIP}`}`,
  async (t) => {
    const common = ['run', 'nbody', '--bodies', '64', '--iterations', '1', '--json'];
    const [gpu, ts] = await Promise.all([smmo([...common, '--backend', 'webgpu']), smmo([...common, '--backend', 'ts'])]);
    t.is(gpu.code, 0, describeChild(gpu));
    t.is(ts.code, 0, describeChild(ts));
    const g = lastJson(gpu.stdout);
    const software = (g['gpu'] as { software: boolean }).software;
    const warnings = (g['warnings'] as string[] | undefined) ?? [];
    const note = /software renderer .*many times slower than on a GPU/;
    t.log(`adapter ${(g['gpu'] as { adapter: string }).adapter}, software ${software}`);
    if (software) {
      t.true(
        warnings.some((w) => note.test(w)),
        JSON.stringify(warnings),
      );
      t.regex(gpu.stderr, /smmo run nbody: note: the WebGPU adapter is a software renderer/);
    } else {
      t.false(
        warnings.some((w) => note.test(w)),
        JSON.stringify(warnings),
      );
      t.notRegex(gpu.stderr, /software renderer/);
    }
    t.is(lastJson(ts.stdout)['warnings'], undefined);
    t.notRegex(ts.stderr, /software renderer/);
  },
);
