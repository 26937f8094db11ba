/**
 * restoreState and stateBlocks (runtime/state.ts), in-process: the order of handles within
 * a class is kept (old ascending → new ascending, the state file header's rule), the
 * runtime must have the state's classes with the state's fields, and stateBlocks counts the
 * blocks a state needs. Issue 17's mutation run (docs/mutation.md) found these checked only
 * by the CLI and the apps' resumes, or not at all.
 */
import test from 'ava';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRuntime, f32, i32, object, type Runtime } from '../index.js';
import { readState, restoreState, StateFileError, stateBlocks, writeState, type LoadedState } from '../runtime/state.js';

const work = mkdtempSync(join(tmpdir(), 'smmo-state-restore-'));
test.after.always(() => rmSync(work, { recursive: true, force: true }));
let dirs = 0;

class Probe extends object({ p: f32, k: i32 }) {}
class Other extends object({ x: f32 }) {}
const CLASSES = [Probe, Other];

/** A state of `n` Probes (k = creation index, every seventh destroyed) and `others` Others. */
async function stateOf(n: number, others: number): Promise<LoadedState> {
  const rt = await createRuntime({ classes: CLASSES, heap: 8 << 20, checked: true });
  try {
    const made = Array.from({ length: n }, (_, k) => rt.create(Probe, { p: k / 2, k }));
    made.forEach((o, k) => k % 7 === 3 && rt.destroy(o));
    for (let i = 0; i < others; i++) rt.create(Other, { x: i });
    const dir = join(work, `s${dirs++}`);
    writeState(rt, dir, { app: 'test', iterations: 0, seed: 1, params: {}, appState: {} });
    return readState(dir, CLASSES);
  } finally {
    await rt.close();
  }
}

async function fresh(classes: Parameters<typeof createRuntime>[0]['classes'] = CLASSES): Promise<Runtime> {
  return createRuntime({ classes, heap: 8 << 20, checked: true });
}

test('restoreState keeps the order of handles within a class: the k-th smallest old handle becomes the k-th smallest new one', async (t) => {
  // 2000 objects: parallelNew does not hand its objects out in ascending handle order.
  const state = await stateOf(2000, 3);
  const rt = await fresh();
  try {
    const map = await restoreState(rt, state);
    const probe = state.classes.find((c) => c.name === 'Probe')!;
    const m = map.get('Probe')!;
    t.deepEqual([...m.old], [...probe.handles]);
    t.is(m.new.length, probe.handles.length);
    t.true(
      m.new.every((h, r) => r === 0 || h > m.new[r - 1]!),
      'new handles ascending',
    );
    // Walking the new runtime's Probes in handle order gives the state's rows in order.
    const ks = probe.columns.find((c) => c.name === 'k')!.values;
    const walked: number[] = [];
    for (const h of m.new) walked.push(rt.get(Probe, h).k);
    t.deepEqual(walked, [...ks]);
    t.is(rt.count(Probe), probe.handles.length);
    rt.validateHeap();
  } finally {
    await rt.close();
  }
});

test('restoreState refuses a runtime without a class of the state, or whose class has other fields', async (t) => {
  const state = await stateOf(5, 1);
  class Other2 extends object({ x: f32 }) {}
  const noOther = await fresh([Probe, Other2]);
  try {
    const e = await t.throwsAsync(() => restoreState(noOther, state), { instanceOf: StateFileError });
    t.is(e?.className, 'Other');
    t.regex(e?.message ?? '', /the runtime has no concrete class of this name/);
    t.is(noOther.count(Probe), 0, 'nothing created before the check fails');
  } finally {
    await noOther.close();
  }
  // Same names, Other's fields differ (x: i32).
  const Changed = class Other extends object({ x: i32 }) {};
  const changed = await fresh([Probe, Changed]);
  try {
    const e = await t.throwsAsync(() => restoreState(changed, state), { instanceOf: StateFileError });
    t.is(e?.className, 'Other');
    t.regex(e?.message ?? '', /the runtime's Other has fields x:i32; the state's has x:f32/);
  } finally {
    await changed.close();
  }
  // Probe's fields in another order.
  const Swapped = class Probe extends object({ k: i32, p: f32 }) {};
  const swapped = await fresh([Swapped, Other]);
  try {
    const e = await t.throwsAsync(() => restoreState(swapped, state), { instanceOf: StateFileError });
    t.is(e?.className, 'Probe');
    t.regex(e?.message ?? '', /the runtime's Probe has fields k:i32, p:f32; the state's has p:f32, k:i32$/);
  } finally {
    await swapped.close();
  }
});

test("stateBlocks: the blocks a state's objects fill, class by class (ceil(objects / slots))", async (t) => {
  const state = await stateOf(200, 1);
  const [probe, other] = ['Probe', 'Other'].map((n) => state.classes.find((c) => c.name === n)!);
  const n = probe!.handles.length;
  t.is(n, 200 - Math.ceil((200 - 3) / 7));
  const want = Math.ceil(n / probe!.type.slots) + Math.ceil(1 / other!.type.slots);
  t.true(n > probe!.type.slots, 'more than one block of Probes');
  t.is(stateBlocks(state), want);
  t.is(stateBlocks(await stateOf(0, 0)), 0);
});
