/**
 * Runtime.readField / writeField: one field of one object between passes, without a
 * whole-heap download or upload on backend 'webgpu' (barnes-hut's and structure's host
 * loops test a flag this way). On every backend the value is the object's field, the
 * checks are get()'s (InvalidHandleError) plus the field's name and index (UsageError);
 * on the GPU, after passes that changed the heap, the value is the GPU's, no download
 * happens, and a written word keeps the neighbouring objects' bytes (1-byte fields of
 * four objects share a word) — the heap then equals a TypeScript run's.
 */
import test from 'ava';
import { createRuntime, InvalidHandleError, UsageError, type Runtime } from '../index.js';
import { Flag, MODULE } from './read-field.fixtures.js';
import { gpuSuite } from './helpers/gpu-suite.js';

const { gtest, title, gpu } = await gpuSuite('read-field.test');

async function make(backend: 'ts' | 'webgpu', threads = 1): Promise<{ rt: Runtime; hs: number[] }> {
  const rt = await createRuntime({
    classes: [Flag],
    heap: 4 << 20,
    threads,
    modules: [MODULE],
    backend,
    ...(backend === 'webgpu' ? { webgpu: { gpu: gpu() } } : {}),
  });
  const hs: number[] = [];
  for (let i = 0; i < 40; i++) {
    const f = rt.create(Flag);
    f.n = i;
    f.on = i % 3 === 0;
    f.arr.set(1, i * 10);
    f.x = i / 4;
    hs.push(f.handle);
  }
  rt.get(Flag, hs[0]!).peer = rt.get(Flag, hs[5]!);
  return { rt, hs };
}

function rows(rt: Runtime): string[] {
  const out: string[] = [];
  rt.deviceDo(Flag, (f) => out.push(`${f.handle} ${f.n} ${f.on} ${f.arr.get(0)},${f.arr.get(1)},${f.arr.get(2)} ${f.x}`));
  return out.sort();
}

for (const threads of [1, 2]) {
  test(`readField / writeField on backend ts, ${threads} thread(s): the field, and get()'s checks`, async (t) => {
    const { rt, hs } = await make('ts', threads);
    try {
      await rt.parallelDo(Flag, 'bump');
      t.is(await rt.readField(Flag, hs[7]!, 'n'), 8);
      t.is(await rt.readField(Flag, hs[7]!, 'on'), true);
      t.is(await rt.readField(Flag, hs[7]!, 'arr', 1), 72);
      t.is(await rt.readField(Flag, hs[7]!, 'x'), 7 / 4 / 2 + 1);
      t.is(await rt.readField(Flag, hs[0]!, 'peer'), hs[5]!, 'a reference reads as its handle');
      t.is(await rt.readField(Flag, hs[1]!, 'peer'), null);
      await rt.writeField(Flag, hs[7]!, 'on', false);
      await rt.writeField(Flag, hs[7]!, 'arr', 9, 2);
      t.is(rt.get(Flag, hs[7]!).on, false);
      t.is(rt.get(Flag, hs[7]!).arr.get(2), 9);
      await t.throwsAsync(rt.readField(Flag, hs[7]!, 'nope'), {
        instanceOf: UsageError,
        message: /Flag has no field 'nope' \(its fields: n, on, arr, x, peer\)/,
      });
      await t.throwsAsync(rt.readField(Flag, hs[7]!, 'arr'), {
        instanceOf: UsageError,
        message: /inline array of 3; pass an index 0 … 2, got undefined/,
      });
      await t.throwsAsync(rt.readField(Flag, hs[7]!, 'arr', 3), { instanceOf: UsageError, message: /got 3/ });
      await t.throwsAsync(rt.readField(Flag, hs[7]!, 'n', 0), { instanceOf: UsageError, message: /not an inline array; pass no index/ });
      await t.throwsAsync(rt.writeField(Flag, hs[7]!, 'peer', 0), { instanceOf: UsageError, message: /Flag\.peer is a reference/ });
      await t.throwsAsync(rt.readField(Flag, 5, 'n'), { instanceOf: InvalidHandleError, message: /not a handle of this heap/ });
      rt.destroy(rt.get(Flag, hs[3]!));
      const e = await t.throwsAsync(rt.readField(Flag, hs[3]!, 'n'), { instanceOf: InvalidHandleError });
      t.is(e!.reason, 'deleted');
      rt.validateHeap();
    } finally {
      await rt.close();
    }
    await t.throwsAsync(rt.readField(Flag, hs[7]!, 'n'), { instanceOf: UsageError, message: /closed/ });
  });
}

gtest(
  title("readField / writeField on backend webgpu: the GPU's values without a heap download; a written word keeps its neighbours"),
  async (t) => {
    const ref = await make('ts');
    const gpuRun = await make('webgpu');
    const rt = gpuRun.rt;
    const hs = gpuRun.hs;
    // The runner's count of whole-heap downloads (rt.stats() itself needs the host current).
    const downloads = (): number => (rt as unknown as { gpu: { gheap: { stats: { downloads: number } } } }).gpu.gheap.stats.downloads;
    try {
      await rt.parallelDo(Flag, 'bump');
      await ref.rt.parallelDo(Flag, 'bump');
      t.throws(() => rt.get(Flag, hs[7]!), { message: /GPU holds newer object data/ }, 'the GPU holds newer data');
      const before = downloads();
      t.is(await rt.readField(Flag, hs[7]!, 'n'), 8);
      t.is(await rt.readField(Flag, hs[7]!, 'on'), true);
      t.is(await rt.readField(Flag, hs[7]!, 'arr', 1), 72);
      t.is(await rt.readField(Flag, hs[7]!, 'x'), 7 / 4 / 2 + 1);
      // Objects 4 … 7 share the words of `on` and of arr[1]'s halves: write one, then run more passes on the GPU.
      for (const r of [rt, ref.rt]) {
        await r.writeField(Flag, hs[5]!, 'on', false);
        await r.writeField(Flag, hs[6]!, 'arr', 1000, 1);
        await r.writeField(Flag, hs[4]!, 'n', -3);
      }
      t.is(downloads(), before, 'no whole-heap download');
      t.throws(() => rt.get(Flag, hs[7]!), { message: /GPU holds newer object data/ }, 'the GPU still holds the newer data');
      for (const r of [rt, ref.rt]) {
        await r.parallelDo(Flag, 'bump');
        await r.parallelDo(Flag, 'cull'); // deletes on the GPU
      }
      t.is(await rt.readField(Flag, hs[6]!, 'arr', 1), 1002);
      const e = await t.throwsAsync(rt.readField(Flag, hs[1]!, 'n'), { instanceOf: InvalidHandleError });
      t.is(e!.reason, 'deleted', 'deleted on the GPU, seen without a download');
      t.is(downloads(), before);
      await rt.sync();
      t.deepEqual(rows(rt), rows(ref.rt));
      rt.validateHeap();
      // With the host current (after sync): the host's copy and the GPU's both change.
      await rt.writeField(Flag, hs[4]!, 'n', 100);
      await ref.rt.writeField(Flag, hs[4]!, 'n', 100);
      await rt.parallelDo(Flag, 'bump');
      await ref.rt.parallelDo(Flag, 'bump');
      await rt.sync();
      t.deepEqual(rows(rt), rows(ref.rt));
    } finally {
      await rt.close();
      await ref.rt.close();
    }
  },
);
