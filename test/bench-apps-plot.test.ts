/**
 * bench/plot.ts: the SVG writer's output is well-formed XML whatever the data (escaping,
 * NaN, empty series), axes cover the data, and the XML check used by the tests rejects
 * malformed documents (so a passing check means something).
 */
import test from 'ava';
import { barChart, lineChart, niceCeil, niceTicks, xmlEscape } from '../bench/plot.js';
import { parseXml } from './bench-apps-xml.js';

test('niceTicks / niceCeil: round steps that cover the range', (t) => {
  t.deepEqual(niceTicks(0, 10), [0, 2, 4, 6, 8, 10]);
  t.deepEqual(niceTicks(0, 0.3, 3), [0, 0.1, 0.2, 0.3]);
  t.deepEqual(niceTicks(0, 0), [0, 0.2, 0.4, 0.6, 0.8, 1]);
  t.is(niceCeil(12.75), 15); // step 5 for 0 … 12.75
  t.is(niceCeil(10), 10);
  for (const v of [0.0031, 0.7, 1, 13.77, 99.9, 12345]) t.true(niceCeil(v) >= v && niceCeil(v) <= 2 * v, String(v));
});

test('lineChart: well-formed, one path per series, NaN breaks the line, text escaped', (t) => {
  const svg = lineChart({
    title: 'a <b> & "c"',
    xLabel: 'iteration',
    yLabel: "fragmentation (%) 'x'",
    series: [
      {
        name: 'heap & more',
        points: [
          [0, 1],
          [1, NaN],
          [2, 3],
          [3, 4],
        ],
      },
      {
        name: 'agents',
        points: [
          [0, 2],
          [3, 20],
        ],
        dashed: true,
      },
      { name: 'empty', points: [] },
    ],
    guides: [{ y: 18, label: 'paper: ~18 %' }],
  });
  const el = parseXml(svg);
  t.is(el[0]!.name, 'svg');
  const series = el.filter((e) => e.name === 'path' && e.attrs['class'] === 'series');
  t.deepEqual(
    series.map((s) => s.attrs['data-series']),
    ['heap & more', 'agents'],
  );
  // The NaN point starts a new sub-path: two M commands, no NaN anywhere.
  t.is(series[0]!.attrs['d']!.match(/M/g)!.length, 2);
  t.false(svg.includes('NaN'));
  t.true(svg.includes('a &lt;b&gt; &amp; &quot;c&quot;'));
  // The y axis reaches at least the highest datum and guide: every point lies inside the plot area.
  const axis = el.find((e) => e.attrs['class'] === 'axis')!.attrs['d']!;
  const [, top] = /^M[\d.]+ ([\d.]+)/.exec(axis)!.map(Number);
  for (const s of series) for (const m of s.attrs['d']!.matchAll(/[ML]([\d.]+) ([\d.]+)/g)) t.true(Number(m[2]) >= top! - 1e-9);
});

test('barChart: one bar and one whisker per finite datum; a NaN bar is written n/a', (t) => {
  const svg = barChart({
    title: 't',
    yLabel: 'ms',
    panels: [
      {
        title: 'p1',
        bars: [
          { label: 'x<1>', value: 5, low: 4, high: 7, note: '2×' },
          { label: 'y', value: NaN },
        ],
      },
      { title: 'p2', bars: [{ label: 'z', value: 0.002 }] },
    ],
    legend: [{ label: 'ts', color: '#000' }],
  });
  const el = parseXml(svg);
  const bars = el.filter((e) => e.attrs['class'] === 'bar');
  t.deepEqual(
    bars.map((b) => b.attrs['data-label']),
    ['x<1>', 'z'],
  );
  t.is(el.filter((e) => e.attrs['class'] === 'range').length, 1);
  t.true(svg.includes('>n/a<'));
  // The bar of 7 (whisker top) stays under the panel's top tick: no bar above its axis.
  for (const b of bars) t.regex(b.attrs['d']!, /^M[\d.]+ [\d.]+V[\d.]+H/);
});

test('the XML check rejects malformed documents', (t) => {
  t.notThrows(() => parseXml('<svg a="1"><g><path d="M0 0"/></g><text>a &amp; b</text></svg>'));
  for (const bad of [
    '<svg><g></svg>',
    '<svg></svg><svg></svg>',
    '<svg a=1></svg>',
    '<svg a="1" a="2"></svg>',
    '<svg><text>a & b</text></svg>',
    '<svg><text>a < b</text></svg>',
    '<svg>',
    'text<svg></svg>',
  ])
    t.throws(() => parseXml(bad), undefined, bad);
  t.is(xmlEscape(`<&>"'`), '&lt;&amp;&gt;&quot;&apos;');
});
