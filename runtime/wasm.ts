/**
 * The WebAssembly module (wasm/, built by scripts/build-wasm.mjs): the allocator core that
 * every runtime uses (wasm/src/alloc/, bound by runtime/allocator.ts) and the kernels of
 * backend 'wasm'. Loading it, one instance per thread on the heap's memory, and the Rust
 * side of the layout contract.
 *
 * Memory below RESERVED_BYTES (layout.ts) is not heap:
 *
 *   0            __heap_base                                         RESERVED_BYTES - 16   RESERVED_BYTES
 *   ┌────────────┬──────────────┬──────────────┬─────┬──────────────┬─────────────────────┐
 *   │ module:    │ thread slot 0│ thread slot 1│ …   │ (unused)     │ slot claim bitmap   │
 *   │ stack,data │ stack|scratch│ stack|scratch│     │              │ 4 × u32             │
 *   └────────────┴──────────────┴──────────────┴─────┴──────────────┴─────────────────────┘
 *
 * Invariants:
 *  (W1) The module's own region [0, __heap_base) ends below the first slot: the link of the
 *       module fails when stack + static data exceed 1 MiB (--initial-memory, see
 *       scripts/build-wasm.mjs) and `instantiate` checks __heap_base ≤ SLOTS_END.
 *  (W2) A thread slot is used by at most one instance at a time: instances claim a bit of
 *       the claim bitmap with Atomics.or and clear it in dispose(). The instance sets its
 *       `__stack_pointer` (a per-instance global) to the top of its slot's stack, so
 *       instances on different threads never share a shadow stack.
 *  (W3) The module imports exactly `env.memory` and `env.smmo_pause` (the bounded sleep of
 *       the allocator's retry loops: stable Rust 1.63 has no `memory.atomic.wait32`
 *       intrinsic, so the host sleeps with Atomics.wait on a private cell, at most 1 ms per
 *       call; see wasm/src/alloc/bits.rs), and reports the ABI version and layout hash the
 *       TypeScript side expects (a stale build is refused with the command that rebuilds it).
 *  (W4) A WebAssembly.Module is compiled once per JavaScript realm (main thread or worker)
 *       and file; instances are cheap and made per heap view (Heap.create / Heap.attach: one
 *       per thread), shared by the thread's allocator and kernels.
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { UsageError } from './errors.js';
import { layoutConstants, RESERVED_BYTES } from './layout.js';

/** Version of the module's ABI (wasm/src/lib.rs ABI_VERSION). */
export const WASM_ABI_VERSION = 3;
/**
 * Bytes of shadow stack per thread slot; kernels do not recurse and use a few hundred
 * bytes. 8 KiB (not 16) so that at least MAX_THREADS + 1 slots (runtime.ts) fit below
 * RESERVED_BYTES (test/wasm-module.test.ts checks the count).
 */
export const SLOT_STACK_BYTES = 8 * 1024;
/** Bytes of argument scratch per thread slot: deviceDo source tables of a kernel call, and the handles of an allocateMany call (runtime/allocator.ts); a thread makes one call at a time. */
export const SLOT_SCRATCH_BYTES = 4 * 1024;
export const SLOT_BYTES = SLOT_STACK_BYTES + SLOT_SCRATCH_BYTES;
/** The claim bitmap: the last 16 bytes of the reserved region. */
export const SLOT_CLAIM_OFFSET = RESERVED_BYTES - 16;
const SLOT_CLAIM_WORDS = 4;
/** Slots end where the claim bitmap starts. */
export const SLOTS_END = SLOT_CLAIM_OFFSET;

import type { WasmOptions } from './wasm-options.js';
export type { WasmOptions, WasmVariant } from './wasm-options.js';

/**
 * The folder of the modules that smmo ships: wasm/pkg/ of the package (this file is
 * dist/runtime/wasm.js). scripts/build-wasm.mjs writes it; it is committed and in the npm
 * package, so `npm install` users need no Rust. The environment variable SMMO_WASM_DIR
 * overrides it (the mutation script, scripts/mutate-rust.mjs, runs the tests against
 * modules built elsewhere).
 */
export function defaultWasmDir(): string {
  const env = process.env['SMMO_WASM_DIR'];
  if (env !== undefined && env !== '') return env;
  return fileURLToPath(new URL('../../wasm/pkg/', import.meta.url));
}

export function wasmFile(options: WasmOptions = {}): string {
  const variant = options.variant ?? 'simd';
  if (variant !== 'simd' && variant !== 'scalar') throw new UsageError(`wasm.variant must be 'simd' or 'scalar', got ${String(variant)}`);
  const dir = options.dir ?? defaultWasmDir();
  return `${dir.endsWith('/') ? dir : dir + '/'}smmo_${variant}.wasm`;
}

export const BUILD_HINT =
  'smmo ships the modules in wasm/pkg/ (npm package and repository): reinstall smmo or restore that folder ' +
  '(`git checkout wasm/pkg`), or rebuild them from wasm/src with `node scripts/build-wasm.mjs --force` (needs rustc with the ' +
  'wasm32-unknown-unknown target: `apt-get install -y --no-install-recommends rustc libstd-rust-dev-wasm32 cargo lld-14` on ' +
  'Debian/Ubuntu, or `rustup target add wasm32-unknown-unknown`)';

// ------------------------------------------------------------------ layout contract

/** FNV-1a of "NAME=value\n" over layoutConstants(), in its order: the module must carry the same. */
export function layoutHash(constants: Record<string, number> = layoutConstants()): number {
  let h = 0x811c9dc5;
  const text = Object.entries(constants)
    .map(([k, v]) => `${k}=${v}\n`)
    .join('');
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** The text of wasm/src/layout.rs for these constants (scripts/gen-layout.mjs writes it; a test compares). */
export function renderLayoutRust(constants: Record<string, number> = layoutConstants()): string {
  const lines = [
    '//! @generated by scripts/gen-layout.mjs from layoutConstants() of runtime/layout.ts, the',
    '//! single source of the heap layout. Do not edit: change runtime/layout.ts, then run',
    '//! `npx tsc -p . && node scripts/gen-layout.mjs` (test/wasm-module.test.ts checks this file).',
    '',
  ];
  for (const [name, value] of Object.entries(constants)) {
    if (!/^[A-Z][A-Z0-9_]*$/.test(name)) throw new Error(`layoutConstants(): '${name}' is not a SCREAMING_CASE name`);
    if (!Number.isInteger(value) || value < -0x80000000 || value > 0xffffffff)
      throw new Error(`layoutConstants(): ${name}=${value} is not a 32-bit integer`);
    lines.push(`pub const ${name}: ${value < 0 ? 'i32' : 'u32'} = ${value};`);
  }
  lines.push(`/// FNV-1a of "NAME=value\\n" over the constants above (runtime/wasm.ts layoutHash).`);
  lines.push(`pub const LAYOUT_HASH: u32 = 0x${layoutHash(constants).toString(16).padStart(8, '0')};`);
  return lines.join('\n') + '\n';
}

// ------------------------------------------------------------------ module

const modules = new Map<string, WebAssembly.Module>();

/** What the module must import (W3), in this order. */
const IMPORTS = [
  { module: 'env', name: 'memory', kind: 'memory' },
  { module: 'env', name: 'smmo_pause', kind: 'function' },
];

/** Exports the loader checks for: the ABI, the stack, the allocator core (runtime/allocator.ts binds the rest). */
const REQUIRED_EXPORTS = [
  'smmo_abi_version',
  'smmo_layout_hash',
  'smmo_has_simd',
  '__stack_pointer',
  '__heap_base',
  'smmo_heap_format',
  'smmo_alloc_claim',
  'smmo_alloc_allocate',
  'smmo_alloc_release',
];

/** Compile (once per realm and file) and check the module. */
export function loadWasmModule(options: WasmOptions = {}): WebAssembly.Module {
  const file = wasmFile(options);
  const cached = modules.get(file);
  if (cached) return cached;
  if (!existsSync(file)) throw new UsageError(`the WebAssembly module ${file} (allocator and kernels) does not exist; ${BUILD_HINT}`);
  let module: WebAssembly.Module;
  try {
    module = new WebAssembly.Module(readFileSync(file));
  } catch (e) {
    const hint = (options.variant ?? 'simd') === 'simd' ? "; if this Node.js lacks WebAssembly SIMD, use wasm: { variant: 'scalar' }" : '';
    throw new UsageError(`the WebAssembly module ${file} does not compile (${(e as Error).message})${hint}; ${BUILD_HINT}`, { cause: e });
  }
  const imports = WebAssembly.Module.imports(module);
  const same = imports.length === IMPORTS.length && IMPORTS.every((w, k) => JSON.stringify(imports[k]) === JSON.stringify(w));
  if (!same) {
    throw new UsageError(
      `the WebAssembly module ${file} must import exactly ${IMPORTS.map((i) => `${i.module}.${i.name} (${i.kind})`).join(', ')}, but imports ${imports.map((i) => `${i.module}.${i.name} (${i.kind})`).join(', ') || 'nothing'}; ${BUILD_HINT}`,
    );
  }
  const exported = new Set(WebAssembly.Module.exports(module).map((e) => e.name));
  for (const name of REQUIRED_EXPORTS) {
    if (!exported.has(name))
      throw new UsageError(
        `the WebAssembly module ${file} does not export ${name}; it is not an smmo module of this version; ${BUILD_HINT}`,
      );
  }
  modules.set(file, module);
  return module;
}

/** A private cell nobody notifies: Atomics.wait on it always sleeps for its timeout. */
const pauseCell = new Int32Array(new SharedArrayBuffer(4));

/**
 * env.smmo_pause (W3): the sleep of the allocator's retry attempt `attempt` (only after
 * the spinning attempts): up to 1 ms, longer for later attempts, always bounded.
 */
export function hostPause(attempt: number): void {
  Atomics.wait(pauseCell, 0, 0, Math.min(1, attempt / 1000));
}

/** The import object of an instance on `memory`. */
export function wasmImports(memory: WebAssembly.Memory): Record<string, Record<string, unknown>> {
  return { env: { memory, smmo_pause: hostPause } };
}

// ------------------------------------------------------------------ per-thread instance

type Fn = (...a: number[]) => number;

/** One thread's instance of the kernel module, with its thread slot (W2). */
export class WasmInstance {
  /** Byte offset of this thread's argument scratch area, and its size. */
  readonly scratch: number;
  readonly scratchBytes = SLOT_SCRATCH_BYTES;
  readonly simd: boolean;
  private released = false;

  private constructor(
    readonly exports: WebAssembly.Exports,
    private readonly i32: Int32Array,
    /** Index of the claimed thread slot. */
    readonly slot: number,
    slotBase: number,
    readonly file: string,
  ) {
    this.scratch = slotBase + SLOT_STACK_BYTES;
    (exports['__stack_pointer'] as WebAssembly.Global).value = slotBase + SLOT_STACK_BYTES; // stack grows down from here
    this.simd = (exports['smmo_has_simd'] as Fn)() === 1;
  }

  /** Instantiate `module` on `memory` (the heap) and claim a thread slot. */
  static create(module: WebAssembly.Module, memory: WebAssembly.Memory, file: string): WasmInstance {
    const instance = new WebAssembly.Instance(module, wasmImports(memory));
    const ex = instance.exports;
    const abi = (ex['smmo_abi_version'] as Fn)();
    if (abi !== WASM_ABI_VERSION) {
      throw new UsageError(`the WebAssembly module ${file} has ABI ${abi}, this runtime needs ${WASM_ABI_VERSION}; ${BUILD_HINT}`);
    }
    const hash = (ex['smmo_layout_hash'] as Fn)() >>> 0;
    if (hash !== layoutHash()) {
      throw new UsageError(
        `the WebAssembly module ${file} was built for another heap layout (hash ${hash.toString(16)}, expected ${layoutHash().toString(16)}); ${BUILD_HINT}`,
      );
    }
    const heapBase = (ex['__heap_base'] as WebAssembly.Global).value;
    const first = Math.ceil(heapBase / 16) * 16;
    const slots = Math.min(32 * SLOT_CLAIM_WORDS, Math.floor((SLOTS_END - first) / SLOT_BYTES));
    if (heapBase > SLOTS_END || slots < 1) {
      throw new UsageError(
        `the WebAssembly module ${file} uses ${heapBase} bytes of static memory, which leaves no thread slot below ${SLOTS_END}; ${BUILD_HINT}`,
      );
    }
    const i32 = new Int32Array((memory as unknown as { buffer: SharedArrayBuffer }).buffer);
    const slot = claimSlot(i32, slots);
    return new WasmInstance(ex, i32, slot, first + slot * SLOT_BYTES, file);
  }

  /** The exported kernel function `name`, or undefined. */
  fn(name: string): Fn | undefined {
    const f = this.exports[name];
    return typeof f === 'function' ? (f as Fn) : undefined;
  }

  /** Give the thread slot back (idempotent). The instance must not be used afterwards. */
  dispose(): void {
    if (this.released) return;
    this.released = true;
    Atomics.and(this.i32, (SLOT_CLAIM_OFFSET >> 2) + (this.slot >> 5), ~(1 << (this.slot & 31)));
  }
}

/**
 * Give back thread slot `slot` of the heap whose memory `i32` views, for a thread that can
 * no longer do it itself: a worker thread that died or was terminated (workers/pool.ts).
 * Its instance ran on that thread only, so nothing uses the slot any more (W2).
 */
export function releaseWasmSlot(i32: Int32Array, slot: number): void {
  Atomics.and(i32, (SLOT_CLAIM_OFFSET >> 2) + (slot >> 5), ~(1 << (slot & 31)));
}

/** Claim the lowest free slot of `slots` (one pass over the bitmap: bounded). */
function claimSlot(i32: Int32Array, slots: number): number {
  for (let s = 0; s < slots; s++) {
    const bit = 1 << (s & 31);
    if ((Atomics.or(i32, (SLOT_CLAIM_OFFSET >> 2) + (s >> 5), bit) & bit) === 0) return s;
  }
  throw new UsageError(
    `all ${slots} WebAssembly thread slots of this heap are taken: at most ${slots} threads (each with the allocator and kernels) can use one heap at a time ` +
      `(a slot is given back by Runtime.close() and ThreadContext.dispose()); use fewer threads`,
  );
}
