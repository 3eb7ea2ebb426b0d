/**
 * configs/tasks/search_r1.yaml end to end on the synthetic knowledge base (data/search): two GRPO
 * steps with verl's search tool (BM25 over data/search/corpus.jsonl) and Search-R1's exact-match
 * reward. The tiny model was never shown a search call, so each sample's first turn is replaced
 * by a call searching its question; every later turn is the model's own.
 */
import assert from "node:assert/strict";
import { initGpu } from "../src/gpu/mod.ts";
import { loadConfig } from "../src/config/mod.ts";
import { fit, setupTrainer, type TurnRolloutFn } from "../src/trainer/mod.ts";
import type { Tokenizer } from "../src/io/mod.ts";
import type { Logger } from "../src/tracking/mod.ts";

const ROOT = new URL("..", import.meta.url).pathname;

/** The first turn of every sample becomes `search(query_list=[its question])`. */
function searching(turnRollout: TurnRolloutFn, tok: Tokenizer): TurnRolloutFn {
  return (o, use) =>
    turnRollout(o, (turns) =>
      use((req) => {
        if (req.turn !== 1) return turns(req);
        const question = /question: ([^<]*)<eos>/.exec(tok.decode(req.ids))![1];
        const call = '<tool_call>{"name": "search", "arguments": {"query_list": ["' + question +
          '"]}}</tool_call>';
        const ids = [...tok.encode(call, { addSpecialTokens: false }), tok.eosTokenId];
        return Promise.resolve({ tokens: ids.slice(0, req.maxTokens) });
      }));
}

Deno.test({
  name: "search_r1.yaml: two GRPO steps search the synthetic knowledge base",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await initGpu();
    const dir = Deno.makeTempDirSync({ prefix: "webrl_search_" });
    try {
      const cfg = loadConfig("ppo_trainer", {
        files: [`${ROOT}configs/tasks/search_r1.yaml`],
        overrides: [
          `data.train_files=${ROOT}data/search/train.parquet`,
          `data.val_files=${ROOT}data/search/val.parquet`,
          `actor_rollout_ref.model.path=${ROOT}assets/tiny_calc`,
          `actor_rollout_ref.rollout.multi_turn.tool_config_path=${ROOT}configs/tasks/search_tools.yaml`,
          "data.max_response_length=128",
          "data.train_batch_size=2",
          "actor_rollout_ref.actor.ppo_mini_batch_size=2",
          "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
          "actor_rollout_ref.rollout.n=2",
          "actor_rollout_ref.rollout.multi_turn.max_tool_response_length=60",
          "trainer.val_before_train=false",
          "trainer.test_freq=-1",
          "trainer.total_training_steps=2",
          "trainer.logger=[]",
          "trainer.log_val_generations=0",
          `trainer.rollout_data_dir=${dir}/rollouts`,
          `trainer.default_local_dir=${dir}/ckpt`,
        ],
      });
      // The tool YAML names the corpus relative to the repository root.
      const cwd = Deno.cwd();
      Deno.chdir(ROOT);
      const parts = await setupTrainer(cfg, { print: () => {} }).finally(() => Deno.chdir(cwd));
      parts.turnRollout = searching(parts.turnRollout!, parts.tokenizer);
      const steps: Record<string, number>[] = [];
      parts.tracking = { log: (_s, m) => void steps.push(m), close() {} } as Logger;
      const res = await fit(parts);
      assert.equal(res.globalStep, 2);
      const trained = steps.filter((m) => "tool_calls/search/count" in m);
      assert.equal(trained.length, 2);
      for (const m of trained) {
        assert.equal(m["tool_calls/search/count"], 4);
        assert.equal(m["tool_calls/search/errors"], 0);
        assert.ok(Number.isFinite(m["actor/pg_loss"]));
      }
      const rows = Deno.readTextFileSync(`${dir}/rollouts/1.jsonl`).trim().split("\n")
        .map((l) => JSON.parse(l));
      for (const r of rows) {
        const msgs = r.messages as { role: string; content: string }[];
        assert.equal(r.data_source, "searchR1_synth");
        assert.equal(msgs[2].role, "tool");
        // The passage found is the asked-about person's (made-up names: only the corpus has them).
        const who = /(?:does|of) (\S+ \S+?)(?: live| keep| like|\?)/.exec(msgs[0].content)![1];
        assert.ok(msgs[2].content.includes(who), `${who}: ${msgs[2].content}`);
      }
      for (const tool of parts.tools ?? []) tool.close?.();
    } finally {
      Deno.removeSync(dir, { recursive: true });
    }
  },
});
