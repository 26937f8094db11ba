/**
 * PGM (portable graymap) reader for game-of-life inputs: P2 (ASCII) and P5 (binary),
 * as specified by netpbm's pgm(5):
 *
 *   magic  "P2" | "P5"
 *   then   width, height, maxval — decimal integers separated by whitespace; a '#'
 *          starts a comment that runs to the end of its line
 *   P2:    width·height decimal pixel values separated by whitespace
 *   P5:    exactly one whitespace byte, then width·height pixels, 1 byte each when
 *          maxval < 256, else 2 bytes big-endian
 *
 * maxval is a header field, not a pixel. (The original DynaSOAr loader reads it as the
 * first pixel, shifting every cell by one.) Every malformed input raises a
 * PgmError that names the file, the problem and, for P2, the line.
 */
import { readFileSync } from 'node:fs';
import { UsageError } from '../runtime/index.js';

/**
 * A malformed or unreadable PGM file. A UsageError, so the CLI reports it as a bad
 * command-line input (exit code 2).
 */
export class PgmError extends UsageError {
  constructor(
    readonly file: string,
    readonly problem: string,
  ) {
    super(`${file}: not a valid PGM image: ${problem}`);
  }
}

export interface PgmHeader {
  format: 'P2' | 'P5';
  width: number;
  height: number;
  maxval: number;
  /** Byte offset of the first pixel (P5) or of the text after maxval (P2). */
  dataOffset: number;
}

export interface PgmImage extends PgmHeader {
  /** width·height gray values in row-major order (row 0 first). */
  pixels: Uint16Array;
}

/** Largest accepted width·height (the game-of-life grid must fit a wasm32 heap). */
export const MAX_PGM_PIXELS = 1 << 28;

const isSpace = (b: number): boolean => b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d || b === 0x0b || b === 0x0c;
const isDigit = (b: number): boolean => b >= 0x30 && b <= 0x39;

/** Read and parse a PGM file. */
export function readPgm(path: string): PgmImage {
  return parsePgm(readFile(path), path);
}

/** Read only the header of a PGM file (cheap: for sizing a heap before loading). */
export function readPgmHeader(path: string): PgmHeader {
  return parseHeader(readFile(path), path);
}

function readFile(path: string): Uint8Array {
  try {
    return readFileSync(path);
  } catch (e) {
    const code = (e as { code?: string }).code;
    const why =
      code === 'ENOENT'
        ? 'no such file'
        : code === 'EISDIR'
          ? 'it is a directory'
          : code === 'EACCES'
            ? 'permission denied'
            : (e as Error).message;
    throw new PgmError(path, `cannot read the file (${why})`);
  }
}

/** The header of a PGM image held in `bytes`; `name` is used in error messages. */
export function parseHeader(bytes: Uint8Array, name: string): PgmHeader {
  if (bytes.length < 2) throw new PgmError(name, bytes.length === 0 ? 'the file is empty' : 'the file is too short to hold a PGM header');
  const magic = String.fromCharCode(bytes[0]!, bytes[1]!);
  if (magic !== 'P2' && magic !== 'P5') {
    const hint = magic === 'P1' || magic === 'P4' ? ' (a PBM bitmap)' : magic === 'P3' || magic === 'P6' ? ' (a PPM color image)' : '';
    throw new PgmError(name, `it starts with '${printable(magic)}'${hint}; a PGM file starts with P2 (text) or P5 (binary)`);
  }
  let at = 2;
  const field = (what: string): number => {
    // Whitespace and comments before the number.
    const start = at;
    for (;;) {
      if (at >= bytes.length) throw new PgmError(name, `the header ends before the ${what}`);
      const b = bytes[at]!;
      if (isSpace(b)) at++;
      else if (b === 0x23) {
        while (at < bytes.length && bytes[at] !== 0x0a && bytes[at] !== 0x0d) at++;
      } else break;
    }
    if (at === start && what !== 'width') throw new PgmError(name, `no whitespace before the ${what}`);
    if (at === start) throw new PgmError(name, `no whitespace after the magic number ${magic}`);
    let value = 0;
    let digits = 0;
    while (at < bytes.length && isDigit(bytes[at]!)) {
      value = value * 10 + (bytes[at]! - 0x30);
      digits++;
      at++;
      if (value > 1e9) throw new PgmError(name, `the ${what} is too large`);
    }
    if (digits === 0) throw new PgmError(name, `the ${what} is not a number (found '${printable(token(bytes, at))}')`);
    if (at < bytes.length && !isSpace(bytes[at]!) && bytes[at] !== 0x23) {
      throw new PgmError(name, `the ${what} is not a number (found '${printable(token(bytes, at - digits))}')`);
    }
    return value;
  };
  const width = field('width');
  const height = field('height');
  const maxval = field('maxval');
  if (width < 1 || height < 1) throw new PgmError(name, `the image is ${width} × ${height}; width and height must be at least 1`);
  if (width * height > MAX_PGM_PIXELS) throw new PgmError(name, `the image is ${width} × ${height}, more than ${MAX_PGM_PIXELS} pixels`);
  if (maxval < 1 || maxval > 65535) throw new PgmError(name, `maxval is ${maxval}; it must be in 1 … 65535`);
  if (magic === 'P5') {
    // Exactly one whitespace byte separates maxval from the raster.
    if (at >= bytes.length) throw new PgmError(name, `the file ends after the header: expected ${width * height} pixels`);
    at++;
  }
  return { format: magic, width, height, maxval, dataOffset: at };
}

/** Parse a whole PGM image held in `bytes`; `name` is used in error messages. */
export function parsePgm(bytes: Uint8Array, name: string): PgmImage {
  const h = parseHeader(bytes, name);
  const n = h.width * h.height;
  const pixels = new Uint16Array(n);
  if (h.format === 'P5') {
    const bpp = h.maxval < 256 ? 1 : 2;
    const have = bytes.length - h.dataOffset;
    if (have < n * bpp) {
      throw new PgmError(name, `the raster is truncated: ${h.width} × ${h.height} pixels need ${n * bpp} bytes, the file has ${have}`);
    }
    // Trailing whitespace (a final newline) is tolerated; anything else means the header lies.
    const extra = have - n * bpp;
    for (let i = h.dataOffset + n * bpp; i < bytes.length; i++) {
      if (!isSpace(bytes[i]!)) {
        throw new PgmError(
          name,
          `${extra} byte${extra === 1 ? '' : 's'} follow${extra === 1 ? 's' : ''} the ${n * bpp}-byte raster of a ${h.width} × ${h.height} image`,
        );
      }
    }
    let at = h.dataOffset;
    for (let i = 0; i < n; i++) {
      const v = bpp === 1 ? bytes[at++]! : (bytes[at++]! << 8) | bytes[at++]!;
      if (v > h.maxval)
        throw new PgmError(name, `pixel ${i} (row ${Math.floor(i / h.width)}, column ${i % h.width}) is ${v}, above maxval ${h.maxval}`);
      pixels[i] = v;
    }
    return { ...h, pixels };
  }
  // P2: whitespace-separated decimal values; comments are tolerated between them.
  let at = h.dataOffset;
  let line = 1 + countLines(bytes, h.dataOffset);
  let i = 0;
  while (true) {
    while (at < bytes.length) {
      const b = bytes[at]!;
      if (b === 0x0a) {
        line++;
        at++;
      } else if (isSpace(b)) at++;
      else if (b === 0x23) {
        while (at < bytes.length && bytes[at] !== 0x0a) at++;
      } else break;
    }
    if (at >= bytes.length) break;
    if (i === n) throw new PgmError(name, `line ${line}: more than the ${n} pixel values of a ${h.width} × ${h.height} image`);
    let v = 0;
    const start = at;
    while (at < bytes.length && isDigit(bytes[at]!)) {
      v = Math.min(v * 10 + (bytes[at]! - 0x30), 1e6); // capped: any value above 65535 is out of range anyway
      at++;
    }
    if (at === start || (at < bytes.length && !isSpace(bytes[at]!) && bytes[at] !== 0x23)) {
      throw new PgmError(name, `line ${line}: pixel ${i} is not a non-negative integer (found '${printable(token(bytes, start))}')`);
    }
    if (v > h.maxval)
      throw new PgmError(
        name,
        `line ${line}: pixel ${i} (row ${Math.floor(i / h.width)}, column ${i % h.width}) is ${v}, above maxval ${h.maxval}`,
      );
    pixels[i++] = v;
  }
  if (i < n) throw new PgmError(name, `the raster is truncated: a ${h.width} × ${h.height} image has ${n} pixels, the file has ${i}`);
  return { ...h, pixels };
}

function countLines(bytes: Uint8Array, end: number): number {
  let lines = 0;
  for (let i = 0; i < end; i++) if (bytes[i] === 0x0a) lines++;
  return lines;
}

/** The whitespace-delimited token at `at` (at most 20 characters), for messages. */
function token(bytes: Uint8Array, at: number): string {
  let end = at;
  while (end < bytes.length && end - at < 20 && !isSpace(bytes[end]!)) end++;
  return end === at ? (at >= bytes.length ? 'end of file' : '') : String.fromCharCode(...bytes.subarray(at, end));
}

function printable(s: string): string {
  return s.replace(/[^\x20-\x7e]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/** Encode a PGM image (for tests and tools): P2 with one row per line, or P5. */
export function encodePgm(format: 'P2' | 'P5', width: number, height: number, maxval: number, pixels: ArrayLike<number>): Uint8Array {
  if (format === 'P2') {
    const rows: string[] = [];
    for (let y = 0; y < height; y++) rows.push(Array.from({ length: width }, (_, x) => pixels[y * width + x]).join(' '));
    return new TextEncoder().encode(`P2\n${width} ${height}\n${maxval}\n${rows.join('\n')}\n`);
  }
  const head = new TextEncoder().encode(`P5\n${width} ${height}\n${maxval}\n`);
  const bpp = maxval < 256 ? 1 : 2;
  const out = new Uint8Array(head.length + width * height * bpp);
  out.set(head);
  for (let i = 0; i < width * height; i++) {
    if (bpp === 1) out[head.length + i] = pixels[i]!;
    else {
      out[head.length + 2 * i] = pixels[i]! >> 8;
      out[head.length + 2 * i + 1] = pixels[i]! & 0xff;
    }
  }
  return out;
}
