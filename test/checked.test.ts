/**
 * Checked mode (createRuntime({ checked: true })): every handle that does not name a
 * live object of the expected class is an InvalidHandleError whose `reason` says why:
 *
 *   'null'        handle 0
 *   'forged'      not a handle of this heap: negative, not an integer, beyond the heap,
 *                 in the null block 0, or a slot the block's type does not have (≥ N_T)
 *   'free-block'  its block is free (the object, and every other one of its block, was deleted)
 *   'deleted'     its slot is free, or its block now holds another type
 *   'wrong-type'  a live object of another class
 *
 * Deleting another object of the class being iterated, during a do-all, is a UsageError.
 * Unchecked mode keeps the cheap checks: a double delete is still caught.
 */
import test from 'ava';
import {
  array,
  createRuntime,
  f32,
  f64,
  HeapExhaustedError,
  i32,
  InvalidHandleError,
  object,
  ref,
  u8,
  UsageError,
  type Runtime,
  type SmmoClass,
  type SmmoObject,
} from '../index.js';
import { MIN_HEAP_BYTES } from '../runtime/layout.js';

// A self-reference needs the referenced type spelled out (a class cannot name its own
// type inside its own `extends` expression): an interface does that.
interface NodeLike extends SmmoObject {
  value: number;
  next: NodeLike | null;
}
class ListNode extends object({ value: i32, next: ref((): SmmoClass<NodeLike> => ListNode), weight: f64 }) {}

/**
 * Two slots per block: the smallest class (Shark, 9 bytes) sets the data segment to
 * 288 bytes; 18 SOA arrays of at least 16 bytes (alignment) fill it.
 */
class Big extends object({ a: f64, rest: array(f64, 17) }) {}

abstract class Agent extends object({ age: i32 }, { abstract: true }) {}
class Fish extends Agent.extend({ target: ref(() => Agent), food: ref(() => Shark) }) {
  /** Delete another Agent (here: a Fish) during a pass over Fish: not allowed. */
  killTarget(): void {
    const t = this.target;
    if (t !== null) t.destroy();
  }
  /** Delete a Shark during a pass over Fish: allowed. */
  eat(): void {
    const s = this.food;
    if (s !== null) s.destroy();
  }
  /** Delete itself: allowed. */
  vanish(): void {
    this.destroy();
  }
}
class Shark extends Agent.extend({ energy: f32, flags: u8 }) {}

async function checkedRuntime(checked = true, keepBlocks?: number): Promise<Runtime> {
  return createRuntime({
    classes: [ListNode, Big, Agent, Fish, Shark],
    heap: MIN_HEAP_BYTES,
    checked,
    ...(keepBlocks === undefined ? {} : { keepBlocks }),
  });
}

/** A view of `like`'s class and runtime, positioned nowhere, with handle `h` (what a forged handle looks like to destroy). */
function forged(like: SmmoObject, h: number): SmmoObject {
  return Object.assign(Object.create(Object.getPrototypeOf(like) as object) as SmmoObject, { __h: h, __o: 0, __s: 0, __i: 0 });
}

function reasonOf(t: import('ava').ExecutionContext, fn: () => unknown, reason: InvalidHandleError['reason'], what: string): void {
  const e = t.throws(fn, { instanceOf: InvalidHandleError }, what);
  if (e) t.is(e.reason, reason, `${what}: ${e.message}`);
}

test('the class sizes give Shark 32 and Big 2 slots per block', async (t) => {
  const rt = await checkedRuntime();
  t.is(rt.table.byClass(Shark)!.slots, 32);
  t.is(rt.table.byClass(Big)!.slots, 2);
  await rt.close();
});

// ------------------------------------------------------------------ stale handles

test('a deleted object whose block lives on: field access, rt.get and a second destroy → deleted', async (t) => {
  const rt = await checkedRuntime();
  const keep = rt.create(ListNode, { value: 1 });
  const gone = rt.create(ListNode, { value: 2 });
  t.is(keep.handle >>> 5, gone.handle >>> 5, 'same block');
  const h = gone.handle;
  rt.destroy(gone);
  reasonOf(t, () => gone.value, 'deleted', 'read through the old view');
  reasonOf(t, () => (gone.value = 5), 'deleted', 'write through the old view');
  reasonOf(t, () => gone.next, 'deleted', 'ref read through the old view');
  reasonOf(t, () => rt.get(ListNode, h), 'deleted', 'rt.get with the old handle');
  reasonOf(t, () => rt.destroy(gone), 'deleted', 'destroy twice');
  const e = t.throws(() => gone.value, { instanceOf: InvalidHandleError });
  t.is(e?.handle, h, 'the error names the handle');
  t.is(keep.value, 1, 'the other object is untouched');
  rt.validateHeap();
  await rt.close();
});

test('a deleted object whose block was freed: field access, rt.get and a second destroy fail', async (t) => {
  const rt = await checkedRuntime(true, 0);
  const only = rt.create(ListNode, { value: 7 });
  const h = only.handle;
  rt.destroy(only);
  t.true(rt.heap.free.get(h >>> 5), 'its block is free again');
  // A free block's allocation bitmap is all ones: the slot test alone would pass here.
  reasonOf(t, () => only.value, 'deleted', 'read through the old view');
  reasonOf(t, () => (only.weight = 1), 'deleted', 'write through the old view');
  reasonOf(t, () => rt.get(ListNode, h), 'free-block', 'rt.get with the old handle');
  reasonOf(t, () => rt.destroy(only), 'free-block', 'destroy twice');
  rt.validateHeap();
  await rt.close();
});

test('a deleted object whose block now holds another class: the old view and handle fail', async (t) => {
  const rt = await checkedRuntime();
  const a = rt.create(Big, { a: 1 });
  rt.destroy(a);
  // Create Sharks until one sits in the old Big's very slot (bounded by the heap's slots).
  let there: Shark | undefined;
  for (let i = 0; i < 32 * rt.heap.numBlocks && there === undefined; i++) {
    const s = rt.create(Shark, { energy: 2 });
    if (s.handle === a.handle) there = s;
  }
  t.truthy(there, 'a Shark took the slot');
  t.is(rt.get(Shark, a.handle).energy, 2);
  reasonOf(t, () => a.a, 'deleted', 'a Big view over a Shark block');
  reasonOf(t, () => rt.get(Big, a.handle), 'wrong-type', 'rt.get(Big) of a slot that holds a Shark now');
  rt.validateHeap();
  await rt.close();
});

test('an inline-array element read through a deleted view names the object', async (t) => {
  class Arr extends object({ xs: array(i32, 3) }) {}
  const rt = await createRuntime({ classes: [Arr], heap: MIN_HEAP_BYTES, checked: true });
  const keep = rt.create(Arr);
  const o = rt.create(Arr);
  o.xs.set(1, 42);
  t.is(o.xs.get(1), 42);
  const xs = o.xs;
  rt.destroy(o);
  const e = t.throws(() => xs.get(1), { instanceOf: InvalidHandleError });
  t.is(e?.reason, 'deleted');
  t.is(e?.handle, o.handle);
  t.throws(() => xs.set(0, 1), { instanceOf: InvalidHandleError });
  t.is(keep.xs.get(1), 0);
  await rt.close();
});

// ------------------------------------------------------------------ forged handles and free blocks

test('forged handles: 0, negative, non-integer, beyond the heap, the null block, a slot ≥ N_T', async (t) => {
  const rt = await checkedRuntime();
  const big = rt.create(Big);
  const n = rt.create(ListNode);
  const limit = rt.heap.numBlocks * 32;
  reasonOf(t, () => rt.get(ListNode, 0), 'null', 'handle 0');
  for (const h of [-1, -32, 1.5, Number.NaN, Number.POSITIVE_INFINITY, limit, limit + 31, 2 ** 32, 5, 31]) {
    reasonOf(t, () => rt.get(ListNode, h), 'forged', `handle ${h}`);
  }
  // Block of Big has 2 slots; slots 2…31 have their allocation bits pre-set (§5.2), so
  // they look allocated to a bitmap test.
  const base = big.handle & ~31;
  for (const s of [2, 5, 31]) reasonOf(t, () => rt.get(Big, base + s), 'forged', `slot ${s} of a Big block`);
  // Through destroy, with a view of this runtime whose handle was forged.
  reasonOf(t, () => rt.destroy(forged(big, base + 3)), 'forged', 'destroy of a forged slot');
  reasonOf(t, () => rt.destroy(forged(big, -7)), 'forged', 'destroy of a negative handle');
  t.throws(() => rt.destroy(null as unknown as SmmoObject), { instanceOf: UsageError });
  // A hand-made object is no view of this runtime at all.
  t.throws(() => rt.destroy({ __h: base + 3 } as unknown as SmmoObject), {
    instanceOf: UsageError,
    message: 'destroy: expected an smmo object of this runtime, got an object that is not an smmo object',
  });
  t.is(rt.count(Big), 1);
  t.is(n.value, 0);
  rt.validateHeap();
  await rt.close();
});

test('a handle into a free block → free-block', async (t) => {
  const rt = await checkedRuntime();
  rt.create(ListNode);
  // Any block that is free: never used.
  let free = -1;
  for (let b = 1; b < rt.heap.numBlocks; b++) {
    if (rt.heap.free.get(b)) {
      free = b;
      break;
    }
  }
  t.true(free > 0);
  reasonOf(t, () => rt.get(ListNode, free * 32), 'free-block', 'slot 0 of a free block');
  reasonOf(t, () => rt.get(Big, free * 32 + 1), 'free-block', 'slot 1 of a free block');
  reasonOf(t, () => rt.destroy(forged(rt.create(ListNode), free * 32 + 2)), 'free-block', 'destroy in a free block');
  rt.validateHeap();
  await rt.close();
});

// ------------------------------------------------------------------ wrong types

test('wrong-type handles: rt.get of another class, and a ref field given an object of the wrong class', async (t) => {
  const rt = await checkedRuntime();
  const fish = rt.create(Fish, { age: 3 });
  const shark = rt.create(Shark, { age: 4 });
  const node = rt.create(ListNode, { value: 9 });
  reasonOf(t, () => rt.get(Shark, fish.handle), 'wrong-type', 'get(Shark) of a Fish');
  reasonOf(t, () => rt.get(ListNode, shark.handle), 'wrong-type', 'get(ListNode) of a Shark');
  // A superclass accepts its subclasses.
  t.is(rt.get(Agent, fish.handle).age, 3);
  t.is(rt.get(Agent, shark.handle).age, 4);
  // Ref fields check the target class on assignment.
  reasonOf(t, () => (fish.food = fish as unknown as Shark), 'wrong-type', 'a Fish into a ref(Shark)');
  reasonOf(t, () => (fish.target = node as unknown as Fish), 'wrong-type', 'a ListNode into a ref(Agent)');
  fish.target = shark; // a subclass of the target class is fine
  t.true(fish.target!.is(shark));
  reasonOf(t, () => (node.next = shark as unknown as ListNode), 'wrong-type', 'a Shark into a ref(ListNode)');
  t.is(fish.food, null, 'a refused assignment leaves the field unchanged');
  fish.food = shark;
  t.is(fish.food!.handle, shark.handle);
  // A deleted object cannot be stored in a ref, and a stored ref to a deleted object cannot be followed.
  const doomed = rt.create(Shark);
  rt.destroy(doomed);
  reasonOf(t, () => (fish.food = doomed), 'deleted', 'storing a deleted object');
  rt.destroy(shark);
  t.throws(() => fish.food, { instanceOf: InvalidHandleError }, 'following a ref to a deleted object');
  rt.validateHeap();
  await rt.close();
});

test('references: null, set, follow a.next.next, and clear again (checked)', async (t) => {
  const rt = await checkedRuntime();
  const a = rt.create(ListNode, { value: 1 });
  const b = rt.create(ListNode, { value: 2 });
  const c = rt.create(ListNode, { value: 3 });
  t.is(a.next, null);
  a.next = b;
  b.next = c;
  t.is(a.next!.next!.value, 3);
  t.true(a.next!.next!.is(c));
  a.next!.next!.value = 30;
  t.is(c.value, 30);
  a.next = null;
  t.is(a.next, null);
  await rt.close();
});

// ------------------------------------------------------------------ deletes during a do-all

test('deleting another object of the iterated class during a pass → UsageError; self and other classes are allowed', async (t) => {
  const rt = await checkedRuntime();
  const f1 = rt.create(Fish, { age: 1 });
  const f2 = rt.create(Fish, { age: 2 });
  f1.target = f2;
  const e = await t.throwsAsync(rt.parallelDo(Fish, 'killTarget'));
  // The do-all may wrap what a method throws (e.g. in a MethodError naming the object); the
  // UsageError must be the error or its cause.
  const usage = e instanceof UsageError ? e : (e as Error & { cause?: unknown }).cause;
  t.true(usage instanceof UsageError, `expected a UsageError, got ${String(e)}`);
  t.regex((usage as Error).message, /may delete itself, but not another Fish/);
  t.is(rt.count(Fish), 2, 'the delete was refused');
  rt.validateHeap();
  // Deleting an object of another class is fine.
  const s = rt.create(Shark);
  f2.food = s;
  await rt.parallelDo(Fish, 'eat');
  t.is(rt.count(Shark), 0);
  // And self-delete is fine.
  await rt.parallelDo(Fish, 'vanish');
  t.is(rt.count(Fish), 0);
  rt.validateHeap();
  // Outside a pass, deleting any object is fine.
  const f3 = rt.create(Fish);
  rt.destroy(f3);
  t.is(rt.count(Agent), 0);
  await rt.close();
});

// ------------------------------------------------------------------ unchecked mode

test('a deleted object in a kept block (keepBlocks default): the slot is free, then the block is, after validateHeap', async (t) => {
  const rt = await checkedRuntime();
  const only = rt.create(ListNode, { value: 7 });
  const h = only.handle;
  rt.destroy(only);
  // The calling thread keeps the emptied block it allocates in (wasm/src/alloc/core.rs K4).
  t.false(rt.heap.free.get(h >>> 5), 'the block is kept, not free');
  reasonOf(t, () => only.value, 'deleted', 'read through the old view');
  reasonOf(t, () => rt.get(ListNode, h), 'deleted', 'rt.get with the old handle');
  reasonOf(t, () => rt.destroy(only), 'deleted', 'destroy twice');
  rt.validateHeap(); // gives kept blocks back first
  t.true(rt.heap.free.get(h >>> 5), 'free after validateHeap');
  reasonOf(t, () => rt.get(ListNode, h), 'free-block', 'rt.get after the block was freed');
  reasonOf(t, () => rt.destroy(only), 'free-block', 'destroy after the block was freed');
  t.is(rt.heap.free.count(), rt.heap.numBlocks - 1);
  await rt.close();
});

test('unchecked mode still catches a double delete and keeps the heap valid', async (t) => {
  const rt = await checkedRuntime(false, 0);
  t.false(rt.checked);
  const a = rt.create(ListNode);
  const b = rt.create(ListNode);
  rt.destroy(a);
  reasonOf(t, () => rt.destroy(a), 'deleted', 'double delete, block still used');
  rt.destroy(b);
  reasonOf(t, () => rt.destroy(b), 'free-block', 'double delete, block freed');
  rt.validateHeap();
  // rt.get is always checked.
  reasonOf(t, () => rt.get(ListNode, a.handle), 'free-block', 'rt.get of a deleted object');
  // The heap is fully usable afterwards.
  for (let i = 0; i < 100; i++) rt.create(ListNode, { value: i });
  t.is(rt.count(ListNode), 100);
  rt.validateHeap();
  await rt.close();
});

test('checked mode does not change what a full heap does', async (t) => {
  const rt = await checkedRuntime();
  let made = 0;
  const e = t.throws(() => {
    for (;;) {
      rt.create(Big);
      made++;
    }
  });
  t.true(e instanceof HeapExhaustedError);
  t.is(made, 2 * (rt.heap.numBlocks - 1));
  rt.validateHeap();
  await rt.close();
});
