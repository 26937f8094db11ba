/** The generated JavaScript of a compiled method, for tests that look at what the compiler emitted. */
import type { Runtime } from '../../index.js';
import type { ThreadContext } from '../../runtime/thread.js';

/** The source of method `name` ("Class.method") as compiled on the calling thread of `rt`, or '' if it did not compile (or has not run). */
export function compiledSource(rt: Runtime, name: string): string {
  const c = (rt.context as unknown as ThreadContext).compileUse.get(name);
  return c !== undefined && c.compiled ? c.source : '';
}
