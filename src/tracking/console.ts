/** `console`: one compact line per step with the headline metrics. */
import { type Logger, LOGGERS } from "./logger.ts";

const HEADLINE = [
  "critic/score/mean",
  "val-core/",
  "actor/pg_loss",
  "actor/ppo_kl",
  "actor/entropy",
  "actor/grad_norm",
  "critic/vf_loss",
  "response_length/mean",
  "timing_s/step",
  "perf/throughput",
];

function fmt(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  if (v !== 0 && (Math.abs(v) < 1e-3 || Math.abs(v) >= 1e5)) return v.toExponential(2);
  return Number.isInteger(v) ? String(v) : v.toFixed(Math.abs(v) < 1 ? 4 : 2);
}

/** One compact line per step with the headline metrics (the full set goes to the file logger). */
export class ConsoleLogger implements Logger {
  constructor(private readonly print: (line: string) => void = console.log) {}

  log(step: number, metrics: Record<string, number>): void {
    const keys = Object.keys(metrics).filter((k) => HEADLINE.some((h) => k.startsWith(h)));
    if (!keys.length) return; // e.g. the timing_s/save_checkpoint record of a save step
    keys.sort((a, b) =>
      HEADLINE.findIndex((h) => a.startsWith(h)) - HEADLINE.findIndex((h) => b.startsWith(h))
    );
    const short = (k: string) =>
      k.replace("critic/score/mean", "score").replace("val-core/", "val/").replace(
        /^(actor|critic|timing_s|perf|response_length)\//,
        "",
      );
    this.print(`step ${step} | ${keys.map((k) => `${short(k)} ${fmt(metrics[k])}`).join(" | ")}`);
  }

  close(): void {}
}

LOGGERS.register("console", (o) => new ConsoleLogger(o.print));
