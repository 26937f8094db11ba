import type { App } from '../app.js';
import { adoptGrid, CLASSES, DEFAULTS, digest, gridSize, HEAP_BASE, HEAP_PER_CELL, init, picture, step } from './sugarscape.js';
import { Agent } from './model.js';

const app: App = {
  name: 'sugarscape',
  summary: 'Agents move to the richest free cell, harvest sugar, age, starve and mate on a grid of growing, diffusing sugar',
  classes: CLASSES,
  flags: [
    { name: 'width', type: 'int', description: 'grid width in cells, as the original', default: DEFAULTS.width },
    { name: 'height', type: 'int', description: 'grid height in cells, as the original', default: DEFAULTS.height },
  ],
  iterations: DEFAULTS.iterations,
  // The CLI refuses sizes whose heap exceeds the largest; init() checks the grid itself.
  heapFor: (p) => HEAP_BASE + Math.ceil(Number(p['width'] ?? DEFAULTS.width) * Number(p['height'] ?? DEFAULTS.height) * HEAP_PER_CELL),
  init: (rt, p, seed) => init(rt, p, seed),
  step: (rt) => step(rt),
  digest,
  saveState: (rt) => gridSize(rt),
  restoreState: (rt, saved) => adoptGrid(rt, Number(saved['width']), Number(saved['height'])),
  picture,
  // Cells are ranked by handle (apps/grid.ts) and never deleted: only the agents move.
  defrag: { classes: [Agent], results: 'exact' },
  // Agents created on several threads get handles in any order: --check matches them by their cell.
  matchKeys: { Male: 'cell', Female: 'cell' },
};
export default app;
