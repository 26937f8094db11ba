/**
 * The device-side allocator (runtime/webgpu/wgsl/alloc.wgsl: Alg. 1, 2, 6, 7 on
 * atomic<u32>, with D1 and D2) under contention on the GPU, checked on the host.
 *
 * Two classes: A (32 slots a block) and B (8 slots, so its allocation bitmaps have
 * pre-set high bits). The heap has > 1024 blocks, so its bitmaps have three levels.
 * Every block's data is filled with garbage first, so the device-side zeroing of new
 * objects is checked too. Rounds (alloc_test.wgsl):
 *   0. every invocation allocates k objects (odd: B, even: A) and frees every 5th at once;
 *   1. even invocations free all their A objects (blocks empty → invalidated → freed)
 *      while odd ones allocate more B objects (taking those freed blocks);
 *   2. everyone allocates again with roles swapped, freeing every 3rd at once.
 * After each round the heap comes back to the host and must pass validateHeap() (heap.ts
 * H1–H5, bitmap.ts B1–B2); the host's record of live objects must match the heap
 * exactly (counts, unique handles, each object's tag, zeroed fields), and no invocation
 * may report a failure status.
 */
import test from 'ava';
import { createRuntime, f64, object, u32, u8, type Runtime } from '../index.js';
import { bitmapLevelWords } from '../runtime/bitmap.js';
import { BufferUsage, GpuContext, webgpuPackageAvailable } from '../runtime/webgpu/device.js';
import { GpuHeapError, STATUS, describeStatus } from '../runtime/webgpu/errors.js';
import { BLOCK_TYPE_WORD } from '../runtime/layout.js';
import { GpuRunner } from '../runtime/webgpu/runner.js';

class A extends object({ tag: u32 }) {}
class B extends object({ tag: u32, small: u8, big: f64 }) {}

const available = await webgpuPackageAvailable();
const SKIP = '[skipped: the optional npm package `webgpu` is not installed; `npm install` installs it]';
if (!available) console.log(`webgpu-alloc.test: ${SKIP}`);
const gtest = available ? test.serial : test.skip;

let gpu: GpuContext | null = null;
test.before(async () => {
  if (available) gpu = await GpuContext.acquire();
});
test.after.always(async () => {
  await gpu?.close();
});

interface Obj {
  cls: 'A' | 'B';
  tag: number;
}

class Harness {
  readonly live = new Map<number, Obj>();
  readonly out: GPUBuffer;
  readonly status: GPUBuffer;
  readonly params: GPUBuffer;
  prevOut = new Uint32Array(0);

  constructor(
    readonly rt: Runtime,
    readonly runner: GpuRunner,
    readonly n: number,
    readonly k: number,
  ) {
    const d = runner.gpu.device;
    this.out = d.createBuffer({ size: n * k * 4, usage: BufferUsage.STORAGE | BufferUsage.COPY_SRC | BufferUsage.COPY_DST });
    this.status = d.createBuffer({ size: 16, usage: BufferUsage.STORAGE | BufferUsage.COPY_SRC | BufferUsage.COPY_DST });
    this.params = d.createBuffer({ size: 48, usage: BufferUsage.UNIFORM | BufferUsage.COPY_DST });
  }

  tagField(cls: typeof A | typeof B): number {
    return this.rt.table.byClass(cls)!.fields.find((f) => f.name === 'tag')!.offsets[0]!;
  }

  async round(mode: number, round: number, freeMod: number, tagBase: number, wg: number): Promise<void> {
    const { rt, runner, n, k } = this;
    const d = runner.gpu.device;
    const ta = rt.table.byClass(A)!.id;
    const tb = rt.table.byClass(B)!.id;
    d.queue.writeBuffer(this.params, 0, new Uint32Array([n, k, mode, freeMod, ta, tb, round, 0x1234567 + round, tagBase, 0, 0, 0]));
    d.queue.writeBuffer(this.status, 0, new Uint32Array(4));
    runner.toGpu();
    const pipe = await runner.pipeline('alloc_test.wgsl', ['alloc.wgsl'], 'main', {
      WG: wg,
      F_tag_A: this.tagField(A),
      F_tag_B: this.tagField(B),
      // SPIN_LIMIT: alloc.wgsl's default, 2^22 (an invocation may wait on one of another
      // workgroup, which SwiftShader's CPU threads may deschedule).
    });
    runner.dispatch(pipe, runner.bindBuffers(pipe, [runner.gheap.buffer, this.params, this.out, this.status]), Math.ceil(n / wg));
    runner.gpuWrote(true);
    const st = new Uint32Array(await runner.readBuffer(this.status));
    if (st[0] !== 0) throw new GpuHeapError(st[0]!, st[1]!);
    const out = new Uint32Array(await runner.readBuffer(this.out));
    await runner.toHost();
    // Host record: frees first (mode 1, even invocations freed their previous objects), then the new objects.
    if (mode === 1) {
      for (let i = 0; i < n; i += 2) for (let j = 0; j < k; j++) if (this.prevOut[i * k + j]) this.live.delete(this.prevOut[i * k + j]!);
    }
    const seen = new Set<number>();
    for (let i = 0; i < n; i++) {
      if (mode === 1 && i % 2 === 0) continue;
      const cls = (i + round) % 2 === 1 ? 'B' : 'A';
      for (let j = 0; j < k; j++) {
        const h = out[i * k + j]!;
        if (h === 0) continue;
        if (seen.has(h)) throw new Error(`handle ${h} returned to two allocations in round ${round}`);
        seen.add(h);
        this.live.set(h, { cls, tag: i * k + j + 1 + tagBase });
      }
    }
    this.prevOut = out;
  }

  /** Every invariant, and the host record against the heap. Returns a summary. */
  check(): { A: number; B: number } {
    const rt = this.rt;
    rt.validateHeap();
    const counts = { A: 0, B: 0 };
    const heap = rt.heap;
    const tagOff = { A: this.tagField(A), B: this.tagField(B) };
    const bt = rt.table.byClass(B)!;
    const smallOff = bt.fields.find((f) => f.name === 'small')!.offsets[0]!;
    const bigOff = bt.fields.find((f) => f.name === 'big')!.offsets[0]!;
    for (const [h, o] of this.live) {
      counts[o.cls]++;
      const bid = h >>> 5;
      const s = h & 31;
      const type = rt.table.types[heap.blockType(bid)];
      if (type?.name !== o.cls) throw new Error(`handle ${h}: block ${bid} is ${type?.name ?? 'free'}, expected ${o.cls}`);
      if ((heap.i32[heap.blockWord(bid)]! & (1 << s)) === 0) throw new Error(`handle ${h}: slot not allocated`);
      const tag = heap.u32[((heap.blockOffset(bid) + tagOff[o.cls]) >>> 2) + s];
      if (tag !== o.tag)
        throw new Error(`handle ${h} (${o.cls}): tag ${tag}, expected ${o.tag} — two allocations shared a slot or a write was lost`);
      if (o.cls === 'B') {
        const small = heap.u8[heap.blockOffset(bid) + smallOff + s];
        const big = heap.f64[((heap.blockOffset(bid) + bigOff) >>> 3) + s];
        if (small !== 0 || big !== 0) throw new Error(`handle ${h}: new B not zeroed (small ${small}, big ${big})`);
      }
    }
    if (rt.count(A) !== counts.A || rt.count(B) !== counts.B) {
      throw new Error(`heap has A ${rt.count(A)} / B ${rt.count(B)} objects, the host record A ${counts.A} / B ${counts.B}`);
    }
    return counts;
  }

  destroy(): void {
    this.out.destroy();
    this.status.destroy();
    this.params.destroy();
  }
}

/** Fill every block's data segment with garbage (headers untouched): new objects must come out zeroed. */
function garbage(rt: Runtime): void {
  const heap = rt.heap;
  for (let b = 1; b < heap.numBlocks; b++) heap.u8.fill(0xab, heap.blockOffset(b) + 16, heap.blockOffset(b) + heap.plan.blockBytes);
}

for (const wg of [64, 1]) {
  gtest(`device-side allocate/free from many invocations keeps the heap valid (WG=${wg})${available ? '' : ` ${SKIP}`}`, async (t) => {
    const rt = await createRuntime({ classes: [A, B], heap: 1536 * 1024 });
    t.true(bitmapLevelWords(rt.heap.numBlocks).length >= 3, `need three bitmap levels, heap has ${rt.heap.numBlocks} blocks`);
    garbage(rt);
    const runner = await GpuRunner.create(rt, { gpu: gpu! });
    const n = wg === 1 ? 256 : 1024;
    const k = 6;
    const h = new Harness(rt, runner, n, k);
    try {
      await h.round(0, 0, 5, 0, wg);
      const c0 = h.check();
      const expected0 = n * k - Math.ceil((n * k) / 5);
      t.is(c0.A + c0.B, expected0);
      t.true(c0.A > 0 && c0.B > 0);
      const blocksBefore = rt.stats().types['A']!.blocks;

      await h.round(1, 0, 0, n * k, wg);
      const c1 = h.check();
      t.is(c1.A, 0, 'every A object was freed');
      t.is(rt.stats().types['A']!.blocks, 0, `all ${blocksBefore} A blocks went back to the free bitmap`);
      t.true(c1.B > c0.B);

      await h.round(0, 1, 3, 2 * n * k, wg);
      const c2 = h.check();
      t.true(c2.A > 0 && c2.B > c1.B);
      t.log(
        `WG=${wg}: objects after each round A/B ${c0.A}/${c0.B}, ${c1.A}/${c1.B}, ${c2.A}/${c2.B}; blocks ${rt.stats().heap.usedBlocks}/${rt.stats().heap.blocks}`,
      );
    } finally {
      h.destroy();
      await runner.close({ download: false });
      await rt.close();
    }
  });
}

gtest(`a full heap is reported through the status word, not a hang${available ? '' : ` ${SKIP}`}`, async (t) => {
  const rt = await createRuntime({ classes: [A, B], heap: 1100 * 1024 });
  const runner = await GpuRunner.create(rt, { gpu: gpu! });
  const blocks = rt.heap.numBlocks - 1;
  // Half the invocations allocate B (8 objects a block): together they ask for 1.25× the heap's blocks.
  const n = 64;
  const k = Math.ceil((blocks * 8 * 1.25) / (n / 2));
  const h = new Harness(rt, runner, n, k);
  try {
    const err = await t.throwsAsync(h.round(0, 1, 0, 0, 64), { instanceOf: GpuHeapError });
    t.true((err!.codes & 1) !== 0, describeStatus(err!.codes));
    t.regex(err!.message, /heap full/);
  } finally {
    h.destroy();
    await runner.close({ download: false });
    await rt.close();
  }
});

// The block-state words are written by read-modify-writes whose old values are checked
// (alloc.wgsl P1): a free block that is not in the free state H3 says (here: every free
// block's type word names class A) is reported as STATUS_BAD_BLOCK instead of being
// handed out. Plain stores (the code before P1) would hand the blocks out silently.
gtest(`a free block with a corrupted type word is reported (STATUS_BAD_BLOCK), not used${available ? '' : ` ${SKIP}`}`, async (t) => {
  const rt = await createRuntime({ classes: [A, B], heap: 1100 * 1024 });
  const heap = rt.heap;
  const ta = rt.table.byClass(A)!.id;
  let corrupted = 0;
  for (let b = 1; b < heap.numBlocks; b++) {
    if (heap.blockType(b) >= 0) continue;
    heap.i32[heap.blockWord(b) + BLOCK_TYPE_WORD] = ta;
    corrupted++;
  }
  t.true(corrupted > 0);
  const runner = await GpuRunner.create(rt, { gpu: gpu! });
  const h = new Harness(rt, runner, 64, 2);
  try {
    const err = await t.throwsAsync(h.round(0, 0, 0, 0, 64), { instanceOf: GpuHeapError });
    t.true((err!.codes & STATUS.BAD_BLOCK) !== 0, describeStatus(err!.codes));
    t.regex(err!.message, /heap corrupted/);
  } finally {
    h.destroy();
    await runner.close({ download: false });
    await rt.close();
  }
});
