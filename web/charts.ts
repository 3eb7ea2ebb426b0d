/// <reference lib="dom" />
/**
 * Live metric charts (uPlot). Each chart plots one or more verl metrics against the step and only
 * gains a point when at least one of its metrics was logged at that step (validation runs every
 * `test_freq` steps, the rest every step).
 */
import uPlot from "uplot";

export interface ChartSpec {
  title: string;
  /** Metric names, or a prefix + suffix pattern for keys known only at run time. */
  series: { label: string; key: string | RegExp; color: string }[];
}

export const CHARTS: ChartSpec[] = [
  {
    title: "Reward",
    series: [
      { label: "score mean", key: "critic/score/mean", color: "#2563eb" },
      { label: "score max", key: "critic/score/max", color: "#93c5fd" },
    ],
  },
  {
    title: "Validation accuracy",
    series: [{ label: "val mean@N", key: /^val-core\/.+\/reward\/mean@\d+$/, color: "#16a34a" }],
  },
  {
    title: "KL",
    series: [
      { label: "ppo_kl", key: "actor/ppo_kl", color: "#dc2626" },
      { label: "kl_loss", key: "actor/kl_loss", color: "#f59e0b" },
    ],
  },
  {
    title: "Entropy",
    series: [{ label: "entropy", key: "actor/entropy", color: "#9333ea" }],
  },
  {
    title: "Response length",
    series: [
      { label: "mean", key: "response_length/mean", color: "#0891b2" },
      { label: "max", key: "response_length/max", color: "#a5f3fc" },
    ],
  },
  {
    title: "Tokens / s",
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
function padRange(_u: uPlot, min: number, max: number): [number, number] {
  if (min === max) return [min - (Math.abs(min) || 1) * 0.5, max + (Math.abs(max) || 1) * 0.5];
  const pad = (max - min) * 0.08;
  return [min - pad, max + pad];
}

class Chart {
  readonly xs: number[] = [];
  readonly ys: (number | null)[][];
  readonly plot: uPlot;

  constructor(readonly spec: ChartSpec, parent: HTMLElement) {
    this.ys = spec.series.map(() => []);
    const card = document.createElement("figure");
    card.className = "chart";
    card.dataset.title = spec.title;
    const caption = document.createElement("figcaption");
    caption.textContent = spec.title;
    card.append(caption);
    parent.append(card);
    this.plot = new uPlot(
      {
        width: Math.max(240, card.clientWidth - 16),
        height: 170,
        legend: { show: true, live: false },
        cursor: { drag: { x: false, y: false } },
        scales: { x: { time: false }, y: { range: padRange } },
        axes: [
          { stroke: "#64748b", grid: { stroke: "#e2e8f0" }, size: 28, incrs: STEP_INCRS },
          { stroke: "#64748b", grid: { stroke: "#e2e8f0" }, size: 48 },
        ],
        series: [
          { label: "step" },
          ...spec.series.map((s) => ({
            label: s.label,
            stroke: s.color,
            width: 2,
            spanGaps: true,
            points: { show: true, size: 4 },
          })),
        ],
      },
      [[], ...spec.series.map(() => [])],
      card,
    );
  }

  add(step: number, metrics: Record<string, number>): void {
    const values = this.spec.series.map((s) => valueOf(metrics, s.key));
    if (values.every((v) => v === null)) return;
    this.xs.push(step);
    values.forEach((v, i) => this.ys[i].push(v));
    this.plot.setData([this.xs, ...this.ys] as uPlot.AlignedData);
  }

  /** Points with a finite value, over all series. */
  get points(): number {
    return this.ys.reduce((a, ys) => a + ys.filter((v) => v !== null).length, 0);
  }

  resize(): void {
    const card = this.plot.root.parentElement!;
    this.plot.setSize({ width: Math.max(240, card.clientWidth - 16), height: 170 });
  }

  destroy(): void {
    this.plot.root.parentElement?.remove();
    this.plot.destroy();
  }
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

  /** Finite points per chart title (for the page test). */
  points(): Record<string, number> {
    return Object.fromEntries(this.#charts.map((c) => [c.spec.title, c.points]));
  }
}
