#!/usr/bin/env node
// Write wasm/src/params.rs, the parameter tables of the WASM kernels, from the kernel
// declarations (static [KERNELS]) of every app's classes, through the built TypeScript
// (dist/): runtime/kernel-params.ts (P1–P3) renders it. test/kernel-params.test.ts fails
// when the committed file differs from what this would write.
//
//   npx tsc -p . && node scripts/gen-kernel-params.mjs     # write
//   node scripts/gen-kernel-params.mjs --check             # exit 1 if out of date
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const target = join(root, 'wasm', 'src', 'params.rs');
let gen;
try {
  gen = await import(join(root, 'dist', 'apps', 'kernel-declarations.js'));
} catch (e) {
  console.error(`gen-kernel-params: cannot load dist/apps/kernel-declarations.js (${e.message}); build the TypeScript first: npx tsc -p .`);
  process.exit(1);
}
const text = await gen.renderAppKernelParams();
let current = '';
try {
  current = readFileSync(target, 'utf8');
} catch {
  // no file yet
}
if (process.argv.includes('--check')) {
  if (current !== text) {
    console.error(
      'gen-kernel-params: wasm/src/params.rs is out of date with the kernel declarations; run: npx tsc -p . && node scripts/gen-kernel-params.mjs',
    );
    process.exit(1);
  }
  console.log('gen-kernel-params: wasm/src/params.rs is up to date');
} else if (current === text) {
  console.log('gen-kernel-params: wasm/src/params.rs already up to date');
} else {
  writeFileSync(target, text);
  console.log('gen-kernel-params: wrote wasm/src/params.rs');
}
