/// <reference lib="dom" />
/** The settings form: URL presets in, typed run settings out. */
import type { Operator } from "../src/data/mod.ts";
import { DEFAULT_SETTINGS, type RunSettings } from "./session.ts";

export function $(id: string): HTMLElement {
  const el = document.getElementById(id);
  if (!el) throw new Error(`the page has no #${id}`);
  return el;
}

function field(form: HTMLFormElement, name: string): HTMLInputElement | HTMLSelectElement {
  return form.elements.namedItem(name) as HTMLInputElement | HTMLSelectElement;
}

/** URL parameters that preset form fields of the same name. */
const PRESETS = ["steps", "lr", "n", "prompts", "temperature", "digits", "operands", "testFreq"];

/** Fills the form from the URL; `tiny` also shrinks the run to a few seconds of work per step. */
export function presetForm(
  form: HTMLFormElement,
  params: URLSearchParams,
  tiny: RunSettings | null,
): void {
  if (tiny) {
    field(form, "n").value = "2";
    field(form, "prompts").value = "2";
    field(form, "testFreq").value = "1";
  }
  for (const name of PRESETS) {
    const v = params.get(name);
    if (v !== null) field(form, name).value = v;
  }
  const algorithm = params.get("algorithm");
  if (algorithm === "grpo" || algorithm === "gae") {
    (form.querySelector(`input[name=algorithm][value=${algorithm}]`) as HTMLInputElement)
      .checked = true;
  }
}

function num(form: HTMLFormElement, name: string, fallback: number): number {
  const v = Number(field(form, name).value);
  return Number.isFinite(v) && field(form, name).value !== "" ? v : fallback;
}

/** The run settings the form describes (`tiny` keeps validation to two prompts). */
export function formSettings(form: HTMLFormElement, tiny: boolean): RunSettings {
  const d = DEFAULT_SETTINGS;
  const ops = [...form.querySelectorAll<HTMLInputElement>("input[name=op]:checked")]
    .map((el) => el.value as Operator);
  const algorithm = (form.querySelector("input[name=algorithm]:checked") as HTMLInputElement)
      ?.value === "gae"
    ? "gae"
    : "grpo";
  return {
    task: {
      digits: Math.round(num(form, "digits", d.task.digits)),
      operands: Math.round(num(form, "operands", d.task.operands)),
      operators: ops.length > 0 ? ops : ["+"],
    },
    algorithm,
    lr: num(form, "lr", d.lr),
    n: Math.max(1, Math.round(num(form, "n", d.n))),
    temperature: num(form, "temperature", d.temperature),
    steps: Math.max(1, Math.round(num(form, "steps", d.steps))),
    promptsPerStep: Math.max(1, Math.round(num(form, "prompts", d.promptsPerStep))),
    maxResponseLength: d.maxResponseLength,
    testFreq: Math.max(1, Math.round(num(form, "testFreq", d.testFreq))),
    valPrompts: tiny ? 2 : d.valPrompts,
    seed: d.seed,
  };
}
