// game-of-life on the GPU: what the five pass kernels (gol_*.wgsl) share. The rules,
// reads and writes of apps/game-of-life/model.ts (and wasm/src/gol.rs), one invocation
// per (list position, slot) of the pass's block list; lanes whose iteration bit is clear
// return. Declared in apps/game-of-life/kernels.ts (WGSL section).
//
// Heap access: every heap word is atomic<u32> (alloc.wgsl is appended to every gol
// kernel, so all five share one declaration of the heap). `action`, `isNew` and
// `Cell.state` are 1-byte SOA arrays: four slots share a word, which neighbouring
// invocations write at the same time, so a byte is written with atomicAnd (clear) then
// atomicOr (set) on its word, never as a plain read-modify-write of the word. One
// invocation writes a given byte per pass (model.ts "who writes what"), so the two
// atomics of one store never race with another store of the same byte.
//
// Determinism (apps/game-of-life/README.md, "Digest — exact"): each agent writes its own
// fields and its own cell; in createCandidates a new Alive writes only the empty cells it
// is the designated creator of (the first new Alive around that cell in scan order, dx
// then dy), which reads only CELL_NEW states, which nobody changes in that pass. So the
// set of live cells after a step does not depend on the order in which invocations run;
// handles do (GPU allocation order), which the digest does not see.
//
// Cells by id: `ranks[i]` is the handle of the Cell with the i-th smallest handle
// (apps/grid.ts), bound by the runner (runtime/webgpu/ranks.ts; cells are created by init
// and never deleted).

override WG: u32 = 64u;
override F_cellId: u32; // own class's Agent.cellId (i32)
override F_action: u32; // own class's Agent.action (i8)
override F_cellAgent: u32; // Cell.agent (ref: u32 handle, 0 = null)
override F_cellState: u32; // Cell.state (u8, CELL_*)
override F_aliveCellId: u32; // Alive.cellId (a created Alive's)
override F_aliveIsNew: u32; // Alive.isNew (bool as u8)
override F_candidateCellId: u32; // Candidate.cellId (a created Candidate's)
override T_ALIVE: u32; // type id of Alive
override T_CANDIDATE: u32; // type id of Candidate

const ACTION_NONE: u32 = 0u;
const ACTION_DIE: u32 = 1u;
const ACTION_SPAWN: u32 = 2u;
const CELL_EMPTY: u32 = 0u;
const CELL_CANDIDATE: u32 = 1u;
const CELL_ALIVE: u32 = 2u;
const CELL_NEW: u32 = 3u;

struct Params {
  list_start: u32, // unused: the list comes from `lists` (gpuLists, runtime/webgpu/gpu-snapshot.ts G4)
  list_count: u32, // unused, as list_start
  type_id: u32, // the visited class's type id
  p3: u32,
  width: i32, // argument 0 of every gol method
  height: i32, // argument 1
};

@group(0) @binding(0) var<storage, read_write> heap: array<atomic<u32>>;
@group(0) @binding(1) var<uniform> P: Params;
@group(0) @binding(3) var<storage, read> ranks: array<u32>;
@group(0) @binding(4) var<storage, read_write> status: array<atomic<u32>>;
/** The pass snapshot's lists: [4t] count, [4t + 1] start of type t (gpu-snapshot.ts). */
@group(0) @binding(5) var<storage, read> lists: array<u32>;

/** A 1-byte field := v (clear, then set: for bytes nobody else reads during the pass; see g_change8). */
fn g_set8(h: u32, off: u32, v: u32) {
  let w = o_byte_word(h, off);
  let sh = 8u * (h & 3u);
  atomicAnd(&heap[w], ~(0xffu << sh));
  atomicOr(&heap[w], (v & 0xffu) << sh);
}

/**
 * Change a 1-byte field from `was` to `now` in one atomic (xor of the difference), for
 * bytes that other invocations read during the pass: g_set8's clear-then-set would let
 * them see 0 in between (Alive.prepare's CELL_NEW → CELL_ALIVE, createCandidates'
 * CELL_EMPTY → CELL_CANDIDATE). `was` must be the byte's value (the pass's invariant).
 */
fn g_change8(h: u32, off: u32, was: u32, now: u32) {
  atomicXor(&heap[o_byte_word(h, off)], ((was ^ now) & 0xffu) << (8u * (h & 3u)));
}

/** Cell.state of cell `id`. */
fn g_state(id: i32) -> u32 {
  return o_get8(ranks[u32(id)], F_cellState);
}

/** Agent.aliveNeighbours: live cells among the (up to) 8 neighbours of cell `id`, counted up to 4 (rows, then columns). */
fn g_alive_neighbours(id: i32) -> u32 {
  let w = P.width;
  let x = id % w;
  let y = id / w;
  let x0 = select(x, x - 1, x > 0);
  let x1 = select(x, x + 1, x < w - 1);
  let y0 = select(y, y - 1, y > 0);
  let y1 = select(y, y + 1, y < P.height - 1);
  var n = 0u;
  for (var ny = y0; ny <= y1; ny++) {
    for (var c = ny * w + x0; c <= ny * w + x1; c++) {
      if (c != id && g_state(c) >= CELL_ALIVE) {
        n += 1u;
        if (n > 3u) {
          return n;
        }
      }
    }
  }
  return n;
}

/** Alive.isCreatorOf: whether cell `me` holds the first new Alive around cell (x, y) in scan order (dx, then dy). */
fn g_is_creator_of(me: i32, x: i32, y: i32) -> bool {
  for (var dx = -1; dx <= 1; dx++) {
    let nx = x + dx;
    if (nx < 0 || nx >= P.width) {
      continue;
    }
    for (var dy = -1; dy <= 1; dy++) {
      let ny = y + dy;
      if (ny < 0 || ny >= P.height) {
        continue;
      }
      let c = ny * P.width + nx;
      if (g_state(c) == CELL_NEW) {
        return c == me;
      }
    }
  }
  return false; // unreachable: the caller is a new Alive next to (x, y)
}

/** Seed of the allocator's rotation (alloc.wgsl §4.2) for invocation gi. */
fn g_seed(gi: u32) {
  a_seed = ((gi + 1u) * 0x9e3779b9u) ^ (P.type_id * 0x85ebca6bu);
}

/** Report this invocation's allocator failure, if any, to the runner's status buffer (GpuHeapError on the host). */
fn g_report() {
  if (a_status != 0u) {
    atomicOr(&status[0], a_status);
    atomicAdd(&status[1], 1u);
  }
}
