/// <reference lib="dom" />
/**
 * The settings form: URL presets in, run settings out (numbers as typed, NaN where a field is
 * empty or not a number, so the worker's validation names the field), errors shown next to the
 * fields they name, and the whole form locked while a run owns it.
 */
import {
  BUILTIN_REWARDS,
  type BuiltinReward,
  DEFAULT_SETTINGS,
  type FieldError,
  REWARD_TEMPLATE,
  type RunSettings,
  TASK_NAMES,
  taskDefaults,
  type TaskName,
  type TaskOperator,
} from "./settings.ts";

export function $(id: string): HTMLElement {
  const el = document.getElementById(id);
  if (!el) throw new Error(`the page has no #${id}`);
  return el;
}

function field(form: HTMLFormElement, name: string): HTMLInputElement | HTMLSelectElement {
  const el = form.elements.namedItem(name);
  if (!el) throw new Error(`the form has no field "${name}"`);
  return el as HTMLInputElement | HTMLSelectElement;
}

/** URL parameters that preset form fields of the same name. */
const PRESETS = [
  "steps",
  "lr",
  "loraRank",
  "n",
  "prompts",
  "temperature",
  "digits",
  "operands",
  "testFreq",
  "saveFreq",
  "maxResponseLength",
  "reward",
];

/** The task the picker names. */
export function formTask(form: HTMLFormElement): TaskName {
  const v = field(form, "taskName").value;
  return (TASK_NAMES as readonly string[]).includes(v) ? v as TaskName : "arithmetic";
}

/** Shows the arithmetic task's knobs only when it is picked. */
export function showTaskKnobs(form: HTMLFormElement): void {
  const knobs = form.querySelector<HTMLElement>("#arithmetic-knobs");
  if (knobs) knobs.hidden = formTask(form) !== "arithmetic";
}

/** Fills the form from settings (a saved run's, or the defaults). */
export function applySettings(form: HTMLFormElement, s: RunSettings): void {
  const set = (name: string, v: string | number) => (field(form, name).value = String(v));
  set("taskName", s.taskName ?? "arithmetic");
  set("digits", s.task.digits);
  set("operands", s.task.operands);
  for (const el of form.querySelectorAll<HTMLInputElement>("input[name=op]")) {
    el.checked = s.task.operators.includes(el.value as TaskOperator);
  }
  (form.querySelector(`input[name=algorithm][value=${s.algorithm}]`) as HTMLInputElement)
    .checked = true;
  set("lr", s.lr);
  set("loraRank", s.loraRank ?? 0); // runs saved before the field existed
  set("n", s.n);
  set("prompts", s.promptsPerStep);
  set("temperature", s.temperature);
  set("steps", s.steps);
  set("testFreq", s.testFreq);
  set("saveFreq", s.saveFreq);
  set("maxResponseLength", s.maxResponseLength);
  (field(form, "useKlLoss") as HTMLInputElement).checked = s.useKlLoss;
  set("klLossCoef", s.klLossCoef);
  set("reward", s.reward.kind === "custom" ? "custom" : s.reward.name);
  if (s.reward.kind === "custom") {
    set("rewardCode", s.reward.code);
    set("rewardTimeout", s.reward.timeoutS);
  }
  showTaskKnobs(form);
}

/** Fields `tiny` (the tests' URL parameter) sets, whatever the task. */
function shrink(form: HTMLFormElement): void {
  field(form, "n").value = "2";
  field(form, "prompts").value = "2";
  field(form, "testFreq").value = "1";
  field(form, "saveFreq").value = "1";
}

/**
 * The picker chose another task: its defaults (configs/tasks/calc_tool.yaml for the calculator)
 * replace the run's fields, the reward code and the arithmetic knobs excepted.
 */
export function pickTask(form: HTMLFormElement, tiny: boolean): void {
  const keep = formSettings(form, tiny);
  const d = taskDefaults(formTask(form));
  const reward = keep.reward.kind === "custom" ? keep.reward : d.reward;
  applySettings(form, { ...d, task: keep.task, reward });
  if (tiny) shrink(form);
}

/** Fills the form from the URL; `tiny` shrinks the run to a few seconds of work per step. */
export function presetForm(form: HTMLFormElement, params: URLSearchParams, tiny: boolean): void {
  const task = params.get("task");
  applySettings(form, taskDefaults(task === "calc_tool" ? task : "arithmetic"));
  field(form, "rewardCode").value = REWARD_TEMPLATE;
  if (tiny) shrink(form);
  for (const name of PRESETS) {
    const v = params.get(name);
    if (v !== null) field(form, name).value = v;
  }
  const algorithm = params.get("algorithm");
  if (algorithm === "grpo" || algorithm === "gae") {
    (form.querySelector(`input[name=algorithm][value=${algorithm}]`) as HTMLInputElement)
      .checked = true;
  }
  if (params.get("kl") === "1") (field(form, "useKlLoss") as HTMLInputElement).checked = true;
}

/** The number typed into a field; NaN when it is empty or not a number. */
function num(form: HTMLFormElement, name: string): number {
  const raw = field(form, name).value.trim();
  return raw === "" ? NaN : Number(raw);
}

/** The run settings the form describes (`tiny` keeps validation to two prompts). */
export function formSettings(form: HTMLFormElement, tiny: boolean): RunSettings {
  const ops = [...form.querySelectorAll<HTMLInputElement>("input[name=op]:checked")]
    .map((el) => el.value as TaskOperator);
  const algorithm = (form.querySelector("input[name=algorithm]:checked") as HTMLInputElement)
      ?.value === "gae"
    ? "gae"
    : "grpo";
  const reward = field(form, "reward").value;
  const taskName = formTask(form);
  return {
    taskName,
    task: { digits: num(form, "digits"), operands: num(form, "operands"), operators: ops },
    algorithm,
    lr: num(form, "lr"),
    loraRank: num(form, "loraRank"),
    n: num(form, "n"),
    temperature: num(form, "temperature"),
    steps: num(form, "steps"),
    promptsPerStep: num(form, "prompts"),
    maxResponseLength: num(form, "maxResponseLength"),
    testFreq: num(form, "testFreq"),
    saveFreq: num(form, "saveFreq"),
    useKlLoss: (field(form, "useKlLoss") as HTMLInputElement).checked,
    klLossCoef: num(form, "klLossCoef"),
    valPrompts: tiny ? 2 : taskDefaults(taskName).valPrompts,
    seed: DEFAULT_SETTINGS.seed,
    reward: reward === "custom"
      ? {
        kind: "custom",
        code: field(form, "rewardCode").value,
        timeoutS: num(form, "rewardTimeout"),
      }
      : {
        kind: "builtin",
        name: (BUILTIN_REWARDS as readonly string[]).includes(reward)
          ? reward as BuiltinReward
          : "auto",
      },
  };
}

/**
 * Shows each error under the field it names (its label gets `invalid`); errors naming no field go
 * to `general`. Earlier errors are cleared first.
 */
export function showFieldErrors(
  form: HTMLFormElement,
  errors: FieldError[],
  general: HTMLElement,
): void {
  for (const el of form.querySelectorAll(".field-error")) el.remove();
  for (const el of form.querySelectorAll(".invalid")) el.classList.remove("invalid");
  const loose: FieldError[] = [];
  for (const e of errors) {
    const input = e.field ? form.querySelector(`[name="${e.field}"]`) : null;
    const host = input?.closest("label, .field, .ops") as HTMLElement | null;
    if (!host) {
      loose.push(e);
      continue;
    }
    host.classList.add("invalid");
    const note = document.createElement("small");
    note.className = "field-error";
    note.dataset.field = e.field;
    note.dataset.key = e.key;
    note.textContent = e.message;
    host.after(note);
  }
  general.textContent = loose.map((e) => e.message).join("\n");
  general.hidden = loose.length === 0;
}

/** Locks (or unlocks) the settings: every fieldset marked `data-lock`. */
export function lockForm(form: HTMLFormElement, locked: boolean): void {
  for (const fs of form.querySelectorAll<HTMLFieldSetElement>("fieldset[data-lock]")) {
    fs.disabled = locked;
  }
  form.classList.toggle("locked", locked);
}
