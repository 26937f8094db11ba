/**
 * The WASM kernels (wasm/src/nbody.rs) against the TypeScript methods they implement —
 * nbody's Body and collision's Body (same kernels, other field offsets: its blocks also
 * hold a reference and two bools) — on both builds of the module (simd128 and scalar), over
 * many heap shapes:
 *  - 0 … 4·32+1 bodies (every size: empty, partial and full blocks, partial lane groups);
 *  - objects deleted inside blocks (holes in the iteration bitmaps);
 *  - subclasses: Heavy (more fields, so 28 slots per block and other field offsets) runs
 *    both kernels; Drifter overrides update, so its update runs as TypeScript while its
 *    computeForce runs the kernel (per-method fallback), and both are in Body's deviceDo.
 *
 * Each case builds the same heap three times (backend ts, wasm simd, wasm scalar: the
 * allocator is deterministic on one thread, so handles agree) and checks:
 *  - computeForce: simd and scalar bit-identical; wasm vs ts within FORCE_TOLERANCE of the
 *    sum of the magnitudes of the pair terms (apps/nbody/kernels.ts states why); no byte
 *    of the blocks other than the live objects' forces changed (dead lanes not written);
 *  - update (from identical forces): the three heaps' blocks byte-identical, dead lanes
 *    and the TypeScript-run Drifters included;
 *  - stats().backend names what ran where; validateHeap() passes.
 */
import test from 'ava';
import * as collision from '../apps/collision/body.js';
import { DT, G, DAMPENING } from '../apps/nbody/body.js';
import { Body } from '../apps/nbody/nbody.js';
import { FORCE_TOLERANCE } from '../apps/nbody/kernels.js';
import { Random } from '../apps/random.js';
import { createRuntime, f32, type Runtime, type SmmoClass } from '../index.js';
import type { WasmVariant } from '../runtime/wasm.js';

class Heavy extends Body.extend({ charge: f32 }) {}

class Drifter extends Body.extend({ drift: f32 }) {
  override update(dt: number): void {
    super.update(dt);
    this.posX += this.drift;
  }
}

/** A set of classes whose base class has computeForce/update kernels. */
interface World {
  classes: readonly SmmoClass[];
  /** The class the passes run on (its deviceDo covers the others). */
  base: typeof Body;
  g: number;
  dampening: number;
  dt: number;
  /** stats().backend.methods after both passes. */
  methods: Record<string, string>;
}

const NBODY: World = {
  classes: [Body, Heavy, Drifter],
  base: Body,
  g: G,
  dampening: DAMPENING,
  dt: DT,
  methods: {
    'Body.computeForce': 'wasm',
    'Heavy.computeForce': 'wasm',
    'Drifter.computeForce': 'wasm',
    'Body.update': 'wasm',
    'Heavy.update': 'wasm',
    'Drifter.update': 'ts',
  },
};

const COLLISION: World = {
  classes: [collision.Body],
  base: collision.Body as unknown as typeof Body,
  g: collision.G,
  dampening: collision.DAMPENING,
  dt: collision.DT,
  methods: { 'Body.computeForce': 'wasm', 'Body.update': 'wasm' },
};

interface Shape {
  world?: World;
  /** Objects of world.classes[0], [1], [2] (nbody: Body, Heavy, Drifter). */
  bodies: number;
  heavies: number;
  drifters: number;
  /** Probability that an object is deleted after all were created. */
  deleteP: number;
  seed: number;
}

interface Built {
  rt: Runtime;
  handles: number[];
}

/** The same objects, in the same order, with the same values, on every backend. */
async function build(shape: Shape, backend: 'ts' | 'wasm', variant?: WasmVariant): Promise<Built> {
  const world = shape.world ?? NBODY;
  const rt = await createRuntime({ classes: world.classes, heap: '2MB', backend, ...(variant ? { wasm: { variant } } : {}) });
  const rng = new Random(shape.seed);
  const order: SmmoClass[] = [];
  [shape.bodies, shape.heavies, shape.drifters].forEach((count, k) => {
    for (let i = 0; i < count; i++) order.push(world.classes[k]!);
  });
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(rng.next() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  const live: number[] = [];
  for (const cls of order) {
    const b = rt.create(cls as typeof Body, {
      posX: 2 * rng.next() - 1,
      posY: 2 * rng.next() - 1,
      // near the walls too, so that some updates bounce
      velX: (rng.next() - 0.5) * 0.2,
      velY: (rng.next() - 0.5) * 0.2,
      forceX: rng.next() - 0.5,
      forceY: rng.next() - 0.5,
      mass: (rng.next() / 2 + 0.5) * 1000,
    });
    if (cls === Drifter) (b as Drifter).drift = (rng.next() - 0.5) * 1e-3;
    if (world === COLLISION) {
      // fields the kernels must leave alone
      const c = b as unknown as collision.Body;
      c.hasIncomingMerge = rng.next() < 0.5;
      if (live.length > 0) c.mergeTarget = rt.get(collision.Body, live[Math.floor(rng.next() * live.length)]!);
    }
    live.push(b.handle);
  }
  const handles: number[] = [];
  for (const h of live) {
    if (rng.next() < shape.deleteP) rt.destroy(rt.get(world.base, h));
    else handles.push(h);
  }
  return { rt, handles };
}

/** The concrete type of the object `h` (from its block header). */
function typeOf(rt: Runtime, h: number) {
  return rt.table.types[rt.heap.blockType(h >>> 5)]!;
}

/** Bytes of every block (headers and all lanes, dead ones included). */
function blockBytes(rt: Runtime): Uint8Array {
  return rt.heap.u8.slice(rt.heap.plan.blocksOffset, rt.heap.plan.heapBytes);
}

/** Byte positions (relative to blocksOffset) of forceX/forceY of every live object. */
function forceBytes(rt: Runtime, handles: readonly number[]): number[] {
  const out: number[] = [];
  for (const h of handles) {
    const t = typeOf(rt, h);
    for (const name of ['forceX', 'forceY']) {
      const off = t.fields.find((f) => f.name === name)!.offsets[0]!;
      const at = rt.heap.blockOffset(h >>> 5) + off + 4 * (h & 31) - rt.heap.plan.blocksOffset;
      for (let k = 0; k < 4; k++) out.push(at + k);
    }
  }
  return out;
}

/** Σ over the other live bodies of |pair term|, per component, in f64 (the tolerance's scale). */
function termScale(world: World, rt: Runtime, h: number): [number, number] {
  const me = rt.get(world.base, h);
  let sx = 0;
  let sy = 0;
  rt.deviceDo(world.base, (o) => {
    if (o.handle === h) return;
    const dx = o.posX - me.posX;
    const dy = o.posY - me.posY;
    const d = Math.sqrt(dx * dx + dy * dy);
    const f = (world.g * me.mass * o.mass) / (d * d + world.dampening);
    sx += Math.abs((f * dx) / d);
    sy += Math.abs((f * dy) / d);
  });
  return [sx, sy];
}

function firstDiff(a: Uint8Array, b: Uint8Array): number {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return i;
  return -1;
}

/** Check one shape; returns the worst relative force error seen. */
async function check(t: import('ava').ExecutionContext, shape: Shape): Promise<number> {
  const world = shape.world ?? NBODY;
  const Base = world.base;
  const label = `${world === NBODY ? 'nbody' : 'collision'} ${JSON.stringify({ ...shape, world: undefined })}`;
  const ts = await build(shape, 'ts');
  const simd = await build(shape, 'wasm', 'simd');
  const scalar = await build(shape, 'wasm', 'scalar');
  try {
    t.deepEqual(simd.handles, ts.handles, `${label}: same handles`);
    t.deepEqual(scalar.handles, ts.handles, `${label}: same handles`);
    const before = blockBytes(simd.rt);
    t.is(firstDiff(before, blockBytes(ts.rt)), -1, `${label}: identical heaps before the pass`);

    // ---- computeForce
    for (const b of [ts, simd, scalar]) await b.rt.parallelDo(Base, 'computeForce');
    // Outside the live objects' forces, the kernels change exactly what the TypeScript
    // pass changes (the iteration bitmaps of the snapshot): no dead lane is written.
    const forceAt = forceBytes(ts.rt, ts.handles);
    const masked = (rt: Runtime): Uint8Array => {
      const bytes = blockBytes(rt);
      for (const i of forceAt) bytes[i] = before[i]!;
      return bytes;
    };
    const tsAfter = masked(ts.rt);
    for (const [name, b] of [
      ['simd', simd],
      ['scalar', scalar],
    ] as const) {
      const d = firstDiff(masked(b.rt), tsAfter);
      t.is(d, -1, `${label} ${name}: computeForce changed byte ${d} of the blocks outside the live forces`);
    }
    let worst = 0;
    for (const h of ts.handles) {
      const [w, s, r] = [simd, scalar, ts].map((b) => b.rt.get(Base, h));
      if (!Object.is(w!.forceX, s!.forceX) || !Object.is(w!.forceY, s!.forceY)) {
        t.fail(`${label}: handle ${h}: simd (${w!.forceX}, ${w!.forceY}) != scalar (${s!.forceX}, ${s!.forceY})`);
      }
      const [scaleX, scaleY] = termScale(world, ts.rt, h);
      const ex = Math.abs(w!.forceX - r!.forceX) / (scaleX || 1);
      const ey = Math.abs(w!.forceY - r!.forceY) / (scaleY || 1);
      if (!(ex <= FORCE_TOLERANCE && ey <= FORCE_TOLERANCE)) {
        t.fail(
          `${label}: handle ${h}: wasm (${w!.forceX}, ${w!.forceY}) vs ts (${r!.forceX}, ${r!.forceY}): relative error ${Math.max(ex, ey)}`,
        );
      }
      if (scaleX === 0) t.is(w!.forceX, 0); // a lone body: no term at all
      worst = Math.max(worst, ex, ey);
    }

    // ---- update, from identical forces
    for (const b of [simd, scalar]) {
      for (const h of ts.handles) {
        const src = ts.rt.get(Base, h);
        const dst = b.rt.get(Base, h);
        dst.forceX = src.forceX;
        dst.forceY = src.forceY;
      }
    }
    for (const b of [ts, simd, scalar]) await b.rt.parallelDo(Base, 'update', world.dt);
    const ref = blockBytes(ts.rt);
    t.is(firstDiff(blockBytes(simd.rt), ref), -1, `${label}: simd update differs from ts`);
    t.is(firstDiff(blockBytes(scalar.rt), ref), -1, `${label}: scalar update differs from ts`);

    // ---- what ran where
    // (every concrete type has a pass, empty or not, so every pair is recorded)
    t.deepEqual(simd.rt.stats().backend, { name: 'wasm', methods: world.methods });
    t.is(ts.rt.stats().backend.name, 'ts');
    t.true(Object.values(ts.rt.stats().backend.methods).every((b) => b === 'ts'));
    for (const b of [ts, simd, scalar]) b.rt.validateHeap();
    return worst;
  } finally {
    for (const b of [ts, simd, scalar]) await b.rt.close();
  }
}

test('kernels agree with the methods for 0 … 129 bodies (every block fill)', async (t) => {
  let worst = 0;
  for (let n = 0; n <= 4 * 32 + 1; n++)
    worst = Math.max(worst, await check(t, { bodies: n, heavies: 0, drifters: 0, deleteP: 0, seed: 1000 + n }));
  t.log(`worst relative force error ${worst.toExponential(2)} (tolerance ${FORCE_TOLERANCE})`);
});

test('kernels agree with deleted objects inside blocks', async (t) => {
  for (const n of [1, 5, 31, 32, 33, 64, 97, 129]) {
    for (const p of [0.1, 0.5, 0.9]) {
      const worst = await check(t, { bodies: n, heavies: 0, drifters: 0, deleteP: p, seed: n * 7 + Math.round(p * 10) });
      t.true(worst <= FORCE_TOLERANCE);
    }
  }
});

test('kernels agree with subclasses: Heavy (28 slots, other offsets) and Drifter (TypeScript update)', async (t) => {
  const shapes: Shape[] = [
    { bodies: 0, heavies: 1, drifters: 0, deleteP: 0, seed: 1 },
    { bodies: 0, heavies: 57, drifters: 0, deleteP: 0, seed: 2 },
    { bodies: 40, heavies: 29, drifters: 3, deleteP: 0, seed: 3 },
    { bodies: 129, heavies: 129, drifters: 33, deleteP: 0.3, seed: 4 },
    { bodies: 17, heavies: 85, drifters: 64, deleteP: 0.6, seed: 5 },
  ];
  const probe = await createRuntime({ classes: NBODY.classes, heap: '2MB' });
  // 8 f32 fields in a block sized for Body's 7 × 32: partial lane groups in every full block.
  t.is(probe.table.byClass(Heavy)!.slots, 28, 'Heavy has 28 slots per block');
  await probe.close();
  for (const s of shapes) await check(t, s);
});

test('a body alone feels no force, on every backend', async (t) => {
  for (const variant of ['simd', 'scalar'] as const) {
    const { rt } = await build({ bodies: 1, heavies: 0, drifters: 0, deleteP: 0, seed: 9 }, 'wasm', variant);
    await rt.parallelDo(Body, 'computeForce');
    rt.deviceDo(Body, (b) => {
      t.is(b.forceX, 0);
      t.is(b.forceY, 0);
    });
    await rt.close();
  }
});

test('collision: the same kernels on its Body (a reference and two bools among the fields)', async (t) => {
  let worst = 0;
  for (const [n, p] of [
    [0, 0],
    [1, 0],
    [33, 0],
    [64, 0.25],
    [129, 0.5],
  ] as const) {
    worst = Math.max(worst, await check(t, { world: COLLISION, bodies: n, heavies: 0, drifters: 0, deleteP: p, seed: 77 + n }));
  }
  t.true(worst <= FORCE_TOLERANCE);
});
