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
    // Merge ties go to the lower id (body.ts), which moving does not change; the force sums' order does change.
    results:
      'collision sums forces over the other bodies in handle order (float64), so moved bodies can round differently (by an ulp of an f32 field) ' +
      'and a merge decided by a distance that close to the threshold could then go the other way; exact merge ties go to the lower id, which moving keeps',
  },
  // --check and smmo compare pair bodies by id (body.ts) when their handles differ (another run's state, a run with --defrag).
  matchKeys: { Body: 'id' },
};
export default app;
