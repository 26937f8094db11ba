/**
 * What a method sees through `this.runtime`: the operations allowed inside a do-all,
 * the same on the main thread and in every worker.
 */
import type { InlineArray, SmmoClass, SmmoObject } from './schema.js';

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
