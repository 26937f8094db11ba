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
use crate::alloc::core::header;
use crate::alloc::mem::private;
use crate::layout::{
    ARRAY_ALIGN, BLOCK_DATA_OFFSET, BLOCK_ITER_WORD, BLOCK_TYPE_WORD, H_BLOCKS_OFFSET, H_BLOCK_BYTES, H_NUM_BLOCKS, H_NUM_TYPES,
    H_TYPE_TABLE_WORD, MAX_SLOTS, NULL_HANDLE, SLOT_BITS, TYPE_WORDS, T_SLOTS,
};
use core::sync::atomic::{AtomicU32, Ordering};

// Debug assertions (`debug_assert!`, compiled out of the shipped modules; a build with
// `node scripts/build-wasm.mjs --debug-assertions --out DIR` has them, test/wasm-debug
// runs the apps on it) check the kernel arguments against the heap header, which the host
// writes once when it formats the heap: block geometry, list ranges, block indices, handles,
// field offsets (16-byte aligned arrays inside the block), slot counts.

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
        debug_assert!(
            h != NULL_HANDLE && h >> SLOT_BITS < header(H_NUM_BLOCKS),
            "Heap::at: handle {h:#x} names no block of the heap"
        );
        debug_assert!(field_offset_ok(off, self.block_bytes), "Heap::at: field offset {off}");
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
    /// The pass of a kernel call: its block list, the list range `from .. to` it runs (only
    /// checked, in debug builds: the kernel loops over it), and the heap's blocks.
    ///
    /// # Safety
    /// `list_off` is the byte offset of the block list (u32 entries), `blocks_off` of block 0,
    /// both inside the memory; every list index the kernel reads names a block of the heap.
    #[inline(always)]
    pub unsafe fn new(list_off: u32, from: u32, to: u32, blocks_off: u32, block_bytes: u32) -> Pass {
        debug_assert!(
            blocks_off == header(H_BLOCKS_OFFSET) && block_bytes == header(H_BLOCK_BYTES),
            "Pass::new: blocks at {blocks_off}, {block_bytes} bytes each: not this heap's"
        );
        debug_assert!(
            blocks_off % ARRAY_ALIGN == 0 && block_bytes % ARRAY_ALIGN == 0,
            "Pass::new: blocks at {blocks_off}, {block_bytes} bytes each: SOA arrays would not be 16-byte aligned"
        );
        debug_assert!(
            list_off % 4 == 0 && list_off as u64 + 4 * header(H_NUM_BLOCKS) as u64 <= blocks_off as u64,
            "Pass::new: block list at {list_off}"
        );
        debug_assert!(
            from <= to && to <= header(H_NUM_BLOCKS),
            "Pass::new: list range {from}..{to} of at most {} blocks",
            header(H_NUM_BLOCKS)
        );
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
        debug_assert!(i < header(H_NUM_BLOCKS), "Pass::block: list position {i} beyond the list");
        // SAFETY: the list is written before the pass starts and not changed during it
        // (ThreadContext.snapshot); `i` is in range per the caller.
        let index = unsafe { *self.list.add(i as usize) };
        debug_assert!(
            index < header(H_NUM_BLOCKS),
            "Pass::block: block index {index} at list position {i}"
        );
        let b = Block {
            index,
            base: self.heap.block_base(index),
        };
        debug_assert!(
            b.slots_hold_bits(),
            "Pass::block: block {index}: iteration bits beyond its type's slots"
        );
        b
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

    /// Debug assertions only: the block's type is one of the heap's, and its iteration bits
    /// lie below the type's slot count (so lane groups stay inside the padded arrays).
    fn slots_hold_bits(&self) -> bool {
        // Atomic: a debug check must not race with anything, whatever the pass does.
        // SAFETY: the type word is inside the block (Pass::block's contract), 4-byte aligned.
        let t = unsafe { &*((self.base + 4 * BLOCK_TYPE_WORD as usize) as *const AtomicU32) }.load(Ordering::SeqCst);
        if t >= header(H_NUM_TYPES) {
            return false;
        }
        // SAFETY: t < num_types: an entry of the type table, which the host writes only when
        // it formats the heap.
        let slots = unsafe { private::load(header(H_TYPE_TABLE_WORD) + t * TYPE_WORDS + T_SLOTS) };
        (1..=MAX_SLOTS).contains(&slots) && (slots == MAX_SLOTS || self.iter_bits() >> slots == 0)
    }

    /// The SOA array of the field at byte offset `off` within the block, as elements of `T`
    /// (f32, u32 for refs and u32 fields, u8 for bools).
    #[inline(always)]
    pub fn array<T>(&self, off: u32) -> *mut T {
        debug_assert!(
            field_offset_ok(off, header(H_BLOCK_BYTES) as usize),
            "Block::array: field offset {off}"
        );
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

/// Debug assertions only: `off` can be the offset of a field's SOA array in a block of
/// `block_bytes` bytes (after the header, 16-byte aligned, inside the block).
fn field_offset_ok(off: u32, block_bytes: usize) -> bool {
    off >= BLOCK_DATA_OFFSET && off % ARRAY_ALIGN == 0 && (off as usize) < block_bytes
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
    let all = unsafe { core::slice::from_raw_parts(ptr as usize as *const Source<N>, n as usize) };
    debug_assert!(
        all.iter().all(|s| s.start as u64 + s.count as u64 <= header(H_NUM_BLOCKS) as u64),
        "sources: a range beyond the block list"
    );
    all
}
