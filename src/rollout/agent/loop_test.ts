import assert from "node:assert/strict";
import { renderChat } from "../../data/mod.ts";
import { CalculatorTool } from "./builtin_tools.ts";
import { type AgentLoopOptions, runAgentLoop } from "./loop.ts";
import { agentTokenizer, loopOptions, RecordingTool, scriptedEngine } from "./test_agent.ts";

const tok = agentTokenizer();
const calc = new CalculatorTool(CalculatorTool.defaultSchema);

const options = (over: Partial<AgentLoopOptions> = {}) =>
  loopOptions(tok, { tools: [calc], ...over });

const call = (expr: string) =>
  `<tool_call>{"name": "calculator", "arguments": {"expression": "${expr}"}}</tool_call>`;
const user = (k: number) => [{ role: "user", content: `q${k} what is 2+3?` }];

Deno.test("agent loop: response_mask is 1 exactly on the policy's tokens, 0 on tool tokens", async () => {
  const scripts = [[`let me see ${call("2+3")}`, "it is 5"], ["it is 5"]];
  const { trajectories: [t0, t1], metrics } = await runAgentLoop(
    [{ messages: user(0) }, { messages: user(1) }],
    // Each turn takes 20 ms: sample 0 waits on two turns, sample 1 on one.
    scriptedEngine(tok, scripts, [], 20),
    options(),
  );
  const enc = (s: string) => [...tok.encode(s, { addSpecialTokens: false }), tok.eosTokenId];
  const policy = t0.responseIds.filter((_, i) => t0.responseMask[i] === 1);
  assert.deepEqual(policy, [...enc(scripts[0][0]), ...enc(scripts[0][1])]);
  const tool = t0.responseIds.filter((_, i) => t0.responseMask[i] === 0);
  assert.equal(tok.decode(tool), "<|tool|>5<eos><|assistant|>");
  // The mask is one run of 1s, one of 0s, one of 1s: tool tokens sit between the turns.
  const runs = t0.responseMask.join("").match(/1+|0+/g)!;
  assert.deepEqual(runs.map((r) => r[0]), ["1", "0", "1"]);
  // Delta tokenization equals one render of the whole conversation.
  assert.deepEqual(t0.messages.map((m) => m.role), ["user", "assistant", "tool", "assistant"]);
  assert.equal(
    tok.decode([...t0.promptIds, ...t0.responseIds]),
    renderChat(t0.messages, tok, { tools: [calc.schema], addGenerationPrompt: false }),
  );
  assert.equal(t0.numTurns, 4);
  assert.deepEqual(t1.responseMask, t1.responseIds.map(() => 1));
  assert.equal(t1.numTurns, 2);
  assert.equal(metrics["num_turns/max"], 4);
  assert.equal(metrics["num_turns/min"], 2);
  assert.equal(metrics["num_turns/mean"], 3);
  assert.equal(metrics["tool_calls/calculator/count"], 1);
  assert.equal(metrics["tool_calls/calculator/errors"], 0);
  for (const k of ["generate_sequences", "tool_calls"]) {
    const [mean, max, min] = ["mean", "max", "min"].map((s) =>
      metrics[`timing_s/agent_loop/${k}/${s}`]
    );
    assert.ok(min >= 0 && min <= mean && mean <= max, `${k}: ${min} ${mean} ${max}`);
  }
  assert.ok(t0.seconds.tools >= 0 && t1.seconds.tools === 0, "no call, no tool time");
  assert.ok(t0.seconds.generate > t1.seconds.generate, "sample 0 took part in more turns");
});

Deno.test("agent loop: bad JSON, unknown tools, bad arguments become error replies and metrics", async () => {
  const scripts = [[
    '<tool_call>{"name": "calculator", "arguments": {"expression": 2+3}}</tool_call>' +
    '<tool_call>{"name": "weather", "arguments": {}}</tool_call>' +
    '<tool_call>{"name": "calculator", "arguments": {"expr": "1"}}</tool_call>' +
    call("1/0"),
    "sorry",
  ]];
  const { trajectories: [t], metrics } = await runAgentLoop(
    [{ messages: user(0) }],
    scriptedEngine(tok, scripts),
    options({ maxParallelCalls: 4, sanityCheck: "disable", responseLength: 1000 }),
  );
  const replies = t.messages.filter((m) => m.role === "tool").map((m) => m.content);
  assert.equal(replies.length, 4);
  assert.match(replies[0], /^Error when executing tool: the call is not valid JSON/);
  assert.match(replies[1], /unknown tool "weather" \(tools: calculator\)/);
  assert.match(replies[2], /missing required argument "expression"/);
  assert.match(replies[3], /division by zero/);
  assert.equal(metrics["tool_calls/malformed"], 1);
  assert.equal(metrics["tool_calls/unknown_tool"], 1);
  assert.equal(metrics["tool_calls/calculator/count"], 2);
  assert.equal(metrics["tool_calls/calculator/errors"], 2);
});

Deno.test("agent loop: max_parallel_calls runs the first calls only", async () => {
  const { trajectories: [t] } = await runAgentLoop(
    [{ messages: user(0) }],
    scriptedEngine(tok, [[call("1+1") + call("2+2") + call("3+3"), "ok"]]),
    options({ maxParallelCalls: 2, responseLength: 1000 }),
  );
  assert.deepEqual(t.messages.filter((m) => m.role === "tool").map((m) => m.content), ["2", "4"]);
});

Deno.test("agent loop: onProgress hears each conversation as it ends, while others still run", async () => {
  const requests: { sample: number; length: number; turn: number }[] = [];
  const heard: { done: number; total: number; requests: number }[] = [];
  // Sample 1 ends after one turn, sample 0 after two, sample 2 after three.
  const scripts = [[call("1+1"), "ok"], ["ok"], [call("1+1"), call("2+2"), "ok"]];
  await runAgentLoop(
    [0, 1, 2].map((k) => ({ messages: user(k) })),
    scriptedEngine(tok, scripts, requests, 5),
    options({
      responseLength: 1000,
      onProgress: (done, total) => heard.push({ done, total, requests: requests.length }),
    }),
  );
  assert.deepEqual(heard.map((h) => [h.done, h.total]), [[1, 3], [2, 3], [3, 3]]);
  assert.equal(requests.length, 6);
  // The first reports come before the last turns are asked for.
  assert.ok(heard[0].requests < heard[1].requests && heard[1].requests < 6, JSON.stringify(heard));
});

Deno.test("agent loop: stops at max_assistant_turns, max_user_turns and the response budget", async () => {
  const loop = [call("1+1"), call("2+2"), call("3+3"), call("4+4")];
  const run = (o: Partial<AgentLoopOptions>, requests: { length: number }[] = []) =>
    runAgentLoop(
      [{ messages: user(0) }],
      scriptedEngine(tok, [loop], requests as never),
      options(o),
    );
  assert.equal((await run({ maxAssistantTurns: 2 })).trajectories[0].numTurns, 4);
  assert.equal((await run({ maxUserTurns: 1 })).trajectories[0].numTurns, 4);
  // Budget: each turn is asked for at most the tokens left; the response never passes it.
  const requests: { length: number }[] = [];
  const { trajectories: [t] } = await run({ responseLength: 120 }, requests);
  assert.ok(t.responseIds.length <= 120);
  assert.equal(requests[0].length, 120);
  for (let i = 1; i < requests.length; i++) assert.ok(requests[i].length < requests[i - 1].length);
  assert.equal(t.responseMask.length, t.responseIds.length);
});

Deno.test("agent loop: lifecycle create -> execute -> calc_reward -> release with create_kwargs", async () => {
  const rec = new RecordingTool("echo");
  const echo = (x: string) => `<tool_call>{"name": "echo", "arguments": {"x": "${x}"}}</tool_call>`;
  const { trajectories } = await runAgentLoop(
    [
      { messages: user(0), toolsKwargs: { echo: { create_kwargs: { ground_truth: "7" } } } },
      { messages: user(1) },
    ],
    scriptedEngine(tok, [[echo("a"), echo("b"), "end"], ["end"]]),
    options({ tools: [rec] }),
  );
  const ids = rec.log.filter((l) => l.startsWith("create")).map((l) => l.split(" ")[1]);
  assert.equal(ids.length, 2);
  const of = (id: string) =>
    rec.log.filter((l) => l.split(" ")[1] === id).map((l) => l.split(" ")[0]);
  assert.deepEqual(of(ids[0]), ["create", "execute", "execute", "calc_reward", "release"]);
  assert.deepEqual(of(ids[1]), ["create", "calc_reward", "release"]);
  assert.ok(rec.log.includes(`create ${ids[0]} {"ground_truth":"7"}`));
  assert.ok(rec.log.includes(`create ${ids[1]} {}`));
  assert.deepEqual(trajectories[0].toolRewards, { echo: 0.5 });
  assert.equal(trajectories[0].messages.filter((m) => m.role === "tool")[1].content, "got b");
});

Deno.test("agent loop: long tool replies are truncated by characters", async () => {
  const { trajectories: [t] } = await runAgentLoop(
    [{ messages: user(0) }],
    scriptedEngine(tok, [[call("2^40"), "ok"]]),
    options({ maxToolResponseLength: 4, toolResponseTruncateSide: "left" }),
  );
  assert.equal(t.messages[2].content, `${String(2 ** 40).slice(0, 4)}...(truncated)`);
});
