/**
 * GRPO with verl's gsm8k feedback interaction on the shipped tiny arithmetic checkpoint: the
 * embedded default's data (data/arithmetic), each row given `interaction_kwargs`, and a reward
 * that reads the interaction's turn scores (1 for `#### <answer>` right on the first try, 0.5 when
 * right after feedback, else 0). Prints the validation score and the interaction metrics.
 *
 *   deno run -A test/interaction_demo.ts [steps=40] [key=value ...]
 */
import { readParquet, writeParquet } from "../src/data/mod.ts";
import { train } from "../src/cli/mod.ts";

const ROOT = new URL("..", import.meta.url).pathname;
const steps = Number(Deno.args.find((a) => /^\d+$/.test(a)) ?? 40);
const extra = Deno.args.filter((a) => a.includes("="));
const dir = Deno.makeTempDirSync({ prefix: "webrl_interaction_demo_" });

for (const split of ["train", "val"]) {
  const rows = await readParquet(`${ROOT}data/arithmetic/${split}.parquet`);
  await writeParquet(`${dir}/${split}.parquet`, {
    rows: rows.map((r) => ({
      ...r,
      interaction_kwargs: {
        name: "gsm8k",
        ground_truth: (r.reward_model as { ground_truth: string }).ground_truth,
      },
    })),
  });
}
Deno.writeTextFileSync(
  `${dir}/interaction.yaml`,
  `interaction:
  - name: gsm8k
    class_name: verl.interactions.gsm8k_interaction.Gsm8kInteraction
    config: {incorrect_feedback: "wrong, try again", correct_feedback: "right"}
`,
);
Deno.writeTextFileSync(
  `${dir}/reward.ts`,
  `export function compute_score(dataSource, solution, groundTruth, extraInfo) {
  const t = extraInfo.turn_scores;
  const score = t[0] === 1 ? 1 : t.at(-1) === 1 ? 0.5 : 0;
  return { score, first_try: t[0] === 1 ? 1 : 0, tries: t.length };
}
`,
);
await train([
  `${ROOT}configs/arithmetic_grpo.yaml`,
  `data.train_files=${dir}/train.parquet`,
  `data.val_files=${dir}/val.parquet`,
  "data.max_response_length=48",
  "actor_rollout_ref.rollout.multi_turn.enable=true",
  `actor_rollout_ref.rollout.multi_turn.interaction_config_path=${dir}/interaction.yaml`,
  "actor_rollout_ref.rollout.multi_turn.max_user_turns=2",
  `custom_reward_function.path=${dir}/reward.ts`,
  `trainer.total_training_steps=${steps}`,
  `trainer.test_freq=${Math.max(1, Math.floor(steps / 2))}`,
  "trainer.experiment_name=arithmetic_feedback",
  `trainer.default_local_dir=${dir}/ckpt`,
  ...extra,
]);
Deno.removeSync(dir, { recursive: true });
