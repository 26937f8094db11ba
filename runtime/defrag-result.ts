/**
 * What Runtime.defrag returns (runtime/defrag.ts implements it; its header states the
 * algorithm, CompactGpu, ISMM 2019 §3, and the invariants F1–F4): the statistics of one
 * call and the handle map `remap` (F2). Kept apart from runtime/defrag.ts so that the
 * published declarations of Runtime name no heap or WebAssembly type.
 *
 * The forwarding table (step 3) is the map: every source block of the call gets a record;
 * entry record × 32 + slot is the final handle of the object that had that slot before
 * the call (0: none). Source blocks of one call are distinct (a source is retired, and
 * defrag takes no block from `free`), so each handle of before the call names at most one
 * entry.
 */
import { SLOT_BITS } from './layout.js';

/** The defragmentation factor used when none is given: candidates are blocks at most 2/3 full. */
export const DEFAULT_DEFRAG_FACTOR = 2;

/** Per concrete class: what one defrag call did. */
export interface DefragClassStats {
  passes: number;
  /** Objects whose handle changed. */
  objectsMoved: number;
  /** Object copies (an object that moves in two passes counts twice). */
  copies: number;
  blocksFreed: number;
  blocksBefore: number;
  blocksAfter: number;
  /** Free slots in the class's blocks / slots in them (0 without blocks). */
  fragmentationBefore: number;
  fragmentationAfter: number;
  /** Candidates (blocks at most n/(n+1) full) left afterwards: at most n, none fits into the others. */
  candidatesLeft: number;
}

/** What one defrag call did; times in milliseconds. */
export interface DefragStats {
  n: number;
  passes: number;
  /** Objects whose handle changed (remap changes exactly theirs). */
  objectsMoved: number;
  /** Object copies (an object that moves in two passes counts twice). */
  copies: number;
  blocksFreed: number;
  /** Per phase: scan (candidates and records), copy (reservations and field copies), rewrite (references), update (sources retired). */
  ms: { scan: number; copy: number; rewrite: number; update: number; total: number };
  classes: Record<string, DefragClassStats>;
}

/** The result of Runtime.defrag: statistics and the handle map (F2). */
export class DefragResult {
  /** @internal */
  constructor(
    readonly stats: DefragStats,
    private readonly table: ForwardTable,
  ) {}

  /**
   * The handle after defragmentation of the object that had handle `h` before it: the same
   * number for an object that did not move, for null (0) and for a handle that named no
   * live object. Apply it to every handle kept outside the heap (JS variables, arrays).
   */
  remap(h: number): number {
    return this.table.lookup(h) || h;
  }

  /** How many objects moved (remap changes exactly their handles). */
  get moved(): number {
    return this.stats.objectsMoved;
  }
}

/** @internal (3) The forwarding table of one call (see the top of this file). */
export class ForwardTable {
  readonly record: Int32Array;
  entries = new Uint32Array(32 * 64);
  records = 0;
  /** Objects moved (each counted at its first move). */
  movedObjects = 0;
  /**
   * Per block that received objects in this call: for each slot, the handle its object had
   * before the call (0: not moved in). Only such a block can hold an object that moves
   * again (a target that becomes a source in a later pass).
   */
  private readonly origin = new Map<number, Uint32Array>();
  private lastTarget = -1;
  private lastOrigin: Uint32Array | null = null;

  constructor(numBlocks: number) {
    this.record = new Int32Array(numBlocks).fill(-1);
  }

  /** Block `b` is a source: give it a record. */
  addSource(b: number): void {
    if ((this.records + 1) * 32 > this.entries.length) {
      const e = new Uint32Array(this.entries.length * 2);
      e.set(this.entries);
      this.entries = e;
    }
    this.record[b] = this.records++;
  }

  /** The object now at `from` (in a source block) moves to `to`. */
  move(from: number, to: number): void {
    const o = this.origin.get(from >>> SLOT_BITS)?.[from & 31] ?? 0;
    const first = o !== 0 ? o : from;
    if (o === 0) this.movedObjects++;
    this.entries[this.record[first >>> SLOT_BITS]! * 32 + (first & 31)] = to;
    const tb = to >>> SLOT_BITS;
    if (tb !== this.lastTarget) {
      let ot = this.origin.get(tb);
      if (ot === undefined) this.origin.set(tb, (ot = new Uint32Array(32)));
      this.lastTarget = tb;
      this.lastOrigin = ot;
    }
    this.lastOrigin![to & 31] = first;
  }

  /** The final handle of the object that had handle `h` before the call; 0 if it did not move. */
  lookup(h: number): number {
    const r = this.record[h >>> SLOT_BITS];
    return r === undefined || r < 0 ? 0 : this.entries[r * 32 + (h & 31)]!;
  }
}
