import type { App } from '../app.js';
import {
  adoptTree,
  bodiesOf,
  checkParams,
  CLASSES,
  DEFAULTS,
  digest,
  init,
  picture,
  remapRoot,
  saveState,
  step,
  thresholdOf,
} from './barnes-hut.js';

const app: App = {
  name: 'barnes-hut',
  summary: 'Barnes–Hut n-body gravity on a quadtree that is updated every step (tree nodes are created and deleted)',
  classes: CLASSES,
  flags: [
    { name: 'bodies', type: 'int', description: 'number of bodies', default: DEFAULTS.bodies },
    {
      name: 'threshold',
      type: 'float',
      description: "a tree node whose centre of mass is closer than this to a body is opened (the original's kDistThreshold)",
      default: DEFAULTS.threshold,
    },
  ],
  iterations: DEFAULTS.iterations,
  // A BodyNode ≈ 70 bytes and a TreeNode ≈ 110 bytes in their blocks; about 0.6 TreeNodes
  // per body (uniform bodies), at most one per body after a collapse plus the new ones of
  // a step: room for 1.5 TreeNodes per body and partly empty blocks.
  heapFor: (p) => (16 << 20) + Math.ceil(bodiesOf(p) * 400),
  init: (rt, p, seed) => {
    checkParams(p);
    return init(rt, bodiesOf(p), seed, thresholdOf(p));
  },
  step: (rt) => step(rt),
  digest,
  saveState,
  restoreState: (rt, saved) => adoptTree(rt, Number(saved['threshold'] ?? DEFAULTS.threshold)),
  picture,
  // The root's handle, kept outside the heap, follows its TreeNode (remapRoot). Handles are only compared for equality
  // (model.ts claims, within an insertion round) and every float sum follows the tree, not handle order (model.ts).
  defrag: { classes: CLASSES, remap: remapRoot, results: 'exact' },
  // TreeNodes created on several threads get handles in any order: --check matches a node by its square (unique in a quadtree);
  // bodies by their id where handles differ (smmo compare of a state written with --defrag and one without).
  matchKeys: { TreeNode: ['p1X', 'p1Y', 'p2X', 'p2Y'], BodyNode: 'id' },
};
export default app;
