import type { App, AppParams } from '../app.js';
import { readPgmHeader } from '../pgm.js';
import { adoptGrid, CLASSES, DEFAULTS, digest, gridSize, init, picture, startFromParams, step } from './gol.js';
import { Agent } from './model.js';

/** Grid cells the parameters describe; undefined when they cannot be read (init reports why). */
function cellsOf(p: AppParams): number | undefined {
  if (p['input'] !== undefined) {
    try {
      const h = readPgmHeader(String(p['input']));
      return h.width * h.height;
    } catch {
      return undefined;
    }
  }
  return Number(p['width'] ?? DEFAULTS.width) * Number(p['height'] ?? DEFAULTS.height);
}

const app: App = {
  name: 'game-of-life',
  summary: "Conway's game of life in O(live cells) per step: Alive and Candidate agents on a grid of Cells",
  classes: CLASSES,
  flags: [
    { name: 'input', type: 'path', description: 'start from a PGM image (P2 or P5), pixel value 0 = alive' },
    { name: 'width', type: 'int', description: `random start: grid width (default ${DEFAULTS.width} without --input)` },
    { name: 'height', type: 'int', description: `random start: grid height (default ${DEFAULTS.height} without --input)` },
    { name: 'density', type: 'float', description: 'random start: probability that a cell starts alive', default: DEFAULTS.density },
  ],
  iterations: DEFAULTS.iterations,
  // Per grid cell: a Cell (5.5 bytes in its block) and at most one agent (≤ 8 bytes),
  // doubled for blocks left partly empty by deletions.
  heapFor: (p) => (16 << 20) + Math.ceil((cellsOf(p) ?? 1 << 22) * 24),
  init: (rt, p, seed) => init(rt, startFromParams(p, seed)),
  step: (rt) => step(rt),
  digest,
  saveState: (rt) => gridSize(rt),
  restoreState: (rt, saved) => adoptGrid(rt, Number(saved['width']), Number(saved['height'])),
  picture,
  // Cells are ranked by handle (apps/grid.ts) and never deleted: only the agents move.
  defrag: { classes: [Agent], results: 'exact' },
  reorder: { classes: [Agent], by: 'cellId' }, // each Alive and Candidate in the order of its cell
  // Agents created on several threads get handles in any order: --check matches them by their cell.
  matchKeys: { Alive: 'cellId', Candidate: 'cellId' },
};
export default app;
