/**
 * The bundled apps with compiled and with interpreted methods: the heaps are equal byte
 * for byte after every pass of every step (runtime/compiler/index.ts C1), and every
 * method of every app compiles (none falls back).
 */
import test from 'ava';
import { createRuntime, type Runtime } from '../index.js';
import { RESERVED_BYTES } from '../runtime/layout.js';
import { loadApp } from '../apps/registry.js';
import { persistentHeapBytes } from './helpers/heap-bytes.js';
import type { AppParams } from '../apps/app.js';

const CASES: [app: string, params: AppParams, steps: number][] = [
  ['nbody', { bodies: 200 }, 3],
  ['collision', { bodies: 700 }, 6],
  ['wa-tor', { width: 40, height: 36 }, 8],
  ['game-of-life', { width: 45, height: 40, density: 0.3 }, 8],
  ['generation', { width: 45, height: 40, density: 0.3 }, 8],
  ['traffic', { intersections: 15 }, 30],
  ['linux-scalability', { k: 4, lanes: 40, sweep: 0 }, 3],
  ['structure', { nodes: 150 }, 1],
  ['sugarscape', { width: 40, height: 36 }, 8],
  ['barnes-hut', { bodies: 200 }, 5],
];

interface Recorder {
  rt: Runtime;
  /** Heap bytes after each pass, with the pass's name. */
  passes: { name: string; bytes: Uint8Array }[];
}

async function record(app: string, params: AppParams, steps: number, compile: boolean): Promise<Recorder> {
  const a = (await loadApp(app))!;
  const rt = await createRuntime({ classes: a.classes, heap: Math.min(a.heapFor(params), 8 << 20), compile, seed: 3 });
  const rec: Recorder = { rt, passes: [] };
  await a.init(rt, params, 42);
  const parallelDo = rt.parallelDo.bind(rt) as (cls: { name: string }, method: string, ...args: unknown[]) => Promise<void>;
  (rt as unknown as { parallelDo: typeof parallelDo }).parallelDo = async (cls, method, ...args) => {
    await parallelDo(cls, method, ...args);
    rec.passes.push({ name: `${cls.name}.${method}`, bytes: persistentHeapBytes(rt) });
  };
  for (let i = 0; i < steps; i++) await a.step(rt, i);
  return rec;
}

for (const [app, params, steps] of CASES) {
  test(`${app}: compiled and interpreted methods leave the same heap after every pass`, async (t) => {
    const a = await record(app, params, steps, false);
    const b = await record(app, params, steps, true);
    try {
      t.is(b.passes.length, a.passes.length);
      for (let i = 0; i < a.passes.length; i++) {
        const x = a.passes[i]!.bytes;
        const y = b.passes[i]!.bytes;
        let at = -1;
        for (let k = 0; k < x.length; k++) {
          if (x[k] !== y[k]) {
            at = k;
            break;
          }
        }
        if (at >= 0) return t.fail(`pass ${i} (${a.passes[i]!.name}) differs at heap byte ${at + RESERVED_BYTES}`);
      }
      const compiled = b.rt.stats().compiled;
      const names = Object.keys(compiled);
      t.true(names.length > 0);
      for (const name of names) t.true(compiled[name]!.compiled, `${app}: ${name} falls back: ${compiled[name]!.reason}`);
      t.log(`${a.passes.length} passes equal; compiled: ${names.join(', ')}`);
    } finally {
      await a.rt.close();
      await b.rt.close();
    }
  });
}
