/**
 * One chart as a standalone SVG string: title, axes with ticks and labels, lines (with an optional
 * min/max band and point markers), an optional stack of areas, and a legend underneath. A chart
 * with no data is a title and a sentence, never an empty axis. No coordinate is ever NaN.
 */
import type { Point } from "./metrics.ts";
import { formatTick, niceTicks } from "./scale.ts";

export interface Line {
  label: string;
  points: Point[];
  /** Shaded band between two series (e.g. min and max), drawn where both have the step. */
  band?: { lo: Point[]; hi: Point[]; label: string };
  /** Circles at the points (default: when there are at most 30). */
  markers?: boolean;
  dashed?: boolean;
  /** Default: the next colour of the palette. */
  color?: string;
}

export interface Chart {
  id: string;
  title: string;
  yLabel: string;
  lines: Line[];
  /** Areas stacked bottom to top; a step missing from one counts as 0 for it. */
  stack?: { label: string; points: Point[] }[];
  /** Shown instead of the plot when there is nothing to draw. */
  empty: string;
}

export const PALETTE = [
  "#4e79a7",
  "#f28e2b",
  "#e15759",
  "#76b7b2",
  "#59a14f",
  "#edc948",
  "#b07aa1",
  "#ff9da7",
  "#9c755f",
  "#bab0ac",
];

const W = 640, PLOT_H = 220, LEFT = 64, RIGHT = 20, TOP = 40, AXIS_BOTTOM = 42, ROW = 18;
const FONT = `font-family="system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif"`;

/** XML text escaping for SVG and HTML. */
export function esc(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(
    /"/g,
    "&quot;",
  );
}

function num(v: number): string {
  if (!Number.isFinite(v)) throw new Error(`chart: non-finite coordinate ${v}`);
  const r = Math.round(v * 10) / 10;
  return String(r === 0 ? 0 : r);
}

/** Cumulative sums of a stack over the union of its steps. */
export function stackUp(stack: { points: Point[] }[]): Point[][] {
  const steps = [...new Set(stack.flatMap((s) => s.points.map((p) => p[0])))].sort((a, b) => a - b);
  const acc = new Map(steps.map((s) => [s, 0]));
  return stack.map((s) => {
    const m = new Map(s.points);
    return steps.map((st): Point => {
      const v = acc.get(st)! + (m.get(st) ?? 0);
      acc.set(st, v);
      return [st, v];
    });
  });
}

interface LegendItem {
  label: string;
  color: string;
  kind: "line" | "dash" | "area";
}

/** Legend items laid out in rows that fit the width; returns each item's x and row. */
function layoutLegend(items: LegendItem[]): { item: LegendItem; x: number; row: number }[] {
  const out = [];
  let x = LEFT, row = 0;
  for (const item of items) {
    const w = 28 + item.label.length * 6.4 + 16;
    if (x > LEFT && x + w > W - RIGHT) [x, row] = [LEFT, row + 1];
    out.push({ item, x, row });
    x += w;
  }
  return out;
}

function header(id: string, title: string, h: number): string {
  return `<svg xmlns="http://www.w3.org/2000/svg" id="chart-${esc(id)}" width="${W}" ` +
    `height="${h}" viewBox="0 0 ${W} ${h}" role="img" aria-label="${esc(title)}" ${FONT}>\n` +
    `<rect width="${W}" height="${h}" fill="#ffffff"/>\n` +
    `<text x="${W / 2}" y="24" text-anchor="middle" font-size="15" font-weight="600" ` +
    `fill="#222">${esc(title)}</text>\n`;
}

/** Renders `chart` to an SVG document. */
export function renderChart(chart: Chart): string {
  const lines = chart.lines.filter((l) => l.points.length);
  const stack = (chart.stack ?? []).filter((s) => s.points.length);
  if (!lines.length && !stack.length) {
    const h = 90;
    return header(chart.id, chart.title, h) +
      `<text x="${W / 2}" y="58" text-anchor="middle" font-size="12" fill="#777" ` +
      `class="empty">${esc(chart.empty)}</text>\n</svg>\n`;
  }
  const stacked = stackUp(stack);
  const all = [
    ...lines.flatMap((l) => [...l.points, ...(l.band ? [...l.band.lo, ...l.band.hi] : [])]),
    ...stacked.flat(),
  ];
  const xs = all.map((p) => p[0]), ys = all.map((p) => p[1]);
  if (stack.length) ys.push(0);
  const xt = niceTicks(Math.min(...xs), Math.max(...xs), 8, true);
  const yt = niceTicks(Math.min(...ys), Math.max(...ys), 5);
  const [x0, x1] = [xt[0], xt[xt.length - 1]], [y0, y1] = [yt[0], yt[yt.length - 1]];
  const X = (s: number) => LEFT + (s - x0) / (x1 - x0) * (W - LEFT - RIGHT);
  const Y = (v: number) => TOP + PLOT_H - (v - y0) / (y1 - y0) * PLOT_H;
  const xy = (p: Point) => `${num(X(p[0]))},${num(Y(p[1]))}`;

  const legend: LegendItem[] = [];
  const body: string[] = [];
  // Grid and axes.
  const ystep = yt.length > 1 ? yt[1] - yt[0] : 1, xstep = xt.length > 1 ? xt[1] - xt[0] : 1;
  for (const v of yt) {
    const y = num(Y(v));
    body.push(
      `<line x1="${LEFT}" x2="${W - RIGHT}" y1="${y}" y2="${y}" stroke="#e6e6e6"/>`,
      `<text x="${LEFT - 6}" y="${y}" dy="0.32em" text-anchor="end" font-size="11" ` +
        `fill="#555" class="ytick">${esc(formatTick(v, ystep))}</text>`,
    );
  }
  const bottom = TOP + PLOT_H;
  for (const s of xt) {
    const x = num(X(s));
    body.push(
      `<line x1="${x}" x2="${x}" y1="${bottom}" y2="${bottom + 5}" stroke="#888"/>`,
      `<text x="${x}" y="${bottom + 18}" text-anchor="middle" font-size="11" fill="#555" ` +
        `class="xtick">${esc(formatTick(s, xstep))}</text>`,
    );
  }
  body.push(
    `<line x1="${LEFT}" x2="${W - RIGHT}" y1="${bottom}" y2="${bottom}" stroke="#888"/>`,
    `<line x1="${LEFT}" x2="${LEFT}" y1="${TOP}" y2="${bottom}" stroke="#888"/>`,
    `<text x="${(LEFT + W - RIGHT) / 2}" y="${bottom + 35}" text-anchor="middle" ` +
      `font-size="12" fill="#333">step</text>`,
    `<text transform="translate(16,${TOP + PLOT_H / 2}) rotate(-90)" text-anchor="middle" ` +
      `font-size="12" fill="#333">${esc(chart.yLabel)}</text>`,
  );
  let color = 0;
  // Stacked areas, bottom to top.
  stacked.forEach((top, i) => {
    const c = PALETTE[color++ % PALETTE.length];
    const base = i ? stacked[i - 1] : top.map((p): Point => [p[0], 0]);
    const d = `M${top.map(xy).join("L")}L${[...base].reverse().map(xy).join("L")}Z`;
    body.push(
      `<path class="area" data-points="${top.length}" d="${d}" fill="${c}" ` +
        `fill-opacity="0.75" stroke="${c}" stroke-width="0.5"/>`,
    );
    legend.push({ label: stack[i].label, color: c, kind: "area" });
  });
  for (const l of lines) {
    const c = l.color ?? PALETTE[color++ % PALETTE.length];
    if (l.band) {
      const hi = new Map(l.band.hi);
      const lo = l.band.lo.filter((p) => hi.has(p[0]));
      if (lo.length) {
        const top = lo.map((p): Point => [p[0], hi.get(p[0])!]);
        const d = `M${top.map(xy).join("L")}L${[...lo].reverse().map(xy).join("L")}Z`;
        body.push(`<path class="band" d="${d}" fill="${c}" fill-opacity="0.13" stroke="none"/>`);
        legend.push({ label: l.band.label, color: c, kind: "area" });
      }
    }
    const dash = l.dashed ? ` stroke-dasharray="6 4"` : "";
    body.push(
      `<path class="line" data-label="${esc(l.label)}" data-points="${l.points.length}" ` +
        `d="M${l.points.map(xy).join("L")}" fill="none" stroke="${c}" stroke-width="2"${dash}/>`,
    );
    if (l.markers ?? l.points.length <= 30) {
      for (const p of l.points) {
        body.push(`<circle cx="${num(X(p[0]))}" cy="${num(Y(p[1]))}" r="3" fill="${c}"/>`);
      }
    }
    legend.push({ label: l.label, color: c, kind: l.dashed ? "dash" : "line" });
  }
  const placed = layoutLegend(legend);
  const rows = placed.length ? placed[placed.length - 1].row + 1 : 0;
  const legendTop = bottom + AXIS_BOTTOM + 6;
  for (const { item, x, row } of placed) {
    const y = legendTop + row * ROW;
    const mark = item.kind === "area"
      ? `<rect x="${num(x)}" y="${y - 5}" width="22" height="10" fill="${item.color}" ` +
        `fill-opacity="0.5"/>`
      : `<line x1="${num(x)}" x2="${num(x + 22)}" y1="${y}" y2="${y}" stroke="${item.color}" ` +
        `stroke-width="2.5"${item.kind === "dash" ? ` stroke-dasharray="6 4"` : ""}/>`;
    body.push(
      `<g class="legend">${mark}<text x="${num(x + 28)}" y="${y}" dy="0.32em" font-size="11" ` +
        `fill="#333">${esc(item.label)}</text></g>`,
    );
  }
  const h = legendTop + rows * ROW + 4;
  return header(chart.id, chart.title, h) + body.join("\n") + "\n</svg>\n";
}
