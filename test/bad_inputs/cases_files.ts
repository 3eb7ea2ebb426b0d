/**
 * Bad files: parquet data, model folders, reward modules and checkpoints a user could hand the
 * trainer, each written into the case's own folder.
 */
import { writeParquet } from "../../src/data/mod.ts";
import { type BadInput, type CaseContext, lit } from "./harness.ts";

/** A copy of the fixture's model folder under the case's folder, to break. */
function copyModel(c: CaseContext): string {
  const dst = `${c.dir}/model`;
  Deno.mkdirSync(dst, { recursive: true });
  for (const e of Deno.readDirSync(c.model)) {
    Deno.copyFileSync(`${c.model}/${e.name}`, `${dst}/${e.name}`);
  }
  return dst;
}

function editJson(path: string, edit: (j: Record<string, unknown>) => void): void {
  const j = JSON.parse(Deno.readTextFileSync(path));
  edit(j);
  Deno.writeTextFileSync(path, JSON.stringify(j));
}

/** A valid verl row with `over` applied; a key set to undefined is left out. */
export function defined(r: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(r).filter(([, v]) => v !== undefined));
}

const row = (over: Record<string, unknown> = {}) =>
  defined({
    data_source: "synthetic/arithmetic",
    prompt: [{ role: "user", content: "1+2=" }],
    ability: "math",
    reward_model: { style: "rule", ground_truth: "3" },
    extra_info: { index: 0 },
    ...over,
  });

/** A train run whose training file is written by `rows`. */
function badTrainData(
  name: string,
  rows: () => Record<string, unknown>[],
  expect: RegExp,
  extra: string[] = [],
): BadInput {
  return {
    name,
    task: "train",
    setup: (c) => writeParquet(`${c.dir}/bad.parquet`, { rows: rows() }),
    args: (c) => [...c.run, `data.train_files=${c.dir}/bad.parquet`, ...extra],
    expect: (c) => new RegExp(`${lit(c.dir)}/bad\\.parquet[\\s\\S]*${expect.source}`),
  };
}

/** A train run from a broken copy of the model folder. */
function badModel(name: string, breakIt: (dir: string) => void, expect: RegExp): BadInput {
  return {
    name,
    task: "train",
    setup: (c) => breakIt(copyModel(c)),
    args: (c) => [...c.run, `actor_rollout_ref.model.path=${c.dir}/model`],
    expect: () => expect,
  };
}

/** A train run scored by a reward module with this source. */
function badReward(name: string, source: string, expect: RegExp, fn = "compute_score"): BadInput {
  return {
    name,
    task: "train",
    setup: (c) => Deno.writeTextFileSync(`${c.dir}/reward.ts`, source),
    args: (c) => [
      ...c.run,
      `custom_reward_function.path=${c.dir}/reward.ts`,
      `custom_reward_function.name=${fn}`,
      `trainer.default_local_dir=${c.dir}/ckpt`,
    ],
    expect: () => expect,
  };
}

const eight = (make: (i: number) => Record<string, unknown>) =>
  Array.from({ length: 8 }, (_, i) => make(i));

export const FILE_CASES: BadInput[] = [
  {
    name: "train file that is not parquet",
    task: "train",
    setup: (c) => Deno.writeTextFileSync(`${c.dir}/bad.parquet`, "question,answer\n1+1,2\n"),
    args: (c) => [...c.run, `data.train_files=${c.dir}/bad.parquet`],
    expect: (c) => new RegExp(`${lit(c.dir)}/bad\\.parquet`),
  },
  {
    name: "truncated parquet",
    task: "train",
    setup: (c) => {
      const bytes = Deno.readFileSync(c.train);
      Deno.writeFileSync(`${c.dir}/bad.parquet`, bytes.subarray(0, bytes.length >> 1));
    },
    args: (c) => [...c.run, `data.train_files=${c.dir}/bad.parquet`],
    expect: (c) => new RegExp(`${lit(c.dir)}/bad\\.parquet`),
  },
  badTrainData(
    "no prompt column",
    () => eight((i) => row({ prompt: undefined, question: `${i}` })),
    /prompt/,
  ),
  badTrainData(
    "prompt is a string",
    () => eight(() => row({ prompt: "1+2=" })),
    /row 0.*prompt|prompt.*row 0/,
  ),
  badTrainData(
    "message without a role",
    () => eight(() => row({ prompt: [{ content: "1+2=" }] })),
    /prompt/,
  ),
  badTrainData("empty prompt list", () => eight(() => row({ prompt: [] })), /prompt/),
  badTrainData(
    "data_source is a number",
    () => eight(() => row({ data_source: 7 })),
    /data_source/,
  ),
  badTrainData(
    "no reward_model column",
    () => eight(() => row({ reward_model: undefined })),
    /reward_model/,
  ),
  badTrainData(
    "reward_model without ground_truth",
    () => eight(() => row({ reward_model: { style: "rule" } })),
    /reward_model|ground_truth/,
  ),
  badTrainData("extra_info is a string", () => eight(() => row({ extra_info: "x" })), /extra_info/),
  badTrainData(
    "the fifth row is malformed",
    () => eight((i) => row({ prompt: [{ role: i === 4 ? null : "user", content: "1+2=" }] })),
    /row 4/,
  ),
  badTrainData(
    "overlong prompt",
    () => eight(() => row({ prompt: [{ role: "user", content: "1+2+3+4+5+6+7+8+9=" }] })),
    /row 0[\s\S]*max_prompt_length=16/,
  ),
  badTrainData("prompt_key names a missing column", () => eight(() => row()), /question/, [
    "data.prompt_key=question",
  ]),
  badTrainData(
    "fewer prompts than a batch",
    () => [row(), row()],
    /train_batch_size=4[\s\S]*2 prompts|2 prompts[\s\S]*train_batch_size/,
  ),
  badModel(
    "folder without config.json",
    (d) => Deno.removeSync(`${d}/config.json`),
    /config\.json/,
  ),
  badModel(
    "config.json that is not JSON",
    (d) => Deno.writeTextFileSync(`${d}/config.json`, "{ hidden_size: 64"),
    /config\.json/,
  ),
  badModel(
    "unknown model_type",
    (d) => editJson(`${d}/config.json`, (j) => (j.model_type = "gpt2")),
    /model_type.*gpt2/,
  ),
  badModel(
    "config.json without hidden_size",
    (d) => editJson(`${d}/config.json`, (j) => delete j.hidden_size),
    /hidden_size/,
  ),
  badModel(
    "heads that do not divide",
    (d) => editJson(`${d}/config.json`, (j) => (j.num_key_value_heads = 3)),
    /num_key_value_heads/,
  ),
  badModel("no weights file", (d) => Deno.removeSync(`${d}/model.safetensors`), /safetensors/),
  badModel("truncated weights", (d) => {
    const b = Deno.readFileSync(`${d}/model.safetensors`);
    Deno.writeFileSync(`${d}/model.safetensors`, b.subarray(0, b.length - 100));
  }, /model\.safetensors/),
  badModel("weights header that is garbage", (d) => {
    const b = Deno.readFileSync(`${d}/model.safetensors`);
    b.set(new TextEncoder().encode("GARBAGE!"), 8);
    Deno.writeFileSync(`${d}/model.safetensors`, b);
  }, /model\.safetensors/),
  badModel(
    "weights for a bigger model",
    (d) => editJson(`${d}/config.json`, (j) => (j.hidden_size = 128)),
    /shape|hidden_size|\[/,
  ),
  badModel(
    "one layer short",
    (d) => editJson(`${d}/config.json`, (j) => (j.num_hidden_layers = 3)),
    /layers\.2|missing/,
  ),
  badModel("no tokenizer.json", (d) => Deno.removeSync(`${d}/tokenizer.json`), /tokenizer\.json/),
  badModel(
    "tokenizer.json that is not JSON",
    (d) => Deno.writeTextFileSync(`${d}/tokenizer.json`, "{"),
    /tokenizer\.json/,
  ),
  badReward(
    "reward that throws",
    "export function compute_score() { throw new Error('boom'); }",
    /boom/,
  ),
  badReward(
    "reward that returns NaN",
    "export function compute_score() { return NaN; }",
    /NaN|non-finite|not finite/,
  ),
  badReward(
    "reward that returns a string",
    "export function compute_score() { return 'good'; }",
    /string|number/,
  ),
  badReward("reward name not exported", "export function score() { return 1; }", /compute_score/),
  badReward(
    "reward module with a syntax error",
    "export function compute_score( { return 1; }",
    /reward\.ts/,
  ),
  badReward(
    "reward that never returns",
    "export function compute_score() { while (true) {} }",
    /time|timed out/i,
  ),
  {
    name: "resume_path that is not a global_step folder",
    task: "train",
    setup: (c) => Deno.mkdirSync(`${c.dir}/somewhere`),
    args: (
      c,
    ) => [
      ...c.run,
      "trainer.resume_mode=resume_path",
      `trainer.resume_from_path=${c.dir}/somewhere`,
    ],
    expect: () => /global_step_/,
  },
  {
    name: "latest_checkpointed_iteration.txt with garbage",
    task: "train",
    setup: (c) => {
      Deno.mkdirSync(`${c.dir}/ckpt`);
      Deno.writeTextFileSync(`${c.dir}/ckpt/latest_checkpointed_iteration.txt`, "three");
    },
    args: (c) => [...c.run, `trainer.default_local_dir=${c.dir}/ckpt`],
    expect: () => /latest_checkpointed_iteration\.txt/,
  },
  {
    name: "latest checkpoint folder missing",
    task: "train",
    setup: (c) => {
      Deno.mkdirSync(`${c.dir}/ckpt`);
      Deno.writeTextFileSync(`${c.dir}/ckpt/latest_checkpointed_iteration.txt`, "5");
    },
    args: (c) => [...c.run, `trainer.default_local_dir=${c.dir}/ckpt`],
    expect: () => /global_step_5/,
  },
];
