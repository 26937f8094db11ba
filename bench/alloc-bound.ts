/**
 * What the allocator's sharing costs on T cores (issue 13): linux-scalability's create +
 * destroy throughput of one heap shared by T threads, beside T processes that each run the
 * same code on a heap of their own with one thread, all at once. The T processes share no
 * word of the allocator (no bitmap, no block, no cache line), so their sum is what this
 * machine gives this code when nothing is shared: an upper bound for any block-choice
 * policy of the shared heap. One process alone, with the lanes of one of them, is printed
 * too (what T processes lose to each other through the machine: memory, caches, clock).
 *
 * Every process runs passes of the app's `allocFree` (or `allocFreeRaw`: the allocator
 * alone, without views and zeroing) at k = 1024 — each lane creates 1024 Blob8 objects and
 * destroys them again — for --seconds after a warm-up, and reports the creates (each with
 * its destroy) per second. The T independent processes wait for a common start time, so
 * their timed windows overlap. Lanes: --lanes in the shared heap, --lanes / T in each
 * independent process (the same work in all). Rounds alternate the three measurements.
 *
 *   node dist/bench/alloc-bound.js [--threads 16] [--lanes 1920] [--seconds 4] [--rounds 2]
 *        [--method allocFree|allocFreeRaw] [--keep 32] [--own-first] [--out FILE]
 *
 * The default lane count, 1920, is 64 blocks of Allocator8 (30 slots per block): four
 * claims for each of 16 threads, so that no thread waits at the end of a pass for another's
 * fifth block (with 2048 lanes, 69 blocks, five threads take a fifth).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createRuntime } from '../index.js';
import { Allocator8, CLASSES, heapBytes, MAX_K, MODEL_URL } from '../apps/linux-scalability/linux.js';
import { machineInfo } from './apps.js';
import { lastJsonLine, spawnNodeChild } from './child.js';

type Method = 'allocFree' | 'allocFreeRaw';

/** One measuring process's result (printed as JSON; `rounds` of the report hold them). */
export interface Sample {
  threads: number;
  lanes: number;
  creates: number;
  ms: number;
  /** Millions of creates (each with its destroy) per second. */
  mps: number;
}

const { values } = parseArgs({
  options: {
    threads: { type: 'string', default: '16' },
    lanes: { type: 'string', default: '1920' },
    seconds: { type: 'string', default: '4' },
    rounds: { type: 'string', default: '2' },
    method: { type: 'string', default: 'allocFree' },
    keep: { type: 'string', default: '32' },
    'own-first': { type: 'boolean', default: false },
    out: { type: 'string', default: 'bench-results/alloc-bound.json' },
    // internal: one measuring process
    child: { type: 'boolean', default: false },
    'start-at': { type: 'string', default: '0' },
  },
});

/** A bad flag: say which and stop (exit status 2). */
function usage(message: string): never {
  console.error(`alloc-bound: ${message}`);
  process.exit(2);
}

function intArg(name: string, v: string, min: number, max: number): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < min || n > max) usage(`--${name} must be an integer in ${min} … ${max}, got ${v}`);
  return n;
}

const THREADS = intArg('threads', values.threads!, 1, 256);
const LANES = intArg('lanes', values.lanes!, 1, 16384);
const SECONDS = Number(values.seconds);
const ROUNDS = intArg('rounds', values.rounds!, 1, 100);
const KEEP = intArg('keep', values.keep!, 0, 1024);
const METHOD = values.method as Method;
if (METHOD !== 'allocFree' && METHOD !== 'allocFreeRaw') usage(`--method must be allocFree or allocFreeRaw, got ${METHOD}`);
if (!(SECONDS > 0 && SECONDS <= 600)) usage(`--seconds must be in (0, 600], got ${values.seconds}`);

/** One process: a runtime of `threads` threads, `lanes` lanes; passes of k = 1024 for SECONDS from the start time. */
async function measure(threads: number, lanes: number, startAt: number): Promise<Sample> {
  const rt = await createRuntime({
    classes: CLASSES,
    threads,
    heap: heapBytes(lanes, MAX_K),
    modules: [MODEL_URL],
    inlineBlocks: 0, // every pass on the workers, as bench/scaling.ts
    keepBlocks: KEEP,
    allocator: { ownFirstBlock: values['own-first'] },
  });
  try {
    await rt.parallelNew(Allocator8, lanes);
    for (let i = 0; i < 30; i++) await rt.parallelDo(Allocator8, METHOD, 4, 1); // JIT warm-up on every thread
    await rt.parallelDo(Allocator8, METHOD, MAX_K, 1); // the first touch of the blocks
    while (Date.now() < startAt) await new Promise((r) => setTimeout(r, 1));
    let creates = 0;
    const t0 = performance.now();
    let ms = 0;
    while (ms < SECONDS * 1000) {
      await rt.parallelDo(Allocator8, METHOD, MAX_K, 1);
      creates += lanes * MAX_K;
      ms = performance.now() - t0;
    }
    rt.validateHeap();
    return { threads, lanes, creates, ms, mps: creates / ms / 1000 };
  } finally {
    await rt.close();
  }
}

/** Time a measuring process may take beyond its window and its wait for the start (runtime start, warm-up, heap check). */
const CHILD_SLACK_MS = 120_000;

/** Run a measuring process; resolves to its sample. */
async function child(threads: number, lanes: number, startAt: number): Promise<Sample> {
  const script = fileURLToPath(import.meta.url);
  const argv = [
    '--child',
    '--threads',
    String(threads),
    '--lanes',
    String(lanes),
    '--seconds',
    String(SECONDS),
    '--method',
    METHOD,
    '--keep',
    String(KEEP),
    '--start-at',
    String(startAt),
    ...(values['own-first'] ? ['--own-first'] : []),
  ];
  // A bound on the process: its window, the wait for the common start and a generous
  // allowance for the runtime's start and warm-up; past it the process is killed.
  const limitMs = SECONDS * 1000 + Math.max(0, startAt - Date.now()) + CHILD_SLACK_MS;
  const r = await spawnNodeChild(script, argv, { timeoutMs: limitMs });
  const what = `alloc-bound: a measuring process (${threads} threads, ${lanes} lanes)`;
  if (r.timedOut) throw new Error(`${what} was stopped (${r.signal}) after its limit of ${Math.round(limitMs / 1000)} s`);
  if (r.signal !== null) throw new Error(`${what} was ended by ${r.signal}`);
  if (r.code !== 0) throw new Error(`${what} exited with ${r.code}`);
  return lastJsonLine<Sample>(r.stdout);
}

async function main(): Promise<void> {
  if (LANES % THREADS !== 0)
    usage(`--lanes (${LANES}) must be a multiple of --threads (${THREADS}): each independent process gets lanes / threads`);
  const solo = LANES / THREADS;
  const machine = machineInfo();
  console.log(
    `alloc-bound: ${METHOD}, k = ${MAX_K}, ${THREADS} threads, ${LANES} lanes (${solo} per independent process), keepBlocks ${KEEP}` +
      `${values['own-first'] ? ', ownFirstBlock' : ''}, ${SECONDS} s per measurement; ${machine.cpu}, ${machine.cores} cores, Node.js ${machine.node}`,
  );
  if (THREADS > availableParallelism()) console.log(`(more threads than the machine's ${availableParallelism()} cores)`);
  const rounds: { shared: Sample; independent: Sample[]; alone: Sample }[] = [];
  for (let r = 1; r <= ROUNDS; r++) {
    const shared = await child(THREADS, LANES, 0);
    // A common start a few seconds ahead: every process has its runtime and warm-up done by then.
    const startAt = Date.now() + 4000 + 100 * THREADS;
    const independent = await Promise.all(Array.from({ length: THREADS }, () => child(1, solo, startAt)));
    const alone = await child(1, solo, 0);
    rounds.push({ shared, independent, alone });
    const sum = independent.reduce((s, x) => s + x.mps, 0);
    const each = independent.map((x) => x.mps);
    console.log(
      `round ${r}: one heap, ${THREADS} threads: ${shared.mps.toFixed(1)} M/s | ${THREADS} processes, a heap each: ` +
        `${sum.toFixed(1)} M/s (each ${Math.min(...each).toFixed(1)} … ${Math.max(...each).toFixed(1)}) | ` +
        `one process alone: ${alone.mps.toFixed(1)} M/s | shared / independent: ${(shared.mps / sum).toFixed(2)}`,
    );
  }
  machine.loadEnd = machineInfo().loadStart;
  mkdirSync(dirname(values.out!), { recursive: true });
  writeFileSync(
    values.out!,
    JSON.stringify(
      {
        method: METHOD,
        k: MAX_K,
        threads: THREADS,
        lanes: LANES,
        keepBlocks: KEEP,
        ownFirstBlock: values['own-first'],
        seconds: SECONDS,
        machine,
        rounds,
      },
      null,
      2,
    ) + '\n',
  );
  console.log(`wrote ${values.out}`);
}

if (values.child) {
  const s = await measure(THREADS, LANES, Number(values['start-at']));
  console.log(JSON.stringify(s));
} else await main();
