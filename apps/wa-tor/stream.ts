/**
 * Random streams kept inside objects: xoshiro128** (the generator of apps/random.ts)
 * whose four 32-bit state words live in an object's fields, so that each cell and each
 * agent draws from its own stream, as the original's per-object curand states. A
 * stream's values do not depend on which thread runs the object, nor on the order in
 * which objects are visited: that is what makes wa-tor deterministic for any number of
 * threads.
 *
 * Seeding:
 *  - agent streams, from one 32-bit seed (the original's `curand_init(seed, 0, 0)`):
 *    the four words are splitmix32's first four outputs, exactly as `new Random(seed)`;
 *  - cell streams, from the run's seed and the cell id (the original's
 *    `curand_init(kSeed, cell_id, 0)`): words = splitmix32 outputs from counter
 *    `seed`, XOR-ed word by word with splitmix32 outputs from counter `~id`, then 8
 *    outputs discarded. Distinct (seed, id) pairs give distinct states.
 */

/** The four state words of a stream, held in an object (an smmo inline array or a plain array). */
export interface StreamState {
  get(index: number): number;
  set(index: number, value: number): void;
}

const GOLDEN = 0x9e3779b9;

function mix(z: number): number {
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return (z ^ (z >>> 16)) >>> 0;
}

/** splitmix32 output number k (k ≥ 1) from counter `s`, as apps/random.ts seeds. */
function splitmix(s: number, k: number): number {
  return mix((s + Math.imul(GOLDEN, k)) | 0);
}

/**
 * Seed an agent's stream in its own fields (an smmo inline array) from a 32-bit seed: the
 * words seedAgentStream writes, without a scratch array (so that the method compiler
 * takes it whole: on the GPU too).
 */
export function seedAgentFields(dst: StreamState, seed: number): void {
  for (let k = 0; k < 4; k++) dst.set(k, splitmix(seed >>> 0, k + 1));
}

/** Seed `out[at … at+3]` for an agent from a 32-bit seed (= `new Random(seed)`'s state). */
export function seedAgentStream(out: Uint32Array, at: number, seed: number): void {
  for (let k = 0; k < 4; k++) out[at + k] = splitmix(seed >>> 0, k + 1);
}

/** Seed `out[at … at+3]` for cell `id` of a run seeded with `seed`. */
export function seedCellStream(out: Uint32Array, at: number, seed: number, id: number): void {
  for (let k = 0; k < 4; k++) out[at + k] = (splitmix(seed >>> 0, k + 1) ^ splitmix(~id >>> 0, k + 1)) >>> 0;
  for (let k = 0; k < 8; k++) nextInArray(out, at);
}

/** Next 32-bit output of the stream whose state is `s[at … at+3]`; advances it. */
export function nextInArray(s: Uint32Array, at: number): number {
  const a = s[at]!;
  const b = s[at + 1]!;
  const c = s[at + 2]! ^ a;
  const d = s[at + 3]! ^ b;
  const result = Math.imul(rotl(Math.imul(b, 5), 7), 9) >>> 0;
  const b2 = b ^ c;
  s[at] = a ^ d;
  s[at + 1] = b2;
  s[at + 2] = c ^ (b << 9);
  s[at + 3] = rotl(d, 11);
  return result;
}

/** Next 32-bit output of the stream held in `s`; advances it. Same sequence as nextInArray. */
export function nextInFields(s: StreamState): number {
  const a = s.get(0);
  const b = s.get(1);
  const c = s.get(2) ^ a;
  const d = s.get(3) ^ b;
  const result = Math.imul(rotl(Math.imul(b, 5), 7), 9) >>> 0;
  s.set(0, (a ^ d) >>> 0);
  s.set(1, (b ^ c) >>> 0);
  s.set(2, (c ^ (b << 9)) >>> 0);
  s.set(3, rotl(d, 11) >>> 0);
  return result;
}

/** A stream's state as a plain JavaScript object (the AOS baseline). */
export interface StreamWords {
  s0: number;
  s1: number;
  s2: number;
  s3: number;
}

/** Next 32-bit output of a plain-object stream; advances it. Same sequence as nextInArray. */
export function nextInWords(s: StreamWords): number {
  const a = s.s0;
  const b = s.s1;
  const c = s.s2 ^ a;
  const d = s.s3 ^ b;
  const result = Math.imul(rotl(Math.imul(b, 5), 7), 9) >>> 0;
  s.s0 = (a ^ d) >>> 0;
  s.s1 = (b ^ c) >>> 0;
  s.s2 = (c ^ (b << 9)) >>> 0;
  s.s3 = rotl(d, 11) >>> 0;
  return result;
}

/** Copy four state words into an object's stream. */
export function storeStream(dst: StreamState, src: Uint32Array, at = 0): void {
  for (let k = 0; k < 4; k++) dst.set(k, src[at + k]!);
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}
