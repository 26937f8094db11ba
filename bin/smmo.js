#!/usr/bin/env node
// The `smmo` command: loads the compiled CLI (dist/cli/main.js). The TypeScript sources
// are compiled by `npm install` (the `prepare` script) or `npm run build`.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const entry = new URL('../dist/cli/main.js', import.meta.url);
if (!existsSync(fileURLToPath(entry))) {
  const root = fileURLToPath(new URL('..', import.meta.url));
  process.stderr.write(`smmo: the CLI is not built (${fileURLToPath(entry)} is missing).\n`);
  process.stderr.write(`Build it: cd ${root} && npm install   (or: npm run build)\n`);
  process.exit(1);
}
const { main } = await import(entry.href);
process.exitCode = await main(process.argv.slice(2));
