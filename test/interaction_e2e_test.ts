/**
 * GRPO with verl's gsm8k feedback interaction end to end, on the shipped tiny arithmetic
 * checkpoint (assets/tiny_arith, which answers `13` or `#### 13`): a wrong or unformatted answer
 * gets a `user` reply asking for another try, a right one ends the conversation. The reward is
 * the interaction's last turn score, read from extra_info.turn_scores by a user reward function.
 */
import assert from "node:assert/strict";
import { initGpu } from "../src/gpu/mod.ts";
import { loadConfig } from "../src/config/mod.ts";
import { generateArithmetic, renderChat, writeParquet } from "../src/data/mod.ts";
import { runAgentLoop } from "../src/rollout/mod.ts";
import {
  agentLoopOptions,
  agentSample,
  closeAgentEnv,
  fit,
  setupTrainer,
} from "../src/trainer/mod.ts";
import type { Logger } from "../src/tracking/mod.ts";

const MODEL = new URL("../assets/tiny_arith", import.meta.url).pathname;
const INTERACTION = `interaction:
  - name: gsm8k
    class_name: verl.interactions.gsm8k_interaction.Gsm8kInteraction
    config: {incorrect_feedback: "wrong, try again", correct_feedback: "right"}
`;
const REWARD = `export function compute_score(dataSource, solution, groundTruth, extraInfo) {
  const t = extraInfo.turn_scores;
  return { score: t.length ? t[t.length - 1] : 0, user_turns: t.length };
}
`;

async function makeRun(dir: string) {
  const rows = (count: number, seed: number, split: string) =>
    generateArithmetic({ count, digits: 1, operands: 4, seed, split }).map((r) => ({
      ...r,
      interaction_kwargs: {
        name: "gsm8k",
        ground_truth: (r.reward_model as { ground_truth: string }).ground_truth,
      },
    }));
  await writeParquet(`${dir}/train.parquet`, { rows: rows(4, 1, "train") });
  await writeParquet(`${dir}/val.parquet`, { rows: rows(4, 2, "val") });
  Deno.writeTextFileSync(`${dir}/interaction.yaml`, INTERACTION);
  Deno.writeTextFileSync(`${dir}/reward.ts`, REWARD);
  return [
    `data.train_files=${dir}/train.parquet`,
    `data.val_files=${dir}/val.parquet`,
    "data.max_prompt_length=16",
    "data.max_response_length=48",
    "data.train_batch_size=2",
    `actor_rollout_ref.model.path=${MODEL}`,
    "actor_rollout_ref.actor.ppo_mini_batch_size=2",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8",
    "actor_rollout_ref.actor.optim.lr=1e-4",
    "actor_rollout_ref.rollout.n=4",
    "actor_rollout_ref.rollout.multi_turn.enable=true",
    `actor_rollout_ref.rollout.multi_turn.interaction_config_path=${dir}/interaction.yaml`,
    "actor_rollout_ref.rollout.multi_turn.max_user_turns=2",
    `custom_reward_function.path=${dir}/reward.ts`,
    "algorithm.adv_estimator=grpo",
    "trainer.val_before_train=true",
    "trainer.test_freq=2",
    "trainer.total_training_steps=2",
    "trainer.logger=[file]",
    `trainer.rollout_data_dir=${dir}/rollouts`,
    `trainer.validation_data_dir=${dir}/val_dumps`,
    `trainer.default_local_dir=${dir}/ckpt`,
    `trainer.experiment_name=${dir.split("/").at(-1)}`,
  ];
}

type Message = { role: string; content: string };

Deno.test({
  name: "GRPO with the gsm8k interaction: user turns masked, turn scores as reward, metrics, dumps",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await initGpu();
    const dir = Deno.makeTempDirSync({ prefix: "webrl_interaction_" });
    const cfg = loadConfig("ppo_trainer", { overrides: await makeRun(dir) });
    const parts = await setupTrainer(cfg, { print: () => {} });
    const steps: Record<string, number>[] = [];
    parts.tracking = { log: (_s, x) => void steps.push(x), close() {} } as Logger;
    const res = await fit(parts);
    assert.equal(res.globalStep, 2);
    const train = steps.filter((m) => "actor/pg_loss" in m);
    assert.equal(train.length, 2);
    for (const m of train) {
      for (const k of ["actor/pg_loss", "actor/grad_norm", "critic/score/mean", "num_turns/mean"]) {
        assert.ok(Number.isFinite(m[k]), `${k} = ${m[k]}`);
      }
      assert.ok(m["interaction/user_turns/mean"] >= 1, "every conversation gets a reply");
      assert.ok(m["interaction/user_turns/max"] <= 2, "max_user_turns=2");
      assert.equal(m["interaction/errors"], 0);
      assert.ok(m["num_turns/min"] >= 3);
    }
    // Dumps hold whole conversations; the score is the last user reply's verdict.
    for (const file of [`${dir}/rollouts/1.jsonl`, `${dir}/val_dumps/0.jsonl`]) {
      const rows = Deno.readTextFileSync(file).trim().split("\n").map((l) => JSON.parse(l));
      for (const r of rows) {
        const msgs = r.messages as Message[];
        assert.deepEqual(
          msgs.slice(1).map((m) => m.role),
          msgs.slice(1).map((_, i) => i % 2 ? "user" : "assistant"),
        );
        const replies = msgs.filter((m, i) => i > 0 && m.role === "user").map((m) => m.content);
        assert.ok(
          replies.length >= 1 && replies.slice(0, -1).every((c) => c === "wrong, try again"),
        );
        assert.equal(r.score, replies.at(-1) === "right" ? 1 : 0, JSON.stringify(msgs));
        assert.equal(r.turn_scores.length, replies.length);
        assert.equal(r.num_turns, msgs.length);
      }
    }
    // The trained policy through the same loop: tokens with mask 0 are exactly the user turns.
    const mt = cfg.actor_rollout_ref.rollout.multi_turn;
    const samples = parts.valItems.map((it) => agentSample({ ...it, messages: it.rawPrompt! }));
    const sampling = { temperature: 1, topK: 0, topP: 1, doSample: true, seed: 1 };
    const { trajectories } = await parts.turnRollout!(
      { ...sampling, conversations: samples.length, longest: 16 + 48 },
      (turns) =>
        runAgentLoop(
          samples,
          turns,
          agentLoopOptions(mt, {
            tokenizer: parts.tokenizer,
            env: parts,
            responseLength: 48,
            maxPromptLength: 16,
            eosTokenIds: [parts.tokenizer.eosTokenId],
          }),
        ),
    );
    const tok = parts.tokenizer;
    for (const t of trajectories) {
      const users = t.messages.slice(1).filter((m) => m.role === "user");
      // A last reply past the budget is cut with the response (as verl).
      const masked = tok.decode(t.responseIds.filter((_, i) => t.responseMask[i] === 0));
      const rendered = users.map((u) => renderChat([u], tok, { addGenerationPrompt: true }));
      assert.ok(rendered.join("").startsWith(masked), `${masked} / ${rendered}`);
      assert.ok(masked.startsWith(rendered.slice(0, -1).join("")));
      const full = renderChat(t.messages, tok, {
        addGenerationPrompt: t.messages.at(-1)!.role === "user",
      });
      assert.ok(full.startsWith(tok.decode([...t.promptIds, ...t.responseIds])));
      if (t.responseIds.length < 48) {
        assert.equal(tok.decode([...t.promptIds, ...t.responseIds]), full);
      }
      assert.equal(t.turnScores.length, users.length);
    }
    closeAgentEnv(parts);
    parts.reward.close();
    Deno.removeSync(dir, { recursive: true });
  },
});

Deno.test({
  name: "interactions: a row naming no configured interaction fails at setup, naming file and row",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await initGpu();
    const dir = Deno.makeTempDirSync({ prefix: "webrl_interaction_rows_" });
    const overrides = await makeRun(dir);
    const rows = generateArithmetic({ count: 3, digits: 1, operands: 4, seed: 9, split: "val" })
      .map((r, i) => ({ ...r, interaction_kwargs: { name: i === 2 ? "tutor" : "gsm8k" } }));
    await writeParquet(`${dir}/val.parquet`, { rows });
    const cfg = loadConfig("ppo_trainer", { overrides });
    await assert.rejects(
      () => setupTrainer(cfg, { print: () => {} }),
      new RegExp(
        `${dir}/val\\.parquet, row 2: this row names interaction_kwargs\\.name="tutor", not an ` +
          "interaction of multi_turn\\.interaction_config_path \\(gsm8k\\)",
      ),
    );
    Deno.removeSync(dir, { recursive: true });
  },
});
