/**
 * Where a pass runs, and in what pieces: the scheduling policy of do-alls and
 * parallelNew, in one place. Pure bookkeeping — it measures nothing itself; doall.ts
 * reports the times it measured — so test/schedule.test.ts checks every rule directly.
 *
 * A do-all over a class is one pass per concrete class (paper §3). For each pass:
 *
 *   (P1) One thread (no executor): the calling thread runs it, always.
 *   (P2) A pass of fewer than 2 blocks runs on the calling thread: there is nothing to share.
 *   (P3) A pass of fewer than `inlineBlocks` blocks runs on the calling thread, unless the
 *        same class and method, run there last time, took more than `inlineMicros` µs for
 *        that many blocks (its cost per block × blocks). A fork-join costs 10–150 µs
 *        (bench/scaling.ts measures it), so a small pass of a light method is cheaper
 *        inline; the block count alone cannot tell a light method from one that
 *        allocates thousands of objects per call, hence the measured cost.
 *   (P4) A pass sent to the workers by (P3)'s estimate that then took less than
 *        `inlineMicros`, fork-join included, was over-estimated (its first inline run
 *        may have included compiling the method): its estimate is forgotten, and the next
 *        small pass is measured inline again.
 *   (P5) On the workers, the pass's blocks are claimed from a shared cursor in chunks:
 *        about 8 claims per thread (uneven blocks balance), at most 64 blocks per claim
 *        (a short tail), and — once the method's cost on the workers is known — about
 *        CLAIM_MICROS of work per claim, so that a heavy method's last claims end
 *        together (nbody's computeForce at 20 000 bodies: ~18 ms per block, one block per claim).
 *   (P6) parallelNew with a method init: on the workers from `inlineBlocks × 32` objects
 *        (and more than 32), in claims of ~8 per thread, a multiple of 32 (whole blocks),
 *        32 … 4096 objects; else on the calling thread. With an init *function*: always
 *        the calling thread (a function cannot cross threads; doall.ts).
 *   (P7) The snapshot before a do-all (thread.ts) lists the blocks on the calling thread
 *        and copies their allocation words into their iteration words — one header per
 *        block, mostly cache misses in a large heap, and the serial part that bounds a
 *        large do-all's speed-up. From `copyBlocks` listed blocks the copy is a pass of its
 *        own on the executor (KIND_COPY), in about 4 claims per thread; below, or with
 *        one thread, the calling thread copies.
 */

/**
 * Default of RuntimeOptions.inlineBlocks. With T threads a pass of B blocks costs about
 * F + B·c/T on the workers and B·c on the calling thread alone, so the workers pay from
 * B* = F / (c·(1 - 1/T)) blocks; for a light method (nbody's update, c ≈ 0.75 µs per
 * block) and a fork-join of F ≈ 28 µs, B* ≈ 75 blocks at T = 2 (docs/benchmarks.md).
 * 64 keeps light passes of up to 2048 objects on the calling thread.
 */
export const DEFAULT_INLINE_BLOCKS = 64;

/**
 * Default of RuntimeOptions.inlineMicros: about the cost of an empty pass on 16 threads
 * (docs/benchmarks.md); a small pass whose inline run is estimated above it pays for the
 * fork-join on any thread count measured.
 */
export const DEFAULT_INLINE_MICROS = 150;

/** (P5) Work per claim on the workers, when the method's cost is known (µs). */
export const CLAIM_MICROS = 500;

/**
 * (P7) Default of PassScheduler.copyBlocks: blocks listed by a snapshot from which the
 * copy runs on the workers. A fork-join costs 10–150 µs; the copy about 30–80 ns per block
 * on one thread (dev VM, device host), so from ~8 000 blocks the workers pay.
 */
export const DEFAULT_COPY_BLOCKS = 8192;

/** Where one pass runs: on the calling thread, or on the executor in claims of `chunk`. */
export type Placement = { readonly inline: true } | { readonly inline: false; readonly chunk: number };

const INLINE: Placement = { inline: true };

export class PassScheduler {
  /** Per "typeId:method": µs per block of its last run on the calling thread (absent: 0, so a first run is inline). */
  private readonly inlineCost = new Map<string, number>();
  /** Per "typeId:method": thread-µs per block of its last pass on the workers. */
  private readonly workerCost = new Map<string, number>();

  constructor(
    /** Threads of a pass on the executor, the calling thread included; 1: no executor. */
    readonly threads: number,
    /** RuntimeOptions.inlineBlocks (benchmarks may change it between passes). */
    public inlineBlocks: number,
    /** RuntimeOptions.inlineMicros. */
    public inlineMicros: number,
    /** (P7) Listed blocks from which a snapshot's copy runs on the executor. */
    public copyBlocks: number = DEFAULT_COPY_BLOCKS,
  ) {}

  /** (P7) The claim size of a snapshot copy of `blocks` listed blocks on the executor, or null: the calling thread copies. */
  snapshotCopy(blocks: number): number | null {
    if (this.threads === 1 || blocks < this.copyBlocks || blocks < 2) return null;
    return Math.ceil(blocks / (this.threads * 4));
  }

  /** Where a pass of method `key` ("typeId:method") over `blocks` blocks runs (P1–P3, P5). */
  doAll(key: string, blocks: number): Placement {
    if (this.threads === 1 || blocks < 2) return INLINE;
    if (blocks < this.inlineBlocks && (this.inlineCost.get(key) ?? 0) * blocks < this.inlineMicros) return INLINE;
    let chunk = Math.max(1, Math.min(64, Math.floor(blocks / (this.threads * 8))));
    const perBlock = this.workerCost.get(key);
    if (perBlock !== undefined) chunk = Math.max(1, Math.min(chunk, Math.ceil(CLAIM_MICROS / perBlock)));
    return { inline: false, chunk };
  }

  /** A pass of `key` over `blocks` blocks took `micros` on the calling thread alone. */
  ranInline(key: string, blocks: number, micros: number): void {
    if (this.threads > 1 && blocks > 0) this.inlineCost.set(key, micros / blocks);
  }

  /** A pass of `key` over `blocks` blocks took `micros` on the executor, fork-join included (P4, P5). */
  ranOnWorkers(key: string, blocks: number, micros: number): void {
    this.workerCost.set(key, (micros * this.threads) / blocks);
    if (blocks < this.inlineBlocks && micros < this.inlineMicros) this.inlineCost.delete(key);
  }

  /** (P6) parallelNew of `n` objects with a method init: the claim size on the workers, or null: the calling thread. */
  parallelNew(n: number): number | null {
    if (this.threads === 1 || n < this.inlineBlocks * 32 || n <= 32) return null;
    return Math.min(4096, Math.max(32, Math.ceil(n / (this.threads * 8) / 32) * 32));
  }
}
