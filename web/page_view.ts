/// <reference lib="dom" />
/**
 * The page's state (also `globalThis.webrl`, which the page test reads) and how it is drawn: the
 * status badge, which buttons are live, what Download would hand out, the saved run's banner and
 * the form's lock.
 */
import { $, lockForm } from "./form.ts";
import type { MetricPoint, SavedRunInfo } from "./protocol.ts";
import type { FieldError } from "./settings.ts";

export type Status =
  | "loading"
  | "ready"
  | "starting"
  | "running"
  | "pausing"
  | "paused"
  | "stopping"
  | "done"
  | "stopped"
  | "error"
  | "no-webgpu";

/** What the page test reads. */
export const state = {
  status: "loading" as Status,
  error: null as string | null,
  adapter: "",
  f16: false,
  /** Last step with metrics, and the run's total. */
  steps: 0,
  totalSteps: 0,
  metrics: [] as MetricPoint[],
  samples: 0,
  model: "",
  data: "built-in",
  fieldErrors: [] as FieldError[],
  saved: null as SavedRunInfo | null,
  /** A trained model the Download button can hand out (this run's or the saved one's). */
  trained: false,
  downloads: [] as string[],
  chartPoints: () => ({}) as Record<string, Record<string, number>>,
};
(globalThis as { webrl?: typeof state }).webrl = state;

const button = (id: string) => $(id) as HTMLButtonElement;

export const BUSY: Status[] = ["starting", "running", "pausing", "paused", "stopping"];

function statusText(): string {
  const s = state.status, step = state.steps, total = state.totalSteps;
  switch (s) {
    case "running":
      return state.metrics.length === 0
        ? "validating the starting model"
        : `training step ${step + 1} of ${total}`;
    case "pausing":
      return `pausing after step ${step + 1}…`;
    case "paused":
      return `paused after step ${step} of ${total}`;
    case "stopping":
      return "stopping: finishing the step, then validating";
    case "done":
      return `done: ${step} step${step === 1 ? "" : "s"}`;
    case "stopped":
      return `stopped at step ${step} of ${total}`;
    case "no-webgpu":
      return "no WebGPU";
    default:
      return s;
  }
}

export function render(form: HTMLFormElement): void {
  const s = state.status;
  const busy = BUSY.includes(s);
  const el = $("status");
  el.textContent = statusText();
  el.className = `badge status ${s}`;
  button("start").disabled = busy || s === "loading" || s === "no-webgpu" ||
    state.fieldErrors.length > 0;
  button("pause").disabled = s !== "running";
  button("resume").disabled = s !== "paused";
  button("stop").disabled = !["running", "pausing", "paused"].includes(s);
  const canDownload = (state.trained && (s === "paused" || !busy)) || (!!state.saved && !busy);
  button("download").disabled = !canDownload;
  $("download-note").textContent = !canDownload
    ? (busy ? "Available when the run pauses or ends." : "Nothing trained yet.")
    : state.trained
    ? `The model after step ${state.steps}: config.json, model.safetensors and tokenizer files, ` +
      "as transformers loads them."
    : `The saved run's checkpoint (step ${state.saved!.step}).`;
  button("export-jsonl").disabled = state.metrics.length === 0;
  button("export-png").disabled = state.metrics.length === 0;
  // The saved run's banner gives way while a run is set up or trains; the worker says what is
  // saved once that run ends (a run that saves replaces it, one that does not leaves it).
  $("saved-run").hidden = !state.saved || busy;
  lockForm(form, busy);
}
