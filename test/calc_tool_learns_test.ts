/**
 * The calculator demonstration (configs/tasks/calc_tool.yaml), shortened: from the shipped
 * multi-turn SFT checkpoint (assets/tiny_calc), which greedily answers from its head, GRPO with
 * the calculator tool raises held-out greedy accuracy. The margin is about half the gain measured
 * for the same shortened run (README, "The calculator demonstration").
 */
import assert from "node:assert/strict";
import { initGpu } from "../src/gpu/mod.ts";
import { loadConfig } from "../src/config/mod.ts";
import { fit, setupTrainer } from "../src/trainer/mod.ts";
import type { Logger } from "../src/tracking/mod.ts";

const ROOT = new URL("..", import.meta.url).pathname;

Deno.test({
  name: "calc_tool: GRPO with the calculator raises greedy accuracy within a short run",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await initGpu();
    const dir = Deno.makeTempDirSync({ prefix: "webrl_calc_" });
    try {
      const cfg = loadConfig("ppo_trainer", {
        files: [`${ROOT}configs/tasks/calc_tool.yaml`],
        overrides: [
          `data.train_files=${ROOT}data/calc_tool/train.parquet`,
          `data.val_files=${ROOT}data/calc_tool/val.parquet`,
          `actor_rollout_ref.model.path=${ROOT}assets/tiny_calc`,
          `actor_rollout_ref.rollout.multi_turn.tool_config_path=${ROOT}configs/tasks/calc_tool_tools.yaml`,
          "trainer.total_training_steps=8",
          "trainer.test_freq=8",
          "trainer.logger=[]",
          "trainer.log_val_generations=0",
          `trainer.default_local_dir=${dir}`,
        ],
      });
      const parts = await setupTrainer(cfg, { print: () => {} });
      const val: number[] = [];
      const turns: number[] = [];
      const sink: Logger = {
        log: (_s, m) => {
          const k = Object.keys(m).find((k) => k.startsWith("val-core/"));
          if (k) val.push(m[k]);
          if ("num_turns/mean" in m) turns.push(m["num_turns/mean"]);
        },
        close() {},
      };
      parts.tracking = sink;
      await fit(parts);
      assert.equal(val.length, 2, `validation ran ${val.length} times`);
      const [before, after] = val;
      const GAIN = 0.25;
      assert.ok(after >= before + GAIN, `accuracy ${before} -> ${after}: less than +${GAIN}`);
      // The gain comes with the tool: conversations grow from one turn towards call, reply, answer.
      assert.ok(turns.at(-1)! > turns[0], `num_turns/mean ${turns[0]} -> ${turns.at(-1)}`);
    } finally {
      Deno.removeSync(dir, { recursive: true });
    }
  },
});
