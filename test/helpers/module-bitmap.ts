/**
 * A hierarchical bitmap of its own in a fresh WebAssembly memory, with the allocator
 * core's bitmap operations on it (wasm/src/alloc/bitmap.rs through runtime/allocator.ts
 * WasmBitmaps: set, clear, tryFindSet, scanFindSet, findAndClear, fill, reset) beside
 * runtime/bitmap.ts's read-only view (get, indices, count, validate).
 *
 * The bitmap lies above the module's reserved region (layout.ts RESERVED_BYTES), after
 * one unused word, so that its first word is not the first word of a container run that
 * starts at 0. `all` is the whole memory as an Int32Array: the word addresses the core and
 * test/helpers/corrupt.ts use (bm.base and up) index it directly.
 */
import { WasmBitmaps } from '../../runtime/allocator.js';
import { bitmapWords, HierarchicalBitmap } from '../../runtime/bitmap.js';
import { RESERVED_BYTES } from '../../runtime/layout.js';
import { loadWasmModule, WasmInstance, wasmFile } from '../../runtime/wasm.js';

export interface ModuleBitmap {
  /** The whole memory, as words. */
  all: Int32Array;
  bm: HierarchicalBitmap;
  ops: WasmBitmaps;
}

/** A zeroed bitmap of `bits` positions in a memory and module instance of its own. */
export function moduleBitmap(bits: number, name = `bm(${bits})`): ModuleBitmap {
  const base = (RESERVED_BYTES >> 2) + 1;
  const pages = Math.ceil(((base + bitmapWords(bits) + 1) * 4) / 65536);
  const memory = new WebAssembly.Memory({ initial: pages, maximum: pages, shared: true });
  const all = new Int32Array(memory.buffer as unknown as SharedArrayBuffer);
  const ops = new WasmBitmaps(WasmInstance.create(loadWasmModule(), memory, wasmFile()));
  return { all, bm: new HierarchicalBitmap(all, base, bits, name), ops };
}
