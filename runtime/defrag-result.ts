/**
 * What Runtime.defrag returns (runtime/defrag.ts implements it; its header states the
 * algorithm, CompactGpu, ISMM 2019 §3, and the invariants F1–F4): the statistics of one
 * call and the handle map `remap` (F2). Kept apart from runtime/defrag.ts so that the
 * published declarations of Runtime name no heap or WebAssembly type.
 *
 * The forwarding table (step 3) is the map: every source block of the call gets a slab;
 * entry slab × 32 + slot is the final handle of the object that had that slot before
 * the call (0: none). Source blocks of one call are distinct (a source is retired, and
 * defrag takes no block from `free`), so each handle of before the call names at most one
 * entry.
 */
import { SmmoError } from './errors.js';
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
  /**
   * Threads the copy and rewrite phases could run on: 1 for Runtime.defrag, the runtime's
   * threads for Runtime.parallelDefrag (a phase smaller than inlineBlocks lanes runs on the
   * calling thread alone). Everything else but the times is the same for any value.
   */
  threads: number;
  passes: number;
  /** Objects whose handle changed (remap changes exactly theirs). */
  objectsMoved: number;
  /** Object copies (an object that moves in two passes counts twice). */
  copies: number;
  blocksFreed: number;
  /** Per phase: scan (candidates and records), copy (reservations and field copies), rewrite (references), update (sources retired). */
  ms: { scan: number; copy: number; rewrite: number; update: number; total: number };
  classes: Record<string, DefragClassStats>;
  /**
   * Which lanes ran the copy and rewrite phases on the CPU: absent when both ran as
   * TypeScript lanes (runtime/defrag-lanes.ts) or nothing moved; on a runtime of backend
   * 'wasm', { copy: 'ts', rewrite: 'wasm' }: the rewrite ran as WebAssembly lanes
   * (runtime/defrag-wasm.ts; a call whose moved classes do not all have a forwarding
   * column, V1, rewrites on the TypeScript lanes). Everything else but the times is the
   * same either way.
   */
  lanes?: { copy: 'ts'; rewrite: 'wasm' };
  /** Where the copy and rewrite phases ran: absent on the CPU; 'webgpu' on the heap's GPU copy (runtime/webgpu/gpu-defrag.ts). */
  device?: 'webgpu';
  /** Backend 'webgpu': bytes that crossed the bus (metadata and block headers; the objects' data stays on the GPU). */
  transfer?: { downloadBytes: number; uploadBytes: number; fullUploads: number };
}

/** What a call that moves objects returns (defrag, reorder): its statistics and the handle map (F2). */
export abstract class MovedObjects<S extends { readonly objectsMoved: number }> {
  /** @internal */
  constructor(
    readonly stats: S,
    private readonly table: ForwardTable,
  ) {}

  /**
   * The handle after the call of the object that had handle `h` before it: the same
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

/** The result of Runtime.defrag: statistics and the handle map (F2). */
export class DefragResult extends MovedObjects<DefragStats> {}

/**
 * defrag or parallelDefrag could not plan its next pass (out of memory: runtime/defrag.ts
 * F5). The passes before it are done and every reference to the objects they moved is
 * rewritten: the heap is consistent. `result` is what a finished call returns, for those
 * passes: apply its `remap` to the handles kept outside the heap.
 */
export class DefragStoppedError extends SmmoError {
  constructor(
    readonly result: DefragResult,
    cause: unknown,
  ) {
    const passes = result.stats.passes;
    super(
      `defrag stopped after ${passes} pass${passes === 1 ? '' : 'es'}: ` +
        `${cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause)}. The objects moved so far are in ` +
        `their new slots and every reference to them is rewritten; apply error.result.remap(h) to handles kept ` +
        `outside the heap, free memory (or create the runtime with a smaller heap) and call defrag again.`,
      { cause },
    );
  }
}

/**
 * @internal (3) The forwarding table of one call, copied out of the scratch buffer
 * (runtime/defrag-lanes.ts): `record` maps a block that was a source to its slab; entry
 * slab × 32 + slot is the final handle of the object that had that handle before the call
 * (0: none).
 */
export class ForwardTable {
  constructor(
    private readonly record: Int32Array,
    private readonly entries: Uint32Array,
  ) {}

  /** The final handle of the object that had handle `h` before the call; 0 if it did not move. */
  lookup(h: number): number {
    const r = this.record[h >>> SLOT_BITS];
    return r === undefined || r < 0 ? 0 : this.entries[r * 32 + (h & 31)]!;
  }
}

/** Per concrete class: what one reorder call did. */
export interface ReorderClassStats {
  /** Live objects (all of them are in key order afterwards). */
  objects: number;
  /** Objects whose handle changed (remap changes exactly theirs). */
  objectsMoved: number;
  blocksBefore: number;
  blocksAfter: number;
}

/** What one reorder call did (runtime/reorder.ts); times in milliseconds. */
export interface ReorderStats {
  /** The field the objects were ordered by. */
  field: string;
  objectsMoved: number;
  blocksFreed: number;
  /** Per phase: sort (collect and sort the keys), copy (take slots, copy objects, release), rewrite (references). */
  ms: { sort: number; copy: number; rewrite: number; total: number };
  classes: Record<string, ReorderClassStats>;
}

/** The result of Runtime.reorder: statistics and the handle map (as DefragResult's). */
export class ReorderResult extends MovedObjects<ReorderStats> {}
