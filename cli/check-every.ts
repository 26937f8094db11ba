/**
 * The divergence finder: `smmo run <app> --backend wasm|webgpu --check-every K` (issue 14,
 * item 3). It runs the TypeScript reference (one thread, backend 'ts') in lockstep with
 * the run, from the same initial state (the app's init with the same seed and parameters,
 * or the same --init state), compares the two after every K iterations and after the last
 * (cli/check.ts checkRuntimes: every field by the comparator of runtime/compare.ts, and
 * the app's digest, with --check's tolerance --tol/--rel/--field-rel/--digest-rel), and at
 * the first comparison that fails narrows the difference down to the first pass: it puts
 * both heaps back to the last comparison that agreed and replays that window of at most
 * K iterations pass by pass, comparing after every pass (the SMMO model's unit of work:
 * "DynaSOAr: A Parallel Memory Allocator for Object-oriented Programming on GPUs with
 * Efficient Memory Access", §2.1, a program is a sequence of parallel do-all passes).
 *
 * With `--backend ts` the run is compared with the reference only when it runs on several
 * threads (`--threads N`, N > 1: N threads against one); `--backend ts --threads 1` would
 * compare the reference with itself and is a usage error.
 *
 * Invariants:
 *  (L1) Same start: both runtimes are created with the same heap size and filled by the
 *       same init (or --init state); both run app.step(rt, i) with the same i.
 *  (L2) Checkpoints: before the first iteration (the two initial states: if they differ
 *       that is the divergence, pass 'initial state', and nothing is replayed), after
 *       iteration j (counted from the start of the app, --init's iterations included)
 *       with (j − first) % K = 0, and after the last, the run is brought to the host and
 *       compared. A comparison that agrees saves both heaps
 *       (runtime/pass-hook.ts heapSnapshot: the whole simulation state, P3); the first
 *       comparison that fails stops the run there.
 *  (L3) Narrowing replays from the saved heaps (restoreHeap), so the replay starts from
 *       the very bytes of the last agreeing comparison, handles and allocator state
 *       included: a deterministic backend repeats its window exactly. The two steps are
 *       interleaved pass by pass (runtime/pass-hook.ts observePasses): the reference
 *       runs pass p and stops at its hook, then the run runs pass p and stops at its hook;
 *       the two heaps are compared (fields only: a digest is a whole-iteration quantity),
 *       then the reference goes on. Only one of the two is ever inside a pass, so no state
 *       of one thread's code is shared by the two. After the last pass of a step (the
 *       step's own host code included) the comparison also includes the digest.
 *  (L4) The first comparison that fails names the divergence: iteration i (the index the
 *       step was called with), pass p (0-based, and its label 'Class.method'), the
 *       comparator's worst field (beyond tolerance first, then the largest relative
 *       difference) and its worst object (its handle in the reference, in the run, and
 *       its index: its rank among its class's live objects by handle), and the two
 *       values. Both heaps at that point are written as state directories
 *       DIR/reference and DIR/run (runtime/state.ts; `smmo compare DIR/reference DIR/run`
 *       with the same tolerance shows the same field and object). Their metadata
 *       iteration count is i: the state lies inside iteration i, after pass p (for
 *       `smmo compare`; resuming from it with --init would repeat passes 0 … p).
 *  (L5) A window whose replay agrees at every pass (a backend that is not deterministic,
 *       or a difference only in the digest) is reported as found at the window's end with
 *       pass and field null, and both states written there; never hidden.
 *  (L6) Both runs take the same passes: when one step reaches a pass and the other ends
 *       its step or reaches another pass, that is the divergence (the app's control flow
 *       depends on state that differs).
 *
 * Testing only: the environment variable SMMO_TEST_PERTURB='I:Class.method:Class.field:N:D'
 * adds D to field `field` of the N-th live object (by handle) of concrete class `Class`
 * in the RUN (never the reference) right after the first pass `Class.method` of
 * iteration I, standing for a kernel that computes one wrong value there. It is read
 * only with --check-every, exists for test/check-every.test.ts, and is documented as
 * such in docs/webgpu.md.
 */
import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { App } from '../apps/app.js';
import { createRuntime, UsageError, type Runtime } from '../index.js';
import type { CheckTolerance, FieldDiff } from '../runtime/compare.js';
import { planTypes } from '../runtime/layout.js';
import { heapSnapshot, observePasses, restoreHeap, type PassInfo } from '../runtime/pass-hook.js';
import { indexOfSorted } from '../runtime/sorted.js';
import { STATE_EXTENSION } from '../runtime/state.js';
import { checkRuntimes, compareHeaps, type CheckVerdict } from './check.js';
import type { DivergenceReport } from './divergence.js';
import { CliUsageError } from './errors.js';
import type { RunOptions } from './flags.js';
import { restoreInto, stateApi, type InitState } from './state.js';

/** The directory for the two states when --check-states is not given: smmo-divergence-<app>, in the current directory. */
export const defaultCheckStates = (app: App): string => `smmo-divergence-${app.name}`;

export interface LockstepResult {
  /** Iterations the run made (up to the checkpoint that failed). */
  iterations: number;
  /** Seconds the run's steps took (the reference, the comparisons and the replay left out). */
  seconds: number;
  /** The last comparison made (what --check reports: cli/run.ts CheckReport). */
  check: Omit<CheckVerdict, 'objects'> & { referenceSeconds: number };
  divergence: DivergenceReport;
}

/** A test-only perturbation of the run (SMMO_TEST_PERTURB). */
export interface Perturbation {
  iteration: number;
  pass: string;
  className: string;
  field: string;
  index: number;
  delta: number;
}

/** Parse SMMO_TEST_PERTURB ('I:Class.method:Class.field:N:D'); a bad value is a CliUsageError. */
export function parsePerturbation(text: string): Perturbation {
  const m = /^(\d+):([A-Za-z_$][\w$]*\.[A-Za-z_$][\w$]*):([A-Za-z_$][\w$]*)\.([A-Za-z_$][\w$]*):(\d+):([^:]+)$/.exec(text);
  const delta = m ? Number(m[6]) : NaN;
  if (!m || !Number.isFinite(delta)) {
    throw new CliUsageError(
      `SMMO_TEST_PERTURB must be 'ITERATION:Class.method:Class.field:INDEX:DELTA' (e.g. '3:Body.update:Body.velX:5:0.001'), got '${text}'`,
    );
  }
  return { iteration: Number(m[1]), pass: m[2]!, className: m[3]!, field: m[4]!, index: Number(m[5]), delta };
}

/**
 * Before the run: the combinations --check-every refuses, and the state directory's
 * parent must exist (a bad path fails before the work, exit 2).
 */
export function checkLockstepOptions(app: App, opts: RunOptions, where: string): void {
  if (opts.backend === 'ts' && opts.threads === 1) {
    throw new CliUsageError(
      `${where}: --check-every compares a run with the TypeScript reference on one thread; --backend ts --threads 1 is that reference: ` +
        'use --backend wasm or webgpu, or --threads N (N > 1) to compare N threads against one',
    );
  }
  if (opts.render !== undefined) throw new CliUsageError(`${where}: --render cannot be combined with --check-every; drop one of them`);
  const dir = opts.checkStates ?? defaultCheckStates(app);
  if (existsSync(dir) && !statSync(dir).isDirectory())
    throw new CliUsageError(`${where}: --check-states: ${dir} exists and is not a directory; give a new name`);
  const parent = dirname(dir);
  if (!existsSync(parent) || !statSync(parent).isDirectory())
    throw new CliUsageError(`${where}: --check-states: the directory ${parent} (where ${dir} would be created) does not exist`);
  // What writeState would refuse after the run (runtime/state.ts prepareStateDir), refused now.
  const table = planTypes(app.classes);
  const names = table.concreteIds.map((id) => `${table.types[id]!.name}${STATE_EXTENSION}`);
  for (const side of ['reference', 'run']) {
    const sub = join(dir, side);
    if (!existsSync(sub)) continue;
    if (!statSync(sub).isDirectory())
      throw new CliUsageError(`${where}: --check-states: ${sub} exists and is not a directory; give a new DIR`);
    const foreign = readdirSync(sub).filter((f) => f.endsWith(STATE_EXTENSION) && !names.includes(f));
    if (foreign.length > 0)
      throw new CliUsageError(
        `${where}: --check-states: ${sub} holds ${foreign.join(', ')}, not a class of ${app.name}: give a new or empty DIR`,
      );
  }
}

/** The reference: backend 'ts', one thread, the run's heap size, filled as the run was (L1). */
async function startReference(app: App, opts: RunOptions, heapBytes: number, init: InitState | undefined): Promise<Runtime> {
  const ref = await createRuntime({ classes: app.classes, heap: heapBytes, backend: 'ts' });
  try {
    if (init) await restoreInto(app, ref, init);
    else await app.init(ref, opts.params, opts.seed);
  } catch (e) {
    await ref.close();
    throw e;
  }
  return ref;
}

/** Add the perturbation's delta to its object's field in `rt` (after bringing the GPU's data to the host). */
async function perturb(rt: Runtime, p: Perturbation): Promise<void> {
  await rt.sync();
  const t = rt.table.types.find((x) => x.name === p.className && !x.abstract);
  if (t === undefined) throw new UsageError(`SMMO_TEST_PERTURB: no concrete class ${p.className}`);
  if (!t.fields.some((f) => f.name === p.field && f.length === 0 && f.kind !== 'ref' && f.kind !== 'bool'))
    throw new UsageError(`SMMO_TEST_PERTURB: ${p.className} has no numeric scalar field '${p.field}'`);
  const { captureState } = await stateApi();
  const handles = captureState(rt).find((c) => c.name === p.className)!.handles;
  if (p.index >= handles.length)
    throw new UsageError(`SMMO_TEST_PERTURB: ${p.className} has ${handles.length} live objects, no index ${p.index}`);
  const obj = rt.get(t.cls, handles[p.index]!) as unknown as Record<string, number>;
  obj[p.field] = obj[p.field]! + p.delta;
}

/** One side of the lockstep replay (L3): its arrivals at pass hooks, and the gate it waits at. */
class Side {
  private arrivals: Arrival[] = [];
  private wake: ((a: Arrival) => void) | null = null;
  private gate: { go: () => void; stop: (e: unknown) => void } | null = null;
  done: Promise<void> = Promise.resolve();

  /** Run `step`; its passes stop at atPass until go(). */
  start(step: () => Promise<void>): void {
    this.done = step().then(
      () => this.arrive({ end: true }),
      (e: unknown) => {
        if (e !== STOP) this.arrive({ error: e });
      },
    );
  }
  /** The pass hook: report the pass, wait for go() (or stop()). */
  atPass(pass: PassInfo): Promise<void> {
    this.arrive({ pass });
    return new Promise((go, stop) => (this.gate = { go, stop }));
  }
  next(): Promise<Arrival> {
    const a = this.arrivals.shift();
    return a !== undefined ? Promise.resolve(a) : new Promise((r) => (this.wake = r));
  }
  go(): void {
    const g = this.gate;
    this.gate = null;
    g?.go();
  }
  /** End the step at its gate (if it waits there) and wait until it has ended. */
  async stop(): Promise<void> {
    const g = this.gate;
    this.gate = null;
    g?.stop(STOP);
    await this.done;
  }
  private arrive(a: Arrival): void {
    const w = this.wake;
    this.wake = null;
    if (w) w(a);
    else this.arrivals.push(a);
  }
}
type Arrival = { pass: PassInfo } | { end: true } | { error: unknown };
const STOP = Symbol('stop the replay');

interface PassHit {
  iteration: number;
  passIndex: number;
  pass: string;
  fields: Record<string, FieldDiff>;
  structure: string[];
  rank: string[];
  worst: string;
  note: string;
}

/**
 * Run `opts.iterations` steps of `rt` (filled and prepared; its first step index `first`)
 * with the reference in lockstep (L1–L6). The reference is closed before returning; `rt`
 * is left current on the host.
 */
export async function runLockstep(
  app: App,
  rt: Runtime,
  opts: RunOptions,
  ctx: { heapBytes: number; init: InitState | undefined; first: number; version: string; where: string },
): Promise<LockstepResult> {
  const every = opts.checkEvery!;
  const tol = opts.tolerance;
  const { first } = ctx;
  const text = process.env['SMMO_TEST_PERTURB'];
  const perturbation = text === undefined || text === '' ? null : parsePerturbation(text);
  const ref = await startReference(app, opts, ctx.heapBytes, ctx.init);
  let current = first; // the iteration the run is in (for the perturbation)
  let perturbed = false;
  let lockstep: { ref: Side; run: Side } | null = null;
  const unhookRef = observePasses(ref, (pass) => (lockstep ? lockstep.ref.atPass(pass) : undefined));
  const unhookRun = observePasses(rt, async (pass) => {
    if (perturbation && !perturbed && current === perturbation.iteration && pass.label === perturbation.pass) {
      perturbed = true;
      await perturb(rt, perturbation);
    }
    if (lockstep) await lockstep.run.atPass(pass);
  });
  try {
    let snapRun = await heapSnapshot(rt);
    let snapRef = await heapSnapshot(ref);
    let agreedAt = first;
    let runMs = 0;
    let refMs = 0;
    // Checkpoint 0 (L2): the two initial states.
    let comparisons = 1;
    let verdict = checkRuntimes(ref, rt, { reference: app.digest(ref), run: app.digest(rt) }, tol, app.matchKeys);
    let k = 0;
    while (k < opts.iterations && verdict.ok) {
      current = first + k;
      let t0 = performance.now();
      await app.step(rt, first + k);
      runMs += performance.now() - t0;
      t0 = performance.now();
      await app.step(ref, first + k);
      refMs += performance.now() - t0;
      k++;
      if (k % every !== 0 && k !== opts.iterations) continue;
      t0 = performance.now();
      await rt.sync();
      runMs += performance.now() - t0;
      comparisons++;
      verdict = checkRuntimes(ref, rt, { reference: app.digest(ref), run: app.digest(rt) }, tol, app.matchKeys);
      if (!verdict.ok) break;
      agreedAt = first + k;
      if (k !== opts.iterations) {
        snapRun = await heapSnapshot(rt);
        snapRef = await heapSnapshot(ref);
      }
    }
    const check: LockstepResult['check'] = {
      ok: verdict.ok,
      tolerance: verdict.tolerance,
      digest: verdict.digest,
      fields: verdict.fields,
      structure: verdict.structure,
      rank: verdict.rank,
      keyed: verdict.keyed,
      worst: verdict.worst,
      referenceSeconds: refMs / 1000,
    };
    const base = { every, comparisons, agreedAt };
    if (verdict.ok) {
      return {
        iterations: k,
        seconds: runMs / 1000,
        check,
        divergence: {
          ...base,
          found: false,
          iteration: null,
          passIndex: null,
          pass: null,
          class: null,
          field: null,
          object: null,
          reference: null,
          run: null,
          fields: {},
          structure: [],
          states: null,
          note: `${comparisons} comparison(s), every one within the tolerance`,
        },
      };
    }
    if (k === 0) {
      // The initial states differ: nothing to replay (the app's init, or --init's restore, differs).
      const hit: PassHit = {
        iteration: first,
        passIndex: -1,
        pass: 'initial state',
        fields: verdict.fields,
        structure: verdict.structure,
        rank: verdict.rank,
        worst: verdict.worst,
        note: "the initial states differ, before any iteration (the app's init, or the restore of --init, differs)",
      };
      const states = await writeStates(app, ref, rt, opts, ctx, first);
      return { iterations: 0, seconds: 0, check, divergence: { ...base, ...(await describe(ref, hit)), states } };
    }
    // Narrow (L3): back to the last agreeing heaps, replay the window pass by pass.
    await restoreHeap(rt, snapRun);
    await restoreHeap(ref, snapRef);
    perturbed = false;
    let hit: PassHit | null = null;
    for (let i = agreedAt; i < first + k && hit === null; i++) {
      current = i;
      hit = await replayIteration(app, ref, rt, i, tol, (l) => (lockstep = l));
    }
    lockstep = null;
    const end = first + k;
    if (hit === null) {
      // L5: the replay agreed at every pass; report the window's end (the heaps are there again).
      hit = {
        iteration: end - 1,
        passIndex: -1,
        pass: '',
        fields: verdict.fields,
        structure: verdict.structure,
        rank: verdict.rank,
        worst: verdict.worst,
        note:
          `the comparison after iteration ${end} failed, but replaying iterations ${agreedAt} … ${end - 1} pass by pass from the last ` +
          `agreeing state found no pass that differs${Object.keys(verdict.fields).length === 0 || verdict.worst === '' ? ' (only the digest differs)' : ' (the backend did not repeat its window)'}; the states are those after iteration ${end}`,
      };
    }
    const states = await writeStates(app, ref, rt, opts, ctx, hit.iteration);
    return { iterations: k, seconds: runMs / 1000, check, divergence: { ...base, ...(await describe(ref, hit)), states } };
  } finally {
    unhookRun();
    unhookRef();
    await ref.close();
  }
}

/**
 * Replay iteration `i` on both runtimes pass by pass (L3); null when every pass agrees,
 * else the first that does not. `setLockstep` makes the pass hooks stop at the gates.
 */
async function replayIteration(
  app: App,
  ref: Runtime,
  rt: Runtime,
  i: number,
  tol: CheckTolerance,
  setLockstep: (l: { ref: Side; run: Side } | null) => void,
): Promise<PassHit | null> {
  const a = new Side();
  const b = new Side();
  setLockstep({ ref: a, run: b });
  const stopBoth = async (): Promise<void> => {
    await a.stop();
    await b.stop();
  };
  try {
    a.start(() => app.step(ref, i));
    for (let p = 0; ; p++) {
      const ea = await a.next();
      if ('error' in ea) {
        await b.stop();
        throw ea.error;
      }
      if (p === 0) b.start(() => app.step(rt, i));
      else b.go();
      const eb = await b.next();
      if ('error' in eb) {
        await a.stop();
        throw eb.error;
      }
      const la = 'pass' in ea ? ea.pass.label : null;
      const lb = 'pass' in eb ? eb.pass.label : null;
      await rt.sync();
      const label = la ?? 'end of step()';
      if (la !== lb) {
        await stopBoth();
        return {
          iteration: i,
          passIndex: p,
          pass: label,
          fields: {},
          structure: [`pass ${p} of the step: ${la ?? 'the step ended'} in the reference, ${lb ?? 'the step ended'} in the run`],
          rank: [],
          worst: '',
          note: 'the two runs took different passes (the step’s control flow depends on state that differs)',
        };
      }
      const cmp = compareHeaps(ref, rt, tol, app.matchKeys);
      let ok = cmp.fieldsOk;
      let digestNote = '';
      if (ok && la === null) {
        const v = checkRuntimes(ref, rt, { reference: app.digest(ref), run: app.digest(rt) }, tol, app.matchKeys);
        ok = v.ok;
        if (!ok) digestNote = ` (only the digest differs: reference ${v.digest.reference}, run ${v.digest.run})`;
      }
      if (!ok) {
        await stopBoth();
        return {
          iteration: i,
          passIndex: p,
          pass: label,
          fields: cmp.fields,
          structure: cmp.structure,
          rank: cmp.rank,
          worst: cmp.worst,
          note: `found by replaying from the last agreeing state pass by pass${digestNote}`,
        };
      }
      if (la === null) return null;
      a.go();
    }
  } finally {
    setLockstep(null);
    await stopBoth();
  }
}

/** The divergence's fields (L4) from a hit. */
async function describe(ref: Runtime, hit: PassHit): Promise<Omit<DivergenceReport, 'every' | 'comparisons' | 'agreedAt' | 'states'>> {
  const dot = hit.worst.indexOf('.');
  const cls = dot < 0 ? null : hit.worst.slice(0, dot);
  const field = dot < 0 ? null : hit.worst.slice(dot + 1);
  const d = hit.worst === '' ? undefined : hit.fields[hit.worst];
  let object: DivergenceReport['object'] = null;
  if (d?.worst && cls !== null) {
    const { captureState } = await stateApi();
    const handles = captureState(ref).find((c) => c.name === cls)?.handles ?? new Uint32Array(0);
    object = { handle: d.worst.handleA, runHandle: d.worst.handleB, index: indexOfSorted(handles, d.worst.handleA) };
  }
  const structure = [...hit.structure, ...hit.rank.map((c) => `${c}: objects matched by rank (the handles differ)`)];
  // A class whose object counts differ names the class even without a field.
  const countClass = cls ?? /^(\w+): \d+ live objects/.exec(hit.structure[0] ?? '')?.[1] ?? null;
  return {
    found: true,
    iteration: hit.iteration,
    passIndex: hit.passIndex < 0 ? null : hit.passIndex,
    pass: hit.pass === '' ? null : hit.pass,
    class: countClass,
    field,
    object,
    reference: d?.worst ? d.worst.a : null,
    run: d?.worst ? d.worst.b : null,
    fields: Object.fromEntries(Object.entries(hit.fields).filter(([, f]) => f.maxAbs > 0 || f.beyond > 0)),
    structure,
    note: hit.note,
  };
}

/** Write both heaps as DIR/reference and DIR/run (L4). */
async function writeStates(
  app: App,
  ref: Runtime,
  rt: Runtime,
  opts: RunOptions,
  ctx: { version: string; where: string },
  iteration: number,
): Promise<{ reference: string; run: string }> {
  const { writeState } = await stateApi();
  const dir = opts.checkStates ?? defaultCheckStates(app);
  const params: Record<string, number | string | null> = {};
  for (const [key, v] of Object.entries(opts.params)) params[key] = v ?? null;
  const out = { reference: join(dir, 'reference'), run: join(dir, 'run') };
  try {
    if (!existsSync(dir)) mkdirSync(dir);
    await rt.sync();
    for (const [side, r] of [
      ['reference', ref],
      ['run', rt],
    ] as const) {
      writeState(r, out[side], {
        app: app.name,
        iterations: iteration,
        seed: opts.seed,
        params,
        appState: app.saveState?.(r) ?? {},
        version: ctx.version,
      });
    }
  } catch (e) {
    if (e instanceof UsageError) throw new CliUsageError(`${ctx.where}: --check-states: ${e.message}`);
    const err = e as NodeJS.ErrnoException;
    if (typeof err.code === 'string') throw new CliUsageError(`${ctx.where}: --check-states: cannot write to ${dir}: ${err.message}`);
    throw e;
  }
  return out;
}
