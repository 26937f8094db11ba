// TEST ONLY (test/check-every.test.ts): runtime/webgpu/wgsl/nbody_update.wgsl with one
// deliberate bug, for the divergence finder (`smmo run --check-every`) to find: in the
// iteration given as argument 1 (`it`, which the test's step passes), the object in slot 7
// of the first block of the pass's block list gets 0.001 added to its new velX. Nothing
// else differs from the real kernel.
// Mapping: one invocation per (list position, slot) of the pass's block list; lanes
// whose iteration bit is clear return (tail guard and holes). The list's start and count
// come from the pass snapshot's lists buffer (binding 5, gpuLists: gpu-snapshot.ts G4),
// so that the kernel runs after a GPU snapshot without a read-back.
// Tunables (override): WG.

override WG: u32 = 128u;
const BUG_ITERATION: u32 = 5u;
override F_posX: u32;
override F_posY: u32;
override F_velX: u32;
override F_velY: u32;
override F_forceX: u32;
override F_forceY: u32;
override F_mass: u32;

struct Params {
  list_start: u32, // unused: the list comes from `lists` (gpuLists, runtime/webgpu/gpu-snapshot.ts G4)
  list_count: u32, // unused, as list_start
  type_id: u32, // the visited class's type id
  p3: u32,
  dt: f32, // argument 0 of update(dt)
  it: u32, // argument 1: the iteration (test only)
};

@group(0) @binding(0) var<storage, read_write> heap: array<u32>;
@group(0) @binding(1) var<uniform> P: Params;
/** The pass snapshot's lists: [4t] count, [4t + 1] start of type t (gpu-snapshot.ts G4). */
@group(0) @binding(5) var<storage, read> lists: array<u32>;

fn field(bw: u32, off: u32, slot: u32) -> u32 {
  return bw + (off >> 2u) + slot;
}
fn getf(i: u32) -> f32 {
  return bitcast<f32>(heap[i]);
}
fn setf(i: u32, v: f32) {
  heap[i] = bitcast<u32>(v);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let gi = linear_workgroup(wid, nwg) * WG + lid;
  let li = gi >> 5u;
  let slot = gi & 31u;
  if (li >= lists[4u * P.type_id]) {
    return;
  }
  let bw = block_word(heap[BW_BLOCK_LIST + lists[4u * P.type_id + 1u] + li]);
  if ((heap[bw + BLOCK_ITER_WORD] & (1u << slot)) == 0u) {
    return;
  }
  let dt = P.dt;
  let m = getf(field(bw, F_mass, slot));
  var vx = getf(field(bw, F_velX, slot)) + getf(field(bw, F_forceX, slot)) * dt / m;
  var vy = getf(field(bw, F_velY, slot)) + getf(field(bw, F_forceY, slot)) * dt / m;
  let x = getf(field(bw, F_posX, slot)) + vx * dt;
  let y = getf(field(bw, F_posY, slot)) + vy * dt;
  if (x < -1.0 || x > 1.0) {
    vx = -vx;
  }
  if (y < -1.0 || y > 1.0) {
    vy = -vy;
  }
  let bug = select(0.0, 0.001, P.it == BUG_ITERATION && li == 0u && slot == 7u);
  setf(field(bw, F_velX, slot), vx + bug);
  setf(field(bw, F_velY, slot), vy);
  setf(field(bw, F_posX, slot), x);
  setf(field(bw, F_posY, slot), y);
}
