import assert from "node:assert/strict";
import { renderChat } from "../../data/mod.ts";
import { CalculatorTool } from "./builtin_tools.ts";
import { type AgentInteraction, Gsm8kInteraction, toReply } from "./interaction.ts";
import { type AgentLoopOptions, type AgentSample, runAgentLoop } from "./loop.ts";
import { agentTokenizer, loopOptions, scriptedEngine } from "./test_agent.ts";

const tok = agentTokenizer();
const calc = new CalculatorTool(CalculatorTool.defaultSchema);
const feedback = { correct_feedback: "right", incorrect_feedback: "wrong, try again" };

const options = (over: Partial<AgentLoopOptions> = {}) =>
  loopOptions(tok, {
    interactions: [new Gsm8kInteraction("gsm8k", feedback)],
    log: () => {},
    ...over,
  });

const sample = (k: number, gt = "5"): AgentSample => ({
  messages: [{ role: "user", content: `q${k} what is 2+3?` }],
  interactionKwargs: { name: "gsm8k", query: "what is 2+3?", ground_truth: gt },
});

Deno.test("gsm8k interaction: wrong answers ask again with 0, the right one ends with 1.0", async () => {
  const g = new Gsm8kInteraction("gsm8k");
  await g.start("a", { name: "gsm8k", ground_truth: "72" });
  const ask = (content: string) => g.generateResponse("a", [{ role: "assistant", content }]);
  assert.deepEqual(await ask("it is 72"), {
    shouldTerminate: false,
    content: Gsm8kInteraction.INCORRECT,
    score: 0,
    extra: {},
  }, "strict: a bare number is not an answer");
  assert.equal((await ask("#### 71")).shouldTerminate, false);
  assert.deepEqual(await ask("so #### 72"), {
    shouldTerminate: true,
    content: Gsm8kInteraction.CORRECT,
    score: 1,
    extra: {},
  });
  assert.equal(await g.calculateScore("a"), 1);
  await g.finalize("a");
  await assert.rejects(() => ask("#### 72"), /no session a/);
});

Deno.test("toReply: verl's tuple or an object; anything else names what is wrong", () => {
  assert.deepEqual(toReply([true, "ok", 0.5, { a: 1 }], "u"), {
    shouldTerminate: true,
    content: "ok",
    score: 0.5,
    extra: { a: 1 },
  });
  assert.deepEqual(toReply({ shouldTerminate: false, response: "more" }, "u"), {
    shouldTerminate: false,
    content: "more",
    score: null,
    extra: {},
  });
  assert.throws(() => toReply("hi", "u"), /u\.generateResponse returned "hi": not a tuple/);
  assert.throws(() => toReply([1, "x"], "u"), /shouldTerminate is not a boolean/);
  assert.throws(() => toReply([false, "x", NaN], "u"), /score is not a finite number/);
});

Deno.test("agent loop + gsm8k interaction: user turns are masked, scored, and end the episode", async () => {
  const scripts = [["#### 4", "#### 5", "never reached"], ["#### 1", "#### 2", "#### 3"]];
  const requests: { sample: number; length: number; turn: number }[] = [];
  const { trajectories: [t0, t1], metrics } = await runAgentLoop(
    [sample(0), sample(1)],
    scriptedEngine(tok, scripts, requests),
    options({ maxUserTurns: 2 }),
  );
  assert.deepEqual(t0.messages.map((m) => [m.role, m.content]).slice(1), [
    ["assistant", "#### 4"],
    ["user", "wrong, try again"],
    ["assistant", "#### 5"],
    ["user", "right"],
  ]);
  assert.deepEqual(t0.turnScores, [0, 1]);
  assert.deepEqual(t0.interaction, { name: "gsm8k", turns: 2, terminated: true, score: 1 });
  assert.equal(t0.numTurns, 5);
  // Policy tokens are exactly the two answers; the rest are the user's (mask 0).
  const enc = (s: string) => [...tok.encode(s, { addSpecialTokens: false }), tok.eosTokenId];
  const policy = t0.responseIds.filter((_, i) => t0.responseMask[i] === 1);
  assert.deepEqual(policy, [...enc("#### 4"), ...enc("#### 5")]);
  const user = tok.decode(t0.responseIds.filter((_, i) => t0.responseMask[i] === 0));
  assert.equal(user, "<|user|>wrong, try again<eos><|assistant|><|user|>right<eos><|assistant|>");
  assert.deepEqual(t0.responseMask.join("").match(/1+|0+/g)!.map((r) => r[0]), [
    "1",
    "0",
    "1",
    "0",
  ]);
  assert.equal(
    tok.decode([...t0.promptIds, ...t0.responseIds]),
    renderChat(t0.messages, tok, { addGenerationPrompt: true }),
  );
  // Sample 1 is never right: max_user_turns=2 stops it after its third answer.
  assert.deepEqual(t1.turnScores, [0, 0]);
  assert.deepEqual(t1.interaction, { name: "gsm8k", turns: 2, terminated: false, score: 0 });
  assert.equal(t1.messages.at(-1)!.content, "#### 3");
  // Turns 1 and 2 of both samples, turn 3 of sample 1 only.
  const perTurn = (t: number) => requests.filter((r) => r.turn === t).map((r) => r.sample).sort();
  assert.deepEqual([perTurn(1), perTurn(2), perTurn(3)], [[0, 1], [0, 1], [1]]);
  assert.equal(metrics["interaction/user_turns/mean"], 2);
  assert.equal(metrics["interaction/terminated"], 0.5);
  assert.equal(metrics["interaction/turn_score/mean"], 0.25);
  assert.equal(metrics["interaction/errors"], 0);
  assert.equal(metrics["num_turns/max"], 6);
  assert.ok(Number.isFinite(metrics["interaction/latency_s/mean"]));
});

Deno.test("agent loop: tool calls come before the interaction; max_user_turns counts both", async () => {
  const call = '<tool_call>{"name": "calculator", "arguments": {"expression": "2+3"}}</tool_call>';
  const run = (over: Partial<AgentLoopOptions>) =>
    runAgentLoop([sample(0)], scriptedEngine(tok, [[call, "#### 5"]]), options(over));
  const { trajectories: [t] } = await run({ tools: [calc] });
  assert.deepEqual(t.messages.map((m) => m.role), [
    "user",
    "assistant",
    "tool",
    "assistant",
    "user",
  ]);
  assert.equal(t.messages[2].content, "5");
  assert.deepEqual(t.turnScores, [1]);
  assert.equal(t.numTurns, 5);
  const capped = (await run({ tools: [calc], maxUserTurns: 1 })).trajectories[0];
  assert.deepEqual(capped.messages.map((m) => m.role), ["user", "assistant", "tool", "assistant"]);
  assert.deepEqual(capped.turnScores, []);
});

Deno.test("agent loop: a user reply past the budget is appended and cut with the response, as verl", async () => {
  const { trajectories: [t] } = await runAgentLoop(
    [sample(0)],
    scriptedEngine(tok, [["#### 4", "#### 5"]]),
    options({ responseLength: 20 }),
  );
  assert.deepEqual(t.messages.map((m) => m.role), ["user", "assistant", "user"]);
  assert.equal(t.responseIds.length, 20);
  assert.equal(t.responseMask.join(""), "1".repeat(7) + "0".repeat(13));
  assert.deepEqual(t.turnScores, [0]);
  const reply = renderChat(t.messages.slice(2), tok, { addGenerationPrompt: true });
  assert.deepEqual(
    t.responseIds.slice(7),
    tok.encode(reply, { addSpecialTokens: false }).slice(0, 13),
  );
});

/** An interaction that logs its lifecycle and fails where told. */
class Scripted implements AgentInteraction {
  readonly log: string[] = [];
  constructor(readonly name: string, readonly failOn = "") {}
  start(id: string, kw: Record<string, unknown>) {
    this.log.push(`start ${id} ${kw.tag}`);
    return this.failOn === "start" ? Promise.reject(new Error("no")) : Promise.resolve();
  }
  generateResponse(id: string) {
    this.log.push(`respond ${id}`);
    if (this.failOn === "respond") return Promise.reject(new Error("boom"));
    return Promise.resolve({ shouldTerminate: true, content: "bye", score: 0.5, extra: {} });
  }
  calculateScore(id: string) {
    this.log.push(`score ${id}`);
    return Promise.resolve(0.25);
  }
  finalize(id: string) {
    this.log.push(`finalize ${id}`);
    return Promise.resolve();
  }
}

Deno.test("agent loop: each sample gets the interaction it names, start -> respond -> score -> finalize", async () => {
  const a = new Scripted("a"), b = new Scripted("b");
  const s = (k: number, name: string) => ({
    messages: [{ role: "user", content: `q${k}` }],
    interactionKwargs: { name, tag: `t${k}` },
  });
  const { trajectories } = await runAgentLoop(
    [s(0, "a"), s(1, "b"), s(2, "a")],
    scriptedEngine(tok, [["x"], ["y"], ["z"]]),
    options({ interactions: [a, b] }),
  );
  assert.deepEqual(trajectories.map((t) => t.interaction?.name), ["a", "b", "a"]);
  assert.deepEqual(trajectories.map((t) => t.interaction?.score), [0.25, 0.25, 0.25]);
  const ids = a.log.filter((l) => l.startsWith("start")).map((l) => l.split(" ")[1]);
  assert.equal(ids.length, 2);
  for (const id of ids) {
    assert.deepEqual(a.log.filter((l) => l.split(" ")[1] === id).map((l) => l.split(" ")[0]), [
      "start",
      "respond",
      "score",
      "finalize",
    ]);
  }
  assert.ok(a.log.some((l) => l.endsWith(" t2")) && b.log.some((l) => l.endsWith(" t1")));
  // Bad rows name the sample and the interactions there are.
  await assert.rejects(
    () =>
      runAgentLoop([s(0, "c")], scriptedEngine(tok, [["x"]]), options({ interactions: [a, b] })),
    /sample 0 names interaction_kwargs.name="c", not an interaction .*\(a, b\)/,
  );
  await assert.rejects(
    () => runAgentLoop([{ messages: s(0, "a").messages }], scriptedEngine(tok, [["x"]]), options()),
    /sample 0 has no interaction_kwargs/,
  );
});

Deno.test("agent loop: a failing interaction ends its conversation, is counted, and stops a broken batch", async () => {
  const lines: string[] = [];
  const ok = new Scripted("ok"), bad = new Scripted("bad", "respond");
  const s = (k: number, name: string) => ({
    messages: [{ role: "user", content: `q${k}` }],
    interactionKwargs: { name },
  });
  const { trajectories, metrics } = await runAgentLoop(
    [s(0, "ok"), s(1, "bad"), s(2, "ok")],
    scriptedEngine(tok, [["x"], ["y"], ["z"]]),
    options({ interactions: [ok, bad], log: (l) => lines.push(l) }),
  );
  assert.equal(metrics["interaction/errors"], 1);
  assert.deepEqual(trajectories[1].messages.map((m) => m.role), ["user", "assistant"]);
  assert.match(lines[0], /sample 1: interaction bad\.generateResponse: boom/);
  assert.ok(bad.log.some((l) => l.startsWith("finalize")), "a failed session is still finalized");
  await assert.rejects(
    () =>
      runAgentLoop(
        [s(0, "bad"), s(1, "bad")],
        scriptedEngine(tok, [["x"], ["y"]]),
        options({ interactions: [bad] }),
      ),
    /the interaction failed for 2 of 2 samples; first: sample \d: interaction bad/,
  );
});
