/**
 * Accessor classes: for each concrete type, a generated subclass of the user's class
 * whose getters and setters read and write the SOA arrays of the heap.
 *
 * A view object (an instance of an accessor class) holds three numbers: the byte
 * offset of its block (__o), its slot (__s) and its handle (__h). A field F of type T
 * at block offset OFF (per concrete type: N_T differs between types) is
 *
 *     f32:  F32[((__o + OFF) >>> 2) + __s]        f64: F64[((__o + OFF) >>> 3) + __s]
 *     u8 :  U8[__o + OFF + __s]                   ref: U32[…] (handle; 0 = null)
 *
 * The offsets are baked into the generated source as constants, so every accessor is a
 * tiny monomorphic function that V8 inlines into the do-all loop. Checked mode
 * generates a second set of classes whose accessors first check that the view's slot
 * is still allocated, in a block of the view's type, in the slot and block generations
 * the view recorded (thread.ts V1: a stale view is refused), and that references name
 * live objects of the right type. In both modes a reference setter refuses a value that
 * is not a view of this runtime (thread.ts V2; `__host` on the class's prototype).
 */
import { SchemaError } from './errors.js';
import type { Heap } from './heap.js';
import { BLOCK_GEN_WORD, type FieldLayout, type TypeLayout } from './layout.js';
import type { SmmoClass, SmmoObject } from './schema.js';

/** Constructor of a view class (no arguments; position with place()). */
export type ViewClass = new () => SmmoObject;

/** What generated code calls back into (kept small and monomorphic). */
export interface AccessorHost {
  /** A fresh view of `handle` (0 → null is handled by the caller). */
  view(handle: number): SmmoObject;
  /** Checked mode: throw if `handle` is not a live object of `targetTypeId` or a subclass. */
  checkRef(handle: number, targetTypeId: number, where: string): void;
  /** A value assigned to a reference: throw unless it is a view of this host (checked: live, typed, fresh). */
  checkRefValue(v: unknown, targetTypeId: number, where: string): void;
  /** Checked mode: throw because `obj` was deleted. */
  deadAccess(obj: SmmoObject, field: string): never;
  readonly context: unknown;
}

const VIEW: Record<string, { arr: string; shift: number }> = {
  f32: { arr: 'F32', shift: 2 },
  f64: { arr: 'F64', shift: 3 },
  i8: { arr: 'I8', shift: 0 },
  u8: { arr: 'U8', shift: 0 },
  bool: { arr: 'U8', shift: 0 },
  i16: { arr: 'I16', shift: 1 },
  u16: { arr: 'U16', shift: 1 },
  i32: { arr: 'I32', shift: 2 },
  u32: { arr: 'U32', shift: 2 },
  ref: { arr: 'U32', shift: 2 },
};

function index(f: FieldLayout, k: number): string {
  const { shift } = VIEW[f.kind]!;
  const off = f.offsets[k]!;
  if (shift === 2) return `this.__i + ${off >>> 2}`; // offsets are 16-byte aligned
  return shift === 0 ? `this.__o + ${off} + this.__s` : `((this.__o + ${off}) >>> ${shift}) + this.__s`;
}

/** Source of the getter/setter pair of element k of field f (k = 0 for scalars). */
function accessorBody(
  f: FieldLayout,
  k: number,
  checked: boolean,
  typeIds: Map<SmmoClass, number>,
  owner: string,
  genWord: number,
): { get: string; set: string } {
  const arr = VIEW[f.kind]!.arr;
  const idx = index(f, k);
  // Checked mode: the slot's and the block's generations must be those the view recorded
  // when it was made from a live object (thread.ts V1). That alone says the object still
  // lives: deleting it increments the slot's generation (allocator.ts G1), and a block can
  // only change type (or be reused after being free) through a re-initialisation, which
  // increments the block's. (It replaces the allocation-bit and block-type tests, which
  // missed a slot reused by a new object of the same class.) deadAccess works out why.
  const live = checked
    ? `if (I32[this.__i + ${genWord}] !== this.__g || I32[(this.__o >>> 2) + ${BLOCK_GEN_WORD}] !== this.__b) ` +
      `host.deadAccess(this, ${JSON.stringify(f.name)});\n`
    : '';
  switch (f.kind) {
    case 'bool':
      return { get: `${live}return U8[${idx}] !== 0;`, set: `${live}U8[${idx}] = v ? 1 : 0;` };
    case 'ref': {
      const target = typeIds.get(f.target!())!;
      const where = JSON.stringify(`${owner}.${f.name}`);
      const chkGet = checked ? `host.checkRef(h, ${target}, ${where});\n` : '';
      // Unchecked: only a value that is not this runtime's view takes the call (which throws).
      const chkSet = `if (v != null${checked ? '' : ' && v.__host !== host'}) host.checkRefValue(v, ${target}, ${where});\n`;
      return {
        get: `${live}const h = U32[${idx}];\nif (h === 0) return null;\n${chkGet}return host.view(h);`,
        set: `${live}${chkSet}U32[${idx}] = v == null ? 0 : v.__h;`,
      };
    }
    default:
      return { get: `${live}return ${arr}[${idx}];`, set: `${live}${arr}[${idx}] = v;` };
  }
}

/**
 * Generate the accessor class of concrete type `t` as a subclass of its user class.
 * `typeIds` maps every registered class to its type id (for checked references).
 */
export function makeAccessorClass(
  t: TypeLayout,
  heap: Heap,
  host: AccessorHost,
  checked: boolean,
  typeIds: Map<SmmoClass, number>,
): ViewClass {
  const lines: string[] = [];
  const arrays: string[] = [];
  for (const f of t.fields) {
    if (f.length === 0) {
      const { get, set } = accessorBody(f, 0, checked, typeIds, t.name, t.genOffset >> 2);
      lines.push(`get ${f.name}() {\n${get}\n}`, `set ${f.name}(v) {\n${set}\n}`);
    } else {
      // Inline array: a small view class bound to this object view, created once per view.
      const cases = f.offsets.map((_, k) => {
        const { get, set } = accessorBody(f, k, checked, typeIds, t.name, t.genOffset >> 2);
        // Every `this` of the object accessor means the owning view here, including the
        // bare `this` passed to host.deadAccess (fix: it used to pass the array view).
        const rebind = (s: string): string => s.replace(/\bthis\b/g, 'this.o');
        return { get: `case ${k}: { ${rebind(get)} }`, set: `case ${k}: { ${rebind(set)} return; }` };
      });
      const cls = `Arr_${f.name}`;
      arrays.push(
        `class ${cls} {\nconstructor(o) { this.o = o; }\nget length() { return ${f.length}; }\n` +
          `get(i) {\nswitch (i) {\n${cases.map((c) => c.get).join('\n')}\n}\nthrow new RangeError(${JSON.stringify(`${t.name}.${f.name}[`)} + i + '] is out of bounds (length ${f.length})');\n}\n` +
          `set(i, v) {\nswitch (i) {\n${cases.map((c) => c.set).join('\n')}\n}\nthrow new RangeError(${JSON.stringify(`${t.name}.${f.name}[`)} + i + '] is out of bounds (length ${f.length})');\n}\n}`,
      );
      // Created on first use (most views never touch their arrays); the slot exists
      // from the constructor on, so every view of the class keeps one shape.
      lines.push(`get ${f.name}() { return this.__a_${f.name} ?? (this.__a_${f.name} = new Arr_${f.name}(this)); }`);
    }
  }
  const ctorInit = t.fields.filter((f) => f.length > 0).map((f) => `this.__a_${f.name} = null;`);
  if (checked) ctorInit.push('this.__g = 0;', 'this.__b = 0;'); // (thread.ts V1) set when positioned
  const src =
    `'use strict';\n${arrays.join('\n')}\n` +
    `return class ${t.name}$View extends Base {\n` +
    `constructor() { super(); ${ctorInit.join(' ')} }\n` +
    `get runtime() { return host.context; }\n` +
    `${lines.join('\n')}\n};`;
  let factory: (...a: unknown[]) => ViewClass;
  try {
    factory = new Function('Base', 'host', 'F32', 'F64', 'I8', 'U8', 'I16', 'U16', 'I32', 'U32', src) as typeof factory;
  } catch (e) {
    throw new SchemaError(`${t.name}: could not generate field accessors (${(e as Error).message})`, { cause: e });
  }
  const View = factory(t.cls, host, heap.f32, heap.f64, heap.i8, heap.u8, heap.i16, heap.u16, heap.i32, heap.u32);
  // (thread.ts V2) Which context made this view: compared by destroy, reference setters and do-all arguments.
  Object.defineProperty(View.prototype, '__host', { value: host });
  // A class must not declare instance fields: they would shadow the heap accessors.
  const probe = new View() as unknown as Record<string, unknown>;
  const own = Object.keys(probe).filter((k) => !k.startsWith('__'));
  if (own.length > 0) {
    throw new SchemaError(
      `${t.name} declares instance field(s) ${own.join(', ')}; smmo objects keep their state in the heap: ` +
        `declare fields in the schema (object({ ... })) instead of as class fields`,
    );
  }
  return View;
}
