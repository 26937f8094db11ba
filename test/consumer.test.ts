/**
 * smmo as its users meet it: `npm pack`, then a separate TypeScript project (under a
 * temporary folder, outside this repository) installs the tarball and compiles a program
 * that imports from 'smmo' — strict, `skipLibCheck: false`, once with `moduleResolution:
 * node16` and once with `bundler` — declaring two classes with a reference and running
 * do-alls with `threads: 2` and `backend: 'wasm'` (the kernel module shipped in the
 * package). Both builds run, and their output is checked against values computed here.
 *
 * The scratch project installs without optional dependencies, so neither the `webgpu`
 * package nor `@webgpu/types` is there: the published declarations must not need them.
 * It reuses this repository's TypeScript compiler, and npm's cache (--prefer-offline).
 */
import test from 'ava';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeChild, runChild, runNode, type ChildResult } from './helpers/child.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';

const MODEL = `import { f32, object, ref, u32 } from 'smmo';

/** A counter that do-alls bump. */
export class Counter extends object({ value: f32, bumps: u32 }) {
  bump(by: number): void {
    this.value += by;
    this.bumps += 1;
  }
}

/** Reads the counter it refers to. */
export class Reader extends object({ source: ref(() => Counter), seen: f32 }) {
  read(): void {
    const c = this.source;
    if (c !== null) this.seen += c.value;
  }
}
`;

const MAIN = `import { createRuntime, UsageError, type Runtime, type RuntimeStats } from 'smmo';
import { Counter, Reader } from './model.js';

const rt: Runtime = await createRuntime({
  classes: [Counter, Reader],
  heap: '8MB',
  threads: 2,
  backend: 'wasm',
  modules: [new URL('./model.js', import.meta.url)],
  inlineBlocks: 0, // every pass on both threads
});
try {
  const counters: number[] = [];
  await rt.parallelNew(Counter, 100, (c, i) => {
    c.value = i;
    counters.push(c.handle);
  });
  for (let i = 0; i < 50; i++) rt.create(Reader, { source: rt.get(Counter, counters[2 * i]!) });
  await rt.parallelDo(Counter, 'bump', 0.5);
  await rt.parallelDo(Counter, 'bump', 0.5);
  await rt.parallelDo(Reader, 'read');
  let seen = 0;
  rt.deviceDo(Reader, (r) => (seen += r.seen));
  let bumps = 0;
  rt.deviceDo(Counter, (c) => (bumps += c.bumps));
  rt.validateHeap();
  const stats: RuntimeStats = rt.stats();
  let typo = '';
  try {
    await createRuntime({ classes: [Counter], thread: 2 } as never);
  } catch (e) {
    if (e instanceof UsageError) typo = e.message;
  }
  console.log(JSON.stringify({ backend: rt.backend, threads: rt.threads, objects: rt.objectCounts(), seen, bumps, used: stats.heap.usedBlocks, typo }));
} finally {
  await rt.close();
}
`;

function tsconfig(resolution: 'node16' | 'bundler', outDir: string): string {
  return JSON.stringify(
    {
      compilerOptions: {
        target: 'ES2022',
        module: resolution === 'node16' ? 'node16' : 'ES2022',
        moduleResolution: resolution,
        lib: ['ES2022'],
        types: ['node'],
        strict: true,
        skipLibCheck: false,
        outDir,
      },
      files: ['model.ts', 'main.ts'],
    },
    null,
    2,
  );
}

const must = (t: { is(a: unknown, b: unknown, m?: string): void }, r: ChildResult): void => t.is(r.code, 0, describeChild(r));

test('a strict TypeScript project installs the packed smmo and runs do-alls on 2 threads with the wasm backend', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'smmo-consumer-'));
  try {
    const packDir = join(dir, 'pack');
    mkdirSync(packDir);
    // dist/ is built already (the test runs from it); --ignore-scripts skips `prepare`.
    const pack = await runChild(NPM, ['pack', '--ignore-scripts', '--silent', '--pack-destination', packDir], { cwd: ROOT });
    must(t, pack);
    const tarball = readdirSync(packDir).find((f) => f.endsWith('.tgz'));
    t.truthy(tarball, 'npm pack wrote a tarball');

    const app = join(dir, 'app');
    mkdirSync(app);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'smmo-consumer', private: true, type: 'module' }));
    const typesNode = (
      JSON.parse(readFileSync(join(ROOT, 'node_modules', '@types', 'node', 'package.json'), 'utf8')) as { version: string }
    ).version;
    const install = await runChild(
      NPM,
      ['install', '--prefer-offline', '--no-audit', '--no-fund', '--omit=optional', join(packDir, tarball!), `@types/node@${typesNode}`],
      { cwd: app },
    );
    must(t, install);
    t.true(existsSync(join(app, 'node_modules', 'smmo', 'wasm', 'pkg', 'smmo_simd.wasm')), 'the package ships the kernel module');
    t.false(existsSync(join(app, 'node_modules', '@webgpu', 'types')), 'no @webgpu/types in the consumer');
    t.false(existsSync(join(app, 'node_modules', 'smmo', 'node_modules')), 'smmo resolved from the tarball alone');

    writeFileSync(join(app, 'model.ts'), MODEL);
    writeFileSync(join(app, 'main.ts'), MAIN);
    // Counters 0 … 99 get +1 in two bumps; reader i reads counter 2i: Σ (2i + 1) for i < 50.
    let expectedSeen = 0;
    for (let i = 0; i < 50; i++) expectedSeen += 2 * i + 1;
    for (const resolution of ['node16', 'bundler'] as const) {
      const out = `out-${resolution}`;
      writeFileSync(join(app, `tsconfig.${resolution}.json`), tsconfig(resolution, out));
      const tsc = await runNode([TSC, '-p', `tsconfig.${resolution}.json`], { cwd: app });
      t.is(tsc.code, 0, `tsc (${resolution}, strict, skipLibCheck false) reports errors:\n${describeChild(tsc)}`);
      if (tsc.code !== 0) continue;
      const run = await runNode([join(out, 'main.js')], { cwd: app });
      must(t, run);
      const report = JSON.parse(run.stdout.trim().split('\n').pop()!) as Record<string, unknown>;
      t.like(report, { backend: 'wasm', threads: 2, objects: { Counter: 100, Reader: 50 }, seen: expectedSeen, bumps: 200 }, resolution);
      t.regex(String(report['typo']), /unknown option 'thread' \(did you mean 'threads'\?\)/, resolution);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
