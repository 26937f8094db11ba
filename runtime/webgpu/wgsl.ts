/**
 * WGSL sources: loading the .wgsl files, and the generated prelude that gives every
 * kernel the heap layout as WGSL constants.
 *
 * One description: the prelude is generated from runtime/layout.ts (`layoutConstants()`
 * and the heap plan / type table of the running heap), never written by hand, so the
 * GPU copy of the heap has exactly the host's layout. Per-class field offsets are not in
 * the prelude: kernels declare `override F_<field>: u32` (byte offset of the field's
 * SOA array within a block) and the runner fills them in from the TypeLayout.
 * test/webgpu-layout.test.ts checks that prelude and layout agree.
 *
 * GPU buffer coordinates: the heap's GPU copy holds heap bytes [GPU_BASE_BYTES, end),
 * GPU_BASE_BYTES = HEADER_OFFSET (the WebAssembly module's reserved first megabyte is
 * not uploaded). "Buffer words" (BW_*) are (heap byte offset − GPU_BASE_BYTES) / 4.
 *
 * Where the .wgsl files are: runtime/webgpu/wgsl/. From the TypeScript source
 * (runtime/webgpu/wgsl.ts) that is ./wgsl/; from the tsc build (dist/runtime/webgpu/
 * wgsl.js) it is ../../../runtime/webgpu/wgsl/. Both are tried, so the build needs no
 * copy step; a package must ship runtime/webgpu/wgsl/ (package.json "files").
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { bitmapLevelWords } from '../bitmap.js';
import { UsageError } from '../errors.js';
import type { Heap } from '../heap.js';
import { HEADER_OFFSET, layoutConstants } from '../layout.js';

let dirCache: string | null = null;

/** Absolute path of the folder holding the .wgsl files. */
export function wgslDir(): string {
  if (dirCache !== null) return dirCache;
  const candidates = [new URL('./wgsl/', import.meta.url), new URL('../../../runtime/webgpu/wgsl/', import.meta.url)].map((u) =>
    fileURLToPath(u),
  );
  for (const c of candidates) {
    if (existsSync(`${c}nbody_compute_force.wgsl`)) {
      dirCache = c;
      return c;
    }
  }
  throw new UsageError(
    `the WGSL kernels were not found (looked in ${candidates.join(' and ')}); reinstall smmo or rebuild from a full checkout`,
  );
}

const fileCache = new Map<string, string>();

/** The text of runtime/webgpu/wgsl/<name>. */
export function loadWgsl(name: string): string {
  let s = fileCache.get(name);
  if (s === undefined) {
    const path = wgslDir() + name;
    if (!existsSync(path)) throw new UsageError(`WGSL file ${name} not found in ${wgslDir()}`);
    s = readFileSync(path, 'utf8');
    fileCache.set(name, s);
  }
  return s;
}

/** First heap byte that the GPU copy holds. */
export const GPU_BASE_BYTES = HEADER_OFFSET;

/** Values of the prelude's heap constants (also what the layout test compares). */
export interface PreludeValues {
  readonly layout: Record<string, number>;
  readonly scalars: Record<string, number>;
  readonly arrays: Record<string, readonly number[]>;
}

const u32 = (n: number): number => n >>> 0;

/** The constants of the prelude for this heap, by name. */
export function preludeValues(heap: Heap): PreludeValues {
  const plan = heap.plan;
  const types = heap.table.types;
  const word = (byteOffset: number): number => (byteOffset - GPU_BASE_BYTES) / 4;
  const levelWords = bitmapLevelWords(heap.numBlocks);
  const levelOff: number[] = [];
  let at = 0;
  for (const w of levelWords) {
    levelOff.push(at);
    at += w;
  }
  // Zero plan: for each type, pairs (byte offset of an SOA array, element bytes).
  const zeroStart: number[] = [];
  const zeroPlan: number[] = [];
  for (const t of types) {
    zeroStart.push(zeroPlan.length / 2);
    for (const f of t.fields) for (const off of f.offsets) zeroPlan.push(off, f.elemBytes);
  }
  zeroStart.push(zeroPlan.length / 2);
  return {
    layout: layoutConstants(),
    scalars: {
      GPU_BASE_BYTES,
      HEAP_BYTES: plan.heapBytes,
      GPU_HEAP_BYTES: plan.heapBytes - GPU_BASE_BYTES,
      BLOCK_BYTES: plan.blockBytes,
      BLOCK_WORDS: plan.blockBytes / 4,
      NUM_BLOCKS: plan.numBlocks,
      NUM_TYPES: types.length,
      BW_HEADER: word(HEADER_OFFSET),
      BW_BLOCKS: word(plan.blocksOffset),
      BW_BLOCK_LIST: word(plan.blockListOffset),
      BW_FREE_BM: plan.freeBitmapWord - GPU_BASE_BYTES / 4,
      BM_LEVELS: levelWords.length,
      BM_L0_WORDS: levelWords[0]!,
      FREE_TYPE: 0xffffffff,
      ALL_ONES: 0xffffffff,
      NONE: 0xffffffff,
    },
    arrays: {
      BM_LEVEL_OFF: levelOff,
      TYPE_SLOTS: types.map((t) => t.slots),
      TYPE_HIGH_MASK: types.map((t) => u32(t.highMask)),
      // 0xffffffff for abstract types (they have no blocks).
      BW_ALLOCATED_BM: types.map((t) => (t.abstract ? 0xffffffff : plan.allocatedBitmapWord[t.id]! - GPU_BASE_BYTES / 4)),
      BW_ACTIVE_BM: types.map((t) => (t.abstract ? 0xffffffff : plan.activeBitmapWord[t.id]! - GPU_BASE_BYTES / 4)),
      ZERO_START: zeroStart,
      ZERO_PLAN: zeroPlan.length > 0 ? zeroPlan : [0, 0],
    },
  };
}

const lit = (n: number): string => {
  if (!Number.isInteger(n) || n < 0 || n > 0xffffffff) throw new UsageError(`WGSL prelude: ${n} is not a u32`);
  return `${n}u`;
};

/** WGSL source of the prelude for this heap. */
export function wgslPrelude(heap: Heap): string {
  const v = preludeValues(heap);
  const lines = ['// Generated by runtime/webgpu/wgsl.ts from runtime/layout.ts for one heap. Do not edit.', '// layoutConstants()'];
  for (const [k, n] of Object.entries(v.layout)) lines.push(n < 0 ? `const ${k}: i32 = ${n}i;` : `const ${k}: u32 = ${lit(n)};`);
  lines.push('// heap plan and type table (BW_*: buffer words, heap byte offset - GPU_BASE_BYTES, / 4)');
  for (const [k, n] of Object.entries(v.scalars)) if (!(k in v.layout)) lines.push(`const ${k}: u32 = ${lit(n)};`);
  for (const [k, a] of Object.entries(v.arrays)) lines.push(`const ${k} = array<u32, ${a.length}>(${a.map(lit).join(', ')});`);
  lines.push(
    'const BM_TOP: u32 = BM_LEVELS - 1u;',
    "/** Buffer word of block `bid`'s header. */",
    'fn block_word(bid: u32) -> u32 { return BW_BLOCKS + bid * BLOCK_WORDS; }',
    '/** Index of a workgroup in a dispatch that may be 2-D (x is capped at 65535 per dimension). */',
    'fn linear_workgroup(wid: vec3<u32>, nwg: vec3<u32>) -> u32 { return wid.y * nwg.x + wid.x; }',
    '',
  );
  return lines.join('\n');
}

/** Names of the `override` declarations of a WGSL source (to fill in only those it declares). */
export function overridesOf(source: string): Set<string> {
  const out = new Set<string>();
  for (const m of source.matchAll(/^\s*(?:@id\(\d+\)\s*)?override\s+([A-Za-z_][A-Za-z0-9_]*)/gm)) out.add(m[1]!);
  return out;
}
