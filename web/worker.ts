/// <reference lib="webworker" />
/**
 * The trainer's dedicated Web Worker: owns the WebGPU device, the starting model, the prompts, the
 * run and the saved run in OPFS, and answers the page's typed messages (web/protocol.ts). The page
 * only draws, so training never blocks its thread.
 */
import { initGpu, registerShaderSources } from "../src/gpu/mod.ts";
import { CalculatorTool } from "../src/rollout/mod.ts";
import type { DataInfo, FromWorker, ModelInfo, PickedFile, ToWorker } from "./protocol.ts";
import {
  type DeviceBudget,
  fetchModelFolder,
  folderFiles,
  folderTokenizer,
  type ModelFolder,
  modelInfo,
  randomFolder,
  readPickedFolder,
  zipModelFolder,
} from "./model_files.ts";
import { RunStore } from "./opfs.ts";
import { rewardSyntaxError } from "./reward.ts";
import { checkSettings } from "./run_config.ts";
import { Refusal, TrainingRun } from "./session.ts";
import type { FieldError, RunSettings, TaskName } from "./settings.ts";
import { SHADERS } from "./shaders.ts";
import {
  builtinRows,
  describeRows,
  isBuiltinSource,
  type PromptRows,
  readPromptFile,
} from "./task.ts";

const post = (m: FromWorker, transfer: Transferable[] = []) => self.postMessage(m, transfer);
const print = (line: string) => post({ type: "log", line });
const message = (e: unknown) => (e instanceof Error ? e.message : String(e));
const SANDBOX_URL = new URL("./reward_sandbox.js", self.location.href);

let budget: DeviceBudget;
/** A model folder the user picked (or a resumed run's own); null: the task's built-in model. */
let picked: ModelFolder | null = null;
/** The model the page shows now. */
let base: ModelFolder;
const builtins = new Map<TaskName, Promise<ModelFolder>>();
let userRows: PromptRows | null = null;
let store: RunStore | null = null;
let run: TrainingRun | null = null;
/** The page test's mid-run failure (URL parameter fail_at_step). */
let failAtStep: number | undefined;

/**
 * The built-in starting model of a task, fetched once: the arithmetic task's (a seeded random init
 * where the page ships none) or the calculator task's SFT checkpoint.
 */
function builtinModel(task: TaskName): Promise<ModelFolder> {
  let folder = builtins.get(task);
  if (!folder) {
    folder = task === "calc_tool"
      ? fetchModelFolder("model_calc", "built-in tiny_calc").then((f) => {
        if (!f) throw new Error("this page ships no calculator model (model_calc/)");
        return f;
      })
      : fetchModelFolder("model", "built-in tiny_arith").then((f) =>
        f ?? randomFolder({ seed: 1 })
      );
    builtins.set(task, folder);
    folder.catch(() => builtins.delete(task));
  }
  return folder;
}

/** The model a run under `settings` starts from: the user's, else the task's built-in one. */
async function modelFor(settings: RunSettings): Promise<ModelFolder> {
  return picked ?? await builtinModel(settings.taskName ?? "arithmetic");
}

function info(folder: ModelFolder): ModelInfo {
  return modelInfo(folder.config, folder.source);
}

/** Describes the rows for the page, with the current model's tokenizer (see describeRows). */
function describe(rows: PromptRows, full: boolean, folder = base): DataInfo {
  return describeRows(rows, folderTokenizer(folder), full);
}

/**
 * The built-in task's description under `settings` and the model it starts from; problems go
 * into `errors`.
 */
async function builtinInfo(
  settings: RunSettings,
  errors: FieldError[],
): Promise<{ data: DataInfo | null; model: ModelInfo | null }> {
  const field = settings.taskName === "calc_tool" ? "taskName" : "operands";
  let folder: ModelFolder;
  try {
    folder = await modelFor(settings);
  } catch (e) {
    errors.push({ field: "taskName", key: "task", message: message(e) });
    return { data: null, model: null };
  }
  base = folder;
  if (userRows || errors.some((e) => e.field === "op")) return { data: null, model: info(folder) };
  try {
    return { data: describe(builtinRows(settings), false, folder), model: info(folder) };
  } catch (e) {
    errors.push({ field, key: "task", message: message(e) });
    return { data: null, model: info(folder) };
  }
}

async function init(): Promise<void> {
  registerShaderSources(SHADERS);
  const adapter = await (navigator as Navigator & { gpu?: GPU }).gpu?.requestAdapter()
    .catch(() => null);
  if (!adapter) {
    const why = "gpu" in navigator
      ? "navigator.gpu returned no adapter in the worker (blocklisted GPU or WebGPU disabled)"
      : "this browser has no WebGPU in workers";
    return post({ type: "no-webgpu", message: why });
  }
  const g = await initGpu({ adapter });
  const deviceGiB = (navigator as Navigator & { deviceMemory?: number }).deviceMemory ?? 4;
  budget = {
    maxBufferSize: g.limits.maxBufferSize,
    maxStorageBufferBindingSize: g.limits.maxStorageBufferBindingSize,
    memoryBytes: deviceGiB * 2 ** 30,
  };
  base = await builtinModel("arithmetic");
  store = await RunStore.open();
  post({
    type: "ready",
    adapter: { name: g.adapterName, f16: g.hasF16, ...budget },
    model: info(base),
    data: null,
  });
  post({ type: "saved", run: await store?.saved() ?? null });
}

function check(settings: RunSettings): FieldError[] {
  const errors = checkSettings(settings);
  if (settings.reward.kind === "custom") {
    const syntax = rewardSyntaxError(settings.reward.code);
    if (syntax) errors.push({ field: "rewardCode", key: "rewardCode", message: syntax });
  }
  return errors;
}

/** Runs `r` to its end and reports how it ended; the page stays usable whatever happens. */
async function drive(
  r: TrainingRun,
  fromStep: number,
  prepared: () => Promise<void> = async () => {},
): Promise<void> {
  try {
    await r.prepare();
    await prepared();
  } catch (e) {
    r.dispose();
    if (e instanceof Refusal) return post({ type: "refused", errors: e.errors });
    return post({ type: "refused", errors: [{ field: "", key: "", message: message(e) }] });
  }
  run = r;
  post({ type: "started", settings: r.inputs.settings, fromStep, history: r.history });
  let outcome: FromWorker;
  try {
    const end = await r.run();
    outcome = { type: "ended", ...end };
  } catch (e) {
    if (e instanceof Error && e.stack) print(e.stack);
    // A failed run's weights may be half-updated: downloads fall back to the last checkpoint.
    r.dispose();
    if (run === r) run = null;
    outcome = { type: "failed", message: message(e), step: r.step };
  }
  // The saved run goes first, so the page knows what it can resume by the time the run shows as
  // ended (the other order let a stopped run show "stopped" before its checkpoint).
  post({ type: "saved", run: await store?.saved() ?? null });
  post(outcome);
}

function newRun(
  settings: RunSettings,
  folder: ModelFolder,
  rows: PromptRows,
  resume?: Awaited<ReturnType<RunStore["checkpoint"]>>,
): TrainingRun {
  run?.dispose();
  run = null;
  return new TrainingRun({
    settings,
    base: folder,
    rows,
    store: settings.saveFreq > 0 ? store : null,
    resume,
    sandboxUrl: SANDBOX_URL,
    // The calculator task's rollouts are conversations with the calculator (multi_turn.enable).
    tools: settings.taskName === "calc_tool"
      ? [new CalculatorTool(CalculatorTool.defaultSchema)]
      : [],
    failAtStep,
  }, {
    metrics: (point) => post({ type: "metrics", point }),
    samples: (kind, step, rows) =>
      post({
        type: "samples",
        kind,
        step,
        rows: rows.map((r) => ({
          input: r.input,
          output: r.output,
          score: r.score,
          ground_truth: r.ground_truth,
          ...(r.messages
            ? { messages: r.messages.map((m) => ({ role: m.role, content: m.content })) }
            : {}),
        })),
      }),
    print,
    paused: (step) => post({ type: "paused", step }),
    running: (step) => post({ type: "running", step }),
  });
}

async function start(settings: RunSettings): Promise<void> {
  const errors = check(settings);
  if (errors.length > 0) return post({ type: "refused", errors });
  const rows = userRows ?? builtinRows(settings);
  const folder = await modelFor(settings);
  base = folder;
  // The saved run is replaced only once the new one is known to start.
  await drive(newRun(settings, folder, rows), 0, async () => {
    if (!store || settings.saveFreq <= 0) return;
    await store.begin(
      {
        settings,
        model: folder.source,
        data: rows.source,
        totalSteps: settings.steps,
        savedAt: new Date().toISOString(),
      },
      folderFiles(folder),
      rows,
    );
    post({ type: "saved", run: null });
  });
}

async function storedFolder(s: RunStore, source: string): Promise<ModelFolder> {
  const files: PickedFile[] = Object.entries(await s.baseFiles()).map(([name, bytes]) => ({
    path: `${source}/${name}`,
    file: new File([bytes as Uint8Array<ArrayBuffer>], name),
  }));
  return await readPickedFolder(files, { ...budget, memoryBytes: Infinity });
}

async function resumeSaved(): Promise<void> {
  if (!store) throw new Error("this browser keeps no saved runs (no OPFS)");
  const m = await store.manifest();
  const folder = await storedFolder(store, m.model);
  const checkpoint = await store.checkpoint();
  const rows = await store.rows();
  // The resumed run's model and prompts become the page's current ones.
  base = folder;
  picked = m.model.startsWith("built-in ") ? null : folder;
  userRows = isBuiltinSource(rows.source) ? null : rows;
  post({ type: "model", model: info(base) });
  post({ type: "data", data: userRows ? describe(userRows, false) : null });
  await drive(newRun(m.settings, folder, rows, checkpoint), checkpoint.step);
}

async function exportZip(): Promise<void> {
  let folder: ModelFolder;
  let weights: Map<string, Float32Array>;
  if (run) {
    folder = run.inputs.base;
    weights = await run.trainedWeights();
  } else if (store && await store.saved()) {
    folder = await storedFolder(store, (await store.manifest()).model);
    weights = (await store.checkpoint()).actor;
  } else {
    throw new Error("nothing trained yet: start a run first");
  }
  const name = `${folder.source.replace(/[^\w.-]+/g, "_")}-trained`;
  const bytes = zipModelFolder(folder, weights, name);
  post({ type: "zip", name, bytes }, [bytes.buffer]);
}

/** Messages that change what a run is built from wait while a run is being set up or runs. */
async function handle(msg: ToWorker): Promise<void> {
  switch (msg.type) {
    case "init":
      failAtStep = msg.failAtStep;
      return await init();
    case "check": {
      const errors = check(msg.settings);
      const { data, model } = await builtinInfo(msg.settings, errors);
      return post({ type: "checked", id: msg.id, errors, data, model });
    }
    case "model":
      try {
        base = picked = await readPickedFolder(msg.files, budget);
        run?.dispose();
        run = null;
        post({ type: "model", model: info(base) });
      } catch (e) {
        return post({ type: "model-error", message: message(e) });
      }
      if (userRows) {
        try {
          post({ type: "data", data: describe(userRows, true) });
        } catch (e) {
          post({ type: "data-error", message: message(e) });
        }
      }
      return;
    case "data":
      try {
        userRows = msg.file ? await readPromptFile(msg.file) : null;
        return post({ type: "data", data: userRows ? describe(userRows, true) : null });
      } catch (e) {
        userRows = null;
        return post({ type: "data-error", message: message(e) });
      }
    case "start":
      return await start(msg.settings);
    case "resume-saved":
      return await resumeSaved();
    case "discard-saved":
      await store?.clear();
      return post({ type: "saved", run: null });
    case "pause":
      return run?.pause();
    case "resume":
      return run?.resume();
    case "stop":
      return run?.stop();
    case "export":
      return await exportZip();
  }
}

const CONTROL = new Set(["pause", "resume", "stop", "check", "export"]);
let queue: Promise<void> = Promise.resolve();

self.onmessage = (e: MessageEvent<ToWorker>) => {
  const msg = e.data;
  const act = () =>
    handle(msg).catch((err) => {
      if (err instanceof Error && err.stack) print(err.stack);
      post({ type: "failed", message: message(err), step: run?.step ?? 0 });
    });
  // Pause, resume, stop, checks and exports act at once; the rest wait for the previous one.
  if (CONTROL.has(msg.type)) void act();
  else queue = queue.then(act);
};
