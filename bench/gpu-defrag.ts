/**
 * Defragmentation with backend 'webgpu' (runtime/webgpu/gpu-defrag.ts; "CompactGpu:
 * Massively Parallel Memory Defragmentation on GPUs", ISMM 2019 §3–§4): the GPU path
 * against what `smmo run --backend webgpu --defrag` did before it, side by side on the
 * same heap, alternating:
 *
 *   gpu:        rt.parallelDefrag(Item, n) on the GPU copy (metadata region and gathered
 *               block headers down, changed headers up; copy and rewrite as WGSL kernels);
 *   host-sync:  rt.sync() (the whole heap down), rt.defrag(Item, n) on the CPU, the whole
 *               heap up again (the next GPU pass's upload, done here so that it is timed).
 *
 * The heap: objects of one class (4 f32 fields and a reference to another object of the
 * class) fill 93 % of the heap's blocks, then a random 60 % are deleted (bench/defrag.ts's
 * synthetic workload), built once and restored before each call; the GPU copy is made the
 * newer one before each call, as after a GPU pass. Both end with the GPU idle (GpuRunner.finish). Prints per mode the median
 * milliseconds over --repeat calls, the bytes over the bus, and the objects moved (equal
 * for both: the same heap, G4).
 *
 *   node dist/bench/gpu-defrag.js [--heap 16MB] [--n 3] [--repeat 3] [--adapter software]
 *
 * Times are wall-clock on whatever machine runs it; nothing here is a test.
 */
import { parseArgs } from 'node:util';
import { createRuntime, f32, object, ref, type Runtime, type SmmoObject } from '../index.js';
import { GPU_BASE_BYTES } from '../runtime/webgpu/wgsl.js';

interface ItemLike extends SmmoObject {
  next: ItemLike | null;
}
class Item extends object({ a: f32, b: f32, c: f32, d: f32, next: ref<ItemLike>('Item') }) {}

function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
}

/** Fill 93 % of the blocks with Items (references to random Items), delete a random 60 %. */
function build(rt: Runtime, seed: number): number {
  const r = rng(seed);
  const t = rt.table.byClass(Item)!;
  const count = Math.floor(rt.heap.numBlocks * 0.93) * t.slots;
  const items: ItemLike[] = [];
  for (let i = 0; i < count; i++) items.push(rt.create(Item, { a: i, b: r(), c: r(), d: r() }));
  for (const it of items) it.next = items[Math.floor(r() * items.length)]!;
  let live = 0;
  for (const it of items) {
    if (r() < 0.6) rt.destroy(it);
    else live++;
  }
  return live;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      heap: { type: 'string', default: '16MB' },
      n: { type: 'string', default: '3' },
      repeat: { type: 'string', default: '3' },
      adapter: { type: 'string' },
    },
  });
  const n = Number(values.n);
  const repeat = Number(values.repeat);
  const webgpu = values.adapter !== undefined ? { adapter: values.adapter as 'software' } : {};
  const rt = await createRuntime({ classes: [Item], heap: values.heap, threads: 1, backend: 'webgpu', webgpu });
  const gpu = rt.gpu!;
  const res: Record<'gpu' | 'host-sync', { ms: number[]; down: number; up: number; moved: number }> = {
    gpu: { ms: [], down: 0, up: 0, moved: 0 },
    'host-sync': { ms: [], down: 0, up: 0, moved: 0 },
  };
  const live = build(rt, 7);
  const saved = rt.heap.u8.slice(GPU_BASE_BYTES);
  const phases: Record<string, number[]> = { scan: [], copy: [], rewrite: [], update: [] };
  try {
    for (let k = 0; k < repeat; k++) {
      for (const mode of k % 2 === 0 ? (['gpu', 'host-sync'] as const) : (['host-sync', 'gpu'] as const)) {
        await rt.sync();
        rt.heap.u8.set(saved, GPU_BASE_BYTES); // the same heap for every call
        gpu.toGpu();
        gpu.gpuWrote(); // the GPU copy is the newer one, as after a GPU pass
        await gpu.finish();
        const before = gpu.stats;
        const t0 = performance.now();
        let moved: number;
        if (mode === 'gpu') {
          const r = await rt.parallelDefrag(Item, n);
          moved = r.stats.objectsMoved;
          await gpu.finish();
          res.gpu.down = r.stats.transfer!.downloadBytes;
          res.gpu.up = r.stats.transfer!.uploadBytes;
          for (const p of Object.keys(phases)) phases[p]!.push(r.stats.ms[p as keyof typeof r.stats.ms]);
        } else {
          await rt.sync();
          moved = rt.defrag(Item, n).stats.objectsMoved;
          gpu.toGpu();
          await gpu.finish();
        }
        const ms = performance.now() - t0;
        const after = gpu.stats;
        const e = res[mode];
        e.ms.push(ms);
        e.moved = moved;
        if (mode === 'host-sync') {
          e.down = after.downloadBytes - before.downloadBytes;
          e.up = after.uploadBytes - before.uploadBytes;
        }
      }
    }
  } finally {
    const info = gpu.gpu.info;
    console.log(
      `gpu-defrag bench: heap ${rt.heap.plan.heapBytes} bytes, ${rt.heap.numBlocks} blocks, ${live} live Items, n=${n}, ` +
        `adapter ${info.description}${info.software ? ' (software)' : ''}; median of ${repeat}`,
    );
    console.log('mode        ms (median)   download bytes   upload bytes   objects moved');
    for (const [mode, e] of Object.entries(res))
      console.log(
        `${mode.padEnd(11)} ${median(e.ms).toFixed(1).padStart(11)}   ${String(e.down).padStart(14)}   ${String(e.up).padStart(12)}   ${String(e.moved).padStart(13)}`,
      );
    console.log(
      `gpu mode, median ms per phase (host steps and GPU submits; the GPU's own time shows in the total): ${Object.entries(phases)
        .map(([p, xs]) => `${p} ${median(xs).toFixed(1)}`)
        .join(', ')}`,
    );
    await rt.close();
  }
}

await main();
