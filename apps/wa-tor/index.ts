import type { App } from '../app.js';
import { adoptGrid, CLASSES, DEFAULTS, digest, gridSize, init, picture, step } from './wator.js';
import { Agent } from './model.js';

const app: App = {
  name: 'wa-tor',
  summary: 'predator-prey (fish and sharks) on a torus of cells; agents are created and deleted in waves',
  classes: CLASSES,
  flags: [
    { name: 'width', type: 'int', description: 'torus width in cells', default: DEFAULTS.width },
    { name: 'height', type: 'int', description: 'torus height in cells', default: DEFAULTS.height },
  ],
  iterations: DEFAULTS.iterations,
  // Per cell: a Cell (≈ 46 bytes in its block) and at most one agent (≤ 33 bytes), with
  // room for agent blocks left partly empty by deletions.
  heapFor: (p) => (16 << 20) + Math.ceil(Number(p['width']) * Number(p['height']) * 112),
  init: (rt, p, seed) => init(rt, Number(p['width']), Number(p['height']), seed),
  step: (rt) => step(rt),
  digest,
  saveState: (rt) => gridSize(rt),
  restoreState: (rt, saved) => adoptGrid(rt, Number(saved['width']), Number(saved['height'])),
  picture,
  // Cells are ranked by handle (apps/grid.ts) and never deleted: only the fish and sharks move.
  defrag: { classes: [Agent], results: 'exact' },
  reorder: { classes: [Agent], by: 'position' }, // each fish and shark after its cell
  // Agents created on several threads get handles in any order: --check matches them by their cell.
  matchKeys: { Fish: 'position', Shark: 'position' },
};
export default app;
