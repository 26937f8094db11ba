/**
 * What the five smmo cases of the ECS comparison share: how they create their runtime
 * (one thread, the default heap, as a new user would) and the check that every do-all
 * method ran compiled — or, for the interpreted variant, that none did.
 */
import { createRuntime, type Runtime, type SmmoClass } from '../../../index.js';
import { CaseCheckError, type EcsCase } from '../harness.js';

export interface SmmoCaseOptions {
  /** Compiled methods (the default of createRuntime) or interpreted (compile: false). */
  compile: boolean;
  /** RuntimeOptions.blockSize (default 'smallest'; the 'smmo-largest' case: 'largest'). */
  blockSize?: 'smallest' | 'largest';
}

/** An smmo case, with its runtime (tests reach into it). */
export interface SmmoCase extends EcsCase {
  readonly runtime: Runtime;
}

/** The smmo cases' setup functions take the compile option as well. */
export type SmmoSetup = (count: number, options: SmmoCaseOptions) => Promise<SmmoCase>;

export function smmoRuntime(classes: readonly SmmoClass[], options: SmmoCaseOptions): Promise<Runtime> {
  return createRuntime({ classes, compile: options.compile, blockSize: options.blockSize ?? 'smallest' });
}

/**
 * Throw unless exactly `methods` ("Class.method") have run, each compiled entirely (no part
 * left as JavaScript) — or, with compile: false, unless none was compiled.
 */
export function checkCompiled(rt: Runtime, options: SmmoCaseOptions, methods: readonly string[]): void {
  const seen = rt.stats().compiled;
  if (!options.compile) {
    if (Object.keys(seen).length > 0) throw new CaseCheckError(`compile: false, yet methods were compiled: ${JSON.stringify(seen)}`);
    return;
  }
  const problems: string[] = [];
  for (const m of methods) {
    const s = seen[m];
    if (s === undefined) problems.push(`${m} never ran`);
    else if (!s.compiled) problems.push(`${m} fell back to the interpreter: ${s.reason ?? '(no reason given)'}`);
    else if (s.javascript !== undefined) problems.push(`${m} runs parts as JavaScript: ${s.javascript.join('; ')}`);
  }
  for (const m of Object.keys(seen)) if (!methods.includes(m)) problems.push(`${m} ran but is not one of the case's methods`);
  if (problems.length > 0) throw new CaseCheckError(`not every method compiled: ${problems.join('; ')}`);
}
