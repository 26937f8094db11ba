/**
 * Views that must not be trusted (runtime/thread.ts V1, V2):
 *  - stale views (checked mode): a view of an object that was deleted, whose slot was then
 *    reused by a new object, is refused with InvalidHandleError 'stale' on field access,
 *    destroy, reference assignment and as a do-all argument — also across threads, and
 *    when the block was freed and re-initialised in between (block generation). The new
 *    object is left alone. A bare handle is only checked for liveness and type.
 *  - the hidden generation array (layout.ts genOffset) and the allocator's rule for it
 *    (allocator.ts G1): +1 at every successful release, nothing else.
 *  - views of another runtime are refused by destroy, reference assignment, create's
 *    initial values and do-all arguments ('foreign'), in checked and unchecked mode; a
 *    number assigned to a reference is a UsageError that says what to assign.
 */
import test from 'ava';
import { Allocator } from '../runtime/allocator.js';
import { Heap } from '../runtime/heap.js';
import { createRuntime, InvalidHandleError, UsageError, type Runtime } from '../index.js';
import { BLOCK_TYPE_WORD, MIN_HEAP_BYTES, planTypes } from '../runtime/layout.js';
import { layoutFingerprint } from '../workers/protocol.js';
import { CLASSES, Node, STALE_FIXTURES, Wide } from './stale.fixtures.js';

function reasonOf(
  t: import('ava').ExecutionContext,
  fn: () => unknown,
  reason: InvalidHandleError['reason'],
  what: string,
): InvalidHandleError | undefined {
  const e = t.throws(fn, { instanceOf: InvalidHandleError }, what);
  if (e) t.is(e.reason, reason, `${what}: ${e.message}`);
  return e;
}

/** The slot generation word of handle `h` (block base + genOffset + 4·slot). */
function genOf(rt: Runtime, h: number): number {
  const heap = rt.heap;
  const t = heap.i32[heap.blockWord(h >>> 5) + BLOCK_TYPE_WORD]!;
  return heap.i32[((heap.blockOffset(h >>> 5) + heap.genOffset[t]!) >> 2) + (h & 31)]!;
}

test('checked layouts have a hidden per-slot generation array; unchecked ones do not', (t) => {
  const checked = planTypes(CLASSES, { checked: true });
  const plain = planTypes(CLASSES);
  for (const ty of plain.types) t.is(ty.genOffset, 0, ty.name);
  for (const ty of checked.types) {
    t.true(ty.genOffset > 0 && ty.genOffset % 16 === 0, `${ty.name} genOffset ${ty.genOffset}`);
    t.true(ty.genOffset + 4 * ty.slots <= checked.blockBytes, 'inside the block');
    for (const f of ty.fields) {
      for (const off of f.offsets) t.true(off + ty.slots * f.elemBytes <= ty.genOffset, `${ty.name}.${f.name} before the generations`);
    }
    t.false(
      ty.fields.some((f) => f.name.includes('gen')),
      'not a field',
    );
  }
  t.true(checked.blockBytes > plain.blockBytes, 'the smallest class still gets 32 slots: blocks grow');
  t.is(checked.types[0]!.slots, 32);
  t.not(layoutFingerprint(checked), layoutFingerprint(plain), 'workers compare layouts with the generation arrays');
});

test('the allocator increments a slot generation at every successful release, and only then', (t) => {
  const table = planTypes(CLASSES, { checked: true });
  const heap = Heap.create(table, MIN_HEAP_BYTES, { keepBlocks: 0 });
  const alloc = new Allocator(heap, 1);
  const node = table.byClass(Node)!;
  const word = (h: number): number => ((heap.blockOffset(h >>> 5) + node.genOffset) >> 2) + (h & 31);
  const h = alloc.allocate(node);
  const other = alloc.allocate(node); // keeps the block in use
  t.is(heap.i32[word(h)], 0, 'a fresh heap: generation 0, and allocation does not touch it');
  alloc.releaseHandle(h);
  t.is(heap.i32[word(h)], 1);
  t.throws(() => alloc.releaseHandle(h), { instanceOf: InvalidHandleError }, 'double free');
  t.is(heap.i32[word(h)], 1, 'a failed release changes no generation');
  let again = 0;
  for (let i = 0; i < 64 && again !== h; i++) again = alloc.allocate(node);
  t.is(again, h, 'the slot is allocated again');
  t.is(heap.i32[word(h)], 1, 'allocation leaves it');
  t.is(heap.i32[word(other)], 0, "another slot's generation is its own");
  alloc.releaseHandle(h);
  t.is(heap.i32[word(h)], 2);
  heap.validate();
});

test('create does not zero the generation; state files do not contain it', async (t) => {
  const rt = await createRuntime({ classes: CLASSES, heap: MIN_HEAP_BYTES, checked: true });
  try {
    const keep = rt.create(Node);
    const a = rt.create(Node, { value: 1 });
    const h = a.handle;
    rt.destroy(a);
    let b = rt.create(Node, { value: 2 });
    while (b.handle !== h) b = rt.create(Node, { value: 2 });
    t.is(genOf(rt, h), 1, 'the new object in the slot keeps generation 1');
    const { columnsOf } = await import('../runtime/state.js');
    t.deepEqual(
      columnsOf(rt.table.byClass(Node)!).map((c) => c.name),
      ['value', 'weight', 'next'],
    );
    t.is(keep.value, 0);
  } finally {
    await rt.close();
  }
});

test('checked: a view of a deleted object whose slot was reused is stale everywhere; the new object is untouched', async (t) => {
  const rt = await createRuntime({ classes: CLASSES, heap: MIN_HEAP_BYTES, checked: true });
  try {
    const keep = rt.create(Node, { value: 1 });
    const old = rt.create(Node, { value: 2 });
    const h = old.handle;
    rt.destroy(old);
    // One thread, keepBlocks default: the next allocation of this class takes the freed slot.
    const fresh = rt.create(Node, { value: 3, weight: 0.5 });
    t.is(fresh.handle, h, 'the slot was reused');
    const e = reasonOf(t, () => old.value, 'stale', 'read through the old view');
    t.regex(
      e?.message ?? '',
      /^invalid handle \d+ \(stale\): access to Node\.value: a stale view: its Node was deleted, and slot \d+ of block \d+ now holds another object/,
    );
    reasonOf(t, () => (old.weight = 9), 'stale', 'write through the old view');
    reasonOf(t, () => old.next, 'stale', 'reference read through the old view');
    reasonOf(t, () => rt.destroy(old), 'stale', 'destroy through the old view');
    reasonOf(t, () => old.destroy(), 'stale', 'obj.destroy() through the old view');
    reasonOf(t, () => (keep.next = old), 'stale', 'assign the old view to a reference');
    reasonOf(t, () => rt.create(Node, { next: old }), 'stale', "create's initial value");
    await t.throwsAsync(rt.parallelDo(Node, 'copyFrom', old), {
      instanceOf: InvalidHandleError,
      message: /\(stale\): parallelDo\(Node, 'copyFrom'\): argument 0/,
    });
    t.is(rt.count(Node), 2, 'nothing was deleted or leaked');
    t.is(fresh.value, 3, 'the new object is untouched');
    t.is(fresh.weight, 0.5);
    t.is(keep.next, null);
    // The limitation: a bare handle has no generation; it names the new object.
    t.true(rt.get(Node, h).is(fresh));
    // A view made now is fresh.
    keep.next = rt.get(Node, h);
    t.is(keep.next!.value, 3);
    await rt.parallelDo(Node, 'copyFrom', fresh);
    t.is(keep.weight, 3);
    rt.validateHeap();
  } finally {
    await rt.close();
  }
});

test('checked: a view whose block was freed, used by another class, then by its class again, is stale', async (t) => {
  const rt = await createRuntime({ classes: CLASSES, heap: MIN_HEAP_BYTES, checked: true, keepBlocks: 0 });
  try {
    const old = rt.create(Node, { value: 5 });
    const h = old.handle;
    const block = h >>> 5;
    rt.destroy(old);
    t.true(rt.heap.free.get(block), 'the block is free');
    // Fill the heap with Wides until the block is a Wide block; then free them.
    const wides = [];
    while (rt.heap.blockType(block) === -1) wides.push(rt.create(Wide));
    for (const w of wides) rt.destroy(w);
    t.true(rt.heap.free.get(block), 'free again');
    // While the block held Wides, the bytes of Node's generation word for that slot were
    // Wide's to use: its field data (or its own generation array) may leave any value
    // there, e.g. the one the old view recorded. Written here directly, as such data would.
    const nodeGenWord = ((rt.heap.blockOffset(block) + rt.table.byClass(Node)!.genOffset) >> 2) + (h & 31);
    rt.heap.i32[nodeGenWord] = old.__g;
    // Nodes until one sits in the old slot.
    let fresh = rt.create(Node, { value: 6 });
    for (let i = 0; i < 32 * rt.heap.numBlocks && fresh.handle !== h; i++) fresh = rt.create(Node, { value: 6 });
    t.is(fresh.handle, h);
    t.is(genOf(rt, h), old.__g, 'the slot generation alone cannot tell the two objects apart; the block generation can');
    reasonOf(t, () => old.value, 'stale', 'the slot is allocated, of its class, but in a later block generation');
    reasonOf(t, () => rt.destroy(old), 'stale', 'destroy');
    t.is(fresh.value, 6);
  } finally {
    await rt.close();
  }
});

test('checked on 2 threads: workers use the same layout; views of objects replaced on workers are refused', async (t) => {
  t.timeout(120_000);
  const rt = await createRuntime({ classes: CLASSES, heap: '4MB', checked: true, threads: 2, modules: [STALE_FIXTURES], inlineBlocks: 0 });
  try {
    const views: Node[] = [];
    await rt.parallelNew(Node, 2000, (n, i) => {
      n.value = i;
      views.push(n.runtime.get(Node, n.handle));
    });
    await rt.parallelDo(Node, 'replace'); // every Node deleted; new ones take freed slots
    t.is(rt.count(Node), 2000);
    const reasons = new Map<string, number>();
    for (const v of views) {
      const e = t.throws(() => v.value, { instanceOf: InvalidHandleError });
      reasons.set(e!.reason, (reasons.get(e!.reason) ?? 0) + 1);
      t.true(e!.reason === 'stale' || e!.reason === 'deleted', e!.reason);
    }
    t.true((reasons.get('stale') ?? 0) > 0, `slots were reused: ${JSON.stringify([...reasons])}`);
    const stale = views.find((v) => rt.heap.liveInBlock(v.handle >>> 5) > 0 && t.throws(() => v.value)?.message.includes('stale'));
    await t.throwsAsync(rt.parallelDo(Node, 'copyFrom', stale!), { instanceOf: InvalidHandleError, message: /\(stale\)/ });
    let sum = 0;
    rt.deviceDo(Node, (n) => (sum += n.value));
    t.is(sum, (1999 * 2000) / 2 + 1000 * 2000, 'the new objects are intact');
    rt.validateHeap();
  } finally {
    await rt.close();
  }
});

for (const checked of [false, true]) {
  test(`${checked ? 'checked' : 'unchecked'}: objects of another runtime are refused by destroy, references, create and do-all arguments`, async (t) => {
    const r1 = await createRuntime({ classes: CLASSES, heap: MIN_HEAP_BYTES, checked });
    const r2 = await createRuntime({ classes: CLASSES, heap: MIN_HEAP_BYTES, checked });
    try {
      const mine = r2.create(Node, { value: 2 });
      const theirs = r1.create(Node, { value: 1 });
      t.is(mine.handle, theirs.handle, 'the same handle in both runtimes');
      const e = reasonOf(t, () => r2.destroy(theirs), 'foreign', 'r2.destroy(a view of r1)');
      t.regex(e?.message ?? '', /destroy: this Node \(handle \d+\) belongs to another runtime; objects cannot move between runtimes/);
      reasonOf(t, () => (mine.next = theirs), 'foreign', 'a reference of r2 set to a view of r1');
      reasonOf(t, () => r2.create(Node, { next: theirs }), 'foreign', "create's initial value");
      await t.throwsAsync(r2.parallelDo(Node, 'copyFrom', theirs), {
        instanceOf: InvalidHandleError,
        message: /\(foreign\): parallelDo\(Node, 'copyFrom'\): argument 0/,
      });
      await t.throwsAsync(r2.parallelNew(Node, 1, 'copyFrom', theirs), { instanceOf: InvalidHandleError, message: /\(foreign\)/ });
      t.is(r2.count(Node), 1, "r2's object was not deleted, nothing leaked");
      t.is(mine.value, 2);
      t.is(mine.next, null);
      t.is(r1.count(Node), 1);
      theirs.destroy(); // a view's own destroy() goes to its own runtime
      t.is(r1.count(Node), 0);
      t.is(r2.count(Node), 1);
      // A number is not a reference (it used to say "invalid handle undefined").
      t.throws(() => ((mine as unknown as { next: unknown }).next = 42), {
        instanceOf: UsageError,
        message: 'Node.next = …: a reference field takes an smmo object or null, not a number (42); for a handle, assign rt.get(Class, 42)',
      });
      t.throws(() => ((mine as unknown as { next: unknown }).next = { __h: 40 }), {
        instanceOf: UsageError,
        message: /Node\.next = …: expected an smmo object of this runtime, got an object that is not an smmo object/,
      });
      r2.validateHeap();
    } finally {
      await r1.close();
      await r2.close();
    }
  });
}
