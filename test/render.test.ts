/**
 * PNG pictures (cli/render.ts, App.picture of wa-tor and game-of-life): the encoder's
 * output decoded here by an independent reader (chunk layout, CRCs checked with
 * node:zlib's crc32, inflate, unfilter) and compared pixel by pixel; frame naming; the
 * CLI's --render / --render-every / --render-scale and their errors.
 */
import test from 'ava';
import { describeChild, lastJson, smmo } from './helpers/child.js';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as zlib from 'node:zlib';
import type { Picture } from '../apps/app.js';
import { autoScale, crc32, encodePng, frameName } from '../cli/render.js';

const work = mkdtempSync(join(tmpdir(), 'smmo-render-'));
test.after.always(() => rmSync(work, { recursive: true, force: true }));

interface Decoded {
  width: number;
  height: number;
  bitDepth: number;
  colourType: number;
  palette: [number, number, number][];
  /** Palette index per pixel. */
  pixels: Uint8Array;
  chunks: string[];
}

/** A PNG reader for what the encoder may write (8-bit palette, no interlace, any filter type). */
function decodePng(file: Buffer): Decoded {
  const signature = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
  if (!signature.every((b, i) => file[i] === b)) throw new Error('bad PNG signature');
  const crc = (zlib as unknown as { crc32(b: Uint8Array): number }).crc32;
  let at = 8;
  const chunks: string[] = [];
  const idat: Buffer[] = [];
  let ihdr: Buffer | null = null;
  let plte: Buffer | null = null;
  while (at < file.length) {
    const len = file.readUInt32BE(at);
    const type = file.toString('latin1', at + 4, at + 8);
    const data = file.subarray(at + 8, at + 8 + len);
    const stored = file.readUInt32BE(at + 8 + len);
    if (crc(file.subarray(at + 4, at + 8 + len)) !== stored) throw new Error(`chunk ${type}: CRC mismatch`);
    chunks.push(type);
    if (type === 'IHDR') ihdr = data;
    else if (type === 'PLTE') plte = data;
    else if (type === 'IDAT') idat.push(data);
    at += 12 + len;
  }
  if (at !== file.length) throw new Error('trailing bytes');
  if (ihdr === null || plte === null) throw new Error('IHDR or PLTE missing');
  const width = ihdr.readUInt32BE(0);
  const height = ihdr.readUInt32BE(4);
  const raw = zlib.inflateSync(Buffer.concat(idat));
  const stride = width; // 8-bit palette: one byte per pixel
  if (raw.length !== height * (stride + 1)) throw new Error(`IDAT inflates to ${raw.length} bytes, expected ${height * (stride + 1)}`);
  const pixels = new Uint8Array(width * height);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)]!;
    for (let x = 0; x < width; x++) {
      const v = raw[y * (stride + 1) + 1 + x]!;
      const left = x > 0 ? pixels[y * width + x - 1]! : 0;
      const up = y > 0 ? pixels[(y - 1) * width + x]! : 0;
      const upLeft = x > 0 && y > 0 ? pixels[(y - 1) * width + x - 1]! : 0;
      let p: number;
      if (filter === 0) p = v;
      else if (filter === 1) p = v + left;
      else if (filter === 2) p = v + up;
      else if (filter === 3) p = v + ((left + up) >> 1);
      else {
        const e = left + up - upLeft;
        const [pa, pb, pc] = [Math.abs(e - left), Math.abs(e - up), Math.abs(e - upLeft)];
        p = v + (pa <= pb && pa <= pc ? left : pb <= pc ? up : upLeft);
      }
      pixels[y * width + x] = p & 0xff;
    }
  }
  const palette: [number, number, number][] = [];
  for (let k = 0; k < plte.length; k += 3) palette.push([plte[k]!, plte[k + 1]!, plte[k + 2]!]);
  return { width, height, bitDepth: ihdr[8]!, colourType: ihdr[9]!, palette, pixels, chunks };
}

test('crc32 is CRC-32 (check value of "123456789")', (t) => {
  t.is(crc32(Buffer.from('123456789')), 0xcbf43926);
  t.is(crc32(new Uint8Array(0)), 0);
});

test('encodePng: chunks, CRCs, palette and every pixel decode back; scale repeats cells as S × S blocks', (t) => {
  const width = 7;
  const height = 5;
  const pixels = Uint8Array.from({ length: width * height }, (_, i) => (i * 7 + (i >> 2)) % 3);
  const pic: Picture = {
    width,
    height,
    palette: [
      [1, 2, 3],
      [200, 100, 50],
      [0, 255, 128],
    ],
    pixels,
  };
  for (const scale of [1, 3]) {
    const d = decodePng(encodePng(pic, scale));
    t.deepEqual(d.chunks, ['IHDR', 'PLTE', 'IDAT', 'IEND']);
    t.is(d.width, width * scale);
    t.is(d.height, height * scale);
    t.is(d.bitDepth, 8);
    t.is(d.colourType, 3);
    t.deepEqual(d.palette, [
      [1, 2, 3],
      [200, 100, 50],
      [0, 255, 128],
    ]);
    for (let y = 0; y < d.height; y++) {
      for (let x = 0; x < d.width; x++) {
        const want = pixels[Math.floor(y / scale) * width + Math.floor(x / scale)];
        if (d.pixels[y * d.width + x] !== want)
          return t.fail(`scale ${scale}: pixel (${x}, ${y}) is ${d.pixels[y * d.width + x]}, want ${want}`);
      }
    }
  }
  t.throws(() => encodePng({ ...pic, pixels: pixels.subarray(1) }), { instanceOf: RangeError, message: /34 pixels for a 7 × 5 picture/ });
  t.throws(() => encodePng({ ...pic, palette: [[0, 0, 0]] }), { instanceOf: RangeError, message: /palette has 1/ });
});

test('frame names and the automatic scale', (t) => {
  t.is(frameName('out.png', 0), 'out-0000.png');
  t.is(frameName('out.png', 10), 'out-0010.png');
  t.is(frameName('frames/wator', 7, 5), 'frames/wator-00007.png');
  t.is(frameName('a.PNG', 12345), 'a-12345.png');
  t.is(autoScale(64, 48), 8);
  t.is(autoScale(20, 10), 16);
  t.is(autoScale(2048, 2560), 1);
});

// ------------------------------------------------------------------ CLI

function counts(pixels: Uint8Array): number[] {
  const c = [0, 0, 0];
  for (const p of pixels) c[p]!++;
  return c;
}

test('wa-tor --render-every: frames at 0, K, 2K … and the last; each shows the fish and sharks of that moment', async (t) => {
  const out = join(work, 'wator.png');
  const size = ['--width', '40', '--height', '30', '--seed', '5'];
  const r = await smmo([
    'run',
    'wa-tor',
    ...size,
    '--iterations',
    '12',
    '--render',
    out,
    '--render-every',
    '5',
    '--render-scale',
    '1',
    '--json',
  ]);
  t.is(r.code, 0, describeChild(r));
  const frames = [0, 5, 10, 12].map((k) => join(work, `wator-${String(k).padStart(4, '0')}.png`));
  t.deepEqual(lastJson(r.stdout)['frames'], frames);
  t.false(existsSync(out), 'with --render-every only numbered frames are written');
  // The last frame against the run's own counts; frame 5 against a 5-iteration run.
  const last = decodePng(readFileSync(frames[3]!));
  t.is(last.width, 40);
  t.is(last.height, 30);
  const objects = lastJson(r.stdout)['objects'] as Record<string, number>;
  t.deepEqual(counts(last.pixels), [1200 - objects['Fish']! - objects['Shark']!, objects['Fish']!, objects['Shark']!]);
  const five = await smmo(['run', 'wa-tor', ...size, '--iterations', '5', '--json']);
  const o5 = lastJson(five.stdout)['objects'] as Record<string, number>;
  t.deepEqual(counts(decodePng(readFileSync(frames[1]!)).pixels).slice(1), [o5['Fish'], o5['Shark']]);
  t.notDeepEqual(decodePng(readFileSync(frames[0]!)).pixels, last.pixels, 'the frames differ');
});

test('game-of-life --render: alive and candidate cells at the grid position of each; auto scale', async (t) => {
  const out = join(work, 'gol.png');
  const glider = join(work, 'glider.pgm');
  // A 6 × 6 field with a glider (PGM P2, 0 = alive), after 4 generations: moved by (1, 1).
  const rows = ['1 0 1 1 1 1', '1 1 0 1 1 1', '0 0 0 1 1 1', '1 1 1 1 1 1', '1 1 1 1 1 1', '1 1 1 1 1 1'];
  (await import('node:fs')).writeFileSync(glider, `P2\n6 6\n1\n${rows.join('\n')}\n`);
  const r = await smmo(['run', 'game-of-life', '--input', glider, '--iterations', '4', '--render', out, '--json']);
  t.is(r.code, 0, describeChild(r));
  t.deepEqual(lastJson(r.stdout)['frames'], [out]);
  const d = decodePng(readFileSync(out));
  const scale = autoScale(6, 6);
  t.is(d.width, 6 * scale);
  const cell = (x: number, y: number): number => d.pixels[y * scale * d.width + x * scale]!;
  const alive: [number, number][] = [];
  for (let y = 0; y < 6; y++) for (let x = 0; x < 6; x++) if (cell(x, y) === 1) alive.push([x, y]);
  t.deepEqual(
    alive,
    [
      [2, 1],
      [3, 2],
      [1, 3],
      [2, 3],
      [3, 3],
    ],
    'the glider moved one cell right and down',
  );
  const objects = lastJson(r.stdout)['objects'] as Record<string, number>;
  const c = counts(d.pixels).map((n) => n / (scale * scale));
  t.deepEqual(c.slice(1), [objects['Alive'], objects['Candidate']]);
});

test('--render errors: an app without a picture, --render-every without --render, a bad scale → exit 2', async (t) => {
  const [nbody, orphan, scale] = await Promise.all([
    smmo(['run', 'nbody', '--bodies', '10', '--render', join(work, 'n.png')]),
    smmo(['run', 'wa-tor', '--render-every', '5']),
    smmo(['run', 'wa-tor', '--render', join(work, 'x.png'), '--render-scale', '0']),
  ]);
  t.is(nbody.code, 2, describeChild(nbody));
  t.regex(nbody.stderr, /smmo run nbody: --render: this app has no picture/);
  t.is(orphan.code, 2, describeChild(orphan));
  t.regex(orphan.stderr, /--render-every needs --render FILE/);
  t.is(scale.code, 2, describeChild(scale));
  t.regex(scale.stderr, /--render-scale must be an integer in 1/);
});
