//! The allocator's exports: what runtime/allocator.ts (the host binding) calls, and what an
//! allocating Rust kernel calls too (objects.rs: the same dispatch and error reporting).
//!
//! Conventions:
//!  - `st` is the word index (byte address / 4) of the calling thread's state, from
//!    `smmo_alloc_claim`; the state is the thread's own (mem.rs M2).
//!  - A failed call returns 0 (handles: 0 is null, never allocated) or a negative number,
//!    and writes the error into the state: S_ERROR (an ALLOC_ERR_* code) and S_ERROR_A…C.
//!    Calls that return a status return 0 on success or the ALLOC_ERR_* code.
//!  - Each call dispatches once on the heap's ALLOC_FLAG_ATOMIC: the allocator is
//!    monomorphised for [`Atomic`] (several threads) and [`Plain`] (one thread).
//!  - Exports marked "step" are the allocator's atomic building blocks, exported so that the
//!    forced-interleaving tests can run them one at a time in a chosen order (internal:
//!    production code calls allocate/release).
use super::bitmap::{Bitmap, Levels, Stuck};
use super::bits::Env;
use super::core::{heap_is_atomic, heap_levels, Alloc, Fail, HEADER_WORD};
use super::mem::{private, Atomic, Plain};
use crate::layout::*;

macro_rules! with_alloc {
    ($st:expr, |$a:ident| $body:expr) => {{
        if heap_is_atomic() {
            // SAFETY: `st` is the caller's claimed state (module conventions above).
            let $a = unsafe { Alloc::<Atomic>::new($st) };
            $body
        } else {
            // SAFETY: as above.
            let $a = unsafe { Alloc::<Plain>::new($st) };
            $body
        }
    }};
}

/// Write `e` into the state's error words; returns its code.
fn fail(st: u32, e: Fail) -> u32 {
    let (code, a, b, c) = match e {
        Fail::Exhausted { ty } => (ALLOC_ERR_EXHAUSTED, ty, 0, 0),
        Fail::Invalid { code, a, b, c } => (code, a, b, c),
        Fail::Contention { op, a, b } => (ALLOC_ERR_CONTENTION, op, a, b),
    };
    // SAFETY: the state is the caller's (M2); S_ERROR … S_ERROR_C < S_TYPES.
    unsafe {
        private::store(st + S_ERROR, code);
        private::store(st + S_ERROR_A, a);
        private::store(st + S_ERROR_B, b);
        private::store(st + S_ERROR_C, c);
    }
    code
}

fn status(st: u32, r: Result<(), Fail>) -> u32 {
    match r {
        Ok(()) => 0,
        Err(e) => fail(st, e),
    }
}

// ------------------------------------------------------------------ heap and states

/// Format a fresh heap whose header (descriptor words) and type table the host has just
/// written (runtime/heap.ts): every block free (block 0 reserved for null), empty
/// allocated/active bitmaps, no state claimed. Nothing else may run on the heap meanwhile.
#[no_mangle]
pub extern "C" fn smmo_heap_format() {
    let h = |k: u32| {
        // SAFETY: the header is written by the host before this call.
        unsafe { private::load(HEADER_WORD + k) }
    };
    let num_blocks = h(H_NUM_BLOCKS);
    let blocks_word = h(H_BLOCKS_OFFSET) / 4;
    let block_words = h(H_BLOCK_BYTES) / 4;
    let lv = heap_levels();
    let mut b = 0;
    while b < num_blocks {
        let w = blocks_word + b * block_words;
        // SAFETY: block b < numBlocks lies in the heap (runtime/layout.ts planHeap); nothing
        // else runs on a heap being formatted, so plain stores are exact.
        unsafe {
            private::store(w + BLOCK_ALLOC_WORD, U32_ALL_ONES);
            private::store(w + BLOCK_ITER_WORD, 0);
            private::store(w + BLOCK_TYPE_WORD, U32_FREE_TYPE);
            private::store(w + BLOCK_GEN_WORD, 0);
        }
        b += 1;
    }
    let free = Bitmap {
        base: h(H_FREE_BITMAP_WORD),
        bits: num_blocks,
        lv,
    };
    let env = Env {
        spin: 1,
        max: 1,
        rotate: false,
    };
    // SAFETY: the bitmaps lie where the header says; nothing else runs (formatting).
    unsafe {
        free.fill::<Plain>();
        // Block 0 is never handed out: handle 0 means null. A filled bitmap holds bit 0, and
        // try_clear of a set bit never waits, so it cannot fail.
        let _ = free.try_clear::<Plain>(&env, 0);
    }
    let types = h(H_TYPE_TABLE_WORD);
    let mut t = 0;
    while t < h(H_NUM_TYPES) {
        // SAFETY: the type table lies where the header says.
        let (alloc_w, active_w, slots) = unsafe {
            (
                private::load(types + t * TYPE_WORDS + T_ALLOCATED_WORD),
                private::load(types + t * TYPE_WORDS + T_ACTIVE_WORD),
                private::load(types + t * TYPE_WORDS + T_SLOTS),
            )
        };
        if slots != 0 {
            // SAFETY: as above.
            unsafe {
                Bitmap {
                    base: alloc_w,
                    bits: num_blocks,
                    lv,
                }
                .reset::<Plain>();
                Bitmap {
                    base: active_w,
                    bits: num_blocks,
                    lv,
                }
                .reset::<Plain>();
            }
        }
        t += 1;
    }
    let words = h(H_NUM_STATES) * h(H_STATE_WORDS);
    let first = h(H_STATE_WORD);
    let mut k = 0;
    while k < words {
        // SAFETY: the state region lies where the header says.
        unsafe { private::store(first + k, 0) };
        k += 1;
    }
    let mut k = 0;
    while k < MAX_ALLOC_STATES / 32 {
        // SAFETY: the claim words are header words.
        unsafe { private::store(HEADER_WORD + H_STATE_CLAIM + k, 0) };
        k += 1;
    }
}

/// Claim a free allocator state for the calling thread and initialise it: rotation seed
/// `seed`, own first blocks (K5) if `own_first`, retry limits `spin`/`max`. Returns the
/// state's word index, or -1 when every state of the heap is taken.
#[no_mangle]
pub extern "C" fn smmo_alloc_claim(seed: u32, own_first: u32, spin: u32, max: u32) -> i32 {
    let (n, first, stride) = {
        // SAFETY: header words, written at format.
        unsafe {
            (
                private::load(HEADER_WORD + H_NUM_STATES),
                private::load(HEADER_WORD + H_STATE_WORD),
                private::load(HEADER_WORD + H_STATE_WORDS),
            )
        }
    };
    let mut s = 0;
    while s < n && s < MAX_ALLOC_STATES {
        let bit = 1u32 << (s & 31);
        // The claim words are shared by every thread: always atomic.
        // SAFETY: a header word.
        if unsafe { <Atomic as super::mem::Mem>::or(HEADER_WORD + H_STATE_CLAIM + (s >> 5), bit) } & bit == 0 {
            let st = first + s * stride;
            let mut k = 0;
            while k < stride {
                // SAFETY: the state is ours now.
                unsafe { private::store(st + k, 0) };
                k += 1;
            }
            // SAFETY: as above.
            unsafe {
                private::store(st + S_SEED, seed);
                private::store(st + S_SPIN, spin);
                private::store(st + S_MAX_ATTEMPTS, max);
            }
            with_alloc!(st, |a| a.set_own_first(own_first != 0));
            return st as i32;
        }
        s += 1;
    }
    -1
}

/// Give state `st` back (the host flushes its kept blocks first).
#[no_mangle]
pub extern "C" fn smmo_alloc_release_state(st: u32) {
    // SAFETY: header words, written at format.
    let (first, stride) = unsafe {
        (
            private::load(HEADER_WORD + H_STATE_WORD),
            private::load(HEADER_WORD + H_STATE_WORDS),
        )
    };
    debug_assert!(st >= first && stride > 0 && (st - first) % stride == 0);
    if st < first || stride == 0 {
        return;
    }
    let s = (st - first) / stride;
    // SAFETY: a header word, shared: atomic.
    unsafe { <Atomic as super::mem::Mem>::and(HEADER_WORD + H_STATE_CLAIM + (s >> 5), !(1u32 << (s & 31))) };
}

// ------------------------------------------------------------------ operations

/// A new object of concrete type `t`: its handle, or 0 (error in the state).
#[no_mangle]
pub extern "C" fn smmo_alloc_allocate(st: u32, t: u32) -> u32 {
    with_alloc!(st, |a| match a.allocate(t) {
        Ok(h) => h,
        Err(e) => {
            fail(st, e);
            0
        }
    })
}

/// `count` new objects of type `t`, their handles written to the u32 array at byte address
/// `out`; 0 or an error code (nothing stays allocated then).
#[no_mangle]
pub extern "C" fn smmo_alloc_allocate_many(st: u32, t: u32, count: u32, out: u32) -> u32 {
    with_alloc!(st, |a| status(st, a.allocate_many(t, count, out / 4)))
}

/// Free slot `slot` of block `bid`; 0 or an error code.
#[no_mangle]
pub extern "C" fn smmo_alloc_release(st: u32, bid: u32, slot: u32) -> u32 {
    with_alloc!(st, |a| status(st, a.release(bid, slot)))
}

/// Free the objects in slots `mask` of block `bid` with one atomic (core.rs release_many: a
/// compiled method's deferred self-deletions); 0 or an error code.
#[no_mangle]
pub extern "C" fn smmo_alloc_release_many(st: u32, bid: u32, mask: u32) -> u32 {
    with_alloc!(st, |a| status(st, a.release_many(bid, mask)))
}

/// The second half of a release that the host began itself (runtime/alloc-fast-path.ts F2,
/// core.rs release_end): slot `slot` of block `bid` (type `t`) was freed by the host's AND,
/// which returned `before`; `gen` is the block's generation read before it. 0 or an error code.
#[no_mangle]
pub extern "C" fn smmo_alloc_release_end(st: u32, bid: u32, t: u32, gen: u32, before: u32, slot: u32) -> u32 {
    with_alloc!(st, |a| status(st, a.release_end(bid, t, gen, before, slot)))
}

/// release_end for the slots `mask` of block `bid`, freed together by the host's AND
/// (runtime/alloc-fast-path.ts F5, core.rs release_end_many). 0 or an error code.
#[no_mangle]
pub extern "C" fn smmo_alloc_release_end_many(st: u32, bid: u32, t: u32, gen: u32, before: u32, mask: u32) -> u32 {
    with_alloc!(st, |a| status(st, a.release_end_many(bid, t, gen, before, mask)))
}

/// Step (tests): the first half of a release, Alg. 2 l. 1–4 (core.rs release_begin). Writes
/// the block's generation, its type and the allocation word before the clear to the three
/// u32 at byte address `out`; 0 or an error code. The caller finishes the release with the
/// other steps (invalidate, retire_block, …) in the order it wants to test.
#[no_mangle]
pub extern "C" fn smmo_alloc_release_begin(st: u32, bid: u32, slot: u32, out: u32) -> u32 {
    with_alloc!(st, |a| match a.release_begin(bid, slot) {
        Ok((gen, t, before)) => {
            // SAFETY: `out` is the caller's scratch area (three words, 4-byte aligned,
            // inside the module's memory); no other thread uses that thread slot's scratch.
            unsafe {
                private::store(out / 4, gen);
                private::store(out / 4 + 1, t);
                private::store(out / 4 + 2, before);
            }
            0
        }
        Err(e) => fail(st, e),
    })
}

/// Give every kept block back (K2); 0 or an error code.
#[no_mangle]
pub extern "C" fn smmo_alloc_flush_kept(st: u32) -> u32 {
    with_alloc!(st, |a| status(st, a.flush_kept()))
}

/// Retire every empty used block (K3): how many, or -1 (error in the state).
#[no_mangle]
pub extern "C" fn smmo_alloc_reclaim_empty(st: u32) -> i32 {
    with_alloc!(st, |a| match a.reclaim_empty() {
        Ok(n) => n as i32,
        Err(e) => {
            fail(st, e);
            -1
        }
    })
}

/// (K5) own first blocks on or off.
#[no_mangle]
pub extern "C" fn smmo_alloc_set_own_first(st: u32, on: u32) {
    with_alloc!(st, |a| a.set_own_first(on != 0))
}

/// Open a warp of `lanes` lanes (core.rs C1).
#[no_mangle]
pub extern "C" fn smmo_alloc_warp_begin(st: u32, lanes: u32) {
    with_alloc!(st, |a| a.warp_begin(lanes))
}

/// Close the warp, returning the cached slots (C3); 0 or an error code.
#[no_mangle]
pub extern "C" fn smmo_alloc_warp_end(st: u32) -> u32 {
    with_alloc!(st, |a| status(st, a.warp_end()))
}

/// Defragmentation (runtime/defrag.ts, core.rs defrag_take): reserve `want` free slots of
/// target block `bid` of type `t`: their mask, or 0 (error in the state).
#[no_mangle]
pub extern "C" fn smmo_alloc_defrag_take(st: u32, bid: u32, t: u32, want: u32) -> u32 {
    with_alloc!(st, |a| match a.defrag_take(bid, t, want) {
        Ok(m) => m,
        Err(e) => {
            fail(st, e);
            0
        }
    })
}

/// Defragmentation (core.rs defrag_vacate): release the slots `mask` (every live object) of
/// source block `bid` of type `t` and retire it; 0 or an error code.
#[no_mangle]
pub extern "C" fn smmo_alloc_defrag_vacate(st: u32, bid: u32, t: u32, mask: u32) -> u32 {
    with_alloc!(st, |a| status(st, a.defrag_vacate(bid, t, mask)))
}

// ------------------------------------------------------------------ steps (tests)

/// Step: take a free block for `t` (Alg. 1 l. 4–7): its index, or -1 (error in the state).
#[no_mangle]
pub extern "C" fn smmo_alloc_new_block(st: u32, t: u32) -> i32 {
    with_alloc!(st, |a| match a.new_block(t) {
        Ok(b) => b as i32,
        Err(e) => {
            fail(st, e);
            -1
        }
    })
}

/// Step: initialize_block of `bid` for `t`; 0 or an error code.
#[no_mangle]
pub extern "C" fn smmo_alloc_initialize_block(st: u32, bid: u32, t: u32) -> u32 {
    with_alloc!(st, |a| status(st, a.initialize_block(bid, t)))
}

/// Step: reserve one slot of `bid` (Alg. 6): the slot, -1 (full or invalidated), or -2
/// (error in the state). S_FULL says whether it filled the block.
#[no_mangle]
pub extern "C" fn smmo_alloc_reserve(st: u32, bid: u32) -> i32 {
    with_alloc!(st, |a| match a.reserve(bid) {
        Ok((slot, full)) => {
            // SAFETY: the caller's state (M2).
            unsafe { private::store(st + S_FULL, u32::from(full)) };
            slot
        }
        Err(e) => {
            fail(st, e);
            -2
        }
    })
}

/// Step: Alg. 7 (lock + resolve, retried): 1 owned, 0 not, -2 error.
#[no_mangle]
pub extern "C" fn smmo_alloc_invalidate(st: u32, bid: u32, gen: u32) -> i32 {
    with_alloc!(st, |a| match a.invalidate(bid, gen) {
        Ok(owned) => i32::from(owned),
        Err(e) => {
            fail(st, e);
            -2
        }
    })
}

/// Step: Alg. 7 l. 1; the allocation bitmap before.
#[no_mangle]
pub extern "C" fn smmo_alloc_invalidate_lock(st: u32, bid: u32) -> u32 {
    with_alloc!(st, |a| a.invalidate_lock(bid))
}

/// Step: Alg. 7 l. 2–13: 1 owned, 0 failed, -1 retry, -2 error.
#[no_mangle]
pub extern "C" fn smmo_alloc_invalidate_resolve(st: u32, bid: u32, gen: u32, before: u32) -> i32 {
    with_alloc!(st, |a| match a.invalidate_resolve(bid, gen, before) {
        Ok(o) => o,
        Err(e) => {
            fail(st, e);
            -2
        }
    })
}

/// Step: Alg. 2 l. 9–12 for a block this thread invalidated; 0 or an error code.
#[no_mangle]
pub extern "C" fn smmo_alloc_retire_block(st: u32, bid: u32, t: u32) -> u32 {
    with_alloc!(st, |a| status(st, a.retire_block(bid, t)))
}

/// Step: (K1) reopen a block this thread invalidated.
#[no_mangle]
pub extern "C" fn smmo_alloc_reopen_block(st: u32, bid: u32) {
    with_alloc!(st, |a| a.reopen_block(bid))
}

// ------------------------------------------------------------------ bitmaps alone

// A bitmap of `bits` positions at word index `base` (anywhere in the memory), for the
// bitmap tests and any host code that must change a bitmap: always atomic. Set and clear
// return 0, or -(1 + level) when the retry budget (`spin`, `max`) ran out at that level;
// the try_ operations 1 (changed) / 0 (not) or the same negative code.

fn stuck_code(s: Stuck) -> i32 {
    -1 - s.level as i32
}

fn standalone(base: u32, bits: u32) -> Bitmap {
    Bitmap {
        base,
        bits,
        lv: Levels::for_bits(bits),
    }
}

fn env(spin: u32, max: u32, rotate: u32) -> Env {
    Env {
        spin,
        max,
        rotate: rotate != 0,
    }
}

#[no_mangle]
pub extern "C" fn smmo_bitmap_set(base: u32, bits: u32, pos: u32, spin: u32, max: u32) -> i32 {
    // SAFETY: the host passes a bitmap inside the memory and pos < bits.
    match unsafe { standalone(base, bits).set::<Atomic>(&env(spin, max, 1), pos) } {
        Ok(()) => 0,
        Err(s) => stuck_code(s),
    }
}

#[no_mangle]
pub extern "C" fn smmo_bitmap_clear(base: u32, bits: u32, pos: u32, spin: u32, max: u32) -> i32 {
    // SAFETY: as in smmo_bitmap_set.
    match unsafe { standalone(base, bits).clear::<Atomic>(&env(spin, max, 1), pos) } {
        Ok(()) => 0,
        Err(s) => stuck_code(s),
    }
}

#[no_mangle]
pub extern "C" fn smmo_bitmap_try_set(base: u32, bits: u32, pos: u32, spin: u32, max: u32) -> i32 {
    // SAFETY: as in smmo_bitmap_set.
    match unsafe { standalone(base, bits).try_set::<Atomic>(&env(spin, max, 1), pos) } {
        Ok(b) => i32::from(b),
        Err(s) => stuck_code(s),
    }
}

#[no_mangle]
pub extern "C" fn smmo_bitmap_try_clear(base: u32, bits: u32, pos: u32, spin: u32, max: u32) -> i32 {
    // SAFETY: as in smmo_bitmap_set.
    match unsafe { standalone(base, bits).try_clear::<Atomic>(&env(spin, max, 1), pos) } {
        Ok(b) => i32::from(b),
        Err(s) => stuck_code(s),
    }
}

/// Alg. 4 with rotation seed `seed` (`rotate` 0: from bit 0): a position, or -1.
#[no_mangle]
pub extern "C" fn smmo_bitmap_try_find_set(base: u32, bits: u32, seed: u32, rotate: u32) -> i32 {
    // SAFETY: as in smmo_bitmap_set.
    unsafe { standalone(base, bits).try_find_set::<Atomic>(&env(1, 1, rotate), seed) }
}

/// A scan of level 0 from container seed mod n: a position, or -1.
#[no_mangle]
pub extern "C" fn smmo_bitmap_scan_find_set(base: u32, bits: u32, seed: u32, rotate: u32) -> i32 {
    // SAFETY: as in smmo_bitmap_set.
    unsafe { standalone(base, bits).scan_find_set::<Atomic>(&env(1, 1, rotate), seed) }
}

/// Some set bit reachable through set upper bits (bitmap.rs B5, the descent with
/// backtracking), or -1.
#[no_mangle]
pub extern "C" fn smmo_bitmap_find_set(base: u32, bits: u32, seed: u32, rotate: u32) -> i32 {
    // SAFETY: as in smmo_bitmap_set.
    unsafe { standalone(base, bits).find_set::<Atomic>(&env(1, 1, rotate), seed) }
}

/// Find a set bit and clear it: its position, -1 (none), or -2 (retry budget spent).
#[no_mangle]
pub extern "C" fn smmo_bitmap_find_and_clear(base: u32, bits: u32, seed: u32, rotate: u32, spin: u32, max: u32) -> i32 {
    // SAFETY: as in smmo_bitmap_set.
    unsafe { standalone(base, bits).find_and_clear::<Atomic>(&env(spin, max, rotate), seed) }.unwrap_or(-2)
}

/// Set every position (formatting; nothing else may use the bitmap meanwhile).
#[no_mangle]
pub extern "C" fn smmo_bitmap_fill(base: u32, bits: u32) {
    // SAFETY: as in smmo_bitmap_set, and the caller has the bitmap to itself.
    unsafe { standalone(base, bits).fill::<Atomic>() }
}

/// Clear every word of every level (formatting).
#[no_mangle]
pub extern "C" fn smmo_bitmap_reset(base: u32, bits: u32) {
    // SAFETY: as in smmo_bitmap_fill.
    unsafe { standalone(base, bits).reset::<Atomic>() }
}
