import type { App } from '../app.js';
import { Body, CLASSES, DEFAULTS, digest, init, step } from './nbody.js';

const app: App = {
  name: 'nbody',
  summary: 'n-body gravity simulation (no allocation after the start)',
  classes: CLASSES,
  flags: [{ name: 'bodies', type: 'int', description: 'number of bodies', default: DEFAULTS.bodies }],
  iterations: DEFAULTS.iterations,
  heapFor: (p) => Math.max(16 << 20, (2 << 20) + Number(p['bodies']) * 64),
  init: (rt, p, seed) => init(rt, Number(p['bodies']), seed),
  step: (rt) => step(rt),
  digest,
  defrag: {
    classes: CLASSES,
    results: 'nbody sums forces over the other bodies in handle order (float64): bodies that move can round differently',
  },
};
export default app;
export { Body };
