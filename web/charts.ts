/// <reference lib="dom" />
/**
 * Live metric charts (uPlot), one per question a user asks of a run, each with a one-line meaning
 * under its title, values under the cursor in its legend, and an empty state until its first
 * point. A chart gains a point only at steps where one of its metrics was logged (validation runs
 * every `test_freq` steps, the rest every step). The board exports itself as one PNG.
 */
import uPlot from "uplot";

export interface ChartSpec {
  title: string;
  /** One line: what the chart shows and which way is good. */
  about: string;
  /** Shown until the first point. */
  empty: string;
  /** Metric names, or a pattern for keys known only at run time. */
  series: { label: string; key: string | RegExp; color: string }[];
}

export const CHARTS: ChartSpec[] = [
  {
    title: "Reward",
    about: "Mean (and best) score of the sampled answers each step; up is better.",
    empty: "after the first training step",
    series: [
      { label: "mean", key: "critic/score/mean", color: "#2563eb" },
      { label: "max", key: "critic/score/max", color: "#93c5fd" },
    ],
  },
  {
    title: "Validation accuracy",
    about: "Share of held-out prompts answered right, greedy decoding; up is better.",
    empty: "after the first validation (before step 1)",
    series: [{ label: "mean@n", key: /^val-core\/.+\/reward\/mean@\d+$/, color: "#16a34a" }],
  },
  {
    title: "Policy loss",
    about: "The clipped PPO surrogate the update minimises (actor/pg_loss); noisy, no target.",
    empty: "after the first update",
    series: [{ label: "pg_loss", key: "actor/pg_loss", color: "#0f766e" }],
  },
  {
    title: "KL",
    about: "ppo_kl: drift within a step's update (0 with one mini-batch); kl_loss: drift from " +
      "the starting model (with KL loss on).",
    empty: "after the first update",
    series: [
      { label: "ppo_kl", key: "actor/ppo_kl", color: "#dc2626" },
      { label: "kl_loss", key: "actor/kl_loss", color: "#f59e0b" },
    ],
  },
  {
    title: "Entropy",
    about: "How spread the policy's next-token choices are; falls as it grows sure.",
    empty: "after the first training step",
    series: [{ label: "entropy", key: "actor/entropy", color: "#9333ea" }],
  },
  {
    title: "Response length",
    about: "Tokens per sampled answer (mean and max); max hitting the limit means cut-off answers.",
    empty: "after the first training step",
    series: [
      { label: "mean", key: "response_length/mean", color: "#0891b2" },
      { label: "max", key: "response_length/max", color: "#a5f3fc" },
    ],
  },
  {
    title: "Grad norm",
    about: "Gradient norm before clipping (actor/grad_norm); spikes warn of instability.",
    empty: "after the first update",
    series: [{ label: "grad_norm", key: "actor/grad_norm", color: "#be185d" }],
  },
  {
    title: "Tokens / s",
    about: "Prompt and response tokens processed per second of a whole step (perf/throughput).",
    empty: "after the first training step",
    series: [{ label: "throughput", key: "perf/throughput", color: "#475569" }],
  },
];

function valueOf(metrics: Record<string, number>, key: string | RegExp): number | null {
  if (typeof key === "string") return Number.isFinite(metrics[key]) ? metrics[key] : null;
  for (const [k, v] of Object.entries(metrics)) if (key.test(k) && Number.isFinite(v)) return v;
  return null;
}

/** Steps are whole numbers: no fractional ticks on the x axis. */
const STEP_INCRS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000];

/** A little room around the data; a flat line gets a unit band instead of uPlot's 0..100. */
function padRange(_u: uPlot, min: number | null, max: number | null): [number, number] {
  if (min === null || max === null) return [0, 1];
  if (min === max) return [min - (Math.abs(min) || 1) * 0.5, max + (Math.abs(max) || 1) * 0.5];
  const pad = (max - min) * 0.08;
  return [min - pad, max + pad];
}

const HEIGHT = 160;

class Chart {
  readonly xs: number[] = [];
  readonly ys: (number | null)[][];
  readonly plot: uPlot;
  readonly card: HTMLElement;
  readonly #empty: HTMLElement;

  constructor(readonly spec: ChartSpec, parent: HTMLElement) {
    this.ys = spec.series.map(() => []);
    this.card = document.createElement("figure");
    this.card.className = "chart empty";
    this.card.dataset.title = spec.title;
    const caption = document.createElement("figcaption");
    const title = document.createElement("strong");
    title.textContent = spec.title;
    const about = document.createElement("span");
    about.className = "about";
    about.textContent = spec.about;
    caption.append(title, about);
    this.#empty = document.createElement("div");
    this.#empty.className = "empty-note";
    this.#empty.textContent = `No data yet: ${spec.empty}.`;
    this.card.append(caption, this.#empty);
    parent.append(this.card);
    this.plot = new uPlot(
      {
        width: this.#width(),
        height: HEIGHT,
        legend: { show: true, live: true },
        cursor: { drag: { x: false, y: false }, points: { size: 6 } },
        scales: { x: { time: false }, y: { range: padRange } },
        axes: [
          { stroke: "#64748b", grid: { stroke: "#e2e8f0" }, size: 28, incrs: STEP_INCRS },
          {
            stroke: "#64748b",
            grid: { stroke: "#e2e8f0" },
            size: 62,
            values: (_u: uPlot, splits: number[]) => splits.map((v) => fmt(v, 1)),
          },
        ],
        series: [
          { label: "step" },
          ...spec.series.map((s) => ({
            label: s.label,
            stroke: s.color,
            width: 2,
            spanGaps: true,
            points: { show: true, size: 4 },
            value: (_u: uPlot, v: number | null) => (v === null ? "–" : fmt(v)),
          })),
        ],
      },
      [[], ...spec.series.map(() => [])],
      this.card,
    );
  }

  #width(): number {
    return Math.max(240, this.card.clientWidth - 16);
  }

  add(step: number, metrics: Record<string, number>): void {
    const values = this.spec.series.map((s) => valueOf(metrics, s.key));
    if (values.every((v) => v === null)) return;
    const at = this.xs.indexOf(step);
    if (at >= 0) values.forEach((v, i) => (this.ys[i][at] = v ?? this.ys[i][at]));
    else {
      this.xs.push(step);
      values.forEach((v, i) => this.ys[i].push(v));
    }
    this.card.classList.remove("empty");
    this.plot.setData([this.xs, ...this.ys] as uPlot.AlignedData);
  }

  /** Points with a finite value, per series label. */
  get points(): Record<string, number> {
    return Object.fromEntries(
      this.spec.series.map((s, i) => [s.label, this.ys[i].filter((v) => v !== null).length]),
    );
  }

  resize(): void {
    this.plot.setSize({ width: this.#width(), height: HEIGHT });
  }

  destroy(): void {
    this.card.remove();
    this.plot.destroy();
  }
}

/** Up to four significant digits, without exponent noise for everyday values. */
export function fmt(v: number, digits = 2): string {
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e5)) return v.toExponential(digits);
  return String(Number(v.toPrecision(4)));
}

/** The page's grid of charts. */
export class ChartBoard {
  #charts: Chart[] = [];

  constructor(readonly parent: HTMLElement) {
    this.reset();
    let pending: ReturnType<typeof setTimeout> | undefined;
    globalThis.addEventListener("resize", () => {
      clearTimeout(pending);
      pending = setTimeout(() => this.#charts.forEach((c) => c.resize()), 100);
    });
  }

  reset(): void {
    for (const c of this.#charts) c.destroy();
    this.#charts = CHARTS.map((spec) => new Chart(spec, this.parent));
  }

  add(step: number, metrics: Record<string, number>): void {
    for (const c of this.#charts) c.add(step, metrics);
  }

  /** Finite points per chart title and series label (for the page test). */
  points(): Record<string, Record<string, number>> {
    return Object.fromEntries(this.#charts.map((c) => [c.spec.title, c.points]));
  }

  /** Every chart drawn into one PNG, two per row, with its title and legend. */
  async png(): Promise<Blob> {
    const charts = this.#charts;
    const cols = 2;
    const cellW = Math.max(...charts.map((c) => c.plot.width)) + 24;
    const cellH = HEIGHT + 64;
    const rows = Math.ceil(charts.length / cols);
    const ratio = globalThis.devicePixelRatio || 1;
    const canvas = document.createElement("canvas");
    canvas.width = cols * cellW * ratio;
    canvas.height = rows * cellH * ratio;
    const ctx = canvas.getContext("2d")!;
    ctx.scale(ratio, ratio);
    ctx.fillStyle = "#ffffff";
    ctx.fillRect(0, 0, cols * cellW, rows * cellH);
    charts.forEach((c, i) => {
      const x = (i % cols) * cellW + 12, y = Math.floor(i / cols) * cellH + 8;
      ctx.fillStyle = "#0f172a";
      ctx.font = "bold 14px sans-serif";
      ctx.fillText(c.spec.title, x, y + 14);
      let lx = x + ctx.measureText(c.spec.title).width + 16;
      ctx.font = "12px sans-serif";
      for (const s of c.spec.series) {
        ctx.fillStyle = s.color;
        ctx.fillRect(lx, y + 5, 12, 4);
        ctx.fillStyle = "#334155";
        ctx.fillText(s.label, lx + 16, y + 13);
        lx += ctx.measureText(s.label).width + 32;
      }
      const src = c.plot.ctx.canvas;
      ctx.drawImage(src, x, y + 24, src.width / ratio, src.height / ratio);
      if (c.xs.length === 0) {
        ctx.fillStyle = "#64748b";
        ctx.fillText("no data", x + 60, y + 24 + HEIGHT / 2);
      }
    });
    return await new Promise<Blob>((resolve, reject) =>
      canvas.toBlob(
        (b) => (b ? resolve(b) : reject(new Error("canvas.toBlob failed"))),
        "image/png",
      )
    );
  }
}
