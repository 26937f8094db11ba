/**
 * barnes-hut: initial state, step (the list of do-all phases), digest, invariants and
 * picture. Classes and rules: model.ts.
 */
import { UsageError, type DefragResult, type Runtime } from '../../runtime/index.js';
import type { AppParams, Picture } from '../app.js';
import { Random } from '../random.js';
import { BodyNode, CLASSES, DAMPENING, DIST_THRESHOLD, DT, G, MAX_MASS, NodeBase, slotOf, TreeNode } from './model.js';

export { CLASSES };

/** The original's size (configuration.h: kNumBodies, kIterations): about 28 hours on 16 CPU threads (apps/barnes-hut/README.md). */
export const ORIGINAL = { bodies: 300_000, iterations: 4000 };
/** `smmo run barnes-hut` without flags: 20 000 bodies × 100 iterations (about 2 minutes on one thread); the original's size with --bodies 300000 --iterations 4000. */
export const DEFAULTS = { bodies: 20_000, iterations: 100, threshold: DIST_THRESHOLD };
/** --bodies at most (heapFor: the heap of a runtime is at most 4 GiB). */
export const MAX_BODIES = 8_000_000;

/** A body's initial values. */
export interface BodyInit {
  posX: number;
  posY: number;
  velX: number;
  velY: number;
  mass: number;
}

/** `n` bodies from Random(seed), five draws per body in this order (the original's kernel_init_bodies). */
export function drawBodies(n: number, seed: number): BodyInit[] {
  const rng = new Random(seed);
  const out: BodyInit[] = [];
  for (let i = 0; i < n; i++) {
    const posX = 1.98 * rng.next() - 0.99;
    const posY = 1.98 * rng.next() - 0.99;
    const velX = (rng.next() - 0.5) / 1000;
    const velY = (rng.next() - 0.5) / 1000;
    const mass = (rng.next() / 2 + 0.5) * MAX_MASS;
    out.push({ posX, posY, velX, velY, mass });
  }
  return out;
}

export function bodiesOf(params: AppParams): number {
  return Number(params['bodies'] ?? DEFAULTS.bodies);
}

export function thresholdOf(params: AppParams): number {
  return Number(params['threshold'] ?? DEFAULTS.threshold);
}

export function checkBodies(n: number): void {
  if (!Number.isInteger(n) || n < 1 || n > MAX_BODIES)
    throw new UsageError(`barnes-hut: --bodies must be an integer in 1 … ${MAX_BODIES}, got ${n}`);
}

export function checkThreshold(t: number): void {
  if (!Number.isFinite(t) || t < 0) throw new UsageError(`barnes-hut: --threshold must be a finite number ≥ 0, got ${t}`);
}

/** Check the app's parameters (UsageError naming the flag). */
export function checkParams(params: AppParams): void {
  checkBodies(bodiesOf(params));
  checkThreshold(thresholdOf(params));
}

// ------------------------------------------------------------------ smmo version

/** What a runtime's simulation keeps outside the heap: the root's handle and the opening distance. */
interface Sim {
  root: number;
  threshold: number;
  /** Settle rounds of the last insertion (tests: the same on every thread count). */
  rounds: number;
}

const sims = new WeakMap<Runtime, Sim>();

function simOf(rt: Runtime): Sim {
  const s = sims.get(rt);
  if (s === undefined) throw new UsageError('barnes-hut: this runtime has no simulation; call init() first');
  return s;
}

/** Create the root TreeNode ([-1, 1)²) and the given bodies (ids 0 … n-1 in order), then insert them into the tree. */
export async function initBodies(rt: Runtime, bodies: readonly BodyInit[], threshold = DEFAULTS.threshold): Promise<void> {
  checkBodies(bodies.length);
  checkThreshold(threshold);
  for (const b of bodies) {
    if (!(b.posX >= -1 && b.posX < 1 && b.posY >= -1 && b.posY < 1 && b.mass > 0))
      throw new UsageError(`barnes-hut: a body must lie in [-1, 1)² with a positive mass, got (${b.posX}, ${b.posY}), mass ${b.mass}`);
  }
  if (sims.has(rt)) throw new UsageError('barnes-hut: this runtime already has a simulation');
  const root = rt.create(TreeNode, { p1X: -1, p1Y: -1, p2X: 1, p2Y: 1 }).handle;
  sims.set(rt, { root, threshold, rounds: 0 });
  await rt.parallelNew(BodyNode, bodies.length, (b, i) => {
    const v = bodies[i]!;
    b.posX = v.posX;
    b.posY = v.posY;
    b.velX = v.velX;
    b.velY = v.velY;
    b.mass = v.mass;
    b.id = i;
  });
  await insert(rt, root);
}

/** `n` random bodies for `seed` (drawBodies), inserted into a new tree. */
export async function init(rt: Runtime, n: number, seed: number, threshold = DEFAULTS.threshold): Promise<void> {
  checkBodies(n);
  await initBodies(rt, drawBodies(n, seed), threshold);
}

/** Insert every detached body: rounds of descend, claim, settle until a descend finds none (model.ts "Insertion"). */
async function insert(rt: Runtime, root: number): Promise<void> {
  const sim = simOf(rt);
  sim.rounds = 0;
  for (;;) {
    // The host reads and writes the root's flag between passes: on backend 'webgpu' a copy
    // of the root's block, not of the heap (readField / writeField).
    await rt.writeField(TreeNode, root, 'pending', false);
    await rt.parallelDo(BodyNode, 'descend', root);
    if (!(await rt.readField(TreeNode, root, 'pending'))) return;
    await rt.parallelDo(BodyNode, 'claim');
    await rt.parallelDo(TreeNode, 'settle');
    sim.rounds++;
  }
}

/** Settle rounds of the last insertion (init's, or the last step's). */
export function insertionRounds(rt: Runtime): number {
  return simOf(rt).rounds;
}

/** Tree levels processed between two reads of the root's `done` on backend 'webgpu' (bottomUp). */
export const GPU_LEVEL_BATCH = 8;

/**
 * A bottom-up pass over the tree: `method` on the frontier, then the next frontier, until
 * the root is done. The host reads the root's flag after every level; on the GPU a read
 * waits for the passes before it, so there it reads after every GPU_LEVEL_BATCH levels.
 * The levels run after the root is done change nothing: every remaining TreeNode is done
 * then (the root became frontier only when its TreeNode children were done, and so on
 * down), so updateFrontier returns at once and no node is frontier for `method`.
 */
async function bottomUp(rt: Runtime, root: number, method: 'summarize' | 'collapse'): Promise<void> {
  const batch = rt.backend === 'webgpu' ? GPU_LEVEL_BATCH : 1;
  await rt.parallelDo(TreeNode, 'initializeFrontier');
  for (;;) {
    for (let level = 1; ; level++) {
      await rt.parallelDo(TreeNode, method);
      if (level === batch) break;
      await rt.parallelDo(TreeNode, 'updateFrontier');
    }
    if (await rt.readField(TreeNode, root, 'done')) return;
    await rt.parallelDo(TreeNode, 'updateFrontier');
  }
}

/** One iteration, as the original's step(): summaries, forces, move, re-insert, collapse. */
export async function step(rt: Runtime): Promise<void> {
  const { root, threshold } = simOf(rt);
  // Tree summaries: mass and centre of mass, bottom-up.
  await bottomUp(rt, root, 'summarize');
  // N-body step.
  await rt.parallelDo(BodyNode, 'computeForce', root, threshold);
  await rt.parallelDo(BodyNode, 'update', DT);
  await rt.parallelDo(BodyNode, 'clearNode');
  // Re-insert the bodies that left their slot.
  await insert(rt, root);
  // Delete emptied TreeNodes, bottom-up.
  await bottomUp(rt, root, 'collapse');
}

/**
 * After rt.defrag moved objects (App.defrag.remap, `smmo run --defrag`): the root's handle,
 * the only handle the simulation keeps outside the heap, names the root's new slot. The
 * TreeNodes' claim slots hold handles only within an insertion round (settle clears them),
 * never between iterations, where defragmentation runs.
 */
export function remapRoot(rt: Runtime, result: DefragResult): void {
  const s = simOf(rt);
  s.root = result.remap(s.root);
}

/** The state as numbers (state files): the opening distance. */
export function saveState(rt: Runtime): Record<string, number> {
  return { threshold: simOf(rt).threshold };
}

/** Take over a runtime loaded from a state file: find the root (the TreeNode without a parent) and check the tree. */
export function adoptTree(rt: Runtime, threshold: number): void {
  checkThreshold(threshold);
  if (sims.has(rt)) throw new UsageError('barnes-hut: this runtime already has a simulation');
  let root = 0;
  let roots = 0;
  rt.deviceDo(TreeNode, (t) => {
    if (t.parent === null) {
      roots++;
      root = t.handle;
    }
  });
  if (roots !== 1) throw new UsageError(`barnes-hut: the state has ${roots} TreeNodes without a parent; a tree has one root`);
  sims.set(rt, { root, threshold, rounds: 0 });
  try {
    checkInvariants(rt);
  } catch (e) {
    sims.delete(rt);
    throw new UsageError(`barnes-hut: the state is not a valid tree: ${(e as Error).message}`);
  }
}

/** Counts and the float checksum of a state (the digest's parts). */
export interface Summary {
  bodies: number;
  treeNodes: number;
  /** Σ over bodies, in id order, of posX + 2·posY + 3·velX + 4·velY (float64). */
  checksum: number;
}

/** Σ in id order of posX + 2·posY + 3·velX + 4·velY; `terms[id]` holds each body's term. */
export function checksumOf(terms: Float64Array): number {
  let s = 0;
  for (let i = 0; i < terms.length; i++) s += terms[i]!;
  return s;
}

/** One body's checksum term. */
export function termOf(posX: number, posY: number, velX: number, velY: number): number {
  return posX + 2 * posY + 3 * velX + 4 * velY;
}

/** The digest's parts. */
export function summary(rt: Runtime): Summary {
  const n = rt.count(BodyNode);
  const terms = new Float64Array(n);
  rt.deviceDo(BodyNode, (b) => {
    terms[b.id] = termOf(b.posX, b.posY, b.velX, b.velY);
  });
  return { bodies: n, treeNodes: rt.count(TreeNode), checksum: checksumOf(terms) };
}

/** bodies + treeNodes + checksum (Summary); the same on every thread count and in both baselines. */
export function digestOf(s: Summary): number {
  return s.bodies + s.treeNodes + s.checksum;
}

export function digest(rt: Runtime): number {
  return digestOf(summary(rt));
}

/**
 * Check the tree's invariants; throws an Error naming the first violation: the root is the
 * TreeNode ([-1, 1)²) without parent; every child's parent and childIndex name the slot
 * that holds it; every body is in the tree, in the slot whose quarter of its parent's box
 * holds it; every TreeNode but the root has a child and is not a TreeNode whose only child
 * is a body (after collapse; `collapsed` false: in the middle of a step); each TreeNode's
 * box is its slot's quarter of its parent's. With `summaries`: every TreeNode's mass is the
 * sum of its bodies' masses and its centre of mass their mass-weighted mean (relative
 * tolerance 1e-9: summed per node, not per body).
 */
export function checkInvariants(rt: Runtime, options: { collapsed?: boolean; summaries?: boolean } = {}): void {
  const { collapsed = true, summaries = false } = options;
  const { root } = simOf(rt);
  const r = rt.get(TreeNode, root);
  if (r.parent !== null || r.p1X !== -1 || r.p1Y !== -1 || r.p2X !== 1 || r.p2Y !== 1)
    throw new Error('barnes-hut: the root is not the parentless TreeNode of [-1, 1)²');
  let inTree = 0;
  let treeNodes = 0;
  // Walk the tree from the root (explicit stack), checking each node's children.
  const stack: number[] = [root];
  // Per TreeNode handle: the bodies' mass, Σ m·x, Σ m·y (bottom-up, for `summaries`).
  const order: number[] = [];
  while (stack.length > 0) {
    const h = stack.pop()!;
    order.push(h);
    treeNodes++;
    const t = rt.get(TreeNode, h);
    const x1 = t.p1X;
    const y1 = t.p1Y;
    const x2 = t.p2X;
    const y2 = t.p2Y;
    let children = 0;
    let bodies = 0;
    for (let i = 0; i < 4; i++) {
      const child = rt.get(TreeNode, h).children.get(i);
      if (child === null) continue;
      children++;
      if (child.parent?.handle !== h || child.childIndex !== i)
        throw new Error(
          `barnes-hut: the child in slot ${i} of TreeNode ${h} names parent ${child.parent?.handle ?? 'null'}, slot ${child.childIndex}`,
        );
      if (child instanceof BodyNode) {
        bodies++;
        inTree++;
        const s = slotOf(x1, y1, x2, y2, child.posX, child.posY);
        if (s !== i)
          throw new Error(
            `barnes-hut: body ${child.id} at (${child.posX}, ${child.posY}) is in slot ${i} of [${x1}, ${x2}) × [${y1}, ${y2}), its slot there is ${s}`,
          );
      } else {
        const c = child as TreeNode;
        const mx = (x1 + x2) / 2;
        const my = (y1 + y2) / 2;
        const ex1 = (i & 1) !== 0 ? mx : x1;
        const ex2 = (i & 1) !== 0 ? x2 : mx;
        const ey1 = (i & 2) !== 0 ? my : y1;
        const ey2 = (i & 2) !== 0 ? y2 : my;
        if (c.p1X !== ex1 || c.p2X !== ex2 || c.p1Y !== ey1 || c.p2Y !== ey2)
          throw new Error(`barnes-hut: TreeNode ${c.handle}'s box is not quarter ${i} of its parent's`);
        stack.push(c.handle);
      }
    }
    if (collapsed && h !== root) {
      if (children === 0) throw new Error(`barnes-hut: TreeNode ${h} has no children after collapse`);
      if (children === 1 && bodies === 1) throw new Error(`barnes-hut: TreeNode ${h}'s only child is a body after collapse`);
    }
  }
  const n = rt.count(BodyNode);
  if (inTree !== n) throw new Error(`barnes-hut: ${inTree} of ${n} bodies are in the tree`);
  const all = rt.count(TreeNode);
  if (treeNodes !== all) throw new Error(`barnes-hut: ${treeNodes} TreeNodes in the tree, ${all} exist`);
  const ids = new Uint8Array(n);
  rt.deviceDo(BodyNode, (b) => {
    if (!(b.id < n) || ids[b.id] === 1) throw new Error(`barnes-hut: body ids are not 0 … ${n - 1} (id ${b.id})`);
    ids[b.id] = 1;
    if (b.cursor !== null) throw new Error(`barnes-hut: body ${b.id} is in the tree but keeps a cursor`);
  });
  if (summaries) checkSummaries(rt, order);
}

/** Each TreeNode's mass and centre of mass against a per-body sum over its subtree (children first: reverse DFS order). */
function checkSummaries(rt: Runtime, order: readonly number[]): void {
  const sums = new Map<number, [m: number, mx: number, my: number]>();
  for (let k = order.length - 1; k >= 0; k--) {
    const h = order[k]!;
    let m = 0;
    let mx = 0;
    let my = 0;
    for (let i = 0; i < 4; i++) {
      const child = rt.get(TreeNode, h).children.get(i);
      if (child === null) continue;
      if (child instanceof BodyNode) {
        m += child.mass;
        mx += child.mass * child.posX;
        my += child.mass * child.posY;
      } else {
        const s = sums.get(child.handle)!;
        m += s[0];
        mx += s[1];
        my += s[2];
      }
    }
    sums.set(h, [m, mx, my]);
    const t = rt.get(TreeNode, h);
    const close = (a: number, b: number, scale: number): boolean => Math.abs(a - b) <= 1e-9 * scale;
    if (!close(t.mass, m, m) || !close(t.posX, mx / m, 1) || !close(t.posY, my / m, 1))
      throw new Error(`barnes-hut: TreeNode ${h} has mass ${t.mass} at (${t.posX}, ${t.posY}); its bodies: ${m} at (${mx / m}, ${my / m})`);
  }
}

/** Force on each body by direct summation over all other bodies (tests: the tree's error), indexed by id. */
export function directForces(bodies: readonly BodyInit[]): { fx: Float64Array; fy: Float64Array } {
  const n = bodies.length;
  const fx = new Float64Array(n);
  const fy = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const b = bodies[i]!;
    let sx = 0;
    let sy = 0;
    for (let j = 0; j < n; j++) {
      if (j === i) continue;
      const o = bodies[j]!;
      const dx = o.posX - b.posX;
      const dy = o.posY - b.posY;
      const dist = Math.sqrt(dx * dx + dy * dy);
      const f = (G * o.mass * b.mass) / (dist * dist + DAMPENING);
      sx += (f * dx) / dist;
      sy += (f * dy) / dist;
    }
    fx[i] = sx;
    fy[i] = sy;
  }
  return { fx, fy };
}

/** The summaries and forces of the current tree without moving anything (tests): the first phases of step(). */
export async function computeForces(rt: Runtime): Promise<void> {
  const { root, threshold } = simOf(rt);
  await bottomUp(rt, root, 'summarize');
  await rt.parallelDo(BodyNode, 'computeForce', root, threshold);
}

/** Side of the picture in pixels (the original's window: 500 × 500). */
export const PICTURE_SIZE = 500;

/** Colours: background, tree box, body. */
export const PALETTE: readonly (readonly [number, number, number])[] = [
  [255, 255, 255],
  [150, 170, 255],
  [0, 0, 0],
];

/** The tree's boxes (outlines) and the bodies (a pixel each), y up; [-1, 1)² fills the picture. */
export function picture(rt: Runtime): Picture {
  const size = PICTURE_SIZE;
  const pixels = new Uint8Array(size * size);
  const px = (x: number): number => Math.min(size - 1, Math.max(0, Math.floor(((x + 1) / 2) * size)));
  const py = (y: number): number => size - 1 - px(y);
  rt.deviceDo(TreeNode, (t) => {
    const x1 = px(t.p1X);
    const x2 = px(t.p2X);
    const y1 = py(t.p1Y);
    const y2 = py(t.p2Y);
    for (let x = x1; x <= x2; x++) {
      pixels[y1 * size + x] = 1;
      pixels[y2 * size + x] = 1;
    }
    for (let y = y2; y <= y1; y++) {
      pixels[y * size + x1] = 1;
      pixels[y * size + x2] = 1;
    }
  });
  rt.deviceDo(BodyNode, (b) => {
    pixels[py(b.posY) * size + px(b.posX)] = 2;
  });
  return { width: size, height: size, palette: PALETTE, pixels };
}

export { BodyNode, NodeBase, TreeNode };
