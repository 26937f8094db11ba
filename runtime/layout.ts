/**
 * The heap layout: the single source of truth for every byte offset.
 * TypeScript reads these constants directly; the Rust side (the allocator core and the
 * kernels) and the WGSL shaders get them from `layoutConstants()` (wasm/src/layout.rs is
 * generated from it, and a test checks it), and the per-class field offsets as arguments,
 * computed here.
 *
 * Heap (one shared WebAssembly.Memory; paper §3):
 *
 *   0            RESERVED_BYTES   HEADER     bitmaps            types   states   BLOCK_LIST     blocksOffset
 *   ┌────────────┬────────────────┬──────────────────────────┬───────┬────────┬──────────────┬──────────────────────────┐
 *   │ WASM static│ heap header    │ free, allocated[t],      │ type  │ alloc. │ block list R │ block 0 (reserved: null) │
 *   │ data, stack│ HEADER_WORDS×u32│ active[t] (hierarchical) │ table │ states │ numBlocks×u32│ block 1 … block M-1      │
 *   └────────────┴────────────────┴──────────────────────────┴───────┴────────┴──────────────┴──────────────────────────┘
 *
 * Block list R (numBlocks u32): scratch, written anew by whoever uses it: a do-all pass's
 * list of blocks (ThreadContext.snapshot), a deviceDo's; a defrag call on backend 'wasm'
 * (between do-alls) keeps one forwarding mask per block there (runtime/defrag-wasm.ts).
 *
 * Header words (u32, from HEADER_OFFSET): H_MAGIC … H_BLOCK_LIST_OFFSET describe the heap;
 * H_ALLOC_FLAGS … H_STATE_CLAIM are the allocator descriptor the Rust core reads (flags:
 * atomic, rotation, coalescing, BitmapAlloc; kept blocks per type; where the free bitmap,
 * the type table and the states are; the level structure of every block bitmap, all of
 * which have numBlocks bits; the claim bitmap of the states). Written once by
 * Heap.create, read-only afterwards (but the claim words). H_BLOCK_SET_EPOCH counts
 * changes of the block sets (below).
 *
 * Type table: TYPE_WORDS u32 per type id (T_*): word indices of allocated[t] and active[t],
 * highMask, slots (0 for an abstract type), and the byte offset within a block of the
 * type's per-slot generation array (T_GEN_OFFSET; 0: none, see TypeLayout.genOffset).
 *
 * Allocator states: one per thread that allocates (a ThreadContext, or an Allocator of the
 * tests), claimed through the header's claim bitmap and given back by dispose()/close().
 * A state is S_TYPES words of scalars (S_*: rotation seed, K5 flag, warp state, retry
 * limits, last error, D1 rollback log), TS_WORDS per type (TS_*: hint, kept count, K5
 * fresh flag, warp cache block and mask, C7 estimate), then `keepBlocks` kept-block entries per type,
 * rounded up to a 64-byte line so that no two threads' states share one. The host writes
 * S_SEED, S_SPIN, S_MAX_ATTEMPTS, and the warp words: S_WARP = 1 and S_LANES_LEFT at a
 * warp's begin, S_LANES_LEFT before each lane, both back to 0 at its end when no warp cache
 * holds slots (S_CACHED = 0; else it calls the core's warp end); the Rust core writes
 * everything else, S_WARP too within a warp (its mark of the last coalesced reservation,
 * wasm/src/alloc/core.rs C6: odd, never 0 or 1). How many states: allocatorStates(threads).
 *
 * Block (blockBytes, a multiple of 16; all blocks the same size):
 *
 *   +0   u32 allocation bitmap  bit s set = slot s taken. Bits ≥ N_T are pre-set (§5.2).
 *                               All ones = free or being invalidated (Alg. 7).
 *   +4   u32 iteration bitmap   live slots when the running do-all started (⊆ allocation).
 *   +8   u32 type id            concrete type of the block (meaningful while not free).
 *   +12  u32 generation         +1 at every initialisation: invalidation checks it, which
 *                               closes the block-ABA defect of the original (allocator.ts D2).
 *   +16  data segment           for each field, inherited fields first, for each element of
 *                               an inline array: an array of N_T values, 16-byte aligned
 *                               (one v128 load = 4 lanes of f32/i32).
 *        gen[N_T] (checked mode only, at the type's genOffset, after the fields): a hidden
 *                               u32 per slot, +1 at every release of the slot (allocator.ts
 *                               G1). Not a field: no accessor, not in state files, not zeroed
 *                               by create. A runtime that is not checked has none (genOffset
 *                               0), so checked and unchecked runtimes of the same classes have
 *                               different layouts (workers get `checked` in their config, and
 *                               the layout fingerprint includes genOffset).
 *
 * N_T (slots of type T): the smallest type gets 32 slots = one virtual warp; every other
 * type gets the largest N ≤ 32 whose data segment fits the same block size. Because every
 * SOA array is padded to 16 bytes, this can be *below* the paper's ⌊32·size(T_min)/size(T)⌋
 * (e.g. {u8} sets 32 data bytes; {f32, u8} then gets 4 slots, not ⌊32/5⌋ = 6; see
 * test/schema.test.ts). That is the paper's block size (§3) and the default, blockSize
 * 'smallest'. With blockSize 'largest' (RuntimeOptions.blockSize) the block is sized for
 * the type whose 32 objects take the most bytes, so every type gets N_T = 32, a full
 * virtual warp per block; the blocks of smaller types leave the rest of their data
 * segment unused (memory traded for fewer, fuller warps; docs/benchmarks.md "Block size").
 *
 * The BitmapAlloc variant (planTypes with bitmapAlloc; the paper's §7 baseline) lays out
 * every type with one slot per block and every block the size of the largest class: the
 * fields of the one object follow each other at their natural alignment (no SOA arrays),
 * so each block is one fixed-size chunk, found through the same hierarchical bitmaps.
 *
 * Handles: block index × 32 + slot, a u32; block 0 is never allocated, so handle 0 is
 * null. The type comes from the block header.
 */
import { bitmapWords } from './bitmap.js';
import { SchemaError, UsageError } from './errors.js';
import { KIND_BYTES, SmmoObject, ownSchema, type ScalarKind, type SmmoClass } from './schema.js';

// ------------------------------------------------------------------ constants

/** Layout version written to the header; bump on any change below. */
export const LAYOUT_VERSION = 2;
export const MAGIC = 0x4f4d4d53; // "SMMO" little-endian
/** Bytes at the start of memory left to the WebAssembly module (static data and stack). */
export const RESERVED_BYTES = 1 << 20;
export const HEADER_OFFSET = RESERVED_BYTES;
export const HEADER_WORDS = 64;

/** Header word indices (relative to HEADER_OFFSET / 4). */
export const H_MAGIC = 0;
export const H_VERSION = 1;
export const H_HEAP_BYTES = 2;
export const H_BLOCK_BYTES = 3;
export const H_NUM_BLOCKS = 4;
export const H_NUM_TYPES = 5;
export const H_BLOCKS_OFFSET = 6;
export const H_BLOCK_LIST_OFFSET = 7;

/** Allocator descriptor (header words, see the top of this file). ALLOC_FLAG_* bits. */
export const H_ALLOC_FLAGS = 8;
/** Emptied blocks a thread keeps per type (RuntimeOptions.keepBlocks). */
export const H_KEEP_BLOCKS = 9;
/** Word index (absolute) of the free bitmap, of the type table, of state 0. */
export const H_FREE_BITMAP_WORD = 10;
export const H_TYPE_TABLE_WORD = 11;
export const H_STATE_WORD = 12;
/** Words per state, and states planned. */
export const H_STATE_WORDS = 13;
export const H_NUM_STATES = 14;
/** Levels of a bitmap of numBlocks bits, their word offsets (MAX_BITMAP_LEVELS words) and level 0's words. */
export const H_BITMAP_LEVELS = 15;
export const H_LEVEL_OFFSETS = 16;
export const H_LEVEL0_WORDS = 22;
/** Claim bitmap of the states: MAX_ALLOC_STATES / 32 words. */
export const H_STATE_CLAIM = 24;
/**
 * The block-set epoch: a counter that changes whenever a block joins or leaves some
 * allocated[t] (the allocator core bumps it at each such change, on any thread) or
 * something other than a do-all's snapshot writes the block list R or the bitmaps on the
 * host (a defrag's forwarding masks, a GPU download, a heap snapshot put back: they call
 * Heap.blockSetChanged, which also counts the rewrite on the host). While it is unchanged,
 * the block lists a snapshot wrote are still the lists it would write
 * (ThreadContext.snapshotLists L1–L3). Alone on its 64-byte line (words 48–63): the
 * threads that open and retire blocks write it. Zero when a heap is created.
 */
export const H_BLOCK_SET_EPOCH = 48;

export const ALLOC_FLAG_ATOMIC = 1;
export const ALLOC_FLAG_ROTATION = 2;
export const ALLOC_FLAG_COALESCING = 4;
export const ALLOC_FLAG_BITMAP_ALLOC = 8;
/**
 * RuntimeOptions.allocator.ownFirstBlock: threads of a multi-threaded runtime open a block
 * of their own first in every pass (core.rs K5). Read by the host (runtime.ts, worker.ts),
 * which sets each thread's S_OWN_FIRST from it; the core reads S_OWN_FIRST.
 */
export const ALLOC_FLAG_OWN_FIRST = 32;
/** Debug tier 1 (SMMO_DEBUG ≥ 1): the core checks every block transition (wasm/src/alloc/core.rs "Block transitions"). */
export const ALLOC_FLAG_DEBUG = 16;
/** Levels of a block bitmap at most (2^30 blocks). */
export const MAX_BITMAP_LEVELS = 6;
export const MAX_ALLOC_STATES = 128;

/** Type table: words per type and their meaning. */
export const TYPE_WORDS = 8;
export const T_ALLOCATED_WORD = 0;
export const T_ACTIVE_WORD = 1;
export const T_HIGH_MASK = 2;
export const T_SLOTS = 3;
export const T_GEN_OFFSET = 4;

/** Allocator state: scalar words. */
export const S_SEED = 0;
export const S_OWN_FIRST = 1;
export const S_WARP = 2;
export const S_LANES_LEFT = 3;
export const S_CACHED = 4;
export const S_SPIN = 5;
export const S_MAX_ATTEMPTS = 6;
export const S_ERROR = 7;
export const S_ERROR_A = 8;
export const S_ERROR_B = 9;
export const S_ERROR_C = 10;
export const S_FULL = 11;
export const S_ROLLBACKS = 12;
export const S_ROLLBACK_LOG = 16;
export const ROLLBACK_LOG_WORDS = 8;
/** First per-type word of a state; type t's words are S_TYPES + t * TS_WORDS + TS_*. */
export const S_TYPES = 24;
export const TS_HINT = 0;
export const TS_KEPT = 1;
export const TS_FRESH = 2;
export const TS_CACHE_BLOCK = 3;
export const TS_CACHE_MASK = 4;
/** (core.rs C7) On a heap of several threads: objects of the type the thread's last warp that created any took. */
export const TS_WANT = 5;
export const TS_WORDS = 6;

/** Error codes of the allocator core (S_ERROR) and the operations a ContentionError names. */
export const ALLOC_ERR_EXHAUSTED = 1;
export const ALLOC_ERR_FORGED_BLOCK = 2;
export const ALLOC_ERR_FORGED_SLOT = 3;
export const ALLOC_ERR_FREE_BLOCK = 4;
export const ALLOC_ERR_DELETED = 5;
export const ALLOC_ERR_CONTENTION = 6;
export const ALLOC_ERR_CORRUPT = 7;
export const ALLOC_ERR_BAD_TYPE = 8;
/** A block transition found the block's header and bitmap bits disagreeing (debug tier 1): a = block, b = TR_* transition, c = TRF_* bits of what disagreed. */
export const ALLOC_ERR_TRANSITION = 9;
/** Block transitions (ALLOC_ERR_TRANSITION's b): FREE→ACTIVE, ACTIVE→FULL, FULL→ACTIVE, ACTIVE→FREE, a kept block reopened. */
export const TR_OPEN = 1;
export const TR_FULL = 2;
export const TR_FIRST = 3;
export const TR_RETIRE = 4;
export const TR_REOPEN = 5;
/** What disagreed (ALLOC_ERR_TRANSITION's c, bits): the allocation bitmap, the type word, the free, allocated[T] and active[T] bits. */
export const TRF_ALLOC = 1;
export const TRF_TYPE = 2;
export const TRF_FREE = 4;
export const TRF_ALLOCATED = 8;
export const TRF_ACTIVE = 16;
export const ALLOC_OP_ALLOCATE = 1;
export const ALLOC_OP_ALLOCATE_MANY = 2;
export const ALLOC_OP_RESERVE = 3;
export const ALLOC_OP_RESERVE_MANY = 4;
export const ALLOC_OP_INVALIDATE = 5;
export const ALLOC_OP_BITMAP_SET = 6;
export const ALLOC_OP_BITMAP_CLEAR = 7;
export const ALLOC_OP_FIND_AND_CLEAR = 8;

/** Block header, in 32-bit words from the block's start. */
export const BLOCK_ALLOC_WORD = 0;
export const BLOCK_ITER_WORD = 1;
export const BLOCK_TYPE_WORD = 2;
export const BLOCK_GEN_WORD = 3;
export const BLOCK_HEADER_BYTES = 16;
export const BLOCK_DATA_OFFSET = BLOCK_HEADER_BYTES;

/** Slots per block at most: one u32 bitmap, one virtual warp. */
export const MAX_SLOTS = 32;
export const SLOT_BITS = 5;
export const ARRAY_ALIGN = 16;
export const NULL_HANDLE = 0;
/** Allocation bitmap of a free (or invalidated) block. */
export const ALL_ONES = -1;
/** Type id stored in the header of a free block. */
export const FREE_TYPE = -1;

/** The constants the Rust and WGSL sides need, by name. */
export function layoutConstants(): Record<string, number> {
  return {
    LAYOUT_VERSION,
    RESERVED_BYTES,
    BLOCK_ALLOC_WORD,
    BLOCK_ITER_WORD,
    BLOCK_TYPE_WORD,
    BLOCK_GEN_WORD,
    BLOCK_DATA_OFFSET,
    MAX_SLOTS,
    SLOT_BITS,
    ARRAY_ALIGN,
    NULL_HANDLE,
    // ALL_ONES and FREE_TYPE as u32 words (the WGSL prelude declares its own u32 ALL_ONES/FREE_TYPE)
    U32_ALL_ONES: ALL_ONES >>> 0,
    U32_FREE_TYPE: FREE_TYPE >>> 0,
    H_NUM_BLOCKS,
    H_NUM_TYPES,
    H_BLOCK_BYTES,
    H_BLOCKS_OFFSET,
    H_ALLOC_FLAGS,
    H_KEEP_BLOCKS,
    H_FREE_BITMAP_WORD,
    H_TYPE_TABLE_WORD,
    H_STATE_WORD,
    H_STATE_WORDS,
    H_NUM_STATES,
    H_BITMAP_LEVELS,
    H_LEVEL_OFFSETS,
    H_LEVEL0_WORDS,
    H_STATE_CLAIM,
    H_BLOCK_SET_EPOCH,
    ALLOC_FLAG_ATOMIC,
    ALLOC_FLAG_ROTATION,
    ALLOC_FLAG_COALESCING,
    ALLOC_FLAG_BITMAP_ALLOC,
    ALLOC_FLAG_DEBUG,
    ALLOC_FLAG_OWN_FIRST,
    MAX_BITMAP_LEVELS,
    MAX_ALLOC_STATES,
    TYPE_WORDS,
    T_ALLOCATED_WORD,
    T_ACTIVE_WORD,
    T_HIGH_MASK,
    T_SLOTS,
    T_GEN_OFFSET,
    S_SEED,
    S_OWN_FIRST,
    S_WARP,
    S_LANES_LEFT,
    S_CACHED,
    S_SPIN,
    S_MAX_ATTEMPTS,
    S_ERROR,
    S_ERROR_A,
    S_ERROR_B,
    S_ERROR_C,
    S_FULL,
    S_ROLLBACKS,
    S_ROLLBACK_LOG,
    ROLLBACK_LOG_WORDS,
    S_TYPES,
    TS_HINT,
    TS_KEPT,
    TS_FRESH,
    TS_CACHE_BLOCK,
    TS_CACHE_MASK,
    TS_WANT,
    TS_WORDS,
    ALLOC_ERR_EXHAUSTED,
    ALLOC_ERR_FORGED_BLOCK,
    ALLOC_ERR_FORGED_SLOT,
    ALLOC_ERR_FREE_BLOCK,
    ALLOC_ERR_DELETED,
    ALLOC_ERR_CONTENTION,
    ALLOC_ERR_CORRUPT,
    ALLOC_ERR_BAD_TYPE,
    ALLOC_ERR_TRANSITION,
    TR_OPEN,
    TR_FULL,
    TR_FIRST,
    TR_RETIRE,
    TR_REOPEN,
    TRF_ALLOC,
    TRF_TYPE,
    TRF_FREE,
    TRF_ALLOCATED,
    TRF_ACTIVE,
    ALLOC_OP_ALLOCATE,
    ALLOC_OP_ALLOCATE_MANY,
    ALLOC_OP_RESERVE,
    ALLOC_OP_RESERVE_MANY,
    ALLOC_OP_INVALIDATE,
    ALLOC_OP_BITMAP_SET,
    ALLOC_OP_BITMAP_CLEAR,
    ALLOC_OP_FIND_AND_CLEAR,
  };
}

const align = (n: number, a: number): number => Math.ceil(n / a) * a;

// ------------------------------------------------------------------ type layouts

export interface FieldLayout {
  readonly name: string;
  readonly kind: ScalarKind;
  /** 0 for a scalar, else the inline array's length. */
  readonly length: number;
  readonly elemBytes: number;
  /** Byte offset, within a block of this type, of each element's SOA array (1 for scalars). */
  readonly offsets: readonly number[];
  /** Reference target class (refs only). */
  readonly target?: () => SmmoClass;
  /** Name of the class that declared the field. */
  readonly declaredIn: string;
}

export interface TypeLayout {
  /** Index in the runtime's class table; concrete types' ids are written in block headers. */
  readonly id: number;
  readonly name: string;
  readonly cls: SmmoClass;
  readonly abstract: boolean;
  /** Registered superclass (nearest), if any. */
  readonly parent: TypeLayout | null;
  /** Slots per block (0 for abstract types). */
  readonly slots: number;
  /** Allocation-bitmap bits pre-set for slots that do not exist (bits ≥ slots). */
  readonly highMask: number;
  /** Bytes of field data per object. */
  readonly objectBytes: number;
  readonly fields: readonly FieldLayout[];
  /** Concrete type ids of this type and all its registered subclasses. */
  readonly concrete: readonly number[];
  /**
   * Byte offset, within a block of this type, of the hidden per-slot u32 generation array
   * (checked mode: stale-handle detection); 0 when the runtime is not checked, and for abstract
   * types. The allocator core increments slot s's entry on every successful release of slot s,
   * before the slot's bit is cleared (wasm/src/alloc/core.rs).
   */
  readonly genOffset: number;
}

interface RawField {
  name: string;
  kind: ScalarKind;
  length: number;
  target?: () => SmmoClass;
  targetName?: string;
  declaredIn: string;
}

/** Fields of `cls`, inherited first, from the schema classes on its prototype chain. */
function collectFields(cls: SmmoClass): RawField[] {
  const chain: object[] = [];
  for (let p: object | null = cls; p !== null && p !== SmmoObject; p = Object.getPrototypeOf(p) as object | null) {
    if (p === Function.prototype) {
      throw new SchemaError(`${cls.name} does not extend an smmo class (declare it with object({...}) or Base.extend({...}))`);
    }
    chain.unshift(p);
  }
  const out: RawField[] = [];
  const seen = new Map<string, string>();
  for (const p of chain) {
    const info = ownSchema(p);
    if (!info) continue;
    const owner = declaringName(chain, p) ?? cls.name;
    for (const [name, t] of Object.entries(info.fields)) {
      const prev = seen.get(name);
      if (prev !== undefined) throw new SchemaError(`${cls.name}: field '${name}' declared again (first declared by ${prev})`);
      seen.set(name, owner);
      const f: RawField = { name, kind: t.kind, length: t.length, declaredIn: owner };
      if (t.target) f.target = t.target;
      if (t.targetName) f.targetName = t.targetName;
      out.push(f);
    }
  }
  return out;
}

/**
 * A field must not have the name of a method (or getter, setter, property) of its class
 * or of an ancestor: the generated accessor would hide it, and a do-all of that method
 * would then call the field's value (`TypeError: cur.step is not a function`). TypeScript
 * reports most such clashes; plain JavaScript does not.
 */
function checkFieldNames(cls: SmmoClass, fields: readonly RawField[]): void {
  for (const f of fields) {
    for (let p = cls.prototype as object | null; p !== null && p !== SmmoObject.prototype; p = Object.getPrototypeOf(p) as object | null) {
      if (!Object.prototype.hasOwnProperty.call(p, f.name)) continue;
      const owner = (p as { constructor?: { name?: string } }).constructor?.name ?? cls.name;
      const d = Object.getOwnPropertyDescriptor(p, f.name)!;
      const what = typeof d.value === 'function' ? `method ${owner}.${f.name}()` : `member ${owner}.${f.name}`;
      throw new SchemaError(
        `${cls.name}: field '${f.name}' (declared by ${f.declaredIn}) has the name of ${what}; the field's accessor would hide ` +
          `it: rename the field or the ${typeof d.value === 'function' ? 'method' : 'member'}`,
      );
    }
  }
}

/** The user class that a schema class serves: the next class down the chain. */
function declaringName(chain: object[], schemaClass: object): string | undefined {
  const user = chain[chain.indexOf(schemaClass) + 1] as { name?: string } | undefined;
  return user?.name;
}

function isAbstract(cls: SmmoClass): boolean {
  const info = ownSchema(Object.getPrototypeOf(cls) as object);
  return info?.abstract === true;
}

/** Data-segment bytes of `n` objects with these fields (and, checked, their generation array). */
function dataBytes(fields: readonly RawField[], n: number, checked: boolean): number {
  let bytes = checked ? align(n * 4, ARRAY_ALIGN) : 0;
  for (const f of fields) bytes += Math.max(1, f.length) * align(n * KIND_BYTES[f.kind], ARRAY_ALIGN);
  return bytes;
}

/**
 * Which class a block is sized for (RuntimeOptions.blockSize): 'smallest', the paper's
 * (§3): the smallest class fills 32 slots, larger ones get fewer; 'largest': the largest
 * class fills 32 slots, so every class gets 32 (a full virtual warp per block).
 */
export type BlockSizePolicy = 'smallest' | 'largest';

export const BLOCK_SIZE_POLICIES: readonly BlockSizePolicy[] = ['smallest', 'largest'];

export interface TypeTable {
  readonly types: readonly TypeLayout[];
  readonly blockBytes: number;
  /** Which class the block is sized for (ignored by BitmapAlloc, whose blocks hold one object of the largest class). */
  readonly blockSize: BlockSizePolicy;
  /** Laid out for the BitmapAlloc variant: one slot per block, fields at their natural alignment. */
  readonly bitmapAlloc: boolean;
  /** Concrete type ids in table order. */
  readonly concreteIds: readonly number[];
  byClass(cls: SmmoClass): TypeLayout | undefined;
}

/** Data-segment bytes of one object with these fields at their natural alignment (BitmapAlloc). */
function packedBytes(fields: readonly RawField[]): number {
  let at = BLOCK_DATA_OFFSET;
  for (const f of fields) {
    const b = KIND_BYTES[f.kind];
    at = align(at, b) + Math.max(1, f.length) * b;
  }
  return at - BLOCK_DATA_OFFSET;
}

export interface PlanTypesOptions {
  /** Checked mode: give each concrete type the hidden generation array (genOffset). */
  checked?: boolean;
  /**
   * The BitmapAlloc variant (the baseline of the paper's §7): every type gets one slot per
   * block and every block the size of the largest class, its fields one after another at
   * their natural alignment. Default false: DynaSOAr's SOA blocks.
   */
  bitmapAlloc?: boolean;
  /** Which class fills a block's 32 slots (BlockSizePolicy). Default 'smallest'. */
  blockSize?: BlockSizePolicy;
}

/** A class as read from its declaration, before it has a layout. */
interface RawClass {
  readonly cls: SmmoClass;
  readonly fields: RawField[];
  readonly abstract: boolean;
}

/**
 * Compute every class's block layout. `classes` must include every abstract ancestor used.
 * The steps, in order: read and check the classes (readClasses), size the block by the
 * smallest concrete class (blockSize), lay out each class in it (layoutType), link parents
 * and subclass sets (linkTypes), check every reference target (checkTargets).
 */
export function planTypes(classes: readonly SmmoClass[], options: PlanTypesOptions = {}): TypeTable {
  const bitmapAlloc = options.bitmapAlloc === true;
  const checked = options.checked === true;
  const policy = options.blockSize ?? 'smallest';
  if (!BLOCK_SIZE_POLICIES.includes(policy))
    throw new UsageError(`blockSize must be one of ${BLOCK_SIZE_POLICIES.map((p) => `'${p}'`).join(', ')}, got ${String(policy)}`);
  const raw = readClasses(classes);
  const blockBytes = blockSize(
    raw.filter((r) => !r.abstract),
    bitmapAlloc,
    checked,
    policy,
  );
  const types = raw.map((r, id) => layoutType(r, id, blockBytes, bitmapAlloc, checked));
  const byCls = new Map<SmmoClass, TypeLayout>(types.map((t) => [t.cls, t]));
  linkTypes(types, byCls);
  checkTargets(types, byCls);
  return {
    types,
    blockBytes,
    blockSize: policy,
    bitmapAlloc,
    concreteIds: types.filter((t) => !t.abstract).map((t) => t.id),
    byClass: (cls) => byCls.get(cls),
  };
}

/**
 * The classes' fields, with references declared by class name (ref<Cell>('Cell')) resolved
 * among `classes`; UsageError/SchemaError for no classes, a non-class, a duplicate name, an
 * unknown target name, a bad field name, no concrete class, a concrete class without fields.
 */
function readClasses(classes: readonly SmmoClass[]): RawClass[] {
  if (classes.length === 0) throw new UsageError('a runtime needs at least one class');
  const names = new Set<string>();
  for (const c of classes) {
    if (typeof c !== 'function') throw new UsageError(`classes: ${String(c)} is not a class`);
    if (names.has(c.name)) throw new UsageError(`classes: two classes are named '${c.name}'; class names must be unique`);
    names.add(c.name);
  }
  const raw: RawClass[] = classes.map((c) => ({ cls: c, fields: collectFields(c), abstract: isAbstract(c) }));
  const byName = new Map(classes.map((c) => [c.name, c]));
  for (const r of raw) {
    for (const f of r.fields) {
      const name = f.targetName;
      if (name === undefined) continue;
      const target = byName.get(name);
      if (!target) {
        throw new SchemaError(
          `${r.cls.name}.${f.name} refers to class '${name}', which is not in the runtime's classes (${[...byName.keys()].join(', ')})`,
        );
      }
      f.target = () => target;
    }
  }
  for (const r of raw) checkFieldNames(r.cls, r.fields);
  const concrete = raw.filter((r) => !r.abstract);
  if (concrete.length === 0) throw new UsageError('classes: every class is abstract; at least one must be concrete');
  for (const r of concrete) {
    if (r.fields.length === 0) throw new SchemaError(`${r.cls.name} has no fields; give it at least one field`);
  }
  return raw;
}

/**
 * Bytes of a block: the smallest concrete class gets MAX_SLOTS slots ('smallest'), or the
 * one whose MAX_SLOTS objects take the most bytes, so that every class gets MAX_SLOTS
 * ('largest'); BitmapAlloc: the largest class gets one.
 */
function blockSize(concrete: readonly RawClass[], bitmapAlloc: boolean, checked: boolean, policy: BlockSizePolicy): number {
  let dataCapacity = 0;
  let smallest = Infinity;
  for (const r of concrete) {
    if (bitmapAlloc) {
      // Checked: the generation word after the fields, 4-byte aligned (≤ 3 bytes of padding).
      dataCapacity = Math.max(dataCapacity, packedBytes(r.fields) + (checked ? 7 : 0));
      continue;
    }
    if (policy === 'largest') {
      dataCapacity = Math.max(dataCapacity, dataBytes(r.fields, MAX_SLOTS, checked));
      continue;
    }
    const perObject = r.fields.reduce((a, f) => a + Math.max(1, f.length) * KIND_BYTES[f.kind], 0);
    if (perObject < smallest) {
      smallest = perObject;
      dataCapacity = dataBytes(r.fields, MAX_SLOTS, checked);
    }
  }
  return align(BLOCK_DATA_OFFSET + dataCapacity, ARRAY_ALIGN);
}

/**
 * One class's layout in a block of `blockBytes`: its slots (as many as fit, at most
 * MAX_SLOTS; BitmapAlloc: 1), each field's array offsets (SOA: one 16-byte-aligned array per
 * field element; BitmapAlloc: fields one after another), the generation array in checked
 * mode. Parent and subclass set are filled in by linkTypes.
 */
function layoutType(r: RawClass, id: number, blockBytes: number, bitmapAlloc: boolean, checked: boolean): TypeLayout {
  const capacity = blockBytes - BLOCK_DATA_OFFSET;
  let slots = 0;
  if (!r.abstract && bitmapAlloc) slots = 1;
  else if (!r.abstract) {
    for (let n = MAX_SLOTS; n >= 1; n--) {
      if (dataBytes(r.fields, n, checked) <= capacity) {
        slots = n;
        break;
      }
    }
    if (slots === 0) {
      throw new SchemaError(
        `${r.cls.name} is more than ${MAX_SLOTS}× larger than the smallest class; one object does not fit a block of ${blockBytes} bytes`,
      );
    }
  }
  const layoutN = Math.max(slots, 1);
  let at = BLOCK_DATA_OFFSET;
  const fields: FieldLayout[] = r.fields.map((f) => {
    const elemBytes = KIND_BYTES[f.kind];
    const arrays = Math.max(1, f.length);
    const offsets: number[] = [];
    for (let k = 0; k < arrays; k++) {
      if (bitmapAlloc) {
        at = align(at, elemBytes);
        offsets.push(at);
        at += elemBytes;
        continue;
      }
      offsets.push(at);
      at += align(layoutN * elemBytes, ARRAY_ALIGN);
    }
    return {
      name: f.name,
      kind: f.kind,
      length: f.length,
      elemBytes,
      offsets,
      declaredIn: f.declaredIn,
      ...(f.target ? { target: f.target } : {}),
    };
  });
  let genOffset = 0;
  if (checked && !r.abstract) {
    genOffset = bitmapAlloc ? align(at, 4) : at;
    at = genOffset + (bitmapAlloc ? 4 : align(layoutN * 4, ARRAY_ALIGN));
  }
  return {
    id,
    name: r.cls.name,
    cls: r.cls,
    abstract: r.abstract,
    parent: null,
    slots,
    highMask: slots >= 32 ? 0 : ~((1 << slots) - 1),
    objectBytes: r.fields.reduce((a, f) => a + Math.max(1, f.length) * KIND_BYTES[f.kind], 0),
    fields,
    concrete: [],
    genOffset,
  };
}

/** Each type's nearest registered ancestor (parent) and its concrete subclasses, itself included (concrete). */
function linkTypes(types: readonly TypeLayout[], byCls: ReadonlyMap<SmmoClass, TypeLayout>): void {
  for (const t of types) {
    let p = Object.getPrototypeOf(t.cls) as SmmoClass | null;
    while (p && p !== (SmmoObject as unknown) && !byCls.has(p)) p = Object.getPrototypeOf(p) as SmmoClass | null;
    (t as { parent: TypeLayout | null }).parent = p && byCls.has(p) ? byCls.get(p)! : null;
  }
  for (const t of types) {
    const concrete = types.filter((u) => !u.abstract && (u.cls === t.cls || u.cls.prototype instanceof t.cls)).map((u) => u.id);
    (t as unknown as { concrete: number[] }).concrete = concrete;
  }
}

/** Every reference target must be one of the runtime's classes (SchemaError otherwise). */
function checkTargets(types: readonly TypeLayout[], byCls: ReadonlyMap<SmmoClass, TypeLayout>): void {
  for (const t of types) {
    for (const f of t.fields) {
      if (!f.target) continue;
      let target: SmmoClass;
      try {
        target = f.target();
      } catch (e) {
        throw new SchemaError(`${t.name}.${f.name}: its reference target could not be resolved`, { cause: e });
      }
      if (!byCls.has(target)) {
        throw new SchemaError(`${t.name}.${f.name} refers to ${target?.name ?? String(target)}, which is not in the runtime's classes`);
      }
    }
  }
}

// ------------------------------------------------------------------ heap plan

export interface HeapPlan {
  readonly heapBytes: number;
  readonly blockBytes: number;
  /** Blocks, including the reserved block 0. */
  readonly numBlocks: number;
  readonly blocksOffset: number;
  readonly blockListOffset: number;
  /** Word index of the free-block bitmap. */
  readonly freeBitmapWord: number;
  /** Word index of allocated[t] / active[t] per type id (-1 for abstract types). */
  readonly allocatedBitmapWord: readonly number[];
  readonly activeBitmapWord: readonly number[];
  /** Word index of the type table (TYPE_WORDS per type id). */
  readonly typeTableWord: number;
  /** Word index of allocator state 0, words per state, and how many states. */
  readonly stateWord: number;
  readonly stateWords: number;
  readonly states: number;
  /** Emptied blocks each thread keeps per type (the states' kept stacks). */
  readonly keepBlocks: number;
}

/** Default of RuntimeOptions.keepBlocks: emptied blocks a thread keeps per type (allocator K1). */
export const DEFAULT_KEEP_BLOCKS = 32;

/**
 * Allocator states a heap for `threads` threads plans: one per thread, one spare per
 * thread for a worker that piscina starts in place of one that died (it may claim its state
 * before the pool has given the dead thread's back: workers/pool.ts), and 6 more for other allocators on the same heap (the tests run
 * several on one thread); at most MAX_ALLOC_STATES. Each costs
 * stateWordsFor(types, keepBlocks) words (704 bytes for 4 types and 32 kept blocks).
 */
export function allocatorStates(threads: number): number {
  return Math.min(MAX_ALLOC_STATES, 2 * threads + 6);
}

/** Words of one allocator state: S_TYPES scalars, TS_WORDS and a kept stack per type, whole 64-byte lines. */
export function stateWordsFor(types: number, keepBlocks: number): number {
  return align(S_TYPES + types * (TS_WORDS + keepBlocks), 16);
}

export interface PlanHeapOptions {
  /** Allocator states (default allocatorStates(1)). */
  states?: number;
  /** Kept blocks per type and thread (default DEFAULT_KEEP_BLOCKS; the BitmapAlloc layout keeps none). */
  keepBlocks?: number;
}

export const MIN_HEAP_BYTES = RESERVED_BYTES + 64 * 1024;
export const MAX_HEAP_BYTES = 65536 * 65535; // wasm32 memory limit less one page

/** Place bitmaps, type table, allocator states, block list and blocks in a heap of `heapBytes`. */
export function planHeap(heapBytes: number, table: TypeTable, options: PlanHeapOptions = {}): HeapPlan {
  if (!Number.isInteger(heapBytes) || heapBytes < MIN_HEAP_BYTES || heapBytes > MAX_HEAP_BYTES) {
    throw new UsageError(`heap size ${heapBytes} bytes is out of range: use ${MIN_HEAP_BYTES} … ${MAX_HEAP_BYTES} bytes (e.g. 64MB, 1GB)`);
  }
  const nTypes = table.types.length;
  const nConcrete = table.concreteIds.length;
  const keepBlocks = table.bitmapAlloc ? 0 : (options.keepBlocks ?? DEFAULT_KEEP_BLOCKS);
  const states = options.states ?? allocatorStates(1);
  if (!Number.isInteger(keepBlocks) || keepBlocks < 0 || keepBlocks > 1024)
    throw new UsageError(`keepBlocks must be an integer from 0 to 1024, got ${keepBlocks}`);
  if (!Number.isInteger(states) || states < 1 || states > MAX_ALLOC_STATES)
    throw new UsageError(`a heap holds 1 … ${MAX_ALLOC_STATES} allocator states, got ${states}`);
  const stateWords = stateWordsFor(nTypes, keepBlocks);
  // Word index of state 0 and byte offset of block 0 for m blocks (exact, alignment included).
  const stateWordFor = (m: number): number =>
    align((HEADER_OFFSET >> 2) + HEADER_WORDS + (1 + 2 * nConcrete) * bitmapWords(m) + nTypes * TYPE_WORDS, 16);
  const overheadFor = (m: number): number => align((stateWordFor(m) + states * stateWords) * 4 + m * 4, 64);
  const fixed = HEADER_OFFSET + HEADER_WORDS * 4 + nTypes * TYPE_WORDS * 4 + states * stateWords * 4;
  let m = Math.floor((heapBytes - fixed) / (table.blockBytes + 4 + (1 + 2 * nConcrete) / 7));
  while (m > 0 && overheadFor(m) + m * table.blockBytes > heapBytes) m--;
  // The estimate over-counts bitmap bytes per block; take every block that still fits
  // (fix: large heaps lost ~0.02% of their blocks, e.g. 603 of 2.9 M in 1 GB).
  while (overheadFor(m + 1) + (m + 1) * table.blockBytes <= heapBytes) m++;
  if (m < 2) {
    throw new UsageError(`heap size ${heapBytes} bytes holds no block of ${table.blockBytes} bytes; use a larger heap`);
  }
  let word = (HEADER_OFFSET >> 2) + HEADER_WORDS;
  const freeBitmapWord = word;
  word += bitmapWords(m);
  const allocatedBitmapWord: number[] = new Array<number>(nTypes).fill(-1);
  const activeBitmapWord: number[] = new Array<number>(nTypes).fill(-1);
  for (const id of table.concreteIds) {
    allocatedBitmapWord[id] = word;
    word += bitmapWords(m);
    activeBitmapWord[id] = word;
    word += bitmapWords(m);
  }
  const typeTableWord = word;
  word += nTypes * TYPE_WORDS;
  const stateWord = align(word, 16); // states start on a 64-byte line
  if (stateWord !== stateWordFor(m)) throw new Error('planHeap: state region misplaced (a bug)');
  word = stateWord + states * stateWords;
  const blockListOffset = word * 4;
  const blocksOffset = align(blockListOffset + m * 4, 64);
  return {
    heapBytes,
    blockBytes: table.blockBytes,
    numBlocks: m,
    blocksOffset,
    blockListOffset,
    freeBitmapWord,
    allocatedBitmapWord,
    activeBitmapWord,
    typeTableWord,
    stateWord,
    stateWords,
    states,
    keepBlocks,
  };
}
