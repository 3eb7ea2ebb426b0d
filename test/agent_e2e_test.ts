/**
 * The agent loop end to end on the tiny model: one GRPO step with multi_turn.enable and the
 * calculator from a tool YAML. A random tiny model does not write tool calls, so the first turn of
 * one sample per generation is replaced by a scripted call; every later turn is the model's own.
 */
import assert from "node:assert/strict";
import { initGpu } from "../src/gpu/mod.ts";
import { loadConfig } from "../src/config/mod.ts";
import { CHAR_ALPHABET, floatTensor, writeModelFolder } from "../src/io/mod.ts";
import { charTokenizerFiles } from "../src/io/mod.ts";
import { tinyModelConfig, tinyWeights, weightShapes } from "../src/nn/mod.ts";
import { generateArithmetic, writeParquet } from "../src/data/mod.ts";
import { runAgentLoop } from "../src/rollout/mod.ts";
import { fit, setupTrainer, tokenizerFromFiles } from "../src/trainer/mod.ts";
import type { TurnRolloutFn } from "../src/trainer/mod.ts";
import type { Logger } from "../src/tracking/mod.ts";

const TEMPLATE = "{%- if tools %}{{- '<|system|>tools:' }}" +
  "{%- for t in tools %}{{- ' ' + t.function.name }}{%- endfor %}{{- eos_token }}{%- endif %}" +
  "{%- for m in messages %}{{- '<|' + m.role + '|>' + m.content + eos_token }}{%- endfor %}" +
  "{%- if add_generation_prompt %}{{- '<|assistant|>' }}{%- endif %}";
const CALL = '<tool_call>{"name": "calculator", "arguments": {"expression": "2+3"}}</tool_call>';

async function makeRun(dir: string) {
  const files = charTokenizerFiles({ alphabet: CHAR_ALPHABET + '{}"[]' });
  const texts = {
    "tokenizer.json": JSON.stringify(files.tokenizerJson),
    "tokenizer_config.json": JSON.stringify({ ...files.tokenizerConfig, chat_template: TEMPLATE }),
  };
  const tok = tokenizerFromFiles(texts, "agent tokenizer");
  const config = tinyModelConfig({
    vocabSize: tok.vocabSize,
    eosTokenId: tok.eosTokenId,
    maxPositionEmbeddings: 256,
  });
  const shapes = weightShapes(config);
  const tensors = new Map(
    [...tinyWeights(config, { seed: 3 })].map(([k, v]) => [k, floatTensor(shapes.get(k)!, v)]),
  );
  await writeModelFolder(`${dir}/model`, { config, tensors, tokenizerFiles: texts });
  await writeParquet(`${dir}/train.parquet`, {
    rows: generateArithmetic({ count: 4, digits: 1, seed: 1 }),
  });
  await writeParquet(`${dir}/val.parquet`, {
    rows: generateArithmetic({ count: 2, digits: 1, seed: 2, split: "val" }),
  });
  Deno.writeTextFileSync(
    `${dir}/tools.yaml`,
    "tools:\n  - class_name: calculator\n    config: {type: native}\n",
  );
  return {
    tok,
    overrides: [
      `data.train_files=${dir}/train.parquet`,
      `data.val_files=${dir}/val.parquet`,
      "data.max_prompt_length=64",
      "data.max_response_length=128",
      "data.train_batch_size=2",
      `actor_rollout_ref.model.path=${dir}/model`,
      "actor_rollout_ref.actor.ppo_mini_batch_size=2",
      "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
      "actor_rollout_ref.rollout.n=2",
      "actor_rollout_ref.rollout.multi_turn.enable=true",
      `actor_rollout_ref.rollout.multi_turn.tool_config_path=${dir}/tools.yaml`,
      "algorithm.adv_estimator=grpo",
      "trainer.val_before_train=false",
      "trainer.total_training_steps=1",
      "trainer.logger=[file]",
      `trainer.rollout_data_dir=${dir}/rollouts`,
      `trainer.default_local_dir=${dir}/ckpt`,
      `trainer.experiment_name=${dir.split("/").at(-1)}`,
    ],
  };
}

/** Replaces the first turn of sample 0 of each generation with the scripted call. */
function forcing(
  turnRollout: TurnRolloutFn,
  tok: ReturnType<typeof tokenizerFromFiles>,
): TurnRolloutFn {
  return (o, use) =>
    turnRollout(o, (turns) =>
      use((req) => {
        if (req.sample !== 0 || req.turn !== 1 || req.maxTokens < CALL.length + 1) {
          return turns(req);
        }
        const ids = [...tok.encode(CALL, { addSpecialTokens: false }), tok.eosTokenId];
        return Promise.resolve({ tokens: ids, logProbs: ids.map(() => 0) });
      }));
}

Deno.test({
  name: "GRPO step with multi_turn.enable: the real loop, a tool call, masks, metrics and dumps",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await initGpu();
    const dir = Deno.makeTempDirSync({ prefix: "webrl_agent_" });
    const run = await makeRun(dir);
    const cfg = loadConfig("ppo_trainer", { overrides: run.overrides });
    const parts = await setupTrainer(cfg, { print: () => {} });
    parts.turnRollout = forcing(parts.turnRollout!, run.tok);
    let m: Record<string, number> = {};
    parts.tracking = { log: (_s, x) => void (m = { ...m, ...x }), close() {} } as Logger;
    const res = await fit(parts);
    assert.equal(res.globalStep, 1);
    assert.equal(m["tool_calls/calculator/count"], 1);
    assert.equal(m["tool_calls/calculator/errors"], 0);
    assert.equal(m["num_turns/max"], 4);
    assert.ok(m["num_turns/min"] >= 2 && m["num_turns/mean"] > m["num_turns/min"]);
    for (const k of ["actor/pg_loss", "actor/grad_norm", "critic/advantages/mean"]) {
      assert.ok(Number.isFinite(m[k]), `${k} = ${m[k]}`);
    }
    const rows = Deno.readTextFileSync(`${dir}/rollouts/1.jsonl`).trim().split("\n")
      .map((l) => JSON.parse(l));
    const called = rows.filter((r) => r.messages.some((x: { role: string }) => x.role === "tool"));
    assert.equal(called.length, 1);
    assert.deepEqual(called[0].messages.map((x: { role: string }) => x.role).slice(1), [
      "assistant",
      "tool",
      "assistant",
    ]);
    assert.equal(called[0].messages[2].content, "5");

    // The same engine and loop, recording what the engine sampled: the trajectory's mask is 1
    // exactly on those tokens, in order.
    const sampled: number[][] = [[], []];
    const samples = [0, 1].map(() => ({ messages: [{ role: "user", content: "what is 2+3?" }] }));
    const sampling = { temperature: 1, topK: 0, topP: 1, doSample: true, seed: 1 };
    const { trajectories } = await parts.turnRollout!(
      { ...sampling, conversations: 2, longest: 64 + 128 },
      (turns) =>
        runAgentLoop(
          samples,
          async (req) => {
            const out = await turns(req);
            // Sample 0's first turn is the scripted call, every other turn the engine's.
            sampled[req.sample].push(...Array.from(out.tokens));
            return out;
          },
          {
            tokenizer: parts.tokenizer,
            tools: parts.tools!,
            format: "hermes",
            maxAssistantTurns: 2,
            maxUserTurns: null,
            maxParallelCalls: 1,
            maxToolResponseLength: 256,
            toolResponseTruncateSide: "middle",
            sanityCheck: "strict",
            responseLength: 128,
            maxPromptLength: 64,
            eosTokenIds: [parts.tokenizer.eosTokenId],
          },
        ),
    );
    trajectories.forEach((t, k) => {
      const policy = t.responseIds.filter((_, i) => t.responseMask[i] === 1);
      assert.deepEqual(policy, sampled[k].slice(0, policy.length), `sample ${k}`);
      assert.equal(policy.length, Math.min(sampled[k].length, t.responseIds.length));
    });
    assert.ok(trajectories[0].responseMask.includes(0), "sample 0 has tool tokens");
    for (const tool of parts.tools ?? []) tool.close?.();
    Deno.removeSync(dir, { recursive: true });
  },
});
