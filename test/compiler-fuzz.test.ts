/**
 * The method compiler against the interpreter on random programs (test/fuzz/method-gen.ts):
 * each seed is a module of three smmo classes whose do-all methods mix field arithmetic of
 * every field type, references followed with and without null tests, inline arrays,
 * helpers, virtual calls, `instanceof`, loops, `switch`, `deviceDo`, creations and
 * deletions, and errors. Each program runs its passes interpreted and compiled on runtimes
 * of one thread; after every pass the heaps must be equal byte for byte (invariant C1 of
 * runtime/compiler/index.ts) and the errors the same (class and message, the cause's too).
 *
 * A failure prints the seed and the program. `SMMO_FUZZ_SEED=s` runs that seed alone,
 * `SMMO_FUZZ_COUNT=n` runs n seeds from the fixed first one (the suite: 120), `SMMO_FUZZ_FROM=k`
 * skips the first k.
 */
import test from 'ava';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createRuntime, type Runtime } from '../index.js';
import { heapDifference } from './helpers/heap-bytes.js';
import { programSource, rng } from './fuzz/method-gen.js';

const RUNTIME_URL = new URL('../index.js', import.meta.url).href;
const FIRST_SEED = 0x5eed0001;
const NODES = 40;
const STEPS = 3;

interface Program {
  readonly CLASSES: readonly (abstract new (...args: never[]) => unknown)[];
  readonly Node: never;
  readonly Leaf: never;
  readonly Sprout: never;
  readonly Stem: never;
  readonly Twig: never;
}

/** The runtime's methods as this test calls them: the program's classes are only known at run time. */
interface Loose {
  parallelNew(cls: unknown, n: number, init: (o: Obj, i: number) => void): Promise<void>;
  get(cls: unknown, h: number): Obj;
  create(cls: unknown, init: Record<string, unknown>): Obj;
  doAll(cls: unknown, method: string, ...args: unknown[]): void;
}
type Obj = { [field: string]: unknown; handle: number; arr: Arr; fa: Arr; refs: Arr };
interface Arr {
  set(i: number, v: unknown): void;
}
const loose = (rt: Runtime): Loose => rt as unknown as Loose;

/** The same start on both runtimes: node fields and links from a hash of the seed, leaves for some nodes. */
async function setup(runtime: Runtime, p: Program, seed: number): Promise<void> {
  const rt = loose(runtime);
  const r = rng(seed ^ 0x9e3779b9);
  const nodes: number[] = [];
  const raw = [0, 1, -1, 3.5, 255, 70000, -40000, 2 ** 31, 1e-9, -0.75];
  await rt.parallelNew(p.Node, NODES, (o, i) => {
    o.a = i * 17 - 300;
    o.b = i * 7;
    o.c = i * 1000 - 20000;
    o.d = (i * 2654435761) >>> 0;
    o.e = i / 3;
    o.f = raw[i % raw.length]! * (i + 1);
    o.g = i % 3 === 0;
    o.h = i * 9;
    o.w = i * 3001;
    o.arr.set(0, i);
    o.arr.set(1, -i * 5);
    o.arr.set(2, i * 1e6);
    o.fa.set(0, i * 0.1);
    o.fa.set(1, -i);
    nodes.push(o.handle);
  });
  for (const h of nodes) {
    const o = rt.get(p.Node, h);
    const at = (): unknown => (r() < 0.2 ? null : rt.get(p.Node, nodes[Math.floor(r() * NODES)]!));
    o.next = at();
    o.refs.set(0, at());
    o.refs.set(1, at());
    const k = r();
    if (k < 0.5) {
      const leaf = rt.create(k < 0.25 ? p.Sprout : p.Stem, { v: r() * 100 - 50, k: Math.floor(r() * 70000), owner: o });
      o.other = leaf;
    }
  }
}

function describe(e: unknown): string {
  if (!(e instanceof Error)) return `non-error ${String(e)}`;
  const cause = e.cause instanceof Error ? ` <- ${e.cause.name}: ${e.cause.message}` : '';
  return `${e.name}: ${e.message}${cause}`;
}

/** Where the heaps first differ, NaNs compared by value (helpers/heap-bytes.ts says why); null when equal. */
const difference = (a: Runtime, b: Runtime): string | null => heapDifference(a, b, { canonicalNaN: true });

interface Outcome {
  /** Empty when the program ran like the interpreter; else what differed. */
  readonly problem: string;
  /** The methods that ran ('Class.m', per concrete class), and why those that fell back did. */
  readonly compiled: { ran: string[]; reasons: string[] };
  readonly threw: boolean;
}

async function runProgram(seed: number, dir: string): Promise<Outcome> {
  const file = join(dir, `p${seed >>> 0}.mjs`);
  writeFileSync(file, programSource(seed, RUNTIME_URL));
  const p = (await import(pathToFileURL(file).href)) as Program;
  const make = async (compile: boolean): Promise<Runtime> => {
    // Every third program in checked mode (compiled with the checked accessors' rules).
    const rt = await createRuntime({ classes: p.CLASSES as never, heap: '2MB', threads: 1, compile, seed: 7, checked: seed % 3 === 0 });
    await setup(rt, p, seed);
    return rt;
  };
  const a = await make(false);
  const b = await make(true);
  try {
    let at = difference(a, b);
    if (at !== null) return { problem: `heaps differ before the first pass at ${at}`, compiled: none(), threw: false };
    let threw = false;
    for (let step = 1; step <= STEPS && !threw; step++) {
      for (const [cls, name] of [
        [p.Node, 'Node'],
        [p.Leaf, 'Leaf'],
        [p.Twig, 'Twig'],
      ] as const) {
        let ea: unknown = null;
        let eb: unknown = null;
        try {
          loose(a).doAll(cls, 'm', step);
        } catch (e) {
          ea = e;
        }
        try {
          loose(b).doAll(cls, 'm', step);
        } catch (e) {
          eb = e;
        }
        const pass = `${name}.m(${step})`;
        if ((ea === null) !== (eb === null) || (ea !== null && describe(ea) !== describe(eb))) {
          return {
            problem: `${pass}: interpreted ${ea === null ? 'ran' : describe(ea)}, compiled ${eb === null ? 'ran' : describe(eb)}`,
            compiled: summary(b),
            threw: true,
          };
        }
        at = difference(a, b);
        if (at !== null)
          return {
            problem: `heaps differ after ${pass} at ${at}${ea !== null ? ` (both threw ${describe(ea)})` : ''}`,
            compiled: summary(b),
            threw,
          };
        if (ea !== null) {
          threw = true;
          break;
        }
        a.validateHeap();
        b.validateHeap();
      }
    }
    return { problem: '', compiled: summary(b), threw };
  } finally {
    await a.close();
    await b.close();
  }
}

function none(): Outcome['compiled'] {
  return { ran: [], reasons: [] };
}

function summary(rt: Runtime): Outcome['compiled'] {
  const c = rt.stats().compiled as Record<string, { compiled: boolean; reason?: string }>;
  const reasons = Object.entries(c)
    .filter(([, v]) => !v.compiled)
    .map(([k, v]) => `${k}: ${v.reason ?? '?'}`);
  return { ran: Object.keys(c), reasons };
}

function seeds(): number[] {
  const one = process.env['SMMO_FUZZ_SEED'];
  if (one !== undefined) return [Number(one) >>> 0];
  const n = Number(process.env['SMMO_FUZZ_COUNT'] ?? 120);
  const from = Number(process.env['SMMO_FUZZ_FROM'] ?? 0);
  return Array.from({ length: n }, (_, i) => (FIRST_SEED + (from + i) * 0x9e3779b1) >>> 0);
}

test('random programs: compiled methods leave the heap and the errors the interpreted ones leave', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'smmo-fuzz-'));
  try {
    const list = seeds();
    let methods = 0;
    let fellBack = 0;
    let threw = 0;
    const reasons = new Map<string, number>();
    for (const seed of list) {
      const out = await runProgram(seed, dir);
      if (out.problem !== '') {
        t.fail(`seed ${seed} (SMMO_FUZZ_SEED=${seed}): ${out.problem}\n${programSource(seed, RUNTIME_URL)}`);
        return;
      }
      methods += out.compiled.ran.length;
      fellBack += out.compiled.reasons.length;
      if (out.threw) threw++;
      for (const r of out.compiled.reasons) reasons.set(r, (reasons.get(r) ?? 0) + 1);
    }
    t.log(
      `${list.length} programs: ${methods} methods ran (per concrete class), ${fellBack} fell back; ${threw} programs ended in an error`,
    );
    for (const [r, n] of reasons) t.log(`fell back ${n}×: ${r}`);
    // The test is only worth something if the programs compile: every generated construct is in the subset.
    t.is(fellBack, 0, 'every method that ran compiled');
    t.true(methods >= 3 * list.length, 'most programs ran every pass');
    if (list.length >= 50) t.true(threw > 0 && threw < list.length / 2, `some programs, not most, end in an error (${threw})`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
