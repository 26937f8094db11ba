//! Kernels of apps/game-of-life/model.ts, all five passes of a step: `Candidate.prepare`,
//! `Alive.prepare`, `Candidate.update`, `Alive.update`, `Alive.createCandidates`. Declared
//! in apps/game-of-life/kernels.ts.
//!
//! Every export takes the fixed kernel arguments `(list, from, to, blocks, block_bytes)` of
//! the crate root's kernel contract, then the parameter table of its spec. The allocating
//! ones (update, createCandidates) create and delete agents through the allocator core on
//! the calling thread's state, warp by warp (objects.rs `for_each_warp`: the executor
//! contract), and return 0 or, after an allocator error, the failing lane's handle
//! (runtime/kernels.ts, "Allocating kernels").
//!
//! Exactness: integers only, the same rules, reads, creations, writes and deletions as the
//! methods, in the same order, lane by lane in the executor's order (lowest slot first), so
//! the heap after a pass is byte-identical to the TypeScript pass's.
//!
//! Cells: cell i is the Cell with the i-th smallest handle (apps/grid.ts), looked up in the
//! pass's `ranks` table of Cell. Fields: `cellId` i32, `action` i8, `isNew` bool (u8 0/1),
//! `Cell.agent` a u32 handle (0 = null), `Cell.state` u8 (CELL_*).
//!
//! Who writes what (model.ts): an agent writes its own fields and its own cell; in
//! createCandidates a new Alive writes the empty cells it is the designated creator of.
use crate::blocks::{for_each_lane, Heap, Pass};
use crate::layout::SLOT_BITS;
use crate::objects::{for_each_warp, Objects, Ranks, Status};
use crate::params::{GolAliveCreateCandidates, GolAlivePrepare, GolAliveUpdate, GolCandidatePrepare, GolCandidateUpdate, Table};
use core::num::NonZeroU32;

const ACTION_NONE: u8 = 0;
const ACTION_DIE: u8 = 1;
const ACTION_SPAWN: u8 = 2;

const CELL_EMPTY: u8 = 0;
const CELL_CANDIDATE: u8 = 1;
const CELL_ALIVE: u8 = 2;
const CELL_NEW: u8 = 3;

/// The cells of the grid: handle by id, and the fields of Cell the kernels use.
#[derive(Clone, Copy)]
struct Grid {
    heap: Heap,
    ranks: Ranks,
    state: u32,
    width: i32,
    height: i32,
}

/// (x, y) of cell `id` (x = id mod width, y = ⌊id / width⌋: apps/grid.ts); `width` ≥ 1.
#[inline(always)]
fn xy(id: i32, width: i32) -> (i32, i32) {
    // SAFETY: a grid is at least 1 × 1 (gol.ts checkSize); the `max` keeps the division
    // free of a panic path.
    let w = unsafe { NonZeroU32::new_unchecked((width as u32).max(1)) };
    ((id as u32 % w) as i32, (id as u32 / w) as i32)
}

impl Grid {
    /// The handle of cell `id`.
    ///
    /// # Safety
    /// `id` is a cell id of the grid.
    #[inline(always)]
    unsafe fn cell(&self, id: i32) -> u32 {
        // SAFETY: forwarded.
        unsafe { self.ranks.handle(id as u32) }
    }

    /// `Cell.state` of cell `id`.
    ///
    /// # Safety
    /// `id` is a cell id of the grid.
    #[inline(always)]
    unsafe fn state_of(&self, id: i32) -> *mut u8 {
        // SAFETY: forwarded; a Cell's state array lies in its block.
        unsafe { self.heap.u8_at(self.cell(id), self.state) }
    }

    /// `Agent.aliveNeighbours`: live cells among the (up to) 8 neighbours of cell `id`,
    /// counted up to 4, in the method's order (rows, then columns).
    ///
    /// # Safety
    /// `id` is a cell id of the grid.
    #[inline(always)]
    unsafe fn alive_neighbours(&self, id: i32) -> u32 {
        let w = self.width;
        let (x, y) = xy(id, w);
        let x0 = if x > 0 { x - 1 } else { 0 };
        let x1 = if x < w - 1 { x + 1 } else { x };
        let y0 = if y > 0 { y - 1 } else { 0 };
        let y1 = if y < self.height - 1 { y + 1 } else { y };
        let mut n = 0;
        let mut ny = y0;
        while ny <= y1 {
            let mut c = ny * w + x0;
            let end = ny * w + x1;
            while c <= end {
                // SAFETY: c is a cell of the grid (clamped to it).
                if c != id && unsafe { *self.state_of(c) } >= CELL_ALIVE {
                    n += 1;
                    if n > 3 {
                        return n;
                    }
                }
                c += 1;
            }
            ny += 1;
        }
        n
    }

    /// `Alive.isCreatorOf`: whether cell `me` holds the first new Alive around cell (x, y)
    /// in scan order (dx, then dy). Some new Alive is next to (x, y): the caller's.
    ///
    /// # Safety
    /// (x, y) lies in the grid.
    #[inline(always)]
    unsafe fn is_creator_of(&self, me: i32, x: i32, y: i32) -> bool {
        let mut dx = -1;
        while dx <= 1 {
            let nx = x + dx;
            if nx >= 0 && nx < self.width {
                let mut dy = -1;
                while dy <= 1 {
                    let ny = y + dy;
                    if ny >= 0 && ny < self.height {
                        let c = ny * self.width + nx;
                        // SAFETY: c is a cell of the grid.
                        if unsafe { *self.state_of(c) } == CELL_NEW {
                            return c == me;
                        }
                    }
                    dy += 1;
                }
            }
            dx += 1;
        }
        false // unreachable (the method throws): the caller is a new Alive next to (x, y)
    }
}

/// The lanes of blocks [from, to), without warps (the passes that do not allocate).
///
/// # Safety
/// The kernel contract of the crate root for (list, from, to) of `pass`.
#[inline(always)]
unsafe fn for_each_object(pass: &Pass, from: u32, to: u32, mut f: impl FnMut(u32)) {
    for i in from..to {
        // SAFETY: from <= i < to, inside the list range.
        let b = unsafe { pass.block(i) };
        let hbase = b.index << SLOT_BITS;
        for_each_lane(b.iter_bits(), |s| f(hbase | s));
    }
}

/// `Candidate.prepare()`: exactly 3 live neighbours → spawn; none → die.
///
/// # Safety
/// The kernel contract of the crate root; the table is the spec's.
#[no_mangle]
pub unsafe extern "C" fn gol_candidate_prepare(list: u32, from: u32, to: u32, blocks: u32, block_bytes: u32, params: u32) {
    // SAFETY: kernel contract: `params` is the table the host wrote for this kernel.
    let p = unsafe { GolCandidatePrepare::read(params) };
    let heap = Heap::new(blocks, block_bytes);
    let grid = Grid {
        heap,
        // SAFETY: the host's ranks table of Cell for this pass.
        ranks: unsafe { Ranks::new(p.cells, list) },
        state: p.cell_state,
        width: p.width,
        height: p.height,
    };
    // SAFETY: kernel contract.
    let pass = unsafe { Pass::new(list, from, to, blocks, block_bytes) };
    // SAFETY: kernel contract; every lane is a live Candidate on a cell of the grid.
    unsafe {
        for_each_object(&pass, from, to, |h| {
            let n = grid.alive_neighbours(*heap.u32_at(h, p.cell_id) as i32);
            if n == 3 {
                *heap.u8_at(h, p.action) = ACTION_SPAWN;
            } else if n == 0 {
                *heap.u8_at(h, p.action) = ACTION_DIE;
            }
        });
    }
}

/// `Alive.prepare()`: a new Alive is new no more (its cell CELL_NEW → CELL_ALIVE); fewer
/// than 2 or more than 3 live neighbours → die.
///
/// # Safety
/// The kernel contract of the crate root; the table is the spec's.
#[no_mangle]
pub unsafe extern "C" fn gol_alive_prepare(list: u32, from: u32, to: u32, blocks: u32, block_bytes: u32, params: u32) {
    // SAFETY: kernel contract: `params` is the table the host wrote for this kernel.
    let p = unsafe { GolAlivePrepare::read(params) };
    let heap = Heap::new(blocks, block_bytes);
    let grid = Grid {
        heap,
        // SAFETY: the host's ranks table of Cell for this pass.
        ranks: unsafe { Ranks::new(p.cells, list) },
        state: p.cell_state,
        width: p.width,
        height: p.height,
    };
    // SAFETY: kernel contract.
    let pass = unsafe { Pass::new(list, from, to, blocks, block_bytes) };
    // SAFETY: kernel contract; every lane is a live Alive on a cell of the grid.
    unsafe {
        for_each_object(&pass, from, to, |h| {
            let id = *heap.u32_at(h, p.cell_id) as i32;
            let new = heap.u8_at(h, p.is_new);
            if *new != 0 {
                *new = 0;
                *grid.state_of(id) = CELL_ALIVE;
            }
            let n = grid.alive_neighbours(id);
            if !(2..=3).contains(&n) {
                *heap.u8_at(h, p.action) = ACTION_DIE;
            }
        });
    }
}

/// A new agent in cell `id` (`newAlive` / `newCandidate`): created and zeroed, its `cellId`
/// set, and `isNew` when `is_new` is an offset (an Alive); the caller links it.
///
/// # Safety
/// `ty`, `zero`, `cell_id`, `is_new` are the spec's for the created class.
#[inline(always)]
unsafe fn new_agent(objects: &Objects, heap: Heap, ty: u32, zero: Table, cell_id: u32, is_new: Option<u32>, id: i32) -> Result<u32, u32> {
    // SAFETY: forwarded.
    let a = unsafe { objects.create(ty, zero) }?;
    // SAFETY: a is the new object, of type ty.
    unsafe {
        *heap.u32_at(a, cell_id) = id as u32;
        if let Some(off) = is_new {
            *heap.u8_at(a, off) = 1;
        }
    }
    Ok(a)
}

/// `Candidate.update()`: spawn → a new Alive in its cell (CELL_NEW); die → the cell empty;
/// either way the Candidate deletes itself. Returns 0, or the failing lane's handle (objects.rs).
///
/// # Safety
/// The kernel contract of the crate root; the table is the spec's, `allocator` the calling
/// thread's state.
#[no_mangle]
pub unsafe extern "C" fn gol_candidate_update(list: u32, from: u32, to: u32, blocks: u32, block_bytes: u32, params: u32) -> u32 {
    // SAFETY: kernel contract: `params` is the table the host wrote for this kernel.
    let p = unsafe { GolCandidateUpdate::read(params) };
    let heap = Heap::new(blocks, block_bytes);
    // SAFETY: the host's ranks table of Cell for this pass.
    let ranks = unsafe { Ranks::new(p.cells, list) };
    // SAFETY: kernel contract.
    let pass = unsafe { Pass::new(list, from, to, blocks, block_bytes) };
    // SAFETY: the calling thread's state.
    let objects = unsafe { Objects::new(p.allocator, heap) };
    // SAFETY: kernel contract; every lane is a live Candidate on a cell of the grid.
    unsafe {
        for_each_warp(&pass, from, to, &objects, |h| -> Status {
            let action = *heap.u8_at(h, p.action);
            if action == ACTION_NONE {
                return Ok(());
            }
            let id = *heap.u32_at(h, p.cell_id) as i32;
            let cell = ranks.handle(id as u32);
            if action == ACTION_SPAWN {
                let a = new_agent(
                    &objects,
                    heap,
                    p.alive_type,
                    p.alive_zero,
                    p.alive_cell_id,
                    Some(p.alive_is_new),
                    id,
                )?;
                *heap.u32_at(cell, p.cell_agent) = a;
                *heap.u8_at(cell, p.cell_state) = CELL_NEW;
            } else {
                *heap.u32_at(cell, p.cell_agent) = 0;
                *heap.u8_at(cell, p.cell_state) = CELL_EMPTY;
            }
            objects.destroy(h)
        })
    }
}

/// `Alive.update()`: a dying Alive that is not new becomes a Candidate (a new Candidate in
/// its cell, CELL_CANDIDATE) and deletes itself. Returns 0, or the failing lane's handle (objects.rs).
///
/// # Safety
/// As [`gol_candidate_update`].
#[no_mangle]
pub unsafe extern "C" fn gol_alive_update(list: u32, from: u32, to: u32, blocks: u32, block_bytes: u32, params: u32) -> u32 {
    // SAFETY: kernel contract: `params` is the table the host wrote for this kernel.
    let p = unsafe { GolAliveUpdate::read(params) };
    let heap = Heap::new(blocks, block_bytes);
    // SAFETY: the host's ranks table of Cell for this pass.
    let ranks = unsafe { Ranks::new(p.cells, list) };
    // SAFETY: kernel contract.
    let pass = unsafe { Pass::new(list, from, to, blocks, block_bytes) };
    // SAFETY: the calling thread's state.
    let objects = unsafe { Objects::new(p.allocator, heap) };
    // SAFETY: kernel contract; every lane is a live Alive on a cell of the grid.
    unsafe {
        for_each_warp(&pass, from, to, &objects, |h| -> Status {
            if *heap.u8_at(h, p.is_new) != 0 || *heap.u8_at(h, p.action) != ACTION_DIE {
                return Ok(());
            }
            let id = *heap.u32_at(h, p.cell_id) as i32;
            let cell = ranks.handle(id as u32);
            let c = new_agent(&objects, heap, p.candidate_type, p.candidate_zero, p.candidate_cell_id, None, id)?;
            *heap.u32_at(cell, p.cell_agent) = c;
            *heap.u8_at(cell, p.cell_state) = CELL_CANDIDATE;
            objects.destroy(h)
        })
    }
}

/// `Alive.createCandidates()`: a new Alive puts a new Candidate into each empty cell around
/// it (dx, then dy, from −1 to 1) that it is the designated creator of. Returns 0, or the
/// failing lane's handle (objects.rs).
///
/// # Safety
/// As [`gol_candidate_update`].
#[no_mangle]
pub unsafe extern "C" fn gol_alive_create_candidates(list: u32, from: u32, to: u32, blocks: u32, block_bytes: u32, params: u32) -> u32 {
    // SAFETY: kernel contract: `params` is the table the host wrote for this kernel.
    let p = unsafe { GolAliveCreateCandidates::read(params) };
    let heap = Heap::new(blocks, block_bytes);
    let grid = Grid {
        heap,
        // SAFETY: the host's ranks table of Cell for this pass.
        ranks: unsafe { Ranks::new(p.cells, list) },
        state: p.cell_state,
        width: p.width,
        height: p.height,
    };
    // SAFETY: kernel contract.
    let pass = unsafe { Pass::new(list, from, to, blocks, block_bytes) };
    // SAFETY: the calling thread's state.
    let objects = unsafe { Objects::new(p.allocator, heap) };
    // SAFETY: kernel contract; every lane is a live Alive on a cell of the grid.
    unsafe {
        for_each_warp(&pass, from, to, &objects, |h| -> Status {
            if *heap.u8_at(h, p.is_new) == 0 {
                return Ok(());
            }
            let id = *heap.u32_at(h, p.cell_id) as i32;
            let (x, y) = xy(id, p.width);
            let mut dx = -1;
            while dx <= 1 {
                let nx = x + dx;
                if nx >= 0 && nx < p.width {
                    let mut dy = -1;
                    while dy <= 1 {
                        let ny = y + dy;
                        if ny >= 0 && ny < p.height {
                            let target = ny * p.width + nx;
                            let cell = grid.cell(target);
                            let state = heap.u8_at(cell, p.cell_state);
                            if *state == CELL_EMPTY && grid.is_creator_of(id, nx, ny) {
                                let c = new_agent(
                                    &objects,
                                    heap,
                                    p.candidate_type,
                                    p.candidate_zero,
                                    p.candidate_cell_id,
                                    None,
                                    target,
                                )?;
                                *heap.u32_at(cell, p.cell_agent) = c;
                                *state = CELL_CANDIDATE;
                            }
                        }
                        dy += 1;
                    }
                }
                dx += 1;
            }
            Ok(())
        })
    }
}
