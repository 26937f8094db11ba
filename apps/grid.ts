/**
 * Cell ids of the grid apps (wa-tor, game-of-life): **cell i is the Cell object with
 * the i-th smallest handle**. Cell i sits at x = i mod width, y = ⌊i / width⌋.
 *
 * Why this rule: the originals index a global array `cells[]` of Cell pointers. smmo's
 * methods also run on worker threads, which share only the heap, and do-all arguments
 * are a few numbers (workers/protocol.ts), so a table made on the main thread cannot
 * be handed to them. The rank of a handle, though, is something every thread can
 * recompute from the heap alone. Each thread builds the table once per runtime, on
 * first use, and keeps it (cells are created by the app's init and never deleted, so
 * the table never changes; cellTable() checks the count to catch a violation).
 * The rule does not depend on which handles the allocator handed out, so results do not
 * depend on the number of threads.
 */
// The mechanism is the runtime's rank tables (runtime/rank-table.ts): cellTable(ctx, Cell, width ·
// height) is rankTable, resetCellTable resetRankTable — the same functions, so the method compiler
// knows them (on the GPU, generated kernels read the runner's rank table).
export { rankTable as cellTable, resetRankTable as resetCellTable } from '../runtime/index.js';
