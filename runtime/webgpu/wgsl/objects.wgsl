// Objects of the pass and their fields, for the app kernels that read their list from the
// GPU snapshot (gpu-snapshot.ts: kernels that declare gpuLists). A library: the kernel's
// own library declares the bindings it uses — `heap` (binding 0), the uniform `P` with
// `type_id` (binding 1) and the snapshot's `lists` (binding 5) — and appends this file.
// Every heap word is accessed atomically (alloc.wgsl: other invocations write concurrently).

/** The object this invocation visits (a handle), or 0: past the list or iteration bit clear. */
fn o_object(gi: u32) -> u32 {
  let li = gi >> 5u;
  let slot = gi & 31u;
  if (li >= lists[4u * P.type_id]) {
    return 0u;
  }
  let bid = atomicLoad(&heap[BW_BLOCK_LIST + lists[4u * P.type_id + 1u] + li]);
  if ((atomicLoad(&heap[block_word(bid) + BLOCK_ITER_WORD]) & (1u << slot)) == 0u) {
    return 0u;
  }
  return (bid << SLOT_BITS) | slot;
}

/** Buffer word of a 4-byte field at byte offset `off` (its SOA array) of object h. */
fn o_word(h: u32, off: u32) -> u32 {
  return block_word(h >> SLOT_BITS) + (off >> 2u) + (h & 31u);
}
fn o_get32(h: u32, off: u32) -> u32 {
  return atomicLoad(&heap[o_word(h, off)]);
}
fn o_set32(h: u32, off: u32, v: u32) {
  atomicStore(&heap[o_word(h, off)], v);
}

/** Word of a 1-byte field of object h (SOA arrays are 16-byte aligned: layout.ts ARRAY_ALIGN); the byte is at bit 8·(h & 3). */
fn o_byte_word(h: u32, off: u32) -> u32 {
  return block_word(h >> SLOT_BITS) + (off >> 2u) + ((h & 31u) >> 2u);
}
fn o_get8(h: u32, off: u32) -> u32 {
  return (atomicLoad(&heap[o_byte_word(h, off)]) >> (8u * (h & 3u))) & 0xffu;
}
