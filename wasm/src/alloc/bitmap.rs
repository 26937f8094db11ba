//! Lock-free hierarchical bitmap (paper §4.1, Algorithms 3–5; correctness §5.1): every
//! operation that changes or searches a bitmap. runtime/bitmap.ts keeps only the read-only
//! helpers the host needs between passes (get, indices, count, validate).
//!
//! Structure: level 0 holds one bit per position in 32-bit containers; level l+1 holds one
//! bit per container of level l, up to a top level of one container. The levels of a
//! bitmap lie one after another from its first word (runtime/bitmap.ts bitmapLevelWords).
//!
//!   level 2:  [c]                      bit i set ⇔ container i of level 1 ≠ 0
//!   level 1:  [c c c … ]               bit j set ⇔ container j of level 0 ≠ 0
//!   level 0:  [c c c c c c c c … ]     the bits themselves, ⌈bits/32⌉ containers
//!
//! Invariants:
//!  (B1) level-0 bits at positions ≥ `bits`, and upper-level bits naming containers that do
//!       not exist, are always 0 (callers pass positions < bits: `debug_assert!`).
//!  (B2) container consistency, b(l+1, i) = (C(l, i) ≠ 0), holds whenever no operation is in
//!       flight (upper levels are *eventually* consistent). The thread whose atomic turned a
//!       container from 0 to non-0 (SET-FIRST) sets the upper bit; the one whose atomic
//!       turned it to 0 (CLEAR-LAST) clears it. Upper-level set/clear retry until they change
//!       the bit, so every linearisation alternates set and clear (§5.1).
//!  (B3) try_find_set may fail while bits are set (a transient inconsistency); callers that
//!       must not fail spuriously use find_and_clear, which falls back to an exact scan.
//!  (B4) Every retry loop is bounded by `Env` (bits.rs): it gives up with `Stuck`.
//!  (B5) find_set, try_find_set's descent with backtracking, finds a set bit whenever one is
//!       reachable through set upper bits within MAX_DESCENT_LOADS container loads (on a
//!       consistent hierarchy: whenever any bit is set, with the result of try_find_set).
//!       It misses only bits whose upper bits are not written yet (a SET-FIRST in flight);
//!       scan_find_set, which reads every container of level 0, sees those too.
use super::bits::{ffs_from, Env};
use super::mem::Mem;
use crate::layout::{ALLOC_OP_BITMAP_CLEAR, ALLOC_OP_BITMAP_SET, ALLOC_OP_FIND_AND_CLEAR, MAX_BITMAP_LEVELS};

const LEVELS: usize = MAX_BITMAP_LEVELS as usize;

/// Bound on the container loads of one find_set (B5): the path down (≤ LEVELS loads) plus
/// that many stale upper bits, far more than the operations that can be in flight at once.
pub const MAX_DESCENT_LOADS: u32 = 256;

/// Where the levels of a bitmap of some number of bits lie, relative to its first word.
/// Every bitmap of the heap has `numBlocks` bits, so the heap header holds this once.
#[derive(Clone, Copy)]
pub struct Levels {
    /// Index of the top level (levels - 1).
    pub top: u32,
    /// Word offset of each level from the bitmap's first word.
    pub off: [u32; LEVELS],
    /// Containers of level 0.
    pub words0: u32,
}

impl Levels {
    /// The levels of a bitmap of `bits` positions (runtime/bitmap.ts bitmapLevelWords).
    pub fn for_bits(bits: u32) -> Levels {
        let mut off = [0u32; LEVELS];
        let mut n = if bits == 0 { 1 } else { bits };
        let mut at = 0;
        let mut level = 0usize;
        let mut words0 = 0;
        loop {
            n = (n + 31) / 32;
            if level < LEVELS {
                off[level] = at;
            }
            if level == 0 {
                words0 = n;
            }
            at += n;
            if n <= 1 {
                break;
            }
            level += 1;
        }
        debug_assert!(level < LEVELS);
        Levels {
            top: level as u32,
            off,
            words0,
        }
    }

    #[inline(always)]
    fn offset(&self, level: u32) -> u32 {
        debug_assert!(level <= self.top && (level as usize) < LEVELS);
        // SAFETY: level ≤ top < MAX_BITMAP_LEVELS by construction (for_bits, or the header
        // written by the host from the same rule), so the index is in bounds.
        unsafe { *self.off.get_unchecked(level as usize) }
    }
}

/// A bitmap operation gave up after its retry budget (B4): which one, at which level and position.
#[derive(Clone, Copy)]
pub struct Stuck {
    pub op: u32,
    pub level: u32,
    pub pos: u32,
}

/// One hierarchical bitmap: its first word (absolute word index) and its levels.
#[derive(Clone, Copy)]
pub struct Bitmap {
    pub base: u32,
    pub bits: u32,
    pub lv: Levels,
}

impl Bitmap {
    #[inline(always)]
    fn word(&self, level: u32, container: u32) -> u32 {
        self.base + self.lv.offset(level) + container
    }

    /// Value of the bit at `pos`.
    ///
    /// # Safety
    /// The bitmap lies inside the memory (true of every bitmap the heap header names).
    #[inline]
    pub unsafe fn get<M: Mem>(&self, pos: u32) -> bool {
        debug_assert!(pos < self.bits);
        // SAFETY: pos < bits, so word(0, pos / 32) is a level-0 container of this bitmap,
        // which lies inside the memory (caller); M makes the access atomic where other
        // threads may touch the word (mem.rs M1).
        unsafe { M::load(self.word(0, pos >> 5)) & (1 << (pos & 31)) != 0 }
    }

    /// Set the bit, changing it from 0 to 1: retries (bounded) while it is already 1 (§5.1).
    ///
    /// # Safety
    /// As [`Bitmap::get`].
    #[inline]
    pub unsafe fn set<M: Mem>(&self, env: &Env, pos: u32) -> Result<(), Stuck> {
        debug_assert!(pos < self.bits);
        // SAFETY: the bitmap lies inside the memory (caller) and pos < bits: set_at's
        // contract at level 0.
        unsafe { self.set_at::<M>(env, 0, pos) }
    }

    /// Set the bit if it is 0; returns whether this call changed it.
    ///
    /// # Safety
    /// As [`Bitmap::get`].
    pub unsafe fn try_set<M: Mem>(&self, env: &Env, pos: u32) -> Result<bool, Stuck> {
        debug_assert!(pos < self.bits);
        let mask = 1u32 << (pos & 31);
        // SAFETY: as in `get`: a level-0 container of this bitmap (pos < bits), inside the
        // memory; M is atomic where others may touch it (M1).
        let prev = unsafe { M::or(self.word(0, pos >> 5), mask) };
        if prev & mask != 0 {
            return Ok(false); // someone else's bit: nothing changed
        }
        if prev == 0 && self.lv.top > 0 {
            // SET-FIRST: our duty (B2).
            // SAFETY: pos / 32 < containers of level 0 = bits of level 1 (B1): set_at's contract.
            unsafe { self.set_at::<M>(env, 1, pos >> 5) }?;
        }
        Ok(true)
    }

    /// Clear the bit, changing it from 1 to 0: retries (bounded) while it is already 0 (Alg. 3).
    ///
    /// # Safety
    /// As [`Bitmap::get`].
    #[inline]
    pub unsafe fn clear<M: Mem>(&self, env: &Env, pos: u32) -> Result<(), Stuck> {
        debug_assert!(pos < self.bits);
        // SAFETY: the bitmap lies inside the memory (caller) and pos < bits: clear_at's
        // contract at level 0.
        unsafe { self.clear_at::<M>(env, 0, pos) }
    }

    /// Clear the bit if it is 1; returns whether this call changed it.
    ///
    /// # Safety
    /// As [`Bitmap::get`].
    #[inline]
    pub unsafe fn try_clear<M: Mem>(&self, env: &Env, pos: u32) -> Result<bool, Stuck> {
        debug_assert!(pos < self.bits);
        // SAFETY: the bitmap lies inside the memory (caller) and pos < bits: try_clear_at's
        // contract at level 0.
        unsafe { self.try_clear_at::<M>(env, 0, pos) }
    }

    /// Set the bit at `pos` of `level` (then, SET-FIRST, the one above).
    ///
    /// # Safety
    /// As [`Bitmap::get`], and `pos` names a bit of `level` (level ≤ top; B1).
    unsafe fn set_at<M: Mem>(&self, env: &Env, level: u32, pos: u32) -> Result<(), Stuck> {
        let idx = self.word(level, pos >> 5);
        let mask = 1u32 << (pos & 31);
        let mut attempt = 1;
        loop {
            // SAFETY: idx is a container of `level` (pos names a bit of it: the contract);
            // the word is inside the memory, and M is atomic where others may touch it (M1).
            let prev = unsafe { M::or(idx, mask) };
            if prev & mask == 0 {
                // We changed the bit. If the container was empty, we own the upper bit.
                if prev == 0 && level < self.lv.top {
                    // SAFETY: pos / 32 is a container of `level`, so a bit of level + 1 ≤ top (B1).
                    return unsafe { self.set_at::<M>(env, level + 1, pos >> 5) };
                }
                return Ok(());
            }
            // Already set: a concurrent clear has not happened yet; wait for it (Alg. 3 l. 6).
            env.pause(attempt).map_err(|_| Stuck {
                op: ALLOC_OP_BITMAP_SET,
                level,
                pos,
            })?;
            attempt += 1;
        }
    }

    /// Clear the bit at `pos` of `level`, retrying (bounded) while it is already 0.
    ///
    /// # Safety
    /// As [`Bitmap::set_at`].
    unsafe fn clear_at<M: Mem>(&self, env: &Env, level: u32, pos: u32) -> Result<(), Stuck> {
        let mut attempt = 1;
        loop {
            // SAFETY: the same bitmap, level and position: try_clear_at's contract is ours.
            if unsafe { self.try_clear_at::<M>(env, level, pos) }? {
                return Ok(());
            }
            // Already clear: a concurrent set has not happened yet; wait for it.
            env.pause(attempt).map_err(|_| Stuck {
                op: ALLOC_OP_BITMAP_CLEAR,
                level,
                pos,
            })?;
            attempt += 1;
        }
    }

    /// Clear the bit at `pos` of `level` if it is 1 (then, CLEAR-LAST, the one above);
    /// returns whether this call changed it.
    ///
    /// # Safety
    /// As [`Bitmap::set_at`].
    unsafe fn try_clear_at<M: Mem>(&self, env: &Env, level: u32, pos: u32) -> Result<bool, Stuck> {
        let mask = 1u32 << (pos & 31);
        // SAFETY: pos names a bit of `level` (the contract), so its container is a word of
        // this bitmap inside the memory; M is atomic where others may touch it (M1).
        let prev = unsafe { M::and(self.word(level, pos >> 5), !mask) };
        if prev & mask == 0 {
            return Ok(false);
        }
        // CLEAR-LAST: this atomic emptied the container, so we clear the upper bit (B2).
        if prev == mask && level < self.lv.top {
            // SAFETY: pos / 32 is a container of `level`, so a bit of level + 1 ≤ top (B1).
            unsafe { self.clear_at::<M>(env, level + 1, pos >> 5) }?;
        }
        Ok(true)
    }

    /// Position of some set bit, or -1 (Alg. 4). Top-down; at each level the search starts
    /// at a bit chosen by `seed` (bitmap rotation, §4.2; bit 0 without rotation) so that
    /// threads with different seeds tend to pick different bits. May fail while bits are set (B3).
    ///
    /// # Safety
    /// As [`Bitmap::get`].
    pub unsafe fn try_find_set<M: Mem>(&self, env: &Env, seed: u32) -> i32 {
        let mut pos = 0u32;
        let mut level = self.lv.top as i32;
        while level >= 0 {
            let l = level as u32;
            // SAFETY: the bitmap lies inside the memory (caller); `pos` names a container of
            // level l (it came from level l+1, whose bits name existing containers only, B1).
            let word = unsafe { M::load(self.word(l, pos)) };
            let bit = ffs_from(word, env.start((seed >> (l * 5)).wrapping_add(l)));
            if bit < 0 {
                return -1;
            }
            pos = pos * 32 + bit as u32;
            level -= 1;
        }
        pos as i32
    }

    /// Position of some set bit reachable from the top through set upper bits, or -1: the
    /// descent of `try_find_set` with backtracking (B5). At each level the bits of a
    /// container are tried in the rotated order of `try_find_set` (the same `seed`), so on
    /// a consistent hierarchy the first path succeeds and the result equals
    /// `try_find_set`'s; an upper bit whose container is empty (a CLEAR-LAST in flight)
    /// costs one load and the search goes on with the next bit. At most
    /// `MAX_DESCENT_LOADS` container loads, so the cost is bounded by that, not by the
    /// size of the heap (a scan of level 0 reads every container).
    ///
    /// # Safety
    /// As [`Bitmap::get`].
    pub unsafe fn find_set<M: Mem>(&self, env: &Env, seed: u32) -> i32 {
        let top = self.lv.top;
        // Per level: the container being searched and its bits not tried yet.
        let mut at = [0u32; LEVELS];
        let mut left = [0u32; LEVELS];
        let mut level = top;
        // SAFETY: the bitmap lies inside the memory (caller); the top level has one
        // container; top < LEVELS (Levels::for_bits).
        unsafe { *left.get_unchecked_mut(top as usize) = M::load(self.word(top, 0)) };
        let mut loads = 1u32;
        loop {
            let l = level as usize;
            // SAFETY: level ≤ top < LEVELS (Levels::for_bits), so l indexes `left`.
            let bits = unsafe { *left.get_unchecked(l) };
            if bits == 0 {
                if level == top {
                    return -1;
                }
                level += 1; // every bit of this container tried: back to the parent's next bit
                continue;
            }
            let bit = ffs_from(bits, env.start((seed >> (level * 5)).wrapping_add(level))) as u32;
            // SAFETY: l < LEVELS, as above.
            unsafe { *left.get_unchecked_mut(l) = bits & !(1u32 << bit) };
            // SAFETY: l < LEVELS, as above.
            let pos = unsafe { *at.get_unchecked(l) } * 32 + bit;
            if level == 0 {
                return pos as i32;
            }
            if loads >= MAX_DESCENT_LOADS {
                return -1;
            }
            level -= 1;
            loads += 1;
            // SAFETY: pos names a container of `level` (it came from a bit of level + 1, B1),
            // inside the memory (caller).
            unsafe {
                *at.get_unchecked_mut(level as usize) = pos;
                *left.get_unchecked_mut(level as usize) = M::load(self.word(level, pos));
            }
        }
    }

    /// Whether the top container has a bit set: with no operation in flight (B2), whether
    /// any bit is set. One load.
    ///
    /// # Safety
    /// As [`Bitmap::get`].
    #[inline]
    pub unsafe fn any_at_top<M: Mem>(&self) -> bool {
        // SAFETY: the bitmap lies inside the memory (caller); the top level has one container.
        unsafe { M::load(self.word(self.lv.top, 0)) != 0 }
    }

    /// Position of some set bit by a scan of level 0 (exact when nothing is in flight), or -1.
    /// The scan starts at container seed mod n (container 0 without rotation).
    ///
    /// # Safety
    /// As [`Bitmap::get`].
    pub unsafe fn scan_find_set<M: Mem>(&self, env: &Env, seed: u32) -> i32 {
        let n = self.lv.words0;
        if n == 0 {
            return -1;
        }
        let start = env.start(seed) % n;
        let mut k = 0;
        while k < n {
            let c = if start + k >= n { start + k - n } else { start + k };
            // SAFETY: the bitmap lies inside the memory (caller); c < n = containers of level 0.
            let word = unsafe { M::load(self.word(0, c)) };
            if word != 0 {
                return (c * 32) as i32 + ffs_from(word, env.start(seed));
            }
            k += 1;
        }
        -1
    }

    /// Find a set bit, clear it atomically and return its position; -1 only if a full scan
    /// found no set bit ("clear()" of §4.1).
    ///
    /// # Safety
    /// As [`Bitmap::get`].
    pub unsafe fn find_and_clear<M: Mem>(&self, env: &Env, seed: u32) -> Result<i32, Stuck> {
        let mut attempt = 1u32;
        loop {
            let s = seed.wrapping_add(attempt);
            // SAFETY: the bitmap lies inside the memory (caller).
            let mut pos = unsafe { self.try_find_set::<M>(env, s) };
            // The hierarchy may be transiently inconsistent (B3): look past stale upper bits
            // (B5), then confirm "empty" by a scan.
            if pos < 0 {
                // SAFETY: the bitmap lies inside the memory (caller).
                pos = unsafe { self.find_set::<M>(env, s) };
            }
            if pos < 0 {
                // SAFETY: the bitmap lies inside the memory (caller).
                pos = unsafe { self.scan_find_set::<M>(env, s) };
            }
            if pos < 0 {
                return Ok(-1);
            }
            // SAFETY: the bitmap lies inside the memory (caller); pos < bits (B1).
            if unsafe { self.try_clear::<M>(env, pos as u32) }? {
                return Ok(pos);
            }
            // Another thread cleared that bit first: pick again.
            env.pause(attempt).map_err(|_| Stuck {
                op: ALLOC_OP_FIND_AND_CLEAR,
                level: 0,
                pos: 0,
            })?;
            attempt += 1;
        }
    }

    /// Set every position 0 … bits-1, levels built consistently. Formatting only: no other
    /// operation may run on the bitmap meanwhile.
    ///
    /// # Safety
    /// As [`Bitmap::get`], and nothing else accesses the bitmap during the call.
    pub unsafe fn fill<M: Mem>(&self) {
        // SAFETY: the bitmap lies inside the memory (caller), and nothing else accesses it
        // (the contract).
        unsafe { self.reset::<M>() };
        let mut n = self.bits;
        let mut level = 0;
        while level <= self.lv.top {
            let full = n >> 5;
            let mut c = 0;
            while c < full {
                // SAFETY: the bitmap lies inside the memory (caller); c < containers of this level.
                unsafe { M::store(self.word(level, c), u32::MAX) };
                c += 1;
            }
            if n & 31 != 0 {
                // SAFETY: as above; the last, partial container.
                unsafe { M::store(self.word(level, full), (1u32 << (n & 31)) - 1) };
            }
            n = (n + 31) / 32;
            level += 1;
        }
    }

    /// Clear every word of every level. Formatting only.
    ///
    /// # Safety
    /// As [`Bitmap::fill`].
    pub unsafe fn reset<M: Mem>(&self) {
        let mut n = if self.bits == 0 { 1 } else { self.bits };
        let mut level = 0;
        while level <= self.lv.top {
            n = (n + 31) / 32;
            let mut c = 0;
            while c < n {
                // SAFETY: the bitmap lies inside the memory (caller); c < containers of this level.
                unsafe { M::store(self.word(level, c), 0) };
                c += 1;
            }
            level += 1;
        }
    }
}
