/**
 * traffic: the street network (built once, on the calling thread, as plain typed arrays)
 * and the counter-based random numbers of the simulation.
 *
 * The construction follows DynaSOAr's example/traffic (dataset.h create_network_structure,
 * traffic.cu kernel_create_nodes, kernel_create_edges, kernel_create_traffic_lights):
 *
 *  1. Intersections (the original's nodes): each draws, from one stream seeded with the run's
 *     seed (the original's srand(kSeed)), its number of outgoing streets, 1 … MAX_DEGREE,
 *     and a position in the unit square.
 *  2. Each outgoing street picks a random other intersection that has fewer than
 *     MAX_DEGREE incoming streets; the street is the target's next incoming slot.
 *  3. Each intersection gets one cell per outgoing street (the original's cell_out), with
 *     a speed limit uniform in MAX_VELOCITY/2 … MAX_VELOCITY-1 from the intersection's own
 *     stream (the original's curand_init(i)).
 *  4. Each street is a chain of ⌊length / CELL_LENGTH⌋ cells from the source's cell_out to
 *     the target (the original's connect_intersections): each new cell is a ProducerCell
 *     with probability PRODUCER_RATIO, a target (cars leave the simulation there) with
 *     probability TARGET_RATIO, and has the speed limit of the street's first cell. The
 *     street's last cell leads to every cell_out of the target and starts red (speed 0).
 *     The intersection's stream restarts for the streets, as the original re-seeds it.
 *  5. Each intersection with incoming streets gets a traffic light over its incoming last
 *     cells, phase time 5; all start red.
 *
 * Differences, all deliberate: the streams are apps/random.ts's xoshiro128** (not libc
 * rand and curand), lengths are computed in doubles from f32 positions, and an outgoing
 * street that finds no intersection with a free incoming slot is dropped (the original
 * loops forever; only tiny networks get there).
 */
import { UsageError } from '../../runtime/index.js';
import { Random } from '../random.js';

/** The original's configuration.h constants. */
export const MAX_VELOCITY = 10;
export const MAX_DEGREE = 4;
export const CELL_LENGTH = 0.005;
export const PRODUCER_RATIO = 0.02;
export const TARGET_RATIO = 0.003;
export const CAR_ALLOCATION_RATIO = 0.02;
export const PHASE_TIME = 5;
/** Probability of the random slow-down (the original's 0.2). */
export const SLOW_DOWN_RATIO = 0.2;

/** A 32-bit draw below this has probability CAR_ALLOCATION_RATIO. */
export const CAR_THRESHOLD = Math.floor(CAR_ALLOCATION_RATIO * 4294967296);
/** A 32-bit draw below this has probability SLOW_DOWN_RATIO. */
export const SLOW_DOWN_THRESHOLD = Math.floor(SLOW_DOWN_RATIO * 4294967296);

/** Draw indices within one iteration of one car (`draw`'s k). */
export const K_ACCELERATE = 0;
/** Draw K_PATH + i picks the outgoing cell of path step i (0 … MAX_VELOCITY-1). */
export const K_PATH = 1;
export const K_SLOW_DOWN = K_PATH + MAX_VELOCITY;
/** Draw indices of a producer cell within one iteration. */
export const K_PRODUCE = 0;
export const K_CAR_KEY = 1;
export const K_CAR_MAX_VELOCITY = 2;

const GOLDEN = 0x9e3779b9;

/** murmur3's 32-bit finaliser. */
export function mix(z: number): number {
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return (z ^ (z >>> 16)) >>> 0;
}

/**
 * The counter-based random number k (0 … 15) of the object with key `key` in iteration
 * `iteration`: a hash of the three, so it does not depend on which thread runs the
 * object or in which order objects are visited, and needs no state but the key.
 */
export function draw(key: number, iteration: number, k: number): number {
  return mix((key ^ mix((Math.imul(iteration, 16) + k + GOLDEN) | 0)) + GOLDEN);
}

/** The street network, as plain arrays indexed by cell id (and light id). */
export interface Network {
  cells: number;
  /** Speed limit of each cell (the original's max_velocity). */
  maxVelocity: Uint8Array;
  /** Initial current speed limit: 0 for the red last cells of streets. */
  currentMaxVelocity: Uint8Array;
  numOutgoing: Uint8Array;
  /** MAX_DEGREE entries per cell, -1 where none. */
  outgoing: Int32Array;
  isTarget: Uint8Array;
  isProducer: Uint8Array;
  /** The random key of each producer cell (0 elsewhere). */
  producerKey: Uint32Array;
  /** Position in the unit square (rendering only). */
  x: Float32Array;
  y: Float32Array;
  lights: number;
  /** MAX_DEGREE entries per light, -1 where none. */
  lightCells: Int32Array;
  lightNumCells: Uint8Array;
}

export function checkIntersections(n: number): void {
  if (!Number.isInteger(n) || n < 2 || n > 1 << 20)
    throw new UsageError(`traffic: the network must have 2 … ${1 << 20} intersections, got ${n}`);
}

/** The seed of intersection i's own stream. */
function nodeSeed(seed: number, i: number): number {
  return mix((seed ^ mix(i + 1)) >>> 0);
}

class Builder {
  maxVelocity: number[] = [];
  currentMaxVelocity: number[] = [];
  numOutgoing: number[] = [];
  outgoing: number[] = [];
  isTarget: number[] = [];
  isProducer: number[] = [];
  producerKey: number[] = [];
  x: number[] = [];
  y: number[] = [];

  cell(maxVelocity: number, x: number, y: number, producerKey: number | null): number {
    const id = this.maxVelocity.length;
    this.maxVelocity.push(maxVelocity);
    this.currentMaxVelocity.push(maxVelocity);
    this.numOutgoing.push(0);
    this.outgoing.push(-1, -1, -1, -1);
    this.isTarget.push(0);
    this.isProducer.push(producerKey === null ? 0 : 1);
    this.producerKey.push(producerKey ?? 0);
    this.x.push(x);
    this.y.push(y);
    return id;
  }
}

/** Build the network of `intersections` intersections for `seed`. */
export function buildNetwork(intersections: number, seed: number): Network {
  checkIntersections(intersections);
  const n = intersections;
  const rng = new Random(seed >>> 0);
  const numOut = new Int32Array(n);
  const numIn = new Int32Array(n);
  const nx = new Float32Array(n);
  const ny = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    numOut[i] = (rng.nextU32() % MAX_DEGREE) + 1;
    nx[i] = rng.next();
    ny[i] = rng.next();
  }
  const nodeOut = new Int32Array(n * MAX_DEGREE);
  const nodeOutPos = new Int32Array(n * MAX_DEGREE);
  let freeSlots = n * MAX_DEGREE; // incoming slots left in the whole network
  for (let i = 0; i < n; i++) {
    for (let k = 0; k < numOut[i]!; k++) {
      if (freeSlots - (MAX_DEGREE - numIn[i]!) === 0) {
        numOut[i] = k; // no other intersection can take a street (see the header)
        break;
      }
      for (;;) {
        const t = rng.nextU32() % n;
        if (t !== i && numIn[t]! < MAX_DEGREE) {
          nodeOut[i * MAX_DEGREE + k] = t;
          nodeOutPos[i * MAX_DEGREE + k] = numIn[t]!;
          numIn[t]!++;
          freeSlots--;
          break;
        }
      }
    }
  }
  const b = new Builder();
  const cellOut = new Int32Array(n * MAX_DEGREE).fill(-1);
  const cellIn = new Int32Array(n * MAX_DEGREE).fill(-1);
  for (let i = 0; i < n; i++) {
    const r = new Random(nodeSeed(seed, i));
    for (let j = 0; j < numOut[i]!; j++) {
      cellOut[i * MAX_DEGREE + j] = b.cell((r.nextU32() % (MAX_VELOCITY / 2)) + MAX_VELOCITY / 2, nx[i]!, ny[i]!, null);
    }
  }
  for (let i = 0; i < n; i++) {
    const r = new Random(nodeSeed(seed, i));
    for (let k = 0; k < numOut[i]!; k++) {
      const from = cellOut[i * MAX_DEGREE + k]!;
      const target = nodeOut[i * MAX_DEGREE + k]!;
      const fx = b.x[from]!;
      const fy = b.y[from]!;
      const dx = nx[target]! - fx;
      const dy = ny[target]! - fy;
      const steps = Math.floor(Math.sqrt(dx * dx + dy * dy) / CELL_LENGTH);
      const stepX = dx / steps;
      const stepY = dy / steps;
      let prev = from;
      for (let j = 0; j < steps; j++) {
        const px = fx + j * stepX;
        const py = fy + j * stepY;
        const next = b.cell(b.maxVelocity[prev]!, px, py, r.next() < PRODUCER_RATIO ? r.nextU32() : null);
        if (r.next() < TARGET_RATIO) b.isTarget[next] = 1;
        b.numOutgoing[prev] = 1;
        b.outgoing[prev * MAX_DEGREE] = next;
        prev = next;
      }
      b.numOutgoing[prev] = numOut[target]!;
      for (let m = 0; m < numOut[target]!; m++) b.outgoing[prev * MAX_DEGREE + m] = cellOut[target * MAX_DEGREE + m]!;
      b.currentMaxVelocity[prev] = 0;
      cellIn[target * MAX_DEGREE + nodeOutPos[i * MAX_DEGREE + k]!] = prev;
    }
  }
  const lightCells: number[] = [];
  const lightNumCells: number[] = [];
  for (let i = 0; i < n; i++) {
    if (numIn[i] === 0) continue;
    lightNumCells.push(numIn[i]!);
    for (let j = 0; j < MAX_DEGREE; j++) {
      const c = j < numIn[i]! ? cellIn[i * MAX_DEGREE + j]! : -1;
      lightCells.push(c);
      if (c >= 0) b.currentMaxVelocity[c] = 0; // red
    }
  }
  return {
    cells: b.maxVelocity.length,
    maxVelocity: Uint8Array.from(b.maxVelocity),
    currentMaxVelocity: Uint8Array.from(b.currentMaxVelocity),
    numOutgoing: Uint8Array.from(b.numOutgoing),
    outgoing: Int32Array.from(b.outgoing),
    isTarget: Uint8Array.from(b.isTarget),
    isProducer: Uint8Array.from(b.isProducer),
    producerKey: Uint32Array.from(b.producerKey),
    x: Float32Array.from(b.x),
    y: Float32Array.from(b.y),
    lights: lightNumCells.length,
    lightCells: Int32Array.from(lightCells),
    lightNumCells: Uint8Array.from(lightNumCells),
  };
}

/** The words a car contributes to the digest, hashed (the digest sums them: order-independent). */
export function carWord(cellId: number, velocity: number, maxVelocity: number, key: number): number {
  return mix((mix((mix(cellId + GOLDEN) ^ velocity) + Math.imul(maxVelocity, GOLDEN)) ^ key) >>> 0);
}

/** Digest: cars · 2³² + (Σ carWord mod 2³²). */
export function digestOf(cars: number, sum: number): number {
  return cars * 4294967296 + (sum >>> 0);
}
