/**
 * A small SVG chart writer for the benchmark reports (no dependencies): line charts
 * (a quantity over iterations) and bar charts in panels (one panel per app, each with
 * its own y scale, since the apps' step times differ by orders of magnitude).
 *
 * Output invariants, relied on by test/bench-apps*.test.ts and by browsers/GitHub:
 *  - well-formed XML with an <svg> root in the SVG namespace, width/height/viewBox set;
 *  - every text node and attribute value is XML-escaped;
 *  - every plotted datum is a <path> (class "series" for lines, "bar" for bars,
 *    "range" for min…max whiskers); axes and grid lines are paths of class "axis"/"grid";
 *  - non-finite data points are skipped (a line is broken there), never written as NaN.
 */

/** A line of a line chart: points (x, y) in data units, drawn in the given order. */
export interface Series {
  name: string;
  points: readonly (readonly [number, number])[];
  color?: string;
  dashed?: boolean;
}

export interface LineChartOptions {
  title: string;
  subtitle?: string;
  xLabel: string;
  yLabel: string;
  series: readonly Series[];
  width?: number;
  height?: number;
  /** Axis ranges; default: the data's, y from 0 when all y ≥ 0. */
  xMin?: number;
  xMax?: number;
  yMin?: number;
  yMax?: number;
  /** Horizontal reference lines (e.g. the paper's 18 %). */
  guides?: readonly { y: number; label: string }[];
  /** Tick label format of the y axis (default: niceNumber). */
  yFormat?: (v: number) => string;
}

export interface Bar {
  label: string;
  value: number;
  /** Spread shown as a whisker (e.g. min … max over repeats). */
  low?: number;
  high?: number;
  color?: string;
  /** Written above the bar (e.g. '1.3×'). */
  note?: string;
}

export interface BarPanel {
  title: string;
  bars: readonly Bar[];
}

export interface BarChartOptions {
  title: string;
  subtitle?: string;
  yLabel: string;
  panels: readonly BarPanel[];
  legend?: readonly { label: string; color: string }[];
  panelWidth?: number;
  height?: number;
}

/** A palette that stays readable in print and for the common colour-vision deficiencies (Okabe–Ito). */
export const PALETTE = ['#0072B2', '#E69F00', '#009E73', '#D55E00', '#CC79A7', '#56B4E9', '#F0E442', '#000000'] as const;

const FONT = 'font-family="Helvetica, Arial, sans-serif"';

/** Escape text for XML text nodes and attribute values. */
export function xmlEscape(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]!);
}

/** A number with few digits: 12 345 → '12345', 0.1234 → '0.123', 1.5e-7 → '1.5e-7'. */
export function niceNumber(v: number): string {
  if (v === 0) return '0';
  const a = Math.abs(v);
  if (a >= 1e6 || a < 1e-3) return v.toExponential(1).replace('e+', 'e');
  if (Number.isInteger(v)) return String(v);
  return String(Number(v.toPrecision(3)));
}

/** About `count` round tick values covering [min, max] (steps of 1, 2 or 5 × 10^k). */
export function niceTicks(min: number, max: number, count = 5): number[] {
  if (!Number.isFinite(min) || !Number.isFinite(max)) return [];
  if (max <= min) max = min + (min === 0 ? 1 : Math.abs(min));
  const raw = (max - min) / Math.max(1, count);
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
  const ticks: number[] = [];
  // Round to the step's decimals so that 0.1 + 0.2 prints as 0.3.
  const decimals = Math.max(0, -Math.floor(Math.log10(step)) + 1);
  for (let t = Math.ceil(min / step - 1e-9) * step; t <= max + step * 1e-9; t += step) ticks.push(Number(t.toFixed(decimals)));
  return ticks;
}

/** The smallest tick of niceTicks(0, v)'s step that is ≥ v (an axis top that leaves no datum above it). */
export function niceCeil(v: number, count = 5): number {
  if (!(v > 0)) return 1;
  const t = niceTicks(0, v, count);
  const step = t.length > 1 ? t[1]! - t[0]! : v;
  return Number((Math.ceil(v / step - 1e-9) * step).toPrecision(12));
}

const f = (v: number): string => String(Math.round(v * 10) / 10);

function header(width: number, height: number, title: string, subtitle: string | undefined): string[] {
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${f(width)}" height="${f(height)}" viewBox="0 0 ${f(width)} ${f(height)}" ${FONT}>`,
    `<rect class="background" x="0" y="0" width="${f(width)}" height="${f(height)}" fill="#ffffff"/>`,
    `<text x="${f(width / 2)}" y="22" font-size="15" font-weight="bold" text-anchor="middle">${xmlEscape(title)}</text>`,
  ];
  if (subtitle)
    out.push(`<text x="${f(width / 2)}" y="40" font-size="11" fill="#444444" text-anchor="middle">${xmlEscape(subtitle)}</text>`);
  return out;
}

/** A line chart: one path per series, axes with round ticks, a legend at the top right. */
export function lineChart(o: LineChartOptions): string {
  const width = o.width ?? 760;
  const height = o.height ?? 420;
  const m = { left: 68, right: 20, top: o.subtitle ? 56 : 40, bottom: 50 };
  const pts = o.series.flatMap((s) => s.points.filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y)));
  const xs = pts.map((p) => p[0]);
  const ys = [...pts.map((p) => p[1]), ...(o.guides ?? []).map((g) => g.y)];
  const xMin = o.xMin ?? (xs.length ? Math.min(...xs) : 0);
  const xMax = o.xMax ?? (xs.length ? Math.max(...xs) : 1);
  const dataYMin = ys.length ? Math.min(...ys) : 0;
  const yMin = o.yMin ?? (dataYMin >= 0 ? 0 : dataYMin);
  let yMax = o.yMax ?? (ys.length ? Math.max(...ys) : 1);
  if (o.yMax === undefined && yMin === 0) yMax = niceCeil(yMax * 1.05);
  const pw = width - m.left - m.right;
  const ph = height - m.top - m.bottom;
  const X = (x: number): number => m.left + ((x - xMin) / (xMax - xMin || 1)) * pw;
  const Y = (y: number): number => m.top + ph - ((y - yMin) / (yMax - yMin || 1)) * ph;
  const fmt = o.yFormat ?? niceNumber;

  const out = header(width, height, o.title, o.subtitle);
  for (const t of niceTicks(yMin, yMax)) {
    out.push(`<path class="grid" d="M${f(m.left)} ${f(Y(t))}H${f(m.left + pw)}" stroke="#e5e5e5" fill="none"/>`);
    out.push(`<text x="${f(m.left - 6)}" y="${f(Y(t) + 4)}" font-size="11" text-anchor="end">${xmlEscape(fmt(t))}</text>`);
  }
  for (const t of niceTicks(xMin, xMax, 8)) {
    out.push(`<path class="grid" d="M${f(X(t))} ${f(m.top + ph)}v5" stroke="#333333" fill="none"/>`);
    out.push(`<text x="${f(X(t))}" y="${f(m.top + ph + 18)}" font-size="11" text-anchor="middle">${xmlEscape(niceNumber(t))}</text>`);
  }
  out.push(`<path class="axis" d="M${f(m.left)} ${f(m.top)}V${f(m.top + ph)}H${f(m.left + pw)}" stroke="#333333" fill="none"/>`);
  out.push(`<text x="${f(m.left + pw / 2)}" y="${f(height - 10)}" font-size="12" text-anchor="middle">${xmlEscape(o.xLabel)}</text>`);
  out.push(
    `<text x="16" y="${f(m.top + ph / 2)}" font-size="12" text-anchor="middle" transform="rotate(-90 16 ${f(m.top + ph / 2)})">${xmlEscape(o.yLabel)}</text>`,
  );
  for (const g of o.guides ?? []) {
    out.push(`<path class="guide" d="M${f(m.left)} ${f(Y(g.y))}H${f(m.left + pw)}" stroke="#888888" stroke-dasharray="2 3" fill="none"/>`);
    out.push(
      `<text x="${f(m.left + pw - 4)}" y="${f(Y(g.y) - 4)}" font-size="10" fill="#555555" text-anchor="end" stroke="#ffffff" stroke-width="3" paint-order="stroke">${xmlEscape(g.label)}</text>`,
    );
  }
  o.series.forEach((s, i) => {
    const color = s.color ?? PALETTE[i % PALETTE.length]!;
    let d = '';
    let pen = false;
    for (const [x, y] of s.points) {
      if (!Number.isFinite(x) || !Number.isFinite(y)) {
        pen = false;
        continue;
      }
      d += `${pen ? 'L' : 'M'}${f(X(x))} ${f(Y(y))}`;
      pen = true;
    }
    if (d === '') return;
    out.push(
      `<path class="series" data-series="${xmlEscape(s.name)}" d="${d}" stroke="${color}" stroke-width="1.6" fill="none"${s.dashed ? ' stroke-dasharray="6 3"' : ''}/>`,
    );
  });
  // Legend: top right, one row per series, on a white box so that lines under it do not hide it.
  const lx = m.left + pw - 236;
  out.push(
    `<rect class="legend-box" x="${f(lx)}" y="${f(m.top)}" width="232" height="${f(8 + 16 * o.series.length)}" fill="#ffffff" fill-opacity="0.85"/>`,
  );
  o.series.forEach((s, i) => {
    const color = s.color ?? PALETTE[i % PALETTE.length]!;
    const y = m.top + 8 + i * 16;
    const x = m.left + pw - 230;
    out.push(
      `<path class="legend" d="M${f(x)} ${f(y)}h22" stroke="${color}" stroke-width="2.5" fill="none"${s.dashed ? ' stroke-dasharray="6 3"' : ''}/>`,
    );
    out.push(`<text x="${f(x + 28)}" y="${f(y + 4)}" font-size="11">${xmlEscape(s.name)}</text>`);
  });
  out.push('</svg>');
  return out.join('\n') + '\n';
}

/**
 * Bar charts side by side, one panel per group, each with its own y axis from 0; a
 * whisker per bar where low/high are given; labels under the bars, turned 40°.
 */
export function barChart(o: BarChartOptions): string {
  const panelWidth = o.panelWidth ?? 230;
  const height = o.height ?? 400;
  const m = { left: 58, right: 14, top: (o.subtitle ? 56 : 40) + (o.legend ? 40 : 8), bottom: 110 };
  const width = Math.max(1, o.panels.length) * (panelWidth + m.left + m.right);
  const ph = height - m.top - m.bottom;
  const out = header(width, height, o.title, o.subtitle);
  if (o.legend) {
    let x = 20;
    const y = (o.subtitle ? 56 : 40) + 6;
    for (const l of o.legend) {
      out.push(`<path class="legend" d="M${f(x)} ${f(y - 8)}h12v10h-12Z" fill="${l.color}"/>`);
      out.push(`<text x="${f(x + 16)}" y="${f(y + 1)}" font-size="11">${xmlEscape(l.label)}</text>`);
      x += 34 + 6.6 * l.label.length;
    }
  }
  o.panels.forEach((p, pi) => {
    const x0 = pi * (panelWidth + m.left + m.right) + m.left;
    const values = p.bars.flatMap((b) => [b.value, b.high ?? b.value]).filter(Number.isFinite);
    const top = niceCeil(Math.max(...values, 0) * 1.08);
    const Y = (v: number): number => m.top + ph - (v / top) * ph;
    out.push(
      `<text x="${f(x0 + panelWidth / 2)}" y="${f(m.top - 8)}" font-size="12" font-weight="bold" text-anchor="middle">${xmlEscape(p.title)}</text>`,
    );
    for (const t of niceTicks(0, top)) {
      out.push(`<path class="grid" d="M${f(x0)} ${f(Y(t))}H${f(x0 + panelWidth)}" stroke="#e5e5e5" fill="none"/>`);
      out.push(`<text x="${f(x0 - 5)}" y="${f(Y(t) + 4)}" font-size="10" text-anchor="end">${xmlEscape(niceNumber(t))}</text>`);
    }
    out.push(`<path class="axis" d="M${f(x0)} ${f(m.top)}V${f(m.top + ph)}H${f(x0 + panelWidth)}" stroke="#333333" fill="none"/>`);
    const cy = m.top + ph / 2;
    out.push(
      `<text x="${f(x0 - 40)}" y="${f(cy)}" font-size="11" text-anchor="middle" transform="rotate(-90 ${f(x0 - 40)} ${f(cy)})">${xmlEscape(o.yLabel)}</text>`,
    );
    const slot = panelWidth / Math.max(1, p.bars.length);
    const bw = Math.min(36, slot * 0.7);
    p.bars.forEach((b, bi) => {
      const cx = x0 + slot * (bi + 0.5);
      const color = b.color ?? PALETTE[bi % PALETTE.length]!;
      if (Number.isFinite(b.value)) {
        const y = Y(b.value);
        out.push(
          `<path class="bar" data-label="${xmlEscape(b.label)}" data-value="${b.value}" d="M${f(cx - bw / 2)} ${f(m.top + ph)}V${f(y)}H${f(cx + bw / 2)}V${f(m.top + ph)}Z" fill="${color}"/>`,
        );
        if (b.low !== undefined && b.high !== undefined && Number.isFinite(b.low) && Number.isFinite(b.high)) {
          const w = bw / 4;
          out.push(
            `<path class="range" d="M${f(cx)} ${f(Y(b.low))}V${f(Y(b.high))}M${f(cx - w)} ${f(Y(b.low))}h${f(2 * w)}M${f(cx - w)} ${f(Y(b.high))}h${f(2 * w)}" stroke="#222222" fill="none"/>`,
          );
        }
        if (b.note) {
          const ny = Math.min(y, b.high !== undefined && Number.isFinite(b.high) ? Y(b.high) : y) - 4;
          out.push(`<text x="${f(cx)}" y="${f(ny)}" font-size="9" text-anchor="middle">${xmlEscape(b.note)}</text>`);
        }
      } else {
        out.push(`<text x="${f(cx)}" y="${f(m.top + ph - 4)}" font-size="9" text-anchor="middle">n/a</text>`);
      }
      const ly = m.top + ph + 12;
      out.push(
        `<text x="${f(cx)}" y="${f(ly)}" font-size="10" text-anchor="end" transform="rotate(-40 ${f(cx)} ${f(ly)})">${xmlEscape(b.label)}</text>`,
      );
    });
  });
  out.push('</svg>');
  return out.join('\n') + '\n';
}
