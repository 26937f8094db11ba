//! Reading the SOA heap from a kernel: the block list of the running do-all, block headers,
//! the SOA arrays of fields, and lane groups of an iteration bitmap.
//!
//! The heap layout is runtime/layout.ts (constants in `layout.rs`, generated from it):
//! block `b` starts at `blocks_off + b * block_bytes`; word `BLOCK_ITER_WORD` of its header is
//! the iteration bitmap (bit s set = slot s takes part in the running do-all, paper §3
//! "Parallel Object Enumeration"); a field's SOA array starts at a byte offset (passed by
//! the host, computed from the concrete type's TypeLayout) and is 16-byte aligned, so lanes
//! 4k … 4k+3 are one v128 at `array + 16k`. Arrays are padded to a multiple of 4 lanes, so
//! a group load never leaves the array even in a type with fewer than 32 slots.
use crate::layout::{BLOCK_ITER_WORD, BLOCK_TYPE_WORD, SLOT_BITS};
use core::sync::atomic::{AtomicU32, Ordering};

/// Objects by handle (`block index · 32 + slot`, runtime/layout.ts): the address of a field
/// element of an object, the type of its block. It computes addresses only; the caller
/// reads or writes them (in an `unsafe` block, under its kernel's contract).
#[derive(Clone, Copy)]
pub struct Heap {
    blocks: usize,
    block_bytes: usize,
}

impl Heap {
    /// The heap whose block 0 is at byte `blocks_off`, blocks of `block_bytes` bytes.
    #[inline(always)]
    pub fn new(blocks_off: u32, block_bytes: u32) -> Heap {
        Heap {
            blocks: blocks_off as usize,
            block_bytes: block_bytes as usize,
        }
    }

    /// Byte address of block `index`.
    #[inline(always)]
    pub fn block_base(&self, index: u32) -> usize {
        self.blocks + index as usize * self.block_bytes
    }

    /// The element of object `h` in the SOA array of `T` at byte offset `off` of its block.
    #[inline(always)]
    pub fn at<T>(&self, h: u32, off: u32) -> *mut T {
        let slot = (h & ((1 << SLOT_BITS) - 1)) as usize;
        (self.block_base(h >> SLOT_BITS) + off as usize + core::mem::size_of::<T>() * slot) as *mut T
    }

    /// The u32 (or ref) element of object `h` in the SOA array at block offset `off`.
    #[inline(always)]
    pub fn u32_at(&self, h: u32, off: u32) -> *mut u32 {
        self.at(h, off)
    }

    /// The u8 (or bool) element of object `h` in the SOA array at block offset `off`.
    #[inline(always)]
    pub fn u8_at(&self, h: u32, off: u32) -> *mut u8 {
        self.at(h, off)
    }

    /// The f32 element of object `h` in the SOA array at block offset `off`.
    #[inline(always)]
    pub fn f32_at(&self, h: u32, off: u32) -> *mut f32 {
        self.at(h, off)
    }

    /// The concrete type id of the block holding `h` (a plain read).
    ///
    /// # Safety
    /// `h` is a handle of a live object of this heap, and no thread allocates or frees its
    /// block meanwhile (the type word is written only then).
    #[inline(always)]
    pub unsafe fn type_of(&self, h: u32) -> u32 {
        // SAFETY: the header of a block of the heap is inside the memory, its type word
        // 4-byte aligned, and not written meanwhile (caller).
        unsafe { *((self.block_base(h >> SLOT_BITS) + 4 * BLOCK_TYPE_WORD as usize) as *const u32) }
    }
}

/// The block list and block geometry a kernel call works on (the fixed kernel arguments).
#[derive(Clone, Copy)]
pub struct Pass {
    list: *const u32,
    heap: Heap,
}

/// One block, as the kernel sees it.
#[derive(Clone, Copy)]
pub struct Block {
    pub index: u32,
    base: usize,
}

impl Pass {
    /// # Safety
    /// `list_off` is the byte offset of the block list (u32 entries), `blocks_off` of block 0,
    /// both inside the memory; every list index the kernel reads names a block of the heap.
    #[inline(always)]
    pub unsafe fn new(list_off: u32, blocks_off: u32, block_bytes: u32) -> Pass {
        Pass {
            list: list_off as usize as *const u32,
            heap: Heap::new(blocks_off, block_bytes),
        }
    }

    /// The heap's objects by handle.
    #[inline(always)]
    pub fn heap(&self) -> Heap {
        self.heap
    }

    /// The block at position `i` of the block list.
    ///
    /// # Safety
    /// `i` is inside the list range the host passed.
    #[inline(always)]
    pub unsafe fn block(&self, i: u32) -> Block {
        // SAFETY: the list is written before the pass starts and not changed during it
        // (ThreadContext.snapshot); `i` is in range per the caller.
        let index = unsafe { *self.list.add(i as usize) };
        Block {
            index,
            base: self.heap.block_base(index),
        }
    }
}

impl Block {
    /// The iteration bitmap. Atomic (SeqCst) like the TypeScript executor's `Atomics.load`:
    /// a method running on another thread may clear bits by deleting objects.
    #[inline(always)]
    pub fn iter_bits(&self) -> u32 {
        // SAFETY: the header word is inside the block, 4-byte aligned, and only ever
        // accessed atomically by the runtime.
        unsafe { &*((self.base + 4 * BLOCK_ITER_WORD as usize) as *const AtomicU32) }.load(Ordering::SeqCst)
    }

    /// The concrete type id of the block (a plain read of its header's type word).
    ///
    /// # Safety
    /// No thread allocates or frees this block meanwhile (the type word is written only then).
    #[inline(always)]
    pub unsafe fn type_id(&self) -> u32 {
        // SAFETY: the header word is inside the block (Pass::block's contract), 4-byte
        // aligned, and not written meanwhile (caller).
        unsafe { *((self.base + 4 * BLOCK_TYPE_WORD as usize) as *const u32) }
    }

    /// The SOA array of the field at byte offset `off` within the block, as elements of `T`
    /// (f32, u32 for refs and u32 fields, u8 for bools).
    #[inline(always)]
    pub fn array<T>(&self, off: u32) -> *mut T {
        (self.base + off as usize) as *mut T
    }

    /// The SOA array of the f32 field at byte offset `off` within the block.
    #[inline(always)]
    pub fn f32s(&self, off: u32) -> *mut f32 {
        self.array(off)
    }
}

/// Calls `f(k, nibble)` for each group of four lanes 4k … 4k+3 with at least one bit set in
/// `bits`; bit i of `nibble` is lane 4k+i.
#[inline(always)]
pub fn for_each_group(bits: u32, mut f: impl FnMut(usize, u32)) {
    let mut rest = bits;
    while rest != 0 {
        let k = rest.trailing_zeros() >> 2;
        let shift = k << 2;
        f(k as usize, (rest >> shift) & 0xf);
        rest &= !(0xf_u32 << shift);
    }
}

/// Calls `f(s)` for each set bit `s` of `bits`, lowest first (the TypeScript executor's order).
#[inline(always)]
pub fn for_each_lane(bits: u32, mut f: impl FnMut(u32)) {
    let mut rest = bits;
    while rest != 0 {
        f(rest.trailing_zeros());
        rest &= rest.wrapping_sub(1);
    }
}

/// A `deviceDo` source: the blocks of one concrete type in the pass's block list, and the
/// byte offsets of the fields the kernel reads there. The host writes an array of these
/// (u32 words) into the calling thread's scratch area; `N` is the number of field offsets.
#[repr(C)]
pub struct Source<const N: usize> {
    pub start: u32,
    pub count: u32,
    pub fields: [u32; N],
}

/// The `deviceDo` sources at `ptr` (`n` of them).
///
/// # Safety
/// `ptr` points to `n` sources of this shape, written by the host before the call.
#[inline(always)]
pub unsafe fn sources<'a, const N: usize>(ptr: u32, n: u32) -> &'a [Source<N>] {
    debug_assert!(ptr != 0 && ptr % 4 == 0, "sources: table at {ptr}");
    // SAFETY: `ptr` (non-null, 4-byte aligned: the thread's scratch area) holds `n` sources
    // written by the host, which nobody writes during the call (caller); Source is repr(C)
    // of u32 words, align 4.
    unsafe { core::slice::from_raw_parts(ptr as usize as *const Source<N>, n as usize) }
}
