//! The allocator core: the DynaSOAr allocator (paper §3–§5) and its hierarchical bitmaps,
//! one implementation for every CPU thread. runtime/allocator.ts binds the exports of
//! `ffi.rs`; a Rust kernel of this module calls `core::Alloc` directly.
//!
//! | file        | what                                                                         |
//! | ----------- | ---------------------------------------------------------------------------- |
//! | `mem.rs`    | shared-memory operations: atomic (several threads) or plain (one thread)     |
//! | `bits.rs`   | ffs/popc tricks, the bounded retry pause (host import `env.smmo_pause`)      |
//! | `bitmap.rs` | hierarchical bitmaps, Alg. 3–5 and the rotated search of §4.2                |
//! | `core.rs`   | Alg. 1, 2, 6, 7, kept blocks K1–K5, warp coalescing C1–C4, variants, the     |
//! |             | executor contract                                                            |
//! | `ffi.rs`    | exports, error reporting through the thread's state                          |
//!
//! Where the data lives (all of it in the heap, planned by runtime/layout.ts, the single
//! source of the layout; constants in `layout.rs`): the allocator descriptor in header words
//! (H_*), a per-type table (T_*: bitmap words, highMask, slots, generation offset), and one
//! state per thread (S_*, TS_*: rotation seed, retry limits, hints, kept stacks, K5 flags,
//! warp cache, last error), claimed through a bitmap in the header.
pub mod bitmap;
pub mod bits;
pub mod core;
pub mod ffi;
pub mod mem;
