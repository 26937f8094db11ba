import type { App } from '../app.js';
import { CLASSES, DEFAULTS, digest, init, intersectionsOf, picture, step } from './traffic.js';

const app: App = {
  name: 'traffic',
  summary: 'Nagel–Schreckenberg traffic on a random street network with traffic lights; cars are created and removed',
  classes: CLASSES,
  flags: [{ name: 'intersections', type: 'int', description: 'intersections of the street network', default: DEFAULTS.intersections }],
  iterations: DEFAULTS.iterations,
  // About 265 cells per intersection (streets average 105 cells, 2.5 per intersection):
  // a cell ≈ 50 bytes in its block, a car ≈ 70; room for partly empty blocks.
  heapFor: (p) => (16 << 20) + Math.ceil(intersectionsOf(p) * 265 * 200),
  init: (rt, p, seed) => init(rt, intersectionsOf(p), seed),
  step: (rt, iteration) => step(rt, iteration),
  digest,
  picture,
  defrag: { classes: CLASSES, results: 'exact' },
  // Agents created on several threads get handles in any order: --check matches them by their cell.
  matchKeys: { Car: 'position' },
};
export default app;
