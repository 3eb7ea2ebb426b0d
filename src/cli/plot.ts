/**
 * `deno task plot <run folder | metrics.jsonl | tensorboard/> [--out DIR] [--svg CHART=FILE ...]`:
 * renders a run's metrics (the `file` logger's metrics.jsonl, else the `tensorboard` logger's
 * event files) to `plots/*.svg` and one self-contained `report.html` in the run folder.
 *
 *   deno task plot outputs/webrl_examples/arithmetic_grpo
 *   deno task plot outputs/webrl_examples/arithmetic_grpo --svg reward=docs/default_run.svg
 */
import { reportCharts, type RunReport, writeRunReport } from "../tracking/mod.ts";
import { runCli } from "./run.ts";

const USAGE = `usage: deno task plot <run folder | metrics.jsonl | tensorboard/> [--out DIR]
                      [--svg CHART=FILE ...]
writes DIR/report.html and DIR/plots/CHART.svg (DIR: the run folder unless --out is given);
--svg also copies one chart, e.g. --svg reward=docs/default_run.svg`;

interface PlotArgs {
  path: string;
  outDir?: string;
  copies: [chart: string, file: string][];
}

export function parsePlotArgs(args: string[]): PlotArgs {
  const rest: string[] = [];
  const copies: [string, string][] = [];
  let outDir: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    const value = (flag: string) => {
      const v = a.includes("=") && a.startsWith(`${flag}=`) ? a.slice(flag.length + 1) : args[++i];
      if (!v) throw new Error(`${flag} needs a value\n${USAGE}`);
      return v;
    };
    if (a === "--out" || a.startsWith("--out=")) outDir = value("--out");
    else if (a === "--svg" || a.startsWith("--svg=")) {
      const v = value("--svg");
      const eq = v.indexOf("=");
      if (eq <= 0 || eq === v.length - 1) {
        throw new Error(`--svg ${v}: expected CHART=FILE, e.g. reward=docs/default_run.svg`);
      }
      copies.push([v.slice(0, eq), v.slice(eq + 1)]);
    } else if (a.startsWith("-")) throw new Error(`unknown option ${a}\n${USAGE}`);
    else rest.push(a);
  }
  if (rest.length !== 1) {
    throw new Error(`expected one run folder or metrics file, got ${rest.length}\n${USAGE}`);
  }
  return { path: rest[0], outDir, copies };
}

/** Writes the report; returns what was written. */
export async function main(
  args: string[],
  print: (line: string) => void = console.log,
): Promise<RunReport> {
  const a = parsePlotArgs(args);
  const report = await writeRunReport(a.path, { outDir: a.outDir });
  for (const [id, file] of a.copies) {
    const svg = report.charts.get(id);
    if (svg === undefined) {
      const ids = reportCharts(report.metrics).map((c) => c.id);
      throw new Error(`--svg ${id}=${file}: no chart "${id}"; charts: ${ids.join(", ")}`);
    }
    const dir = file.slice(0, Math.max(0, file.lastIndexOf("/")));
    if (dir) await Deno.mkdir(dir, { recursive: true });
    await Deno.writeTextFile(file, svg);
    print(`${id}: ${file}`);
  }
  const m = report.metrics;
  print(`read ${m.source}: ${m.steps.length} steps, ${m.series.size} metrics`);
  print(`${report.svg.length} charts in ${report.svg[0].replace(/\/[^/]*$/, "/")}`);
  print(`report: ${report.html}`);
  return report;
}

if (import.meta.main) await runCli("plot", () => main(Deno.args), { usage: USAGE });
