/**
 * A runtime's heap bytes for comparing two runs of the same program byte for byte, without
 * the per-pass scratch state: the block-list region and every block's iteration word.
 * Those describe the last do-all's snapshot (runtime/thread.ts snapshot), and a compiled
 * method snapshots only the classes it can reach while an interpreted one snapshots every
 * class, so they legitimately differ between the two. Everything else — fields, handles,
 * allocation bitmaps, block headers, the allocator's bitmaps and states — must be equal.
 * (The region below RESERVED_BYTES, the WASM module's stack and data, is left out too.)
 */
import type { Runtime } from '../../index.js';
import { BLOCK_ITER_WORD, BLOCK_TYPE_WORD, RESERVED_BYTES } from '../../runtime/layout.js';
import type { ThreadContext } from '../../runtime/thread.js';

/**
 * With `canonicalNaN`, every NaN stored in an f32 or f64 field of a used block is written as
 * the one canonical NaN first: JavaScript leaves a NaN's bits to the engine (ECMA-262
 * NumberToRawBytes: "an implementation-distinguishable NaN value"), and V8 gives `x % 0`
 * a NaN of either sign depending on the tier that computed it, so two runs of the same
 * program may store different NaN bits where no program can tell them apart by value.
 */
export function persistentHeapBytes(rt: Runtime, options: { canonicalNaN?: boolean } = {}): Uint8Array {
  const heap = rt.heap;
  const bytes = new Uint8Array(heap.buffer).slice(RESERVED_BYTES);
  const list = heap.plan.blockListOffset - RESERVED_BYTES;
  bytes.fill(0, list, list + heap.numBlocks * 4);
  for (let b = 0; b < heap.numBlocks; b++) {
    const at = (heap.blocksWord + b * heap.blockWords + BLOCK_ITER_WORD) * 4 - RESERVED_BYTES;
    bytes.fill(0, at, at + 4);
  }
  if (options.canonicalNaN === true) canonicalNaNs(rt, bytes);
  return bytes;
}

function canonicalNaNs(rt: Runtime, bytes: Uint8Array): void {
  const heap = rt.heap;
  const types = (rt.main as unknown as ThreadContext).table.types;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let b = 0; b < heap.numBlocks; b++) {
    const base = (heap.blocksWord + b * heap.blockWords) * 4 - RESERVED_BYTES;
    const type = types[view.getInt32(base + BLOCK_TYPE_WORD * 4, true)];
    if (type === undefined || type.abstract) continue;
    for (const f of type.fields) {
      if (f.kind !== 'f32' && f.kind !== 'f64') continue;
      for (const off of f.offsets) {
        for (let slot = 0; slot < type.slots; slot++) {
          const at = base + off + slot * f.elemBytes;
          if (f.kind === 'f64' && Number.isNaN(view.getFloat64(at, true))) view.setFloat64(at, NaN, true);
          if (f.kind === 'f32' && Number.isNaN(view.getFloat32(at, true))) view.setFloat32(at, NaN, true);
        }
      }
    }
  }
}

/**
 * Where two runtimes' persistent heap bytes first differ ("byte i: x vs y"), or null when
 * they are equal: for `t.is(heapDifference(b, a), null)`, which stays fast on heaps of
 * megabytes where a deep comparison of the arrays takes seconds.
 */
export function heapDifference(a: Runtime, b: Runtime, options: { canonicalNaN?: boolean } = {}): string | null {
  const x = persistentHeapBytes(a, options);
  const y = persistentHeapBytes(b, options);
  if (x.length !== y.length) return `lengths ${x.length} vs ${y.length}`;
  for (let i = 0; i < x.length; i++) {
    if (x[i] !== y[i]) return `byte ${i + RESERVED_BYTES}: ${x[i]} vs ${y[i]}`;
  }
  return null;
}

/**
 * Runs `pass` on a runtime with interpreted methods and on one with compiled methods (each
 * from `make`, closed afterwards); both must throw, with the same message and cause, and
 * leave the same heap bytes, which must validate. `compiled` looks at the compiled runtime
 * before it closes (e.g. at the generated code). `what` names the case in the messages.
 */
export async function failsAlike(
  t: import('ava').ExecutionContext,
  what: string,
  make: (compile: boolean) => Promise<Runtime>,
  pass: (rt: Runtime) => unknown,
  compiled: (rt: Runtime) => void = () => {},
): Promise<void> {
  const heaps: Uint8Array[] = [];
  const messages: string[] = [];
  for (const compile of [false, true]) {
    const rt = await make(compile);
    try {
      const e = t.throws(() => pass(rt));
      const cause = (e as Error).cause as Error | undefined;
      messages.push(`${(e as Error).message} | ${cause?.name}: ${cause?.message}`);
      heaps.push(persistentHeapBytes(rt));
      rt.validateHeap();
      if (compile) compiled(rt);
    } finally {
      await rt.close();
    }
  }
  t.is(messages[1], messages[0], `${what}: the same error`);
  t.true(heaps[1]!.length === heaps[0]!.length && heaps[1]!.every((v, i) => v === heaps[0]![i]), `${what}: the same heap`);
}
