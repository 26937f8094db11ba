/**
 * collision's merge kernels (wasm/src/collision.rs: Body.prepareMerge, Body.resolveMerge)
 * against the TypeScript methods they implement, on both builds of the module (simd128 and
 * scalar). The kernels claim bit-identical results, so the check is strict: after each
 * pass, every byte of every block (headers, live lanes, dead lanes) is the same on the
 * three heaps (backend ts, wasm simd, wasm scalar), which also proves that no lane outside
 * the iteration bitmaps is written.
 *
 * Heap shapes: 0, 1, 31, 33 and 129 bodies and more; objects deleted inside blocks (holes);
 * a subclass with an extra field (fewer slots per block, other field offsets) mixed in, so
 * that resolveMerge must look a target's fields up by its concrete type. Scenes are dense:
 * half the bodies on a lattice of step 2⁻⁹ (exact in f32, so equal distances occur and the
 * tie rule decides), masses from a few values (equal masses never merge); ids drawn from
 * half as many values as there are bodies, in no relation to the handles, so that ties are
 * decided by the lower id against handle order and, between equal ids, by the lower handle
 * (apps/collision/body.ts "Ties"); the tests assert that targets, ties (decided
 * differently by id than by handle) and successful merges actually occurred.
 *
 * Then whole runs of the app from a dense scene: wasm simd, wasm scalar and wasm on 2
 * threads give the same digest exactly; the TypeScript backend the same body count and a
 * digest within the README's tolerance (computeForce's kernel sums in f32).
 */
import test, { type ExecutionContext } from 'ava';
import { Body, THRESHOLD_SQ } from '../apps/collision/body.js';
import { CLASSES as APP_CLASSES, digest, initBodies, step, type BodyInit } from '../apps/collision/collision.js';
import { Random } from '../apps/random.js';
import { createRuntime, f32, type Runtime } from '../index.js';
import type { WasmVariant } from '../runtime/wasm.js';

/** A subclass without overrides: runs Body's kernels with its own field offsets. */
class Charged extends Body.extend({ charge: f32, spin: f32, tag: f32 }) {}

const CLASSES = [Body, Charged];
const APP_MODULE = new URL('../apps/collision/index.js', import.meta.url);
const LATTICE = 2 ** -9; // 0.00195…: neighbours at 1, √2, 2 steps are within the threshold
const MASSES = [10, 20, 30, 40, 50];

interface Shape {
  bodies: number;
  /** Probability that a body is a Charged. */
  charged: number;
  /** Probability that an object is deleted after all were created. */
  deleteP: number;
  seed: number;
}

type Variant = 'ts' | WasmVariant;
const VARIANTS: readonly Variant[] = ['ts', 'simd', 'scalar'];

/**
 * Kernel tests: Body and Charged, one thread. Whole runs (`app`): the app's classes, and
 * with threads > 1 every pass on the workers (which import the app's module), with a
 * generous start-up time for a loaded machine.
 */
async function runtime(variant: Variant, threads = 1, app = false): Promise<Runtime> {
  return createRuntime({
    classes: app ? APP_CLASSES : CLASSES,
    heap: '4MB',
    threads,
    ...(variant === 'ts' ? { backend: 'ts' } : { backend: 'wasm', wasm: { variant } }),
    ...(threads > 1 ? { modules: [APP_MODULE], inlineBlocks: 0, startTimeoutMs: 120_000 } : {}),
  });
}

/** The same objects, in the same order, with the same values, on every backend; the live handles. */
async function build(shape: Shape, variant: Variant): Promise<{ rt: Runtime; handles: number[] }> {
  const rt = await runtime(variant);
  const rng = new Random(shape.seed);
  const side = Math.ceil(Math.sqrt(shape.bodies));
  const all: number[] = [];
  for (let i = 0; i < shape.bodies; i++) {
    const cls = rng.next() < shape.charged ? Charged : Body;
    // Half on the lattice (exact ties), half at random in the same small square.
    const onLattice = rng.next() < 0.5;
    const lx = Math.floor(rng.next() * side);
    const ly = Math.floor(rng.next() * side);
    const b = rt.create(cls, {
      posX: onLattice ? 0.25 + lx * LATTICE : 0.25 + rng.next() * side * LATTICE,
      posY: onLattice ? -0.5 + ly * LATTICE : -0.5 + rng.next() * side * LATTICE,
      velX: rng.next() - 0.5,
      velY: rng.next() - 0.5,
      mass: MASSES[Math.floor(rng.next() * MASSES.length)]!,
      id: Math.floor(rng.next() * Math.max(1, shape.bodies / 2)),
    });
    all.push(b.handle);
  }
  const handles: number[] = [];
  for (const h of all) {
    if (rng.next() < shape.deleteP) rt.destroy(rt.get(Body, h));
    else handles.push(h);
  }
  return { rt, handles };
}

/** Bytes of every block (headers and all lanes, dead ones included). */
function blockBytes(rt: Runtime): Uint8Array {
  return rt.heap.u8.slice(rt.heap.plan.blocksOffset, rt.heap.plan.heapBytes);
}

function firstDiff(a: Uint8Array, b: Uint8Array): number {
  if (a.length !== b.length) return Math.min(a.length, b.length);
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return i;
  return -1;
}

function sameHeaps(t: ExecutionContext, built: readonly { rt: Runtime }[], label: string): void {
  const ref = blockBytes(built[0]!.rt);
  built.slice(1).forEach((b, k) => t.is(firstDiff(blockBytes(b.rt), ref), -1, `${label}: ${VARIANTS[k + 1]} heap = ts heap`));
}

/**
 * Bodies whose nearest lighter body in range is not unique (the tie rule decides), and
 * among them those where the rule's choice (lower id, then lower handle) is not the lower
 * handle (a kernel that broke ties by handle would choose differently).
 */
function ties(rt: Runtime): { ties: number; byId: number } {
  const bodies: { x: number; y: number; m: number; id: number; h: number }[] = [];
  rt.deviceDo(Body, (b) => void bodies.push({ x: b.posX, y: b.posY, m: b.mass, id: b.id, h: b.handle }));
  let n = 0;
  let byId = 0;
  for (const a of bodies) {
    let best = Infinity;
    let tied: (typeof bodies)[number][] = [];
    for (const o of bodies) {
      if (!(o.m < a.m)) continue;
      const d = (a.x - o.x) ** 2 + (a.y - o.y) ** 2;
      if (d >= THRESHOLD_SQ) continue;
      if (d < best) [best, tied] = [d, [o]];
      else if (d === best) tied.push(o);
    }
    if (tied.length < 2) continue;
    n++;
    const rule = tied.reduce((p, o) => (o.id < p.id || (o.id === p.id && o.h < p.h) ? o : p));
    const lowest = tied.reduce((p, o) => (o.h < p.h ? o : p));
    if (rule !== lowest) byId++;
  }
  return { ties: n, byId };
}

async function check(t: ExecutionContext, shape: Shape): Promise<{ targets: number; wins: number; ties: number; byId: number }> {
  const label = JSON.stringify(shape);
  const built: { rt: Runtime; handles: number[] }[] = [];
  try {
    for (const v of VARIANTS) built.push(await build(shape, v));
    for (const b of built.slice(1)) t.deepEqual(b.handles, built[0]!.handles, `${label}: same handles`);
    sameHeaps(t, built, `${label} before`);
    const ts = built[0]!.rt;

    for (const b of built) await b.rt.parallelDo(Body, 'initializeMerge');
    for (const b of built) await b.rt.parallelDo(Body, 'prepareMerge');
    sameHeaps(t, built, `${label} prepareMerge`);
    let targets = 0;
    ts.deviceDo(Body, (b) => void (b.mergeTarget !== null && targets++));

    for (const b of built) await b.rt.parallelDo(Body, 'resolveMerge');
    sameHeaps(t, built, `${label} resolveMerge`);
    let wins = 0;
    ts.deviceDo(Body, (b) => void (b.successfulMerge && wins++));

    // resolveMerge on arbitrary targets (heavier or lighter, chains, cycles, null): the
    // kernel must follow the method's rule, not only on prepareMerge's output.
    const rng = new Random(shape.seed ^ 0x5eed);
    const live = built[0]!.handles;
    const picks = live.map(() => (rng.next() < 0.2 ? 0 : live[Math.floor(rng.next() * live.length)]!));
    for (const b of built) {
      live.forEach((h, i) => {
        const o = b.rt.get(Body, h);
        o.mergeTarget = picks[i] === 0 ? null : b.rt.get(Body, picks[i]!);
        o.successfulMerge = false;
      });
      await b.rt.parallelDo(Body, 'resolveMerge');
    }
    sameHeaps(t, built, `${label} resolveMerge, arbitrary targets`);

    for (const b of built.slice(1)) {
      const m = b.rt.stats().backend.methods;
      t.is(m['Body.prepareMerge'], 'wasm');
      t.is(m['Body.resolveMerge'], 'wasm');
      if (shape.charged > 0 && shape.bodies > 8) t.is(m['Charged.prepareMerge'], 'wasm');
    }
    for (const b of built) b.rt.validateHeap();
    return { targets, wins, ...ties(ts) };
  } finally {
    for (const b of built) await b.rt.close();
  }
}

for (const bodies of [0, 1, 31, 33, 129]) {
  test(`merge kernels = TypeScript methods, byte for byte: ${bodies} bodies`, async (t) => {
    const r = await check(t, { bodies, charged: 0, deleteP: 0, seed: 7 + bodies });
    if (bodies >= 31) {
      t.true(r.targets > 0, `targets chosen: ${r.targets}`);
      t.true(r.wins > 0, `merges won: ${r.wins}`);
    }
  });
}

test('merge kernels = TypeScript methods, byte for byte: holes, a subclass, ties (several heaps)', async (t) => {
  const total = { targets: 0, wins: 0, ties: 0, byId: 0 };
  for (const shape of [
    { bodies: 33, charged: 0.5, deleteP: 0.3, seed: 1 },
    { bodies: 129, charged: 0, deleteP: 0.25, seed: 2 },
    { bodies: 129, charged: 0.3, deleteP: 0.1, seed: 3 },
    { bodies: 300, charged: 0.2, deleteP: 0.2, seed: 4 },
    { bodies: 64, charged: 1, deleteP: 0.5, seed: 5 },
  ]) {
    const r = await check(t, shape);
    t.true(r.targets > 0 && r.wins > 0, `${JSON.stringify(shape)}: merges happen (${r.targets} targets, ${r.wins} wins)`);
    total.targets += r.targets;
    total.wins += r.wins;
    total.ties += r.ties;
    total.byId += r.byId;
  }
  t.true(total.ties > 0, `the tie rule was exercised (${total.ties} bodies with tied nearest targets)`);
  t.true(total.byId > 0, `ties where the lower id is not the lower handle (${total.byId} of ${total.ties})`);
});

// ------------------------------------------------------------------ whole runs

/** A dense scene: 400 bodies in a 0.12-wide square (about one neighbour in range each). */
function scene(): BodyInit[] {
  const rng = new Random(11);
  return Array.from({ length: 400 }, () => ({
    posX: 0.3 + 0.12 * rng.next(),
    posY: -0.2 + 0.12 * rng.next(),
    velX: (rng.next() - 0.5) / 1000,
    velY: (rng.next() - 0.5) / 1000,
    mass: (rng.next() / 2 + 0.5) * 75,
  }));
}

test('whole runs: wasm simd, scalar and 2 threads give the same digest; ts the same count, digest within tolerance', async (t) => {
  const STEPS = 4;
  const runs: { name: string; digests: number[]; counts: number[] }[] = [];
  for (const [name, variant, threads] of [
    ['ts', 'ts', 1],
    ['simd', 'simd', 1],
    ['scalar', 'scalar', 1],
    ['simd, 2 threads', 'simd', 2],
  ] as const) {
    const rt = await runtime(variant, threads, true);
    try {
      await initBodies(rt, scene());
      const run = { name, digests: [] as number[], counts: [] as number[] };
      for (let k = 0; k < STEPS; k++) {
        await step(rt);
        run.digests.push(digest(rt));
        run.counts.push(rt.count(Body));
      }
      if (variant !== 'ts') t.is(rt.stats().backend.methods['Body.resolveMerge'], 'wasm', name);
      rt.validateHeap();
      runs.push(run);
    } finally {
      await rt.close();
    }
  }
  const [ts, simd, ...rest] = runs;
  t.true(simd!.counts[STEPS - 1]! < 400 - 20, `bodies merged: 400 → ${simd!.counts.join(' → ')}`);
  for (const r of rest) t.deepEqual(r.digests, simd!.digests, `${r.name} = simd, exactly`);
  t.deepEqual(ts!.counts, simd!.counts, 'ts: same body counts');
  ts!.digests.forEach((d, k) =>
    t.true(Math.abs(d - simd!.digests[k]!) <= 1e-6 * ts!.counts[k]!, `step ${k}: ts ${d} vs wasm ${simd!.digests[k]}`),
  );
});
