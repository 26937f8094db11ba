//! Kernels of apps/collision/body.ts: `Body.prepareMerge` and `Body.resolveMerge`, the two
//! merge phases that visit all bodies (`deviceDo(Body)`) for each body, O(n²) per step
//! (the paper's "Particle Collisions" benchmark, Fig. 1 and §7; `device_do` is its §2.1
//! API: a sequential for-each over the objects that existed when the do-all started, which
//! here are the pass's block list and iteration bitmaps, §3 "Parallel Object Enumeration").
//!
//! Both take the fixed kernel arguments `(list, from, to, blocks, block_bytes)` of the
//! crate root's kernel contract, then the parameters of their spec (apps/collision/kernels.ts).
//!
//! Exactness: the results are bit-identical to the TypeScript methods, not merely close.
//! The TypeScript methods decide with squared distances in f64 (JavaScript numbers) of f32
//! fields, and compare handles. A kernel first narrows the other bodies down with a cheap
//! SIMD test that can only let through MORE lanes than the exact rule accepts (the proofs
//! are at `near_lanes` and at the `eq_lanes` call), and then applies the method's exact
//! rule, in f64 and with the same tie rule, lane by lane to the lanes let through. The
//! rules are minima or existence tests over the set of other bodies under a total order
//! (squared distance, then id, then handle: `before`), so the order in which the kernel
//! visits the bodies does not matter. Ties go to the lower id (apps/collision/body.ts
//! "Ties": ids are the bodies' indices at the start, which defragmentation keeps; the
//! handle only orders equal ids).
//!
//! Handles are `block index · 32 + slot` (runtime/layout.ts); a ref field is an SOA array
//! of u32 handles (0 = null), a bool field an SOA array of u8 (0 or 1), `id` an SOA array
//! of u32.
//!
//! Writes: only the running lane's own `mergeTarget` (prepare) or `successfulMerge`
//! (resolve), and only when the method would write it. Reads of other bodies touch only
//! fields no method writes during the same pass (positions, masses; mergeTarget in resolve).
use crate::blocks::{for_each_lane, sources, Pass, Source};
use crate::lanes::{lanes_where, Vector, F4, U4};
use crate::layout::SLOT_BITS;
use crate::params::{CollisionPrepareMerge, CollisionResolveMerge, Table};

/// The number of four-lane groups that hold the set bits of `bits` (lanes at or beyond a
/// type's slot count are never set, so the groups read stay inside the padded SOA arrays).
#[inline(always)]
fn groups_of(bits: u32) -> u32 {
    (32 - bits.leading_zeros() + 3) >> 2
}

/// Bit i set (i < 4·groups) ⇔ `(fl32(p[i] − x))² < bound` in f32 (the prepare filter).
///
/// # Safety
/// `p .. p + 4·groups` is a padded f32 SOA array's lanes (inside the memory, 16-byte
/// aligned), which no method writes during the pass (positions).
#[inline(always)]
unsafe fn near_lanes(p: *const f32, groups: u32, x: f32, bound: f32) -> u32 {
    let (xv, bv) = (F4::splat(x), F4::splat(bound));
    // SAFETY: the caller's range, as lanes_where requires it.
    unsafe {
        lanes_where(p, groups, |o: F4| {
            let d = o - xv;
            (d * d).lt(bv)
        })
    }
}

/// Bit i set (i < 4·groups) ⇔ `p[i] == v` (the resolve filter).
///
/// # Safety
/// `p .. p + 4·groups` is a padded u32 SOA array's lanes (inside the memory, 16-byte
/// aligned), which no method writes during the pass (mergeTarget in resolve).
#[inline(always)]
unsafe fn eq_lanes(p: *const u32, groups: u32, v: u32) -> u32 {
    let vv = U4::splat(v);
    // SAFETY: the caller's range, as lanes_where requires it.
    unsafe { lanes_where(p, groups, |o: U4| o.eq(vv)) }
}

/// `(x − ox)² + (y − oy)²` in f64 from f32 values, as the TypeScript methods compute it
/// (JavaScript: `dx * dx + dy * dy`, each operation rounded to f64; no fused multiply-add).
#[inline(always)]
fn dist2(x: f32, y: f32, ox: f32, oy: f32) -> f64 {
    let dx = x as f64 - ox as f64;
    let dy = y as f64 - oy as f64;
    dx * dx + dy * dy
}

/// Body `(id, h)` comes before body `(best_id, best)` in the tie order (body.ts "Ties"):
/// the lower id, at equal ids the lower handle.
#[inline(always)]
fn before(id: u32, h: u32, best_id: u32, best: u32) -> bool {
    id < best_id || (id == best_id && h < best)
}

/// `Body.prepareMerge()`: mergeTarget = the handle of the nearest body `o` of the pass with
/// `o.mass < mass` and squared distance `d < threshold_sq` (ties: `before`, the lower id,
/// then the lower handle); left as it is (null, from initializeMerge) when there is none.
///
/// Filter: a lane is looked at exactly only if `fl32(fl32(x − o.x)²) < bound`, with
/// `bound = fl32(threshold_sq · (1 + 2⁻⁸))`. Every pair the method accepts passes: with
/// `dx` the f64 difference and `dx₃₂` the f32 one, `d ≥ fl64(dx²)` (adding `fl64(dy²) ≥ 0`
/// rounds to no less), so `dx² < threshold_sq·(1 + 2⁻⁵²)`; `|dx₃₂| ≤ |dx|·(1 + 2⁻²⁴)·(1 + 2⁻⁵³)`
/// and squaring in f32 adds one more factor (1 + 2⁻²⁴): in all below `threshold_sq·(1 + 2⁻²¹)`,
/// which is below `bound`. Underflow only makes the f32 square smaller; an f32 overflow
/// (inf) or NaN fails the filter and the f64 test alike.
///
/// `sources`/`n_sources`: the `deviceDo(Body)` blocks, one `Source<3>` per concrete type
/// (offsets of posX, posY, mass); `ids`: the same blocks with the offset of id
/// (`Source<1>`; both tables list the concrete types in the same order).
///
/// # Safety
/// The kernel contract of the crate root; `merge_target` is a ref field of the running type.
#[no_mangle]
pub unsafe extern "C" fn collision_prepare_merge(list: u32, from: u32, to: u32, blocks: u32, block_bytes: u32, params: u32) {
    // SAFETY: kernel contract: `params` is the table the host wrote for this kernel.
    let CollisionPrepareMerge {
        pos_x,
        pos_y,
        mass,
        merge_target,
        sources: Table {
            ptr: sources_ptr,
            count: n_sources,
        },
        ids: Table {
            ptr: ids_ptr,
            count: n_ids,
        },
        threshold_sq,
    } = unsafe { CollisionPrepareMerge::read(params) };
    // SAFETY: kernel contract: `list` is the pass's block list, `blocks`/`block_bytes` the
    // heap's blocks, and every list position this kernel reads names a block of the heap.
    let pass = unsafe { Pass::new(list, from, to, blocks, block_bytes) };
    // SAFETY: the host wrote n_sources entries of 2 + 3 words at sources_ptr, n_ids of 2 + 1 at ids_ptr.
    let (others, ids): (&[Source<3>], &[Source<1>]) = unsafe { (sources::<3>(sources_ptr, n_sources), sources::<1>(ids_ptr, n_ids)) };
    let bound = (threshold_sq * (1.0 + 1.0 / 256.0)) as f32;
    let mut i = from;
    while i < to {
        // SAFETY: from <= i < to, inside the list range the host passed (kernel contract).
        let b = unsafe { pass.block(i) };
        let (px, py, pm) = (b.f32s(pos_x), b.f32s(pos_y), b.f32s(mass));
        let mt = b.f32s(merge_target) as *mut u32;
        for_each_lane(b.iter_bits(), |s| {
            let s = s as usize;
            // SAFETY: slot s < 32 of this block's field arrays, fields no method writes
            // during this pass (module doc: Writes).
            let (x, y, m) = unsafe { (*px.add(s), *py.add(s), *pm.add(s)) };
            let mut best = 0u32;
            let mut best_id = 0u32;
            let mut best_d = f64::INFINITY;
            for (src, isrc) in others.iter().zip(ids.iter()) {
                let [ox_off, oy_off, om_off] = src.fields;
                let [oi_off] = isrc.fields;
                let mut j = src.start;
                while j < src.start + src.count {
                    // SAFETY: j is inside the source's list range (the host's table).
                    let ob = unsafe { pass.block(j) };
                    j += 1;
                    let bits = ob.iter_bits();
                    // SAFETY: the groups holding set bits lie inside the padded, 16-byte
                    // aligned array (bits only below the type's slot count), not written now.
                    let near = unsafe { near_lanes(ob.f32s(ox_off), groups_of(bits), x, bound) } & bits;
                    if near == 0 {
                        continue;
                    }
                    let (ox, oy, om) = (ob.f32s(ox_off), ob.f32s(oy_off), ob.f32s(om_off));
                    let oi = ob.f32s(oi_off) as *const u32;
                    for_each_lane(near, |t| {
                        let t = t as usize;
                        // SAFETY: slot t < 32 of block ob's arrays (a block of the pass):
                        // fields no method writes during this pass.
                        let (ox, oy, om) = unsafe { (*ox.add(t), *oy.add(t), *om.add(t)) };
                        // As the TypeScript method: a NaN mass compares false either way.
                        #[allow(clippy::neg_cmp_op_on_partial_ord)]
                        if !(om < m) {
                            return; // lighter bodies only (so never this one)
                        }
                        let d = dist2(x, y, ox, oy);
                        #[allow(clippy::neg_cmp_op_on_partial_ord)]
                        if !(d < threshold_sq && d <= best_d) {
                            return;
                        }
                        let h = (ob.index << SLOT_BITS) | t as u32;
                        // SAFETY: slot t < 32 of block ob's id array (a block of the pass), not written now.
                        let id = unsafe { *oi.add(t) };
                        // d < best_d, or an exact tie (then best ≠ 0: best_d is finite).
                        if d < best_d || before(id, h, best_id, best) {
                            best = h;
                            best_id = id;
                            best_d = d;
                        }
                    });
                }
            }
            if best != 0 {
                // SAFETY: slot s of this block, taking part in the pass: this lane is ours.
                unsafe { *mt.add(s) = best };
            }
        });
        i += 1;
    }
}

/// `Body.resolveMerge()`: for a body X with a target B (`mergeTarget` = B's handle) where B
/// has no target itself, successfulMerge = no other body `o` of the pass with
/// `o.mass > B.mass` and `o.mergeTarget == B` is nearer to B than X (squared f64 distances;
/// at equal distance, `o` before X in the tie order: `before`). Bodies without a target, or whose target
/// has a target, are left as they are (false, from initializeMerge).
///
/// Filter: `o.mergeTarget == B` is an exact integer test (SIMD, four lanes at a time); it is
/// part of the method's rule, so the lanes it lets through are exactly those that can make
/// X lose, and the rest of the rule is applied to them in f64.
///
/// B may be of any concrete subtype of Body: its field offsets are those of the source
/// whose blocks have B's type (both tables list the concrete types in the same order).
///
/// `f_ptr`/`n_f`: `deviceDo(Body)` with the offsets of posX, posY, mass (`Source<3>`);
/// `t_ptr`/`n_t`: the same blocks with the offset of mergeTarget (`Source<1>`); `i_ptr`/`n_i`
/// with the offset of id (`Source<1>`); `id`: the running type's id field.
///
/// # Safety
/// The kernel contract of the crate root; `merge_target` is a ref field of Body and
/// `successful_merge` a bool field of the running type.
#[no_mangle]
pub unsafe extern "C" fn collision_resolve_merge(list: u32, from: u32, to: u32, blocks: u32, block_bytes: u32, params: u32) {
    // SAFETY: kernel contract: `params` is the table the host wrote for this kernel.
    let CollisionResolveMerge {
        pos_x,
        pos_y,
        merge_target,
        successful_merge,
        id,
        bodies: Table { ptr: f_ptr, count: n_f },
        targets: Table { ptr: t_ptr, count: n_t },
        ids: Table { ptr: i_ptr, count: n_i },
    } = unsafe { CollisionResolveMerge::read(params) };
    // SAFETY: kernel contract: `list` is the pass's block list, `blocks`/`block_bytes` the
    // heap's blocks, and every list position this kernel reads names a block of the heap.
    let pass = unsafe { Pass::new(list, from, to, blocks, block_bytes) };
    let heap = pass.heap();
    // SAFETY: the host wrote these tables (n_f entries of 5 words, n_t of 3 words).
    let (fsrc, tsrc): (&[Source<3>], &[Source<1>]) = unsafe { (sources::<3>(f_ptr, n_f), sources::<1>(t_ptr, n_t)) };
    // SAFETY: the host wrote this table (n_i entries of 3 words).
    let isrc: &[Source<1>] = unsafe { sources::<1>(i_ptr, n_i) };
    let mut i = from;
    while i < to {
        // SAFETY: from <= i < to, inside the list range the host passed (kernel contract).
        let b = unsafe { pass.block(i) };
        let (px, py) = (b.f32s(pos_x), b.f32s(pos_y));
        let mt = b.f32s(merge_target) as *const u32;
        let ok = b.f32s(successful_merge) as *mut u8;
        let my_ids = b.f32s(id) as *const u32;
        for_each_lane(b.iter_bits(), |s| {
            let me = (b.index << SLOT_BITS) | s;
            let s = s as usize;
            // SAFETY: slot s < 32 of this block's field arrays, fields no method writes
            // during this pass (module doc: Writes).
            let th = unsafe { *mt.add(s) };
            if th == 0 {
                return;
            }
            // B's type, and the field offsets of B's concrete type.
            // SAFETY: B is a live Body (prepareMerge took its handle from this pass's blocks),
            // and nobody allocates or frees during this pass.
            let tb = unsafe { heap.type_of(th) };
            let type_of = |src: &Source<3>| {
                // SAFETY: src.start is inside the list range when src.count > 0; a block of
                // the pass stays allocated during it.
                unsafe { pass.block(src.start).type_id() }
            };
            let found = fsrc.iter().zip(tsrc.iter()).find(|(f, _)| f.count > 0 && type_of(f) == tb);
            let (bf, bref) = match found {
                Some(x) => x,
                // B is a Body of the pass, so one source has its type: unreachable by
                // construction (a trap, rather than a wrong answer, if that ever breaks).
                None => crate::trap(),
            };
            let [bx_off, by_off, bm_off] = bf.fields;
            let [bt_off] = bref.fields;
            // SAFETY: B's fields, at the offsets of B's type; none is written in this pass.
            let (bx, by, bm, bt) = unsafe {
                (
                    *heap.f32_at(th, bx_off),
                    *heap.f32_at(th, by_off),
                    *heap.f32_at(th, bm_off),
                    *heap.u32_at(th, bt_off),
                )
            };
            if bt != 0 {
                return; // B merges elsewhere this step
            }
            // SAFETY: slot s < 32 of this block's position and id arrays, not written in this pass.
            let (mine, my_id) = unsafe { (dist2(*px.add(s), *py.add(s), bx, by), *my_ids.add(s)) };
            let mut won = true;
            for ((fs, ts), is) in fsrc.iter().zip(tsrc.iter()).zip(isrc.iter()) {
                if !won {
                    break;
                }
                let ([ox_off, oy_off, om_off], [ot_off], [oi_off]) = (fs.fields, ts.fields, is.fields);
                let (start, count) = (fs.start, fs.count);
                let mut j = start;
                while won && j < start + count {
                    // SAFETY: j is inside the source's list range (the host's table).
                    let ob = unsafe { pass.block(j) };
                    j += 1;
                    let bits = ob.iter_bits();
                    // SAFETY: the groups holding set bits lie inside the padded, 16-byte
                    // aligned array (bits only below the type's slot count), not written now.
                    let wants = unsafe { eq_lanes(ob.f32s(ot_off) as *const u32, groups_of(bits), th) } & bits;
                    if wants == 0 {
                        continue;
                    }
                    let (ox, oy, om) = (ob.f32s(ox_off), ob.f32s(oy_off), ob.f32s(om_off));
                    let oi = ob.f32s(oi_off) as *const u32;
                    for_each_lane(wants, |t| {
                        let h = (ob.index << SLOT_BITS) | t;
                        let t = t as usize;
                        // SAFETY: slot t < 32 of block ob's arrays (a block of the pass):
                        // fields no method writes during this pass.
                        let (ox, oy, om) = unsafe { (*ox.add(t), *oy.add(t), *om.add(t)) };
                        // As the TypeScript method: a NaN mass compares false either way.
                        #[allow(clippy::neg_cmp_op_on_partial_ord)]
                        if !(om > bm) {
                            return;
                        }
                        let d = dist2(ox, oy, bx, by);
                        if d > mine {
                            return;
                        }
                        // An exact tie: only a body before X beats it (X itself does not: equal id and handle).
                        if d == mine {
                            // SAFETY: slot t < 32 of block ob's id array (a block of the pass), not written now.
                            let oid = unsafe { *oi.add(t) };
                            if !before(oid, h, my_id, me) {
                                return;
                            }
                        }
                        won = false;
                    });
                }
            }
            // SAFETY: slot s of this block, taking part in the pass: this lane is ours.
            unsafe { *ok.add(s) = u8::from(won) };
        });
        i += 1;
    }
}
