/**
 * The PGM reader (apps/pgm.ts): P2 and P5 (8- and 16-bit), comments, maxval read as a
 * header field; every kind of malformed file raises a PgmError naming the problem,
 * and `smmo run game-of-life --input BAD` exits with code 2.
 */
import test from 'ava';
import { describeChild, smmo } from './helpers/child.js';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodePgm, parsePgm, PgmError, readPgm, readPgmHeader } from '../apps/pgm.js';
import { UsageError } from '../runtime/index.js';

const text = (s: string): Uint8Array => new TextEncoder().encode(s);
const bytes = (...parts: (string | number[])[]): Uint8Array =>
  Uint8Array.from(parts.flatMap((p) => (typeof p === 'string' ? Array.from(text(p)) : p)));

test('P2 with comments: width, height and maxval are header fields, pixels in row-major order', (t) => {
  const img = parsePgm(text('P2\n# made by hand\n3 2 # trailing comment\n# another\n255\n0 255 7\n1 2\n3\n'), 'x.pgm');
  t.deepEqual([img.format, img.width, img.height, img.maxval], ['P2', 3, 2, 255]);
  t.deepEqual(Array.from(img.pixels), [0, 255, 7, 1, 2, 3]);
});

test('P5 with 8-bit and 16-bit (big-endian) pixels', (t) => {
  const a = parsePgm(bytes('P5 2 2 200\n', [0, 1, 200, 9]), 'a.pgm');
  t.deepEqual(Array.from(a.pixels), [0, 1, 200, 9]);
  const b = parsePgm(bytes('P5\n2 1\n65535\n', [0x01, 0x02, 0xff, 0xff]), 'b.pgm');
  t.deepEqual(Array.from(b.pixels), [0x0102, 0xffff]);
  // A P5 raster may start with a byte that looks like whitespace: only one separator byte is skipped.
  const c = parsePgm(bytes('P5 2 1 255\n', [0x0a, 0x20]), 'c.pgm');
  t.deepEqual(Array.from(c.pixels), [10, 32]);
});

test('encodePgm round-trips through the parser', (t) => {
  const pixels = [0, 5, 255, 17, 0, 3];
  for (const format of ['P2', 'P5'] as const) {
    const img = parsePgm(encodePgm(format, 3, 2, 255, pixels), format);
    t.deepEqual(Array.from(img.pixels), pixels, format);
  }
  t.deepEqual(Array.from(parsePgm(encodePgm('P5', 2, 1, 1000, [999, 1000]), 'w').pixels), [999, 1000]);
});

const BAD: [string, Uint8Array, RegExp][] = [
  ['empty file', text(''), /the file is empty/],
  ['a PPM color image', text('P6 1 1 255\n\0\0\0'), /starts with 'P6' \(a PPM color image\)/],
  ['no magic number', text('hello'), /starts with 'he'.*P2 \(text\) or P5 \(binary\)/],
  ['header cut short', text('P2 3 2'), /header ends before the maxval/],
  ['width not a number', text('P2 x 2 255\n'), /width is not a number \(found 'x'\)/],
  ['zero height', text('P2 3 0 255\n'), /3 × 0; width and height must be at least 1/],
  ['maxval out of range', text('P2 1 1 70000\n0'), /maxval is 70000/],
  ['maxval 0', text('P2 1 1 0\n0'), /maxval is 0/],
  ['P2 raster truncated', text('P2 3 2 255\n1 2 3 4 5\n'), /truncated: a 3 × 2 image has 6 pixels, the file has 5/],
  ['P2 extra values', text('P2 2 1 255\n1 2 3\n'), /line 2: more than the 2 pixel values/],
  ['P2 pixel above maxval', text('P2 2 1 100\n5 101\n'), /pixel 1 \(row 0, column 1\) is 101, above maxval 100/],
  ['P2 pixel not a number', text('P2 2 1 255\n\n5 -3\n'), /line 3: pixel 1 is not a non-negative integer \(found '-3'\)/],
  ['P5 raster truncated', bytes('P5 2 2 255\n', [1, 2, 3]), /truncated: 2 × 2 pixels need 4 bytes, the file has 3/],
  ['P5 trailing bytes', bytes('P5 1 1 255\n', [1, 2]), /1 byte follows the 1-byte raster of a 1 × 1 image/],
  ['P5 16-bit pixel above maxval', bytes('P5 1 1 300\n', [0x01, 0x2d]), /is 301, above maxval 300/],
  ['P5 without raster', text('P5 1 1 255'), /ends after the header/],
];

for (const [what, data, message] of BAD) {
  test(`malformed: ${what} → PgmError`, (t) => {
    const e = t.throws(() => parsePgm(data, 'in.pgm'), { instanceOf: PgmError });
    t.regex(e!.message, /^in\.pgm: not a valid PGM image: /);
    t.regex(e!.message, message);
    t.true(e instanceof UsageError, 'a UsageError: the CLI reports it with exit code 2');
    t.is((e as PgmError).file, 'in.pgm');
  });
}

test('files: a missing file and a directory are PgmErrors; the header alone can be read', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'smmo-pgm-'));
  t.throws(() => readPgm(join(dir, 'none.pgm')), { instanceOf: PgmError, message: /cannot read the file \(no such file\)/ });
  t.throws(() => readPgm(dir), { instanceOf: PgmError, message: /cannot read the file/ });
  const f = join(dir, 'ok.pgm');
  writeFileSync(f, encodePgm('P2', 4, 3, 255, new Array<number>(12).fill(0)));
  t.like(readPgmHeader(f), { format: 'P2', width: 4, height: 3, maxval: 255 });
});

test('smmo run game-of-life --input with a malformed file exits with code 2 and says why', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'smmo-pgm-'));
  const f = join(dir, 'bad.pgm');
  writeFileSync(f, 'P2 3 3 255\n0 0 0\n');
  const r = await smmo(['run', 'game-of-life', '--input', f, '--iterations', '1']);
  t.is(r.code, 2, describeChild(r));
  t.regex(r.stderr, /bad\.pgm: not a valid PGM image: the raster is truncated: a 3 × 3 image has 9 pixels, the file has 3/);
});
