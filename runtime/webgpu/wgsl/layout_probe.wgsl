// Test kernel (test/webgpu-layout.test.ts): reads the GPU copy of the heap through the
// generated prelude's constants and writes what it finds, so the host can check that
// the prelude and runtime/layout.ts describe the same bytes.
//   out[0..8]   header words (magic, version, heap bytes, block bytes, blocks, types,
//               blocks offset, block-list offset) read at BW_HEADER + H_*
//   out[8..12]  the prelude's view: (BW_BLOCKS, BW_BLOCK_LIST) as heap byte offsets, NUM_BLOCKS, BLOCK_BYTES
//   out[12..16] level-0 word 0 of the free bitmap, allocation/type/generation words of block P.bid
//   out[16]     field F_value of object P.handle (a u32 field)
//   out[17..]   per type: TYPE_SLOTS, TYPE_HIGH_MASK, allocated[t] level-0 word 0 (0 for abstract types)

// H_BLOCK_BYTES, H_NUM_BLOCKS, H_NUM_TYPES and H_BLOCKS_OFFSET come from the prelude
// (layoutConstants(): the allocator core reads them too); the other header words from overrides.
override H_MAGIC: u32;
override H_VERSION: u32;
override H_HEAP_BYTES: u32;
override H_BLOCK_LIST_OFFSET: u32;
override F_value: u32;

struct Params {
  bid: u32,
  handle: u32,
  p2: u32,
  p3: u32,
};

@group(0) @binding(0) var<storage, read_write> heap: array<u32>;
@group(0) @binding(1) var<uniform> P: Params;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(1)
fn main() {
  out[0] = heap[BW_HEADER + H_MAGIC];
  out[1] = heap[BW_HEADER + H_VERSION];
  out[2] = heap[BW_HEADER + H_HEAP_BYTES];
  out[3] = heap[BW_HEADER + H_BLOCK_BYTES];
  out[4] = heap[BW_HEADER + H_NUM_BLOCKS];
  out[5] = heap[BW_HEADER + H_NUM_TYPES];
  out[6] = heap[BW_HEADER + H_BLOCKS_OFFSET];
  out[7] = heap[BW_HEADER + H_BLOCK_LIST_OFFSET];
  out[8] = BW_BLOCKS * 4u + GPU_BASE_BYTES;
  out[9] = BW_BLOCK_LIST * 4u + GPU_BASE_BYTES;
  out[10] = NUM_BLOCKS;
  out[11] = BLOCK_BYTES;
  out[12] = heap[BW_FREE_BM];
  let w = block_word(P.bid);
  out[13] = heap[w + BLOCK_ALLOC_WORD];
  out[14] = heap[w + BLOCK_TYPE_WORD];
  out[15] = heap[w + BLOCK_GEN_WORD];
  out[16] = heap[block_word(P.handle >> SLOT_BITS) + (F_value >> 2u) + (P.handle & (MAX_SLOTS - 1u))];
  for (var t = 0u; t < NUM_TYPES; t++) {
    out[17u + 3u * t] = TYPE_SLOTS[t];
    out[18u + 3u * t] = TYPE_HIGH_MASK[t];
    let a = BW_ALLOCATED_BM[t];
    out[19u + 3u * t] = 0u;
    if (a != ALL_ONES) {
      out[19u + 3u * t] = heap[a];
    }
  }
}
