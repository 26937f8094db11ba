//! Bit tricks on 32-bit words (paper §4.3: ffs and popc instead of bit loops), and the
//! bounded retry pause every retry loop of the allocator and the bitmaps uses.

/// Index of some set bit of `x`, searching from bit `start` (mod 32) upwards and wrapping
/// around (bitmap rotation, paper §4.2); -1 for 0.
#[inline(always)]
pub fn ffs_from(x: u32, start: u32) -> i32 {
    if x == 0 {
        return -1;
    }
    let s = start & 31;
    let high = if s == 0 { x } else { x & (u32::MAX << s) };
    (if high != 0 { high } else { x }).trailing_zeros() as i32
}

/// The `k` lowest set bits of `x`, as a mask (clears the lowest set bit of the rest `k`
/// times, §4.3's trick for the i-th set bit).
#[inline(always)]
pub fn lowest_set_bits(x: u32, k: u32) -> u32 {
    let mut rest = x;
    let mut i = 0;
    while i < k && rest != 0 {
        rest &= rest.wrapping_sub(1);
        i += 1;
    }
    x & !rest
}

extern "C" {
    /// The host's bounded sleep for retry `attempt` (runtime/wasm.ts: Atomics.wait on a
    /// private cell with a timeout of at most 1 ms). The module's only import besides the
    /// memory: stable Rust 1.63 has no `memory.atomic.wait32` intrinsic.
    fn smmo_pause(attempt: u32);
}

/// Bounds of the retry loops and the search policy, from the calling thread's state
/// (the host copies `retryLimits` of runtime/shared.ts there) and the heap's flags.
#[derive(Clone, Copy)]
pub struct Env {
    /// Attempts that spin without sleeping.
    pub spin: u32,
    /// Attempts after which an operation gives up (ContentionError on the host).
    pub max: u32,
    /// Bitmap rotation (§4.2); false: every search starts at bit 0 (the NoShift variant).
    pub rotate: bool,
}

impl Env {
    /// The bit a search with this seed starts at: the seed itself with rotation, 0 without.
    #[inline(always)]
    pub fn start(&self, seed: u32) -> u32 {
        if self.rotate {
            seed
        } else {
            0
        }
    }

    /// Called by a retry loop before its attempt number `attempt` (1-based): spins at first,
    /// then sleeps briefly in the host, and fails (Err) once the budget is spent. No retry
    /// loop is unbounded.
    #[inline]
    pub fn pause(&self, attempt: u32) -> Result<(), ()> {
        if attempt < self.spin {
            return Ok(());
        }
        if attempt >= self.max {
            return Err(());
        }
        // SAFETY: the import takes a plain number and has no other effect than sleeping.
        unsafe { smmo_pause(attempt) };
        Ok(())
    }
}
