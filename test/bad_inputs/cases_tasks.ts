/** Bad inputs to the other entry points: generate, eval, sft and data. */
import { writeParquet } from "../../src/data/mod.ts";
import { defined } from "./cases_files.ts";
import { type BadInput, type CaseContext, lit } from "./harness.ts";

const gen = (
  name: string,
  args: (c: CaseContext) => string[],
  expect: RegExp,
  setup?: BadInput["setup"],
): BadInput => ({
  name,
  task: "generate",
  setup,
  args: (c) => [
    `data.path=${c.val}`,
    `model.path=${c.model}`,
    `data.output_path=${c.dir}/out.parquet`,
    "rollout.response_length=4",
    ...args(c),
  ],
  expect: () => expect,
});

const responses = (over: Record<string, unknown> = {}) =>
  Array.from({ length: 4 }, (_, i) =>
    defined({
      data_source: "synthetic/arithmetic",
      prompt: [{ role: "user", content: `${i}+1=` }],
      reward_model: { style: "rule", ground_truth: `${i + 1}` },
      responses: [`#### ${i + 1}`],
      ...over,
    }));

const evaluate = (
  name: string,
  rows: () => Record<string, unknown>[],
  args: string[],
  expect: RegExp,
): BadInput => ({
  name,
  task: "eval",
  setup: (c) => writeParquet(`${c.dir}/gen.parquet`, { rows: rows() }),
  args: (c) => [`data.path=${c.dir}/gen.parquet`, ...args],
  expect: () => expect,
});

const pairs = (over: Record<string, unknown> = {}) =>
  Array.from({ length: 8 }, (_, i) =>
    defined({
      prompt: [{ role: "user", content: `${i}+1=` }],
      extra_info: { answer: `#### ${i + 1}` },
      ...over,
    }));

const sft = (
  name: string,
  rows: (() => Record<string, unknown>[]) | null,
  args: string[],
  expect: RegExp,
): BadInput => ({
  name,
  task: "sft",
  setup: rows ? (c) => writeParquet(`${c.dir}/sft.parquet`, { rows: rows() }) : undefined,
  args: (c) => [
    `data.train_files=${rows ? `${c.dir}/sft.parquet` : c.train}`,
    `data.val_files=${rows ? `${c.dir}/sft.parquet` : c.train}`,
    "data.response_key=extra_info",
    "data.train_batch_size=4",
    "data.max_length=32",
    `model.partial_pretrain=${c.model}`,
    "trainer.total_training_steps=1",
    `trainer.default_local_dir=${c.dir}/ckpt`,
    ...args,
  ],
  expect: () => expect,
});

const data = (name: string, args: string[], expect: RegExp): BadInput => ({
  name,
  task: "data",
  args: (c) => [`--out_dir=${c.dir}/data`, ...args],
  expect: () => expect,
});

export const TASK_CASES: BadInput[] = [
  gen(
    "generate from a missing parquet",
    () => ["data.path=/nonexistent/p.parquet"],
    /data\.path.*\/nonexistent\/p\.parquet/,
  ),
  gen("generate with a missing model", () => ["model.path=/nonexistent/m"], /model\.path/),
  gen(
    "generate with an unknown key",
    () => ["rollout.temprature=0.5"],
    /rollout\.temprature.*rollout\.temperature/,
  ),
  gen("generate zero samples per prompt", () => ["data.n_samples=0"], /data\.n_samples/),
  gen("generate with top_p above one", () => ["rollout.top_p=2"], /rollout\.top_p/),
  gen(
    "generate with a negative temperature",
    () => ["rollout.temperature=-1"],
    /rollout\.temperature/,
  ),
  gen("generate from a missing prompt column", () => ["data.prompt_key=question"], /question/),
  gen(
    "generate into a folder",
    (c) => [`data.output_path=${c.dir}/outdir`],
    /data\.output_path|outdir/,
    (c) => Deno.mkdirSync(`${c.dir}/outdir`),
  ),
  gen(
    "generate from rows with a malformed prompt",
    (c) => [`data.path=${c.dir}/p.parquet`],
    /row 0/,
    (c) => writeParquet(`${c.dir}/p.parquet`, { rows: [{ prompt: "1+1=", data_source: "x" }] }),
  ),
  evaluate(
    "eval without a responses column",
    () => responses({ responses: undefined }),
    [],
    /responses/,
  ),
  evaluate(
    "eval with responses that are not lists",
    () => responses({ responses: "#### 1" }),
    [],
    /responses/,
  ),
  evaluate(
    "eval of an unknown data_source",
    () => responses({ data_source: "my/dataset" }),
    [],
    /my\/dataset/,
  ),
  evaluate("eval whose reward module is missing", () => responses(), [
    "custom_reward_function.path=/nonexistent/r.ts",
  ], /custom_reward_function\.path/),
  evaluate(
    "eval without ground truth",
    () => responses({ reward_model: undefined }),
    [],
    /reward_model/,
  ),
  evaluate(
    "eval with an unknown key",
    () => responses(),
    ["data.response_keys=x"],
    /data\.response_keys/,
  ),
  {
    name: "eval of a missing parquet",
    task: "eval",
    args: () => ["data.path=/nonexistent/gen.parquet"],
    expect: () => /data\.path.*\/nonexistent\/gen\.parquet/,
  },
  {
    name: "eval whose reward always throws",
    task: "eval",
    setup: async (c) => {
      await writeParquet(`${c.dir}/gen.parquet`, { rows: responses() });
      Deno.writeTextFileSync(
        `${c.dir}/r.ts`,
        "export function compute_score() { throw new Error('kaput'); }",
      );
    },
    args: (c) => [`data.path=${c.dir}/gen.parquet`, `custom_reward_function.path=${c.dir}/r.ts`],
    expect: () => /kaput/,
  },
  sft(
    "sft from a missing parquet",
    null,
    ["data.train_files=/nonexistent/s.parquet"],
    /data\.train_files/,
  ),
  sft("sft without the response column", () => pairs({ extra_info: undefined }), [], /extra_info/),
  sft("sft without the prompt column", () => pairs({ prompt: undefined }), [], /prompt/),
  sft(
    "sft response that is a number",
    () => pairs({ extra_info: { answer: 3 } }),
    [],
    /extra_info|answer/,
  ),
  sft(
    "sft with an unknown key",
    () => pairs(),
    ["optim.learning_rate=1"],
    /unknown config key "optim\.learning_rate"/,
  ),
  sft("sft with a negative learning rate", () => pairs(), ["optim.lr=-0.1"], /optim\.lr/),
  sft(
    "sft from a missing model",
    () => pairs(),
    ["model.partial_pretrain=/nonexistent/m"],
    /model\.partial_pretrain/,
  ),
  sft("sft with a max_length of one", () => pairs(), ["data.max_length=1"], /data\.max_length/),
  sft(
    "sft resume_path at a missing checkpoint",
    null,
    ["trainer.resume_mode=resume_path", "trainer.resume_from_path=/nonexistent/global_step_3"],
    /trainer\.resume_from_path.*\/nonexistent\/global_step_3/,
  ),
  {
    ...sft(
      "sft resume from a checkpoint with a truncated extra_state.json",
      null,
      [],
      /refusing to resume: .*global_step_2\/extra_state\.json: not valid JSON/,
    ),
    setup: (c) => {
      Deno.mkdirSync(`${c.dir}/ckpt/global_step_2`, { recursive: true });
      Deno.writeTextFileSync(`${c.dir}/ckpt/global_step_2/extra_state.json`, '{"global_step": 2,');
    },
  },
  data("data with zero digits", ["--digits=0"], /--digits|digits/),
  data("data with an unknown operator", ["--ops=+,%"], /%/),
  data("data with an unknown flag", ["--size=10"], /--size/),
  data(
    "data with a size that is not a number",
    ["--train_size=many"],
    /train_size.*many|many.*train_size/,
  ),
  data(
    "data asking for more problems than exist",
    ["--digits=1", "--train_size=5000"],
    /distinct problems/,
  ),
  data("data with a ratio above one", ["--plain_ratio=2"], /plain_ratio/),
  data("data with an unknown task", ["--task=chess"], /--task.*chess/),
  data(
    "data with a flag of another task",
    ["--task=calc_tool", "--plain_ratio=0.5"],
    /--plain_ratio does not apply to --task calc_tool/,
  ),
  {
    name: "config path given to the data task",
    task: "data",
    args: () => ["configs/ppo_trainer.yaml"],
    expect: () => new RegExp(lit("configs/ppo_trainer.yaml")),
  },
];
