/// <reference lib="dom" />
/**
 * The page's explanations: what the task is, what a prompt and a rewarded answer look like under
 * the chosen reward, the model's size, and the adapter training runs on. Built from what the
 * worker reports, so the example shown is one the scorer really rewards.
 */
import type { AdapterInfo, DataInfo, ModelInfo } from "./protocol.ts";
import type { RunSettings } from "./settings.ts";

const REWARD_NAMES: Record<string, string> = {
  auto: "the built-in scorer of each row's data_source",
  arithmetic: "the arithmetic scorer (verl's gsm8k rule, strict: the last #### <number>)",
  gsm8k: "verl's gsm8k scorer (the last #### <number>; commas and $ stripped)",
  math: "the MATH scorer (the last \\boxed{...}, normalised)",
  exact_match: "exact match (the whole answer, trimmed, equals the ground truth)",
  custom: "your compute_score function, run in a sandboxed worker",
};

export function bytes(n: number): string {
  if (n >= 2 ** 30) return `${(n / 2 ** 30).toFixed(2)} GiB`;
  if (n >= 2 ** 20) return `${(n / 2 ** 20).toFixed(1)} MiB`;
  return `${(n / 1024).toFixed(0)} KiB`;
}

function count(n: number): string {
  return n >= 1e9
    ? `${(n / 1e9).toFixed(2)}B`
    : n >= 1e6
    ? `${(n / 1e6).toFixed(1)}M`
    : `${(n / 1e3).toFixed(0)}k`;
}

function el(tag: string, text: string, cls = ""): HTMLElement {
  const e = document.createElement(tag);
  e.textContent = text;
  if (cls) e.className = cls;
  return e;
}

/** One row of the example: a label and a monospaced value. */
function row(label: string, value: string, cls = ""): HTMLElement {
  const div = el("div", "", `example-row ${cls}`);
  div.append(el("span", label, "label"), el("code", value));
  return div;
}

/** Fills `target` with the task, the example and the scoring rule. */
export function explainTask(
  target: HTMLElement,
  data: DataInfo | null,
  settings: RunSettings,
  builtin: boolean,
): void {
  target.replaceChildren();
  const reward = settings.reward.kind === "custom" ? "custom" : settings.reward.name;
  if (builtin && settings.taskName === "calc_tool") {
    const expr = data?.example.prompt.match(/\d+\*\d+=/)?.[0] ?? "347*86=";
    target.append(el(
      "p",
      `The calculator task: products like ${expr} of a 3-digit and a 2-digit number, too hard ` +
        "for the tiny model to work out in its head. Each rollout is a conversation: the model " +
        "may call the calculator tool (a hermes <tool_call>), the tool's reply is appended, and " +
        "the model goes on, for at most 3 assistant turns. The last #### <number> it writes is " +
        "scored; only its own tokens are trained on, never the tool's. The starting model was " +
        "shown the call in a quarter of its fine-tuning conversations, so it mostly answers " +
        "from its head (and is wrong): what RL teaches it is to call the tool and copy its " +
        "reply.",
    ));
  } else if (builtin) {
    const t = settings.task;
    const gt = data?.example.groundTruth ?? "13";
    const expr = data ? data.example.prompt.match(/[\d+\-*]+=/)?.[0] ?? "3+5-2+7=" : "3+5-2+7=";
    target.append(el(
      "p",
      `The built-in task: ${t.operands} numbers of ${t.digits} digit${t.digits > 1 ? "s" : ""} ` +
        `joined by ${t.operators.join(" ")}, e.g. ${expr}. The model writes its answer after the ` +
        `prompt and must write it as #### ${gt}: the scorer reads the last #### <number>, so a ` +
        `bare ${gt} scores 0 even though it is right. The starting model mostly computes the ` +
        "sum but writes it bare, so what RL teaches it first is the format.",
    ));
  } else if (data) {
    target.append(el(
      "p",
      `Your prompts: ${data.train} for training and ${data.val} held out for validation, from ` +
        `${data.source} (data_source: ${data.dataSources.join(", ")}).`,
    ));
  }
  target.append(el("p", `Scored by ${REWARD_NAMES[reward]}.`, "muted"));
  if (!data) return;
  const box = el("div", "", "example");
  box.append(row("prompt (as the model sees it)", data.example.prompt));
  box.append(row("ground truth", data.example.groundTruth));
  if (data.conversation) {
    // A multi-turn task: what a rewarded conversation looks like after the prompt.
    const turns = data.conversation.slice(1).map((m) => `${m.role}: ${m.content}`).join("\n");
    box.append(row("a rewarded conversation", turns, "good conversation"));
  }
  if (settings.reward.kind === "custom") {
    box.append(row("rewarded answer", "whatever your compute_score scores above 0"));
  } else {
    const good = data.rewarded[settings.reward.name];
    box.append(
      row(
        "rewarded answer",
        good ?? "none of #### / \\boxed{} / the bare answer: check the reward choice",
        good ? "good" : "bad",
      ),
    );
    if (good && good !== data.example.groundTruth) {
      box.append(row("scores 0", data.example.groundTruth, "bad"));
    }
  }
  target.append(box);
}

/** The model line: where it came from, its shape and size, and the training memory estimate. */
export function explainModel(target: HTMLElement, m: ModelInfo): void {
  target.textContent = `${m.source}: ${m.modelType}, ${m.layers} layers, hidden ${m.hidden}, ` +
    `vocab ${m.vocab}, context ${m.maxPositions} · ${count(m.parameters)} parameters ` +
    `(${m.dtype}) · training needs about ${bytes(m.trainingBytes)} of GPU memory ` +
    "(f32 weights, gradients, AdamW state) plus activations";
}

/** The adapter badges' text. */
export function adapterText(a: AdapterInfo): { name: string; f16: string; title: string } {
  return {
    name: `GPU: ${a.name}`,
    f16: a.f16 ? "f16: yes (weights kept in f32)" : "f16: no (all f32)",
    title: `maxBufferSize ${bytes(a.maxBufferSize)}, maxStorageBufferBindingSize ` +
      bytes(a.maxStorageBufferBindingSize),
  };
}
