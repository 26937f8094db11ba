import type { App } from '../app.js';
import { CLASSES, DEFAULTS, digest, init, step } from './collision.js';

const app: App = {
  name: 'collision',
  summary: 'n-body gravity where close bodies merge (bodies are deleted as they merge)',
  classes: CLASSES,
  flags: [{ name: 'bodies', type: 'int', description: 'number of bodies at the start', default: DEFAULTS.bodies }],
  iterations: DEFAULTS.iterations,
  heapFor: (p) => Math.max(16 << 20, (2 << 20) + Number(p['bodies']) * 64),
  init: (rt, p, seed) => init(rt, Number(p['bodies']), seed),
  step: (rt) => step(rt),
  digest,
  defrag: {
    classes: CLASSES,
    results:
      'collision breaks exact ties of merge distances by handle (body.ts prepareMerge/resolveMerge, wasm/src/collision.rs) and sums ' +
      'forces over the other bodies in handle order (float64), so moved bodies can round differently and, rarely, merge differently',
  },
};
export default app;
