//! The DynaSOAr allocator (paper §3 Alg. 1, 2; §4.2 Alg. 6 and request coalescing; §5.2
//! Alg. 7) over the shared heap: the one implementation every CPU thread uses, through the
//! exports of `ffi.rs` (runtime/allocator.ts is a thin binding) or directly from a Rust
//! kernel of this module.
//!
//! Block states and who moves a block between them (the thread whose atomic caused the
//! transition, §3 "responsibility"):
//!
//!   FREE ──new_block (free.find_and_clear, initialize, allocated.set, active.set)──▶ ACTIVE
//!   ACTIVE ──reserve filled the last slot──▶ FULL          (active.clear)
//!   FULL ──release freed the first slot──▶ ACTIVE          (active.set)
//!   ACTIVE ──release emptied it, invalidate won──▶ FREE    (active.clear, allocated.clear, free.set)
//!
//! Each arrow is one named step ("Block transitions" below), checked under SMMO_DEBUG ≥ 1.
//!
//! Invariants between operations (checked by runtime/heap.ts validate): heap.ts H1–H5.
//!
//! Kept blocks (a per-thread cache of emptied blocks; not in the paper). A thread that
//! empties a block and wins its invalidation (Alg. 7) may *keep* it instead of retiring
//! it: the block stays of its type, allocated and active, opens again in a new generation,
//! and goes on this thread's stack of at most `keep` blocks per type. Allocation takes
//! blocks from that stack before searching `active` or `free` (multi-threaded) or after
//! `active` (one thread). On a CPU the `free`, `allocated[T]` and `active[T]` words are
//! shared by all threads (32 blocks per word, 16 words per cache line), so a thread that
//! allocates and frees in turn would otherwise write five shared bitmap words per block.
//!  (K1) A kept block is an ordinary used block: it satisfies H4 (empty, active), any thread
//!       may allocate in it, and the stack is only a hint, re-checked on use like `hint`
//!       (D1 type check after reservation).
//!  (K2) Nothing owns a kept block: giving it back (flush_kept, reclaim_empty) takes it
//!       through the same invalidation as a release (lock, same generation, empty) and
//!       rolls back if another thread allocated in it meanwhile. When to give them back is
//!       the host's choice: on a heap of several threads every thread flushes at the end of
//!       its share of a pass; a runtime of one thread keeps them from pass to pass
//!       (runtime/doall.ts afterPass) and flushes before stats, validation, defragmentation
//!       and disposal.
//!  (K3) Kept blocks never cause HeapExhaustedError: when `free` is empty, new_block
//!       reclaims empty blocks of every type (any thread's) before giving up.
//!  (K4) A thread that empties the block it is allocating in (its hint) leaves it open
//!       without invalidating it: an empty used block is a valid state (H4), and the
//!       responsibility passes to flush_kept or to whichever thread empties it next.
//!  (K5) Optional (RuntimeOptions.allocator.ownFirstBlock, off by default; the host sets
//!       S_OWN_FIRST): in a multi-threaded runtime, a thread without a hint takes its first
//!       block of a pass from `free` (or its kept stack), not from `active`, so that threads
//!       never share a block they are filling (each reservation would move a cache line
//!       between cores). It doubles allocation throughput where few partly filled blocks
//!       exist (linux-scalability), but opens threads × types new blocks per pass, which a
//!       program that also deletes (wa-tor) pays in fragmentation; hence off by default.
//!
//! Deliberate differences from the paper's algorithms:
//!  (D1) When the block's type changed under a reservation (Alg. 1 l. 14–17), the slot is
//!       rolled back *and the loop continues*; the original rolled back but still returned
//!       an object in a block of the wrong type.
//!  (D2) Invalidation (Alg. 7) is tied to the block's *generation*: the emptying thread
//!       reads it while it still holds a live object (so the block cannot be recycled under
//!       it), and invalidation only succeeds if the block is empty in that same generation.
//!  (D3) A full heap is an error (Exhausted; the original loops forever); freeing a slot
//!       that is not taken is an error (Invalid; the original livelocks); every retry loop
//!       is bounded (bits.rs Env::pause).
//!  (D4) initialize_block opens the block's slots (stores its allocation word) last, after
//!       setting its `allocated` and `active` bits; the paper opens them first. There only
//!       the thread that emptied a block invalidates it, so the order did not matter; here
//!       flush_kept and reclaim_empty (K2, K3) lock any empty block they see, and one of
//!       them could own and retire a block whose opener had not set its bits yet. While
//!       the allocation word is all ones no reservation succeeds and no invalidation owns
//!       the block (Alg. 7 fails on all ones). Seen under SMMO_DEBUG: the retirement's
//!       check failed after its lock and left a locked block marked active, which every
//!       later search chose and none could reserve in (test/alloc-race.test.ts); without
//!       the check the retirement's clear of `active` waited for the opener's set (up to
//!       the retry bound).
//!
//! Request coalescing per warp (§4.2, after XMalloc). On a CPU the lanes of a virtual warp
//! (the objects of one block of a do-all) run one after another on one thread, so the
//! "leader thread" of the paper becomes a per-thread, per-type *warp cache*:
//!  (C1) warp_begin(lanes) opens a warp. Before each lane the executor stores the number of
//!       lanes left in the warp, the current one included, in the state word S_LANES_LEFT.
//!  (C2) The first allocation of type T in a warp reserves, with one atomic on one block,
//!       min(lanes left, free slots of the block) slots (lowest first); it takes the lowest
//!       of them and caches the rest. Later allocations of T in the warp take cached slots
//!       (lowest first); when the cache is empty the next one reserves again, spilling to
//!       another block. A cached slot is reserved (its bit is set), so its block cannot be
//!       retired or re-typed while it is cached.
//!  (C3) warp_end returns the slots left in each type's cache, one atomic per block, through
//!       the release path (FIRST sets the active bit; EMPTY invalidates, or K4 when it is the
//!       hint block).
//!  (C4) Outside a warp (create outside a do-all, parallelNew's init methods), and in the
//!       NoCoal variant, every allocation reserves one slot (Alg. 6).
//!  (C5) One thread (a Plain heap): a reservation for at least as many lanes as the class
//!       has slots, whose hint block has fewer free slots than that, takes a block from the
//!       thread's kept stack (K1) when there is one, and the hint block stays the hint
//!       (unless the kept block is left open). Otherwise §4.2's spill (C2) would split every
//!       later full warp over two blocks once one smaller warp has left the hint partly
//!       filled: two reservations per warp instead of one, and every block shared by two
//!       warps (ECS entity_cycle: 62 calls into the core per op instead of 33). Only full
//!       warps qualify, so sparse creators (a birth here and there, whose lanes left
//!       overstate what they take) keep filling the hint; on several threads the kept
//!       stacks hold the pass's emptied blocks, and a kept-first choice there costs wa-tor
//!       its fragmentation (docs/benchmarks.md, "Block choice at 16 threads").
//!  (C6) A lane that creates several objects of one type (a loop of creates) uses up its
//!       warp's reservation by itself: on a GPU each iteration of its loop would be one
//!       coalesced request of every lane, on a CPU the lanes run one after another, so the
//!       lanes-left estimate of C2 is too small for it (the last lane of a warp reserved one
//!       slot per create). When the cache of a type runs empty and the same lane asks
//!       again, it reserves a block's worth:
//!        - all the type's slots while the block of its last reservation (TS_CACHE_BLOCK,
//!          written at every reservation) still holds objects: it keeps what it creates.
//!          On one thread C5 then gives it a kept block whole; on several, when its open
//!          block cannot take a whole block, it fills a block of its own thread (kept, else
//!          from `free`) rather than another thread's open block found in `active` — with
//!          whole-block requests, taking other threads' open blocks made every thread fill
//!          and search again in turn (linux-scalability on the 16-core device host: k ≥ 64
//!          1.3–1.5× slower than C2 that way, 4–6× faster this way);
//!        - all but one when that block is empty again: it deletes as it goes, and a
//!          reservation of every slot would take the block FULL and back (two bitmap
//!          transitions) for objects already gone.
//!       A block this second reservation fills stays the hint (unless C5 or the rule above
//!       kept the old one): the lane's deletions then empty it as the thread's open block
//!       (K4), not through an invalidation, and the next reservation finds it without a
//!       search. "The same lane": each coalesced reservation leaves warp_mark(lanes left,
//!       type) in S_WARP (odd, so still "in a warp"); the hosts write 1 there at a warp's
//!       begin and the lanes left before each lane, so the mark matches only within one
//!       lane of one warp. Lanes that create at most one object of a type (every app but
//!       linux-scalability and barnes-hut's tree) never match. Measured in
//!       docs/benchmarks.md ("A lane that creates in a loop").
//!  (C7) On a heap of several threads, the first reservation of a type in a warp is sized by
//!       what the thread's warps took before: TS_WANT holds the objects of the type that
//!       the thread's last warp to reserve any took (the slots it reserved in the warp, less
//!       those its warp end gave back), and a warp's first reservation asks for
//!       min(lanes left, TS_WANT) when TS_WANT is set (0: never measured, C2 as before).
//!       When another lane of the same warp finds the cache empty (S_WARP holds this warp's
//!       mark of the type), the estimate was short: that reservation asks for the lanes
//!       left, as C2. Where one lane in dozens creates (a birth on an empty cell, a particle
//!       emitted), C2 reserved a warp's lanes left for one object and gave the rest back at
//!       the warp's end: a reservation that fills its block moves it to FULL and the warp's
//!       end back to ACTIVE (two writes to a shared `active` word), and the slots held meanwhile
//!       are not there for other threads' creates. On 16 threads the passes that create
//!       sparsely got faster with C7 (docs/benchmarks.md, "Reservations sized by what the
//!       last warp took"). Lanes that all create keep C2's one reservation per warp:
//!       their warps take at least their lanes. A lane that creates again (C6) is not
//!       estimated. One thread (a Plain heap) keeps C2: there the extra slots cost nothing
//!       measurable, and C5 relies on full-warp reservations.
//!
//! Executor contract (byte-identical heaps): an executor of do-all methods — the
//! TypeScript one (ThreadContext.runBlocks), a compiled one, or a Rust kernel — must make
//! the same sequence of allocator calls for the same pass: for each block of its share, in
//! block-list order, warp_begin(popc(iteration bits)); for each lane in ascending slot order,
//! store the lanes left (C1) and run the method, whose create/destroy calls go to
//! allocate/release; then warp_end. At the end of its share, flush_kept (K2: on a heap of
//! several threads; the host makes that call, whatever executed the methods). Then the heap after
//! the pass is the same byte for byte whatever executed the methods (one thread; with
//! several, the interleaving is the scheduler's).
//!
//! Host fast paths (runtime/alloc-fast-path.ts F1–F4): the host makes two common cases
//! itself, without calling in: allocate_warp's cached branch (C2) on any heap, and
//! release_begin followed by `released` only when the AND shows a block transition
//! (release_end) on a heap of one thread (Plain). They transcribe this file's steps on the
//! same words; a change to either step must change them too (test/alloc-fast-path.test.ts
//! compares every heap word with this core alone).
//!
//! Variants (the paper's §7 study, Fig. 13(d); heap flags, written once by the host):
//!  - rotation off (NoShift): every bitmap search and slot search starts at bit 0;
//!  - coalescing off (NoCoal): C4 everywhere, also for allocate_many;
//!  - BitmapAlloc: the paper's baseline emulated on blocks of one slot each (runtime/layout.ts
//!    makes every type one slot per block, every block the size of the largest class): an
//!    allocation takes a block from `free` and marks it in `allocated[T]`; a release gives it
//!    back. No active bitmap, no invalidation (nobody can reserve in a used block), no kept
//!    blocks, no coalescing.
//!
//! Stale-handle generations (checked mode): a type whose table entry has T_GEN_OFFSET ≠ 0
//! has a u32 per slot at that byte offset of its blocks; every successful release of slot s
//! increments it (bumped while the released object still pins the block, D2's argument).
use super::bitmap::{Bitmap, Levels, Stuck};
use super::bits::{ffs_from, lowest_set_bits, Env};
use super::mem::{private, Mem};
use crate::layout::*;
use core::marker::PhantomData;

/// (C7) The largest estimate kept in TS_WANT (a warp's reservations are counted up to it).
const MAX_WANT: u32 = 1 << 16;

/// Outcomes of invalidate_resolve (Alg. 7 l. 2–13).
pub const INVALIDATE_FAILED: i32 = 0;
pub const INVALIDATE_OWNED: i32 = 1;
pub const INVALIDATE_RETRY: i32 = -1;

/// Word index of the heap header.
pub const HEADER_WORD: u32 = RESERVED_BYTES / 4;

/// Why an operation failed; the host turns it into a typed error (runtime/allocator.ts).
#[derive(Clone, Copy)]
pub enum Fail {
    /// No free block for type `ty` (HeapExhaustedError).
    Exhausted { ty: u32 },
    /// A bad handle or a broken heap (ALLOC_ERR_* code and its details).
    Invalid { code: u32, a: u32, b: u32, c: u32 },
    /// A retry loop gave up (ALLOC_OP_* operation and its arguments).
    Contention { op: u32, a: u32, b: u32 },
}

type R<T> = Result<T, Fail>;

/// Word `k` of the heap header.
#[inline(always)]
pub(crate) fn header(k: u32) -> u32 {
    // SAFETY: the header lies at RESERVED_BYTES in every smmo heap and is written only by
    // the host when it formats the heap, before any allocator call (mem.rs M2).
    unsafe { private::load(HEADER_WORD + k) }
}

/// (C6) The value of S_WARP after a coalesced reservation of type `t` by the lane that had
/// `left` lanes left: odd, so never 0 (no warp) and never 1 (a warp without a reservation
/// yet, as warp_begin and the hosts write it).
#[inline(always)]
fn warp_mark(left: u32, t: u32) -> u32 {
    1 | ((if left > 63 { 63 } else { left }) << 1) | (t << 8) | (1 << 7)
}

/// Whether the heap was formatted for several threads (atomic read-modify-writes).
#[inline(always)]
pub fn heap_is_atomic() -> bool {
    header(H_ALLOC_FLAGS) & ALLOC_FLAG_ATOMIC != 0
}

/// The levels of every block bitmap of the heap (all have numBlocks bits).
#[inline]
pub fn heap_levels() -> Levels {
    let mut lv = Levels {
        top: header(H_BITMAP_LEVELS).wrapping_sub(1),
        off: [0; MAX_BITMAP_LEVELS as usize],
        words0: header(H_LEVEL0_WORDS),
    };
    let mut l = 0;
    while l < MAX_BITMAP_LEVELS as usize {
        lv.off[l] = header(H_LEVEL_OFFSETS + l as u32);
        l += 1;
    }
    lv
}

/// A bitmap and the id that names it in errors (0 free, 1 + 2t allocated[t], 2 + 2t active[t]).
#[derive(Clone, Copy)]
struct Bm {
    map: Bitmap,
    id: u32,
}

impl Bm {
    fn err(self) -> impl Fn(Stuck) -> Fail {
        move |s: Stuck| Fail::Contention {
            op: s.op,
            a: self.id,
            b: s.pos | (s.level << 27),
        }
    }
}

/// One call's view of the heap and of the calling thread's state. Only the state's address
/// is held; the heap's descriptor words are read where they are used (they are read-only
/// after formatting, and a call that takes the fast path needs few of them).
pub struct Alloc<M: Mem> {
    /// Word index of the thread's state.
    st: u32,
    _m: PhantomData<M>,
}

impl<M: Mem> Alloc<M> {
    /// # Safety
    /// `st` is the word index of a state claimed by the calling thread (`claim`), in a heap
    /// formatted by `format`.
    #[inline(always)]
    pub unsafe fn new(st: u32) -> Alloc<M> {
        Alloc { st, _m: PhantomData }
    }

    #[inline(always)]
    fn num_blocks(&self) -> u32 {
        header(H_NUM_BLOCKS)
    }
    #[inline(always)]
    fn num_types(&self) -> u32 {
        header(H_NUM_TYPES)
    }
    #[inline(always)]
    fn keep(&self) -> u32 {
        header(H_KEEP_BLOCKS)
    }
    #[inline(always)]
    fn seed(&self) -> u32 {
        self.state(S_SEED)
    }
    /// Retry bounds (from the state) and search policy (from the heap's flags).
    #[inline(always)]
    fn env(&self) -> Env {
        Env {
            spin: self.state(S_SPIN),
            max: self.state(S_MAX_ATTEMPTS),
            rotate: self.has(ALLOC_FLAG_ROTATION),
        }
    }

    // ------------------------------------------------------------ words

    #[inline(always)]
    fn block_word(&self, bid: u32) -> u32 {
        header(H_BLOCKS_OFFSET) / 4 + bid * (header(H_BLOCK_BYTES) / 4)
    }
    #[inline(always)]
    fn type_word(&self, t: u32, k: u32) -> u32 {
        // SAFETY: t < num_types (callers check), so the entry lies in the type table.
        unsafe { private::load(header(H_TYPE_TABLE_WORD) + t * TYPE_WORDS + k) }
    }
    #[inline(always)]
    fn high_mask(&self, t: u32) -> u32 {
        self.type_word(t, T_HIGH_MASK)
    }
    #[inline(always)]
    fn state(&self, k: u32) -> u32 {
        // SAFETY: the state is this thread's (M2); k < S_TYPES.
        unsafe { private::load(self.st + k) }
    }
    #[inline(always)]
    fn set_state(&self, k: u32, v: u32) {
        // SAFETY: as in state.
        unsafe { private::store(self.st + k, v) }
    }
    #[inline(always)]
    fn tw(&self, t: u32, k: u32) -> u32 {
        self.st + S_TYPES + t * TS_WORDS + k
    }
    #[inline(always)]
    fn per_type(&self, t: u32, k: u32) -> u32 {
        // SAFETY: t < num_types: inside this thread's state (M2).
        unsafe { private::load(self.tw(t, k)) }
    }
    #[inline(always)]
    fn set_per_type(&self, t: u32, k: u32, v: u32) {
        // SAFETY: as in per_type.
        unsafe { private::store(self.tw(t, k), v) }
    }
    #[inline(always)]
    fn hint(&self, t: u32) -> u32 {
        self.per_type(t, TS_HINT)
    }
    #[inline(always)]
    fn set_hint(&self, t: u32, bid: u32) {
        self.set_per_type(t, TS_HINT, bid)
    }
    #[inline(always)]
    fn kept_word(&self, t: u32, n: u32) -> u32 {
        self.st + S_TYPES + self.num_types() * TS_WORDS + t * self.keep() + n
    }
    #[inline(always)]
    fn own_first(&self) -> bool {
        self.state(S_OWN_FIRST) != 0
    }
    #[inline(always)]
    fn has(&self, flag: u32) -> bool {
        header(H_ALLOC_FLAGS) & flag != 0
    }

    fn free_bm(&self) -> Bm {
        Bm {
            map: Bitmap {
                base: header(H_FREE_BITMAP_WORD),
                bits: self.num_blocks(),
                lv: heap_levels(),
            },
            id: 0,
        }
    }
    fn allocated_bm(&self, t: u32) -> Bm {
        Bm {
            map: Bitmap {
                base: self.type_word(t, T_ALLOCATED_WORD),
                bits: self.num_blocks(),
                lv: heap_levels(),
            },
            id: 1 + 2 * t,
        }
    }
    fn active_bm(&self, t: u32) -> Bm {
        Bm {
            map: Bitmap {
                base: self.type_word(t, T_ACTIVE_WORD),
                bits: self.num_blocks(),
                lv: heap_levels(),
            },
            id: 2 + 2 * t,
        }
    }

    // SAFETY (of every `unsafe` block below that calls M or a bitmap): block indices are
    // < num_blocks (checked at the entry points that take them from the host, or read from
    // bitmaps whose bits name blocks only, B1), type ids are < num_types (checked where they
    // are read from a block header), so every word touched lies in the heap's header,
    // bitmaps, type table, this thread's state, or block headers.

    fn set(&self, bm: Bm, pos: u32) -> R<()> {
        // SAFETY: the note above: bm is a bitmap of this heap, pos a block index (< num_blocks).
        unsafe { bm.map.set::<M>(&self.env(), pos) }.map_err(bm.err())
    }
    fn clear(&self, bm: Bm, pos: u32) -> R<()> {
        // SAFETY: the note above: bm is a bitmap of this heap, pos a block index (< num_blocks).
        unsafe { bm.map.clear::<M>(&self.env(), pos) }.map_err(bm.err())
    }
    fn load(&self, w: u32) -> u32 {
        // SAFETY: the note above: w is a word of this heap; M is atomic where others may touch it.
        unsafe { M::load(w) }
    }
    fn store(&self, w: u32, v: u32) {
        // SAFETY: the note above: w is a word of this heap; M is atomic where others may touch it.
        unsafe { M::store(w, v) }
    }
    fn or(&self, w: u32, v: u32) -> u32 {
        // SAFETY: the note above: w is a word of this heap; M is atomic where others may touch it.
        unsafe { M::or(w, v) }
    }
    fn and(&self, w: u32, v: u32) -> u32 {
        // SAFETY: the note above: w is a word of this heap; M is atomic where others may touch it.
        unsafe { M::and(w, v) }
    }
    fn add(&self, w: u32, v: u32) -> u32 {
        // SAFETY: the note above: w is a word of this heap; M is atomic where others may touch it.
        unsafe { M::add(w, v) }
    }
    /// A block joined or left allocated[t]: bump the block-set epoch (layout H_BLOCK_SET_EPOCH),
    /// by which the host knows that a do-all's block lists must be walked again.
    fn block_set_changed(&self) {
        self.add(HEADER_WORD + H_BLOCK_SET_EPOCH, 1);
    }

    /// The type id in a block header, checked against the type table.
    fn block_type(&self, bid: u32) -> R<u32> {
        let t = self.load(self.block_word(bid) + BLOCK_TYPE_WORD);
        if t >= self.num_types() {
            return Err(Fail::Invalid {
                code: ALLOC_ERR_CORRUPT,
                a: bid,
                b: 0,
                c: t,
            });
        }
        Ok(t)
    }

    fn contention(op: u32, a: u32) -> impl Fn(()) -> Fail {
        move |_| Fail::Contention { op, a, b: 0 }
    }

    // ------------------------------------------------------------ allocate (Alg. 1)

    /// Reserve one slot for a new object of concrete type `t`; returns its handle.
    pub fn allocate(&self, t: u32) -> R<u32> {
        if t >= self.num_types() || self.type_word(t, T_SLOTS) == 0 {
            return Err(Fail::Invalid {
                code: ALLOC_ERR_BAD_TYPE,
                a: t,
                b: 0,
                c: 0,
            });
        }
        if self.has(ALLOC_FLAG_BITMAP_ALLOC) {
            return self.allocate_bitmap(t);
        }
        if self.has(ALLOC_FLAG_COALESCING) && self.state(S_WARP) != 0 {
            return self.allocate_warp(t);
        }
        self.allocate_one(t)
    }

    /// Alg. 1 with one slot per call (C4).
    fn allocate_one(&self, t: u32) -> R<u32> {
        let active = self.active_bm(t);
        let mut bid = self.hint(t);
        let mut attempt = 1u32;
        loop {
            if bid == 0 {
                let s = self.select_block(t, active, attempt)?;
                bid = if s < 0 { self.new_block(t)? } else { s as u32 };
            }
            let (slot, full) = self.reserve(bid)?;
            if slot >= 0 {
                let tt = self.block_type(bid)?;
                if full {
                    self.to_full(bid, tt)?;
                }
                if tt == t {
                    self.set_hint(t, if full { 0 } else { bid });
                    return Ok(bid * 32 + slot as u32);
                }
                // (D1) The block was freed and re-initialised for another type between
                // selection and reservation: give the slot back and select again.
                self.rollback(bid, 1 << slot)?;
            }
            bid = 0;
            self.env().pause(attempt).map_err(Self::contention(ALLOC_OP_ALLOCATE, t))?;
            attempt += 1;
        }
    }

    /// (C2) An allocation inside a warp: a cached slot, or one coalesced reservation.
    fn allocate_warp(&self, t: u32) -> R<u32> {
        let cached = self.per_type(t, TS_CACHE_MASK);
        if cached != 0 {
            let slot = cached.trailing_zeros();
            let rest = cached & cached.wrapping_sub(1);
            self.set_per_type(t, TS_CACHE_MASK, rest);
            if rest == 0 {
                self.set_state(S_CACHED, self.state(S_CACHED).wrapping_sub(1));
            }
            return Ok(self.per_type(t, TS_CACHE_BLOCK) * 32 + slot);
        }
        let left = self.state(S_LANES_LEFT);
        let mut want = if left == 0 {
            1
        } else if left > MAX_SLOTS {
            MAX_SLOTS
        } else {
            left
        };
        // (C6) The lane that made this warp's last reservation of `t` has used up what it
        // reserved: it creates in a loop, so it takes a block's worth — all of it while the
        // block of its last reservation holds objects, all but one slot when they are all
        // gone (no FULL and FIRST transitions for objects already deleted).
        let me = warp_mark(left, t);
        let prev = self.state(S_WARP);
        let again = prev == me;
        // (C7) Several threads: the first reservation of `t` in this warp asks for what the
        // thread's last warp took; a later one in the same warp (its mark names `t`) for the
        // lanes left.
        let learn = heap_is_atomic() && !again;
        let first = prev == 1 || prev >> 8 != t;
        if learn && first {
            let est = self.per_type(t, TS_WANT);
            if est != 0 && est < want {
                want = est;
            }
        }
        let mut keeps = false;
        if again {
            let slots = self.type_word(t, T_SLOTS);
            let last = self.per_type(t, TS_CACHE_BLOCK);
            keeps = self.load(self.block_word(last) + BLOCK_ALLOC_WORD) != self.high_mask(t);
            want = want.max(if keeps { slots } else { slots - 1 });
        }
        let active = self.active_bm(t);
        let mut bid = self.hint(t);
        // (C5) On one thread, a warp whose lanes could fill a block by themselves, and whose
        // open block cannot take them all, takes a kept block instead; the open block stays
        // the hint for a smaller warp.
        let mut after = 0;
        if bid != 0 && want >= self.type_word(t, T_SLOTS) && !heap_is_atomic() {
            let free = self.free_slots(bid);
            if free < want {
                let kept = self.pop_kept(t);
                if kept != 0 {
                    after = if free > 0 { bid } else { 0 };
                    bid = kept;
                }
            }
        }
        // (C6) On several threads, a lane that keeps what it creates and whose open block
        // cannot take a whole block's worth fills a block of its own thread — kept, else
        // from `free` — instead of another thread's open block found in `active`.
        if keeps && heap_is_atomic() {
            let free = if bid == 0 { 0 } else { self.free_slots(bid) };
            if free < want {
                after = if free > 0 { bid } else { 0 };
                let kept = self.pop_kept(t);
                bid = if kept != 0 { kept } else { self.new_block(t)? };
            }
        }
        let mut attempt = 1u32;
        loop {
            if bid == 0 {
                let s = self.select_block(t, active, attempt)?;
                bid = if s < 0 { self.new_block(t)? } else { s as u32 };
            }
            let (got, full) = self.reserve_many(bid, want)?;
            if got != 0 {
                let tt = self.block_type(bid)?;
                if full {
                    self.to_full(bid, tt)?;
                }
                if tt == t {
                    // (C6) a block that a lane's second reservation filled stays the hint.
                    self.set_hint(t, if !full || (again && after == 0) { bid } else { after });
                    self.set_state(S_WARP, me);
                    // The block of the warp's last reservation of t, also when nothing is
                    // cached (C6 reads it).
                    self.set_per_type(t, TS_CACHE_BLOCK, bid);
                    // (C7) The slots this warp has reserved of `t` so far (the warp end takes
                    // back what it returns); C6's reservations count too.
                    if heap_is_atomic() {
                        let before = if learn && first { 0 } else { self.per_type(t, TS_WANT) };
                        self.set_per_type(t, TS_WANT, (before + got.count_ones()).min(MAX_WANT));
                    }
                    let rest = got & got.wrapping_sub(1);
                    if rest != 0 {
                        self.set_per_type(t, TS_CACHE_MASK, rest);
                        self.set_state(S_CACHED, self.state(S_CACHED) + 1);
                    }
                    return Ok(bid * 32 + got.trailing_zeros());
                }
                self.rollback(bid, got)?; // (D1)
            }
            bid = 0;
            self.env().pause(attempt).map_err(Self::contention(ALLOC_OP_ALLOCATE, t))?;
            attempt += 1;
        }
    }

    /// Free slots of used block `bid` now (a plain read: a hint for the block choice).
    fn free_slots(&self, bid: u32) -> u32 {
        (!self.load(self.block_word(bid) + BLOCK_ALLOC_WORD)).count_ones()
    }

    /// BitmapAlloc: a block of one slot straight from `free`.
    fn allocate_bitmap(&self, t: u32) -> R<u32> {
        let free = self.free_bm();
        // SAFETY: a bitmap of this heap (the header names it), inside the memory: the SAFETY
        // note above `fn set`.
        let bid = unsafe { free.map.find_and_clear::<M>(&self.env(), self.seed()) }.map_err(free.err())?;
        if bid < 0 {
            return Err(Fail::Exhausted { ty: t });
        }
        let bid = bid as u32;
        let w = self.block_word(bid);
        self.store(w + BLOCK_TYPE_WORD, t);
        self.store(w + BLOCK_ITER_WORD, 0);
        self.add(w + BLOCK_GEN_WORD, 1);
        self.store(w + BLOCK_ALLOC_WORD, U32_ALL_ONES); // its one slot taken: full, not active
        self.set(self.allocated_bm(t), bid)?;
        self.block_set_changed();
        Ok(bid * 32)
    }

    /// Reserve `count` slots of `t` (coalesced: one atomic per block, spilling to further
    /// blocks); handles go to the u32 words from `out`. On failure the slots reserved so far
    /// are released again (in order) before the error is returned.
    pub fn allocate_many(&self, t: u32, count: u32, out: u32) -> R<()> {
        if t >= self.num_types() || self.type_word(t, T_SLOTS) == 0 {
            return Err(Fail::Invalid {
                code: ALLOC_ERR_BAD_TYPE,
                a: t,
                b: 0,
                c: 0,
            });
        }
        let mut done = 0u32;
        let r = if self.has(ALLOC_FLAG_BITMAP_ALLOC) || !self.has(ALLOC_FLAG_COALESCING) {
            self.allocate_many_single(t, count, out, &mut done)
        } else {
            self.allocate_many_coalesced(t, count, out, &mut done)
        };
        if let Err(e) = r {
            let mut k = 0;
            while k < done {
                // SAFETY: out[k] for k < done was written by this call (host's buffer, M2).
                let h = unsafe { private::load(out + k) };
                self.release(h >> SLOT_BITS, h & 31)?;
                k += 1;
            }
            return Err(e);
        }
        Ok(())
    }

    fn put(&self, out: u32, done: &mut u32, h: u32) {
        // SAFETY: the host passes a buffer of `count` words, private to this thread (M2).
        unsafe { private::store(out + *done, h) };
        *done += 1;
    }

    fn allocate_many_single(&self, t: u32, count: u32, out: u32, done: &mut u32) -> R<()> {
        while *done < count {
            let h = if self.has(ALLOC_FLAG_BITMAP_ALLOC) {
                self.allocate_bitmap(t)?
            } else {
                self.allocate_one(t)?
            };
            self.put(out, done, h);
        }
        Ok(())
    }

    fn allocate_many_coalesced(&self, t: u32, count: u32, out: u32, done: &mut u32) -> R<()> {
        let active = self.active_bm(t);
        let mut bid = self.hint(t);
        // `attempt` counts consecutive failed rounds only: a large request that spans many
        // blocks must not use up the retry budget with successful rounds.
        let mut attempt = 0u32;
        while *done < count {
            if bid == 0 {
                let s = self.select_block(t, active, attempt)?;
                bid = if s < 0 { self.new_block(t)? } else { s as u32 };
            }
            let (got, full) = self.reserve_many(bid, count - *done)?;
            if got != 0 {
                let tt = self.block_type(bid)?;
                if full {
                    self.to_full(bid, tt)?;
                }
                if tt == t {
                    let mut bits = got;
                    while bits != 0 {
                        self.put(out, done, bid * 32 + bits.trailing_zeros());
                        bits &= bits - 1;
                    }
                    self.set_hint(t, if full { 0 } else { bid });
                    attempt = 0;
                    if full {
                        bid = 0; // else the block may still have room: stay on it
                    }
                    continue;
                }
                self.rollback(bid, got)?; // (D1)
            }
            // Full, invalidated or re-typed under us: select another block.
            bid = 0;
            attempt += 1;
            self.env().pause(attempt).map_err(Self::contention(ALLOC_OP_ALLOCATE_MANY, t))?;
        }
        Ok(())
    }

    /// (D1) Give back slots reserved in a block of another type, one release per slot
    /// (lowest first), and log them in the state (tests observe the rollbacks there).
    fn rollback(&self, bid: u32, mask: u32) -> R<()> {
        let mut bits = mask;
        while bits != 0 {
            let slot = bits.trailing_zeros();
            let n = self.state(S_ROLLBACKS);
            self.set_state(S_ROLLBACK_LOG + (n % ROLLBACK_LOG_WORDS), bid * 32 + slot);
            self.set_state(S_ROLLBACKS, n.wrapping_add(1));
            self.release(bid, slot)?;
            bits &= bits - 1;
        }
        Ok(())
    }

    /// A block to allocate in when the hint has none (-1: take a new one from `free`).
    /// K5 on: the thread's own blocks first — a kept one, else, for its first block of the
    /// pass, a new one — then Alg. 1's active blocks. Otherwise (one thread, and by default
    /// on several): Alg. 1's order, active blocks first (the partly filled ones), kept blocks
    /// when no active one is found.
    fn select_block(&self, t: u32, active: Bm, attempt: u32) -> R<i32> {
        let seed = self.seed().wrapping_add(attempt);
        if self.own_first() {
            let kept = self.pop_kept(t);
            if kept != 0 {
                self.set_per_type(t, TS_FRESH, 0); // a kept block is this thread's own too
                return Ok(kept as i32);
            }
            if self.per_type(t, TS_FRESH) == 1 {
                self.set_per_type(t, TS_FRESH, 0);
                return Ok(self.new_block(t)? as i32);
            }
            return Ok(self.find_active(active, seed));
        }
        let bid = self.find_active(active, seed);
        if bid >= 0 {
            return Ok(bid);
        }
        let kept = self.pop_kept(t);
        Ok(if kept != 0 { kept as i32 } else { -1 })
    }

    /// An active block (Alg. 1 l. 2), or -1 when there is none. The rotated descent may fail
    /// while another thread's set or clear is in flight (B3); if the top container then still
    /// says that some block is active, the descent with backtracking (bitmap.rs B5) looks
    /// past upper bits whose containers were just emptied. Without it a spurious failure
    /// would open a new block from `free` while partly empty blocks exist: under contention
    /// that was most of the fragmentation of multi-threaded runs. It replaced an exact scan
    /// of level 0, which read every container of the heap each time (on the 16-core device
    /// host about 40 000 per scan in a 1 GB heap, a few hundred scans per step of the
    /// allocating models); what it still misses is a block whose upper bit is not written
    /// yet (a SET-FIRST in flight), which costs a new block, never a wrong result.
    fn find_active(&self, active: Bm, seed: u32) -> i32 {
        // SAFETY: a bitmap of this heap (the header names it), inside the memory: the SAFETY
        // note above `fn set`.
        unsafe {
            let bid = active.map.try_find_set::<M>(&self.env(), seed);
            if bid >= 0 || !active.map.any_at_top::<M>() {
                return bid;
            }
            active.map.find_set::<M>(&self.env(), seed)
        }
    }

    /// Take a kept block of type `t` off this thread's stack (0: none).
    fn pop_kept(&self, t: u32) -> u32 {
        let n = self.per_type(t, TS_KEPT);
        if n == 0 {
            return 0;
        }
        self.set_per_type(t, TS_KEPT, n - 1);
        // SAFETY: n - 1 < keep: inside this thread's kept stack of t (M2).
        unsafe { private::load(self.kept_word(t, n - 1)) }
    }

    // ------------------------------------------------------------ block steps

    /// Take a free block for type `t` (Alg. 1 l. 4–7); returns its index.
    pub fn new_block(&self, t: u32) -> R<u32> {
        let free = self.free_bm();
        // SAFETY: a bitmap of this heap (the header names it), inside the memory: the SAFETY
        // note above `fn set`.
        let mut bid = unsafe { free.map.find_and_clear::<M>(&self.env(), self.seed()) }.map_err(free.err())?;
        if bid < 0 {
            // No free block. An active block of this type may have appeared meanwhile.
            // SAFETY: a bitmap of this heap (the header names it), inside the memory: the SAFETY
            // note above `fn set`.
            let other = unsafe { self.active_bm(t).map.scan_find_set::<M>(&self.env(), self.seed()) };
            if other >= 0 {
                return Ok(other as u32);
            }
            // (K3) Empty blocks kept by any thread go back to `free`, then one more try.
            if self.reclaim_empty()? > 0 {
                // SAFETY: a bitmap of this heap (the header names it), inside the memory: the SAFETY
                // note above `fn set`.
                bid = unsafe { free.map.find_and_clear::<M>(&self.env(), self.seed()) }.map_err(free.err())?;
            }
            if bid < 0 {
                return Err(Fail::Exhausted { ty: t });
            }
        }
        self.initialize_block(bid as u32, t)?;
        Ok(bid as u32)
    }

    /// initialize_block (Alg. 1 l. 5–7) of block `bid`, whose free bit the caller has just
    /// cleared: it now belongs to type `t`, empty, in a new generation.
    pub fn initialize_block(&self, bid: u32, t: u32) -> R<()> {
        // Type first, then generation, then the bitmap bits, and only then open the slots
        // (D4). With Atomic every store is sequentially consistent, so the type is visible
        // before any reservation can succeed (the paper's thread fence, §5.2 footnote 5).
        let w = self.block_word(bid);
        if self.debug() {
            // We cleared its free bit: it is ours, free in every other respect.
            let mut bad = 0;
            if self.load(w + BLOCK_ALLOC_WORD) != U32_ALL_ONES {
                bad |= TRF_ALLOC;
            }
            if self.load(w + BLOCK_TYPE_WORD) != U32_FREE_TYPE {
                bad |= TRF_TYPE;
            }
            if self.bit(self.free_bm(), bid) {
                bad |= TRF_FREE;
            }
            if self.bit(self.allocated_bm(t), bid) {
                bad |= TRF_ALLOCATED;
            }
            self.transition_ok(bid, TR_OPEN, bad)?;
        }
        self.store(w + BLOCK_TYPE_WORD, t);
        self.store(w + BLOCK_ITER_WORD, 0);
        self.add(w + BLOCK_GEN_WORD, 1);
        self.set(self.allocated_bm(t), bid)?;
        self.block_set_changed();
        self.set(self.active_bm(t), bid)?;
        self.store(w + BLOCK_ALLOC_WORD, self.high_mask(t)); // (D4) last
        self.settled(bid, t, TR_OPEN)
    }

    // ------------------------------------------------------------ block transitions
    //
    // Every change of a block's state (the diagram at the top) goes through one of the
    // named steps: initialize_block (FREE → ACTIVE), to_full (ACTIVE → FULL), to_active
    // (FULL → ACTIVE), retire_block (ACTIVE → FREE) and reopen_block (a kept block opened
    // again). With ALLOC_FLAG_DEBUG (SMMO_DEBUG ≥ 1, runtime/debug.ts) each checks the block's
    // header against its bitmap bits: in any mode what this thread owns (a block it took
    // from `free`, or holds locked with all bits set, cannot change under it), and, where
    // no other thread exists (the plain single-thread mode), the block's whole state after
    // the step (heap.ts H3/H4 for that block). A disagreement is ALLOC_ERR_TRANSITION.

    fn debug(&self) -> bool {
        self.has(ALLOC_FLAG_DEBUG)
    }

    fn bit(&self, bm: Bm, pos: u32) -> bool {
        // SAFETY: pos is a block index of this heap, bm one of its bitmaps (the SAFETY note
        // above `fn set`).
        unsafe { bm.map.get::<M>(pos) }
    }

    fn transition_ok(&self, bid: u32, which: u32, bad: u32) -> R<()> {
        if bad == 0 {
            return Ok(());
        }
        Err(Fail::Invalid {
            code: ALLOC_ERR_TRANSITION,
            a: bid,
            b: which,
            c: bad,
        })
    }

    /// Debug, single thread: block `bid` is now a used block of type `t` (H4) or, for
    /// TR_RETIRE, a free block (H3).
    fn settled(&self, bid: u32, t: u32, which: u32) -> R<()> {
        if !self.debug() || heap_is_atomic() {
            return Ok(());
        }
        let w = self.block_word(bid);
        let alloc = self.load(w + BLOCK_ALLOC_WORD);
        let mut bad = 0;
        if which == TR_RETIRE {
            if alloc != U32_ALL_ONES {
                bad |= TRF_ALLOC;
            }
            if self.load(w + BLOCK_TYPE_WORD) != U32_FREE_TYPE {
                bad |= TRF_TYPE;
            }
            if !self.bit(self.free_bm(), bid) {
                bad |= TRF_FREE;
            }
            if self.bit(self.allocated_bm(t), bid) {
                bad |= TRF_ALLOCATED;
            }
            if self.bit(self.active_bm(t), bid) {
                bad |= TRF_ACTIVE;
            }
        } else {
            if alloc & self.high_mask(t) != self.high_mask(t) {
                bad |= TRF_ALLOC;
            }
            if self.load(w + BLOCK_TYPE_WORD) != t {
                bad |= TRF_TYPE;
            }
            if self.bit(self.free_bm(), bid) {
                bad |= TRF_FREE;
            }
            if !self.bit(self.allocated_bm(t), bid) {
                bad |= TRF_ALLOCATED;
            }
            // H4: active ⇔ a free slot.
            if self.bit(self.active_bm(t), bid) != (alloc != U32_ALL_ONES) {
                bad |= TRF_ACTIVE;
            }
        }
        self.transition_ok(bid, which, bad)
    }

    /// ACTIVE → FULL: a reservation filled block `bid` (of type `t`); its active bit goes.
    fn to_full(&self, bid: u32, t: u32) -> R<()> {
        self.clear(self.active_bm(t), bid)?;
        self.settled(bid, t, TR_FULL)
    }

    /// FULL → ACTIVE: a release freed the first slot of block `bid`; its active bit comes back.
    fn to_active(&self, bid: u32, t: u32) -> R<()> {
        self.set(self.active_bm(t), bid)?;
        self.settled(bid, t, TR_FIRST)
    }

    /// Debug: block `bid`, which this thread holds locked (every allocation bit set: empty,
    /// invalidated), is a used block of type `t`.
    fn owned_locked(&self, bid: u32, t: u32, which: u32) -> R<()> {
        if !self.debug() {
            return Ok(());
        }
        let w = self.block_word(bid);
        let mut bad = 0;
        if self.load(w + BLOCK_ALLOC_WORD) != U32_ALL_ONES {
            bad |= TRF_ALLOC;
        }
        if self.load(w + BLOCK_TYPE_WORD) != t {
            bad |= TRF_TYPE;
        }
        if self.bit(self.free_bm(), bid) {
            bad |= TRF_FREE;
        }
        if !self.bit(self.allocated_bm(t), bid) {
            bad |= TRF_ALLOCATED;
        }
        self.transition_ok(bid, which, bad)
    }

    // ------------------------------------------------------------ reserve (Alg. 6)

    /// Reserve one slot of block `bid` (Alg. 6): (slot, whether it filled the block);
    /// slot -1 if the block is full or invalidated.
    pub fn reserve(&self, bid: u32) -> R<(i32, bool)> {
        let w = self.block_word(bid) + BLOCK_ALLOC_WORD;
        let mut attempt = 1u32;
        loop {
            let bm = self.load(w);
            if bm == U32_ALL_ONES {
                return Ok((-1, false));
            }
            let pos = ffs_from(!bm, self.env().start(self.seed().wrapping_add(attempt)));
            let mask = 1u32 << pos;
            let before = self.or(w, mask);
            if before & mask == 0 {
                return Ok((pos, before | mask == U32_ALL_ONES));
            }
            if before == U32_ALL_ONES {
                return Ok((-1, false));
            }
            // another thread took that slot first: pick another
            self.env().pause(attempt).map_err(Self::contention(ALLOC_OP_RESERVE, bid))?;
            attempt += 1;
        }
    }

    /// Reserve up to `want` slots of block `bid` (lowest first) in one atomic: (their mask,
    /// whether the block is now full); mask 0 if none.
    fn reserve_many(&self, bid: u32, want: u32) -> R<(u32, bool)> {
        let w = self.block_word(bid) + BLOCK_ALLOC_WORD;
        let mut attempt = 1u32;
        loop {
            let bm = self.load(w);
            if bm == U32_ALL_ONES {
                return Ok((0, false));
            }
            let mask = lowest_set_bits(!bm, want);
            let before = self.or(w, mask);
            let got = mask & !before;
            if got != 0 {
                return Ok((got, before | mask == U32_ALL_ONES));
            }
            if before == U32_ALL_ONES {
                return Ok((0, false));
            }
            self.env().pause(attempt).map_err(Self::contention(ALLOC_OP_RESERVE_MANY, bid))?;
            attempt += 1;
        }
    }

    // ------------------------------------------------------------ release (Alg. 2)

    /// Free slot `slot` of block `bid` (Alg. 2); the checks make a bad handle an error, never
    /// a corrupted heap. The first half (l. 1–4) is release_begin, the rest `released`.
    pub fn release(&self, bid: u32, slot: u32) -> R<()> {
        let (gen, t, before) = self.release_begin(bid, slot)?;
        if self.has(ALLOC_FLAG_BITMAP_ALLOC) {
            return self.release_bitmap(bid, t);
        }
        self.released(bid, t, gen, before, 1u32 << slot)
    }

    /// The checks of a release of slots `first` … `last` (the lowest and highest) of block
    /// `bid`, before any write: a block of the heap, of a type (not free, not corrupt) that
    /// has those slots. Returns the block's header word index, its generation and its type,
    /// read while the caller's live objects pin the block (D2). Errors name `bid` and the
    /// slot at fault.
    #[inline(always)]
    fn release_target(&self, bid: u32, first: u32, last: u32) -> R<(u32, u32, u32)> {
        if !(bid > 0 && bid < self.num_blocks()) {
            return Err(Fail::Invalid {
                code: ALLOC_ERR_FORGED_BLOCK,
                a: bid,
                b: first,
                c: self.num_blocks(),
            });
        }
        let w = self.block_word(bid);
        // Read before our atomic, while our live object pins the block's generation (D2).
        let gen = self.load(w + BLOCK_GEN_WORD);
        let t = self.load(w + BLOCK_TYPE_WORD);
        if t == U32_FREE_TYPE {
            return Err(Fail::Invalid {
                code: ALLOC_ERR_FREE_BLOCK,
                a: bid,
                b: first,
                c: 0,
            });
        }
        if t >= self.num_types() {
            return Err(Fail::Invalid {
                code: ALLOC_ERR_CORRUPT,
                a: bid,
                b: first,
                c: t,
            });
        }
        let slots = self.type_word(t, T_SLOTS);
        if last >= slots {
            // Pre-set high bits (§5.2) would make the slot look allocated: clearing one would corrupt the block.
            return Err(Fail::Invalid {
                code: ALLOC_ERR_FORGED_SLOT,
                a: bid,
                b: last,
                c: slots,
            });
        }
        Ok((w, gen, t))
    }

    /// Alg. 2 l. 1–4, the first half of a release: check the handle, read the block's
    /// generation and type while our object still pins the block, bump the slot's
    /// generation (checked heaps), clear its allocation bit. Returns (generation, type, the
    /// allocation word before the clear): what the releasing thread has learned at the
    /// point where the paper's races begin (FIRST: `before` was all ones; EMPTY: nothing
    /// but the high mask is left). Exported on its own (ffi.rs smmo_alloc_release_begin) so
    /// that the interleaving tests can pause a thread exactly there.
    pub fn release_begin(&self, bid: u32, slot: u32) -> R<(u32, u32, u32)> {
        if slot >= 32 {
            return Err(Fail::Invalid {
                code: ALLOC_ERR_FORGED_BLOCK,
                a: bid,
                b: slot,
                c: self.num_blocks(),
            });
        }
        let (w, gen, t) = self.release_target(bid, slot, slot)?;
        let mask = 1u32 << slot;
        let gen_offset = self.type_word(t, T_GEN_OFFSET);
        if gen_offset != 0 {
            // Stale-handle generations: bumped while the object still pins the block (a
            // block emptied by our AND could be retired by another thread's flush at once).
            if self.load(w + BLOCK_ALLOC_WORD) & mask == 0 {
                return Err(Fail::Invalid {
                    code: ALLOC_ERR_DELETED,
                    a: bid,
                    b: slot,
                    c: 0,
                });
            }
            self.add(w + gen_offset / 4 + slot, 1);
        }
        let before = self.and(w + BLOCK_ALLOC_WORD, !mask);
        if before & mask == 0 {
            return Err(Fail::Invalid {
                code: ALLOC_ERR_DELETED,
                a: bid,
                b: slot,
                c: 0,
            });
        }
        Ok((gen, t, before))
    }

    /// Add one to the stale-handle generation of every slot in `mask` of the block whose
    /// header is word `w` (its type's generation array at byte `gen_offset`, not 0).
    fn bump_generations(&self, w: u32, gen_offset: u32, mask: u32) {
        let mut bits = mask;
        while bits != 0 {
            self.add(w + gen_offset / 4 + bits.trailing_zeros(), 1);
            bits &= bits - 1;
        }
    }

    /// Free the objects in slots `mask` of block `bid` with one atomic: the deletions that a
    /// compiled method's lanes made of their own objects in one block (runtime/compiler/
    /// emit-js.ts, "deferred self-deletion"). The same checks as release_begin for every
    /// slot, and the end state of releasing the slots one by one: the iteration bits
    /// cleared, FIRST when the block was full before, EMPTY (with K4, invalidation and the
    /// kept stack) when nothing is left — `released` with the mask, which makes those two
    /// transitions at most once each whatever the number of slots. A slot already free is
    /// an error (ALLOC_ERR_DELETED, the lowest such slot) reported after the others are
    /// released, so the heap stays consistent. BitmapAlloc: one release per slot.
    pub fn release_many(&self, bid: u32, mask: u32) -> R<()> {
        if mask == 0 {
            return Ok(());
        }
        if self.has(ALLOC_FLAG_BITMAP_ALLOC) {
            let mut bits = mask;
            while bits != 0 {
                self.release(bid, bits.trailing_zeros())?;
                bits &= bits - 1;
            }
            return Ok(());
        }
        let (w, gen, t) = self.release_target(bid, mask.trailing_zeros(), 31 - mask.leading_zeros())?;
        let gen_offset = self.type_word(t, T_GEN_OFFSET);
        if gen_offset != 0 {
            // As release_begin: generations bumped while the objects still pin the block.
            let gone = mask & !self.load(w + BLOCK_ALLOC_WORD);
            if gone != 0 {
                return Err(Fail::Invalid {
                    code: ALLOC_ERR_DELETED,
                    a: bid,
                    b: gone.trailing_zeros(),
                    c: 0,
                });
            }
            self.bump_generations(w, gen_offset, mask);
        }
        let before = self.and(w + BLOCK_ALLOC_WORD, !mask);
        let freed = before & mask;
        if freed != 0 {
            self.released(bid, t, gen, before, freed)?;
        }
        if freed != mask {
            return Err(Fail::Invalid {
                code: ALLOC_ERR_DELETED,
                a: bid,
                b: (mask & !freed).trailing_zeros(),
                c: 0,
            });
        }
        Ok(())
    }

    /// (C3) Give back the slots `mask` of block `bid`, reserved by this thread's warp cache
    /// and never handed out: one atomic for all of them.
    fn release_mask(&self, bid: u32, mask: u32) -> R<()> {
        let w = self.block_word(bid);
        let gen = self.load(w + BLOCK_GEN_WORD);
        // Our reserved bits pin the block: its type cannot change.
        let t = self.block_type(bid)?;
        let gen_offset = self.type_word(t, T_GEN_OFFSET);
        if gen_offset != 0 {
            self.bump_generations(w, gen_offset, mask);
        }
        let before = self.and(w + BLOCK_ALLOC_WORD, !mask);
        debug_assert!(before & mask == mask);
        if before & mask != mask {
            return Err(Fail::Invalid {
                code: ALLOC_ERR_CORRUPT,
                a: bid,
                b: mask,
                c: t,
            });
        }
        self.released(bid, t, gen, before, mask)
    }

    /// The second half of a release whose first half (release_begin's reads and AND, for a
    /// type without generations) the host made itself: runtime/alloc-fast-path.ts F2, which
    /// calls this only when the AND's result asks for more than the cleared bit (the block
    /// was full, is now empty, or the slot is in the iteration bitmap). `bid` and `t` come
    /// from the host, so they are checked before any word is touched; `gen` is the
    /// generation the host read before its AND (D2), `before` the word its AND returned.
    pub fn release_end(&self, bid: u32, t: u32, gen: u32, before: u32, slot: u32) -> R<()> {
        if slot >= 32 {
            return Err(Fail::Invalid {
                code: ALLOC_ERR_CORRUPT,
                a: bid,
                b: slot,
                c: t,
            });
        }
        self.release_end_many(bid, t, gen, before, 1u32 << slot)
    }

    /// release_end for the slots `mask` of block `bid`, freed together by the host's AND
    /// (runtime/alloc-fast-path.ts F5, the one-thread half of release_many; release_end for
    /// one slot): the checks on what the host passes (an error names the mask), then
    /// `released` with the mask.
    pub fn release_end_many(&self, bid: u32, t: u32, gen: u32, before: u32, mask: u32) -> R<()> {
        if !(bid > 0 && bid < self.num_blocks()) || t >= self.num_types() || mask == 0 || before & mask != mask {
            return Err(Fail::Invalid {
                code: ALLOC_ERR_CORRUPT,
                a: bid,
                b: mask,
                c: t,
            });
        }
        self.released(bid, t, gen, before, mask)
    }

    /// Alg. 2 l. 5–13 after the slots `mask` of block `bid` (type `t`, generation `gen` read
    /// before the atomic) were freed by an atomic that returned `before`.
    fn released(&self, bid: u32, t: u32, gen: u32, before: u32, mask: u32) -> R<()> {
        let w = self.block_word(bid);
        // A deleted object is not visited by the running do-all. Iteration bits are only set
        // by the host's snapshot, which runs between do-alls, never concurrently with a
        // release: a plain check first saves the read-modify-write for objects no pass listed.
        if self.load(w + BLOCK_ITER_WORD) & mask != 0 {
            self.and(w + BLOCK_ITER_WORD, !mask);
        }
        if before == U32_ALL_ONES {
            self.to_active(bid, t)?; // FIRST: the block was full
        }
        if before & !mask == self.high_mask(t) {
            // EMPTY: this release freed the last object; we are responsible for the block.
            // (K4) The block this thread allocates in stays as it is, empty and open: no
            // invalidation, no bitmap change. flush_kept (or a later emptying) retires it.
            if self.keep() > 0 && self.hint(t) == bid {
                return Ok(());
            }
            if self.invalidate(bid, gen)? {
                let n = self.per_type(t, TS_KEPT);
                if n < self.keep() {
                    self.owned_locked(bid, t, TR_REOPEN)?;
                    self.reopen_block(bid);
                    self.settled(bid, t, TR_REOPEN)?;
                    // SAFETY: n < keep: inside this thread's kept stack of t (M2).
                    unsafe { private::store(self.kept_word(t, n), bid) };
                    self.set_per_type(t, TS_KEPT, n + 1);
                    return Ok(());
                }
                self.retire_block(bid, t)?;
            }
            if self.hint(t) == bid {
                self.set_hint(t, 0);
            }
        }
        Ok(())
    }

    /// BitmapAlloc: the block's one object is gone; the block goes straight back to `free`.
    fn release_bitmap(&self, bid: u32, t: u32) -> R<()> {
        let w = self.block_word(bid);
        self.store(w + BLOCK_ITER_WORD, 0);
        self.clear(self.allocated_bm(t), bid)?;
        self.block_set_changed();
        self.store(w + BLOCK_TYPE_WORD, U32_FREE_TYPE);
        self.store(w + BLOCK_ALLOC_WORD, U32_ALL_ONES);
        self.set(self.free_bm(), bid)
    }

    /// (K1) Open block `bid`, which this thread has invalidated (all bits set, empty), again
    /// for its type in a new generation, instead of retiring it.
    pub fn reopen_block(&self, bid: u32) {
        let w = self.block_word(bid);
        let t = self.load(w + BLOCK_TYPE_WORD);
        self.store(w + BLOCK_ITER_WORD, 0);
        self.add(w + BLOCK_GEN_WORD, 1);
        let hm = if t < self.num_types() { self.high_mask(t) } else { U32_ALL_ONES };
        self.store(w + BLOCK_ALLOC_WORD, hm);
    }

    /// Give every kept block back to `free` (K2): those still empty are retired; so is the
    /// hint block when it is empty (a block reopened while it was the hint).
    pub fn flush_kept(&self) -> R<()> {
        if self.keep() == 0 {
            return Ok(());
        }
        let own = self.own_first();
        let mut t = 0;
        while t < self.num_types() {
            let mut n = self.per_type(t, TS_KEPT);
            while n > 0 {
                // SAFETY: n - 1 < keep: inside this thread's kept stack (M2).
                let bid = unsafe { private::load(self.kept_word(t, n - 1)) };
                self.retire_if_empty(bid)?;
                n -= 1;
            }
            self.set_per_type(t, TS_KEPT, 0);
            let h = self.hint(t);
            if h != 0 && self.load(self.block_word(h) + BLOCK_ALLOC_WORD) == self.high_mask(t) {
                self.retire_if_empty(h)?;
                self.set_hint(t, 0);
            }
            if own && self.hint(t) == 0 {
                self.set_per_type(t, TS_FRESH, 1);
            }
            t += 1;
        }
        Ok(())
    }

    /// (K3) Retire every empty used block of every type (kept by any thread, or left by a
    /// lost flush race); returns how many went back to `free`. O(blocks).
    pub fn reclaim_empty(&self) -> R<u32> {
        let mut n = 0;
        let mut b = 1;
        while b < self.num_blocks() {
            let w = self.block_word(b);
            let t = self.load(w + BLOCK_TYPE_WORD);
            if t < self.num_types() && self.load(w + BLOCK_ALLOC_WORD) == self.high_mask(t) && self.retire_if_empty(b)? {
                n += 1;
            }
            b += 1;
        }
        let mut t = 0;
        while t < self.num_types() {
            self.set_per_type(t, TS_KEPT, 0);
            t += 1;
        }
        Ok(n)
    }

    /// (K2) Retire block `bid` if it is empty, through Alg. 7 with the generation read now:
    /// if anyone allocates in it (or recycles it) meanwhile, the lock is rolled back and the
    /// block stays. A block freed and re-initialised between the read and the lock has a new
    /// generation, so the lock fails (D2); a free block is all ones, so the lock fails too.
    fn retire_if_empty(&self, bid: u32) -> R<bool> {
        let gen = self.load(self.block_word(bid) + BLOCK_GEN_WORD);
        // RETRY (emptied again during our lock, Alg. 7 l. 10): a few more tries, then the
        // block stays an empty used block (valid, H4; reclaimed when the heap runs out).
        let mut attempt = 0;
        while attempt < 4 {
            let before = self.invalidate_lock(bid);
            let outcome = self.invalidate_resolve(bid, gen, before)?;
            if outcome == INVALIDATE_FAILED {
                return Ok(false);
            }
            if outcome == INVALIDATE_OWNED {
                let t = self.block_type(bid)?;
                self.retire_block(bid, t)?;
                return Ok(true);
            }
            attempt += 1;
        }
        Ok(false)
    }

    /// Alg. 2 l. 9–12: return block `bid` of type `t`, which this thread has invalidated, to
    /// the free bitmap. Its allocation bitmap stays all ones (free).
    pub fn retire_block(&self, bid: u32, t: u32) -> R<()> {
        self.owned_locked(bid, t, TR_RETIRE)?;
        let w = self.block_word(bid);
        self.store(w + BLOCK_ITER_WORD, 0);
        self.clear(self.active_bm(t), bid)?;
        self.clear(self.allocated_bm(t), bid)?;
        self.block_set_changed();
        self.store(w + BLOCK_TYPE_WORD, U32_FREE_TYPE);
        self.set(self.free_bm(), bid)?;
        self.settled(bid, t, TR_RETIRE)
    }

    /// Lock an empty block against reservations by setting all its bits (Alg. 7); true if
    /// this thread now owns the (empty) block and must free it. `gen` is the generation in
    /// which the caller emptied it (D2).
    pub fn invalidate(&self, bid: u32, gen: u32) -> R<bool> {
        let mut attempt = 1u32;
        loop {
            let before = self.invalidate_lock(bid);
            let outcome = self.invalidate_resolve(bid, gen, before)?;
            if outcome != INVALIDATE_RETRY {
                return Ok(outcome == INVALIDATE_OWNED);
            }
            self.env().pause(attempt).map_err(Self::contention(ALLOC_OP_INVALIDATE, bid))?;
            attempt += 1;
        }
    }

    /// Alg. 7 l. 1: set every bit of the allocation bitmap; returns the bitmap before.
    pub fn invalidate_lock(&self, bid: u32) -> u32 {
        self.or(self.block_word(bid) + BLOCK_ALLOC_WORD, U32_ALL_ONES)
    }

    /// Alg. 7 l. 2–13, given `before` from invalidate_lock: OWNED (this thread owns the empty
    /// block), FAILED (not ours; our bits are rolled back) or RETRY (rolled back, and empty
    /// again in our generation: lock again).
    pub fn invalidate_resolve(&self, bid: u32, gen: u32, before: u32) -> R<i32> {
        let w = self.block_word(bid);
        // All bits were set already: another thread holds or filled the block.
        if before == U32_ALL_ONES {
            return Ok(INVALIDATE_FAILED);
        }
        // We hold at least one bit, so the block cannot be freed: its type is stable.
        let t = self.block_type(bid)?;
        let same_generation = self.load(w + BLOCK_GEN_WORD) == gen;
        let hm = self.high_mask(t);
        if before == hm && same_generation {
            return Ok(INVALIDATE_OWNED);
        }
        // Not ours to delete (objects were allocated again, or the block was recycled):
        // give back exactly the bits we set.
        let before_rollback = self.and(w + BLOCK_ALLOC_WORD, before);
        // A release ran while we held all bits; it saw a "full" block and will set the
        // active bit, which is already set: clear it so that its set can complete.
        if before_rollback != U32_ALL_ONES {
            self.clear(self.active_bm(t), bid)?;
        }
        // Empty again in our generation and nobody else saw it empty: retry (Alg. 7 l. 10).
        if before_rollback & before != hm || !same_generation {
            return Ok(INVALIDATE_FAILED);
        }
        Ok(INVALIDATE_RETRY)
    }

    // ------------------------------------------------------------ defragmentation

    /// CompactGpu (ISMM 2019 §3; runtime/defrag.ts) step (2), block side: reserve up to
    /// `want` free slots (lowest first) of target block `bid`, a used block of type `t`, for
    /// objects moved into it. Stop-the-world only (no do-all runs, no other thread
    /// allocates): the block cannot change under the call, so anything but a used block of
    /// type `t` with `want` free slots is a corrupt request (ALLOC_ERR_CORRUPT). A block it
    /// fills goes ACTIVE → FULL (to_full). Returns the mask of reserved slots.
    pub fn defrag_take(&self, bid: u32, t: u32, want: u32) -> R<u32> {
        let corrupt = |c: u32| Fail::Invalid {
            code: ALLOC_ERR_CORRUPT,
            a: bid,
            b: want,
            c,
        };
        if !(bid > 0 && bid < self.num_blocks()) || t >= self.num_types() || want == 0 || want > MAX_SLOTS {
            return Err(corrupt(t));
        }
        if self.block_type(bid)? != t {
            return Err(corrupt(t));
        }
        let (got, full) = self.reserve_many(bid, want)?;
        if got.count_ones() != want {
            if got != 0 {
                self.rollback(bid, got)?;
            }
            return Err(corrupt(t));
        }
        if full {
            self.to_full(bid, t)?;
        }
        Ok(got)
    }

    /// CompactGpu step (5) for a source block: every live object of block `bid` (type `t`),
    /// exactly the slots `mask`, has been copied elsewhere. Their slots are released at once
    /// (one atomic; checked heaps bump each slot's generation first, so views of the moved
    /// objects become stale, G1), and the emptied block is invalidated in its generation
    /// (Alg. 7, D2) and retired to `free` (ACTIVE → FREE through retire_block): never kept
    /// (K1) and never left open as this thread's hint (K4), since defragmentation exists to
    /// give blocks back. A mask that is not the block's live set, or an invalidation that
    /// fails (another thread at work: not stop-the-world), is ALLOC_ERR_CORRUPT.
    pub fn defrag_vacate(&self, bid: u32, t: u32, mask: u32) -> R<()> {
        let corrupt = |c: u32| Fail::Invalid {
            code: ALLOC_ERR_CORRUPT,
            a: bid,
            b: mask,
            c,
        };
        if !(bid > 0 && bid < self.num_blocks()) || t >= self.num_types() {
            return Err(corrupt(t));
        }
        if self.block_type(bid)? != t {
            return Err(corrupt(t));
        }
        let w = self.block_word(bid);
        let hm = self.high_mask(t);
        let alloc = self.load(w + BLOCK_ALLOC_WORD);
        if alloc & !hm != mask {
            return Err(corrupt(t));
        }
        let gen = self.load(w + BLOCK_GEN_WORD);
        if mask != 0 {
            let gen_offset = self.type_word(t, T_GEN_OFFSET);
            if gen_offset != 0 {
                self.bump_generations(w, gen_offset, mask);
            }
            let before = self.and(w + BLOCK_ALLOC_WORD, !mask);
            if self.load(w + BLOCK_ITER_WORD) & mask != 0 {
                self.and(w + BLOCK_ITER_WORD, !mask);
            }
            if before == U32_ALL_ONES {
                self.to_active(bid, t)?;
            }
        }
        if !self.invalidate(bid, gen)? {
            return Err(corrupt(t));
        }
        self.retire_block(bid, t)?;
        if self.hint(t) == bid {
            self.set_hint(t, 0);
        }
        Ok(())
    }

    // ------------------------------------------------------------ per-thread state

    /// (K5) Give this thread its own first block per pass (threads > 1, keep > 0).
    pub fn set_own_first(&self, on: bool) {
        let own = on && self.keep() > 0;
        self.set_state(S_OWN_FIRST, u32::from(own));
        let mut t = 0;
        while t < self.num_types() {
            self.set_per_type(t, TS_FRESH, u32::from(own && self.hint(t) == 0));
            t += 1;
        }
    }

    /// (C1) Open a warp of `lanes` lanes.
    pub fn warp_begin(&self, lanes: u32) {
        debug_assert!(self.state(S_CACHED) == 0);
        self.set_state(S_WARP, 1);
        self.set_state(S_LANES_LEFT, lanes);
    }

    /// (C3) Close the warp: give back every cached slot.
    pub fn warp_end(&self) -> R<()> {
        self.set_state(S_WARP, 0);
        self.set_state(S_LANES_LEFT, 0);
        if self.state(S_CACHED) == 0 {
            return Ok(());
        }
        let mut t = 0;
        while t < self.num_types() {
            let mask = self.per_type(t, TS_CACHE_MASK);
            if mask != 0 {
                self.set_per_type(t, TS_CACHE_MASK, 0);
                self.set_state(S_CACHED, self.state(S_CACHED).wrapping_sub(1));
                if heap_is_atomic() {
                    // (C7) What the warp took: what it reserved less what goes back (at least one).
                    let took = self.per_type(t, TS_WANT).saturating_sub(mask.count_ones());
                    self.set_per_type(t, TS_WANT, took.max(1));
                }
                self.release_mask(self.per_type(t, TS_CACHE_BLOCK), mask)?;
            }
            t += 1;
        }
        Ok(())
    }
}
