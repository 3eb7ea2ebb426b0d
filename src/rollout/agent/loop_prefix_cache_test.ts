import assert from "node:assert/strict";
import type { CausalLM } from "../../nn/mod.ts";
import { gpuTest } from "../../testing/mod.ts";
import { engineTurns, prefixCacheMetrics } from "../engine_batch.ts";
import { Gsm8kInteraction } from "./interaction.ts";
import { runAgentLoop, type TurnGenerator } from "./loop.ts";
import { agentEngine, agentModel, agentTokenizer, loopOptions } from "./test_agent.ts";

const BS = 8;

/**
 * One conversation of three engine turns (a simulated user that is never satisfied answers the
 * first two) through an engine with or without the prefix cache; its trajectory, and per turn
 * its context and answer lengths and the tokens prefilled and held from the cache for it.
 */
async function converse(model: CausalLM, prefixCaching: boolean) {
  const tok = agentTokenizer();
  const engine = agentEngine(model, tok, { blockSize: BS, prefixCaching });
  const inner = engineTurns(engine, { seed: 3, returnLogProbs: true });
  const turns: { ids: number[]; out: number; prefilled: number; cached: number }[] = [];
  const gen: TurnGenerator = async (req) => {
    const before = engine.stats();
    const r = await inner({ ...req, maxTokens: Math.min(req.maxTokens, 7) });
    const after = engine.stats();
    turns.push({
      ids: req.ids,
      out: r.tokens.length,
      prefilled: after.prefillTokens - before.prefillTokens,
      cached: after.cachedTokens - before.cachedTokens,
    });
    return r;
  };
  const options = loopOptions(tok, {
    interactions: [new Gsm8kInteraction("gsm8k", { incorrect_feedback: "no, again" })],
    maxUserTurns: 2,
    sanityCheck: "disable",
    responseLength: 120,
    log: () => {},
  });
  const sample = {
    messages: [{ role: "user" as const, content: "q0 what is 2+3? answer in one line" }],
    interactionKwargs: { name: "gsm8k", ground_truth: "never" },
  };
  const { trajectories } = await runAgentLoop([sample], gen, options);
  const metrics = prefixCacheMetrics(engine);
  await engine.close();
  return { trajectory: trajectories[0], turns, metrics };
}

gpuTest(
  "agent loop + prefix cache: a later turn prefills only what the last one did not hold",
  async () => {
    const model = agentModel(agentTokenizer());
    const off = await converse(model, false);
    const on = await converse(model, true);
    assert.deepEqual(on.trajectory.responseIds, off.trajectory.responseIds);
    assert.deepEqual(on.trajectory.responseMask, off.trajectory.responseMask);
    assert.equal(on.turns.length, 3, "three assistant turns");
    assert.deepEqual(off.metrics, {}, "no hit rate without the cache");
    const cached = on.turns.reduce((a, t) => a + t.cached, 0);
    const all = on.turns.reduce((a, t) => a + t.ids.length, 0);
    assert.ok(cached > 0);
    assert.deepEqual(on.metrics, { "rollout/prefix_cache_hit_rate": cached / all });
    on.turns.forEach((t, i) => {
      assert.equal(off.turns[i].cached, 0);
      assert.equal(off.turns[i].prefilled, t.ids.length);
      assert.equal(t.cached + t.prefilled, t.ids.length, `turn ${i + 1}`);
      if (i === 0) return assert.equal(t.cached, 0);
      // The last turn's context and answer lead this one's; the answer's last token had no keys.
      const last = on.turns[i - 1], held = last.ids.length + last.out - 1;
      assert.ok(t.ids.length > held + 1, `turn ${i + 1} extends turn ${i}`);
      // So it prefills its new tokens plus the part of a block the last turn left unfilled.
      assert.equal(t.cached, Math.floor(held / BS) * BS, `turn ${i + 1}`);
    });
    model.dispose();
  },
);
