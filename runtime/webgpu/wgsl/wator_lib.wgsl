// wa-tor on the GPU: what the six pass kernels (wator_*.wgsl) share. The rules, reads,
// draws and writes of apps/wa-tor/model.ts (and wasm/src/wator.rs, wator_update.rs), one
// invocation per (list position, slot) of the pass's block list; lanes whose iteration
// bit is clear return. Declared in apps/wa-tor/kernels.ts (WGSL section).
//
// Heap access: every heap word is atomic<u32> (alloc.wgsl is appended to every wator
// kernel, so all six share one declaration of the heap). `Cell.neighborRequest[0..5]`
// are five 1-byte SOA arrays: four cells share a word, which neighbouring invocations
// write at the same time, so a flag is raised with atomicOr and cleared with atomicAnd on
// its word, never by a plain read-modify-write of the word.
//
// Determinism (model.ts "Who writes what"; docs/webgpu.md "wa-tor: every pass on the
// GPU"): in X.prepare an agent writes its own fields and one flag byte that only it can
// raise (flag d of cell C is raised only by the agent on C's neighbour in direction d;
// STAY of C only by the agent on C), and reads `Cell.agent`, which nobody writes in that
// pass; in Cell.decide a cell draws from its own stream and writes `newPosition` of at
// most one agent, which no other cell grants; in X.update an agent writes its own
// fields, the cell it leaves (nobody was granted it: it was occupied) and the cell it
// was granted (no one else enters it); a shark deletes at most the fish on that cell,
// and every child's stream is seeded from its parent's. So every value written does not
// depend on the order in which invocations run; handles do (GPU allocation order), which
// the digest does not see.

override WG: u32 = 64u;
override F_rs_0: u32; // own class's randomState[0] (u32; Cell and Agent both have one)
override F_rs_1: u32;
override F_rs_2: u32;
override F_rs_3: u32;
override F_cellNb_0: u32; // Cell.neighbors[LEFT] (ref)
override F_cellNb_1: u32; // TOP
override F_cellNb_2: u32; // RIGHT
override F_cellNb_3: u32; // BOTTOM
override F_cellAgent: u32; // Cell.agent (ref: u32 handle, 0 = null)
override F_cellReq_0: u32; // Cell.neighborRequest[0] (bool as u8)
override F_cellReq_1: u32;
override F_cellReq_2: u32;
override F_cellReq_3: u32;
override F_cellReq_4: u32; // STAY
override T_FISH: u32; // type id of Fish (it has no subclasses: `instanceof Fish` is a type test)

const SPAWN_THRESHOLD: u32 = 4u;
const ENERGY_BOOST: u32 = 4u;
const ENERGY_START: u32 = 2u;
const STAY: u32 = 4u;

struct Params {
  list_start: u32, // unused: the list comes from `lists` (gpuLists, runtime/webgpu/gpu-snapshot.ts G4)
  list_count: u32, // unused, as list_start
  type_id: u32, // the visited class's type id
  p3: u32,
};

@group(0) @binding(0) var<storage, read_write> heap: array<atomic<u32>>;
@group(0) @binding(1) var<uniform> P: Params;
@group(0) @binding(4) var<storage, read_write> status: array<atomic<u32>>;
/** The pass snapshot's lists: [4t] count, [4t + 1] start of type t (gpu-snapshot.ts). */
@group(0) @binding(5) var<storage, read> lists: array<u32>;

/** A bool := true (atomicOr: the other three bytes of the word are other cells', written concurrently). */
fn w_raise8(h: u32, off: u32) {
  atomicOr(&heap[o_byte_word(h, off)], 1u << (8u * (h & 3u)));
}
/** A 1-byte field := 0 (atomicAnd). */
fn w_clear8(h: u32, off: u32) {
  atomicAnd(&heap[o_byte_word(h, off)], ~(0xffu << (8u * (h & 3u))));
}

/** Type id of live object h (its block's type word; constant while h is live). */
fn w_type(h: u32) -> u32 {
  return atomicLoad(&heap[block_word(h >> SLOT_BITS) + BLOCK_TYPE_WORD]);
}

/** Offset of Cell.neighbors[d]. */
fn w_nb_off(d: u32) -> u32 {
  switch d {
    case 0u: {
      return F_cellNb_0;
    }
    case 1u: {
      return F_cellNb_1;
    }
    case 2u: {
      return F_cellNb_2;
    }
    default: {
      return F_cellNb_3;
    }
  }
}
/** Offset of Cell.neighborRequest[d] (d = STAY: the stay flag). */
fn w_req_off(d: u32) -> u32 {
  switch d {
    case 0u: {
      return F_cellReq_0;
    }
    case 1u: {
      return F_cellReq_1;
    }
    case 2u: {
      return F_cellReq_2;
    }
    case 3u: {
      return F_cellReq_3;
    }
    default: {
      return F_cellReq_4;
    }
  }
}

fn w_rotl(x: u32, k: u32) -> u32 {
  return (x << k) | (x >> (32u - k));
}

/**
 * Next output of object h's stream (xoshiro128**, apps/wa-tor/stream.ts nextInFields); advances it.
 * Only the invocation running h (its own object) reads or writes h's stream in a pass.
 */
fn w_next(h: u32) -> u32 {
  let a = o_get32(h, F_rs_0);
  let b = o_get32(h, F_rs_1);
  let c = o_get32(h, F_rs_2) ^ a;
  let d = o_get32(h, F_rs_3) ^ b;
  let result = w_rotl(b * 5u, 7u) * 9u;
  o_set32(h, F_rs_0, a ^ d);
  o_set32(h, F_rs_1, b ^ c);
  o_set32(h, F_rs_2, c ^ (b << 9u));
  o_set32(h, F_rs_3, w_rotl(d, 11u));
  return result;
}

/** splitmix32 output number k (k ≥ 1) from counter s (stream.ts splitmix: a child's stream words). */
fn w_splitmix(s: u32, k: u32) -> u32 {
  var z = s + 0x9e3779b9u * k;
  z = (z ^ (z >> 16u)) * 0x85ebca6bu;
  z = (z ^ (z >> 13u)) * 0xc2b2ae35u;
  return z ^ (z >> 16u);
}

/**
 * What spawnFish and spawnShark (model.ts) share: a new agent of concrete type t on `cell`,
 * linked from it, its egg timer and stream derived from `seed` (the parent's next draw).
 * The child's field offsets are arguments (each update kernel binds its own child class's):
 * randomState[0..4] `rs`, `position`, `newPosition`, `eggTimer`. Its handle, or 0 after an
 * allocator failure (a_status says which).
 */
fn w_spawn(t: u32, cell: u32, seed: u32, rs: vec4<u32>, pos: u32, new_pos: u32, egg: u32) -> u32 {
  let a = a_allocate(t);
  if (a_status != 0u) {
    return 0u;
  }
  o_set32(a, egg, seed % SPAWN_THRESHOLD);
  o_set32(a, pos, cell);
  o_set32(a, new_pos, cell);
  o_set32(a, rs.x, w_splitmix(seed, 1u));
  o_set32(a, rs.y, w_splitmix(seed, 2u));
  o_set32(a, rs.z, w_splitmix(seed, 3u));
  o_set32(a, rs.w, w_splitmix(seed, 4u));
  o_set32(cell, F_cellAgent, a);
  return a;
}

/**
 * Agent.requestMove (model.ts) for agent h, whose `position` / `newPosition` are at
 * `pos` / `newPos`: newPosition := its cell; among the four neighbours in direction order
 * collect those with a fish (only when want_fish) and the free ones; one draw from h's
 * stream picks among the fish, else among the free; the chosen cell's flag for the
 * opposite direction is raised; with neither, the own cell's STAY flag.
 */
fn w_request_move(h: u32, pos: u32, newPos: u32, want_fish: bool) {
  let here = o_get32(h, pos);
  o_set32(h, newPos, here);
  var c: array<u32, 4>;
  var fish = 0u;
  var n_fish = 0u;
  var free = 0u;
  var n_free = 0u;
  for (var d = 0u; d < 4u; d++) {
    c[d] = o_get32(here, w_nb_off(d));
    let a = o_get32(c[d], F_cellAgent);
    if (a == 0u) {
      free |= d << (3u * n_free);
      n_free += 1u;
    } else if (want_fish && w_type(a) == T_FISH) {
      fish |= d << (3u * n_fish);
      n_fish += 1u;
    }
  }
  var chosen: u32;
  if (n_fish > 0u) {
    chosen = (fish >> (3u * (w_next(h) % n_fish))) & 7u;
  } else if (n_free > 0u) {
    chosen = (free >> (3u * (w_next(h) % n_free))) & 7u;
  } else {
    w_raise8(here, w_req_off(STAY));
    return;
  }
  // The chosen neighbour sees this agent in the opposite direction.
  w_raise8(c[chosen & 3u], w_req_off((chosen + 2u) & 3u));
}

/** Seed of the allocator's rotation (alloc.wgsl §4.2) for invocation gi. */
fn w_seed(gi: u32) {
  a_seed = ((gi + 1u) * 0x9e3779b9u) ^ (P.type_id * 0x85ebca6bu);
}

/** Report this invocation's allocator failure, if any, to the runner's status buffer (GpuHeapError on the host). */
fn w_report() {
  if (a_status != 0u) {
    atomicOr(&status[0], a_status);
    atomicAdd(&status[1], 1u);
  }
}
