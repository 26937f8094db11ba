/**
 * Kernel parameter tables: how a WASM kernel receives its parameters, by name and type.
 *
 * Invariants:
 *  (P1) One description. A kernel declaration's `params` (KernelSpec, kernel-spec.ts), an
 *       ordered record parameter name → KernelParam, describes the kernel's parameter table.
 *       The Rust side is generated from it: scripts/gen-kernel-params.mjs writes
 *       wasm/src/params.rs (renderKernelParamsRust below) from the declarations of the apps,
 *       one `#[repr(C)]` struct per export whose fields are the parameters in the same
 *       order (names in snake_case), as wasm/src/layout.rs is generated from
 *       runtime/layout.ts. test/kernel-params.test.ts fails when the committed file is not
 *       what the declarations give; test/wasm-build.test.ts when wasm/pkg is not what the
 *       sources build.
 *  (P2) One layout. Each parameter has an ABI type (paramAbi): a field offset `offset` (u32)
 *       or `offset[n]` (elements 0…n−1 of an inline array), a type id `type_id` (u32), a
 *       number `f32` | `f64` | `u32` | `i32` (arg, value), a deviceDo table `table[k]`
 *       (two u32: pointer and count of entries of 2 + k words), the thread's allocator
 *       state `alloc_state` (u32), or a `zero` or `ranks` table (pointer and count, as
 *       `table`; kernels.ts says what they hold). The table is laid out as
 *       C lays out the struct: each entry at the next multiple of its alignment (8 for
 *       f64, else 4), the size rounded up to the largest alignment. The host writes it
 *       into the thread's scratch area and passes its address as the kernel's sixth and
 *       last argument, after (list, from, to, blocks, block bytes).
 *  (P3) Checked by name and type when a kernel is bound. The module states which table
 *       each kernel reads: `smmo_params_<export>()` returns the address of the table's
 *       descriptor, "name:abi,name:abi,…" NUL-terminated, generated with the struct. The
 *       host compares it with the declaration's descriptor entry by entry: a parameter
 *       that is missing, extra, renamed, moved (two parameters swapped) or of another ABI
 *       type is a KernelParamsError naming it, before the kernel ever runs. So a
 *       declaration and a module built from different descriptions never run together.
 */
import { KernelParamsError } from './errors.js';
import type { KernelParam, KernelSpec } from './kernel-spec.js';

/** One entry of a kernel's parameter table. */
export interface TableEntry {
  /** The parameter's name (the declaration's key; snake_case in Rust). */
  readonly name: string;
  readonly param: KernelParam;
  /** ABI type (P2). */
  readonly abi: string;
  /** Byte offset in the table. */
  readonly offset: number;
  readonly bytes: number;
}

export interface ParamTable {
  readonly entries: readonly TableEntry[];
  /** Size of the table in bytes (a multiple of `align`). */
  readonly bytes: number;
  readonly align: number;
  /** "name:abi,…" (P3). */
  readonly descriptor: string;
}

const NAME = /^[a-z][A-Za-z0-9]*$/;
const NUMBER_TYPES = new Set(['f32', 'f64', 'u32', 'i32']);

/** The ABI type of one parameter (P2), or a KernelParamsError saying what is wrong with it. */
export function paramAbi(p: KernelParam, name: string, label: string): string {
  switch (p.kind) {
    case 'field': {
      if (p.elements === undefined) return 'offset';
      if (!Number.isInteger(p.elements) || p.elements < 1 || p.element !== undefined)
        throw new KernelParamsError(label, `parameter ${name}: elements must be a positive integer, without element (got ${p.elements})`);
      return `offset[${p.elements}]`;
    }
    case 'typeId':
      return 'type_id';
    case 'arg':
    case 'value':
      if (!NUMBER_TYPES.has(p.type))
        throw new KernelParamsError(label, `parameter ${name} (${p.kind}) must have a type of f32, f64, u32 or i32, got ${String(p.type)}`);
      return p.type;
    case 'deviceDo':
      return `table[${p.fields.length}]`;
    case 'allocator':
      return 'alloc_state';
    case 'zero':
      return 'zero';
    case 'ranks':
      return 'ranks';
    default:
      throw new KernelParamsError(label, `parameter ${name}: unknown kind in ${JSON.stringify(p)}`);
  }
}

function sizeOf(abi: string): { bytes: number; align: number } {
  if (abi === 'f64') return { bytes: 8, align: 8 };
  if (abi.startsWith('table[') || abi === 'zero' || abi === 'ranks') return { bytes: 8, align: 4 };
  const n = /^offset\[(\d+)\]$/.exec(abi);
  return { bytes: n ? 4 * Number(n[1]) : 4, align: 4 };
}

/** The parameter table of `spec` (P1, P2); `label` names the kernel in errors. */
export function paramTable(spec: KernelSpec, label = `${spec.export}`): ParamTable {
  if (spec.params === null || typeof spec.params !== 'object' || Array.isArray(spec.params))
    throw new KernelParamsError(label, 'params must be a record of named parameters (name → parameter), in table order');
  const entries: TableEntry[] = [];
  let at = 0;
  let align = 4;
  for (const [name, param] of Object.entries(spec.params)) {
    if (!NAME.test(name)) throw new KernelParamsError(label, `parameter name '${name}' must be camelCase letters and digits`);
    const abi = paramAbi(param, name, label);
    const s = sizeOf(abi);
    at = Math.ceil(at / s.align) * s.align;
    entries.push({ name, param, abi, offset: at, bytes: s.bytes });
    at += s.bytes;
    align = Math.max(align, s.align);
  }
  const bytes = Math.max(align, Math.ceil(at / align) * align);
  return { entries, bytes, align, descriptor: entries.map((e) => `${e.name}:${e.abi}`).join(',') };
}

/**
 * Compare the descriptor the module was built with against the declaration's (P3); throws
 * a KernelParamsError naming the first parameter that differs.
 */
export function checkDescriptor(label: string, exportName: string, module: string, declared: ParamTable): void {
  if (module === declared.descriptor) return;
  const m = module === '' ? [] : module.split(',');
  const d = declared.entries.map((e) => `${e.name}:${e.abi}`);
  const rebuild =
    'the declaration and wasm/src were built from different descriptions: after changing a declaration run ' +
    '`npx tsc -p . && node scripts/gen-kernel-params.mjs && node scripts/build-wasm.mjs`';
  for (let i = 0; i < Math.max(m.length, d.length); i++) {
    if (m[i] === d[i]) continue;
    const [mn, ma] = (m[i] ?? '').split(':');
    const [dn, da] = (d[i] ?? '').split(':');
    let what: string;
    if (m[i] === undefined) what = `the declaration has an extra parameter ${dn} (${da})`;
    else if (d[i] === undefined) what = `the declaration lacks parameter ${mn} (${ma})`;
    else if (mn === dn) what = `parameter ${dn} is ${da} in the declaration but ${ma} in the module`;
    else if (d.some((x) => x.startsWith(`${mn}:`)))
      what = `parameter ${i + 1} is ${dn} in the declaration but ${mn} in the module (parameters swapped or moved)`;
    else what = `parameter ${i + 1} is ${dn} (${da}) in the declaration but ${mn} (${ma}) in the module`;
    throw new KernelParamsError(label, `wasm export ${exportName}: ${what}; module table ${module || '(empty)'}; ${rebuild}`);
  }
}

// ------------------------------------------------------------------ Rust

/** posX → pos_x */
export function snakeCase(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** nbody_compute_force → NbodyComputeForce */
function pascalCase(exportName: string): string {
  return exportName.replace(/(^|_)([a-z0-9])/g, (_m, _u, c: string) => c.toUpperCase());
}

/** `head rhs` on one line as rustfmt writes it (max_width 140, wasm/rustfmt.toml), else the rhs on its own line. */
function rustfmtStatic(head: string, rhs: string): string {
  const one = `${head} ${rhs}`;
  return one.length <= 140 ? one : `${head}\n    ${rhs}`;
}

function rustType(abi: string): string {
  const n = /^offset\[(\d+)\]$/.exec(abi);
  if (n) return `[u32; ${n[1]}]`;
  if (abi.startsWith('table[') || abi === 'zero' || abi === 'ranks') return 'Table';
  if (abi === 'offset' || abi === 'type_id' || abi === 'alloc_state') return 'u32';
  return abi;
}

/**
 * wasm/src/params.rs for these declarations (P1): per export, its table struct, a size
 * check, a reader and the descriptor export (P3). Declarations of the same export must
 * describe the same table (names and ABI types; bindings may differ).
 */
export function renderKernelParamsRust(specs: readonly { spec: KernelSpec; origin: string }[]): string {
  const byExport = new Map<string, { table: ParamTable; origins: string[] }>();
  for (const { spec, origin } of specs) {
    if (!/^[a-z][a-z0-9_]*$/.test(spec.export)) throw new KernelParamsError(origin, `wasm export name '${spec.export}' must be snake_case`);
    const table = paramTable(spec, origin);
    const seen = byExport.get(spec.export);
    if (seen === undefined) byExport.set(spec.export, { table, origins: [origin] });
    else if (seen.table.descriptor !== table.descriptor)
      throw new KernelParamsError(
        origin,
        `declares wasm export ${spec.export} with table ${table.descriptor}, but ${seen.origins[0]} with ${seen.table.descriptor}`,
      );
    else seen.origins.push(origin);
  }
  const out = [
    '//! @generated by scripts/gen-kernel-params.mjs from the kernel declarations of the apps',
    '//! (static [KERNELS], apps/*/kernels.ts): one parameter table per kernel, the single',
    '//! description of its parameters (runtime/kernel-params.ts P1–P3). Do not edit: change the',
    '//! declaration, then run `npx tsc -p . && node scripts/gen-kernel-params.mjs`',
    '//! (test/kernel-params.test.ts checks this file).',
    '',
    '/// A deviceDo table: `count` entries of [first index, count, field offsets…] (u32 words) at byte `ptr`.',
    '#[repr(C)]',
    '#[derive(Clone, Copy)]',
    'pub struct Table {',
    '    pub ptr: u32,',
    '    pub count: u32,',
    '}',
  ];
  for (const [name, { table, origins }] of [...byExport].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
    const type = pascalCase(name);
    const desc = `${table.descriptor}\0`;
    out.push(
      '',
      `/// Parameters of \`${name}\` (declared by ${[...new Set(origins)].join(', ')}).`,
      '#[repr(C)]',
      '#[derive(Clone, Copy)]',
      `pub struct ${type} {`,
      ...table.entries.map((e) => `    pub ${snakeCase(e.name)}: ${rustType(e.abi)},`),
      '}',
      '',
      `const _: () = assert!(core::mem::size_of::<${type}>() == ${table.bytes});`,
      '',
      `impl ${type} {`,
      '    /// The table the host wrote at byte `ptr`.',
      '    ///',
      '    /// # Safety',
      `    /// \`ptr\` is the address of a \`${type}\` written by the host (runtime/kernels.ts), aligned to ${table.align}.`,
      '    #[inline(always)]',
      '    pub unsafe fn read(ptr: u32) -> Self {',
      '        // SAFETY: the caller guarantees a written, aligned table at `ptr`.',
      '        unsafe { core::ptr::read(ptr as usize as *const Self) }',
      '    }',
      '}',
      '',
      rustfmtStatic(`static ${name.toUpperCase()}_DESCRIPTOR: [u8; ${desc.length}] =`, `*b"${desc.replace('\0', '\\0')}";`),
      '',
      `/// The descriptor of \`${type}\` (NUL-terminated "name:abi,…"), checked by the host at binding.`,
      '#[no_mangle]',
      `pub extern "C" fn smmo_params_${name}() -> u32 {`,
      `    ${name.toUpperCase()}_DESCRIPTOR.as_ptr() as u32`,
      '}',
    );
  }
  return out.join('\n') + '\n';
}
