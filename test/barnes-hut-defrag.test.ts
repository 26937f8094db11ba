/**
 * barnes-hut and defragmentation (issue 16, "Defragmentation never changes a result"):
 * the app keeps one handle outside the heap, the root TreeNode's, which App.defrag.remap
 * (barnes-hut.ts remapRoot) moves with it (the runs make sure the root moves); its handles are otherwise only compared for
 * equality within an insertion round, and its float sums follow the tree (model.ts), so
 * defragmentation is declared 'exact'. Checked: from a scene whose tree empties as the
 * bodies fly apart (TreeNodes deleted: fragmentation to be defragmented), runs with the
 * CLI's schedules (cli/defrag.ts RunDefrag) on 1 and 2 threads give the digest of the run
 * without, exactly, and every field of every object equals it (--check's comparator with
 * no tolerance, TreeNodes paired by their squares and bodies by id: App.matchKeys); the
 * CLI takes --defrag without a warning.
 */
import test from 'ava';
import { digest, initBodies, step, type BodyInit } from '../apps/barnes-hut/barnes-hut.js';
import { TreeNode } from '../apps/barnes-hut/model.js';
import { Random } from '../apps/random.js';
import { loadApp } from '../apps/registry.js';
import { compareHeaps } from '../cli/check.js';
import { RunDefrag } from '../cli/defrag.js';
import type { DefragOptions } from '../cli/flags.js';
import { createRuntime, type Runtime, type SmmoClass } from '../index.js';
import { SLOT_BITS } from '../runtime/layout.js';
import type { AppDefrag } from '../apps/app.js';
import { EXACT } from '../runtime/compare.js';
import { describeChild, lastJson, smmo } from './helpers/child.js';

const MODULE = new URL('../apps/barnes-hut/index.js', import.meta.url);
const ITERATIONS = 16;

/** 1200 bodies in a disc of radius 0.02 flying outward (0.5 … 2.5 per time unit): a deep tree that empties. */
function scene(): BodyInit[] {
  const rng = new Random(5);
  return Array.from({ length: 1200 }, () => {
    const a = rng.next() * 2 * Math.PI;
    const r = 0.02 * Math.sqrt(rng.next());
    const v = 0.5 + 2 * rng.next();
    return { posX: r * Math.cos(a), posY: r * Math.sin(a), velX: v * Math.cos(a), velY: v * Math.sin(a), mass: 1 + rng.next() };
  });
}

/** The root's handle: the TreeNode without a parent. */
function rootOf(rt: Runtime): number {
  let root = 0;
  rt.deviceDo(TreeNode, (n) => void (n.parent === null && (root = n.handle)));
  return root;
}

async function run(threads: number, opts?: DefragOptions): Promise<{ rt: Runtime; digest: number; moved: number; rootMoves: number }> {
  const app = (await loadApp('barnes-hut'))!;
  const rt = await createRuntime({
    classes: app.classes,
    heap: '16MB',
    threads,
    checked: threads === 1,
    ...(threads > 1 ? { modules: [MODULE], inlineBlocks: 0, startTimeoutMs: 120_000 } : {}),
  });
  // The root is the first TreeNode initBodies creates: fill a block with TreeNodes up to one free slot first,
  // so that the root takes it and the tree's other TreeNodes go elsewhere; deleted after the init, they leave
  // the root alone in its block. With a schedule, a defragmentation right after the init (as the CLI's after
  // an iteration, through the app's remap) with n = 1000 empties that block before a step refills it: with so
  // few candidates per record, CompactGpu's tail record takes the candidate with the fewest objects as its
  // source, the root's block. So the root moves: remapRoot matters.
  const slots = rt.table.byClass(TreeNode)!.slots;
  const fillers: TreeNode[] = [];
  const blockOf = (h: number): number => h >>> SLOT_BITS;
  for (;;) {
    const f = rt.create(TreeNode);
    fillers.push(f);
    if (fillers.filter((x) => blockOf(x.handle) === blockOf(f.handle)).length === slots - 1) break;
  }
  await initBodies(rt, scene());
  for (const f of fillers) rt.destroy(f);
  let alone = 0;
  rt.deviceDo(TreeNode, (n) => void (blockOf(n.handle) === blockOf(rootOf(rt)) && alone++));
  if (alone !== 1) throw new Error(`test setup: the root's block holds ${alone} TreeNodes, not the root alone`);
  let rootMoves = 0;
  const spec = app.defrag as AppDefrag;
  if (opts !== undefined) {
    const before = rootOf(rt);
    spec.remap!(rt, rt.defrag(spec.classes as SmmoClass[], 1000));
    if (rootOf(rt) !== before) rootMoves++;
  }
  const defrag = RunDefrag.forRun(app, opts, ITERATIONS, 'barnes-hut-defrag.test');
  for (let k = 1; k <= ITERATIONS; k++) {
    await step(rt);
    const before = rootOf(rt);
    await defrag?.after(rt, k);
    if (rootOf(rt) !== before) rootMoves++;
  }
  rt.validateHeap();
  return { rt, digest: digest(rt), moved: defrag?.result(rt).objectsMoved ?? 0, rootMoves };
}

for (const threads of [1, 2]) {
  test(`runs with --defrag schedules = the run without, exactly (${threads} thread(s))`, async (t) => {
    const app = (await loadApp('barnes-hut'))!;
    const plain = await run(threads);
    try {
      for (const opts of [{ n: 1 }, { n: 2 }, { n: 4, every: 3 }, { n: 3, above: 0.15 }] as DefragOptions[]) {
        const d = await run(threads, opts);
        try {
          const label = `${threads} thread(s), ${JSON.stringify(opts)}`;
          t.true(d.moved > 0 && d.rootMoves > 0, `${label}: objects moved (${d.moved}), the root among them (${d.rootMoves} times)`);
          t.log(`${label}: ${d.moved} objects moved, the root ${d.rootMoves} times`);
          t.is(d.digest, plain.digest, `${label}: digest`);
          const cmp = compareHeaps(plain.rt, d.rt, EXACT, app.matchKeys);
          t.deepEqual(cmp.structure, [], label);
          t.true(cmp.fieldsOk, `${label}: every field equal: ${cmp.worst} ${JSON.stringify(cmp.fields[cmp.worst])}`);
        } finally {
          await d.rt.close();
        }
      }
    } finally {
      await plain.rt.close();
    }
  });
}

test('smmo run barnes-hut --defrag: taken, no warning, results exact; --check passes', async (t) => {
  const args = ['run', 'barnes-hut', '--bodies', '1500', '--iterations', '4', '--json'];
  const [plain, moved] = await Promise.all([smmo(args), smmo([...args, '--defrag', '1000', '--check'])]);
  for (const r of [plain, moved]) t.is(r.code, 0, describeChild(r));
  const m = lastJson(moved.stdout);
  t.is(m['digest'], lastJson(plain.stdout)['digest']);
  t.is((m['defrag'] as { results: string }).results, 'exact');
  t.false(((m['warnings'] as string[] | undefined) ?? []).some((w) => /--defrag/.test(w)));
  t.true((m['check'] as { ok: boolean }).ok);
});
