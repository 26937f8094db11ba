//! Four lanes of a virtual warp at a time: `F4` (4 × f32, one v128), `D4` (the same four
//! lanes widened to f64) and `Mask` (which of the four lanes take part).
//!
//! The kernels are written once against these types. Two thin implementations:
//! * `simd128` build: each op is one wasm SIMD instruction (`f32x4.*`, `f64x2.*`,
//!   `v128.bitselect`);
//! * scalar build (`-simd128`): the same ops lane by lane on arrays.
//!
//! Invariant both implementations keep: every op is the IEEE-754 operation of its lane, with
//! round-to-nearest-even (wasm has no other mode), and `hsum` adds in the fixed order
//! `(l0 + l1) + (l2 + l3)`. So the two builds compute bit-identical results, and the tests
//! can compare them exactly.
#![allow(dead_code)]

pub use imp::{Mask, D4, F4};

#[cfg(target_feature = "simd128")]
mod imp {
    use core::arch::wasm32::*;
    use core::ops::{Add, Div, Mul, Neg, Sub};

    #[derive(Clone, Copy)]
    pub struct F4(v128);
    /// Lanes widened to f64: lanes 0,1 in `.0`, lanes 2,3 in `.1`.
    #[derive(Clone, Copy)]
    pub struct D4(v128, v128);
    /// All-ones lanes take part, all-zero lanes do not.
    #[derive(Clone, Copy)]
    pub struct Mask(v128);

    impl F4 {
        #[inline(always)]
        pub fn splat(x: f32) -> F4 {
            F4(f32x4_splat(x))
        }
        #[inline(always)]
        pub fn zero() -> F4 {
            F4(f32x4_splat(0.0))
        }
        /// # Safety
        /// `p .. p+4` must be inside the memory; 4-byte alignment is enough (wasm v128
        /// loads accept any alignment).
        #[inline(always)]
        pub unsafe fn load(p: *const f32) -> F4 {
            // SAFETY: forwarded to the caller.
            F4(unsafe { v128_load(p as *const v128) })
        }
        /// # Safety
        /// As `load`, and no other thread may write these four lanes concurrently.
        #[inline(always)]
        pub unsafe fn store(self, p: *mut f32) {
            // SAFETY: forwarded to the caller.
            unsafe { v128_store(p as *mut v128, self.0) }
        }
        #[inline(always)]
        pub fn to_array(self) -> [f32; 4] {
            [
                f32x4_extract_lane::<0>(self.0),
                f32x4_extract_lane::<1>(self.0),
                f32x4_extract_lane::<2>(self.0),
                f32x4_extract_lane::<3>(self.0),
            ]
        }
        #[inline(always)]
        pub fn sqrt(self) -> F4 {
            F4(f32x4_sqrt(self.0))
        }
        /// Lanes of `a` where `m` is set, else lanes of `b`.
        #[inline(always)]
        pub fn select(m: Mask, a: F4, b: F4) -> F4 {
            F4(v128_bitselect(a.0, b.0, m.0))
        }
        #[inline(always)]
        pub fn lt(self, o: F4) -> Mask {
            Mask(f32x4_lt(self.0, o.0))
        }
        #[inline(always)]
        pub fn gt(self, o: F4) -> Mask {
            Mask(f32x4_gt(self.0, o.0))
        }
        /// `(l0 + l1) + (l2 + l3)`, in f32.
        #[inline(always)]
        pub fn hsum(self) -> f32 {
            let a = self.to_array();
            (a[0] + a[1]) + (a[2] + a[3])
        }
        #[inline(always)]
        pub fn widen(self) -> D4 {
            D4(
                f64x2_promote_low_f32x4(self.0),
                f64x2_promote_low_f32x4(i32x4_shuffle::<2, 3, 0, 1>(self.0, self.0)),
            )
        }
    }

    impl D4 {
        #[inline(always)]
        pub fn splat(x: f64) -> D4 {
            D4(f64x2_splat(x), f64x2_splat(x))
        }
        /// Round each lane to f32 (nearest-even, as JavaScript's `Math.fround`).
        #[inline(always)]
        pub fn narrow(self) -> F4 {
            F4(i32x4_shuffle::<0, 1, 4, 5>(
                f32x4_demote_f64x2_zero(self.0),
                f32x4_demote_f64x2_zero(self.1),
            ))
        }
    }

    impl Mask {
        /// Lane i takes part when bit i of `nibble` is set.
        #[inline(always)]
        pub fn from_nibble(nibble: u32) -> Mask {
            let bits = i32x4_splat(nibble as i32);
            Mask(i32x4_ne(v128_and(bits, i32x4(1, 2, 4, 8)), i32x4_splat(0)))
        }
        #[inline(always)]
        pub fn or(self, o: Mask) -> Mask {
            Mask(v128_or(self.0, o.0))
        }
    }

    macro_rules! binop {
        ($t:ident, $tr:ident, $f:ident, $op32:ident, $op64:ident) => {
            impl $tr for F4 {
                type Output = F4;
                #[inline(always)]
                fn $f(self, o: F4) -> F4 {
                    F4($op32(self.0, o.0))
                }
            }
            impl $tr for D4 {
                type Output = D4;
                #[inline(always)]
                fn $f(self, o: D4) -> D4 {
                    D4($op64(self.0, o.0), $op64(self.1, o.1))
                }
            }
        };
    }
    binop!(F4, Add, add, f32x4_add, f64x2_add);
    binop!(F4, Sub, sub, f32x4_sub, f64x2_sub);
    binop!(F4, Mul, mul, f32x4_mul, f64x2_mul);
    binop!(F4, Div, div, f32x4_div, f64x2_div);

    impl Neg for F4 {
        type Output = F4;
        #[inline(always)]
        fn neg(self) -> F4 {
            F4(f32x4_neg(self.0))
        }
    }
}

#[cfg(not(target_feature = "simd128"))]
mod imp {
    use core::ops::{Add, Div, Mul, Neg, Sub};

    #[derive(Clone, Copy)]
    pub struct F4([f32; 4]);
    #[derive(Clone, Copy)]
    pub struct D4([f64; 4]);
    #[derive(Clone, Copy)]
    pub struct Mask([bool; 4]);

    impl F4 {
        #[inline(always)]
        pub fn splat(x: f32) -> F4 {
            F4([x; 4])
        }
        #[inline(always)]
        pub fn zero() -> F4 {
            F4([0.0; 4])
        }
        /// # Safety
        /// `p .. p+4` must be inside the memory and 4-byte aligned.
        #[inline(always)]
        pub unsafe fn load(p: *const f32) -> F4 {
            // SAFETY: forwarded to the caller.
            unsafe { F4([*p, *p.add(1), *p.add(2), *p.add(3)]) }
        }
        /// # Safety
        /// As `load`, and no other thread may write these four lanes concurrently.
        #[inline(always)]
        pub unsafe fn store(self, p: *mut f32) {
            // SAFETY: forwarded to the caller.
            unsafe {
                *p = self.0[0];
                *p.add(1) = self.0[1];
                *p.add(2) = self.0[2];
                *p.add(3) = self.0[3];
            }
        }
        #[inline(always)]
        pub fn to_array(self) -> [f32; 4] {
            self.0
        }
        #[inline(always)]
        pub fn sqrt(self) -> F4 {
            // f32::sqrt is the `f32.sqrt` instruction; Rust 1.63 offers it only through std.
            let a = self.0;
            F4([a[0].sqrt(), a[1].sqrt(), a[2].sqrt(), a[3].sqrt()])
        }
        #[inline(always)]
        pub fn select(m: Mask, a: F4, b: F4) -> F4 {
            let (m, a, b) = (m.0, a.0, b.0);
            F4([
                if m[0] { a[0] } else { b[0] },
                if m[1] { a[1] } else { b[1] },
                if m[2] { a[2] } else { b[2] },
                if m[3] { a[3] } else { b[3] },
            ])
        }
        #[inline(always)]
        pub fn lt(self, o: F4) -> Mask {
            let (a, b) = (self.0, o.0);
            Mask([a[0] < b[0], a[1] < b[1], a[2] < b[2], a[3] < b[3]])
        }
        #[inline(always)]
        pub fn gt(self, o: F4) -> Mask {
            let (a, b) = (self.0, o.0);
            Mask([a[0] > b[0], a[1] > b[1], a[2] > b[2], a[3] > b[3]])
        }
        #[inline(always)]
        pub fn hsum(self) -> f32 {
            let a = self.0;
            (a[0] + a[1]) + (a[2] + a[3])
        }
        #[inline(always)]
        pub fn widen(self) -> D4 {
            let a = self.0;
            D4([a[0] as f64, a[1] as f64, a[2] as f64, a[3] as f64])
        }
    }

    impl D4 {
        #[inline(always)]
        pub fn splat(x: f64) -> D4 {
            D4([x; 4])
        }
        #[inline(always)]
        pub fn narrow(self) -> F4 {
            let a = self.0;
            F4([a[0] as f32, a[1] as f32, a[2] as f32, a[3] as f32])
        }
    }

    impl Mask {
        #[inline(always)]
        pub fn from_nibble(nibble: u32) -> Mask {
            Mask([nibble & 1 != 0, nibble & 2 != 0, nibble & 4 != 0, nibble & 8 != 0])
        }
        #[inline(always)]
        pub fn or(self, o: Mask) -> Mask {
            let (a, b) = (self.0, o.0);
            Mask([a[0] | b[0], a[1] | b[1], a[2] | b[2], a[3] | b[3]])
        }
    }

    macro_rules! binop {
        ($tr:ident, $f:ident, $op:tt) => {
            impl $tr for F4 {
                type Output = F4;
                #[inline(always)]
                fn $f(self, o: F4) -> F4 {
                    let (a, b) = (self.0, o.0);
                    F4([a[0] $op b[0], a[1] $op b[1], a[2] $op b[2], a[3] $op b[3]])
                }
            }
            impl $tr for D4 {
                type Output = D4;
                #[inline(always)]
                fn $f(self, o: D4) -> D4 {
                    let (a, b) = (self.0, o.0);
                    D4([a[0] $op b[0], a[1] $op b[1], a[2] $op b[2], a[3] $op b[3]])
                }
            }
        };
    }
    binop!(Add, add, +);
    binop!(Sub, sub, -);
    binop!(Mul, mul, *);
    binop!(Div, div, /);

    impl Neg for F4 {
        type Output = F4;
        #[inline(always)]
        fn neg(self) -> F4 {
            let a = self.0;
            F4([-a[0], -a[1], -a[2], -a[3]])
        }
    }
}
