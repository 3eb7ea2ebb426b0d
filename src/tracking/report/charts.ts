/**
 * Which charts a run report holds and which metrics (verl's names) go into each. The first ones
 * are always drawn (with a "no data" note when the run did not log them); the rest only when the
 * run has their metrics (a critic, SFT runs).
 */
import type { Chart, Line } from "./chart.ts";
import type { Point, RunMetrics } from "./metrics.ts";

type Series = RunMetrics["series"];

const VAL = /^val-core\//;

function line(s: Series, key: string, label = key, extra: Partial<Line> = {}): Line[] {
  const points = s.get(key);
  return points ? [{ label, points, ...extra }] : [];
}

/** `{prefix}/mean` with a `{prefix}/min`..`{prefix}/max` band when both are logged. */
function meanWithBand(s: Series, prefix: string, label: string): Line[] {
  const [lo, hi] = [s.get(`${prefix}/min`), s.get(`${prefix}/max`)];
  const band = lo && hi ? { lo, hi, label: `${prefix}/min..max` } : undefined;
  return line(s, `${prefix}/mean`, label, { band, markers: false });
}

/** `val-core/{data_source}/reward/mean@N`, labelled without the `val-core/` prefix. */
function validation(s: Series): Line[] {
  return [...s.keys()].filter((k) => VAL.test(k)).map((k) => ({
    label: `val ${k.replace(VAL, "")}`,
    points: s.get(k)!,
    markers: true,
  }));
}

function keysLine(s: Series, keys: string[]): Line[] {
  return keys.flatMap((k) => line(s, k));
}

/** verl's stages in the order a step runs them; other timings follow, by name. */
const STAGES = [
  "gen",
  "gen_max",
  "reward",
  "old_log_prob",
  "ref",
  "values",
  "adv",
  "update_critic",
  "update_actor",
  "testing",
  "save_checkpoint",
];

function stageRank(key: string): number {
  const i = STAGES.indexOf(key.slice("timing_s/".length));
  return i < 0 ? STAGES.length : i;
}

const none = (keys: string[]) => `no data: this run logged none of ${keys.join(", ")}`;

/** The report's charts for `run`, in order. */
export function reportCharts(run: RunMetrics): Chart[] {
  const s = run.series;
  const timing = [...s.keys()].filter((k) => k.startsWith("timing_s/") && k !== "timing_s/step")
    .sort((a, b) => stageRank(a) - stageRank(b) || a.localeCompare(b));
  const charts: Chart[] = [
    {
      id: "reward",
      title: "Reward and validation accuracy",
      yLabel: "score",
      lines: [...meanWithBand(s, "critic/score", "critic/score/mean"), ...validation(s)],
      empty: none(["critic/score/mean", "val-core/*"]),
    },
    {
      id: "validation",
      title: "Validation accuracy by data source",
      yLabel: "reward/mean@N",
      lines: validation(s),
      empty: none(["val-core/*"]),
    },
    {
      id: "kl",
      title: "KL",
      yLabel: "KL",
      lines: keysLine(s, ["actor/ppo_kl", "actor/kl_loss", "actor/reward_kl_penalty"]),
      empty: none(["actor/ppo_kl", "actor/kl_loss", "actor/reward_kl_penalty"]),
    },
    {
      id: "entropy",
      title: "Entropy",
      yLabel: "nats per token",
      lines: line(s, "actor/entropy"),
      empty: none(["actor/entropy"]),
    },
    {
      id: "response_length",
      title: "Response length",
      yLabel: "tokens",
      lines: meanWithBand(s, "response_length", "response_length/mean"),
      empty: none(["response_length/mean"]),
    },
    {
      id: "clip_ratio",
      title: "Responses cut at max_response_length",
      yLabel: "fraction",
      lines: line(s, "response_length/clip_ratio"),
      empty: none(["response_length/clip_ratio"]),
    },
    {
      id: "pg_loss",
      title: "Policy loss",
      yLabel: "loss",
      lines: line(s, "actor/pg_loss"),
      empty: none(["actor/pg_loss"]),
    },
    {
      id: "grad_norm",
      title: "Gradient norm (before clipping)",
      yLabel: "norm",
      lines: keysLine(s, ["actor/grad_norm", "critic/grad_norm", "train/grad_norm"]),
      empty: none(["actor/grad_norm", "critic/grad_norm"]),
    },
    {
      id: "throughput",
      title: "Throughput",
      yLabel: "tokens / s",
      lines: line(s, "perf/throughput"),
      empty: none(["perf/throughput"]),
    },
    {
      id: "timing",
      title: "Time per step by stage",
      yLabel: "seconds",
      stack: timing.map((k) => ({ label: k, points: s.get(k)! })),
      lines: line(s, "timing_s/step", "timing_s/step (total)", {
        dashed: true,
        markers: false,
        color: "#333333",
      }),
      empty: none(["timing_s/*"]),
    },
  ];
  const optional: Chart[] = [
    {
      id: "value",
      title: "Critic",
      yLabel: "value",
      lines: keysLine(s, ["critic/vf_loss", "critic/vf_explained_var", "critic/values/mean"]),
      empty: "",
    },
    {
      id: "sft_loss",
      title: "SFT loss",
      yLabel: "loss",
      lines: keysLine(s, ["train/loss", "val/loss"]),
      empty: "",
    },
    {
      id: "lr",
      title: "Learning rate",
      yLabel: "lr",
      lines: keysLine(s, ["actor/lr", "critic/lr", "train/lr"]),
      empty: "",
    },
  ];
  return [...charts, ...optional.filter((c) => c.lines.length)];
}

/** The last point of a series, if any. */
export function last(points: Point[] | undefined): Point | undefined {
  return points?.[points.length - 1];
}
