/**
 * Closure resolution for the method compiler: what a free identifier of a function means,
 * exactly as the function itself sees it.
 *
 * A method is ordinary code: it calls helper functions of its module (`nextInFields(...)`),
 * reads module constants (`SPAWN_THRESHOLD`), names classes (`ctx.create(Fish)`), and all
 * of these may be imported from other modules under other names. Its source text alone
 * (Function.prototype.toString) cannot say what they are. V8 can: every function keeps
 * its closure's scopes, and the inspector protocol (node:inspector, a Session on the
 * current thread, answered synchronously) lists them — `[[Scopes]]` of the function
 * object, with the bindings' current values — and gives the source of the script the
 * function came from, which tells which module bindings are `const`.
 *
 * What a lookup returns (Binding):
 *  - the binding's value as the function sees it now (a class, a function, a typed
 *    array, a number…), fetched from V8 into this realm by the inspector;
 *  - whether the compiler may treat it as constant: functions and classes always (the
 *    compiler assumes a program does not reassign its functions and classes); other
 *    values only when the declaration is `const` in the defining module (for an import:
 *    in the module that exports it). A `let` or `var` may change after compilation, so a
 *    method that reads one is not compiled (the reason says which binding).
 *
 * Invariants:
 *  (S1) Resolution never runs user code: it reads scopes and sources only.
 *  (S2) Everything is cached per function and per script: a function's closure is
 *       resolved once per thread (compilation happens once per class and method).
 *  (S3) The Debugger domain is enabled only while script sources are fetched and is
 *       disabled again before resolve() returns, so no debugger state outlives it.
 *  (S4) Without node:inspector (a Node.js built without it), lookups of non-global
 *       names report `unavailable`; the compiler then falls back for methods that need
 *       them, with that reason.
 */
import { createRequire } from 'node:module';
import { parse } from 'acorn';

export type BindingKind = 'const' | 'let' | 'var' | 'function' | 'class' | 'import' | 'param' | 'global' | 'unknown';

export interface Binding {
  readonly name: string;
  readonly value: unknown;
  readonly kind: BindingKind;
  /** Whether the compiler may bake the value in (see the file header). */
  readonly constant: boolean;
}

/** The outcome of a name lookup: a binding, or why there is none. */
export type Lookup = { readonly found: true; readonly binding: Binding } | { readonly found: false; readonly why: string };

interface RemoteObject {
  type: string;
  subtype?: string;
  value?: unknown;
  unserializableValue?: string;
  objectId?: string;
  description?: string;
}
interface PropertyDescriptor {
  name: string;
  value?: RemoteObject;
}
interface InspectorSession {
  connect(): void;
  post(method: string, params: object, callback: (err: Error | null, result: unknown) => void): void;
  on(event: string, listener: (message: { params: Record<string, unknown> }) => void): void;
}

/** Standard globals a method may use; anything else on globalThis is looked up as a dynamic value. */
const STATIC_GLOBALS = new Set(['Math', 'Number', 'Boolean', 'String', 'Object', 'Array', 'Atomics', 'Infinity', 'NaN', 'undefined']);

const PROBE = '__smmoCompilerProbe';
const OUT = '__smmoCompilerOut';
const GROUP = 'smmo-compiler';

/** Top-level declarations of a module (or script): kind by name, imports by local name. */
interface ModuleDecls {
  kinds: Map<string, BindingKind>;
  imports: Map<string, { source: string; imported: string }>;
  /** Exported name → local name, and re-exports. */
  exports: Map<string, string>;
  reexports: Map<string, { source: string; imported: string }>;
  starSources: string[];
}

export class ClosureResolver {
  private session: InspectorSession | null = null;
  private unavailable: string | null = null;
  private readonly perFunction = new WeakMap<object, Map<string, Binding>>();
  /** scriptId → URL, filled while the Debugger domain is on. */
  private readonly scriptUrls = new Map<string, string>();
  private readonly declsByScript = new Map<string, ModuleDecls | null>();
  private readonly declsByUrl = new Map<string, ModuleDecls | null>();

  /** The binding of `name` free in `fn`: closure scopes first (innermost first), then globals. */
  lookup(fn: object, name: string): Lookup {
    let scope: Map<string, Binding>;
    try {
      scope = this.scopeOf(fn);
    } catch (e) {
      return { found: false, why: (e as Error).message };
    }
    const b = scope.get(name);
    if (b !== undefined) return { found: true, binding: b };
    if (name in globalThis) {
      const value = (globalThis as Record<string, unknown>)[name];
      return { found: true, binding: { name, value, kind: 'global', constant: STATIC_GLOBALS.has(name) || typeof value === 'function' } };
    }
    return { found: false, why: `'${name}' is not defined in the function's scope` };
  }

  /** Every binding of `fn`'s closure scopes (not globals), innermost scope winning. */
  scopeOf(fn: object): Map<string, Binding> {
    const cached = this.perFunction.get(fn);
    if (cached !== undefined) return cached;
    const session = this.connect();
    const post = (method: string, params: object): Record<string, unknown> => postSync(session, method, params);
    const g = globalThis as Record<string, unknown>;
    g[PROBE] = fn;
    const out = new Map<string, Binding>();
    try {
      const { result } = post('Runtime.evaluate', { expression: `globalThis.${PROBE}`, objectGroup: GROUP }) as { result: RemoteObject };
      const props = post('Runtime.getProperties', { objectId: result.objectId, ownProperties: true }) as {
        internalProperties?: PropertyDescriptor[];
      };
      const internal = props.internalProperties ?? [];
      const location = internal.find((p) => p.name === '[[FunctionLocation]]')?.value?.value as { scriptId?: string } | undefined;
      const scopes = internal.find((p) => p.name === '[[Scopes]]')?.value;
      const decls = location?.scriptId !== undefined ? this.declarations(location.scriptId) : null;
      if (scopes?.objectId !== undefined) {
        const list = post('Runtime.getProperties', { objectId: scopes.objectId, ownProperties: true }) as { result: PropertyDescriptor[] };
        for (const entry of list.result) {
          const scopeObject = entry.value;
          if (scopeObject?.objectId === undefined || scopeObject.description === 'Global') continue;
          const isModule = scopeObject.description === 'Module';
          const vars = post('Runtime.getProperties', { objectId: scopeObject.objectId, ownProperties: true }) as {
            result: PropertyDescriptor[];
          };
          for (const v of vars.result) {
            if (out.has(v.name) || v.value === undefined) continue; // an inner scope shadows outer ones
            const value = this.fetch(session, v.value);
            const kind: BindingKind = isModule && decls !== null ? (decls.kinds.get(v.name) ?? 'unknown') : 'unknown';
            out.set(v.name, { name: v.name, value, kind, constant: this.isConstant(kind, value, v.name, decls, location?.scriptId) });
          }
        }
      }
    } finally {
      delete g[PROBE];
      delete g[OUT];
      try {
        post('Runtime.releaseObjectGroup', { objectGroup: GROUP });
      } catch {
        // releasing remote handles is best effort
      }
    }
    this.perFunction.set(fn, out);
    return out;
  }

  private connect(): InspectorSession {
    if (this.session !== null) return this.session;
    if (this.unavailable !== null) throw new Error(this.unavailable);
    try {
      // node:inspector through require: an ES import would fail to load this module in a
      // Node.js built without the inspector; here only the compiler's lookups fail (S4).
      const require = createRequire(import.meta.url);
      const { Session } = require('node:inspector') as { Session: new () => InspectorSession };
      const s = new Session();
      s.connect();
      s.on('Debugger.scriptParsed', (m) => {
        const id = m.params['scriptId'];
        const url = m.params['url'];
        if (typeof id === 'string' && typeof url === 'string') this.scriptUrls.set(id, url);
      });
      this.session = s;
      return s;
    } catch (e) {
      this.unavailable = `node:inspector is not available (${(e as Error).message}); module-level names cannot be resolved`;
      throw new Error(this.unavailable);
    }
  }

  /** The value a remote object stands for, in this realm. */
  private fetch(session: InspectorSession, r: RemoteObject): unknown {
    if (r.unserializableValue !== undefined) {
      const u = r.unserializableValue;
      if (u === 'NaN') return NaN;
      if (u === 'Infinity') return Infinity;
      if (u === '-Infinity') return -Infinity;
      if (u === '-0') return -0;
      if (u.endsWith('n')) return BigInt(u.slice(0, -1));
    }
    if (r.type === 'undefined') return undefined;
    if (r.subtype === 'null') return null;
    if (r.objectId === undefined) return r.value;
    const g = globalThis as Record<string, unknown>;
    postSync(session, 'Runtime.callFunctionOn', {
      objectId: r.objectId,
      functionDeclaration: `function () { globalThis.${OUT} = this; }`,
      objectGroup: GROUP,
    });
    const value = g[OUT];
    delete g[OUT];
    return value;
  }

  private isConstant(kind: BindingKind, value: unknown, name: string, decls: ModuleDecls | null, scriptId: string | undefined): boolean {
    if (typeof value === 'function') return true; // functions and classes: assumed never reassigned
    if (kind === 'const') return true;
    if (kind === 'import' && decls !== null && scriptId !== undefined) {
      const imp = decls.imports.get(name);
      const from = this.scriptUrls.get(scriptId);
      if (imp !== undefined && from !== undefined) return this.exportIsConst(from, imp.source, imp.imported, 0);
    }
    return false;
  }

  /** Whether module `specifier` (imported from `fromUrl`) exports `name` from a const declaration. */
  private exportIsConst(fromUrl: string, specifier: string, name: string, depth: number): boolean {
    if (depth > 8 || !(specifier.startsWith('./') || specifier.startsWith('../') || specifier.startsWith('file:'))) return false;
    let url: string;
    try {
      url = new URL(specifier, fromUrl).href;
    } catch {
      return false;
    }
    const decls = this.declarationsOfUrl(url);
    if (decls === null) return false;
    const local = decls.exports.get(name);
    if (local !== undefined) {
      const kind = decls.kinds.get(local);
      if (kind === 'const') return true;
      const imp = decls.imports.get(local);
      return kind === 'import' && imp !== undefined && this.exportIsConst(url, imp.source, imp.imported, depth + 1);
    }
    const re = decls.reexports.get(name);
    if (re !== undefined) return this.exportIsConst(url, re.source, re.imported, depth + 1);
    return decls.starSources.some((s) => this.exportIsConst(url, s, name, depth + 1));
  }

  /** Declarations of the script `scriptId` (S3: the Debugger domain is on only meanwhile). */
  private declarations(scriptId: string): ModuleDecls | null {
    if (this.declsByScript.has(scriptId)) return this.declsByScript.get(scriptId)!;
    const session = this.connect();
    let decls: ModuleDecls | null = null;
    try {
      postSync(session, 'Debugger.enable', {}); // also reports every parsed script's URL (scriptUrls)
      const { scriptSource } = postSync(session, 'Debugger.getScriptSource', { scriptId }) as { scriptSource: string };
      decls = moduleDeclarations(scriptSource);
      const url = this.scriptUrls.get(scriptId);
      if (url !== undefined) this.declsByUrl.set(url, decls);
    } catch {
      decls = null;
    } finally {
      try {
        postSync(session, 'Debugger.disable', {});
      } catch {
        // already off
      }
    }
    this.declsByScript.set(scriptId, decls);
    return decls;
  }

  private declarationsOfUrl(url: string): ModuleDecls | null {
    if (this.declsByUrl.has(url)) return this.declsByUrl.get(url)!;
    for (const [id, u] of this.scriptUrls) if (u === url) return this.declarations(id);
    this.declsByUrl.set(url, null);
    return null;
  }
}

/** Post a message and return its result; the inspector answers a session on its own thread synchronously. */
function postSync(session: InspectorSession, method: string, params: object): Record<string, unknown> {
  let error: Error | null = null;
  let result: unknown;
  let answered = false;
  session.post(method, params, (err, res) => {
    answered = true;
    error = err;
    result = res;
  });
  if (!answered) throw new Error(`node:inspector did not answer ${method} synchronously`);
  if (error !== null) throw error;
  return (result ?? {}) as Record<string, unknown>;
}

interface AstNode {
  type: string;
  [key: string]: unknown;
}

/** Top-level declarations of a module's source. */
function moduleDeclarations(source: string): ModuleDecls {
  const program = parse(source, { ecmaVersion: 'latest', sourceType: 'module', allowHashBang: true }) as unknown as { body: AstNode[] };
  const d: ModuleDecls = { kinds: new Map(), imports: new Map(), exports: new Map(), reexports: new Map(), starSources: [] };
  const declare = (node: AstNode): void => {
    if (node.type === 'VariableDeclaration') {
      const kind = node['kind'] as 'const' | 'let' | 'var';
      for (const decl of node['declarations'] as AstNode[]) {
        const id = decl['id'] as AstNode;
        if (id.type === 'Identifier') d.kinds.set(id['name'] as string, kind);
      }
    } else if (node.type === 'FunctionDeclaration' || node.type === 'ClassDeclaration') {
      const id = node['id'] as AstNode | null;
      if (id !== null) d.kinds.set(id['name'] as string, node.type === 'FunctionDeclaration' ? 'function' : 'class');
    }
  };
  const nameOf = (n: AstNode): string => (n.type === 'Identifier' ? (n['name'] as string) : String(n['value']));
  for (const node of program.body) {
    switch (node.type) {
      case 'ImportDeclaration': {
        const source = (node['source'] as AstNode)['value'] as string;
        for (const s of node['specifiers'] as AstNode[]) {
          const local = (s['local'] as AstNode)['name'] as string;
          d.kinds.set(local, 'import');
          const imported =
            s.type === 'ImportSpecifier' ? nameOf(s['imported'] as AstNode) : s.type === 'ImportDefaultSpecifier' ? 'default' : '*';
          d.imports.set(local, { source, imported });
        }
        break;
      }
      case 'ExportNamedDeclaration': {
        const decl = node['declaration'] as AstNode | null;
        if (decl !== null) {
          declare(decl);
          if (decl.type === 'VariableDeclaration') {
            for (const v of decl['declarations'] as AstNode[]) {
              const id = v['id'] as AstNode;
              if (id.type === 'Identifier') d.exports.set(id['name'] as string, id['name'] as string);
            }
          } else if (decl['id'] !== null) {
            const name = (decl['id'] as AstNode)['name'] as string;
            d.exports.set(name, name);
          }
        }
        const source = node['source'] as AstNode | null;
        for (const s of (node['specifiers'] as AstNode[]) ?? []) {
          const local = nameOf(s['local'] as AstNode);
          const exported = nameOf(s['exported'] as AstNode);
          if (source !== null) d.reexports.set(exported, { source: source['value'] as string, imported: local });
          else d.exports.set(exported, local);
        }
        break;
      }
      case 'ExportAllDeclaration':
        if (node['exported'] === null) d.starSources.push((node['source'] as AstNode)['value'] as string);
        break;
      case 'ExportDefaultDeclaration': {
        const decl = node['declaration'] as AstNode;
        if (decl.type === 'FunctionDeclaration' || decl.type === 'ClassDeclaration') {
          declare(decl);
          if (decl['id'] !== null) d.exports.set('default', (decl['id'] as AstNode)['name'] as string);
        }
        break;
      }
      default:
        declare(node);
    }
  }
  return d;
}
