//! What an allocating kernel needs besides the block list: fields of any object by handle,
//! creating and deleting objects through the allocator core on the calling thread's state,
//! and the two tables the host makes for it (runtime/kernels.ts, "Allocating kernels",
//! parameters `allocator`, `zero`, `ranks`).
//!
//! The executor contract (alloc/core.rs) is kept by [`for_each_warp`]: per block with lanes,
//! warp begin (S_WARP = 1, S_LANES_LEFT = lanes), before each lane the lanes left (the
//! current one included), after the block warp end: the stores and calls of the TypeScript
//! loop (ThreadContext runnerFor), so the core coalesces the same allocations into the same
//! slots and the heap after the pass is byte-identical to the TypeScript method's.
//!
//! Errors: a failed allocator call leaves its error in the state's error words (alloc/ffi.rs);
//! the kernel stops at once and returns the handle of the lane whose method failed (never 0:
//! block 0 holds no objects; a failed warp end names the block's last lane, as the
//! TypeScript loop's error does), its warp left open. The host closes the warp and throws
//! the typed error (runtime/allocator.ts `lastError`) from that object's method.
use crate::alloc::ffi::{smmo_alloc_allocate, smmo_alloc_release, smmo_alloc_warp_end};
use crate::blocks::{for_each_lane, Heap, Pass};
use crate::layout::{SLOT_BITS, S_ERROR, S_LANES_LEFT, S_WARP};
use crate::params::Table;
use core::num::NonZeroU32;

/// Status of an allocating kernel: 0, or the allocator's error code (the error is in the state).
pub type Status = Result<(), u32>;

/// The calling thread's allocator state and the zero table of each type it creates.
#[derive(Clone, Copy)]
pub struct Objects {
    st: u32,
    heap: Heap,
}

impl Objects {
    /// # Safety
    /// `st` is the calling thread's claimed allocator state (the `allocator` parameter), in
    /// the heap whose blocks `heap` describes.
    #[inline(always)]
    pub unsafe fn new(st: u32, heap: Heap) -> Objects {
        Objects { st, heap }
    }

    #[inline(always)]
    fn set_state(&self, k: u32, v: u32) {
        // SAFETY: the state is the calling thread's own (alloc/mem.rs M2): plain stores, as
        // the TypeScript executor makes them.
        unsafe { *(((self.st + k) * 4) as usize as *mut u32) = v };
    }

    /// A new object of concrete type `ty`, every field zero (`zero`: its zero table), as
    /// `create()`; or the error code.
    ///
    /// # Safety
    /// `zero` is the host's zero table of `ty`.
    #[inline(always)]
    pub unsafe fn create(&self, ty: u32, zero: Table) -> Result<u32, u32> {
        let h = smmo_alloc_allocate(self.st, ty);
        if h == 0 {
            // SAFETY: the state's error word, just written by the failed call.
            return Err(unsafe { *(((self.st + S_ERROR) * 4) as usize as *const u32) });
        }
        let base = self.heap.block_base(h >> SLOT_BITS);
        let s = (h & 31) as usize;
        let mut k = 0;
        while k < zero.count {
            // SAFETY: the table holds `count` [offset, bytes] pairs of ty's fields; the
            // element of slot s lies inside the new object's block, ours alone until linked.
            unsafe {
                let e = (zero.ptr as usize as *const u32).add(2 * k as usize);
                let off = *e as usize;
                match *e.add(1) {
                    1 => *((base + off + s) as *mut u8) = 0,
                    2 => *((base + off + 2 * s) as *mut u16) = 0,
                    4 => *((base + off + 4 * s) as *mut u32) = 0,
                    _ => *((base + off + 8 * s) as *mut u64) = 0,
                }
            }
            k += 1;
        }
        Ok(h)
    }

    /// Delete object `h`, as `destroy()`: the core frees its slot, clears its iteration bit
    /// and, in checked mode, bumps its generation.
    #[inline(always)]
    pub fn destroy(&self, h: u32) -> Status {
        match smmo_alloc_release(self.st, h >> SLOT_BITS, h & 31) {
            0 => Ok(()),
            code => Err(code),
        }
    }
}

/// Runs `lane(h)` for every lane of the blocks at list positions [from, to), each block a
/// warp of the executor contract (module comment); stops at the first error and returns
/// the failing lane's handle (module comment), else 0.
///
/// # Safety
/// The kernel contract of the crate root for (list, from, to) of `pass`; `objects` is the
/// calling thread's.
#[inline(always)]
pub unsafe fn for_each_warp(pass: &Pass, from: u32, to: u32, objects: &Objects, mut lane: impl FnMut(u32) -> Status) -> u32 {
    for i in from..to {
        // SAFETY: from <= i < to, inside the list range.
        let b = unsafe { pass.block(i) };
        let bits = b.iter_bits();
        if bits == 0 {
            continue;
        }
        let hbase = b.index << SLOT_BITS;
        let mut left = bits.count_ones();
        objects.set_state(S_WARP, 1);
        let mut status: Status = Ok(());
        let mut last = 0;
        for_each_lane(bits, |s| {
            if status.is_err() {
                return;
            }
            objects.set_state(S_LANES_LEFT, left);
            left = left.wrapping_sub(1);
            last = hbase | s;
            status = lane(last);
        });
        if status.is_err() || smmo_alloc_warp_end(objects.st) != 0 {
            return last;
        }
    }
    0
}

/// The `ranks` table: the handle of the r-th smallest live object of its class.
#[derive(Clone, Copy)]
pub struct Ranks {
    list: *const u32,
    /// Non-full blocks: `breaks` entries of [list position, first rank, allocation mask].
    breaks: *const u32,
    n: u32,
    slots: NonZeroU32,
}

impl Ranks {
    /// # Safety
    /// `t` is the host's ranks table for the running pass, `pass` the pass's block list.
    #[inline(always)]
    pub unsafe fn new(t: Table, list_off: u32) -> Ranks {
        let w = t.ptr as usize as *const u32;
        // SAFETY: the table starts with [first index, blocks, slots]; a concrete type has
        // at least one slot per block (the `max` only keeps the division free of a panic path).
        unsafe {
            Ranks {
                list: (list_off as usize as *const u32).add(*w as usize),
                breaks: w.add(3),
                n: t.count,
                slots: NonZeroU32::new_unchecked((*w.add(2)).max(1)),
            }
        }
    }

    /// Handle of the object of rank `r` (0 ≤ r < the number of objects).
    ///
    /// # Safety
    /// `r` is a rank of an object of the class.
    #[inline(always)]
    pub unsafe fn handle(&self, r: u32) -> u32 {
        let (mut q0, mut r0) = (0u32, 0u32);
        let mut k = 0;
        while k < self.n {
            // SAFETY: entry k < n of the table.
            let (q, first, mask) = unsafe {
                let e = self.breaks.add(3 * k as usize);
                (*e, *e.add(1), *e.add(2))
            };
            if r < first {
                break; // r lies in the full blocks before block q
            }
            let end = first + mask.count_ones();
            if r < end {
                // The (r − first)-th set bit of the mask.
                let mut m = mask;
                let mut j = r - first;
                while j > 0 {
                    m &= m.wrapping_sub(1);
                    j -= 1;
                }
                // SAFETY: q < the class's block count.
                return (unsafe { *self.list.add(q as usize) } << SLOT_BITS) | m.trailing_zeros();
            }
            q0 = q + 1;
            r0 = end;
            k += 1;
        }
        let d = r - r0;
        // SAFETY: blocks between the breaks are full: rank r is in block q0 + d / slots.
        (unsafe { *self.list.add((q0 + d / self.slots) as usize) } << SLOT_BITS) | (d % self.slots)
    }
}
