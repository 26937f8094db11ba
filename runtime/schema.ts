/**
 * Class declarations: typed fields, single inheritance, abstract classes.
 *
 *   export class Body extends object({ posX: f32, posY: f32, mass: f32 }) {
 *     update(dt: number) { this.posX += dt; }            // fields are typed properties
 *   }
 *   export abstract class Agent extends object({ position: ref(() => Cell) }, { abstract: true }) {}
 *   export class Fish extends Agent.extend({ eggTimer: u32 }) {}
 *
 * Why this shape: the field schema is a value the runtime reads (sizes, offsets, SOA
 * arrays) *and* the source of the TypeScript property types, so a field is declared
 * once; methods stay ordinary methods with `this` fully typed; no decorators (no
 * compiler flags, no reflection metadata). `object()` / `.extend()` return a *schema
 * class*; the runtime generates, per concrete class, an accessor subclass whose
 * getters and setters read the SOA arrays in the heap.
 *
 * A class must not declare instance fields of its own (they would shadow the heap
 * accessors) nor rely on its constructor: objects are made by `runtime.create()`.
 */
import { SchemaError } from './errors.js';

// ------------------------------------------------------------------ field types

export type ScalarKind = 'f32' | 'f64' | 'i8' | 'u8' | 'i16' | 'u16' | 'i32' | 'u32' | 'bool' | 'ref';

/** Bytes per element of each scalar kind. */
export const KIND_BYTES: Readonly<Record<ScalarKind, number>> = {
  f32: 4,
  f64: 8,
  i8: 1,
  u8: 1,
  i16: 2,
  u16: 2,
  i32: 4,
  u32: 4,
  bool: 1,
  ref: 4,
};

/** A field type; `T` is the TypeScript type of the property. */
export interface FieldType<T> {
  readonly kind: ScalarKind;
  /** 0 for a scalar field, else the length of an inline array. */
  readonly length: number;
  /** For references: the target class, resolved lazily (classes may refer to each other). */
  readonly target?: () => SmmoClass;
  /** For references declared by class name: the name, resolved among the runtime's classes. */
  readonly targetName?: string;
  /** Phantom: carries the property type. */
  readonly __type?: T;
}

function scalar<T>(kind: ScalarKind): FieldType<T> {
  return Object.freeze({ kind, length: 0 });
}

export const f32: FieldType<number> = scalar('f32');
export const f64: FieldType<number> = scalar('f64');
export const i8: FieldType<number> = scalar('i8');
export const u8: FieldType<number> = scalar('u8');
export const i16: FieldType<number> = scalar('i16');
export const u16: FieldType<number> = scalar('u16');
export const i32: FieldType<number> = scalar('i32');
export const u32: FieldType<number> = scalar('u32');
export const bool: FieldType<boolean> = scalar('bool');

/**
 * A reference to an object of class `C` (or a subclass), or null. Stored as a 32-bit handle.
 *
 *   ref(() => Cell)          the target class, resolved lazily
 *   ref<Cell>('Cell')        by class name: for a class that refers to itself, or classes
 *                            that refer to each other (TypeScript cannot type a class whose
 *                            base expression mentions the class; a type argument it can)
 */
export function ref<I>(className: string): FieldType<I | null>;
export function ref<C extends SmmoClass>(target: () => C): FieldType<InstanceType<C> | null>;
export function ref(target: string | (() => SmmoClass)): FieldType<unknown> {
  if (typeof target === 'string') {
    if (!/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(target)) throw new SchemaError(`ref('${target}'): not a class name`);
    return Object.freeze({ kind: 'ref' as const, length: 0, targetName: target });
  }
  if (typeof target !== 'function') throw new SchemaError('ref(): give the target as () => Class or as a class name string');
  return Object.freeze({ kind: 'ref' as const, length: 0, target });
}

/** Fixed-size inline array of scalars or references, stored as one SOA array per element. */
export interface InlineArray<T> {
  readonly length: number;
  get(index: number): T;
  set(index: number, value: T): void;
}

export function array<T>(element: FieldType<T>, length: number): FieldType<InlineArray<T>> {
  if (element.length !== 0) throw new SchemaError('array(): nested inline arrays are not supported');
  if (!Number.isInteger(length) || length < 1 || length > 64) {
    throw new SchemaError(`array(): length must be an integer in 1…64, got ${length}`);
  }
  const t: FieldType<InlineArray<T>> = {
    kind: element.kind,
    length,
    ...(element.target ? { target: element.target } : {}),
    ...(element.targetName ? { targetName: element.targetName } : {}),
  };
  return Object.freeze(t);
}

export type Schema = Record<string, FieldType<unknown>>;
export type FieldValues<F extends Schema> = {
  -readonly [K in keyof F]: F[K] extends FieldType<infer T> ? (T extends InlineArray<unknown> ? T : T) : never;
};
/** Inline-array properties are read-only (write through the array's `set`). */
export type Fields<F extends Schema> = {
  -readonly [K in keyof F as F[K] extends FieldType<InlineArray<unknown>> ? never : K]: FieldValues<F>[K];
} & {
  readonly [K in keyof F as F[K] extends FieldType<InlineArray<unknown>> ? K : never]: FieldValues<F>[K];
};

// ------------------------------------------------------------------ base class

export interface SchemaOptions {
  /** An abstract class has no objects of its own; its subclasses do. */
  abstract?: boolean;
}

/** Metadata a schema class carries (read by the runtime). */
export interface SchemaInfo {
  readonly fields: Schema;
  readonly abstract: boolean;
}

export const SCHEMA: unique symbol = Symbol('smmo.schema');

/**
 * The root of every smmo class. Instances are *views* of heap objects: the runtime
 * positions them on an object (a handle) and the generated accessors read the SOA
 * arrays at that position.
 */
export abstract class SmmoObject {
  /** @internal byte offset of the object's block in the heap */
  declare __o: number;
  /** @internal slot of the object in its block */
  declare __s: number;
  /** @internal the object's handle */
  declare __h: number;
  /**
   * @internal (__o >>> 2) + __s: the slot's index into a 4-byte SOA array whose block
   * offset is 0, so that f32/i32/u32/ref accessors need one add (accessors.ts).
   */
  declare __i: number;
  /**
   * @internal Checked mode only (set by the checked view classes): the generation of the
   * object's slot (layout.ts genOffset) and of its block (BLOCK_GEN_WORD) when the view
   * was made or positioned; a checked access compares them (thread.ts V1).
   */
  declare __g: number;
  /** @internal see __g */
  declare __b: number;
  /** @internal The ThreadContext whose generated class this view is (on the prototype; thread.ts V2). */
  declare readonly __host: unknown;

  // Assignments, not class fields: Node 20's V8 defines class fields through a slow
  // per-instance initializer (measured on the 2-core dev VM: `new View()` 46 ns with
  // class fields, 4 ns with these assignments), and views are created on every get().
  constructor() {
    this.__o = 0;
    this.__s = 0;
    this.__h = 0;
    this.__i = 0;
  }

  /** The object's 32-bit handle (block index × 32 + slot); never 0, which is null. */
  get handle(): number {
    return this.__h;
  }

  /** The runtime (or worker context) this object lives in: create, destroy, deviceDo, count. */
  get runtime(): SmmoContext {
    throw new SchemaError(`${this.constructor.name} is not bound to a runtime (create objects with runtime.create)`);
  }

  /** Delete this object. In a do-all, a method may delete `this` and objects of other types. */
  destroy(): void {
    this.runtime.destroy(this);
  }

  /** Whether `other` names the same heap object (views are not unique: compare handles). */
  is(other: SmmoObject | null | undefined): boolean {
    return other != null && other.__h === this.__h;
  }

  /** Extend this class with more fields: `class Fish extends Agent.extend({ eggTimer: u32 }) {}`. */
  static extend<B extends AbstractClass<SmmoObject>, F extends Schema>(this: B, fields: F, options: SchemaOptions = {}): SchemaClass<B, F> {
    checkSchema(fields);
    abstract class Extended extends (this as unknown as AbstractClass<SmmoObject>) {
      static readonly [SCHEMA]: SchemaInfo = { fields, abstract: options.abstract === true };
    }
    return Extended as unknown as SchemaClass<B, F>;
  }
}

export type AbstractClass<I> = abstract new () => I;

/** What `object()` / `.extend()` return: the base's instance type plus the new fields. */
export type SchemaClass<B extends AbstractClass<SmmoObject>, F extends Schema> = Omit<B, 'prototype'> &
  (abstract new () => InstanceType<B> & Fields<F>);

/** Any smmo class (abstract or concrete) as the runtime sees it. */
export type SmmoClass<I extends SmmoObject = SmmoObject> = (abstract new () => I) & {
  readonly name: string;
  readonly prototype: I;
};

/** Declare a root class with these fields. */
export function object<F extends Schema>(fields: F, options: SchemaOptions = {}): SchemaClass<typeof SmmoObject, F> {
  return SmmoObject.extend(fields, options);
}

const RESERVED = new Set(['handle', 'runtime', 'destroy', 'is', 'constructor', '__proto__']); // and every name starting with __

function checkSchema(fields: Schema): void {
  if (fields === null || typeof fields !== 'object') throw new SchemaError('a schema must be an object of field types');
  for (const [name, t] of Object.entries(fields)) {
    if (RESERVED.has(name) || name.startsWith('__')) {
      throw new SchemaError(`field name '${name}' is reserved by smmo; choose another name`);
    }
    if (!/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name)) {
      throw new SchemaError(`field name '${name}' is not a plain identifier`);
    }
    if (t === null || typeof t !== 'object' || !(t.kind in KIND_BYTES)) {
      throw new SchemaError(`field '${name}': not a field type (use f32, i32, bool, ref(() => C), array(f32, 4), …)`);
    }
  }
}

/** The schema info a class declares itself (not inherited), if any. */
export function ownSchema(cls: object): SchemaInfo | undefined {
  return Object.prototype.hasOwnProperty.call(cls, SCHEMA) ? (cls as { [SCHEMA]: SchemaInfo })[SCHEMA] : undefined;
}

// ------------------------------------------------------------------ what methods see as this.runtime

/** Initial field values for `create`: any subset of the class's fields (inline arrays as plain arrays). */
export type Init<I> = {
  [K in keyof I as K extends keyof SmmoObject ? never : I[K] extends (...a: never[]) => unknown ? never : K]?: I[K] extends InlineArray<
    infer E
  >
    ? readonly E[]
    : I[K];
};

export interface SmmoContext {
  /** Allocate an object of concrete class `cls`; fields start at 0 / false / null, then `init` is applied. */
  create<C extends SmmoClass>(cls: C, init?: Init<InstanceType<C>>): InstanceType<C>;
  /** Delete an object (its handle becomes invalid). */
  destroy(obj: SmmoObject): void;
  /**
   * Sequential for-each over all live objects of `cls` and its subclasses (paper's
   * device_do). `fn` receives a view that is re-positioned for each object: keep
   * `obj.handle` (or assign it to a reference field), not the view itself.
   */
  deviceDo<C extends SmmoClass>(cls: C, fn: (obj: InstanceType<C>) => void): void;
  /** Number of live objects of `cls` and its subclasses. */
  count(cls: SmmoClass): number;
  /**
   * A fresh view of the object named by `handle`: checked against `cls` in checked mode;
   * otherwise only checked to lie in the heap and in a block that holds objects.
   */
  get<C extends SmmoClass>(cls: C, handle: number): InstanceType<C>;
}
