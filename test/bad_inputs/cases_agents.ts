/** Bad inputs to the agent loop's interactions: broken interaction YAML, rows naming none. */
import { type BadInput, lit } from "./harness.ts";

const YAML = "i.yaml";

const train = (
  name: string,
  yaml: string | null,
  overrides: string[],
  expect: (dir: string) => RegExp,
): BadInput => ({
  name,
  task: "train",
  setup: (c) => {
    if (yaml !== null) Deno.writeTextFileSync(`${c.dir}/${YAML}`, yaml);
  },
  args: (c) => [
    ...c.run,
    `trainer.default_local_dir=${c.dir}/ckpt`,
    "actor_rollout_ref.rollout.multi_turn.enable=true",
    `actor_rollout_ref.rollout.multi_turn.interaction_config_path=${c.dir}/${YAML}`,
    ...overrides,
  ],
  expect: (c) => expect(c.dir),
});

const gen = (name: string, yaml: string, expect: (dir: string) => RegExp): BadInput => ({
  name,
  task: "generate",
  setup: (c) => Deno.writeTextFileSync(`${c.dir}/${YAML}`, yaml),
  args: (c) => [
    `data.path=${c.val}`,
    `model.path=${c.model}`,
    `data.output_path=${c.dir}/out.parquet`,
    "rollout.response_length=4",
    "rollout.multi_turn.enable=true",
    `rollout.multi_turn.interaction_config_path=${c.dir}/${YAML}`,
  ],
  expect: (c) => expect(c.dir),
});

const GSM8K = "interaction:\n  - name: gsm8k\n    class_name: gsm8k\n";

export const AGENT_CASES: BadInput[] = [
  train(
    "interaction YAML with an unknown class",
    "interaction:\n  - class_name: verl.interactions.nope.NopeInteraction\n",
    [],
    (d) =>
      new RegExp(`${lit(d)}/i\\.yaml: interaction\\[0\\]\\.class_name=verl\\.interactions\\.nope`),
  ),
  train(
    "interaction YAML without an interaction list",
    "tools: []\n",
    [],
    (d) => new RegExp(`${lit(d)}/i\\.yaml: expected a top-level "interaction:" list`),
  ),
  train(
    "interaction YAML with two interactions of one name",
    GSM8K + "  - name: gsm8k\n    class_name: gsm8k\n",
    [],
    () => /interaction\[1\]\.name=gsm8k: a second interaction/,
  ),
  train(
    "interaction YAML that does not parse",
    "interaction: [\n",
    [],
    () => /multi_turn\.interaction_config_path=.*i\.yaml/,
  ),
  train("missing interaction YAML", null, [], () => /interaction_config_path/),
  train(
    "user interaction module that does not exist",
    "interaction:\n  - class_name: ./coach.ts\n",
    [],
    () => /interaction\[0\]\.class_name=.*coach\.ts/,
  ),
  train(
    "rows without interaction_kwargs while interactions are configured",
    GSM8K,
    [],
    () => /train\.parquet, row 0: this row has no interaction_kwargs/,
  ),
  train(
    "num_repeat_rollouts (CollabLLM only)",
    GSM8K,
    ["actor_rollout_ref.rollout.multi_turn.num_repeat_rollouts=2"],
    () => /num_repeat_rollouts.*CollabLLM/,
  ),
  {
    name: "interaction YAML for a run without the agent loop",
    task: "train",
    setup: (c) => Deno.writeTextFileSync(`${c.dir}/${YAML}`, GSM8K),
    args: (c) => [
      ...c.run,
      `trainer.default_local_dir=${c.dir}/ckpt`,
      `actor_rollout_ref.rollout.multi_turn.interaction_config_path=${c.dir}/${YAML}`,
    ],
    expect: () =>
      /multi_turn\.interaction_config_path=.*i\.yaml is set, but no prompt runs the agent loop/,
  },
  gen(
    "generate multi-turn with an interaction YAML of an unknown class",
    "interaction:\n  - class_name: Nope\n",
    (d) => new RegExp(`${lit(d)}/i\\.yaml: interaction\\[0\\]\\.class_name=Nope: not a built-in`),
  ),
  gen(
    "generate multi-turn from rows naming no interaction",
    GSM8K,
    () => /val\.parquet, row 0: this row has no interaction_kwargs/,
  ),
];
