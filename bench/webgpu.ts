/**
 * nbody on the WebGPU backend (issue 5): N bodies × K iterations, timed, cross-checked
 * against the TypeScript reference, with GFLOP/s and the fraction of the adapter's fp32
 * peak when the adapter is one we know (runtime/webgpu/device.ts knownFp32Peak:
 * H100 SXM5 67 TFLOP/s FP32 non-tensor, NVIDIA H100 Tensor Core GPU datasheet).
 *
 * Method:
 *  1. createRuntime with backend 'webgpu' + the app's init (as `smmo run nbody --backend
 *     webgpu`), pipelines compiled before the clock starts (rt.prepare());
 *  2. timed: the K iterations (each: computeForce and update do-alls on the GPU; the
 *     heap upload of the first pass is inside the timing) up to runner.finish(), which
 *     waits for the GPU; then one download for the digest (timed separately);
 *  3. checks: crossCheck() of the first `--check-iterations` iterations from the same
 *     initial state (TypeScript vs GPU), and checkOneStep() of one more step from the
 *     final GPU state (the heap copied into a TypeScript runtime; --check-final 0 skips
 *     it, --check-iterations 0 skips the first). Tolerances:
 *     cli/check.ts DEFAULT_TOLERANCE.
 * Flops: 15 per ordered pair in computeForce (nbody_compute_force.wgsl: rsqrt and div
 * counted as one each), 10 per body in update; N·(N−1) pairs. fp32 peak counts an FMA as
 * two flops, so the fraction is conservative.
 * Anchor (issue 5): the original CUDA DynaSOAr nbody, 20 000 × 3 000 on an H100: 22.6 s.
 *
 * Usage: node dist/bench/webgpu.js [--bodies 20000] [--iterations 3000] [--wg 128] [--split 0 (auto)]
 *        [--check-iterations 3] [--check-final 1] [--passes-per-submit 32] [--seed 1] [--out bench-results/webgpu.json]
 * On a machine without a GPU set VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json
 * (smmo does it by itself when that file exists) and use small sizes.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { arch, cpus, platform } from 'node:os';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import app from '../apps/nbody/index.js';
import { COMPUTE_FORCE_WGSL, UPDATE_WGSL } from '../apps/nbody/kernels.js';
import { createRuntime } from '../index.js';
import { checkOneStep, crossCheck, formatCrossCheck, type CrossCheckReport } from '../cli/check.js';
import { GpuContext, knownFp32Peak } from '../runtime/webgpu/device.js';

const ORIGINAL_SECONDS = 22.6; // original CUDA DynaSOAr, 20 000 × 3 000, H100 (issue 5)

const { values } = parseArgs({
  options: {
    bodies: { type: 'string', default: '20000' },
    iterations: { type: 'string', default: '3000' },
    wg: { type: 'string', default: '128' },
    split: { type: 'string', default: '0' },
    'check-iterations': { type: 'string', default: '3' },
    'check-final': { type: 'string', default: '1' },
    'passes-per-submit': { type: 'string', default: '32' },
    seed: { type: 'string', default: '1' },
    out: { type: 'string', default: 'bench-results/webgpu.json' },
  },
});
const int = (name: keyof typeof values): number => {
  const v = Number(values[name]);
  if (!Number.isInteger(v) || v < 0) throw new Error(`--${String(name)} must be a non-negative integer, got ${String(values[name])}`);
  return v;
};
const N = int('bodies');
const K = int('iterations');
const WG = int('wg');
const SPLIT = int('split');
const CHECK_K = Math.min(int('check-iterations'), K);
const seed = int('seed');
const params = { bodies: N };
const tunables = { 'Body.computeForce': { WG, SPLIT }, 'Body.update': { WG } };

const gpu = await GpuContext.acquire({ log: (l) => console.log(l) });
try {
  const info = gpu.info;
  const peak = knownFp32Peak(info);

  // 1. setup
  const rt = await createRuntime({
    classes: app.classes,
    heap: app.heapFor(params),
    seed,
    backend: 'webgpu',
    webgpu: { gpu, tunables, passesPerSubmit: int('passes-per-submit') },
  });
  await app.init(rt, params, seed);
  const runner = rt.gpu!;
  await rt.prepare();

  // 2. timed run
  const t0 = performance.now();
  for (let i = 0; i < K; i++) await app.step(rt, i);
  await runner.finish();
  const seconds = (performance.now() - t0) / 1000;
  const t1 = performance.now();
  await rt.sync();
  const downloadSeconds = (performance.now() - t1) / 1000;
  const digest = app.digest(rt);
  const stats = runner.stats;
  if (stats.fallbackPasses > 0) throw new Error(`some passes ran in TypeScript: ${JSON.stringify(stats.fallbacks)}`);

  const perPair = COMPUTE_FORCE_WGSL.flops!.perPair!;
  const perBody = UPDATE_WGSL.flops!.perObject!;
  const flops = (N * (N - 1) * perPair + N * perBody) * K;
  const gflops = flops / seconds / 1e9;
  console.log(
    `nbody ${N} bodies × ${K} iterations on ${info.device || info.description} (${info.vendor}/${info.architecture}${info.software ? ', software' : ''})`,
  );
  console.log(
    `  WG=${WG} SPLIT=${stats.tunables['Body.computeForce']?.['SPLIT']}${SPLIT === 0 ? ' (auto)' : ''}: ${seconds.toFixed(3)} s (${((seconds / Math.max(K, 1)) * 1e3).toFixed(3)} ms/iteration), download ${(downloadSeconds * 1e3).toFixed(1)} ms`,
  );
  console.log(
    `  ${gflops.toFixed(1)} GFLOP/s (${perPair} flops/pair, ${perBody}/body)${peak ? `, ${((gflops / (peak.tflops * 1e3)) * 100).toFixed(2)} % of ${peak.name} fp32 peak ${peak.tflops} TFLOP/s (${peak.source})` : ', fp32 peak of this adapter unknown'}`,
  );
  if (N === 20000 && K === 3000)
    console.log(`  vs original CUDA DynaSOAr (22.6 s on H100): ${(ORIGINAL_SECONDS / seconds).toFixed(2)}× faster`);
  console.log(
    `  digest ${digest}; transfers: ${stats.uploads} upload(s), ${stats.downloads} download(s); ${stats.dispatches} dispatches in ${stats.submits} submits`,
  );

  // 3. checks
  let full: CrossCheckReport | null = null;
  if (CHECK_K > 0) {
    full = await crossCheck(app, params, { iterations: CHECK_K, seed, gpu, runner: { tunables } });
    console.log(formatCrossCheck(full));
  }
  const last = int('check-final') > 0 ? await checkOneStep(app, rt, K) : null;
  if (last) console.log(`one step from the final state:\n${formatCrossCheck(last)}`);
  await rt.close();

  const result = {
    bench: 'webgpu-nbody',
    bodies: N,
    iterations: K,
    tunables,
    seconds,
    msPerIteration: (seconds / Math.max(K, 1)) * 1e3,
    downloadSeconds,
    gflops,
    flops: { perPair, perBody, total: flops },
    peak: peak ? { ...peak, fraction: gflops / (peak.tflops * 1e3) } : null,
    originalSeconds: N === 20000 && K === 3000 ? ORIGINAL_SECONDS : null,
    speedupVsOriginal: N === 20000 && K === 3000 ? ORIGINAL_SECONDS / seconds : null,
    digest,
    adapter: info,
    gpuStats: stats,
    check: {
      ok: (full?.ok ?? true) && (last?.ok ?? true),
      fromInitialState: full && {
        iterations: full.iterations,
        ok: full.ok,
        digest: full.digest,
        fields: full.fields,
        tsSeconds: full.tsMs / 1e3,
      },
      oneStepFromFinal: last && { ok: last.ok, digest: last.digest, fields: last.fields, tsSeconds: last.tsMs / 1e3 },
    },
    node: process.version,
    host: { cpu: cpus()[0]?.model ?? '?', cores: cpus().length, platform: platform(), arch: arch() },
    date: new Date().toISOString(),
  };
  mkdirSync(dirname(values.out!), { recursive: true });
  writeFileSync(values.out!, JSON.stringify(result, null, 2) + '\n');
  console.log(`wrote ${values.out}; check ${result.check.ok ? 'OK' : 'FAILED'}`);
  if (!result.check.ok) process.exitCode = 1;
} finally {
  await gpu.close();
}
