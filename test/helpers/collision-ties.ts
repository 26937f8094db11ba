/**
 * Exact merge ties of collision (apps/collision/body.ts "Ties": the lower id wins, then the
 * lower handle) in a heap that a defragmentation rearranges: the scene of
 * test/collision-defrag.test.ts (backends ts and wasm) and test/webgpu-collision.test.ts.
 *
 * Two ties, each between a pair of bodies whose first body P lies in one block and whose
 * second Q in the next, at slot 0:
 *   prepareMerge  x (mass 20) at equal distance from two lighter bodies (10): x targets
 *                 the one with the lower id (the pair is P_A, Q_A);
 *   resolveMerge  two heavier bodies (20) at equal distance from b (10), both target b:
 *                 the one with the lower id wins (the pair is P_B, Q_B).
 * The scene is symmetric (offsets ±2⁻⁹ along x from ±0.5: exact in f32 and f64, so the
 * squared distances are equal on every backend, WGSL's f32 included) and the pair
 * members have equal masses, so they never target each other. Every other body of the two
 * blocks is deleted: the first block holds P_A and P_B only, the second Q_A, Q_B, x and b.
 * Both blocks are then candidates of rt.defrag(Body, 1) (at most half full), the first is
 * the source and the second the target (CompactGpu's record: the candidates in block order,
 * the first half the sources), so P_A and P_B move into the second block's lowest free
 * slots, above Q_A and Q_B at slots 0 and 1: the handle order of each pair reverses, the
 * ids stay. `swap` gives each pair's ids the other way round, so that the lower id is the
 * lower handle before the defragmentation (swap false) or after it (swap true).
 */
import { Body } from '../../apps/collision/body.js';
import { initBodies, type BodyInit } from '../../apps/collision/collision.js';
import type { Runtime } from '../../index.js';

/** Indices (= ids unless swapped) of the scene's bodies among the 64 created. */
const P_A = 3;
const P_B = 4;
const Q_A = 32;
const Q_B = 33;
const X = 40;
const B = 41;
const SCENE = new Set([P_A, P_B, Q_A, Q_B, X, B]);
/** The pairs' offset from x and b: 2⁻⁹ ≈ 0.00195, within the merge threshold (0.005). */
const D = 2 ** -9;

export interface TieScene {
  /** Ids of the prepareMerge pair and of x; of the resolveMerge pair and of b. */
  ids: { pA: number; qA: number; x: number; pB: number; qB: number; b: number };
  /** Handles of the six bodies, by the same names (as created; defrag changes them). */
  handles: { pA: number; qA: number; x: number; pB: number; qB: number; b: number };
}

const at = (posX: number, posY: number, mass: number): BodyInit => ({ posX, posY, velX: 0, velY: 0, mass });

/** Create the scene in `rt` (a fresh runtime of collision's classes), host side. */
export async function buildTieScene(rt: Runtime, swap: boolean): Promise<TieScene> {
  const bodies: BodyInit[] = Array.from({ length: 64 }, () => at(0.9, -0.9, 1)); // fillers, deleted below
  bodies[X] = at(0.5, 0.5, 20);
  bodies[P_A] = at(0.5 + D, 0.5, 10);
  bodies[Q_A] = at(0.5 - D, 0.5, 10);
  bodies[B] = at(-0.5, -0.5, 10);
  bodies[P_B] = at(-0.5 + D, -0.5, 20);
  bodies[Q_B] = at(-0.5 - D, -0.5, 20);
  const h = await initBodies(rt, bodies);
  const ids = { pA: P_A, qA: Q_A, x: X, pB: P_B, qB: Q_B, b: B };
  if (swap) {
    Object.assign(ids, { pA: Q_A, qA: P_A, pB: Q_B, qB: P_B });
    rt.get(Body, h[P_A]!).id = ids.pA;
    rt.get(Body, h[Q_A]!).id = ids.qA;
    rt.get(Body, h[P_B]!).id = ids.pB;
    rt.get(Body, h[Q_B]!).id = ids.qB;
  }
  h.forEach((handle, i) => {
    if (!SCENE.has(i)) rt.destroy(rt.get(Body, handle));
  });
  return { ids, handles: { pA: h[P_A]!, qA: h[Q_A]!, x: h[X]!, pB: h[P_B]!, qB: h[Q_B]!, b: h[B]! } };
}

/** What the merge phases decided, by id: x's target, and the bodies whose merge succeeded. */
export interface TieDecisions {
  /** The id of x's mergeTarget (null: none). */
  xTarget: number | null;
  /** Ids with successfulMerge, ascending. */
  winners: number[];
}

/** Run initializeMerge, prepareMerge and resolveMerge; read the decisions (after rt.sync()). */
export async function decideMerges(rt: Runtime, scene: TieScene): Promise<TieDecisions> {
  for (const m of ['initializeMerge', 'prepareMerge', 'resolveMerge'] as const) await rt.parallelDo(Body, m);
  await rt.sync();
  let xTarget: number | null = null;
  const winners: number[] = [];
  rt.deviceDo(Body, (o) => {
    if (o.id === scene.ids.x) xTarget = o.mergeTarget === null ? null : o.mergeTarget.id;
    if (o.successfulMerge) winners.push(o.id);
  });
  return { xTarget, winners: winners.sort((a, b) => a - b) };
}

/** The rule's decisions: x targets the lower id of its pair and wins; of the other pair the lower id wins. */
export function expectedDecisions(scene: TieScene): TieDecisions {
  const { pA, qA, x, pB, qB } = scene.ids;
  return { xTarget: Math.min(pA, qA), winners: [x, Math.min(pB, qB)].sort((a, b) => a - b) };
}
