/**
 * structure: the constants of the model, the random spring mesh (built once, on the
 * calling thread, as plain typed arrays), the f32 arithmetic every version shares, and
 * the digest's hash words.
 *
 * The mesh is the random dataset of DynaSOAr's structure example (its random_dataset),
 * built the same way with the same generator: C's `srand(seed)` / `rand()` as glibc
 * implements them (`LibcRand`, below), so `--seed 42` (the CLI's default) builds the
 * very mesh the original builds with its `srand(42)`. For `maxNodes` (the original's
 * kMaxNodes, 1.5 M by default):
 *
 *  1. 0.65·maxNodes Nodes (mass 500) at uniform positions in [0.35, 0.65)²;
 *  2. 0.25·maxNodes AnchorPullNodes at uniform positions, velocity uniform in [-0.05, 0.05)²;
 *  3. 0.1·maxNodes AnchorNodes at uniform positions;
 *  4. 0.7·maxNodes·5/2 springs, each between two random distinct nodes that have fewer
 *     than MAX_DEGREE springs so far, spring factor uniform in [3, 5), maximum force 0.5;
 *     its rest length is the distance of its two nodes.
 *
 * Nodes that get no spring stay in the mesh without one, as in the original.
 */
import { UsageError } from '../../runtime/index.js';

/** The original's configuration constants. */
export const MAX_DEGREE = 5;
/** kNumComputeIterations: force/move rounds per step. */
export const COMPUTE_ITERATIONS = 40;
/** kDt as an f32: Math.fround(0.2). */
export const DT = 0.20000000298023224;
/** kVelocityDampening (0 in the original: the velocity is multiplied by 1). */
export const VELOCITY_DAMPENING = 0;
/** kMaxDistance: the distance of a node no anchor reaches, and the BFS's bound. */
export const MAX_DISTANCE = 32768;

/** Node kinds (the original's kType… values), in Mesh.kind. */
export const KIND_ANCHOR = 2;
export const KIND_ANCHOR_PULL = 3;
export const KIND_NODE = 4;

/** The parameters of the original's random_dataset. */
const SPRING_MIN = 3;
const SPRING_MAX = 5;
const MAX_FORCE = 0.5;
const MASS = 500;
const BORDER_MARGIN = 0.35;

/** Bounds of --nodes: at least 10 (one AnchorNode), at most 4 M (the digest's counts). */
export const MIN_NODES = 10;
export const MAX_NODES = 4_000_000;

/** A mesh, as plain arrays: nodes by index (their id), springs by index. */
export interface Mesh {
  nodes: number;
  /** KIND_NODE, KIND_ANCHOR_PULL or KIND_ANCHOR. */
  kind: Uint8Array;
  posX: Float32Array;
  posY: Float32Array;
  /** Velocity (Nodes: 0 at the start; AnchorPullNodes: their pull velocity; AnchorNodes: 0). */
  velX: Float32Array;
  velY: Float32Array;
  /** Mass (Nodes only). */
  mass: Float32Array;
  springs: number;
  p1: Int32Array;
  p2: Int32Array;
  springFactor: Float32Array;
  maxForce: Float32Array;
}

/**
 * glibc's `rand()` after `srand(seed)` (the TYPE_3 additive feedback generator,
 * r[i] = r[i-3] + r[i-31], the first 310 values discarded, results r >> 1).
 */
export class LibcRand {
  private readonly r = new Int32Array(34);
  private i = 0;

  constructor(seed: number) {
    let word = seed >>> 0 === 0 ? 1 : seed | 0;
    const r: number[] = [word];
    for (let k = 1; k < 31; k++) {
      const hi = Math.trunc(word / 127773);
      const lo = word % 127773;
      word = 16807 * lo - 2836 * hi;
      if (word < 0) word += 2147483647;
      r.push(word);
    }
    for (let k = 31; k < 34; k++) r.push(r[k - 31]!);
    for (let k = 0; k < 34; k++) this.r[k] = r[k]!;
    this.i = 34;
    for (let k = 0; k < 310; k++) this.next();
  }

  /** The next value, 0 … 2³¹-1 (RAND_MAX). */
  next(): number {
    const r = this.r;
    const i = this.i;
    const v = (r[(i - 31) % 34]! + r[(i - 3) % 34]!) | 0;
    r[i % 34] = v;
    this.i = i + 1 === 34 * 1000 ? 34 : i + 1;
    return v >>> 1;
  }

  /** The original's random_float(a, b) in f32: a + (float) rand() / (float) (RAND_MAX / (b - a)). */
  float(a: number, b: number): number {
    const fa = Math.fround(a);
    const fb = Math.fround(b);
    const scale = Math.fround(Math.fround(2147483647) / Math.fround(fb - fa));
    return Math.fround(fa + Math.fround(Math.fround(this.next()) / scale));
  }
}

export function checkNodes(n: number): void {
  if (!Number.isInteger(n) || n < MIN_NODES || n > MAX_NODES)
    throw new UsageError(`structure: --nodes must be an integer in ${MIN_NODES} … ${MAX_NODES}, got ${n}`);
}

/** Numbers of each kind for `maxNodes` (the original's random_dataset: truncated products). */
export function meshSizes(maxNodes: number): { nodes: number; pull: number; anchors: number; springs: number } {
  return {
    nodes: Math.trunc(0.65 * maxNodes),
    pull: Math.trunc(0.25 * maxNodes),
    anchors: Math.trunc(0.1 * maxNodes),
    springs: Math.trunc(0.7 * Math.trunc((maxNodes * MAX_DEGREE) / 2)),
  };
}

/** Distance of two points in f32 (NodeBase::distance_to). */
export function distanceF32(x1: number, y1: number, x2: number, y2: number): number {
  const dx = Math.fround(x1 - x2);
  const dy = Math.fround(y1 - y2);
  return Math.fround(Math.sqrt(Math.fround(Math.fround(dx * dx) + Math.fround(dy * dy))));
}

/** Build the random mesh of the original for `maxNodes` and `seed` (header). */
export function buildMesh(maxNodes: number, seed: number): Mesh {
  checkNodes(maxNodes);
  const sizes = meshSizes(maxNodes);
  const total = sizes.nodes + sizes.pull + sizes.anchors;
  const rand = new LibcRand(seed);
  const kind = new Uint8Array(total);
  const posX = new Float32Array(total);
  const posY = new Float32Array(total);
  const velX = new Float32Array(total);
  const velY = new Float32Array(total);
  const mass = new Float32Array(total);
  const lo = BORDER_MARGIN;
  const hi = 1.0 - Math.fround(BORDER_MARGIN); // a double in the original, rounded to f32 by the call
  let i = 0;
  for (; i < sizes.nodes; i++) {
    kind[i] = KIND_NODE;
    mass[i] = rand.float(MASS, MASS);
    posX[i] = rand.float(lo, hi);
    posY[i] = rand.float(lo, hi);
  }
  for (; i < sizes.nodes + sizes.pull; i++) {
    kind[i] = KIND_ANCHOR_PULL;
    posX[i] = rand.float(lo, hi);
    posY[i] = rand.float(lo, hi);
    velX[i] = rand.float(-0.05, 0.05);
    velY[i] = rand.float(-0.05, 0.05);
  }
  for (; i < total; i++) {
    kind[i] = KIND_ANCHOR;
    posX[i] = rand.float(lo, hi);
    posY[i] = rand.float(lo, hi);
  }
  const degree = new Uint8Array(total);
  const n = sizes.springs;
  const p1 = new Int32Array(n);
  const p2 = new Int32Array(n);
  const springFactor = new Float32Array(n);
  const maxForce = new Float32Array(n).fill(MAX_FORCE);
  for (let s = 0; s < n; s++) {
    let a = -1;
    while (a === -1) {
      const c = rand.next() % total;
      if (degree[c]! < MAX_DEGREE) a = c;
    }
    let b = -1;
    while (b === -1) {
      const c = rand.next() % total;
      if (degree[c]! < MAX_DEGREE && c !== a) b = c;
    }
    p1[s] = a;
    p2[s] = b;
    springFactor[s] = rand.float(SPRING_MIN, SPRING_MAX);
    degree[a] = degree[a]! + 1;
    degree[b] = degree[b]! + 1;
  }
  return { nodes: total, kind, posX, posY, velX, velY, mass, springs: n, p1, p2, springFactor, maxForce };
}

/** Check a mesh (a hand-made one too): degrees, distinct endpoints, positive rest lengths. */
export function checkMesh(mesh: Mesh): void {
  const degree = new Uint8Array(mesh.nodes);
  for (let s = 0; s < mesh.springs; s++) {
    const a = mesh.p1[s]!;
    const b = mesh.p2[s]!;
    if (!(a >= 0 && a < mesh.nodes && b >= 0 && b < mesh.nodes) || a === b)
      throw new UsageError(`structure: spring ${s} joins nodes ${a} and ${b}`);
    if (++degree[a]! > MAX_DEGREE || ++degree[b]! > MAX_DEGREE)
      throw new UsageError(`structure: spring ${s}: a node has more than ${MAX_DEGREE} springs`);
    if (!(distanceF32(mesh.posX[a]!, mesh.posY[a]!, mesh.posX[b]!, mesh.posY[b]!) > 0))
      throw new UsageError(`structure: spring ${s} has rest length 0 (nodes ${a} and ${b} at the same position)`);
  }
}

const GOLDEN = 0x9e3779b9;

/** murmur3's 32-bit finaliser. */
export function mix(z: number): number {
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return (z ^ (z >>> 16)) >>> 0;
}

const bitsF32 = new Float32Array(1);
const bitsU32 = new Uint32Array(bitsF32.buffer);

/** The bits of an f32 value. */
export function f32Bits(v: number): number {
  bitsF32[0] = v;
  return bitsU32[0]!;
}

/** A node's digest word: id, kind, distance, springs, position and velocity bits. */
export function nodeWord(
  id: number,
  kind: number,
  distance: number,
  numSprings: number,
  x: number,
  y: number,
  vx: number,
  vy: number,
): number {
  let h = mix((id + GOLDEN) | 0);
  h = mix((h ^ Math.imul(kind, 0x01000193) ^ distance) + GOLDEN);
  h = mix((h ^ numSprings) + f32Bits(x));
  h = mix((h ^ f32Bits(y)) + f32Bits(vx));
  return mix((h ^ f32Bits(vy)) + GOLDEN);
}

/** A spring's digest word: its nodes' ids (in order) and its force's bits. */
export function springWord(id1: number, id2: number, force: number): number {
  let h = mix((Math.imul(id1, 0x2545f491) + GOLDEN) | 0);
  h = mix((h ^ id2) + GOLDEN);
  return mix((h ^ f32Bits(force)) + 0x7f4a7c15);
}

/** Digest: live nodes · 2³² + (Σ node words + Σ spring words mod 2³²). */
export function digestOf(nodes: number, sum: number): number {
  return nodes * 4294967296 + (sum >>> 0);
}
