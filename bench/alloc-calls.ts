/**
 * What one allocator operation costs, through the Allocator binding alone (no do-all, no
 * views, no zeroing): ns per allocate and per release of an 8 × f64 class (32 slots per
 * block), rounds of 1024 allocations then 1024 releases, outside a warp and inside one
 * (warpBegin(30) before the allocations: the coalesced path of a do-all, core.rs C2, where
 * most allocations take a cached slot), on a heap formatted for one thread (plain memory
 * operations) and for several (atomics), and the cost of an empty call into the
 * WebAssembly module for scale. CPU time (process.cpuUsage), the minimum of 7 repeats, so
 * that other jobs on a shared machine disturb it less than wall-clock time.
 *
 *   node dist/bench/alloc-calls.js [--baseline DIR] [--repeats R] [--child-timeout S]
 *
 * --baseline DIR: another built checkout of smmo (its dist/): both builds run in fresh
 * processes, alternating R times (default 2), and each figure prints as "baseline → this".
 */
import { cpus } from 'node:os';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { childTimeoutMs, lastJsonLine, runNodeChild } from './child.js';

interface Row {
  atomic: boolean;
  emptyCall: number;
  allocate: number;
  release: number;
  warpAllocate: number;
  warpRelease: number;
}

const K = 1024;
const ROUNDS = 2000;
const REPEATS = 7;

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1]! : fallback;
}

/** Measure in this process with the build whose root is `root` (a checkout with dist/). */
async function measure(root: string, atomic: boolean): Promise<Row> {
  const at = (p: string): string => pathToFileURL(resolve(root, 'dist', p)).href;
  const { Allocator } = (await import(at('runtime/allocator.js'))) as typeof import('../runtime/allocator.js');
  const { Heap } = (await import(at('runtime/heap.js'))) as typeof import('../runtime/heap.js');
  const { f64, object } = (await import(at('runtime/index.js'))) as typeof import('../runtime/index.js');
  const { planTypes } = (await import(at('runtime/layout.js'))) as typeof import('../runtime/layout.js');
  class Blob extends object({ a: f64, b: f64, c: f64, d: f64, e: f64, f: f64, g: f64, h: f64 }) {}
  const table = planTypes([Blob]);
  const heap = Heap.create(table, 64 << 20, { keepBlocks: 32, atomic });
  const alloc = new Allocator(heap, 1);
  const t = table.byClass(Blob)!;
  const empty = heap.wasm.fn('smmo_abi_version')!;
  const held = new Uint32Array(K);
  const cpu = (): number => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  const calls = (): number => {
    let s = 0;
    for (let r = 0; r < ROUNDS; r++) for (let i = 0; i < K; i++) s += empty();
    return s;
  };
  const rounds = (warp: boolean): [number, number] => {
    let ta = 0;
    let tr = 0;
    for (let r = 0; r < ROUNDS; r++) {
      const t0 = cpu();
      if (warp) alloc.warpBegin(30);
      for (let i = 0; i < K; i++) held[i] = alloc.allocate(t);
      if (warp) alloc.warpEnd();
      const t1 = cpu();
      for (let i = 0; i < K; i++) alloc.releaseHandle(held[i]!);
      tr += cpu() - t1;
      ta += t1 - t0;
    }
    return [ta, tr];
  };
  const ns = (ms: number): number => (ms * 1e6) / (K * ROUNDS);
  const best: Row = { atomic, emptyCall: Infinity, allocate: Infinity, release: Infinity, warpAllocate: Infinity, warpRelease: Infinity };
  for (let rep = 0; rep < REPEATS; rep++) {
    const t0 = cpu();
    calls();
    best.emptyCall = Math.min(best.emptyCall, ns(cpu() - t0));
    const [a, r] = rounds(false);
    const [wa, wr] = rounds(true);
    best.allocate = Math.min(best.allocate, ns(a));
    best.release = Math.min(best.release, ns(r));
    best.warpAllocate = Math.min(best.warpAllocate, ns(wa));
    best.warpRelease = Math.min(best.warpRelease, ns(wr));
  }
  alloc.dispose();
  heap.validate();
  return best;
}

const here = fileURLToPath(import.meta.url);
const childAt = process.argv.indexOf('--child');
if (childAt >= 0) {
  // One heap per process: a second Allocator in the same process would make V8's code for
  // the binding polymorphic and slower than in a runtime's thread.
  const root = process.argv[childAt + 1]!;
  console.log(JSON.stringify(await measure(root, process.argv[childAt + 2] === 'atomic')));
} else {
  const mine = resolve(here, '..', '..', '..');
  const baseline = arg('baseline', '');
  const repeats = Math.max(1, Number(arg('repeats', '2')));
  const run = (root: string): Row[] =>
    ['plain', 'atomic'].map((mode) => {
      const r = runNodeChild(here, ['--child', root, mode], { timeoutMs: childTimeoutMs() });
      if (r.failure !== undefined) throw new Error(`alloc-calls child for ${root} (${mode}) ${r.failure}`);
      return lastJsonLine<Row>(r.stdout);
    });
  const minRows = (runs: Row[][]): Row[] =>
    runs[0]!.map((row, i) => {
      const out = { ...row };
      for (const k of ['emptyCall', 'allocate', 'release', 'warpAllocate', 'warpRelease'] as const) {
        out[k] = Math.min(...runs.map((r) => r[i]![k]));
      }
      return out;
    });
  const ours: Row[][] = [];
  const theirs: Row[][] = [];
  for (let i = 0; i < repeats; i++) {
    if (baseline !== '') theirs.push(run(resolve(baseline)));
    ours.push(run(mine));
  }
  const a = minRows(ours);
  const b = baseline !== '' ? minRows(theirs) : null;
  console.log(`smmo allocator calls on ${cpus()[0]?.model ?? 'unknown'} (${cpus().length} cores), node ${process.version}`);
  console.log(`ns per operation, CPU time, minimum of ${REPEATS} × ${repeats} runs${b ? ` (baseline ${baseline} → this build)` : ''}`);
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b?.[i];
    const f = (k: keyof Omit<Row, 'atomic'>): string => `${y ? `${y[k].toFixed(1)} → ` : ''}${x[k].toFixed(1)}`;
    console.log(
      `${x.atomic ? 'heap of several threads (atomics)' : 'heap of one thread (plain)'}: empty call ${f('emptyCall')}; ` +
        `allocate ${f('allocate')}, release ${f('release')}; in a warp: allocate ${f('warpAllocate')}, release ${f('warpRelease')}`,
    );
  }
}
