/**
 * Parsing a function's source for the method compiler: Function.prototype.toString()
 * gives the text of a method (`update(dt) { … }`), a function declaration or an arrow
 * function as the running JavaScript has it (after tsc); acorn parses it. A real parser,
 * never regular expressions: every construct the compiler does not know is seen as
 * such and reported.
 */
import { parseExpressionAt } from 'acorn';

/** An ESTree node as acorn produces it (the lowering reads the fields it needs). */
export interface Node {
  readonly type: string;
  readonly start: number;
  readonly end: number;
  readonly [key: string]: unknown;
}

/** A parsed function: its parameters and body, and whether it is an arrow function (lexical `this`). */
export interface ParsedFunction {
  readonly params: readonly Node[];
  /** A BlockStatement, or an expression (arrow functions with an expression body). */
  readonly body: Node;
  readonly arrow: boolean;
  readonly async: boolean;
  readonly generator: boolean;
  /** Getter/setter of a class, as written. */
  readonly kind: 'method' | 'get' | 'set' | 'function';
  /** The text that was parsed (node offsets index into it). */
  readonly source: string;
}

const cache = new WeakMap<object, ParsedFunction | string>();

/**
 * Parse function `fn`; returns a string saying why when it cannot be compiled from source
 * (native code, a class constructor, a bound function).
 */
export function parseFunction(fn: (...args: never[]) => unknown): ParsedFunction | string {
  const hit = cache.get(fn);
  if (hit !== undefined) return hit;
  const out = parseUncached(fn);
  cache.set(fn, out);
  return out;
}

function parseUncached(fn: (...args: never[]) => unknown): ParsedFunction | string {
  let text: string;
  try {
    text = Function.prototype.toString.call(fn);
  } catch (e) {
    return `its source is not available (${(e as Error).message})`;
  }
  if (/\{\s*\[native code\]\s*\}\s*$/.test(text)) return 'it is native code (a built-in or a bound function)';
  if (/^class[\s{]/.test(text)) return 'it is a class (constructors are not compiled)';
  const opts = { ecmaVersion: 'latest' as const, sourceType: 'module' as const };
  // A function or arrow function parses as an expression as is; a method (`name(…) {…}`,
  // `get x() {…}`, `async *m() {…}`) as a member of an object literal.
  try {
    const wrapped = `(${text})`;
    const node = parseExpressionAt(wrapped, 0, opts) as unknown as Node;
    if (node.type === 'FunctionExpression' || node.type === 'ArrowFunctionExpression') return fromFunction(node, 'function', wrapped);
  } catch {
    // not an expression: try the method form
  }
  try {
    const wrapped = `({${text}})`;
    const obj = parseExpressionAt(wrapped, 0, opts) as unknown as Node;
    const props = obj['properties'] as Node[] | undefined;
    const prop = props?.[0];
    if (obj.type === 'ObjectExpression' && props?.length === 1 && prop !== undefined && prop.type === 'Property') {
      const value = prop['value'] as Node;
      const kind = prop['kind'] === 'get' ? 'get' : prop['kind'] === 'set' ? 'set' : 'method';
      if (value.type === 'FunctionExpression') return fromFunction(value, kind, wrapped);
    }
  } catch (e) {
    return `its source does not parse (${(e as Error).message})`;
  }
  return 'its source is not a function';
}

function fromFunction(node: Node, kind: ParsedFunction['kind'], source: string): ParsedFunction {
  return {
    params: node['params'] as Node[],
    body: node['body'] as Node,
    arrow: node.type === 'ArrowFunctionExpression',
    async: node['async'] === true,
    generator: node['generator'] === true,
    kind,
    source,
  };
}

/** Parse a function expression node met inside a body (a deviceDo callback, a local arrow). */
export function functionNode(node: Node, source: string): ParsedFunction {
  return fromFunction(node, 'function', source);
}
