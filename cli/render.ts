/**
 * Pictures of grid apps as PNG files (`smmo run <app> --render FILE`), written by a
 * minimal PNG encoder of our own: node:zlib deflates, a table-driven CRC-32 guards each
 * chunk.
 *
 * PNG (ISO/IEC 15948, the W3C PNG specification) as written here: the 8-byte signature,
 * IHDR (width, height, bit depth 8, colour type 3 = palette, compression 0, filter 0,
 * interlace 0), PLTE (the picture's palette, RGB triples), IDAT (one zlib stream of the
 * scanlines, each a filter-type byte 0 = None then one palette index per pixel), IEND.
 * Every chunk is length (u32 big-endian), type, data, CRC-32 of type + data.
 *
 * Frames (`--render-every K`): FILE-<iterations>.png with the iteration count zero-padded
 * to at least 4 digits (out.png → out-0000.png, out-0010.png, …); the number is the
 * iterations done when the frame was taken (0 = the initial state; after --init it
 * counts from the state's iterations).
 */
import { writeFileSync } from 'node:fs';
import { deflateSync } from 'node:zlib';
import type { Picture } from '../apps/app.js';
import { CliUsageError } from './errors.js';

export const PNG_SIGNATURE = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** Bytes of scanline data a picture may take (a bound on memory, and far beyond any screen). */
export const MAX_PNG_BYTES = 1 << 30;

// ------------------------------------------------------------------ CRC-32

const CRC_TABLE = ((): Uint32Array => {
  // CRC-32 of PNG (and zlib, gzip): reflected polynomial 0xEDB88320.
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

/** CRC-32 of `bytes`, continuing from `crc` (0 to start). */
export function crc32(bytes: Uint8Array, crc = 0): number {
  let c = ~crc >>> 0;
  for (let i = 0; i < bytes.length; i++) c = CRC_TABLE[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}

// ------------------------------------------------------------------ encoder

function chunk(type: string, data: Uint8Array): Buffer {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, 'latin1');
  out.set(data, 8);
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
  return out;
}

/** Pixels per cell so that the picture is about 512 pixels on its longer side (1 … 16). */
export function autoScale(width: number, height: number): number {
  return Math.max(1, Math.min(16, Math.floor(512 / Math.max(width, height))));
}

/** The PNG file of `pic`, each cell drawn as `scale` × `scale` pixels. */
export function encodePng(pic: Picture, scale = 1): Buffer {
  const { width, height, palette, pixels } = pic;
  if (!Number.isInteger(scale) || scale < 1) throw new RangeError(`encodePng: scale must be a positive integer, got ${scale}`);
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1) {
    throw new RangeError(`encodePng: the picture must be at least 1 × 1, got ${width} × ${height}`);
  }
  if (pixels.length !== width * height) throw new RangeError(`encodePng: ${pixels.length} pixels for a ${width} × ${height} picture`);
  if (palette.length < 1 || palette.length > 256)
    throw new RangeError(`encodePng: the palette must have 1 … 256 colours, got ${palette.length}`);
  const w = width * scale;
  const h = height * scale;
  const row = 1 + w;
  if (w > 0x7fffffff || h > 0x7fffffff || row * h > MAX_PNG_BYTES) {
    throw new CliUsageError(
      `--render: a ${width} × ${height} grid at ${scale} × ${scale} pixels per cell is a ${w} × ${h} picture, ` +
        `more than ${MAX_PNG_BYTES} bytes; use a smaller --render-scale`,
    );
  }
  for (let i = 0; i < pixels.length; i++) {
    if (pixels[i]! >= palette.length)
      throw new RangeError(`encodePng: pixel ${i} is colour ${pixels[i]}, the palette has ${palette.length}`);
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0);
  ihdr.writeUInt32BE(h, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 3; // colour type: palette
  ihdr[10] = 0; // compression: deflate
  ihdr[11] = 0; // filter method 0
  ihdr[12] = 0; // no interlace
  const plte = new Uint8Array(3 * palette.length);
  palette.forEach(([r, g, b], k) => {
    plte[3 * k] = r;
    plte[3 * k + 1] = g;
    plte[3 * k + 2] = b;
  });
  // Scanlines: filter byte 0 (None), then the palette indices; each grid row repeats `scale` times.
  const raw = new Uint8Array(row * h);
  for (let y = 0; y < height; y++) {
    const first = y * scale * row;
    const line = raw.subarray(first + 1, first + row);
    const src = pixels.subarray(y * width, (y + 1) * width);
    if (scale === 1) line.set(src);
    else for (let x = 0; x < width; x++) line.fill(src[x]!, x * scale, (x + 1) * scale);
    for (let r = 1; r < scale; r++) raw.copyWithin(first + r * row, first, first + row);
  }
  return Buffer.concat([
    PNG_SIGNATURE,
    chunk('IHDR', ihdr),
    chunk('PLTE', plte),
    chunk('IDAT', deflateSync(raw)),
    chunk('IEND', new Uint8Array(0)),
  ]);
}

// ------------------------------------------------------------------ frames

/** out.png, 10, 4 → out-0010.png (a path without .png gets it appended). */
export function frameName(path: string, iterations: number, digits = 4): string {
  const base = path.toLowerCase().endsWith('.png') ? path.slice(0, -4) : path;
  return `${base}-${String(iterations).padStart(digits, '0')}.png`;
}

/** Writes the frames of one run. */
export class FrameWriter {
  readonly written: string[] = [];
  private readonly digits: number;

  constructor(
    readonly path: string,
    /** undefined: only the final state, at `path` itself. */
    readonly every: number | undefined,
    readonly scale: number | undefined,
    /** Iteration count of the last frame (fixes the number's width). */
    lastIteration: number,
  ) {
    this.digits = Math.max(4, String(lastIteration).length);
  }

  /** Write the picture of the state after `iterations` iterations; returns the file's path. */
  write(pic: Picture, iterations: number): string {
    const file = this.every === undefined ? this.path : frameName(this.path, iterations, this.digits);
    const scale = this.scale ?? autoScale(pic.width, pic.height);
    try {
      writeFileSync(file, encodePng(pic, scale));
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      if (typeof err.code === 'string') throw new CliUsageError(`--render: cannot write ${file}: ${err.message}`);
      throw e;
    }
    this.written.push(file);
    return file;
  }
}
