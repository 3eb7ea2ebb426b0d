import assert from "node:assert/strict";
import { toolTokenizer } from "../io/mod.ts";
import { calcToolSftRows, generateCalcTool } from "./calc_tool.ts";
import { writeParquet } from "./parquet.ts";
import { loadSftExamples } from "./sft_data.ts";
import { multiturnExampleFromRow, multiturnTokens } from "./sft_multiturn.ts";

const tok = toolTokenizer();
const OPTS = {
  messagesKey: "messages",
  toolsKey: "tools",
  enableThinkingKey: "enable_thinking",
  maxLength: 64,
  truncation: "error",
};

/** The text of the masked-in and masked-out tokens, as runs. */
function runs(ids: number[], mask: number[]): [number, string][] {
  const out: [number, string][] = [];
  ids.forEach((id, i) => {
    const last = out.at(-1);
    if (last && last[0] === mask[i]) last[1] += tok.decode([id]);
    else out.push([mask[i], tok.decode([id])]);
  });
  return out;
}

Deno.test("multi-turn SFT: only assistant tokens (content, calls, stop token) are trained", () => {
  const messages = [
    { role: "system", content: "be brief" },
    { role: "user", content: "12*34=" },
    {
      role: "assistant",
      content: "",
      tool_calls: [{
        type: "function",
        function: { name: "calculator", arguments: { expression: "12*34" } },
      }],
    },
    { role: "tool", content: "408" },
    { role: "assistant", content: "#### 408" },
  ];
  const { ids, lossMask } = multiturnTokens(messages, tok);
  assert.deepEqual(runs(ids, lossMask), [
    [0, "<|system|>be brief<eos><|user|>12*34=<eos><|assistant|>"],
    [1, '<tool_call>{"name": "calculator", "arguments": {"expression": "12*34"}}</tool_call><eos>'],
    [0, "<|tool|>408<eos><|assistant|>"],
    [1, "#### 408<eos>"],
  ]);
});

Deno.test("multi-turn SFT: rows from the calc_tool builder load with their masks", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const rows = calcToolSftRows(generateCalcTool({ count: 20, seed: 3 }), { toolRatio: 0.5 });
    await writeParquet(`${dir}/sft.parquet`, { rows });
    const ex = await loadSftExamples(`${dir}/sft.parquet`, tok, {
      promptKey: "prompt",
      responseKey: "response",
      promptDictKeys: [],
      responseDictKeys: [],
      maxLength: 64,
      truncation: "error",
      multiturn: {
        messagesKey: "messages",
        toolsKey: "tools",
        enableThinkingKey: "enable_thinking",
      },
    });
    assert.equal(ex.length, 20);
    const withTool = ex.filter((e) => e.lossMask!.includes(0));
    assert.ok(withTool.length > 3 && withTool.length < 17, `${withTool.length} of 20 use the tool`);
    for (const e of ex) {
      assert.equal(tok.decode(e.promptIds).startsWith("<|user|>"), true);
      assert.equal(tok.decode(e.promptIds).endsWith("<|assistant|>"), true);
      assert.equal(e.lossMask!.length, e.responseIds.length);
      assert.equal(e.responseIds.at(-1), tok.eosTokenId);
      assert.equal(e.lossMask!.at(-1), 1);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("multi-turn SFT: bad rows name the file, row and column", () => {
  const at = { file: "f.parquet", row: 7 };
  const bad = (row: Record<string, unknown>, re: RegExp, o = OPTS) =>
    assert.throws(() => multiturnExampleFromRow(row, tok, o, at), re);
  bad({}, /f\.parquet, row 7, column "messages": column is missing/);
  bad({ messages: "hi" }, /row 7, column "messages": expected a non-empty list/);
  bad({ messages: [{ role: "robot", content: "x" }] }, /message 0 has role "robot"/);
  bad({ messages: [{ role: "user", content: 3 }] }, /message 0 content should be a string/);
  bad({ messages: [{ role: "user", content: "x" }] }, /no assistant tokens/);
  bad(
    { messages: [{ role: "user", content: "x" }, { role: "assistant", content: "y" }], tools: 5 },
    /column "tools": tools should be a list/,
  );
  bad(
    {
      messages: [{ role: "user", content: "x" }, { role: "assistant", content: "y" }],
      enable_thinking: "yes",
    },
    /column "enable_thinking": expected a boolean/,
  );
  const long = [{ role: "user", content: "1+1=" }, { role: "assistant", content: "#".repeat(80) }];
  bad({ messages: long }, /88 tokens, longer than data.max_length=64/);
  const cut = multiturnExampleFromRow(
    { messages: long },
    tok,
    { ...OPTS, truncation: "right" },
    at,
  );
  assert.equal(cut.promptIds.length + cut.responseIds.length, 64);
});
