/**
 * Refresh README.md's CLI reference from the CLI itself: every block written as
 *
 *   <!-- output of: smmo run nbody --help -->
 *   ```text
 *   …
 *   ```
 *
 * gets the current output of that command. test/cli.test.ts fails when a block is out
 * of date; `npm run readme:cli` (after a build) fixes it.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** Matches one help block; group 1 is the command after `smmo `, group 2 the text. */
const HELP_BLOCK = /<!-- output of: smmo ([^>]*?) -->(\s*)```text\n([\s\S]*?)```/g;

function refresh(): void {
  const readmeUrl = new URL('../../README.md', import.meta.url);
  const bin = fileURLToPath(new URL('../../bin/smmo.js', import.meta.url));
  const before = readFileSync(readmeUrl, 'utf8');
  let changed = 0;
  const after = before.replace(HELP_BLOCK, (_all, command: string, gap: string, text: string) => {
    const out = execFileSync(process.execPath, [bin, ...command.split(' ')], { encoding: 'utf8' });
    if (out !== text) changed++;
    return `<!-- output of: smmo ${command} -->${gap}\`\`\`text\n${out}\`\`\``;
  });
  if (changed > 0) writeFileSync(readmeUrl, after);
  console.log(changed > 0 ? `README.md: ${changed} CLI block(s) updated` : 'README.md: CLI blocks are up to date');
}

refresh();
