import type { App } from '../app.js';
import {
  appResults,
  CLASSES,
  DEFAULTS,
  digest,
  heapFor,
  init,
  MAX_K,
  MAX_LANES,
  ORIGINAL,
  restoreState,
  saveState,
  step,
} from './linux.js';

const app: App = {
  name: 'linux-scalability',
  summary: "DynaSOAr's allocator micro-benchmark (Fig. 13a): lanes create k objects and destroy them; ns per allocation",
  classes: CLASSES,
  flags: [
    {
      name: 'k',
      type: 'int',
      description: `objects each lane creates, then destroys, per round, 1 … ${MAX_K}`,
      default: DEFAULTS.k,
      max: MAX_K,
    },
    {
      name: 'lanes',
      type: 'int',
      description: `allocating lanes, 1 … ${MAX_LANES} (the original: ${ORIGINAL.lanes} GPU threads)`,
      default: DEFAULTS.lanes,
      max: MAX_LANES,
    },
    {
      name: 'sweep',
      type: 'switch',
      description: `every repetition runs k = 1, 2, 4, … ${MAX_K} (Fig. 13a); a table of ns per allocation by k`,
    },
  ],
  iterations: DEFAULTS.iterations,
  heapFor,
  init: (rt, p) => init(rt, p),
  step: (rt) => step(rt),
  digest,
  saveState,
  restoreState,
  results: appResults,
  defrag: 'linux-scalability measures allocation: it keeps no objects from one iteration to the next, so there is nothing to defragment',
};
export default app;
