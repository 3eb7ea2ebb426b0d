/// <reference lib="dom" />
/**
 * The browser demo: trains a small model on the synthetic arithmetic task with the project's
 * PPO/GRPO controller, on the tab's WebGPU device. URL parameters preset the form (`steps`, `lr`,
 * `n`, `prompts`, `algorithm`, `temperature`, `digits`), `tiny=1` shrinks the run for tests and
 * `autostart=1` starts it at once. `globalThis.webrl` exposes the run's state to the page test.
 */
import { initGpu } from "../src/gpu/mod.ts";
import { registerShaderSources } from "../src/gpu/mod.ts";
import type { GenerationRow } from "../src/trainer/mod.ts";
import { ChartBoard } from "./charts.ts";
import {
  download,
  fetchModelFolder,
  type ModelFolder,
  randomFolder,
  readModelFolder,
  zipModelFolder,
} from "./model_files.ts";
import { DEFAULT_SETTINGS, type RunSettings, TrainingRun } from "./session.ts";
import { SHADERS } from "./shaders.ts";
import { SamplesTable } from "./samples.ts";
import { $, formSettings, presetForm } from "./form.ts";

/** What the page test reads. */
interface PageState {
  status: "loading" | "ready" | "running" | "paused" | "done" | "error" | "no-webgpu";
  error: string | null;
  adapter: string;
  f16: boolean;
  steps: number;
  metrics: { step: number; metrics: Record<string, number> }[];
  samples: number;
  model: string;
  chartPoints: () => Record<string, number>;
}

const state: PageState = {
  status: "loading",
  error: null,
  adapter: "",
  f16: false,
  steps: 0,
  metrics: [],
  samples: 0,
  model: "",
  chartPoints: () => ({}),
};
(globalThis as { webrl?: PageState }).webrl = state;

const logEl = $("log");
function print(line: string): void {
  logEl.textContent += line + "\n";
  logEl.scrollTop = logEl.scrollHeight;
}

function setStatus(status: PageState["status"], text?: string): void {
  state.status = status;
  const el = $("status");
  el.textContent = text ?? status;
  el.className = `badge status ${status === "done" ? "done" : status === "error" ? "error" : ""}`;
  const running = status === "running" || status === "paused";
  ($("start") as HTMLButtonElement).disabled = running || status === "loading" ||
    status === "no-webgpu" || (status === "error" && !folder);
  ($("pause") as HTMLButtonElement).disabled = status !== "running";
  ($("resume") as HTMLButtonElement).disabled = status !== "paused";
  ($("stop") as HTMLButtonElement).disabled = !running;
  ($("download") as HTMLButtonElement).disabled = !folder || status === "running";
}

function fail(e: unknown): void {
  const msg = e instanceof Error ? e.message : String(e);
  state.error = msg;
  print(`error: ${msg}`);
  $("error-line").textContent = msg;
  $("error-line").hidden = false;
  if (e instanceof Error && e.stack) console.error(e.stack);
  setStatus("error", "error");
}

let folder: ModelFolder | null = null;
let run: TrainingRun | null = null;
const charts = new ChartBoard($("charts"));
const samples = new SamplesTable($("samples").querySelector("tbody")!, { keep: 60 });
state.chartPoints = () => charts.points();

function showModel(f: ModelFolder): void {
  const c = f.config;
  state.model = f.source;
  $("model-source").textContent = `${f.source} · ${c.modelType}, ${c.numHiddenLayers} layers, ` +
    `hidden ${c.hiddenSize}, vocab ${c.vocabSize}`;
}

async function startRun(): Promise<void> {
  if (!folder) return;
  const settings: RunSettings = formSettings($("settings") as HTMLFormElement, tiny);
  charts.reset();
  samples.clear();
  state.metrics = [];
  state.steps = 0;
  state.error = null;
  $("error-line").hidden = true;
  $("step-line").textContent = `step 0 / ${settings.steps}: validating the starting model…`;
  const started = performance.now();
  run = new TrainingRun(folder, settings, {
    onMetrics: (step, metrics) => {
      state.metrics.push({ step, metrics });
      state.steps = Math.max(state.steps, step);
      charts.add(step, metrics);
      const secs = ((performance.now() - started) / 1000).toFixed(0);
      const score = metrics["critic/score/mean"];
      $("step-line").textContent = `step ${step} / ${settings.steps} · ${secs} s` +
        (Number.isFinite(score) ? ` · score ${score.toFixed(3)}` : "");
    },
    onGenerations: (kind, step, rows: GenerationRow[]) => {
      samples.add(kind, step, rows.slice(0, kind === "train" ? 8 : 6));
      state.samples = samples.size;
    },
    print,
  });
  setStatus("running");
  print(`run: ${JSON.stringify({ ...settings, task: settings.task })}`);
  try {
    const result = await run.start();
    if (state.status !== "error") setStatus("done", `done: ${result.globalStep} steps`);
  } catch (e) {
    fail(e);
  }
}

const params = new URLSearchParams(location.search);
const tiny = params.get("tiny") === "1";

async function main(): Promise<void> {
  presetForm($("settings") as HTMLFormElement, params, tiny ? { ...DEFAULT_SETTINGS } : null);
  registerShaderSources(SHADERS);
  const nav = navigator as Navigator & { gpu?: GPU };
  const adapter = await nav.gpu?.requestAdapter().catch(() => null);
  if (!adapter) {
    $("no-webgpu").hidden = false;
    if (nav.gpu) {
      $("no-webgpu-detail").textContent =
        "navigator.gpu exists but returned no adapter (blocklisted GPU or WebGPU disabled).";
    }
    setStatus("no-webgpu", "no WebGPU");
    return;
  }
  const g = await initGpu({ adapter });
  state.adapter = g.adapterName;
  state.f16 = g.hasF16;
  $("adapter").textContent = `adapter: ${g.adapterName}`;
  $("f16").textContent = g.hasF16 ? "f16: available (weights f32)" : "f16: not available (f32)";
  folder = await fetchModelFolder("model") ?? randomFolder({ seed: 1 });
  showModel(folder);
  setStatus("ready");

  $("start").addEventListener("click", () => void startRun());
  $("pause").addEventListener("click", () => {
    run?.pause();
    setStatus("paused", "paused (after this step)");
  });
  $("resume").addEventListener("click", () => {
    run?.resume();
    setStatus("running");
  });
  $("stop").addEventListener("click", () => {
    run?.resume();
    run?.stop();
    $("status").textContent = "stopping after this step";
  });
  $("download").addEventListener("click", async () => {
    try {
      const trained = run ? await run.trainedFolder() : folder!;
      download(zipModelFolder(trained, { name: "webrl-model" }), "webrl-model.zip");
    } catch (e) {
      fail(e);
    }
  });
  $("upload").addEventListener("change", async (ev) => {
    const files = (ev.target as HTMLInputElement).files;
    if (!files || files.length === 0) return;
    try {
      folder = await readModelFolder(files);
      run = null;
      showModel(folder);
      print(`loaded ${folder.source}`);
      setStatus("ready");
    } catch (e) {
      fail(e);
    }
  });
  if (params.get("autostart") === "1") void startRun();
}

main().catch(fail);
