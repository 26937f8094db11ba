//! Defragmentation's rewrite phase as a WebAssembly kernel: "CompactGpu: Massively Parallel
//! Memory Defragmentation on GPUs" (ISMM 2019), §4 "Pointer Rewriting", with the forwarding
//! handles of §3 "Defragmentation Algorithm" stored in the vacated source blocks' slots and a
//! per-block "source" mark, as the paper does. runtime/defrag-wasm.ts publishes them and
//! puts the blocks back afterwards; its header states the protocol (invariants V1–V5) and
//! runtime/defrag.ts the algorithm (F1–F4).
//!
//! What a lane reads (the host wrote it all before the phase and nobody writes it during it):
//! * its list of blocks, in the calling thread's scratch area;
//! * the *forwarding masks*, one u32 per block of the heap in the do-all block list (free
//!   between do-alls): bit s set ⇔ slot s of that block (a vacated source of this call) holds
//!   the final handle of the object that had handle (block, s) before the call; 0 for every
//!   other block;
//! * a source with a mask: its type word is `mark | column offset` (`| wide` when the
//!   column's elements are 8 bytes apart); the mark bit is set in no type id, and the free
//!   type word (all ones) is told apart; slot s's handle is the u32 at
//!   `block + column offset + stride · s`;
//! * the parameter table below, in the calling thread's scratch area.
//!
//! [`smmo_defrag_rewrite`] writes only the reference words of its own (live) blocks
//! (runtime/defrag-lanes.ts L3); [`smmo_defrag_restore`], run after every rewrite lane, only
//! the column words and the type word of its own (vacated) blocks. So lanes on several threads
//! need no synchronisation and give the same heap in any order.
use crate::blocks::Heap;
use crate::layout::{BLOCK_ALLOC_WORD, BLOCK_TYPE_WORD, SLOT_BITS, U32_FREE_TYPE};

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
    /// Byte offset of the forwarding masks (one u32 per block).
    masks: u32,
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

/// Where a source keeps its forwarding handles, from its type word: byte offset of slot 0's
/// and the stride; None for a block that is not a marked source.
#[inline(always)]
fn column(p: &RewriteParams, tw: u32) -> Option<(usize, usize)> {
    if tw & p.mark == 0 || tw == U32_FREE_TYPE {
        return None;
    }
    let stride = if tw & p.wide != 0 { 8 } else { 4 };
    Some(((tw & !(p.mark | p.wide)) as usize, stride))
}

/// The final handle of the object that had handle `h` before the call, or `h` itself when it
/// did not move (null, a block beyond the heap, a slot without a forwarding handle: a
/// dangling reference stays as it is).
///
/// # Safety
/// The phase's contract (module comment).
#[inline(always)]
unsafe fn forward(heap: &Heap, p: &RewriteParams, h: u32) -> u32 {
    let hb = h >> SLOT_BITS;
    if h == 0 || hb >= p.num_blocks {
        return h;
    }
    // SAFETY: hb < num_blocks: an entry of the masks.
    let mask = unsafe { *(p.masks as usize as *const u32).add(hb as usize) };
    let slot = h & ((1 << SLOT_BITS) - 1);
    if (mask >> slot) & 1 == 0 {
        return h;
    }
    let xb = heap.block_base(hb);
    // SAFETY: hb < num_blocks: a block of the heap; a block with a mask is a marked source.
    match column(p, unsafe { header_word(xb, BLOCK_TYPE_WORD) }) {
        // SAFETY: a marked source's column holds a forwarding handle for every slot of its
        // mask, inside the block (the host chose a column whose elements hold 4 bytes).
        Some((off, stride)) => unsafe { *((xb + off + stride * slot as usize) as *const u32) },
        None => h,
    }
}

/// Rewrite lanes [from, to) of the list of blocks at `list`: every reference column the table
/// names for a block's type, in every live slot, gets the final handle of the object it
/// names (runtime/defrag-lanes.ts rewriteLanes computes the same). Returns 0.
///
/// # Safety
/// The phase's contract (module comment): `list .. list + 4·to` is the host's list of live
/// blocks of the heap whose blocks start at `blocks` (`block_bytes` each), `params` its table.
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

/// Restore lanes [from, to) of the list of marked sources at `list`, after every rewrite
/// lane: each slot of a block's mask gets back the 4 bytes of its column that the forwarding
/// handle took, from the object's final copy (a live object of the same class, whose column
/// no defragmentation step changes: runtime/defrag-wasm.ts V2), and the block's type word
/// is free again. Returns 0.
///
/// # Safety
/// The phase's contract (module comment): `list .. list + 4·to` is the host's list of marked
/// sources of the heap whose blocks start at `blocks` (`block_bytes` each), `params` its table.
#[no_mangle]
pub unsafe extern "C" fn smmo_defrag_restore(list: u32, from: u32, to: u32, blocks: u32, block_bytes: u32, params: u32) -> u32 {
    // SAFETY: `params` is the host's table (caller), 4-byte aligned, repr(C) of u32 words.
    let p = unsafe { &*(params as usize as *const RewriteParams) };
    let heap = Heap::new(blocks, block_bytes);
    for i in from..to {
        // SAFETY: from <= i < to: an entry of the host's list (caller).
        let x = unsafe { *(list as usize as *const u32).add(i as usize) };
        debug_assert!(x < p.num_blocks, "smmo_defrag_restore: block {x} at list position {i}");
        let xb = heap.block_base(x);
        // SAFETY: x < num_blocks: an entry of the masks, a block of the heap.
        let (mask, tw) = unsafe { (*(p.masks as usize as *const u32).add(x as usize), header_word(xb, BLOCK_TYPE_WORD)) };
        let (off, stride) = match column(p, tw) {
            Some(c) => c,
            None => continue,
        };
        let mut m = mask;
        while m != 0 {
            let s = m.trailing_zeros() as usize;
            m &= m - 1;
            // SAFETY: slot s of the mask holds the final handle e of a live object of the
            // block's class (caller), whose column element lies inside its block; this lane
            // alone writes x's words, and nobody writes e's column during the phase.
            unsafe {
                let at = (xb + off + stride * s) as *mut u32;
                let e = *at;
                *at = *((heap.block_base(e >> SLOT_BITS) + off + stride * (e & ((1 << SLOT_BITS) - 1)) as usize) as *const u32);
            }
        }
        // SAFETY: the type word of x, this lane's own block: back to what retire left.
        unsafe { *((xb + 4 * BLOCK_TYPE_WORD as usize) as *mut u32) = U32_FREE_TYPE };
    }
    0
}
