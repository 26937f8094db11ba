/**
 * How a WGSL kernel is checked against the class and declaration that name it.
 *
 * Opt-in, never by guessing: a class declares the WGSL kernel of a method in the same
 * declaration as its other backends — the `wgsl` of its static [KERNELS] spec
 * (runtime/kernel-spec.ts); nothing is registered. The lookup for (concrete type T,
 * method M) is kernelFor() of runtime/kernel-spec.ts, the one of the WASM backend (K2 of
 * runtime/kernels.ts): the spec of M declared by the nearest class on T's prototype chain,
 * unless T overrides M below it; a method without a WASM kernel may declare its WGSL
 * kernel under [GPU_KERNELS] instead (gpuKernelFor(), the same rule, asked second). Then
 * its `wgsl`, checked against T: every field it names
 * (bound by name to `override F_<field>`, the byte offset of the field's SOA array in T's
 * blocks) must exist with the declared kind. The kernel's `values` bind overrides to the
 * declaration's `value` params by name (so an app's constants reach the GPU), its `arg` params
 * to the Params uniform (after list_start, list_count and two pad words, 4 bytes each,
 * kinds `args`). Anything that does not fit runs in TypeScript (the runner counts a
 * fallback and says why).
 */
import type { WgslKernel, WgslSpec } from '../kernel-spec.js';
import type { TypeLayout, TypeTable } from '../layout.js';

export type { WgslArgKind as ArgKind, WgslKernel } from '../kernel-spec.js';

export function kernelKey(className: string, method: string): string {
  return `${className}.${method}`;
}

/** Why kernel `k` cannot run `spec` for type `t` (null: it can). */
export function kernelMismatch(k: WgslKernel, t: TypeLayout, spec: WgslSpec): string | null {
  if (t.abstract) return `${t.name} is abstract`;
  for (const [name, kind] of Object.entries(k.fields)) {
    const f = t.fields.find((x) => x.name === name);
    if (!f) return `${t.name} has no field '${name}'`;
    if (f.kind !== kind || f.length !== 0)
      return `${t.name}.${name} is ${f.length ? `an array of ${f.kind}` : f.kind}, the kernel needs ${kind}`;
  }
  const params = Object.values(spec.params);
  for (const [override, name] of Object.entries(k.values ?? {}))
    if (spec.params[name]?.kind !== 'value')
      return `the WGSL kernel binds ${override} to ${name}, which is not a value param of the declaration`;
  const args = params.filter((p) => p.kind === 'arg');
  if (args.length !== k.args.length || args.some((p, i) => p.kind === 'arg' && p.index !== i)) {
    return `the spec passes arguments [${args.map((p) => (p.kind === 'arg' ? p.index : -1)).join(', ')}], the WGSL kernel takes ${k.args.length} in order`;
  }
  if (k.visitsOwnClass) {
    // Every deviceDo of the declaration must be over t's own class (collision's resolveMerge has two tables of it).
    const dd = params.filter((p) => p.kind === 'deviceDo');
    if (dd.length < 1 || dd.some((p) => p.kind === 'deviceDo' && p.class !== t.name))
      return `the WGSL kernel visits ${t.name} objects only, the spec's deviceDo differs`;
    if (t.concrete.length !== 1) return `${t.name} has subclasses; the WGSL kernel visits ${t.name} objects only`;
  }
  return null;
}

/** The declaration's `value` params bound to the kernel's override names. */
export function kernelValues(k: WgslKernel, spec: WgslSpec): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [override, name] of Object.entries(k.values ?? {})) {
    const p = spec.params[name];
    if (p?.kind === 'value') out[override] = p.value;
  }
  return out;
}

/**
 * Why the kernel's references to other classes (classFields, typeIds, ranks) do not fit
 * the runtime's classes (null: they do). Each must name a concrete class of the runtime;
 * a class field must exist with the declared kind; a kernel may not create objects of
 * the class it ranks (runtime/webgpu/ranks.ts R2).
 */
export function kernelClassMismatch(k: WgslKernel, table: TypeTable): string | null {
  const concrete = (name: string): TypeLayout | string => {
    const t = table.types.find((x) => x.name === name);
    if (t === undefined) return `it names class ${name}, which is not in the runtime`;
    if (t.abstract) return `it names class ${name}, which is abstract`;
    return t;
  };
  for (const [name, c] of Object.entries(k.classFields ?? {})) {
    const t = concrete(c.class);
    if (typeof t === 'string') return `${t} (classFields.${name})`;
    const f = t.fields.find((x) => x.name === c.field);
    if (!f) return `${t.name} has no field '${c.field}' (classFields.${name})`;
    if (f.kind !== c.kind || f.length !== 0)
      return `${t.name}.${c.field} is ${f.length ? `an array of ${f.kind}` : f.kind}, the kernel needs ${c.kind} (classFields.${name})`;
  }
  for (const [name, cls] of Object.entries(k.typeIds ?? {})) {
    const t = concrete(cls);
    if (typeof t === 'string') return `${t} (typeIds.${name})`;
  }
  if (k.ranks !== undefined) {
    const t = concrete(k.ranks);
    if (typeof t === 'string') return `${t} (ranks)`;
    if (Object.values(k.typeIds ?? {}).includes(k.ranks)) return `it creates ${k.ranks} objects, whose rank table it reads (ranks)`;
  }
  return null;
}

/**
 * Why the kernel's array fields (`arrays`) do not fit (null: they do): each names a
 * concrete class of the runtime (the kernel's own type `t` when no class is given) with an
 * array field of that name, element kind and number of elements.
 */
export function kernelArrayMismatch(k: WgslKernel, t: TypeLayout, table: TypeTable): string | null {
  for (const [name, a] of Object.entries(k.arrays ?? {})) {
    const owner = a.class === undefined ? t : table.types.find((x) => x.name === a.class);
    if (owner === undefined) return `it names class ${a.class}, which is not in the runtime (arrays.${name})`;
    if (owner.abstract) return `it names class ${owner.name}, which is abstract (arrays.${name})`;
    const f = owner.fields.find((x) => x.name === a.field);
    if (!f) return `${owner.name} has no field '${a.field}' (arrays.${name})`;
    if (f.kind !== a.kind || f.length !== a.length)
      return `${owner.name}.${a.field} is ${f.length ? `an array of ${f.length} ${f.kind}` : f.kind}, the kernel needs an array of ${a.length} ${a.kind} (arrays.${name})`;
  }
  return null;
}

/** The override constants of the kernel's array fields: F_<name>_<k> → byte offset of element k's SOA array. */
export function arrayOffsets(k: WgslKernel, t: TypeLayout, table: TypeTable): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, a] of Object.entries(k.arrays ?? {})) {
    const owner = a.class === undefined ? t : table.types.find((x) => x.name === a.class)!;
    owner.fields.find((x) => x.name === a.field)!.offsets.forEach((off, i) => (out[`F_${name}_${i}`] = off));
  }
  return out;
}
