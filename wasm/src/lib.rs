//! smmo WebAssembly kernels: Rust implementations of class methods, run by the do-all
//! executor in place on the shared SOA heap (runtime/kernels.ts: one of three backends of a
//! method; paper §3 for the block list and iteration bitmaps they walk).
//!
//! A `#![no_std]` cdylib for wasm32-unknown-unknown, built twice by scripts/build-wasm.mjs:
//! with `simd128` (the fast path) and without (the scalar path, same source, same results).
//! Preconditions the types cannot state are `debug_assert!`s: compiled out of those release
//! builds, on in the checking build (`--debug-assertions`, test/wasm-debug.test.ts).
//!
//! Memory contract with the host (runtime/wasm.ts):
//! * the memory is imported (`env.memory`, shared) and is the smmo heap;
//! * the module owns `[0, __heap_base)`: a small default stack first (stack-first layout,
//!   overflow traps at 0), then static data. The link fails if that exceeds 1 MiB
//!   (`--initial-memory`), which is RESERVED_BYTES of runtime/layout.ts;
//! * `[__heap_base, RESERVED_BYTES)` belongs to the host, which cuts it into per-thread
//!   slots: every instance (one per thread) sets `__stack_pointer` to the top of its slot's
//!   stack, and passes argument tables in the slot's scratch area;
//! * the heap (header, bitmaps, block list, blocks) starts at RESERVED_BYTES.
//!
//! Kernel contract: an exported kernel takes (list, from, to, blocks, block_bytes, params);
//! `params` is the address of its parameter table, a `#[repr(C)]` struct of params.rs,
//! generated from the kernel's declaration (runtime/kernel-params.ts P1–P3: one description,
//! checked by name and type by the host before the first call). For every offset in it:
//! * byte offsets into the memory, 4-byte aligned, of ranges inside it; field offsets are the
//!   byte offsets of SOA arrays within a block of the type being run (16-byte aligned,
//!   padded to a multiple of 4 lanes);
//! * the host runs a kernel only inside a do-all pass whose block list and iteration bitmaps
//!   it has written (ThreadContext.snapshot), on blocks no other thread runs in that pass;
//! * kernels use no recursion (the per-thread stacks are small and unguarded); a kernel that
//!   creates or deletes objects calls the allocator core (through the exports of
//!   `alloc/ffi.rs`, as the host does) with the calling thread's allocator state and follows
//!   its executor contract (alloc/core.rs; `objects.rs` does both).
//!
//! Besides the memory the module imports one host function, `env.smmo_pause(attempt)`: the
//! bounded sleep of the allocator's retry loops (alloc/bits.rs).
#![no_std]
#![deny(unsafe_op_in_unsafe_fn)]

// The scalar build needs `f32::sqrt` (the `f32.sqrt` instruction); Rust 1.63 has it only in
// std. std is linked for that alone and brings its panic handler; no kernel can panic.
#[cfg(not(target_feature = "simd128"))]
extern crate std;

#[cfg(target_feature = "simd128")]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo<'_>) -> ! {
    // Unreachable by construction in the shipped modules (no indexing, no unwrap; the
    // debug_assert!s are compiled out); a failed assertion of the checking build
    // (build-wasm.mjs --debug-assertions) lands here. Trap rather than format.
    core::arch::wasm32::unreachable()
}

/// Stop the module: a trap (the host sees a WebAssembly RuntimeError). Only wasm32 builds
/// run this crate; on another target it is merely checked (scripts/lint-rust.mjs runs
/// clippy for the host), where this panics instead.
#[inline(always)]
pub(crate) fn trap() -> ! {
    #[cfg(target_arch = "wasm32")]
    {
        core::arch::wasm32::unreachable()
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        panic!("trap")
    }
}

pub mod alloc;
mod blocks;
pub mod collision;
pub mod defrag;
pub mod gol;
mod lanes;
#[allow(dead_code)]
mod layout;
pub mod nbody;
mod objects;
#[allow(dead_code)]
mod params;
pub mod wator;
pub mod wator_update;

/// Bumped whenever an export changes its signature or meaning (checked by runtime/wasm.ts).
pub const ABI_VERSION: u32 = 3;

#[no_mangle]
pub extern "C" fn smmo_abi_version() -> u32 {
    ABI_VERSION
}

/// Hash of the layout constants this module was compiled with (layout.rs, generated from
/// runtime/layout.ts): the loader refuses a module built for another layout.
#[no_mangle]
pub extern "C" fn smmo_layout_hash() -> u32 {
    layout::LAYOUT_HASH
}

/// 1 for the simd128 build, 0 for the scalar build.
#[no_mangle]
pub extern "C" fn smmo_has_simd() -> u32 {
    u32::from(cfg!(target_feature = "simd128"))
}
