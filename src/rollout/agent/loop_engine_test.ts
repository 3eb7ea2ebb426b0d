import assert from "node:assert/strict";
import { gpuTest } from "../../testing/mod.ts";
import { engineTurns } from "../engine_batch.ts";
import { runAgentLoop, type TurnGenerator } from "./loop.ts";
import { agentEngine, agentModel, agentTokenizer, loopOptions } from "./test_agent.ts";
import { StatefulTool, type ToolResult } from "./types.ts";

/**
 * A tool that answers "ok"; for `who: "1"` only once `gate` opens (or after 20 s), noting
 * whether the gate opened and when the call ended.
 */
class GateTool extends StatefulTool<null> {
  readonly ended: { sample: string; at: number; opened: boolean }[] = [];
  open!: () => void;
  readonly #gate = new Promise<boolean>((ok) => (this.open = () => ok(true)));
  constructor() {
    super({
      type: "function",
      function: {
        name: "sleep",
        parameters: {
          type: "object",
          properties: { who: { type: "string" } },
          required: ["who"],
        },
      },
    });
  }
  protected initial() {
    return null;
  }
  protected async run(_: null, args: Record<string, unknown>): Promise<ToolResult> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const opened = args.who !== "1" || await Promise.race([
      this.#gate,
      new Promise<boolean>((ok) => (timer = setTimeout(() => ok(false), 20_000))),
    ]);
    clearTimeout(timer);
    this.ended.push({ sample: String(args.who), at: performance.now(), opened });
    return { text: "ok" };
  }
}

const call = (who: number) =>
  `<tool_call>{"name": "sleep", "arguments": {"who": "${who}"}}</tool_call>`;

gpuTest(
  "agent loop through the engine: conversations end at different turns, a slow tool holds no other",
  async () => {
    const tok = agentTokenizer();
    const model = agentModel(tok);
    const engine = agentEngine(model, tok, { numBlocks: 128 });
    const sleep = new GateTool();
    // Sample k's first k turns are scripted calls (sample 1's returns only once samples 0 and 2
    // have had their last turn: were it holding them, it would time out); its next turn is the
    // model's own, 6 tokens at most: a random model writes no call, so it ends there.
    const scripted = [[], [call(1)], [call(2), call(2)]];
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
      if (doneAt[0] !== undefined && doneAt[2] !== undefined) sleep.open();
      return out;
    };
    const { trajectories, metrics } = await runAgentLoop(
      [0, 1, 2].map((k) => ({ messages: [{ role: "user", content: `q${k} sleep?` }] })),
      turns,
      loopOptions(tok, { tools: [sleep], sanityCheck: "disable" }),
    );
    // Assistant turns + tool turns + 1.
    assert.deepEqual(trajectories.map((t) => t.numTurns), [2, 4, 6]);
    assert.equal(metrics["tool_calls/sleep/count"], 3);
    // Sample 0's and sample 2's engine turns ended while sample 1's tool was still sleeping.
    const slow = sleep.ended.find((e) => e.sample === "1")!;
    assert.ok(slow.opened, "sample 1's tool call held the other conversations");
    assert.ok(doneAt[0] <= slow.at && doneAt[2] <= slow.at && doneAt[1] > slow.at, `${doneAt}`);
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
