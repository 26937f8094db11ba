/**
 * The scheduling policy of passes (runtime/schedule.ts P1–P7), rule by rule, without
 * threads or clocks: the measured times are given.
 */
import test from 'ava';
import { CLAIM_MICROS, DEFAULT_COPY_BLOCKS, DEFAULT_INLINE_BLOCKS, DEFAULT_INLINE_MICROS, PassScheduler } from '../runtime/schedule.js';

const K = '3:update';

test('P1: one thread runs every pass inline, whatever its size', (t) => {
  const s = new PassScheduler(1, DEFAULT_INLINE_BLOCKS, DEFAULT_INLINE_MICROS);
  t.deepEqual(s.doAll(K, 1_000_000), { inline: true });
  t.is(s.parallelNew(1_000_000), null);
});

test('P2: a pass of fewer than 2 blocks is inline, even with inlineBlocks 0', (t) => {
  const s = new PassScheduler(4, 0, DEFAULT_INLINE_MICROS);
  t.true(s.doAll(K, 1).inline);
  t.false(s.doAll(K, 2).inline);
});

test('P3: small passes are inline until their measured inline cost passes inlineMicros', (t) => {
  const s = new PassScheduler(4, 64, 150);
  t.true(s.doAll(K, 63).inline, 'no measurement yet: inline');
  t.false(s.doAll(K, 64).inline, 'inlineBlocks and more: workers');
  s.ranInline(K, 10, 20); // 2 µs per block
  t.true(s.doAll(K, 63).inline, '63 × 2 = 126 µs < 150');
  s.ranInline(K, 10, 30); // 3 µs per block
  t.false(s.doAll(K, 63).inline, '63 × 3 = 189 µs > 150');
  t.true(s.doAll('3:other', 63).inline, 'per method');
});

test('P4: a small pass that was quick on the workers is measured inline again', (t) => {
  const s = new PassScheduler(4, 64, 150);
  s.ranInline(K, 10, 100); // 10 µs per block: a pass of 20 blocks goes to the workers
  t.false(s.doAll(K, 20).inline);
  s.ranOnWorkers(K, 20, 400); // slower than inlineMicros: the estimate stands
  t.false(s.doAll(K, 20).inline);
  s.ranOnWorkers(K, 20, 90); // quicker than inlineMicros, fork-join included: forget it
  t.true(s.doAll(K, 20).inline);
});

test('P5: claims of about 8 per thread, at most 64 blocks, about CLAIM_MICROS of work once the cost is known', (t) => {
  const s = new PassScheduler(4, 0, 150);
  const chunk = (blocks: number): number => {
    const p = s.doAll(K, blocks);
    if (p.inline) throw new Error('expected the workers');
    return p.chunk;
  };
  t.is(chunk(320), 10, '320 / (4 × 8)');
  t.is(chunk(100_000), 64, 'at most 64');
  t.is(chunk(5), 1, 'at least 1');
  s.ranOnWorkers(K, 1000, (1000 * 100) / 4); // 100 thread-µs per block
  t.is(chunk(100_000), Math.ceil(CLAIM_MICROS / 100), 'a heavy method claims fewer blocks');
  s.ranOnWorkers(K, 1000, 1000 / 4); // 1 thread-µs per block: the count rule again
  t.is(chunk(100_000), 64);
});

test('P6: parallelNew on the workers from inlineBlocks × 32 objects, in whole blocks of 32 … 4096', (t) => {
  const s = new PassScheduler(4, 64, 150);
  t.is(s.parallelNew(64 * 32 - 1), null);
  t.is(s.parallelNew(64 * 32), 64);
  t.is(s.parallelNew(1_000_000), 4096);
  const z = new PassScheduler(4, 0, 150);
  t.is(z.parallelNew(32), null, 'a single block stays inline');
  t.is(z.parallelNew(33), 32);
});

test('P7: the snapshot copy runs on the workers from copyBlocks listed blocks, in about 4 claims per thread', (t) => {
  t.is(new PassScheduler(1, DEFAULT_INLINE_BLOCKS, DEFAULT_INLINE_MICROS).snapshotCopy(1_000_000), null, 'one thread: inline');
  const s = new PassScheduler(16, DEFAULT_INLINE_BLOCKS, DEFAULT_INLINE_MICROS);
  t.is(s.copyBlocks, DEFAULT_COPY_BLOCKS);
  t.is(s.snapshotCopy(DEFAULT_COPY_BLOCKS - 1), null);
  t.is(s.snapshotCopy(DEFAULT_COPY_BLOCKS), DEFAULT_COPY_BLOCKS / 64);
  t.is(s.snapshotCopy(32_769), 513, 'rounded up: every block is claimed');
  s.copyBlocks = 2;
  t.is(s.snapshotCopy(1), null, 'nothing to share');
  t.is(s.snapshotCopy(2), 1);
});
