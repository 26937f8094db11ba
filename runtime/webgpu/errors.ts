/**
 * Typed errors of the WebGPU backend. Each says what was wrong and what to do.
 */
import { SmmoError } from '../errors.js';

/** How to get a WebGPU adapter on Linux, shared by the messages below and the docs. */
export const HOW_TO_GET_AN_ADAPTER =
  "To get one: on a machine without a GPU install Debian/Ubuntu's `chromium` package (it ships SwiftShader, a " +
  'software Vulkan driver) and the Vulkan loader `libvulkan1` (or start node with LD_LIBRARY_PATH=/usr/lib/chromium), ' +
  'and set VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json (smmo sets it by itself when that file exists ' +
  'and neither VK_ICD_FILENAMES nor VK_DRIVER_FILES is set); on a machine with a GPU install its Vulkan driver ' +
  "(NVIDIA: the proprietary driver's Vulkan ICD, e.g. VK_DRIVER_FILES=/usr/share/vulkan/icd.d/nvidia_icd.json; " +
  "AMD/Intel: Mesa's radv/anv) and libvulkan1.";

/**
 * No WebGPU device can be had: the optional npm package `webgpu` is not installed or
 * cannot load, or Dawn found no adapter. `reason` tells which.
 */
export class GpuUnavailableError extends SmmoError {
  constructor(
    readonly reason: 'no-package' | 'no-adapter' | 'no-device' | 'software-only',
    detail: string,
    options?: { cause?: unknown },
  ) {
    super(`WebGPU backend unavailable (${reason}): ${detail}`, options);
  }
}

/** The GPU reported an error (shader compilation, validation, out of memory, device lost). */
export class GpuError extends SmmoError {}

/**
 * A device-side heap operation (WGSL allocator) failed: the heap was full, a retry loop
 * hit its iteration cap, or a free named a slot that was not allocated. `codes` are the
 * status bits (STATUS_* in runtime/webgpu/wgsl/alloc.wgsl) that the invocations reported.
 */
export class GpuHeapError extends SmmoError {
  constructor(
    readonly codes: number,
    readonly failedInvocations: number,
  ) {
    super(
      `device-side heap operation failed in ${failedInvocations} invocation(s): ${describeStatus(codes)}. ` +
        'Heap full: create the runtime with a larger heap. Retry cap: the heap may be corrupted (run validateHeap()) or ' +
        'the GPU does not make progress for spinning invocations (use workgroup size 1 for allocating kernels).',
    );
  }
}

/** Elements of a local typed array in a generated kernel (runtime/compiler/emit-wgsl.ts W11: a per-invocation array). */
export const LOCAL_ARRAY_CAP = 1024;

/** Status bits written by the WGSL allocator (must match alloc.wgsl). */
export const STATUS = {
  HEAP_FULL: 1,
  SPIN_CAP: 2,
  BAD_FREE: 4,
  DOUBLE_FREE: 8,
  BAD_BLOCK: 16,
  // Set by generated kernels (runtime/compiler/emit-wgsl.ts W4): what JavaScript would throw.
  NULL_DEREF: 32,
  RANGE: 64,
  THROW: 128,
  BAD_HANDLE: 256,
  RANKS: 512,
  LOCAL_ARRAY: 1024,
} as const;

/** The status bits of generated kernels' own checks (not the allocator's). */
export const LANE_STATUS = STATUS.NULL_DEREF | STATUS.RANGE | STATUS.THROW | STATUS.BAD_HANDLE | STATUS.RANKS | STATUS.LOCAL_ARRAY;

/**
 * A generated WGSL kernel (runtime/compiler/emit-wgsl.ts) stopped invocations where the
 * JavaScript method would have thrown: a null dereference, an inline-array index out of
 * bounds, an invalid handle given to ctx.get(), a `throw` statement, a rank table of another
 * length than rankTable() was told (runtime/rank-table.ts R2); or where the GPU cannot
 * follow JavaScript: a local typed array past LOCAL_ARRAY_CAP or indexed outside its length. `passes` are the
 * passes of such kernels since the status was last read (one of them failed).
 */
export class GpuLaneError extends SmmoError {
  constructor(
    readonly codes: number,
    readonly failedInvocations: number,
    readonly passes: readonly string[],
  ) {
    super(
      `a generated WGSL kernel stopped ${failedInvocations} invocation(s): ${describeStatus(codes)}, in ` +
        `${passes.length === 1 ? `pass ${passes[0]}` : `one of the passes ${passes.join(', ')}`} (since the heap was last read). ` +
        "The same method on backend 'ts' throws JavaScript's error with its message and object: run there, or with " +
        '`smmo run … --check-every 1` to find the pass.',
    );
  }
}

/** The error for status words [codes, failed invocations]: GpuHeapError for the allocator's bits, else GpuLaneError. */
export function statusError(codes: number, failed: number, passes: readonly string[]): GpuHeapError | GpuLaneError {
  if ((codes & ~LANE_STATUS) === 0) return new GpuLaneError(codes, failed, passes);
  return new GpuHeapError(codes, failed);
}

/** What each status bit means, in the order describeStatus lists them. */
const STATUS_TEXT: readonly (readonly [number, string])[] = [
  [STATUS.HEAP_FULL, 'heap full (no free block)'],
  [STATUS.SPIN_CAP, 'a retry loop reached its iteration cap'],
  [STATUS.BAD_FREE, "free of a slot in a free block or beyond the type's slots"],
  [STATUS.DOUBLE_FREE, 'free of a slot that was not allocated'],
  [STATUS.BAD_BLOCK, "a block's type, iteration, generation or allocation word disagrees with its state (heap corrupted)"],
  [STATUS.NULL_DEREF, 'a field of null was read or written'],
  [STATUS.RANGE, 'an inline-array index was out of bounds'],
  [STATUS.THROW, 'a throw statement was reached'],
  [STATUS.BAD_HANDLE, 'ctx.get() was given a number that is not a handle of a live object'],
  [STATUS.RANKS, "a rank table does not have the number of objects rankTable() was told (its class's objects were created or deleted)"],
  [
    STATUS.LOCAL_ARRAY,
    `a local typed array was made longer than the GPU's ${LOCAL_ARRAY_CAP} elements, or indexed outside its length (where JavaScript reads undefined and drops a write)`,
  ],
];

export function describeStatus(codes: number): string {
  const parts = STATUS_TEXT.filter(([bit]) => (codes & bit) !== 0).map(([, text]) => text);
  const other = codes & ~0x7ff;
  if (other) parts.push(`unknown status bits 0x${other.toString(16)}`);
  return parts.join('; ') || 'no error';
}
