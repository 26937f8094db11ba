import type { App } from '../app.js';
import { MAX_NODES, MIN_NODES } from './mesh.js';
import { CLASSES, DEFAULTS, digest, init, nodesOf, ORIGINAL, picture, remapBfs, step } from './structure.js';

const app: App = {
  name: 'structure',
  summary:
    'fracture of a spring mesh pulled by moving anchors: springs break above their maximum force, parts cut off from the anchors are removed',
  classes: CLASSES,
  flags: [
    {
      name: 'nodes',
      type: 'int',
      description: `the original's kMaxNodes, ${MIN_NODES} … ${MAX_NODES}: 65 % Nodes, 25 % AnchorPullNodes, 10 % AnchorNodes, 1.75 springs per node (the original: ${ORIGINAL.nodes})`,
      default: DEFAULTS.nodes,
    },
  ],
  iterations: DEFAULTS.iterations,
  // Per node: a node (≤ 52 bytes in its block) and 1.75 springs (≤ 25 bytes each),
  // about 96 bytes, more than doubled for blocks left partly empty by deletions.
  heapFor: (p) => (4 << 20) + Math.ceil(nodesOf(p) * 240),
  init: (rt, p, seed) => init(rt, nodesOf(p), seed),
  step: (rt) => step(rt),
  digest,
  picture,
  // The Bfs object's handle, kept outside the heap once found, follows it (remapBfs).
  defrag: { classes: CLASSES, remap: remapBfs, results: 'exact' },
};
export default app;
