/**
 * structure: initial state (the mesh of mesh.ts as smmo objects), step (the list of
 * do-all phases), digest, checksum, invariants and picture.
 */
import { type DefragResult, type Runtime } from '../../runtime/index.js';
import type { AppParams, Picture } from '../app.js';
import {
  buildMesh,
  checkMesh,
  COMPUTE_ITERATIONS,
  digestOf,
  distanceF32,
  KIND_ANCHOR,
  KIND_ANCHOR_PULL,
  KIND_NODE,
  MAX_DEGREE,
  MAX_DISTANCE,
  nodeWord,
  springWord,
  type Mesh,
} from './mesh.js';
import { AnchorNode, AnchorPullNode, Bfs, CLASSES, Node, NodeBase, Spring } from './model.js';

export { CLASSES };

/**
 * Defaults of `smmo run structure`. The original's configuration has kMaxNodes = 1.5 M
 * and 500 steps of 40 compute rounds each; the CLI's default is smaller (README).
 */
export const DEFAULTS = { nodes: 20_000, iterations: 100 };
export const ORIGINAL = { nodes: 1_500_000, iterations: 500 };

export function nodesOf(params: AppParams): number {
  return Number(params['nodes'] ?? DEFAULTS.nodes);
}

/** Create the objects of `mesh`: nodes in id order, then springs in order (their slots in that order), then the Bfs flag. */
export function initFromMesh(rt: Runtime, mesh: Mesh): void {
  checkMesh(mesh);
  const ctx = rt.context;
  const nodes: NodeBase[] = new Array<NodeBase>(mesh.nodes);
  for (let i = 0; i < mesh.nodes; i++) {
    const k = mesh.kind[i];
    let n: NodeBase;
    if (k === KIND_NODE) {
      const node = ctx.create(Node);
      node.mass = mesh.mass[i]!;
      n = node;
    } else if (k === KIND_ANCHOR_PULL) {
      const pull = ctx.create(AnchorPullNode);
      pull.velX = mesh.velX[i]!;
      pull.velY = mesh.velY[i]!;
      n = pull;
    } else if (k === KIND_ANCHOR) {
      n = ctx.create(AnchorNode);
    } else throw new Error(`structure: node ${i} has kind ${k}`);
    n.posX = mesh.posX[i]!;
    n.posY = mesh.posY[i]!;
    n.id = i;
    nodes[i] = n;
  }
  for (let s = 0; s < mesh.springs; s++) {
    const a = nodes[mesh.p1[s]!]!;
    const b = nodes[mesh.p2[s]!]!;
    const spring = ctx.create(Spring);
    spring.p1 = a;
    spring.p2 = b;
    spring.springFactor = mesh.springFactor[s]!;
    spring.maxForce = mesh.maxForce[s]!;
    spring.initialLength = distanceF32(a.posX, a.posY, b.posX, b.posY);
    a.springs.set(a.numSprings, spring);
    a.numSprings += 1;
    b.springs.set(b.numSprings, spring);
    b.numSprings += 1;
  }
  ctx.create(Bfs);
}

/** Build the mesh of `nodes` nodes for `seed` and create its objects. */
export function init(rt: Runtime, nodes: number, seed: number): Promise<void> {
  initFromMesh(rt, buildMesh(nodes, seed));
  return Promise.resolve();
}

/** The Bfs object's handle per runtime: found once by a scan of the heap, then followed through defragmentation (remapBfs). */
const bfsHandles = new WeakMap<Runtime, number>();

/** The Bfs object's handle (the first time on backend 'webgpu': after a sync, for the scan). */
async function bfsHandle(rt: Runtime): Promise<number> {
  let h = bfsHandles.get(rt);
  if (h === undefined) {
    await rt.sync();
    h = 0;
    rt.deviceDo(Bfs, (b) => void (h = b.handle));
    if (h === 0) throw new Error('structure: the heap has no Bfs object');
    bfsHandles.set(rt, h);
  }
  return h;
}

/** After rt.defrag moved objects (App.defrag.remap): the kept Bfs handle names its new slot. */
export function remapBfs(rt: Runtime, result: DefragResult): void {
  const h = bfsHandles.get(rt);
  if (h !== undefined) bfsHandles.set(rt, result.remap(h));
}

/** One compute round: the original's compute(), its removals as passes of their own (model.ts). */
export async function compute(rt: Runtime): Promise<void> {
  await rt.parallelDo(Spring, 'computeForce');
  await rt.parallelDo(NodeBase, 'removeBrokenSprings');
  await rt.parallelDo(Spring, 'deleteBroken');
  await rt.parallelDo(Node, 'move');
  await rt.parallelDo(Node, 'updatePosition');
}

/** BFS levels run between two reads of `Bfs.grew` on backend 'webgpu' (bfsAndDelete). */
export const GPU_BFS_BATCH = 8;

/** The original's bfs_and_delete(): distances from the anchors; what they do not reach goes. */
export async function bfsAndDelete(rt: Runtime): Promise<void> {
  await rt.parallelDo(NodeBase, 'initializeBfs');
  // The host reads and writes only the Bfs object's fields (readField / writeField: on
  // backend 'webgpu' its block crosses the bus, not the heap).
  const h = await bfsHandle(rt);
  await rt.writeField(Bfs, h, 'levels', 0);
  // The host reads `grew` after every level; on the GPU a read waits for the passes before
  // it, so there it looks after every GPU_BFS_BATCH levels instead. The levels run past
  // the last growth change nothing (no node is at distance i + 1 after a level i that grew
  // nothing, so level i + 1 grows nothing either), and bfsVisit records the deepest level.
  const batch = rt.backend === 'webgpu' ? GPU_BFS_BATCH : 1;
  for (let level = 0; level < MAX_DISTANCE - 1;) {
    await rt.writeField(Bfs, h, 'grew', false);
    for (const end = Math.min(level + batch, MAX_DISTANCE - 1); level < end; level++) await rt.parallelDo(NodeBase, 'bfsVisit', level, h);
    if (!(await rt.readField(Bfs, h, 'grew'))) break;
  }
  await rt.parallelDo(Spring, 'bfsDelete');
  await rt.parallelDo(NodeBase, 'bfsDelete');
}

/** One step: pull, 40 compute rounds, BFS and removal (the original's step()). */
export async function step(rt: Runtime): Promise<void> {
  await rt.parallelDo(AnchorPullNode, 'pull');
  for (let i = 0; i < COMPUTE_ITERATIONS; i++) await compute(rt);
  await bfsAndDelete(rt);
}

function kindOf(n: NodeBase): number {
  return n instanceof Node ? KIND_NODE : n instanceof AnchorPullNode ? KIND_ANCHOR_PULL : KIND_ANCHOR;
}

/**
 * Live nodes · 2³² + (Σ node words + Σ spring words, mod 2³²) (mesh.ts): ids, kinds,
 * distances, spring counts, and the f32 bits of positions, velocities and spring forces.
 * A sum, so the order of the objects does not matter.
 */
export function digest(rt: Runtime): number {
  let sum = 0;
  let nodes = 0;
  rt.deviceDo(NodeBase, (n) => {
    nodes++;
    let vx = 0;
    let vy = 0;
    if (n instanceof Node || n instanceof AnchorPullNode) {
      vx = n.velX;
      vy = n.velY;
    }
    sum = (sum + nodeWord(n.id, kindOf(n), n.distance, n.numSprings, n.posX, n.posY, vx, vy)) >>> 0;
  });
  rt.deviceDo(Spring, (s) => {
    sum = (sum + springWord(s.p1!.id, s.p2!.id, s.force)) >>> 0;
  });
  return digestOf(nodes, sum);
}

/**
 * The original's checksum (its debug build): Σ over springs of p1.x · p2.y · force, here
 * summed in doubles in the order of the objects (so equal to the baselines' within
 * rounding: README "Digest").
 */
export function checksum(rt: Runtime): number {
  let sum = 0;
  rt.deviceDo(Spring, (s) => void (sum += s.p1!.posX * s.p2!.posY * s.force));
  return sum;
}

/**
 * Check the model's invariants; throws an Error naming the first violation: every
 * spring is in a slot of both its nodes, every slot's spring names its node, numSprings
 * counts the slots, no spring is broken, distances are consistent (anchors 0; a reached
 * node has a neighbour one closer; springs join nodes at distances at most one apart;
 * no spring touches an unreached node).
 */
export function checkInvariants(rt: Runtime): void {
  let slots = 0;
  rt.deviceDo(NodeBase, (n) => {
    let count = 0;
    let closer = false;
    const d = n.distance;
    for (let i = 0; i < MAX_DEGREE; i++) {
      const s = n.springs.get(i);
      if (s === null) continue;
      count++;
      const p1 = s.p1!;
      const p2 = s.p2!;
      if (!p1.is(n) && !p2.is(n)) throw new Error(`structure: node ${n.id} holds a spring of ${p1.id}–${p2.id}`);
      const other = p1.is(n) ? p2 : p1;
      if (other.distance === d - 1) closer = true;
      if (Math.abs(other.distance - d) > 1)
        throw new Error(`structure: spring ${n.id}–${other.id} joins distances ${d} and ${other.distance}`);
    }
    if (count !== n.numSprings) throw new Error(`structure: node ${n.id} has ${count} springs in its slots, numSprings ${n.numSprings}`);
    slots += count;
    if (n instanceof AnchorNode) {
      if (d !== 0) throw new Error(`structure: anchor ${n.id} at distance ${d}`);
    } else if (d === MAX_DISTANCE) {
      if (count !== 0) throw new Error(`structure: unreached node ${n.id} kept ${count} springs`);
    } else if (!closer) throw new Error(`structure: node ${n.id} at distance ${d} has no neighbour at ${d - 1}`);
  });
  let springs = 0;
  rt.deviceDo(Spring, (s) => {
    springs++;
    if (s.deleteFlag) throw new Error(`structure: broken spring ${s.p1!.id}–${s.p2!.id} is alive`);
    for (const n of [s.p1!, s.p2!]) {
      let found = 0;
      for (let i = 0; i < MAX_DEGREE; i++) if (n.springs.get(i)?.is(s)) found++;
      if (found !== 1) throw new Error(`structure: spring ${s.p1!.id}–${s.p2!.id} is in ${found} slots of node ${n.id}`);
    }
  });
  if (slots !== 2 * springs) throw new Error(`structure: ${slots} spring slots for ${springs} springs`);
  if (rt.count(Bfs) !== 1) throw new Error('structure: there must be one Bfs object');
}

/** Side of the picture in pixels (the original's window: 500 × 500, a position p at p · 500). */
export const PICTURE_SIZE = 500;

/**
 * Colours: background, springs by force / max force in eight steps (black … red, as
 * the original draws them), Node, AnchorNode, AnchorPullNode.
 */
export const PALETTE: readonly (readonly [number, number, number])[] = [
  [255, 255, 255],
  ...Array.from({ length: 8 }, (_, k) => [Math.round((255 * k) / 7), 0, 0] as const),
  [40, 40, 40],
  [30, 90, 230],
  [20, 170, 60],
];
const COLOUR_NODE = 9;
const COLOUR_ANCHOR = 10;
const COLOUR_PULL = 11;

/** Springs as lines coloured by their load, nodes as 3 × 3 squares coloured by their kind. */
export function picture(rt: Runtime): Picture {
  const size = PICTURE_SIZE;
  const pixels = new Uint8Array(size * size);
  const plot = (x: number, y: number, colour: number): void => {
    if (x >= 0 && x < size && y >= 0 && y < size) pixels[y * size + x] = colour;
  };
  rt.deviceDo(Spring, (s) => {
    const ratio = s.maxForce > 0 ? Math.min(1, Math.max(0, s.force / s.maxForce)) : 0;
    const colour = 1 + Math.min(7, Math.floor(ratio * 8));
    line(
      Math.floor(s.p1!.posX * size),
      Math.floor(s.p1!.posY * size),
      Math.floor(s.p2!.posX * size),
      Math.floor(s.p2!.posY * size),
      (x, y) => plot(x, y, colour),
    );
  });
  rt.deviceDo(NodeBase, (n) => {
    const colour = n instanceof Node ? COLOUR_NODE : n instanceof AnchorPullNode ? COLOUR_PULL : COLOUR_ANCHOR;
    const x = Math.floor(n.posX * size);
    const y = Math.floor(n.posY * size);
    for (let dy = -1; dy <= 1; dy++) for (let dx = -1; dx <= 1; dx++) plot(x + dx, y + dy, colour);
  });
  return { width: size, height: size, palette: PALETTE, pixels };
}

/** Bresenham's line from (x0, y0) to (x1, y1), clipped to a long line's first 4 · PICTURE_SIZE pixels. */
function line(x0: number, y0: number, x1: number, y1: number, plot: (x: number, y: number) => void): void {
  const dx = Math.abs(x1 - x0);
  const dy = -Math.abs(y1 - y0);
  const sx = x0 < x1 ? 1 : -1;
  const sy = y0 < y1 ? 1 : -1;
  let err = dx + dy;
  for (let k = 0; k < 4 * PICTURE_SIZE; k++) {
    plot(x0, y0);
    if (x0 === x1 && y0 === y1) return;
    const e2 = 2 * err;
    if (e2 >= dy) {
      err += dy;
      x0 += sx;
    }
    if (e2 <= dx) {
      err += dx;
      y0 += sy;
    }
  }
}
