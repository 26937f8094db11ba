/**
 * Time collision's phases one by one (the figures of the README's "Cost" section):
 *
 *   node dist/apps/collision/profile.js --bodies 40000 --steps 3 --backend wasm --threads 2
 *
 * Prints, per step, the number of bodies at its start and the wall time of each phase of
 * PHASES (collision.ts) in ms, then the mean over the steps; `--json` prints the same as
 * one JSON object. The runtime is set up as `smmo run collision` sets it up (same heap
 * size, app module for the workers), so a step costs what it costs in a run.
 */
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { createRuntime, type Backend } from '../../index.js';
import { CLASSES, DEFAULTS, init, PHASES } from './collision.js';
import app from './index.js';
import { Body } from './body.js';

export interface StepProfile {
  /** Bodies when the step started. */
  bodies: number;
  /** Phase name → ms. */
  phases: Record<string, number>;
  totalMs: number;
}

export interface Profile {
  bodies: number;
  backend: Backend;
  threads: number;
  steps: StepProfile[];
  /** Bodies after the last step. */
  bodiesAfter: number;
}

/** Run `steps` steps of collision from the seeded start, timing each phase. */
export async function profile(opts: { bodies: number; steps: number; backend: Backend; threads: number; seed: number }): Promise<Profile> {
  const rt = await createRuntime({
    classes: CLASSES,
    heap: app.heapFor({ bodies: opts.bodies }),
    threads: opts.threads,
    backend: opts.backend,
    modules: [new URL('./index.js', import.meta.url)],
  });
  try {
    await init(rt, opts.bodies, opts.seed);
    const steps: StepProfile[] = [];
    for (let k = 0; k < opts.steps; k++) {
      const bodies = rt.count(Body);
      const phases: Record<string, number> = {};
      let totalMs = 0;
      for (const [name, run] of PHASES) {
        const t0 = performance.now();
        await run(rt);
        const ms = performance.now() - t0;
        phases[name] = ms;
        totalMs += ms;
      }
      steps.push({ bodies, phases, totalMs });
    }
    return { bodies: opts.bodies, backend: opts.backend, threads: opts.threads, steps, bodiesAfter: rt.count(Body) };
  } finally {
    await rt.close();
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      bodies: { type: 'string', default: String(DEFAULTS.bodies) },
      steps: { type: 'string', default: '3' },
      backend: { type: 'string', default: 'wasm' },
      threads: { type: 'string', default: '1' },
      seed: { type: 'string', default: '42' },
      json: { type: 'boolean', default: false },
    },
    strict: true,
  });
  const int = (name: keyof typeof values): number => {
    const v = Number(values[name]);
    if (!Number.isInteger(v) || v < 0) {
      console.error(`profile: --${name} must be a non-negative integer, got ${String(values[name])}`);
      process.exit(2);
    }
    return v;
  };
  const backend = values.backend as Backend;
  const p = await profile({ bodies: int('bodies'), steps: int('steps'), backend, threads: int('threads'), seed: int('seed') });
  if (values.json) {
    console.log(JSON.stringify(p));
    return;
  }
  const names = PHASES.map(([n]) => n);
  console.log(`collision: ${p.bodies} bodies, backend ${p.backend}, ${p.threads} thread(s); ms per phase`);
  console.log(['step', 'bodies', ...names, 'total'].join('\t'));
  p.steps.forEach((s, k) => console.log([k, s.bodies, ...names.map((n) => s.phases[n]!.toFixed(1)), s.totalMs.toFixed(1)].join('\t')));
  const mean = (f: (s: StepProfile) => number): string => (p.steps.reduce((a, s) => a + f(s), 0) / Math.max(1, p.steps.length)).toFixed(1);
  console.log(['mean', '', ...names.map((n) => mean((s) => s.phases[n]!)), mean((s) => s.totalMs)].join('\t'));
  console.log(`bodies after ${p.steps.length} steps: ${p.bodiesAfter}`);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
