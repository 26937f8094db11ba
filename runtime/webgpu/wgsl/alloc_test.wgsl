// Test kernel for the device-side allocator (test/webgpu-alloc.test.ts): many
// invocations allocate and free objects of two classes concurrently.
//
// Class A and class B each have a u32 field `tag` (override F_tag_A / F_tag_B, byte
// offset in a block of that class). Invocation i (of P.n):
//   mode 0: allocates P.k objects, of class B if (i + P.round) is odd else A; writes
//           tag = i·k + j + 1 + P.tag_base into each and its handle to out[i·k + j];
//           frees it again at once when (i·k + j) % P.free_mod == 0 (out[...] = 0 then).
//   mode 1: frees every handle in out[i·k … i·k+k) that is non-zero and sets it to 0, if
//           i is even; an odd i allocates as in mode 0. So blocks are emptied, freed and
//           re-initialised for the other class while allocations run (D1, D2, Alg. 7).
// status[0] |= the invocation's STATUS_* bits; status[1] += 1 per failed invocation.
// Tunables: WG (workgroup size), SPIN_LIMIT (alloc.wgsl).

override WG: u32 = 64u;
override F_tag_A: u32;
override F_tag_B: u32;

struct Params {
  n: u32,
  k: u32,
  mode: u32,
  free_mod: u32,
  type_a: u32,
  type_b: u32,
  round: u32,
  seed: u32,
  tag_base: u32,
  p9: u32,
  p10: u32,
  p11: u32,
};

@group(0) @binding(0) var<storage, read_write> heap: array<atomic<u32>>;
@group(0) @binding(1) var<uniform> P: Params;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;
@group(0) @binding(3) var<storage, read_write> status: array<atomic<u32>>;

fn allocate_all(i: u32) {
  let use_b = ((i + P.round) & 1u) == 1u;
  let t = select(P.type_a, P.type_b, use_b);
  let tag_off = select(F_tag_A, F_tag_B, use_b);
  for (var j = 0u; j < P.k; j++) {
    let h = a_allocate(t);
    if (a_status != 0u) {
      return;
    }
    let idx = i * P.k + j;
    heap_store(block_word(h >> SLOT_BITS) + (tag_off >> 2u) + (h & 31u), idx + 1u + P.tag_base);
    out[idx] = h;
    if (P.free_mod != 0u && idx % P.free_mod == 0u) {
      a_free(h);
      out[idx] = 0u;
      if (a_status != 0u) {
        return;
      }
    }
  }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let i = linear_workgroup(wid, nwg) * WG + lid;
  if (i >= P.n) {
    return;
  }
  a_seed = ((i + 1u) * 0x9e3779b9u) ^ P.seed;
  if (P.mode == 1u && (i & 1u) == 0u) {
    for (var j = 0u; j < P.k; j++) {
      let idx = i * P.k + j;
      let h = out[idx];
      if (h != 0u) {
        a_free(h);
        out[idx] = 0u;
        if (a_status != 0u) {
          break;
        }
      }
    }
  } else {
    allocate_all(i);
  }
  if (a_status != 0u) {
    atomicOr(&status[0], a_status);
    atomicAdd(&status[1], 1u);
  }
}
