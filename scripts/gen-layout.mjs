#!/usr/bin/env node
// Write wasm/src/layout.rs from layoutConstants() of runtime/layout.ts (the single source of
// the heap layout), through the built TypeScript (dist/). test/wasm-module.test.ts fails
// when the committed file differs from what this would write.
//
//   npx tsc -p . && node scripts/gen-layout.mjs          # write
//   node scripts/gen-layout.mjs --check                  # exit 1 if out of date
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const target = join(root, 'wasm', 'src', 'layout.rs');
let render;
try {
  ({ renderLayoutRust: render } = await import(join(root, 'dist', 'runtime', 'wasm.js')));
} catch (e) {
  console.error(`gen-layout: cannot load dist/runtime/wasm.js (${e.message}); build the TypeScript first: npx tsc -p .`);
  process.exit(1);
}
const text = render();
let current = '';
try {
  current = readFileSync(target, 'utf8');
} catch {
  // no file yet
}
if (process.argv.includes('--check')) {
  if (current !== text) {
    console.error('gen-layout: wasm/src/layout.rs is out of date with runtime/layout.ts; run: npx tsc -p . && node scripts/gen-layout.mjs');
    process.exit(1);
  }
  console.log('gen-layout: wasm/src/layout.rs is up to date');
} else if (current === text) {
  console.log('gen-layout: wasm/src/layout.rs already up to date');
} else {
  writeFileSync(target, text);
  console.log('gen-layout: wrote wasm/src/layout.rs');
}
