//! Memory operations on the shared heap, by absolute 32-bit word index (byte address / 4).
//!
//! Invariants:
//!  (M1) Every access of a word that another thread may touch at the same time (block
//!       headers, bitmap containers) goes through a [`Mem`] implementation, so the memory
//!       order of each access is chosen in one place. [`Atomic`] is what multi-threaded
//!       runtimes use: sequentially consistent atomics, exactly where the TypeScript
//!       allocator used `Atomics` (the order the paper's correctness argument, §5, assumes for
//!       CUDA atomics plus its one thread fence in `initialize_block`). [`Plain`] is for
//!       runtimes with one thread: nothing runs concurrently, so plain loads and stores have
//!       the same effect and the read-modify-writes need no lock prefix or `atomic.rmw`.
//!  (M2) A thread's allocator state (its hints, kept stacks, warp cache; `core.rs`) is
//!       private to that thread: it is read and written with plain accesses ([`private`]),
//!       whatever the runtime's thread count.
//!  (M3) No `static` holds data: the module's static memory lies in the one linear memory
//!       that every thread's instance shares (runtime/wasm.ts W1), so a static would be
//!       shared by all threads.
use core::sync::atomic::{AtomicU32, Ordering};

/// How the allocator reads and writes shared words. Implemented twice (M1); the allocator
/// is generic over it and monomorphised for both.
pub trait Mem {
    /// # Safety
    /// `w` is the index of a 4-byte aligned word inside the memory.
    unsafe fn load(w: u32) -> u32;
    /// # Safety
    /// As [`Mem::load`].
    unsafe fn store(w: u32, v: u32);
    /// Bitwise OR; returns the word before.
    /// # Safety
    /// As [`Mem::load`].
    unsafe fn or(w: u32, v: u32) -> u32;
    /// Bitwise AND; returns the word before.
    /// # Safety
    /// As [`Mem::load`].
    unsafe fn and(w: u32, v: u32) -> u32;
    /// Wrapping add; returns the word before.
    /// # Safety
    /// As [`Mem::load`].
    unsafe fn add(w: u32, v: u32) -> u32;
}

#[inline(always)]
fn ptr(w: u32) -> *mut u32 {
    (w as usize * 4) as *mut u32
}

/// Sequentially consistent atomics (multi-threaded runtimes).
pub struct Atomic;

/// The word `w` as an atomic.
///
/// # Safety
/// `w` is the index of a 4-byte aligned word inside the memory, and every access of it that
/// may run at the same time (on any thread) is atomic too (M1).
#[inline(always)]
unsafe fn atomic<'a>(w: u32) -> &'a AtomicU32 {
    // SAFETY: the caller guarantees an aligned word inside the memory; the memory outlives
    // every call, and every concurrent access of this word is atomic as well (M1).
    unsafe { &*(ptr(w) as *const AtomicU32) }
}

impl Mem for Atomic {
    #[inline(always)]
    unsafe fn load(w: u32) -> u32 {
        // SAFETY: an aligned word inside the memory (Mem's contract), every concurrent
        // access of which goes through Atomic as well (M1): `atomic`'s contract.
        unsafe { atomic(w) }.load(Ordering::SeqCst)
    }
    #[inline(always)]
    unsafe fn store(w: u32, v: u32) {
        // SAFETY: as in `load`: Mem's contract, and atomics on every thread (M1).
        unsafe { atomic(w) }.store(v, Ordering::SeqCst)
    }
    #[inline(always)]
    unsafe fn or(w: u32, v: u32) -> u32 {
        // SAFETY: as in `load`: Mem's contract, and atomics on every thread (M1).
        unsafe { atomic(w) }.fetch_or(v, Ordering::SeqCst)
    }
    #[inline(always)]
    unsafe fn and(w: u32, v: u32) -> u32 {
        // SAFETY: as in `load`: Mem's contract, and atomics on every thread (M1).
        unsafe { atomic(w) }.fetch_and(v, Ordering::SeqCst)
    }
    #[inline(always)]
    unsafe fn add(w: u32, v: u32) -> u32 {
        // SAFETY: as in `load`: Mem's contract, and atomics on every thread (M1).
        unsafe { atomic(w) }.fetch_add(v, Ordering::SeqCst)
    }
}

/// Plain loads and stores (runtimes with one thread, M1).
pub struct Plain;

impl Mem for Plain {
    #[inline(always)]
    unsafe fn load(w: u32) -> u32 {
        // SAFETY: an aligned word inside the memory (Mem's contract); Plain is used only
        // where no other thread runs (M1), so a plain access races with nothing.
        unsafe { ptr(w).read() }
    }
    #[inline(always)]
    unsafe fn store(w: u32, v: u32) {
        // SAFETY: as in `load`: Mem's contract, and no other thread runs (M1).
        unsafe { ptr(w).write(v) }
    }
    #[inline(always)]
    unsafe fn or(w: u32, v: u32) -> u32 {
        // SAFETY: as in `load`: Mem's contract, and no other thread runs (M1).
        unsafe {
            let p = ptr(w);
            let before = p.read();
            p.write(before | v);
            before
        }
    }
    #[inline(always)]
    unsafe fn and(w: u32, v: u32) -> u32 {
        // SAFETY: as in `load`: Mem's contract, and no other thread runs (M1).
        unsafe {
            let p = ptr(w);
            let before = p.read();
            p.write(before & v);
            before
        }
    }
    #[inline(always)]
    unsafe fn add(w: u32, v: u32) -> u32 {
        // SAFETY: as in `load`: Mem's contract, and no other thread runs (M1).
        unsafe {
            let p = ptr(w);
            let before = p.read();
            p.write(before.wrapping_add(v));
            before
        }
    }
}

/// Plain access to a thread-private word (M2) or to a word nobody writes while the
/// allocator runs (the heap header and the type table, written once by the host).
pub mod private {
    /// # Safety
    /// `w` is an aligned word inside the memory that no other thread writes meanwhile.
    #[inline(always)]
    pub unsafe fn load(w: u32) -> u32 {
        // SAFETY: an aligned word inside the memory that nobody writes meanwhile (caller):
        // a plain read races with nothing.
        unsafe { super::ptr(w).read() }
    }
    /// # Safety
    /// `w` is an aligned word inside the memory that no other thread reads or writes meanwhile.
    #[inline(always)]
    pub unsafe fn store(w: u32, v: u32) {
        // SAFETY: an aligned word inside the memory that nobody else reads or writes
        // meanwhile (caller): a plain write races with nothing.
        unsafe { super::ptr(w).write(v) }
    }
}
