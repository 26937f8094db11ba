import type { App } from '../app.js';
import { adoptGrid, CLASSES, DEFAULTS, digest, gridSize, init, picture, sizeOf, step } from './sugarscape.js';

const app: App = {
  name: 'sugarscape',
  summary: 'Agents move to the richest free cell, harvest sugar, age, starve and mate on a grid of growing, diffusing sugar',
  classes: CLASSES,
  flags: [
    { name: 'width', type: 'int', description: 'grid width in cells, as the original', default: DEFAULTS.width },
    { name: 'height', type: 'int', description: 'grid height in cells, as the original', default: DEFAULTS.height },
  ],
  iterations: DEFAULTS.iterations,
  // Per cell: a Cell (≈ 41 bytes in its block) and at most one agent (≤ 57 bytes), with
  // room for agent blocks left partly empty by deletions.
  heapFor: (p) => {
    const { width, height } = sizeOf(p);
    return (16 << 20) + width * height * 128;
  },
  init: (rt, p, seed) => init(rt, p, seed),
  step: (rt) => step(rt),
  digest,
  saveState: (rt) => gridSize(rt),
  restoreState: (rt, saved) => adoptGrid(rt, Number(saved['width']), Number(saved['height'])),
  picture,
};
export default app;
