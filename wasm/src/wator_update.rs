//! Kernels of apps/wa-tor/model.ts's update passes, `Fish.update` and `Shark.update`: the
//! passes that create agents (a child in the cell left behind) and delete them (a shark
//! that starved, a fish eaten). Declared in apps/wa-tor/kernels.ts; the other four passes
//! are in wator.rs.
//!
//! Every export takes the fixed kernel arguments `(list, from, to, blocks, block_bytes)` of
//! the crate root's kernel contract, then the parameter table of its spec; it creates and
//! deletes through the allocator core on the calling thread's state, warp by warp
//! (objects.rs `for_each_warp`: the executor contract), and returns 0 or, after an
//! allocator error, the failing lane's handle (runtime/kernels.ts, "Allocating kernels").
//!
//! Exactness: integers only, the same reads, draws, creations, writes and deletions as the
//! methods in the same order, lane by lane in the executor's order, so the heap after a
//! pass is byte-identical to the TypeScript pass's. A child's stream is seeded as
//! apps/wa-tor/stream.ts `seedAgentStream` (splitmix32), its seed the parent's next draw.
//!
//! Who writes what (model.ts): an agent writes its own fields, the cell it leaves and the
//! cell it was granted (only it enters that cell), and creates at most one child, on the
//! cell it left; a shark deletes at most the fish on the cell it was granted.
use crate::blocks::{Heap, Pass};
use crate::objects::{for_each_warp, Objects, Status};
use crate::params::{Table, WatorFishUpdate, WatorSharkUpdate};
use crate::wator::next;

/// An agent spawns when its egg timer is above this (SPAWN_THRESHOLD).
const SPAWN_THRESHOLD: u32 = 4;
/// Energy a shark gains by eating a fish (ENERGY_BOOST).
const ENERGY_BOOST: u32 = 4;
/// Energy of a new shark (ENERGY_START).
const ENERGY_START: u32 = 2;

/// splitmix32 output number `k` (k ≥ 1) from counter `s` (stream.ts `splitmix`).
#[inline(always)]
fn splitmix(s: u32, k: u32) -> u32 {
    let mut z = s.wrapping_add(0x9e37_79b9u32.wrapping_mul(k));
    z = (z ^ (z >> 16)).wrapping_mul(0x85eb_ca6b);
    z = (z ^ (z >> 13)).wrapping_mul(0xc2b2_ae35);
    z ^ (z >> 16)
}

/// What a kernel sets of a new agent (spawnFish / spawnShark): the spec's `child*` parameters.
struct Child {
    ty: u32,
    zero: Table,
    random_state: [u32; 4],
    position: u32,
    new_position: u32,
    egg_timer: u32,
    /// A shark's `energy` (ENERGY_START), or None for a fish.
    energy: Option<u32>,
}

/// `spawnFish` / `spawnShark`: a new agent on `cell` whose stream is seeded from `seed`,
/// linked from the cell.
///
/// # Safety
/// `child` holds the spec's offsets, type id and zero table of one concrete agent class;
/// `cell` is a live Cell with `agent` at offset `cell_agent`.
#[inline(always)]
unsafe fn spawn(objects: &Objects, heap: Heap, child: &Child, cell: u32, cell_agent: u32, seed: u32) -> Status {
    // SAFETY: forwarded.
    let a = unsafe { objects.create(child.ty, child.zero) }?;
    // SAFETY: `a` is the new object, of type child.ty; `cell` a live Cell.
    unsafe {
        if let Some(off) = child.energy {
            *heap.u32_at(a, off) = ENERGY_START;
        }
        *heap.u32_at(a, child.egg_timer) = seed % SPAWN_THRESHOLD;
        *heap.u32_at(a, child.position) = cell;
        *heap.u32_at(a, child.new_position) = cell;
        let mut k = 0;
        while k < 4 {
            *heap.u32_at(a, child.random_state[k]) = splitmix(seed, k as u32 + 1);
            k += 1;
        }
        *heap.u32_at(cell, cell_agent) = a;
    }
    Ok(())
}

/// `Fish.update()`: a fish granted another cell moves there (`Agent.move`) and, when its
/// egg timer is past the threshold, leaves a child on the cell it left and resets the timer.
///
/// # Safety
/// The kernel contract of the crate root; the table is the spec's, `allocator` the calling
/// thread's state.
#[no_mangle]
pub unsafe extern "C" fn wator_fish_update(list: u32, from: u32, to: u32, blocks: u32, block_bytes: u32, params: u32) -> u32 {
    // SAFETY: kernel contract: `params` is the table the host wrote for this kernel.
    let p = unsafe { WatorFishUpdate::read(params) };
    let heap = Heap::new(blocks, block_bytes);
    let child = Child {
        ty: p.child_type,
        zero: p.child_zero,
        random_state: p.child_random_state,
        position: p.child_position,
        new_position: p.child_new_position,
        egg_timer: p.child_egg_timer,
        energy: None,
    };
    // SAFETY: kernel contract.
    let pass = unsafe { Pass::new(list, from, to, blocks, block_bytes) };
    // SAFETY: the calling thread's state.
    let objects = unsafe { Objects::new(p.allocator, heap) };
    // SAFETY: kernel contract; every lane is a live Fish on a live Cell, granted a live Cell.
    unsafe {
        for_each_warp(&pass, from, to, &objects, |h| -> Status {
            let here = *heap.u32_at(h, p.position);
            let there = *heap.u32_at(h, p.new_position);
            if here == there {
                return Ok(());
            }
            *heap.u32_at(here, p.cell_agent) = 0;
            *heap.u32_at(there, p.cell_agent) = h;
            *heap.u32_at(h, p.position) = there;
            let egg = heap.u32_at(h, p.egg_timer);
            if *egg > SPAWN_THRESHOLD {
                let seed = next(heap, h, &p.random_state);
                spawn(&objects, heap, &child, here, p.cell_agent, seed)?;
                *egg = 0;
            }
            Ok(())
        })
    }
}

/// `Shark.update()`: a shark without energy leaves its cell and is deleted; one granted
/// another cell eats the fish there (energy + ENERGY_BOOST, the fish deleted), moves, and
/// when its egg timer is past the threshold leaves a child on the cell it left.
///
/// # Safety
/// As [`wator_fish_update`].
#[no_mangle]
pub unsafe extern "C" fn wator_shark_update(list: u32, from: u32, to: u32, blocks: u32, block_bytes: u32, params: u32) -> u32 {
    // SAFETY: kernel contract: `params` is the table the host wrote for this kernel.
    let p = unsafe { WatorSharkUpdate::read(params) };
    let heap = Heap::new(blocks, block_bytes);
    let child = Child {
        ty: p.child_type,
        zero: p.child_zero,
        random_state: p.child_random_state,
        position: p.child_position,
        new_position: p.child_new_position,
        egg_timer: p.child_egg_timer,
        energy: Some(p.child_energy),
    };
    // SAFETY: kernel contract.
    let pass = unsafe { Pass::new(list, from, to, blocks, block_bytes) };
    // SAFETY: the calling thread's state.
    let objects = unsafe { Objects::new(p.allocator, heap) };
    // SAFETY: kernel contract; every lane is a live Shark on a live Cell, granted a live
    // Cell; a cell's agent is live.
    unsafe {
        for_each_warp(&pass, from, to, &objects, |h| -> Status {
            let here = *heap.u32_at(h, p.position);
            let energy = heap.u32_at(h, p.energy);
            if *energy == 0 {
                *heap.u32_at(here, p.cell_agent) = 0;
                return objects.destroy(h);
            }
            let there = *heap.u32_at(h, p.new_position);
            if here == there {
                return Ok(());
            }
            let prey = *heap.u32_at(there, p.cell_agent);
            if prey != 0 && heap.type_of(prey) == p.fish_type {
                *energy = (*energy).wrapping_add(ENERGY_BOOST);
                objects.destroy(prey)?; // the move below overwrites the cell's agent
            }
            *heap.u32_at(here, p.cell_agent) = 0;
            *heap.u32_at(there, p.cell_agent) = h;
            *heap.u32_at(h, p.position) = there;
            let egg = heap.u32_at(h, p.egg_timer);
            if *egg > SPAWN_THRESHOLD {
                let seed = next(heap, h, &p.random_state);
                spawn(&objects, heap, &child, here, p.cell_agent, seed)?;
                *egg = 0;
            }
            Ok(())
        })
    }
}
