/**
 * The worked example of README.md (examples/quickstart.ts) runs, does what its comments
 * say (births inside a do-all, hunters deleting grazers, one pass per subclass), and
 * README.md shows exactly that file.
 */
import test from 'ava';
import { describeChild, runNode } from './helpers/child.js';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { simulate } from '../examples/quickstart.js';

test('quickstart: grazers split and hunters eat them; counts agree with the objects left', async (t) => {
  const r = await simulate(30, 64);
  t.is(r.history.length, 30);
  const grazers = r.history.map((h) => h.grazers);
  t.true(Math.max(...grazers) > 32, `grazers were born inside a do-all (max ${Math.max(...grazers)} > 32 at the start)`);
  t.true(r.kills > 0, 'hunters deleted grazers during the pass over Hunters');
  const last = r.history[r.history.length - 1]!;
  t.deepEqual(r.objects, { Patch: 64, Grazer: last.grazers, Hunter: last.hunters });
  t.true(r.grassLeft >= 0 && r.grassLeft <= 64);
  t.true(r.usedBlocks >= 1);
});

test('quickstart: deterministic', async (t) => {
  t.deepEqual(await simulate(10, 32), await simulate(10, 32));
});

test('quickstart runs as a script', async (t) => {
  const script = fileURLToPath(new URL('../examples/quickstart.js', import.meta.url));
  const r = await runNode([script]);
  t.is(r.code, 0, describeChild(r));
  const out = r.stdout;
  t.regex(out, /^step 30: \d+ grazers, \d+ hunters$/m);
  t.regex(out, /objects: \{"Patch":64,"Grazer":\d+,"Hunter":\d+\}/);
});

test('README.md shows examples/quickstart.ts as it is (importing from smmo)', (t) => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const source = readFileSync(new URL('../../examples/quickstart.ts', import.meta.url), 'utf8');
  const block = /<!-- file: examples\/quickstart\.ts -->\s*```ts\n([\s\S]*?)```/.exec(readme);
  t.truthy(block, 'README has the example block (<!-- file: examples/quickstart.ts --> then a ```ts block)');
  t.is(block![1], source.replace("from '../index.js'", "from 'smmo'"), 'paste examples/quickstart.ts into README.md');
});
