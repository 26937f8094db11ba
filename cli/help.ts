/**
 * Help texts, generated from the command list, the app registry and the flag tables
 * (flags.ts). README.md's CLI reference is a copy of these texts, checked by
 * test/cli.test.ts.
 */
import type { App } from '../apps/app.js';
import { appFlagSpecs, COMMON_FLAGS, formatFlags } from './flags.js';

export interface AppSummary {
  name: string;
  summary: string;
}

const EXIT_CODES = `Exit status:
  0   success
  1   the run failed: an smmo error such as HeapExhaustedError (ask for a larger --heap),
      PassTimeoutError, or GpuUnavailableError (--backend webgpu without a usable adapter);
      or --check / --check-every found a difference from the TypeScript reference
  2   bad command line (unknown command, app or flag, or a bad value), or a bad input
      file, state or parameter`;

function appList(apps: readonly AppSummary[]): string {
  const w = Math.max(...apps.map((a) => a.name.length)) + 3;
  return apps.map((a) => `  ${a.name.padEnd(w)}${a.summary}`).join('\n');
}

/** `smmo --help`. */
export function mainHelp(version: string, apps: readonly AppSummary[]): string {
  return `smmo ${version}: Single-Method Multiple-Objects simulations on a structure-of-arrays heap

Usage:
  smmo run <app> [flags]   run a simulation and print a summary
  smmo help [command|app]  show help for a command or an app
  smmo compare A B         compare two states written by --dump, field by field
  smmo bench [flags]       time the apps and their baselines: table, JSON, SVG chart
  smmo --version           print the version
  smmo --help              show this help

Apps:
${appList(apps)}

Run 'smmo run <app> --help' for the flags of an app.

${EXIT_CODES}`;
}

/** `smmo run --help` / `smmo help run`. */
export function runHelp(apps: readonly AppSummary[]): string {
  return `Usage: smmo run <app> [flags]

Create the app's objects, run K iterations of its do-alls, and print a summary:
app, backend, threads, iterations, seconds, iterations/s, digest, objects per class,
heap blocks used and fragmentation. A progress bar is drawn on stderr when it is a
terminal (not with --json or --quiet).

Apps:
${appList(apps)}

Flags of every app:
${formatFlags(COMMON_FLAGS, [['-h, --help', 'show the flags of the app']])}

--json prints one JSON object as the last line of stdout, with the keys app, backend,
threads, iterations, seconds (the iterations only), initSeconds, iterationsPerSecond,
digest, objects ({class: count}), heap ({bytes, blockBytes, blockSize, blocks, usedBlocks,
fragmentation}), params, seed, checked, heapValidated, allocator ({rotation, coalescing,
bitmapAlloc, ownFirstBlock}), kernels, compiled, version, node, machine; with --backend webgpu
gpu ({adapter, software, validation, floats, generated: passes by Class.method that ran as WGSL generated
from the compiled method, fallbacks: passes that ran in TypeScript with the reason, transfers: {uploads,
downloads} of the whole heap, the final read included}); with --init also init and
startIteration (and warnings: float columns of the state holding NaN or infinities), with
--dump dump (the files), with --render frames; an app that measures something besides
its digest adds results (linux-scalability: ns per allocation by k) and resultRows;
with --defrag defrag ({n, threads, classes, calls, passes, objectsMoved, copies, blocksFreed,
ms per phase, fragmentation before/after, results, device}; with --threads > 1 the copy and
rewrite phases run on the worker threads too, with --backend webgpu on the GPU (device
'webgpu', transfer: bytes over the bus), with the same results) and, where moving
objects may change results, a warning. An app that cannot take part refuses --defrag and says why.
With --check: check (fields, digest, worst, ok). With --check-every: check (the last
comparison made) and divergence ({found, iteration, passIndex, pass, class, field,
object {handle, runHandle, index}, reference, run, fields, states}); after a divergence,
iterations counts those run up to the comparison that failed and the other keys describe
the run at the divergent pass. docs/webgpu.md, "The divergence finder".

State files and pictures: --dump DIR writes DIR/<Class>.arrow (Apache Arrow IPC,
one column per field, a 'handle' column; read them with pyarrow or pandas);
--init DIR resumes from one; 'smmo compare A B' compares two. --render FILE writes
PNG pictures of the grid apps. See README.md, "State files and pictures".

${EXIT_CODES}`;
}

/** `smmo run <app> --help` / `smmo help <app>`. */
export function appHelp(app: App): string {
  const own = appFlagSpecs(app);
  const common = COMMON_FLAGS.map((s) => (s.name === 'iterations' ? { ...s, defaultText: String(app.iterations) } : s));
  return `Usage: smmo run ${app.name} [flags]

${app.summary}.
Classes: ${app.classes.map((c) => c.name).join(', ')}.

${own.length > 0 ? `Flags of ${app.name}:\n${formatFlags(own)}\n\n` : ''}Flags of every app:
${formatFlags(common, [['-h, --help', 'show this help']])}

Example:
  smmo run ${app.name} ${own
    .filter((s) => s.defaultText !== undefined && s.kind === 'positive')
    .map((s) => `--${s.name} ${Math.max(1, Math.floor(Number(s.defaultText) / 10))} `)
    .join('')}--iterations 10 --json

See 'smmo run --help' for the JSON keys and exit codes.`;
}
