//! Kernels of apps/wa-tor/model.ts: the four passes that neither create nor delete objects
//! (`Cell.prepare`, `Cell.decide`, `Fish.prepare`, `Shark.prepare`; the update passes,
//! which do, are in wator_update.rs). Declared in apps/wa-tor/kernels.ts.
//!
//! Every export takes the fixed kernel arguments `(list, from, to, blocks, block_bytes)` of
//! the crate root's kernel contract, then the parameters of its spec, in order. Field offsets
//! of another class than the one run (the cell an agent stands on, the agent a cell grants)
//! come from the spec's `field` parameters with `class` (runtime/kernels.ts), type ids from
//! its `typeId` parameters.
//!
//! Exactness: integers only, the same rules, draws and writes as the TypeScript methods,
//! lane by lane in the executor's order (lowest slot first), so the heap after a pass is
//! byte-identical to the TypeScript pass's. Random numbers: xoshiro128** with the four state
//! words in the object's `randomState` (apps/wa-tor/stream.ts `nextInFields`).
//!
//! Handles are `block index · 32 + slot` (runtime/layout.ts); a ref field is an SOA array of
//! u32 handles (0 = null), a bool field an SOA array of u8 (0 or 1), a u32 field one of u32.
//!
//! Writes, as the methods (model.ts lists who writes what and why no two threads write the
//! same byte): a running lane's own fields; in `*_prepare` one request flag (a byte) of one
//! neighbouring cell, or the STAY flag of its own cell; in `wator_cell_decide` the
//! `newPosition` of the one agent the cell grants. Reads of other objects touch only fields
//! nobody writes in the same pass (`Cell.neighbors`, `Cell.agent`).
use crate::blocks::{for_each_group, for_each_lane, Heap, Pass};
use crate::lanes::{store_lanes, LaneMask, Vector, B4};
use crate::layout::SLOT_BITS;
use crate::params::{WatorCellDecide, WatorCellPrepare, WatorFishPrepare, WatorSharkPrepare};

/// The four state words of a stream: byte offsets of `randomState[0..4]` in the object's block.
type Stream = [u32; 4];

/// Next output of the stream of object `h` (xoshiro128**); advances it. `nextInFields`.
///
/// Also the update kernels' (wator_update.rs).
///
/// # Safety
/// `h` is a live object whose block has u32 arrays at the offsets of `rs`, and no other
/// thread reads or writes its stream meanwhile (it is the running lane's own object).
#[inline(always)]
pub(crate) unsafe fn next(heap: Heap, h: u32, rs: &Stream) -> u32 {
    let p = [
        heap.u32_at(h, rs[0]),
        heap.u32_at(h, rs[1]),
        heap.u32_at(h, rs[2]),
        heap.u32_at(h, rs[3]),
    ];
    // SAFETY: four aligned u32 elements of h's arrays, inside the memory, which only this
    // call reads or writes (the contract).
    unsafe {
        let a = *p[0];
        let b = *p[1];
        let c = *p[2] ^ a;
        let d = *p[3] ^ b;
        let result = b.wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        *p[0] = a ^ d;
        *p[1] = b ^ c;
        *p[2] = c ^ (b << 9);
        *p[3] = d.rotate_left(11);
        result
    }
}

/// The direction packed at position `k` of a candidate list (3 bits per direction).
#[inline(always)]
fn pick(candidates: u32, k: u32) -> u32 {
    (candidates >> (3 * k)) & 7
}

/// Offsets of the Cell fields a kernel reads or writes.
struct CellFields {
    neighbors: [u32; 4],
    agent: u32,
    request: [u32; 5],
}

const STAY: usize = 4;

/// `Cell.prepare()`: clear the five request flags.
///
/// Four lanes at a time (`lanes::store_lanes` of a `B4`): a group whose four lanes all take
/// part is cleared with one u32 store per flag; in a partial group only the lanes taking part
/// are written, byte by byte (a lane outside the pass is never written: kernel contract).
///
/// # Safety
/// The kernel contract of the crate root; `r0 .. r4` are `Cell.neighborRequest[0..5]` (bool).
#[no_mangle]
pub unsafe extern "C" fn wator_cell_prepare(list: u32, from: u32, to: u32, blocks: u32, block_bytes: u32, params: u32) {
    // SAFETY: kernel contract: `params` is the table the host wrote for this kernel.
    let WatorCellPrepare {
        requests: [r0, r1, r2, r3, r4],
    } = unsafe { WatorCellPrepare::read(params) };
    // SAFETY: kernel contract: `list` is the pass's block list, `blocks`/`block_bytes` the
    // heap's blocks, and every list position this kernel reads names a block of the heap.
    let pass = unsafe { Pass::new(list, from, to, blocks, block_bytes) };
    let req = [r0, r1, r2, r3, r4];
    for i in from..to {
        // SAFETY: from <= i < to, inside the list range the host passed (kernel contract).
        let b = unsafe { pass.block(i) };
        for_each_group(b.iter_bits(), |k, nibble| {
            for &off in req.iter() {
                // SAFETY: group k of this block's padded flag array (4-byte aligned); only the
                // lanes of the pass are written, and their flags are their own.
                unsafe { store_lanes(b.array::<u8>(off).add(4 * k), B4::splat(0), nibble) };
            }
        });
    }
}

/// `Cell.decide()`: a cell whose own agent asked to stay grants it itself; otherwise, if
/// some neighbours' agents asked for this cell, it picks one with its own stream (one draw,
/// uniform among the requesters in direction order) and sets that agent's `newPosition`.
///
/// `fish_type`: Fish's type id; `fish_new_position`, `shark_new_position`: the offset of
/// `newPosition` in Fish and in Shark blocks (an inherited field's offset differs per
/// concrete type). An agent is a Fish or a Shark (the model has no third kind), so an
/// agent whose block is not of `fish_type` is a Shark.
///
/// # Safety
/// The kernel contract of the crate root; the offsets are those of the spec.
#[no_mangle]
pub unsafe extern "C" fn wator_cell_decide(list: u32, from: u32, to: u32, blocks: u32, block_bytes: u32, params: u32) {
    // SAFETY: kernel contract: `params` is the table the host wrote for this kernel.
    let WatorCellDecide {
        random_state: [rs0, rs1, rs2, rs3],
        neighbors: [nb0, nb1, nb2, nb3],
        agent,
        requests: [r0, r1, r2, r3, r4],
        fish_type,
        fish_new_position,
        shark_new_position,
    } = unsafe { WatorCellDecide::read(params) };
    // SAFETY: kernel contract: `list` is the pass's block list, `blocks`/`block_bytes` the
    // heap's blocks, and every list position this kernel reads names a block of the heap.
    let pass = unsafe { Pass::new(list, from, to, blocks, block_bytes) };
    let heap = pass.heap();
    let rs: Stream = [rs0, rs1, rs2, rs3];
    let nb = [nb0, nb1, nb2, nb3];
    let req = [r0, r1, r2, r3];
    // `newPosition := cell` on agent `a` (always the handle read from a cell's `agent`).
    let grant = |a: u32, cell: u32| {
        // SAFETY: `a` is a live agent (Cell.agent), and in this pass nobody allocates or frees.
        let off = if unsafe { heap.type_of(a) } == fish_type {
            fish_new_position
        } else {
            shark_new_position
        };
        // SAFETY: `a` is the live agent on a cell (Cell.agent); only this cell grants it.
        unsafe { *heap.u32_at(a, off) = cell };
    };
    for i in from..to {
        // SAFETY: from <= i < to, inside the list range the host passed (kernel contract).
        let b = unsafe { pass.block(i) };
        let hbase = b.index << SLOT_BITS;
        // Most cells have no request: test four lanes at once (the OR of the five flag
        // words), then run the method on the lanes of the pass with a flag set. A lane
        // with no flag set does nothing, as in the method.
        for_each_group(b.iter_bits(), |k, nibble| {
            let flags = |off: u32| {
                // SAFETY: group k of this block's padded flag array (4-byte aligned); nobody
                // writes request flags during this pass.
                unsafe { B4::load(b.array::<u8>(off).add(4 * k)) }
            };
            let any = flags(r0).or(flags(r1)).or(flags(r2)).or(flags(r3)).or(flags(r4));
            let lanes = !any.eq(B4::splat(0)).bitmask() & nibble;
            for_each_lane(lanes, |l| {
                let h = hbase | (4 * k as u32 + l);
                // SAFETY: lane h takes part in the pass; every handle read is a live Cell or agent.
                unsafe {
                    if *heap.u8_at(h, r4) != 0 {
                        // The agent here found nowhere to go: it has priority and stays.
                        grant(*heap.u32_at(h, agent), h);
                        return;
                    }
                    let mut candidates = 0u32;
                    let mut n = 0u32;
                    for (d, &off) in req.iter().enumerate() {
                        if *heap.u8_at(h, off) != 0 {
                            candidates |= (d as u32) << (3 * n);
                            n += 1;
                        }
                    }
                    if n == 0 {
                        return;
                    }
                    let chosen = pick(candidates, next(heap, h, &rs) % n);
                    let neighbour = *heap.u32_at(h, nb[(chosen & 3) as usize]);
                    grant(*heap.u32_at(neighbour, agent), h);
                }
            });
        });
    }
}

/// The shared part of `Fish.prepare` / `Shark.prepare` (model.ts `Agent.requestMove`) for
/// agent `h` on cell `position`: stay put unless a request succeeds. Ask for a random
/// neighbouring cell holding a fish (only if `want_fish`), else for a free one, with one draw
/// from the agent's stream among the candidates in direction order; the chosen cell's flag
/// for the opposite direction is raised. With no candidate, the own cell's STAY flag.
///
/// # Safety
/// `h` is a live agent of a type with the given offsets, run by this call (its own fields and
/// stream are this call's); cells are live with `cell`'s offsets. Writes besides `h`'s own
/// fields: one request flag (a byte) of a neighbouring cell, its flag for the direction of
/// `h`'s cell, which only the agent on that cell raises, or the STAY flag of `h`'s own cell;
/// so no other agent writes those bytes in the same pass (model.ts: Who writes what).
#[inline(always)]
#[allow(clippy::too_many_arguments)] // the agent's stream, fields and the two types: all per call
unsafe fn request_move(
    heap: Heap,
    h: u32,
    rs: &Stream,
    position: u32,
    new_position: u32,
    cell: &CellFields,
    want_fish: bool,
    fish_type: u32,
) {
    // SAFETY: every handle read from a ref field names a live object of the heap (the
    // contract: `position`, `neighbors`, `agent`), so every element address is inside the
    // memory and aligned; the writes are the ones the contract allows.
    unsafe {
        let here = *heap.u32_at(h, position);
        *heap.u32_at(h, new_position) = here;
        let c = [
            *heap.u32_at(here, cell.neighbors[0]),
            *heap.u32_at(here, cell.neighbors[1]),
            *heap.u32_at(here, cell.neighbors[2]),
            *heap.u32_at(here, cell.neighbors[3]),
        ];
        let (mut fish, mut n_fish, mut free, mut n_free) = (0u32, 0u32, 0u32, 0u32);
        for (d, &ch) in c.iter().enumerate() {
            let a = *heap.u32_at(ch, cell.agent);
            if a == 0 {
                free |= (d as u32) << (3 * n_free);
                n_free += 1;
            } else if want_fish && heap.type_of(a) == fish_type {
                fish |= (d as u32) << (3 * n_fish);
                n_fish += 1;
            }
        }
        let chosen = if n_fish > 0 {
            pick(fish, next(heap, h, rs) % n_fish)
        } else if n_free > 0 {
            pick(free, next(heap, h, rs) % n_free)
        } else {
            *heap.u8_at(here, cell.request[STAY]) = 1;
            return;
        };
        // The chosen neighbour sees this agent in the opposite direction.
        *heap.u8_at(c[(chosen & 3) as usize], cell.request[((chosen + 2) & 3) as usize]) = 1;
    }
}

/// `Fish.prepare()`: `eggTimer += 1`, then ask for a free neighbouring cell (`request_move`).
///
/// Own fields: `randomState[0..4]`, `position`, `newPosition`, `eggTimer`; then the Cell
/// fields `neighbors[0..4]`, `agent`, `neighborRequest[0..5]`.
///
/// # Safety
/// The kernel contract of the crate root; the offsets are those of the spec.
#[no_mangle]
pub unsafe extern "C" fn wator_fish_prepare(list: u32, from: u32, to: u32, blocks: u32, block_bytes: u32, params: u32) {
    // SAFETY: kernel contract: `params` is the table the host wrote for this kernel.
    let WatorFishPrepare {
        random_state: [rs0, rs1, rs2, rs3],
        position,
        new_position,
        egg_timer,
        cell_neighbors: [c_nb0, c_nb1, c_nb2, c_nb3],
        cell_agent: c_agent,
        cell_requests: [c_r0, c_r1, c_r2, c_r3, c_r4],
    } = unsafe { WatorFishPrepare::read(params) };
    // SAFETY: kernel contract: `list` is the pass's block list, `blocks`/`block_bytes` the
    // heap's blocks, and every list position this kernel reads names a block of the heap.
    let pass = unsafe { Pass::new(list, from, to, blocks, block_bytes) };
    let heap = pass.heap();
    let rs: Stream = [rs0, rs1, rs2, rs3];
    let cell = CellFields {
        neighbors: [c_nb0, c_nb1, c_nb2, c_nb3],
        agent: c_agent,
        request: [c_r0, c_r1, c_r2, c_r3, c_r4],
    };
    for i in from..to {
        // SAFETY: from <= i < to, inside the list range the host passed (kernel contract).
        let b = unsafe { pass.block(i) };
        let hbase = b.index << SLOT_BITS;
        for_each_lane(b.iter_bits(), |s| {
            let h = hbase | s;
            // SAFETY: lane s takes part in the pass; offsets per the spec.
            unsafe {
                let e = heap.u32_at(h, egg_timer);
                *e = (*e).wrapping_add(1);
                request_move(heap, h, &rs, position, new_position, &cell, false, 0);
            }
        });
    }
}

/// `Shark.prepare()`: `eggTimer += 1`, `energy -= 1`; a shark with energy left asks for a
/// neighbouring cell with a fish, else a free one (`request_move`); one without does not
/// move (Shark.update removes it).
///
/// Own fields: `randomState[0..4]`, `position`, `newPosition`, `eggTimer`, `energy`; then
/// the Cell fields `neighbors[0..4]`, `agent`, `neighborRequest[0..5]`; then Fish's type id.
///
/// # Safety
/// The kernel contract of the crate root; the offsets are those of the spec.
#[no_mangle]
pub unsafe extern "C" fn wator_shark_prepare(list: u32, from: u32, to: u32, blocks: u32, block_bytes: u32, params: u32) {
    // SAFETY: kernel contract: `params` is the table the host wrote for this kernel.
    let WatorSharkPrepare {
        random_state: [rs0, rs1, rs2, rs3],
        position,
        new_position,
        egg_timer,
        energy,
        cell_neighbors: [c_nb0, c_nb1, c_nb2, c_nb3],
        cell_agent: c_agent,
        cell_requests: [c_r0, c_r1, c_r2, c_r3, c_r4],
        fish_type,
    } = unsafe { WatorSharkPrepare::read(params) };
    // SAFETY: kernel contract: `list` is the pass's block list, `blocks`/`block_bytes` the
    // heap's blocks, and every list position this kernel reads names a block of the heap.
    let pass = unsafe { Pass::new(list, from, to, blocks, block_bytes) };
    let heap = pass.heap();
    let rs: Stream = [rs0, rs1, rs2, rs3];
    let cell = CellFields {
        neighbors: [c_nb0, c_nb1, c_nb2, c_nb3],
        agent: c_agent,
        request: [c_r0, c_r1, c_r2, c_r3, c_r4],
    };
    for i in from..to {
        // SAFETY: from <= i < to, inside the list range the host passed (kernel contract).
        let b = unsafe { pass.block(i) };
        let hbase = b.index << SLOT_BITS;
        for_each_lane(b.iter_bits(), |s| {
            let h = hbase | s;
            // SAFETY: lane s takes part in the pass; offsets per the spec.
            unsafe {
                let e = heap.u32_at(h, egg_timer);
                *e = (*e).wrapping_add(1);
                let en = heap.u32_at(h, energy);
                *en = (*en).wrapping_sub(1);
                if *en != 0 {
                    request_move(heap, h, &rs, position, new_position, &cell, true, fish_type);
                }
            }
        });
    }
}
