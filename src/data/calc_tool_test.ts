import assert from "node:assert/strict";
import { defaultComputeScore } from "../reward/mod.ts";
import { calcToolConversation, generateCalcTool } from "./calc_tool.ts";
import { generateSearchTask } from "./search_task.ts";

Deno.test("calc_tool rows: verl's tool columns, products the ground truth states", () => {
  const rows = generateCalcTool({ count: 50, seed: 2 });
  assert.equal(
    new Set(rows.map((r) => (r.extra_info as { expression: string }).expression)).size,
    50,
  );
  for (const r of rows) {
    const info = r.extra_info as Record<string, unknown>;
    const [a, b] = String(info.expression).split("*").map(Number);
    assert.ok(a >= 100 && a <= 999 && b >= 11 && b <= 99 && b % 10 !== 0);
    assert.equal((r.reward_model as { ground_truth: string }).ground_truth, String(a * b));
    assert.equal(r.agent_name, "tool_agent");
    assert.deepEqual(info.tools_kwargs, {
      calculator: { create_kwargs: { expression: info.expression } },
    });
    const gt = String(a * b);
    assert.equal(defaultComputeScore(String(r.data_source), `#### ${gt}`, gt), 1);
    assert.equal(defaultComputeScore(String(r.data_source), gt, gt), 0);
  }
  const held = generateCalcTool({
    count: 20,
    seed: 9,
    exclude: new Set(rows.map((r) => (r.extra_info as { expression: string }).expression)),
  });
  for (const r of held) {
    assert.ok(
      !rows.some((t) =>
        (t.extra_info as { expression: string }).expression ===
          (r.extra_info as { expression: string }).expression
      ),
    );
  }
});

Deno.test("calc_tool demonstrations: a hermes call, the calculator's reply, then #### n", () => {
  const [row] = generateCalcTool({ count: 1, seed: 4 });
  const { expression } = row.extra_info as { expression: string };
  const [a, b] = expression.split("*").map(Number);
  const answer = String(a * b);
  const conv = calcToolConversation(row, true).messages as Record<string, unknown>[];
  assert.deepEqual(conv.map((m) => m.role), ["user", "assistant", "tool", "assistant"]);
  assert.deepEqual(conv[1].tool_calls, [{
    type: "function",
    function: { name: "calculator", arguments: `{"expression": "${expression}"}` },
  }]);
  assert.equal(conv[2].content, answer);
  assert.equal(conv[3].content, `#### ${answer}`);
  const direct = calcToolConversation(row, false).messages as Record<string, unknown>[];
  assert.deepEqual(direct.map((m) => m.content), [`${expression}=`, `#### ${answer}`]);
});

Deno.test("search task: one passage per person, questions split by person", () => {
  const s = generateSearchTask({ trainSize: 40, valSize: 12, seed: 5 });
  assert.equal(s.train.length, 40);
  assert.equal(s.val.length, 12);
  assert.equal(s.corpus.length, 10 + 3);
  const who = (r: Record<string, unknown>) =>
    /(?:does|of) (\S+ \S+?)(?: live| keep| like|\?)/.exec(
      (r.extra_info as { question: string }).question,
    )![1];
  const trainPeople = new Set(s.train.map(who));
  for (const r of s.val) assert.ok(!trainPeople.has(who(r)), "validation people are new");
  for (const r of [...s.train, ...s.val]) {
    const target = (r.reward_model as { ground_truth: { target: string[] } }).ground_truth.target;
    const doc = s.corpus.find((d) => d.contents.startsWith(who(r) + "\n"))!;
    assert.ok(doc.contents.includes(` ${target[0]}.`), `${who(r)}'s passage states ${target[0]}`);
    const gt = JSON.stringify({ target });
    assert.equal(defaultComputeScore("searchR1_synth", `<answer>${target[0]}</answer>`, gt), 1);
  }
});
