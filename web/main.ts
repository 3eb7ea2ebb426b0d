/// <reference lib="dom" />
/**
 * The page: draws what the trainer worker (web/worker.ts) reports and sends it the user's choices.
 * URL parameters preset the form (`task` = arithmetic or calc_tool, `steps`, `lr`, `n`, `prompts`, `algorithm`, `temperature`,
 * `digits`, `operands`, `testFreq`, `saveFreq`, `maxResponseLength`, `reward`, `kl=1`); `tiny=1`
 * shrinks the run for tests; `fail_at_step=N` makes step N fail (the test of a mid-run failure).
 * `globalThis.webrl` exposes the page's state to the page test.
 */
import { ChartBoard } from "./charts.ts";
import { adapterText, explainModel, explainTask } from "./explain.ts";
import { $, applySettings, formSettings, pickTask, presetForm, showFieldErrors } from "./form.ts";
import { download, droppedFiles, metricsJsonl, pickedFiles } from "./page_files.ts";
import { BUSY, render as renderView, state, type Status } from "./page_view.ts";
import type { DataInfo, FromWorker, MetricPoint, SavedRunInfo, ToWorker } from "./protocol.ts";
import { SamplesTable } from "./samples.ts";

const params = new URLSearchParams(location.search);
const tiny = params.get("tiny") === "1";
const form = $("settings") as HTMLFormElement;
const button = (id: string) => $(id) as HTMLButtonElement;
const render = () => renderView(form);
const charts = new ChartBoard($("charts"));
const samples = new SamplesTable($("samples").querySelector("tbody")!, { keep: 60 });
state.chartPoints = () => charts.points();
let builtinData: DataInfo | null = null;
let userData: DataInfo | null = null;
let started = 0;

const worker = new Worker(new URL("./worker.js", import.meta.url), { type: "module" });
const send = (m: ToWorker) => worker.postMessage(m);

function print(line: string): void {
  const log = $("log");
  log.textContent += line + "\n";
  log.scrollTop = log.scrollHeight;
}

function setStatus(s: Status): void {
  state.status = s;
  render();
}

function showError(message: string | null): void {
  state.error = message;
  $("error-line").textContent = message ?? "";
  $("error-line").hidden = message === null;
}

function explain(): void {
  const data = userData ?? builtinData;
  explainTask($("task-explain"), data, formSettings(form, tiny), userData === null);
}

let checkId = 0;
let checkTimer: ReturnType<typeof setTimeout> | undefined;
/** Asks the worker to validate the form (debounced); its answer marks the fields. */
function check(): void {
  clearTimeout(checkTimer);
  checkTimer = setTimeout(
    () => send({ type: "check", settings: formSettings(form, tiny), id: ++checkId }),
    120,
  );
  $("custom-reward").hidden = (form.elements.namedItem("reward") as HTMLSelectElement).value !==
    "custom";
}

function addPoint(p: MetricPoint): void {
  const last = state.metrics.at(-1);
  if (last && last.step === p.step) Object.assign(last.metrics, p.metrics);
  else state.metrics.push({ step: p.step, metrics: { ...p.metrics } });
  state.steps = Math.max(state.steps, p.step);
  charts.add(p.step, p.metrics);
  const m = last?.step === p.step ? last.metrics : p.metrics;
  const score = m["critic/score/mean"];
  const val = Object.entries(m).find(([k]) => k.startsWith("val-core/"))?.[1];
  const secs = ((performance.now() - started) / 1000).toFixed(0);
  $("step-line").textContent = `step ${p.step} of ${state.totalSteps} · ${secs} s` +
    (Number.isFinite(score) ? ` · reward ${score.toFixed(3)}` : "") +
    (val !== undefined ? ` · validation ${val.toFixed(3)}` : "");
}

function showSaved(run: SavedRunInfo | null): void {
  state.saved = run;
  if (run) {
    const when = new Date(run.savedAt).toLocaleString();
    const finished = run.step >= run.totalSteps;
    $("saved-text").textContent = `A run started ${when} is saved in this browser at step ` +
      `${run.step} of ${run.totalSteps} (${run.settings.algorithm.toUpperCase()}, model ` +
      `${run.model}, prompts ${run.data})` +
      (finished ? ": finished." : ".");
    $("resume-saved").hidden = finished;
  }
}

function onMessage(m: FromWorker): void {
  switch (m.type) {
    case "ready": {
      const a = adapterText(m.adapter);
      state.adapter = m.adapter.name;
      state.f16 = m.adapter.f16;
      $("adapter").textContent = a.name;
      $("adapter").title = a.title;
      $("f16").textContent = a.f16;
      state.model = m.model.source;
      explainModel($("model-info"), m.model);
      setStatus("ready");
      return check();
    }
    case "no-webgpu":
      $("no-webgpu").hidden = false;
      $("no-webgpu-detail").textContent = m.message;
      return setStatus("no-webgpu");
    case "checked":
      if (m.id !== checkId) return;
      builtinData = m.data ?? builtinData;
      if (m.model && m.model.source !== state.model) {
        state.model = m.model.source;
        explainModel($("model-info"), m.model);
      }
      // The task's explanation even when Start came first (the form is the run's then); only
      // the field marks wait for an idle form.
      explain();
      if (!BUSY.includes(state.status)) {
        state.fieldErrors = m.errors;
        showFieldErrors(form, m.errors, $("form-errors"));
      }
      return render();
    case "model":
      state.model = m.model.source;
      state.trained = false;
      $("model-error").hidden = true;
      explainModel($("model-info"), m.model);
      print(`model: ${m.model.source}`);
      render();
      return check();
    case "model-error":
    case "data-error": {
      const el = $(m.type);
      el.textContent = m.message;
      el.hidden = false;
      print(`${m.type}: ${m.message}`);
      if (m.type === "data-error") ($("data-file") as HTMLInputElement).value = "";
      return;
    }
    case "data":
      userData = m.data;
      state.data = m.data?.source ?? "built-in";
      $("data-error").hidden = true;
      $("builtin-task").hidden = m.data !== null;
      $("builtin-data").hidden = m.data === null;
      $("data-source").textContent = m.data
        ? `${m.data.source}: ${m.data.train} training, ${m.data.val} held-out prompts.`
        : "Built-in task.";
      if (m.data && m.data.rewarded.auto !== null) {
        (form.elements.namedItem("reward") as HTMLSelectElement).value = "auto";
      }
      return check();
    case "saved":
      showSaved(m.run);
      return render();
    case "refused":
      state.fieldErrors = m.errors;
      showFieldErrors(form, m.errors, $("form-errors"));
      showError("Not started: fix the fields marked in red.");
      return setStatus("ready");
    case "started":
      charts.reset();
      samples.clear();
      state.metrics = [];
      state.steps = m.fromStep;
      state.totalSteps = m.settings.steps;
      state.trained = false;
      started = performance.now();
      if (m.fromStep > 0) applySettings(form, m.settings);
      for (const p of m.history) addPoint(p);
      $("step-line").textContent = m.fromStep > 0
        ? `resumed at step ${m.fromStep} of ${m.settings.steps}`
        : `step 0 of ${m.settings.steps}: validating the starting model…`;
      return setStatus("running");
    case "metrics":
      addPoint(m.point);
      return render();
    case "samples":
      samples.add(m.kind, m.step, m.rows);
      state.samples = samples.size;
      return;
    case "log":
      return print(m.line);
    case "paused":
      state.steps = m.step;
      state.trained = m.step > 0;
      return setStatus("paused");
    case "running":
      if (state.status === "paused") setStatus("running");
      return;
    case "ended":
      state.steps = m.step;
      state.trained = m.step > 0;
      print(`run ${m.how} at step ${m.step}${m.checkpointed ? " (checkpoint kept)" : ""}`);
      return setStatus(m.how === "finished" ? "done" : "stopped");
    case "failed":
      showError(m.message);
      print(`error: ${m.message}`);
      state.trained = false;
      return setStatus("error");
    case "zip":
      state.downloads.push(`${m.name}.zip`);
      return download(m.bytes, `${m.name}.zip`);
  }
}

worker.onmessage = (e: MessageEvent<FromWorker>) => onMessage(e.data);
worker.onerror = (e) => {
  showError(`the trainer worker failed: ${e.message}`);
  setStatus("error");
};

function wire(): void {
  (form.elements.namedItem("taskName") as HTMLSelectElement).addEventListener("change", () => {
    pickTask(form, tiny);
    builtinData = null;
  });
  form.addEventListener("input", check);
  form.addEventListener("change", check);
  button("start").addEventListener("click", () => {
    showError(null);
    setStatus("starting");
    send({ type: "start", settings: formSettings(form, tiny) });
  });
  button("pause").addEventListener("click", () => {
    send({ type: "pause" });
    setStatus("pausing");
  });
  button("resume").addEventListener("click", () => send({ type: "resume" }));
  button("stop").addEventListener("click", () => {
    send({ type: "stop" });
    setStatus("stopping");
  });
  button("download").addEventListener("click", () => send({ type: "export" }));
  button("resume-saved").addEventListener("click", () => {
    showError(null);
    setStatus("starting");
    send({ type: "resume-saved" });
  });
  button("discard-saved").addEventListener("click", () => send({ type: "discard-saved" }));
  button("export-jsonl").addEventListener("click", () => {
    download(
      new Blob([metricsJsonl(state.metrics)], { type: "application/jsonl" }),
      "metrics.jsonl",
    );
    state.downloads.push("metrics.jsonl");
  });
  button("export-png").addEventListener("click", async () => {
    download(await charts.png(), "charts.png");
    state.downloads.push("charts.png");
  });
  $("upload").addEventListener("change", (ev) => {
    const files = (ev.target as HTMLInputElement).files;
    if (files && files.length > 0) send({ type: "model", files: pickedFiles(files) });
  });
  $("data-file").addEventListener("change", (ev) => {
    const file = (ev.target as HTMLInputElement).files?.[0];
    if (file) send({ type: "data", file: { path: file.name, file } });
  });
  button("builtin-data").addEventListener("click", () => send({ type: "data", file: null }));
  const drop = $("drop");
  drop.addEventListener("dragover", (ev) => {
    ev.preventDefault();
    drop.classList.add("over");
  });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", async (ev) => {
    ev.preventDefault();
    drop.classList.remove("over");
    if (BUSY.includes(state.status) || !ev.dataTransfer) return;
    send({ type: "model", files: await droppedFiles(ev.dataTransfer) });
  });
}

presetForm(form, params, tiny);
wire();
render();
const failAt = Number(params.get("fail_at_step"));
send({ type: "init", failAtStep: Number.isInteger(failAt) && failAt > 0 ? failAt : undefined });
