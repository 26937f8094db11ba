import type { App, AppParams } from '../app.js';
import { adoptGrid, CLASSES, DEFAULTS, digest, gridSize, init, ORIGINAL, picture, startFromParams, step } from './generation.js';
import { Agent } from './model.js';

/** Grid cells the parameters describe. */
function cellsOf(p: AppParams): number {
  return Number(p['width'] ?? DEFAULTS.width) * Number(p['height'] ?? DEFAULTS.height);
}

const app: App = {
  name: 'generation',
  summary: 'Game of Life with 255 states (a Generations automaton): Alive cells age through the states before they die',
  classes: CLASSES,
  flags: [
    { name: 'width', type: 'int', description: `grid width (the original: ${ORIGINAL.width})`, default: DEFAULTS.width },
    { name: 'height', type: 'int', description: `grid height (the original: ${ORIGINAL.height})`, default: DEFAULTS.height },
    {
      name: 'cross',
      type: 'int',
      description: `start: the original's crosses with arms of N cells on two lattices, spacing 2.1·N (default ${DEFAULTS.cross})`,
    },
    { name: 'density', type: 'float', description: 'start: a random field instead, each cell alive with this probability' },
  ],
  iterations: DEFAULTS.iterations,
  // Per grid cell: a Cell (5.5 bytes in its block) and at most one agent (≤ 9 bytes),
  // doubled for blocks left partly empty by deletions.
  heapFor: (p) => (16 << 20) + Math.ceil(cellsOf(p) * 32),
  init: (rt, p, seed) => init(rt, startFromParams(p, seed)),
  step: (rt) => step(rt),
  digest,
  saveState: (rt) => gridSize(rt),
  restoreState: (rt, saved) => adoptGrid(rt, Number(saved['width']), Number(saved['height'])),
  picture,
  // Cells are ranked by handle (apps/grid.ts) and never deleted: only the agents move.
  defrag: { classes: [Agent], results: 'exact' },
  // Agents created on several threads get handles in any order: --check matches them by their cell.
  matchKeys: { Alive: 'cellId', Candidate: 'cellId' },
};
export default app;
