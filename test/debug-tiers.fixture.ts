/**
 * A program for test/debug-tiers.test.ts, run as a child process with SMMO_DEBUG set
 * (the tier is read once, when the runtime's modules load): it corrupts one bitmap bit of
 * a used block by hand, then goes on, and prints what happened as one JSON line.
 *   argv[2] 'transition': clear the block's allocated[T] bit, then fill the block
 *           (ACTIVE → FULL runs on it);
 *   argv[2] 'pass':       set the block's bit in `free`, then run an empty do-all;
 *   argv[2] 'stop':       set the block's bit in `free`, then run a do-all that never ends
 *           under passTimeout (the PassTimeoutError carries the heap check).
 */
import { createRuntime, f32, HeapCorruptionError, object, PassTimeoutError } from '../index.js';

export class Dot extends object({ x: f32 }) {
  nop(): void {}

  spin(): void {
    for (;;) this.x += 1;
  }
}

const what = process.argv[2];
const rt = await createRuntime({ classes: [Dot], heap: '2MB', keepBlocks: 0, ...(what === 'stop' ? { passTimeout: 200 } : {}) });
const first = rt.create(Dot);
const bid = first.handle >>> 5;
const heap = rt.heap;
const t = rt.table.byClass(Dot)!;
const bm = what === 'transition' ? heap.allocated[t.id]! : heap.free;
heap.i32[bm.base + (bid >>> 5)]! ^= 1 << (bid & 31); // flip the block's bit in level 0
let outcome: { error: string | null; problems?: readonly string[] } = { error: null };
try {
  if (what === 'transition') for (let i = 1; i < t.slots; i++) rt.create(Dot);
  else rt.doAll(Dot, what === 'stop' ? 'spin' : 'nop');
} catch (e) {
  const check = e instanceof HeapCorruptionError ? e : e instanceof PassTimeoutError ? e.heapCheck : null;
  outcome = { error: (e as Error).constructor.name, ...(check !== null ? { problems: check.problems } : {}) };
}
console.log(JSON.stringify(outcome));
await rt.close();
