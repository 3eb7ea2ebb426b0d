/**
 * A run's report: one SVG per chart and one self-contained HTML page (inline SVG, inline CSS, no
 * scripts, nothing fetched), written beside the run's metrics:
 *
 *   {run dir}/report.html
 *   {run dir}/plots/{reward,validation,kl,entropy,...}.svg
 */
import { type Chart, esc, renderChart } from "./chart.ts";
import { last, reportCharts } from "./charts.ts";
import { MetricsNotFound, readRunMetrics, type RunMetrics } from "./metrics.ts";
import { formatValue } from "./scale.ts";

export interface RunReport {
  /** The SVG files written, one per chart, in report order. */
  svg: string[];
  /** The HTML page. */
  html: string;
  /** The charts by id (e.g. "reward") with their SVG text. */
  charts: Map<string, string>;
  metrics: RunMetrics;
}

export interface RunReportOptions {
  /** Folder for report.html and plots/ (default: the run folder). */
  outDir?: string;
  /** With no metrics.jsonl or tensorboard/ there, return undefined instead of failing. */
  missingOk?: boolean;
}

/** The run folder a metrics path belongs to (the metrics file's or tensorboard/'s parent). */
export function runFolderOf(metrics: RunMetrics): string {
  const parts = metrics.source.split("/");
  if (metrics.format === "jsonl" || /tfevents/.test(parts[parts.length - 1])) parts.pop();
  if (parts[parts.length - 1] === "tensorboard") parts.pop();
  return parts.join("/") || ".";
}

const CSS = `
body{font-family:system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:24px;
color:#222;background:#fafafa}
h1{font-size:20px;margin:0 0 4px}p.meta{color:#555;margin:0 0 16px}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,520px),1fr));gap:16px;align-items:start;
max-width:1400px}
figure{margin:0;background:#fff;border:1px solid #ddd;border-radius:6px;padding:4px}
figure svg{display:block;width:100%;height:auto}
table{border-collapse:collapse;font-size:13px;margin:8px 0 16px}
td,th{border-bottom:1px solid #e4e4e4;padding:3px 10px;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums}
details{margin-top:20px}summary{cursor:pointer;font-weight:600}
ul.notes{color:#8a5a00}
`.trim();

function summaryRows(run: RunMetrics): string[] {
  const rows: string[] = [];
  const add = (name: string, key: string) => {
    const pts = run.series.get(key);
    const p = last(pts);
    if (!pts || !p) return;
    const first = pts[0];
    const best = Math.max(...pts.map((q) => q[1]));
    rows.push(
      `<tr><td>${esc(name)}</td><td class="n">${formatValue(first[1])} @ ${first[0]}</td>` +
        `<td class="n">${formatValue(p[1])} @ ${p[0]}</td><td class="n">${
          formatValue(best)
        }</td></tr>`,
    );
  };
  for (const k of run.series.keys()) if (k.startsWith("val-core/")) add(k, k);
  add("critic/score/mean", "critic/score/mean");
  add("response_length/mean", "response_length/mean");
  return rows;
}

function allMetricsTable(run: RunMetrics): string {
  const rows = [...run.series].map(([k, pts]) => {
    const vals = pts.map((p) => p[1]);
    return `<tr><td>${esc(k)}</td><td class="n">${pts.length}</td><td class="n">${
      formatValue(Math.min(...vals))
    }</td><td class="n">${formatValue(Math.max(...vals))}</td><td class="n">${
      formatValue(vals[vals.length - 1])
    }</td></tr>`;
  });
  return `<table><tr><th>metric</th><th>points</th><th>min</th><th>max</th><th>last</th></tr>\n` +
    rows.join("\n") + `\n</table>`;
}

/** The HTML page for a run and its rendered charts. */
export function renderHtml(run: RunMetrics, charts: { chart: Chart; svg: string }[]): string {
  const dir = runFolderOf(run);
  const steps = run.steps;
  const summary = summaryRows(run);
  const inline = (svg: string) => svg.replace(/^<svg xmlns="[^"]*" /, "<svg ");
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${esc(`run report: ${dir}`)}</title>
<style>
${CSS}
</style>
</head>
<body>
<h1>${esc(dir)}</h1>
<p class="meta">${esc(run.source)} (${run.format}): ${steps.length} logged steps, ${steps[0]} to ${
    steps[steps.length - 1]
  }; ${run.series.size} metrics</p>
${
    run.notes.length
      ? `<ul class="notes">${run.notes.map((n) => `<li>${esc(n)}</li>`).join("")}</ul>\n`
      : ""
  }${
    summary.length
      ? `<table><tr><th>metric</th><th>first</th><th>last</th><th>best</th></tr>\n${
        summary.join("\n")
      }\n</table>\n`
      : ""
  }<div class="grid">
${charts.map((c) => `<figure id="${esc(c.chart.id)}">\n${inline(c.svg)}</figure>`).join("\n")}
</div>
<details><summary>All metrics (${run.series.size})</summary>
${allMetricsTable(run)}
</details>
</body>
</html>
`;
}

/** Renders every chart of a run (already read) to SVG text, keyed by chart id. */
export function renderRun(run: RunMetrics): { chart: Chart; svg: string }[] {
  return reportCharts(run).map((chart) => ({ chart, svg: renderChart(chart) }));
}

/**
 * Reads a run's metrics (`path`: its folder, its metrics.jsonl, or its tensorboard/ folder) and
 * writes `report.html` and `plots/*.svg` (into `options.outDir`, default the run folder).
 */
export async function writeRunReport(
  path: string,
  options: RunReportOptions & { missingOk: true },
): Promise<RunReport | undefined>;
export async function writeRunReport(path: string, options?: RunReportOptions): Promise<RunReport>;
export async function writeRunReport(
  path: string,
  options: RunReportOptions = {},
): Promise<RunReport | undefined> {
  let run: RunMetrics;
  try {
    run = await readRunMetrics(path);
  } catch (e) {
    if (options.missingOk && e instanceof MetricsNotFound) return undefined;
    throw e;
  }
  const out = (options.outDir ?? runFolderOf(run)).replace(/\/+$/, "") || ".";
  const rendered = renderRun(run);
  await Deno.mkdir(`${out}/plots`, { recursive: true });
  const svg: string[] = [];
  const charts = new Map<string, string>();
  for (const { chart, svg: text } of rendered) {
    const file = `${out}/plots/${chart.id}.svg`;
    await Deno.writeTextFile(file, text);
    svg.push(file);
    charts.set(chart.id, text);
  }
  const html = `${out}/report.html`;
  await Deno.writeTextFile(html, renderHtml(run, rendered));
  return { svg, html, charts, metrics: run };
}
