/**
 * Summarise V8 CPU profiles (`node --cpu-prof`, e.g. from `bench/ecs.js --profile DIR`):
 * per profile, the functions with the most self time; the total (inclusive) time of the
 * functions named with --total (each counted once per sample, however deep it recurs);
 * and a split of the samples into categories (--categories, default: where smmo's do-alls
 * spend their time). Each sample goes to the category of the innermost frame on its
 * stack that a category names (a name ending in `*` is a prefix), else to "other".
 * Times are sample times in ms and as a share of the profile's samples; with --ops N
 * (the ops the profiled process ran: bench-results JSON "totalOps") also µs per op.
 *
 *   node dist/bench/ecs/profile.js DIR/smmo-packed_5-1.cpuprofile … [--top 20] [--ops N]
 *        [--total doAllOnCallingThread,snapshot,runBlocks] [--categories "name=f,g*;…"]
 *
 * Generated code (the compiled warp loops, `run_<Class>_<method>`) has no file: it shows
 * as its function name alone.
 */
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { parseArgs } from 'node:util';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  totalMs: number;
  /** [function, self ms], most first. */
  self: [string, number][];
  /** function name → inclusive ms (for the names asked for). */
  total: Map<string, number>;
  /** category → ms (every sample in exactly one; "other" for the rest). */
  categories: Map<string, number>;
}

/** Where a do-all's time goes, innermost first wins (runtime/runtime.ts, thread.ts, allocator.ts, compiler/). */
export const SMMO_CATEGORIES = [
  'one-time compile=compileUncached',
  'compiled loop=run_*',
  'allocate (create)=allocate,alloc_*',
  'release (destroy)=release,releaseHandle,destroyHandle',
  'snapshot=snapshot',
  'flushKept (end of pass)=flushKept',
  'per-pass dispatch and checks=doAll,doAllOnCallingThread,checkDoAll,runInline,runBlocks,compile,live,run',
  'setup and harness=setup,setupCase,main,child,measure,timeOps,step',
  'garbage collector=(garbage collector)',
].join(';');

function parseCategories(spec: string): { name: string; test: (fn: string) => boolean }[] {
  return spec
    .split(';')
    .filter((c) => c.includes('='))
    .map((c) => {
      const [name, fns] = c.split('=') as [string, string];
      const exact = new Set<string>();
      const prefixes: string[] = [];
      for (const f of fns.split(',')) {
        if (f.endsWith('*')) prefixes.push(f.slice(0, -1));
        else exact.add(f);
      }
      return { name, test: (fn: string) => exact.has(fn) || prefixes.some((p) => fn.startsWith(p)) };
    });
}

const label = (n: ProfileNode): string => {
  const f = n.callFrame;
  const name = f.functionName === '' ? '(anonymous)' : f.functionName;
  return f.url === '' ? name : `${name} ${basename(f.url)}:${f.lineNumber + 1}`;
};

export function summarise(p: CpuProfile, totals: readonly string[], categorySpec = SMMO_CATEGORIES): ProfileSummary {
  const cats = parseCategories(categorySpec);
  const categories = new Map<string, number>([...cats.map((c): [string, number] => [c.name, 0]), ['other', 0]]);
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<string, number>();
  const total = new Map<string, number>(totals.map((t) => [t, 0]));
  let totalUs = 0;
  p.samples.forEach((id, i) => {
    const dt = p.timeDeltas[i] ?? 0;
    totalUs += dt;
    const leaf = byId.get(id)!;
    const k = label(leaf);
    self.set(k, (self.get(k) ?? 0) + dt);
    const seen = new Set<string>();
    let cat: string | null = null;
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const name = byId.get(at)!.callFrame.functionName;
      if (total.has(name) && !seen.has(name)) {
        seen.add(name);
        total.set(name, total.get(name)! + dt);
      }
      if (cat === null) cat = cats.find((c) => c.test(name))?.name ?? null;
    }
    categories.set(cat ?? 'other', categories.get(cat ?? 'other')! + dt);
  });
  return {
    totalMs: totalUs / 1000,
    self: [...self].map(([k, us]): [string, number] => [k, us / 1000]).sort((a, b) => b[1] - a[1]),
    total: new Map([...total].map(([k, us]) => [k, us / 1000])),
    categories: new Map([...categories].map(([k, us]) => [k, us / 1000])),
  };
}

function main(): void {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      top: { type: 'string', default: '20' },
      total: { type: 'string', default: '' },
      categories: { type: 'string', default: SMMO_CATEGORIES },
      ops: { type: 'string' },
    },
  });
  const top = Number(values.top);
  const ops = values.ops === undefined ? null : Number(values.ops);
  const totals = values.total.split(',').filter((s) => s !== '');
  for (const file of positionals) {
    const s = summarise(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile, totals, values.categories);
    const perOp = (ms: number): string => (ops === null ? '' : `  ${((ms * 1000) / ops).toFixed(2).padStart(8)} µs/op`);
    const pct = (ms: number): string => `${((100 * ms) / s.totalMs).toFixed(1).padStart(5)} %${perOp(ms)}`;
    console.log(`\n${basename(file)}: ${s.totalMs.toFixed(0)} ms of samples`);
    for (const [k, ms] of s.self.slice(0, top)) console.log(`  ${ms.toFixed(1).padStart(9)} ms ${pct(ms)}  ${k}`);
    for (const [k, ms] of s.total) console.log(`  total ${k}: ${ms.toFixed(1)} ms (${pct(ms).trim()})`);
    console.log('  by category (innermost named frame):');
    for (const [k, ms] of s.categories) console.log(`  ${ms.toFixed(1).padStart(9)} ms ${pct(ms)}  ${k}`);
  }
}

if (process.argv[1] !== undefined && basename(process.argv[1]) === 'profile.js') main();
