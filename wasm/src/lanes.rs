//! Four lanes of a virtual warp at a time, behind one vector trait: every lane helper of the
//! kernels (loads and stores of lane groups, comparisons, masks, selects, the store of the
//! lanes that take part, the search of a block's lanes for those that pass a test) is written
//! once here, over [`Vector`] and [`LaneMask`] (in the manner of the memchr crate's `Vector` +
//! `MoveMask` traits: a vector type names its mask type, and generic code asks the mask for
//! bits, or just whether any lane is set).
//!
//! Types:
//! * `F4` (4 × f32) and `U4` (4 × u32): one v128 in the `simd128` build, where each op is one
//!   wasm SIMD instruction (`f32x4.*`, `i32x4.*`, `v128.bitselect`, `i32x4.bitmask`,
//!   `v128.any_true`); an array of four lanes in the scalar build (`-simd128`), the same ops
//!   lane by lane. Their comparisons give a `Mask` (all-ones v128 lanes / [`Bits`]).
//! * `D4`: the four lanes of an `F4` widened to f64 (arithmetic only, no loads or stores).
//! * `B4` (4 × u8 in one u32 word, SWAR, the same in both builds): a group of a bool field's
//!   SOA array; its comparisons give [`Bits`].
//! * [`Bits`]: a mask as bits of a u32 (bit i = lane i), the scalar build's `Mask`.
//!
//! Generic helpers over the trait: [`store_lanes`] (write only the lanes that take part) and
//! [`lanes_where`] (the bits of up to 32 lanes that pass a vector test).
//!
//! Invariant both implementations keep: every op is the IEEE-754 operation of its lane, with
//! round-to-nearest-even (wasm has no other mode), comparisons are IEEE comparisons (false
//! with a NaN), and `hsum` adds in the fixed order `(l0 + l1) + (l2 + l3)`. So the two builds
//! compute bit-identical results, and the tests can compare them exactly.
#![allow(dead_code)]

pub use imp::{Mask, D4, F4, U4};

/// Which lanes of a four-lane vector (the result of a comparison): memchr's `MoveMask` side.
pub trait LaneMask: Copy {
    /// Whether [`LaneMask::any`] is cheaper than [`LaneMask::bitmask`]: then a search over
    /// several groups ORs their masks and tests `any` once before it asks for bits (the
    /// common answer is "none"). True for v128 masks (`v128.any_true` is one instruction and
    /// needs no shift to place the bits), false for [`Bits`] (bits are what it holds).
    const ANY_IS_CHEAPER: bool;
    /// No lane.
    fn none() -> Self;
    /// Lane i when bit i of `nibble` is set (bits 4 and up are ignored).
    fn from_nibble(nibble: u32) -> Self;
    /// Bit i set ⇔ lane i is (the movemask; bits 4 and up are clear).
    fn bitmask(self) -> u32;
    /// Some lane is set.
    fn any(self) -> bool;
    /// Every lane is set.
    fn all(self) -> bool;
    fn or(self, o: Self) -> Self;
    fn and(self, o: Self) -> Self;
}

/// Four lanes of `Elem`: what the generic lane helpers need of a vector type.
pub trait Vector: Copy {
    type Elem: Copy;
    type Mask: LaneMask;
    fn splat(x: Self::Elem) -> Self;
    /// Lanes `p[0] .. p[4]`.
    ///
    /// # Safety
    /// `p .. p+4` is inside the memory and aligned to the group's size (16 bytes for F4 and
    /// U4, 4 for B4: SOA arrays are 16-byte aligned, blocks.rs); no other thread writes any
    /// of the four lanes meanwhile — lanes outside the pass included, whose values the
    /// caller ignores (true of the passes whose kernels load lane groups: none of them
    /// creates objects, so nobody initialises a free slot during them; the allocating
    /// kernels of gol.rs and wator_update.rs read and write one object at a time).
    unsafe fn load(p: *const Self::Elem) -> Self;
    /// Writes all four lanes at `p .. p+4`.
    ///
    /// # Safety
    /// As [`Vector::load`], and no other thread reads or writes these four lanes meanwhile
    /// (so: all four take part in the pass, run by this call; else use [`store_lanes`]).
    unsafe fn store(self, p: *mut Self::Elem);
    fn to_array(self) -> [Self::Elem; 4];
    /// Lane i set ⇔ `self[i] == o[i]` (IEEE equality for floats).
    fn eq(self, o: Self) -> Self::Mask;
    /// Lanes of `a` where `m` is set, else lanes of `b`.
    fn select(m: Self::Mask, a: Self, b: Self) -> Self;
}

/// Store the lanes of `v` whose bit is set in `nibble` (bit i = lane i) at `p .. p+4`; the
/// other lanes of the memory are not written at all — not even rewritten with the value they
/// hold: another thread may be initialising a new object in a free slot of the same group
/// during the pass (a read-modify-write of the group could undo its writes). A full group
/// is one store; a partial one, a store per lane.
///
/// # Safety
/// `p .. p+4` is a lane group as [`Vector::load`] requires, and the lanes selected by
/// `nibble` belong to this call (they take part in the pass, in a block it runs).
#[inline(always)]
pub unsafe fn store_lanes<V: Vector>(p: *mut V::Elem, v: V, nibble: u32) {
    debug_assert!(nibble != 0 && nibble <= 0xf, "store_lanes: nibble {nibble:#x}");
    if nibble == 0xf {
        // SAFETY: all four lanes are this call's (caller), and the group is aligned.
        unsafe { v.store(p) };
    } else {
        let a = v.to_array();
        let mut rest = nibble;
        while rest != 0 {
            // `& 3`: the index is in bounds by construction (no bounds check, no panic path).
            let l = rest.trailing_zeros() as usize & 3;
            // SAFETY: lane l of the caller's group, selected by `nibble`: this call's.
            unsafe { *p.add(l) = a[l] };
            rest &= rest - 1;
        }
    }
}

/// Bit i set (i < 4·groups) ⇔ `test` sets lane i, where lanes 4k … 4k+3 are the vector at
/// `p + 4k`: the lanes of up to eight groups (a block's 32) that pass a test, as one word.
/// Bits at or beyond 4·groups are clear.
///
/// Where the mask says so ([`LaneMask::ANY_IS_CHEAPER`]), the group masks are ORed and
/// tested once first; only if some lane passes are they computed again and turned into bits
/// (`test` is pure, so it gives the same masks twice).
///
/// # Safety
/// `p .. p + 4·groups` lies inside the memory (a padded SOA array), aligned as
/// [`Vector::load`] requires, and not written by another thread meanwhile.
#[inline(always)]
pub unsafe fn lanes_where<V: Vector>(p: *const V::Elem, groups: u32, test: impl Fn(V) -> V::Mask) -> u32 {
    debug_assert!(groups <= 8, "lanes_where: {groups} groups (a block has at most 32 lanes)");
    // SAFETY: group k < groups lies in the caller's range.
    let group = |k: u32| test(unsafe { V::load(p.add(4 * k as usize)) });
    if <V::Mask as LaneMask>::ANY_IS_CHEAPER {
        let mut any = <V::Mask as LaneMask>::none();
        let mut k = 0;
        while k < groups {
            any = any.or(group(k));
            k += 1;
        }
        if !any.any() {
            return 0;
        }
    }
    let mut out = 0u32;
    let mut k = 0;
    while k < groups {
        out |= group(k).bitmask() << (4 * k);
        k += 1;
    }
    out
}

/// A lane mask as the bits of a word: bit i = lane i, bits 4 and up clear. The mask of `B4`
/// in both builds and of `F4`/`U4` in the scalar build.
#[derive(Clone, Copy)]
pub struct Bits(u32);

impl LaneMask for Bits {
    const ANY_IS_CHEAPER: bool = false;
    #[inline(always)]
    fn none() -> Bits {
        Bits(0)
    }
    #[inline(always)]
    fn from_nibble(nibble: u32) -> Bits {
        Bits(nibble & 0xf)
    }
    #[inline(always)]
    fn bitmask(self) -> u32 {
        self.0
    }
    #[inline(always)]
    fn any(self) -> bool {
        self.0 != 0
    }
    #[inline(always)]
    fn all(self) -> bool {
        self.0 == 0xf
    }
    #[inline(always)]
    fn or(self, o: Bits) -> Bits {
        Bits(self.0 | o.0)
    }
    #[inline(always)]
    fn and(self, o: Bits) -> Bits {
        Bits(self.0 & o.0)
    }
}

impl Bits {
    /// Bit i set ⇔ lane i of four comparisons.
    #[inline(always)]
    fn of(l: [bool; 4]) -> Bits {
        Bits(u32::from(l[0]) | u32::from(l[1]) << 1 | u32::from(l[2]) << 2 | u32::from(l[3]) << 3)
    }
    /// 0xff in the bytes of the lanes that are set (the SWAR form of the mask).
    #[inline(always)]
    fn bytes(self) -> u32 {
        let n = self.0;
        ((n & 1) * 0xff) | ((n & 2) * 0x7f80) | ((n & 4) * 0x3f_c000) | ((n & 8) * 0x1fe0_0000)
    }
}

/// Four u8 lanes in one u32 word, lane i in byte i (little-endian): lanes 4k … 4k+3 of a bool
/// or u8 SOA array. The same SWAR code in both builds.
#[derive(Clone, Copy)]
pub struct B4(u32);

impl B4 {
    /// Lanes set in `self` or in `o` (bitwise OR of the words).
    #[inline(always)]
    pub fn or(self, o: B4) -> B4 {
        B4(self.0 | o.0)
    }
}

impl Vector for B4 {
    type Elem = u8;
    type Mask = Bits;
    #[inline(always)]
    fn splat(x: u8) -> B4 {
        B4(u32::from(x) * 0x0101_0101)
    }
    #[inline(always)]
    unsafe fn load(p: *const u8) -> B4 {
        debug_assert!(p as usize % 4 == 0, "B4::load: {p:?} is not a lane group");
        // SAFETY: the caller guarantees an aligned group of four bytes inside the memory,
        // which no other thread writes meanwhile.
        B4(unsafe { *(p as *const u32) })
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut u8) {
        debug_assert!(p as usize % 4 == 0, "B4::store: {p:?} is not a lane group");
        // SAFETY: the caller guarantees an aligned group of four bytes inside the memory,
        // all of whose lanes are its own.
        unsafe { *(p as *mut u32) = self.0 }
    }
    #[inline(always)]
    fn to_array(self) -> [u8; 4] {
        self.0.to_le_bytes()
    }
    #[inline(always)]
    fn eq(self, o: B4) -> Bits {
        let x = self.0 ^ o.0;
        Bits::of([x & 0xff == 0, x & 0xff00 == 0, x & 0xff_0000 == 0, x & 0xff00_0000 == 0])
    }
    #[inline(always)]
    fn select(m: Bits, a: B4, b: B4) -> B4 {
        let mb = m.bytes();
        B4((a.0 & mb) | (b.0 & !mb))
    }
}

#[cfg(target_feature = "simd128")]
mod imp {
    use super::{LaneMask, Vector};
    use core::arch::wasm32::*;
    use core::ops::{Add, Div, Mul, Neg, Sub};

    #[derive(Clone, Copy)]
    pub struct F4(v128);
    #[derive(Clone, Copy)]
    pub struct U4(v128);
    /// Lanes widened to f64: lanes 0,1 in `.0`, lanes 2,3 in `.1`.
    #[derive(Clone, Copy)]
    pub struct D4(v128, v128);
    /// All-ones lanes are set, all-zero lanes are not (what `f32x4.lt` & co. give).
    #[derive(Clone, Copy)]
    pub struct Mask(v128);

    impl LaneMask for Mask {
        const ANY_IS_CHEAPER: bool = true;
        #[inline(always)]
        fn none() -> Mask {
            Mask(i32x4_splat(0))
        }
        #[inline(always)]
        fn from_nibble(nibble: u32) -> Mask {
            let bits = i32x4_splat(nibble as i32);
            Mask(i32x4_ne(v128_and(bits, i32x4(1, 2, 4, 8)), i32x4_splat(0)))
        }
        #[inline(always)]
        fn bitmask(self) -> u32 {
            i32x4_bitmask(self.0) as u32 & 0xf
        }
        #[inline(always)]
        fn any(self) -> bool {
            v128_any_true(self.0)
        }
        #[inline(always)]
        fn all(self) -> bool {
            i32x4_all_true(self.0)
        }
        #[inline(always)]
        fn or(self, o: Mask) -> Mask {
            Mask(v128_or(self.0, o.0))
        }
        #[inline(always)]
        fn and(self, o: Mask) -> Mask {
            Mask(v128_and(self.0, o.0))
        }
    }

    /// The v128 implementation of [`Vector`] for a lane type (loads accept any alignment in
    /// wasm; the trait's 16-byte alignment is what the SOA layout gives, checked in debug builds).
    macro_rules! v128_vector {
        ($t:ident, $elem:ty, $splat:ident, $eq:ident, $lane:ident) => {
            impl Vector for $t {
                type Elem = $elem;
                type Mask = Mask;
                #[inline(always)]
                fn splat(x: $elem) -> $t {
                    $t($splat(x))
                }
                #[inline(always)]
                unsafe fn load(p: *const $elem) -> $t {
                    debug_assert!(p as usize % 16 == 0, "load: {p:?} is not a lane group");
                    // SAFETY: the caller guarantees p .. p+4 inside the memory, not written
                    // by another thread meanwhile; v128.load accepts any alignment.
                    $t(unsafe { v128_load(p as *const v128) })
                }
                #[inline(always)]
                unsafe fn store(self, p: *mut $elem) {
                    debug_assert!(p as usize % 16 == 0, "store: {p:?} is not a lane group");
                    // SAFETY: the caller guarantees p .. p+4 inside the memory, all four
                    // lanes its own.
                    unsafe { v128_store(p as *mut v128, self.0) }
                }
                #[inline(always)]
                fn to_array(self) -> [$elem; 4] {
                    [$lane::<0>(self.0), $lane::<1>(self.0), $lane::<2>(self.0), $lane::<3>(self.0)]
                }
                #[inline(always)]
                fn eq(self, o: $t) -> Mask {
                    Mask($eq(self.0, o.0))
                }
                #[inline(always)]
                fn select(m: Mask, a: $t, b: $t) -> $t {
                    $t(v128_bitselect(a.0, b.0, m.0))
                }
            }
        };
    }
    v128_vector!(F4, f32, f32x4_splat, f32x4_eq, f32x4_extract_lane);
    v128_vector!(U4, u32, u32x4_splat, i32x4_eq, u32x4_extract_lane);

    impl F4 {
        #[inline(always)]
        pub fn zero() -> F4 {
            F4(f32x4_splat(0.0))
        }
        #[inline(always)]
        pub fn sqrt(self) -> F4 {
            F4(f32x4_sqrt(self.0))
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

    macro_rules! binop {
        ($tr:ident, $f:ident, $op32:ident, $op64:ident) => {
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
    binop!(Add, add, f32x4_add, f64x2_add);
    binop!(Sub, sub, f32x4_sub, f64x2_sub);
    binop!(Mul, mul, f32x4_mul, f64x2_mul);
    binop!(Div, div, f32x4_div, f64x2_div);

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
    use super::{Bits, Vector};
    use core::ops::{Add, Div, Mul, Neg, Sub};

    #[derive(Clone, Copy)]
    pub struct F4([f32; 4]);
    #[derive(Clone, Copy)]
    pub struct U4([u32; 4]);
    #[derive(Clone, Copy)]
    pub struct D4([f64; 4]);
    /// The scalar build's comparisons give bits.
    pub type Mask = Bits;

    /// The lane-by-lane implementation of [`Vector`] for a lane type.
    macro_rules! array_vector {
        ($t:ident, $elem:ty) => {
            impl Vector for $t {
                type Elem = $elem;
                type Mask = Bits;
                #[inline(always)]
                fn splat(x: $elem) -> $t {
                    $t([x; 4])
                }
                #[inline(always)]
                unsafe fn load(p: *const $elem) -> $t {
                    debug_assert!(p as usize % 16 == 0, "load: {p:?} is not a lane group");
                    // SAFETY: the caller guarantees p .. p+4 inside the memory, aligned, not
                    // written by another thread meanwhile.
                    unsafe { $t([*p, *p.add(1), *p.add(2), *p.add(3)]) }
                }
                #[inline(always)]
                unsafe fn store(self, p: *mut $elem) {
                    debug_assert!(p as usize % 16 == 0, "store: {p:?} is not a lane group");
                    // SAFETY: the caller guarantees p .. p+4 inside the memory, aligned, all
                    // four lanes its own.
                    unsafe {
                        *p = self.0[0];
                        *p.add(1) = self.0[1];
                        *p.add(2) = self.0[2];
                        *p.add(3) = self.0[3];
                    }
                }
                #[inline(always)]
                fn to_array(self) -> [$elem; 4] {
                    self.0
                }
                #[inline(always)]
                fn eq(self, o: $t) -> Bits {
                    let (a, b) = (self.0, o.0);
                    Bits::of([a[0] == b[0], a[1] == b[1], a[2] == b[2], a[3] == b[3]])
                }
                #[inline(always)]
                fn select(m: Bits, a: $t, b: $t) -> $t {
                    let (m, a, b) = (m.0, a.0, b.0);
                    $t([
                        if m & 1 != 0 { a[0] } else { b[0] },
                        if m & 2 != 0 { a[1] } else { b[1] },
                        if m & 4 != 0 { a[2] } else { b[2] },
                        if m & 8 != 0 { a[3] } else { b[3] },
                    ])
                }
            }
        };
    }
    array_vector!(F4, f32);
    array_vector!(U4, u32);

    impl F4 {
        #[inline(always)]
        pub fn zero() -> F4 {
            F4([0.0; 4])
        }
        #[inline(always)]
        pub fn sqrt(self) -> F4 {
            // f32::sqrt is the `f32.sqrt` instruction; Rust 1.63 offers it only through std.
            let a = self.0;
            F4([a[0].sqrt(), a[1].sqrt(), a[2].sqrt(), a[3].sqrt()])
        }
        #[inline(always)]
        pub fn lt(self, o: F4) -> Bits {
            let (a, b) = (self.0, o.0);
            Bits::of([a[0] < b[0], a[1] < b[1], a[2] < b[2], a[3] < b[3]])
        }
        #[inline(always)]
        pub fn gt(self, o: F4) -> Bits {
            let (a, b) = (self.0, o.0);
            Bits::of([a[0] > b[0], a[1] > b[1], a[2] > b[2], a[3] > b[3]])
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
