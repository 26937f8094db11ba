/**
 * linux-scalability: the allocator micro-benchmark of the DynaSOAr paper ("DynaSOAr: A
 * Parallel Memory Allocator for Object-Oriented Programming on GPUs with Efficient Memory
 * Access", ECOOP 2019, §6, Fig. 13(a)) as an app, and the measurement core that
 * bench/scaling.ts and bench/variants.ts share with it.
 *
 * L lanes (Allocator8 objects, one per GPU thread of the original) each create k Blob8
 * objects and destroy them again, floor(1024 / k) rounds per pass, so that every k makes
 * (about) 1024 creates per lane and pass. What is measured: ns per allocation (one create
 * plus one destroy, over all threads together) and allocations per second.
 */
import { UsageError, type Runtime } from '../../runtime/index.js';
import type { AppParams, AppResults } from '../app.js';
import { Allocator8, Blob8, CLASSES, MODEL_URL } from './model.js';

export { Allocator8, Blob8, CLASSES, MODEL_URL };

/**
 * Largest k (objects a lane holds at once): the original's default (kNumAllocPerThread)
 * and the end of the paper's sweep. It bounds the heap: at most lanes × k objects live.
 */
export const MAX_K = 1024;
/** Largest lane count: the original's 64 × 256 GPU threads. */
export const MAX_LANES = 16384;
/** Creates per lane and pass: each lane makes floor(ALLOCS_PER_LANE / k) rounds of k. */
export const ALLOCS_PER_LANE = 1024;

/**
 * Defaults of `smmo run linux-scalability`: the original's k (1024) and one pass, but 1024
 * lanes instead of its 16 384 GPU threads (a CPU has a handful of cores) and 5
 * repetitions, whose median is reported (the first includes the JIT's warm-up).
 */
export const DEFAULTS = { k: MAX_K, lanes: 1024, iterations: 5 };
export const ORIGINAL = { k: 1024, lanes: 64 * 256, iterations: 1 };

/** The sweep of Fig. 13(a): k = 1, 2, 4, … kmax. */
export function sweepKs(kmax = MAX_K): number[] {
  const ks: number[] = [];
  for (let k = 1; k <= kmax; k *= 2) ks.push(k);
  return ks;
}

/** Rounds of k per lane and pass: floor(kmax / k), at least 1. */
export function roundsFor(k: number, kmax = ALLOCS_PER_LANE): number {
  return Math.max(1, Math.floor(kmax / k));
}

/** A heap for `lanes` lanes holding up to `k` objects each: 64 MiB plus 80 bytes per live object (room for partly used blocks). */
export function heapBytes(lanes: number, k: number): number {
  return Math.min(4000 * 2 ** 20, 64 * 2 ** 20 + lanes * k * 80);
}

/** One pass: every lane makes `rounds` rounds of k creates and k destroys. Returns its wall-clock ms. */
export async function allocFreePass(
  rt: Runtime,
  k: number,
  rounds: number,
  method: 'allocFree' | 'allocFreeRaw' = 'allocFree',
): Promise<number> {
  const t0 = performance.now();
  await rt.parallelDo(Allocator8, method, k, rounds);
  return performance.now() - t0;
}

/**
 * The benchmarks' warm-up of a sweep: three untimed passes of every k in `ks`. Each worker
 * thread runs only its share of a pass, so without them the first k timed on 16 threads
 * (device host) measured code still being optimised (docs/benchmarks.md, "Deferred deletion
 * of other objects": k = 1 at 7.3 ns where a later sweep gave 2.2).
 */
export async function warmUp(
  rt: Runtime,
  ks: readonly number[],
  kmax: number,
  method: 'allocFree' | 'allocFreeRaw' = 'allocFree',
): Promise<void> {
  for (const k of ks) for (let i = 0; i < 3; i++) await allocFreePass(rt, k, roundsFor(k, kmax), method);
}

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/**
 * The benchmarks' measurement of one k: one untimed pass (the first touch of its blocks),
 * then `samples` timed passes; the median pass in ms. Throws when objects are left over.
 */
export async function timeK(
  rt: Runtime,
  k: number,
  rounds: number,
  opts: { method?: 'allocFree' | 'allocFreeRaw'; samples?: number; what?: string } = {},
): Promise<number> {
  const method = opts.method ?? 'allocFree';
  await allocFreePass(rt, k, rounds, method);
  const ts: number[] = [];
  for (let r = 0; r < (opts.samples ?? 3); r++) ts.push(await allocFreePass(rt, k, rounds, method));
  const left = rt.count(Blob8);
  if (left !== 0) throw new Error(`linux-scalability${opts.what ? ` (${opts.what})` : ''}: ${left} objects left after k=${k}`);
  return median(ts);
}

// ------------------------------------------------------------------ the app

/** What a run keeps outside the heap: its parameters and the measured passes. */
interface State {
  k: number;
  sweep: boolean;
  /** ms of each timed pass, per k, in repetition order. */
  ms: Map<number, number[]>;
}
const STATES = new WeakMap<Runtime, State>();

export function kOf(params: AppParams): number {
  return Number(params['k'] ?? DEFAULTS.k);
}
export function lanesOf(params: AppParams): number {
  return Number(params['lanes'] ?? DEFAULTS.lanes);
}
export function sweepOf(params: AppParams): boolean {
  return Number(params['sweep'] ?? 0) !== 0;
}

/** Bad parameters are UsageErrors: k in 1 … MAX_K, lanes in 1 … MAX_LANES. */
export function checkParams(params: AppParams): void {
  const k = kOf(params);
  const lanes = lanesOf(params);
  if (!Number.isInteger(k) || k < 1 || k > MAX_K)
    throw new UsageError(
      `linux-scalability: --k must be an integer in 1 … ${MAX_K} (it bounds the heap: lanes × k objects live at once), got ${k}`,
    );
  if (!Number.isInteger(lanes) || lanes < 1 || lanes > MAX_LANES)
    throw new UsageError(`linux-scalability: --lanes must be an integer in 1 … ${MAX_LANES}, got ${lanes}`);
}

/** The heap of a run: for its k, or for MAX_K with --sweep. */
export function heapFor(params: AppParams): number {
  return heapBytes(lanesOf(params), sweepOf(params) ? MAX_K : kOf(params));
}

function adopt(rt: Runtime, k: number, sweep: boolean): void {
  // Every pass goes to the worker threads whatever the lane count (30 lanes per block:
  // the default threshold of 64 blocks would run up to 1920 lanes on the calling thread alone).
  rt.inlineBlocks = 0;
  STATES.set(rt, { k, sweep, ms: new Map() });
}

/** Create the lanes (no payload objects: those live only inside a pass). */
export async function init(rt: Runtime, params: AppParams): Promise<void> {
  checkParams(params);
  adopt(rt, kOf(params), sweepOf(params));
  await rt.parallelNew(Allocator8, lanesOf(params));
}

function stateOf(rt: Runtime): State {
  const s = STATES.get(rt);
  if (s === undefined) throw new UsageError('linux-scalability: init (or restoreState) has not run on this runtime');
  return s;
}

/** One repetition: one create/destroy pass for k, or with --sweep one per k = 1, 2, 4, … 1024. */
export async function step(rt: Runtime): Promise<void> {
  const s = stateOf(rt);
  for (const k of s.sweep ? sweepKs() : [s.k]) {
    const ms = await allocFreePass(rt, k, roundsFor(k));
    let list = s.ms.get(k);
    if (list === undefined) s.ms.set(k, (list = []));
    list.push(ms);
  }
}

/** Creates made so far: the sum of the lanes' counters. */
export function allocations(rt: Runtime): number {
  let sum = 0;
  rt.deviceDo(Allocator8, (a) => {
    sum += a.allocated;
  });
  return sum;
}

/** Blob8 objects left · 2³² + (creates mod 2³²): a correct run leaves none, so the digest is the allocation count. */
export function digest(rt: Runtime): number {
  return rt.count(Blob8) * 2 ** 32 + (allocations(rt) % 2 ** 32);
}

export function saveState(rt: Runtime): Record<string, number> {
  const s = stateOf(rt);
  return { k: s.k, sweep: s.sweep ? 1 : 0 };
}

export function restoreState(rt: Runtime, saved: Record<string, number>): void {
  const params = { k: saved['k'], sweep: saved['sweep'] };
  checkParams(params);
  adopt(rt, kOf(params), sweepOf(params));
}

/** One k's figures over the repetitions run so far. */
export interface KResult {
  k: number;
  rounds: number;
  /** Creates (= destroys) per pass, all lanes. */
  allocationsPerPass: number;
  /** Median over the repetitions of the pass time / allocations per pass. */
  nsPerAllocation: number;
  allocationsPerSecond: number;
  /** Every repetition's ns per allocation, in order. */
  repetitions: number[];
}

/** The measured figures: one KResult per k (one, or the sweep's eleven). */
export function results(rt: Runtime): KResult[] {
  const s = stateOf(rt);
  const lanes = rt.count(Allocator8);
  const out: KResult[] = [];
  for (const [k, ms] of s.ms) {
    const rounds = roundsFor(k);
    const perPass = lanes * k * rounds;
    const ns = ms.map((x) => (x * 1e6) / perPass);
    const mid = median(ns);
    out.push({ k, rounds, allocationsPerPass: perPass, nsPerAllocation: mid, allocationsPerSecond: 1e9 / mid, repetitions: ns });
  }
  return out;
}

/** App.results: `--json`'s `results` (lanes, k, sweep, perK) and the summary's rows. */
export function appResults(rt: Runtime): AppResults {
  const s = stateOf(rt);
  return {
    summary: summaryRows(rt),
    json: { lanes: rt.count(Allocator8), k: s.sweep ? null : s.k, sweep: s.sweep, maxK: MAX_K, perK: results(rt) },
  };
}

/** The human summary's lines: the figures for one k, or the sweep as a table. */
export function summaryRows(rt: Runtime): [string, string][] {
  const s = stateOf(rt);
  const rs = results(rt);
  if (rs.length === 0) return [];
  const reps = rs[0]!.repetitions.length;
  const how = `median of ${reps} repetition${reps === 1 ? '' : 's'}; one create + one destroy, all threads together`;
  if (!s.sweep) {
    const r = rs[0]!;
    return [
      ['ns/alloc', `${r.nsPerAllocation.toFixed(1)} (k=${r.k}, ${r.rounds} round${r.rounds === 1 ? '' : 's'} per lane; ${how})`],
      ['allocs/s', `${(r.allocationsPerSecond / 1e6).toFixed(2)} M`],
    ];
  }
  const rows: [string, string][] = [['sweep', `${'k'.padStart(5)}  ${'ns/alloc'.padStart(10)}  ${'M allocs/s'.padStart(10)}   (${how})`]];
  for (const r of rs)
    rows.push([
      '',
      `${String(r.k).padStart(5)}  ${r.nsPerAllocation.toFixed(1).padStart(10)}  ${(r.allocationsPerSecond / 1e6).toFixed(2).padStart(10)}`,
    ]);
  return rows;
}
