//! Kernels of apps/nbody/body.ts: `Body.computeForce` and `Body.update`.
//!
//! Both take the fixed kernel arguments `(list, from, to, blocks, block_bytes)`: run the
//! method on every block at positions `from .. to` of the block list, each block as one
//! virtual warp whose lanes are the set bits of its iteration bitmap (runtime/thread.ts
//! `runBlocks`). Then, in the order of the registry entry (apps/nbody/kernels.ts), the byte
//! offsets of the fields in a block of the concrete type, and the method's arguments.
//!
//! Writes: a lane whose iteration bit is clear is never written (`lanes::store_lanes`: a group
//! of four lanes that all take part is one v128 store; in a partial group only the lanes
//! taking part are stored, one by one).
use crate::blocks::{for_each_group, for_each_lane, sources, Block, Pass};
use crate::lanes::{store_lanes, LaneMask, Mask, Vector, D4, F4};
use crate::params::{NbodyComputeForce, NbodyUpdate, Table};

/// `Body.update(dt)`:
///   velX += forceX·dt/mass; velY += forceY·dt/mass; posX += velX·dt; posY += velY·dt;
///   velX = -velX if posX ∉ [-1, 1]; the same for y.
///
/// Exact: computed in f64 and rounded to f32 at each field store, as the TypeScript method
/// (JavaScript numbers are f64; an f32 field store is `Math.fround`). So the bounce test sees
/// the same positions, and the result is bit-identical to the TypeScript backend.
///
/// # Safety
/// The kernel contract of the crate root; the offsets are f32 fields of the concrete type.
#[no_mangle]
pub unsafe extern "C" fn nbody_update(list: u32, from: u32, to: u32, blocks: u32, block_bytes: u32, params: u32) {
    // SAFETY: kernel contract: `params` is the table the host wrote for this kernel.
    let NbodyUpdate {
        pos_x,
        pos_y,
        vel_x,
        vel_y,
        force_x,
        force_y,
        mass,
        dt,
    } = unsafe { NbodyUpdate::read(params) };
    // SAFETY: kernel contract: `list` is the pass's block list, `blocks`/`block_bytes` the
    // heap's blocks, and every list position this kernel reads names a block of the heap.
    let pass = unsafe { Pass::new(list, from, to, blocks, block_bytes) };
    let dtv = D4::splat(dt);
    let (lo, hi) = (F4::splat(-1.0), F4::splat(1.0));
    let mut i = from;
    while i < to {
        // SAFETY: from <= i < to, inside the list range the host passed (kernel contract).
        let b = unsafe { pass.block(i) };
        let (px, py, vx, vy, fx, fy, m) = (
            b.f32s(pos_x),
            b.f32s(pos_y),
            b.f32s(vel_x),
            b.f32s(vel_y),
            b.f32s(force_x),
            b.f32s(force_y),
            b.f32s(mass),
        );
        for_each_group(b.iter_bits(), |k, nibble| {
            let o = 4 * k;
            // SAFETY: lanes o..o+4 of this block's padded, 16-byte aligned field arrays
            // (blocks.rs); only the lanes of `nibble`, which take part in the pass and are
            // this call's, are written (store_lanes), and no other lane's method writes them.
            unsafe {
                let mw = F4::load(m.add(o)).widen();
                let vx1 = (F4::load(vx.add(o)).widen() + F4::load(fx.add(o)).widen() * dtv / mw).narrow();
                let vy1 = (F4::load(vy.add(o)).widen() + F4::load(fy.add(o)).widen() * dtv / mw).narrow();
                let px1 = (F4::load(px.add(o)).widen() + vx1.widen() * dtv).narrow();
                let py1 = (F4::load(py.add(o)).widen() + vy1.widen() * dtv).narrow();
                let vx2 = F4::select(px1.lt(lo).or(px1.gt(hi)), -vx1, vx1);
                let vy2 = F4::select(py1.lt(lo).or(py1.gt(hi)), -vy1, vy1);
                store_lanes(vx.add(o), vx2, nibble);
                store_lanes(vy.add(o), vy2, nibble);
                store_lanes(px.add(o), px1, nibble);
                store_lanes(py.add(o), py1, nibble);
            }
        });
        i += 1;
    }
}

/// `Body.computeForce()`: force = Σ over every other Body `o` that takes part in the pass
/// (the method's `deviceDo(Body)`, subclasses included) of
///     G·m·o.mass / (d² + DAMPENING) · (o.pos − pos) / d,   d = |o.pos − pos|.
///
/// f32 throughout, four other bodies per step, four partial sums per component added as
/// `(l0 + l1) + (l2 + l3)` at the end. The TypeScript method sums in f64, so the two agree
/// within the tolerance stated in apps/nbody/kernels.ts, not exactly. The pair term is
/// rearranged to one division: t = G·m·o.mass / ((d² + D)·d), force += t·(o.pos − pos).
///
/// `sources`/`n_sources`: the `deviceDo(Body)` blocks, one `Source<3>` per concrete type
/// (offsets of posX, posY, mass in that type's blocks).
///
/// # Safety
/// The kernel contract of the crate root.
#[no_mangle]
pub unsafe extern "C" fn nbody_compute_force(list: u32, from: u32, to: u32, blocks: u32, block_bytes: u32, params: u32) {
    // SAFETY: kernel contract: `params` is the table the host wrote for this kernel.
    let NbodyComputeForce {
        pos_x,
        pos_y,
        force_x,
        force_y,
        mass,
        sources: Table {
            ptr: sources_ptr,
            count: n_sources,
        },
        g,
        dampening,
    } = unsafe { NbodyComputeForce::read(params) };
    // SAFETY: kernel contract: `list` is the pass's block list, `blocks`/`block_bytes` the
    // heap's blocks, and every list position this kernel reads names a block of the heap.
    let pass = unsafe { Pass::new(list, from, to, blocks, block_bytes) };
    // SAFETY: the host wrote n_sources entries of 2 + 3 words at sources_ptr.
    let others = unsafe { sources::<3>(sources_ptr, n_sources) };
    let damp = F4::splat(dampening);
    let mut i = from;
    while i < to {
        // SAFETY: from <= i < to, inside the list range the host passed (kernel contract).
        let b = unsafe { pass.block(i) };
        let (px, py, fx, fy, m) = (b.f32s(pos_x), b.f32s(pos_y), b.f32s(force_x), b.f32s(force_y), b.f32s(mass));
        for_each_lane(b.iter_bits(), |s| {
            let s = s as usize;
            // SAFETY: slot s < 32 of this block's field arrays; positions and masses are
            // not written during this pass (computeForce writes forces only).
            let (x, y, gm) = unsafe { (F4::splat(*px.add(s)), F4::splat(*py.add(s)), F4::splat(g * *m.add(s))) };
            let mut sum_x = F4::zero();
            let mut sum_y = F4::zero();
            for src in others {
                let [ox_off, oy_off, om_off] = src.fields;
                let mut j = src.start;
                let end = src.start + src.count;
                while j < end {
                    // SAFETY: j is inside the source's list range (the host's table).
                    let ob: Block = unsafe { pass.block(j) };
                    let mut bits = ob.iter_bits();
                    if ob.index == b.index {
                        bits &= !(1u32 << s); // not the body itself (the method's handle test)
                    }
                    let (ox, oy, om) = (ob.f32s(ox_off), ob.f32s(oy_off), ob.f32s(om_off));
                    // The pair terms of lanes 4k .. 4k+3 of block ob.
                    let terms = |k: usize| {
                        let o = 4 * k;
                        // SAFETY: lanes o..o+4 of block ob's padded, 16-byte aligned field
                        // arrays (o < 32), which nobody writes in this pass.
                        let (dx, dy, omass) = unsafe { (F4::load(ox.add(o)) - x, F4::load(oy.add(o)) - y, F4::load(om.add(o))) };
                        let d2 = dx * dx + dy * dy;
                        let t = gm * omass / ((d2 + damp) * d2.sqrt());
                        (t * dx, t * dy)
                    };
                    if bits == u32::MAX {
                        // A full block of 32 lanes (the common case): no masks, a counted loop.
                        let mut k = 0;
                        while k < 8 {
                            let (cx, cy) = terms(k);
                            sum_x = sum_x + cx;
                            sum_y = sum_y + cy;
                            k += 1;
                        }
                    } else {
                        for_each_group(bits, |k, nibble| {
                            let (cx, cy) = terms(k);
                            if nibble == 0xf {
                                sum_x = sum_x + cx;
                                sum_y = sum_y + cy;
                            } else {
                                // Lanes outside the bitmap hold stale or never-written data
                                // (possibly NaN): select, so that they add exactly 0.
                                let take = Mask::from_nibble(nibble);
                                sum_x = sum_x + F4::select(take, cx, F4::zero());
                                sum_y = sum_y + F4::select(take, cy, F4::zero());
                            }
                        });
                    }
                    j += 1;
                }
            }
            // SAFETY: slot s of this block, taking part in the pass: this lane is ours.
            unsafe {
                *fx.add(s) = sum_x.hsum();
                *fy.add(s) = sum_y.hsum();
            }
        });
        i += 1;
    }
}
