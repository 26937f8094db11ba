#!/usr/bin/env node
// Mutation testing of the Rust allocator core (wasm/src/alloc/): a fixed list of
// hand-written source mutations (an operator, a constant or a condition changed at a named
// place), each built into a temporary folder and run against the allocator and bitmap
// tests (ava --fail-fast) with SMMO_WASM_DIR pointing there. A mutant is killed when a test fails (or the
// run times out: a mutant that makes a bounded loop unbounded); it survives when every
// test passes. docs/mutation-rust.md records a run and explains every survivor.
//
//   npm run mutation:rust                  (= node scripts/mutate-rust.mjs; builds the TypeScript first)
//   node scripts/mutate-rust.mjs --only K  just mutants whose name contains K (K1|K2: any of them)
//   node scripts/mutate-rust.mjs --json F  also write the results to F
//
// Not part of CI (about half an hour on the 2-core dev VM). Needs the same rustc as
// scripts/build-wasm.mjs and a built dist/ (npx tsc -p .).
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const value = (name) => (args.indexOf(name) >= 0 ? args[args.indexOf(name) + 1] : undefined);

/** The tests every mutant runs against (dist/test/…): the allocator's and the bitmaps'. */
const TESTS = [
  'bitmap',
  'find-set',
  'scan-fallback',
  'interleavings',
  'kept-blocks',
  'allocator-model',
  'allocator',
  'coalescing',
  'variants',
  'alloc-fast-path',
].map((t) => `dist/test/${t}.test.js`);
/** A mutant whose tests run longer than this is killed by timeout (unbounded loop). */
const TIMEOUT_S = 300;

/**
 * The mutations: file (in wasm/src/alloc/), a name saying where and what, the exact source
 * text and its replacement. `find` must occur exactly once in the file.
 */
const MUTATIONS = [
  // bits.rs
  { file: 'bits.rs', name: 'ffs_from: rotation mask shifts the wrong way', find: 'x & (u32::MAX << s)', replace: 'x & (u32::MAX >> s)' },
  {
    file: 'bits.rs',
    name: 'lowest_set_bits: one bit too many',
    find: 'while i < k && rest != 0 {',
    replace: 'while i <= k && rest != 0 {',
  },
  { file: 'bits.rs', name: 'Env::start: rotation always on (NoShift ignored)', find: 'if self.rotate {', replace: 'if true {' },
  {
    file: 'bits.rs',
    name: 'Env::pause: never gives up (unbounded retries)',
    find: 'if attempt >= self.max {',
    replace: 'if attempt >= u32::MAX {',
  },
  // bitmap.rs
  {
    file: 'bitmap.rs',
    name: 'set_at: SET-FIRST condition inverted',
    find: 'if prev == 0 && level < self.lv.top {',
    replace: 'if prev != 0 && level < self.lv.top {',
  },
  {
    file: 'bitmap.rs',
    name: 'try_clear_at: CLEAR-LAST never propagates',
    find: 'if prev == mask && level < self.lv.top {',
    replace: 'if prev == 0 && level < self.lv.top {',
  },
  { file: 'bitmap.rs', name: 'try_find_set: the chosen bit is dropped', find: 'pos = pos * 32 + bit as u32;', replace: 'pos = pos * 32;' },
  { file: 'bitmap.rs', name: 'scan_find_set: takes empty containers', find: 'if word != 0 {', replace: 'if word == 0 {' },
  {
    file: 'bitmap.rs',
    name: 'find_set: no backtracking past an emptied container (B5)',
    find: "level += 1; // every bit of this container tried: back to the parent's next bit",
    replace: 'return -1;',
  },
  {
    file: 'bitmap.rs',
    name: 'find_and_clear: no exact scan after a failed tree search (B3)',
    find: 'pos = unsafe { self.scan_find_set::<M>(env, s) };',
    replace: 'pos = -1;',
  },
  {
    file: 'bitmap.rs',
    name: 'fill: the partial container gets one bit too many',
    find: '(1u32 << (n & 31)) - 1)',
    replace: '(1u32 << (n & 31)))',
  },
  // core.rs: Alg. 1, 6
  {
    file: 'core.rs',
    name: 'allocate_one: D1 type check skipped',
    find: '                if tt == t {\n                    self.set_hint(t, if full { 0 } else { bid });\n                    return Ok(bid * 32 + slot as u32);',
    replace:
      '                if true {\n                    self.set_hint(t, if full { 0 } else { bid });\n                    return Ok(bid * 32 + slot as u32);',
  },
  {
    file: 'core.rs',
    name: 'allocate_one: a full block stays active (Alg. 1 l. 13 dropped)',
    find: '                let tt = self.block_type(bid)?;\n                if full {\n                    self.clear(self.active_bm(tt), bid)?;\n                }\n                if tt == t {\n                    self.set_hint(t, if full { 0 } else { bid });\n                    return Ok(bid * 32 + slot as u32);',
    replace:
      '                let tt = self.block_type(bid)?;\n                if tt == t {\n                    self.set_hint(t, if full { 0 } else { bid });\n                    return Ok(bid * 32 + slot as u32);',
  },
  {
    file: 'core.rs',
    name: 'reserve: FULL detection off by the new bit',
    find: 'return Ok((pos, before | mask == U32_ALL_ONES));',
    replace: 'return Ok((pos, before == U32_ALL_ONES));',
  },
  {
    file: 'core.rs',
    name: 'allocate: coalescing flag ignored (NoCoal coalesces)',
    find: 'if self.has(ALLOC_FLAG_COALESCING) && self.state(S_WARP) != 0 {',
    replace: 'if self.state(S_WARP) != 0 {',
  },
  {
    file: 'core.rs',
    name: 'allocate_warp: reserves a whole block, not the lanes left',
    find: '        } else {\n            left\n        };',
    replace: '        } else {\n            MAX_SLOTS\n        };',
  },
  {
    file: 'core.rs',
    name: 'allocate_warp: hands out the highest reserved slot',
    find: 'return Ok(bid * 32 + got.trailing_zeros());',
    replace: 'return Ok(bid * 32 + (31 - got.leading_zeros()));',
  },
  {
    file: 'core.rs',
    name: 'warp_end: cached slots not returned',
    find: '                self.release_mask(self.per_type(t, TS_CACHE_BLOCK), mask)?;\n',
    replace: '',
  },
  {
    file: 'core.rs',
    name: 'allocate_many: the retry count is not reset after a success',
    find: '                    attempt = 0;\n',
    replace: '',
  },
  // core.rs: Alg. 1 l. 4–7, K3, K5
  {
    file: 'core.rs',
    name: 'new_block: K3 reclaim skipped before HeapExhausted',
    find: 'if self.reclaim_empty()? > 0 {',
    replace: 'if false && self.reclaim_empty()? > 0 {',
  },
  {
    file: 'core.rs',
    name: 'select_block: K5 first block never taken from free',
    find: 'if self.per_type(t, TS_FRESH) == 1 {',
    replace: 'if self.per_type(t, TS_FRESH) == 2 {',
  },
  // core.rs: Alg. 2
  { file: 'core.rs', name: 'release: forged slot check off by one', find: 'if slot >= slots {', replace: 'if slot > slots {' },
  {
    file: 'core.rs',
    name: 'release: generation bumped by 2',
    find: 'self.add(w + gen_offset / 4 + slot, 1);',
    replace: 'self.add(w + gen_offset / 4 + slot, 2);',
  },
  {
    file: 'core.rs',
    name: 'released: FIRST condition inverted',
    find: '        if before == U32_ALL_ONES {\n            self.to_active(bid, t)?; // FIRST',
    replace: '        if before != U32_ALL_ONES {\n            self.to_active(bid, t)?; // FIRST',
  },
  {
    file: 'core.rs',
    name: 'release_end: the generation the host read is not the one checked (D2)',
    find: 'self.released(bid, t, gen, before, 1u32 << slot)\n    }\n\n    /// Alg. 2 l. 5–13',
    replace: 'self.released(bid, t, gen.wrapping_add(1), before, 1u32 << slot)\n    }\n\n    /// Alg. 2 l. 5–13',
  },
  {
    file: 'core.rs',
    name: 'released: EMPTY ignores the released bit',
    find: 'if before & !mask == self.high_mask(t) {',
    replace: 'if before == self.high_mask(t) {',
  },
  {
    file: 'core.rs',
    name: 'released: K4 also with keepBlocks 0',
    find: 'if self.keep() > 0 && self.hint(t) == bid {',
    replace: 'if self.hint(t) == bid {',
  },
  // core.rs: Alg. 7, D2, retire
  {
    file: 'core.rs',
    name: 'invalidate_resolve: D2 generation check dropped',
    find: 'if before == hm && same_generation {',
    replace: 'if before == hm {',
  },
  {
    file: 'core.rs',
    name: 'invalidate_resolve: active bit not cleared after a rollback',
    find: '        if before_rollback != U32_ALL_ONES {\n            self.clear(self.active_bm(t), bid)?;\n        }\n',
    replace: '',
  },
  {
    file: 'core.rs',
    name: 'invalidate_resolve: RETRY reported as FAILED',
    find: '        Ok(INVALIDATE_RETRY)\n',
    replace: '        Ok(INVALIDATE_FAILED)\n',
  },
  {
    file: 'core.rs',
    name: 'retire_block: allocated bit left set',
    find: '        self.clear(self.active_bm(t), bid)?;\n        self.clear(self.allocated_bm(t), bid)?;\n',
    replace: '        self.clear(self.active_bm(t), bid)?;\n',
  },
  {
    file: 'core.rs',
    name: 'flush_kept: the hint is dropped even when its block holds objects',
    find: 'if h != 0 && self.load(self.block_word(h) + BLOCK_ALLOC_WORD) == self.high_mask(t) {',
    replace: 'if h != 0 {',
  },
  {
    file: 'core.rs',
    name: 'release_bitmap (BitmapAlloc): the block is not returned to free',
    find: '        self.store(w + BLOCK_ALLOC_WORD, U32_ALL_ONES);\n        self.set(self.free_bm(), bid)\n',
    replace: '        self.store(w + BLOCK_ALLOC_WORD, U32_ALL_ONES);\n        Ok(())\n',
  },
  // mem.rs
  { file: 'mem.rs', name: 'Plain::and: writes OR instead of AND', find: 'p.write(before & v);', replace: 'p.write(before | v);' },
];

function run(cmd, argv, opts = {}) {
  return spawnSync(cmd, argv, { cwd: root, encoding: 'utf8', maxBuffer: 256 << 20, ...opts });
}

/**
 * Run the tests in a process group of their own, so that a timeout ends ava's worker
 * processes too (a mutant with an unbounded loop would otherwise leave them spinning).
 */
function runTests(env, timeoutMs) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['node_modules/ava/entrypoints/cli.mjs', '--fail-fast', ...TESTS], {
      cwd: root,
      env,
      detached: true,
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }, timeoutMs);
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, out, timedOut });
    });
  });
}

const filter = value('--only');
const selected = MUTATIONS.filter((m) => filter === undefined || filter.split('|').some((f) => m.name.includes(f)));
const base = mkdtempSync(join(tmpdir(), 'smmo-mutants-'));
const started = performance.now();
const results = [];
console.log(`mutate-rust: ${selected.length} mutants of wasm/src/alloc, tests: ${TESTS.map((t) => t.split('/').pop()).join(' ')}`);
try {
  // Sanity: the unmutated core must pass the same tests (else every mutant looks killed).
  const dirs = [{ m: null, i: -1 }, ...selected.map((m, i) => ({ m, i }))];
  for (const { m, i } of dirs) {
    const dir = join(base, `m${i + 1}`);
    cpSync(join(root, 'wasm'), join(dir, 'wasm'), { recursive: true, filter: (p) => !p.includes(`${join('wasm', 'target')}`) });
    if (m !== null) {
      const file = join(dir, 'wasm', 'src', 'alloc', m.file);
      const src = readFileSync(file, 'utf8');
      const n = src.split(m.find).length - 1;
      if (n !== 1) throw new Error(`mutation '${m.name}': its text occurs ${n} times in ${m.file} (must be once); update the list`);
      writeFileSync(file, src.replace(m.find, m.replace));
    }
    const t0 = performance.now();
    const build = run(process.execPath, [
      'scripts/build-wasm.mjs',
      '--crate',
      join(dir, 'wasm'),
      '--out',
      join(dir, 'out'),
      '--only',
      'simd',
      '--force',
    ]);
    const name = m === null ? '(unmutated core)' : m.name;
    if (build.status !== 0) {
      // A mutant that does not compile is neither killed by a test nor a survivor.
      results.push({ name, file: m?.file, outcome: 'build failed', seconds: 0, detail: build.stderr.slice(-400) });
      console.log(`  BUILD FAILED  ${name}`);
      continue;
    }
    const tests = await runTests(
      { ...process.env, SMMO_WASM_DIR: join(dir, 'out'), SMMO_FC_RUNS: process.env.SMMO_FC_RUNS ?? '100' },
      TIMEOUT_S * 1000,
    );
    const seconds = (performance.now() - t0) / 1000;
    const timedOut = tests.timedOut;
    const failed = [...tests.out.matchAll(/✘ \[fail\]: ([^\n]+)/g)].map((x) => x[1].trim());
    const outcome = timedOut ? 'killed (timeout)' : tests.status !== 0 ? 'killed' : 'survived';
    results.push({ name, file: m?.file, outcome, seconds, failed: failed.slice(0, 3), failedCount: failed.length });
    if (m === null && outcome !== 'survived') {
      console.error(`mutate-rust: the unmutated core fails the tests; fix that first:\n${tests.out.slice(-3000)}`);
      process.exit(1);
    }
    const why = outcome === 'killed' ? ` (${failed.length} failed, e.g. ${failed[0] ?? '?'})` : '';
    const label = m === null ? 'PASSES' : outcome.toUpperCase();
    console.log(`  ${label.padEnd(16)} ${name}  ${seconds.toFixed(0)} s${why}`);
    rmSync(dir, { recursive: true, force: true });
  }
} finally {
  rmSync(base, { recursive: true, force: true });
}
const mutants = results.filter((r) => r.name !== '(unmutated core)');
const killed = mutants.filter((r) => r.outcome.startsWith('killed')).length;
const survived = mutants.filter((r) => r.outcome === 'survived');
const minutes = (performance.now() - started) / 60000;
const cpu = cpus();
console.log(
  `mutate-rust: ${killed} of ${mutants.length} killed, ${survived.length} survived${survived.length ? ` (${survived.map((s) => s.name).join('; ')})` : ''}; ` +
    `${minutes.toFixed(1)} min on ${cpu[0]?.model.trim() ?? 'unknown'} (${cpu.length} cores)`,
);
const out = value('--json');
if (out !== undefined)
  writeFileSync(
    out,
    JSON.stringify({ date: new Date().toISOString(), minutes, cpu: cpu[0]?.model, cores: cpu.length, results }, null, 2) + '\n',
  );
