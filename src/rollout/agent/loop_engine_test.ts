import assert from "node:assert/strict";
import { CausalLM, tinyModelConfig, tinyWeights } from "../../nn/mod.ts";
import { gpuTest } from "../../testing/mod.ts";
import { Engine } from "../engine.ts";
import { engineTurns } from "../engine_batch.ts";
import { type AgentLoopOptions, runAgentLoop, type TurnGenerator } from "./loop.ts";
import { agentTokenizer } from "./test_agent.ts";
import { StatefulTool, type ToolResult } from "./types.ts";

/** A tool that answers "ok" after `ms` milliseconds, and notes when each call ended. */
class SleepTool extends StatefulTool<null> {
  readonly ended: { sample: string; at: number }[] = [];
  constructor() {
    super({
      type: "function",
      function: {
        name: "sleep",
        parameters: {
          type: "object",
          properties: { ms: { type: "integer" }, who: { type: "string" } },
          required: ["ms", "who"],
        },
      },
    });
  }
  protected initial() {
    return null;
  }
  protected async run(_: null, args: Record<string, unknown>): Promise<ToolResult> {
    await new Promise((ok) => setTimeout(ok, Number(args.ms)));
    this.ended.push({ sample: String(args.who), at: performance.now() });
    return { text: "ok" };
  }
}

const call = (ms: number, who: number) =>
  `<tool_call>{"name": "sleep", "arguments": {"ms": ${ms}, "who": "${who}"}}</tool_call>`;

gpuTest(
  "agent loop through the engine: conversations end at different turns, a slow tool holds no other",
  async () => {
    const tok = agentTokenizer();
    const config = tinyModelConfig({
      vocabSize: tok.vocabSize,
      eosTokenId: tok.eosTokenId,
      maxPositionEmbeddings: 512,
    });
    const model = CausalLM.fromTensors(config, tinyWeights(config, { seed: 9, init: "varied" }));
    const engine = new Engine(model, {
      maxSeqs: 4,
      blockSize: 8,
      numBlocks: 128,
      eosTokenIds: [tok.eosTokenId],
      padTokenId: tok.padTokenId,
      sampling: { doSample: false },
    });
    const sleep = new SleepTool();
    // Sample k's first k turns are scripted calls (sample 1's tool takes 400 ms); its next turn
    // is the model's own, 6 tokens at most: a random model writes no call, so it ends there.
    const scripted = [[], [call(400, 1)], [call(1, 2), call(1, 2)]];
    const sampled: number[][] = [[], [], []];
    const doneAt: number[] = [];
    const model_ = engineTurns(engine, { seed: 3, returnLogProbs: true });
    const turns: TurnGenerator = async (req) => {
      const text = scripted[req.sample][req.turn - 1];
      if (text !== undefined) {
        const ids = [...tok.encode(text, { addSpecialTokens: false }), tok.eosTokenId];
        return { tokens: ids.slice(0, req.maxTokens), logProbs: ids.map(() => 0) };
      }
      const out = await model_({ ...req, maxTokens: Math.min(req.maxTokens, 6) });
      sampled[req.sample].push(...Array.from(out.tokens));
      doneAt[req.sample] = performance.now();
      return out;
    };
    const options: AgentLoopOptions = {
      tokenizer: tok,
      tools: [sleep],
      format: "hermes",
      maxAssistantTurns: null,
      maxUserTurns: null,
      maxParallelCalls: 1,
      maxToolResponseLength: 256,
      toolResponseTruncateSide: "middle",
      sanityCheck: "disable",
      responseLength: 200,
      maxPromptLength: 100,
      eosTokenIds: [tok.eosTokenId],
    };
    const { trajectories, metrics } = await runAgentLoop(
      [0, 1, 2].map((k) => ({ messages: [{ role: "user", content: `q${k} sleep?` }] })),
      turns,
      options,
    );
    // Assistant turns + tool turns + 1.
    assert.deepEqual(trajectories.map((t) => t.numTurns), [2, 4, 6]);
    assert.equal(metrics["tool_calls/sleep/count"], 3);
    // Sample 0's and sample 2's engine turns ended while sample 1's tool was still sleeping.
    const slow = sleep.ended.find((e) => e.sample === "1")!.at;
    assert.ok(doneAt[0] < slow && doneAt[2] < slow, `${doneAt} vs ${slow}`);
    assert.ok(doneAt[1] > slow);
    trajectories.forEach((t, k) => {
      assert.equal(t.responseMask.length, t.responseIds.length);
      // The last turn's tokens are the engine's, mask 1, with their log-probs.
      const n = sampled[k].length;
      assert.ok(n > 0 && n <= 6);
      assert.deepEqual(t.responseIds.slice(-n), sampled[k], `sample ${k}`);
      assert.deepEqual(t.responseMask.slice(-n), sampled[k].map(() => 1));
      assert.ok(t.responseLogProbs!.slice(-n).every((x) => x < 0 && Number.isFinite(x)));
      assert.equal(t.messages.filter((m) => m.role === "tool").length, k);
    });
    const st = engine.stats();
    assert.equal(st.prefills, 3, "one engine request per conversation's own turn");
    assert.equal(st.freeBlocks, st.numBlocks);
    await engine.close();
    model.dispose();
  },
);
