//! Defragmentation's rewrite phase as a WebAssembly kernel: "CompactGpu: Massively Parallel
//! Memory Defragmentation on GPUs" (ISMM 2019), §4 "Pointer Rewriting", with the forwarding
//! handles of §3 "Defragmentation Algorithm" stored in the vacated source blocks' slots and a
//! per-block "source" mark, as the paper does. runtime/defrag-wasm.ts publishes them and
//! puts the blocks back afterwards; its header states the protocol (invariants V1–V5) and
//! runtime/defrag.ts the algorithm (F1–F4).
//!
//! What a lane reads (the host wrote it all before the phase and nobody writes it during it):
//! * the block list (the heap's do-all block list, free between do-alls): the blocks of the
//!   classes whose references may name a moved object;
//! * a vacated source block X of this call that holds forwarding handles: its type word is
//!   `mark | column offset` (`| wide` when the column's elements are 8 bytes apart), with the
//!   mark bit never set in a type id nor alone in the free type word (all ones); its iteration
//!   word is the mask of its slots that have a forwarding handle; slot s's handle is the u32
//!   at `X + column offset + stride · s`, the final handle of the object that had handle
//!   (X, s) before the call;
//! * the parameter table below, in the calling thread's scratch area.
//!
//! A lane writes only the reference words of its own block (runtime/defrag-lanes.ts L3), so
//! lanes on several threads need no synchronisation and give the same heap in any order.
use crate::blocks::Heap;
use crate::layout::{BLOCK_ALLOC_WORD, BLOCK_ITER_WORD, BLOCK_TYPE_WORD, SLOT_BITS, U32_FREE_TYPE};

/// The parameter table of [`smmo_defrag_rewrite`] (runtime/defrag-wasm.ts writes it).
#[repr(C)]
struct RewriteParams {
    /// Blocks of the heap: a handle naming a block at or beyond it is left alone.
    num_blocks: u32,
    /// The mark bit of a source's type word, and the bit that says its column is 8 bytes apart.
    mark: u32,
    wide: u32,
    /// Per type id, 3 words: [high mask, first column, columns] (columns 0: not rewritten).
    types: u32,
    /// Byte offsets within a block of the reference columns, per type in `types`' order.
    columns: u32,
}

/// The word `k` of the header of the block at byte `base`.
///
/// # Safety
/// `base` is the start of a block of the heap.
#[inline(always)]
unsafe fn header_word(base: usize, k: u32) -> u32 {
    // SAFETY: a header word of a block of the heap (caller): inside the memory, 4-byte
    // aligned; during the phase nobody writes block headers (runtime/defrag-wasm.ts V3).
    unsafe { *((base + 4 * k as usize) as *const u32) }
}

/// The final handle of the object that had handle `h` before the call, or `h` itself when it
/// did not move (null, a block beyond the heap, a block that is no marked source, a slot
/// without a forwarding handle: a dangling reference stays as it is).
///
/// # Safety
/// The phase's contract (module comment).
#[inline(always)]
unsafe fn forward(heap: &Heap, p: &RewriteParams, h: u32) -> u32 {
    let hb = h >> SLOT_BITS;
    if h == 0 || hb >= p.num_blocks {
        return h;
    }
    let xb = heap.block_base(hb);
    // SAFETY: hb < num_blocks: a block of the heap.
    let tw = unsafe { header_word(xb, BLOCK_TYPE_WORD) };
    if tw & p.mark == 0 || tw == U32_FREE_TYPE {
        return h;
    }
    let slot = h & ((1 << SLOT_BITS) - 1);
    // SAFETY: as above.
    if (unsafe { header_word(xb, BLOCK_ITER_WORD) } >> slot) & 1 == 0 {
        return h;
    }
    let stride = if tw & p.wide != 0 { 8 } else { 4 };
    let off = (tw & !(p.mark | p.wide)) as usize;
    // SAFETY: a marked source's column holds a forwarding handle for every slot of its mask,
    // inside the block (the host chose a column whose elements hold 4 bytes: V1).
    unsafe { *((xb + off + stride * slot as usize) as *const u32) }
}

/// Rewrite lanes [from, to) of the block list at `list`: every reference column the table
/// names for a block's type, in every live slot, gets the final handle of the object it
/// names (runtime/defrag-lanes.ts rewriteLanes computes the same). Returns 0.
///
/// # Safety
/// The phase's contract (module comment): `list .. list + 4·to` is the host's list of blocks
/// of the heap whose blocks start at `blocks` (`block_bytes` each), `params` its table.
#[no_mangle]
pub unsafe extern "C" fn smmo_defrag_rewrite(list: u32, from: u32, to: u32, blocks: u32, block_bytes: u32, params: u32) -> u32 {
    // SAFETY: `params` is the host's table (caller), 4-byte aligned, repr(C) of u32 words.
    let p = unsafe { &*(params as usize as *const RewriteParams) };
    let heap = Heap::new(blocks, block_bytes);
    let types = p.types as usize as *const u32;
    let columns = p.columns as usize as *const u32;
    for i in from..to {
        // SAFETY: from <= i < to: an entry of the host's list (caller).
        let b = unsafe { *(list as usize as *const u32).add(i as usize) };
        debug_assert!(b < p.num_blocks, "smmo_defrag_rewrite: block {b} at list position {i}");
        let base = heap.block_base(b);
        // SAFETY: a listed block is a live block of the heap (caller).
        let (alloc, tid) = unsafe { (header_word(base, BLOCK_ALLOC_WORD), header_word(base, BLOCK_TYPE_WORD)) };
        // SAFETY: the table has 3 words per type id of the heap, and a listed block's type
        // word is one (it is allocated: not free, not marked).
        let (high, first, count) = unsafe {
            let e = types.add(3 * tid as usize);
            (*e, *e.add(1), *e.add(2))
        };
        let live = alloc & !high;
        for c in first..first + count {
            // SAFETY: the type's columns are entries first .. first + count of the table.
            let col = (base + unsafe { *columns.add(c as usize) } as usize) as *mut u32;
            let mut m = live;
            while m != 0 {
                let s = m.trailing_zeros() as usize;
                m &= m - 1;
                // SAFETY: slot s < the type's slots of a reference column of this block,
                // written only by this lane (runtime/defrag-lanes.ts L3).
                unsafe {
                    let h = *col.add(s);
                    let nh = forward(&heap, p, h);
                    if nh != h {
                        *col.add(s) = nh;
                    }
                }
            }
        }
    }
    0
}
