/**
 * One layout description: the WGSL prelude (runtime/webgpu/wgsl.ts) is generated from
 * runtime/layout.ts; this checks that the generated text says what the layout says, and
 * that a kernel reading the GPU copy of a heap through the prelude's constants finds
 * the host's bytes (header, bitmaps, block headers, a field through its F_ override).
 */
import test from 'ava';
import { createRuntime, f32, object, u32, u8 } from '../index.js';
import { bitmapLevelWords } from '../runtime/bitmap.js';
import * as L from '../runtime/layout.js';
import { BufferUsage, GpuContext, webgpuPackageAvailable } from '../runtime/webgpu/device.js';
import { GpuRunner } from '../runtime/webgpu/runner.js';
import { GPU_BASE_BYTES, preludeValues, wgslPrelude } from '../runtime/webgpu/wgsl.js';

abstract class Shape extends object({ x: f32 }, { abstract: true }) {}
class Dot extends Shape.extend({ value: u32 }) {}
class Blob extends Shape.extend({ value: u32, r: f32, g: u8, b: u8, pad: f32 }) {}

const available = await webgpuPackageAvailable();
const SKIP = '[skipped: the optional npm package `webgpu` is not installed; `npm install` installs it]';
if (!available) console.log(`webgpu-layout.test: ${SKIP}`);

/** `const NAME: u32 = 123u;` and `const NAME = array<u32, n>(…);` lines of a prelude. */
function parsePrelude(src: string): { scalars: Map<string, number>; arrays: Map<string, number[]> } {
  const scalars = new Map<string, number>();
  const arrays = new Map<string, number[]>();
  for (const m of src.matchAll(/^const (\w+): u32 = (\d+)u;$/gm)) scalars.set(m[1]!, Number(m[2]));
  for (const m of src.matchAll(/^const (\w+) = array<u32, (\d+)>\(([^)]*)\);$/gm)) {
    const vals = m[3]!.split(',').map((x) => Number(x.trim().replace(/u$/, '')));
    if (vals.length !== Number(m[2])) throw new Error(`${m[1]}: length ${m[2]} but ${vals.length} values`);
    arrays.set(m[1]!, vals);
  }
  return { scalars, arrays };
}

test('the generated WGSL prelude states layout.ts: constants, heap plan, type table', async (t) => {
  const rt = await createRuntime({ classes: [Shape, Dot, Blob], heap: 3 << 20 });
  try {
    const heap = rt.heap;
    const plan = heap.plan;
    const { scalars, arrays } = parsePrelude(wgslPrelude(heap));
    for (const [k, v] of Object.entries(L.layoutConstants())) t.is(scalars.get(k), v, k);
    const word = (byte: number): number => (byte - GPU_BASE_BYTES) / 4;
    t.is(GPU_BASE_BYTES, L.HEADER_OFFSET);
    t.is(scalars.get('BW_HEADER'), 0);
    t.is(scalars.get('BW_BLOCKS'), word(plan.blocksOffset));
    t.is(scalars.get('BW_BLOCK_LIST'), word(plan.blockListOffset));
    t.is(scalars.get('BW_FREE_BM'), word(plan.freeBitmapWord * 4));
    t.is(scalars.get('BLOCK_BYTES'), plan.blockBytes);
    t.is(scalars.get('BLOCK_WORDS'), plan.blockBytes / 4);
    t.is(scalars.get('NUM_BLOCKS'), plan.numBlocks);
    t.is(scalars.get('NUM_TYPES'), rt.table.types.length);
    t.is(scalars.get('BM_LEVELS'), bitmapLevelWords(plan.numBlocks).length);
    t.is(scalars.get('BM_L0_WORDS'), Math.ceil(plan.numBlocks / 32));
    // Level offsets as HierarchicalBitmap lays them out: level l+1 right after level l.
    const lw = bitmapLevelWords(plan.numBlocks);
    t.deepEqual(
      arrays.get('BM_LEVEL_OFF'),
      lw.map((_, l) => lw.slice(0, l).reduce((a, b) => a + b, 0)),
    );
    t.deepEqual(
      arrays.get('TYPE_SLOTS'),
      rt.table.types.map((ty) => ty.slots),
    );
    t.deepEqual(
      arrays.get('TYPE_HIGH_MASK'),
      rt.table.types.map((ty) => ty.highMask >>> 0),
    );
    t.deepEqual(
      arrays.get('BW_ALLOCATED_BM'),
      rt.table.types.map((ty) => (ty.abstract ? 0xffffffff : word(plan.allocatedBitmapWord[ty.id]! * 4))),
    );
    t.deepEqual(
      arrays.get('BW_ACTIVE_BM'),
      rt.table.types.map((ty) => (ty.abstract ? 0xffffffff : word(plan.activeBitmapWord[ty.id]! * 4))),
    );
    // Zero plan: every field array of every type, with its element size.
    const v = preludeValues(heap);
    const blob = rt.table.byClass(Blob)!;
    const start = v.arrays['ZERO_START']![blob.id]!;
    const pairs = v.arrays['ZERO_PLAN']!.slice(2 * start, 2 * v.arrays['ZERO_START']![blob.id + 1]!);
    t.deepEqual(
      pairs,
      blob.fields.flatMap((f) => [f.offsets[0]!, f.elemBytes]),
    );
    t.true(blob.slots < 32, 'Blob has pre-set high bits');
  } finally {
    await rt.close();
  }
});

(available ? test : test.skip)(
  `a WGSL kernel reads the host's bytes through the prelude's constants${available ? '' : ` ${SKIP}`}`,
  async (t) => {
    const rt = await createRuntime({ classes: [Shape, Dot, Blob], heap: 3 << 20 });
    const gpu = await GpuContext.acquire();
    const runner = await GpuRunner.create(rt, { gpu });
    try {
      const blob = rt.create(Blob, { value: 0xdeadbeef, x: 1.5 });
      for (let i = 0; i < 40; i++) rt.create(Dot, { value: i });
      const bid = blob.handle >>> 5;
      const h = L.HEADER_OFFSET >> 2;
      const blobT = rt.table.byClass(Blob)!;
      const consts = {
        H_MAGIC: L.H_MAGIC,
        H_VERSION: L.H_VERSION,
        H_HEAP_BYTES: L.H_HEAP_BYTES,
        // H_BLOCK_BYTES, H_NUM_BLOCKS, H_NUM_TYPES, H_BLOCKS_OFFSET: prelude constants (layoutConstants())
        H_BLOCK_LIST_OFFSET: L.H_BLOCK_LIST_OFFSET,
        F_value: blobT.fields.find((f) => f.name === 'value')!.offsets[0]!,
      };
      const pipe = await runner.pipeline('layout_probe.wgsl', [], 'main', consts);
      const nTypes = rt.table.types.length;
      const out = gpu.device.createBuffer({ size: (17 + 3 * nTypes) * 4, usage: BufferUsage.STORAGE | BufferUsage.COPY_SRC });
      const params = gpu.device.createBuffer({ size: 16, usage: BufferUsage.UNIFORM | BufferUsage.COPY_DST });
      gpu.device.queue.writeBuffer(params, 0, new Uint32Array([bid, blob.handle, 0, 0]));
      runner.toGpu();
      runner.dispatch(pipe, runner.bindBuffers(pipe, [runner.gheap.buffer, params, out]), 1);
      const got = new Uint32Array(await runner.readBuffer(out));
      const heap = rt.heap;
      const plan = heap.plan;
      t.deepEqual([...got.slice(0, 8)], [...heap.u32.slice(h, h + 8)], 'header words');
      t.is(got[0], L.MAGIC);
      t.deepEqual([...got.slice(8, 12)], [plan.blocksOffset, plan.blockListOffset, plan.numBlocks, plan.blockBytes], 'prelude constants');
      t.is(got[12], heap.u32[plan.freeBitmapWord], 'free bitmap word 0');
      const bw = heap.blockWord(bid);
      t.deepEqual(
        [...got.slice(13, 16)],
        [heap.u32[bw + L.BLOCK_ALLOC_WORD], heap.u32[bw + L.BLOCK_TYPE_WORD], heap.u32[bw + L.BLOCK_GEN_WORD]],
      );
      t.is(got[14], blobT.id);
      t.is(got[16], 0xdeadbeef, 'field through F_value');
      rt.table.types.forEach((ty) => {
        t.is(got[17 + 3 * ty.id], ty.slots);
        t.is(got[18 + 3 * ty.id], ty.highMask >>> 0);
        t.is(got[19 + 3 * ty.id], ty.abstract ? 0 : heap.u32[plan.allocatedBitmapWord[ty.id]!]);
      });
      out.destroy();
      params.destroy();
    } finally {
      await runner.close({ download: false });
      await gpu.close();
      await rt.close();
    }
  },
);
