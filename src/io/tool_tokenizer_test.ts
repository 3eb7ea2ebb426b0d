import assert from "node:assert/strict";
import { loadTokenizer } from "./hf_folder.ts";
import { TOOL_CALL_TOKENS, toolTokenizer, toolTokenizerTexts } from "./tool_tokenizer.ts";
import type { ChatMessage } from "./tokenizer_types.ts";

const ASSETS = new URL("../../assets/tool_tokenizer/", import.meta.url);

Deno.test("tool tokenizer: the committed assets match the generator", async () => {
  for (const [name, text] of Object.entries(toolTokenizerTexts())) {
    assert.equal(
      await Deno.readTextFile(new URL(name, ASSETS)),
      text,
      `assets/tool_tokenizer/${name} is stale: run deno run -A src/io/tool_tokenizer.ts`,
    );
  }
});

Deno.test("tool tokenizer: a hermes calculator call is two tokens plus its expression", async () => {
  const tok = await loadTokenizer(ASSETS.pathname);
  assert.equal(tok.eosTokenId, 1);
  const call =
    '<tool_call>{"name": "calculator", "arguments": {"expression": "12*34"}}</tool_call>';
  const ids = tok.encode(call, { addSpecialTokens: false });
  assert.equal(ids.length, 2 + 5);
  assert.equal(tok.decode(ids), call);
  // Anything else is still spelled by characters.
  const other = '<tool_call>{"name": "f", "arguments": {}}</tool_call>';
  assert.equal(tok.decode(tok.encode(other, { addSpecialTokens: false })), other);
  for (const t of TOOL_CALL_TOKENS) {
    assert.equal(tok.encode(t, { addSpecialTokens: false }).length, 1);
  }
});

Deno.test("tool tokenizer: tool_calls render as the text the model writes", () => {
  const tok = toolTokenizer();
  const call = (args: unknown): ChatMessage[] => [
    { role: "user", content: "2*3=" },
    {
      role: "assistant",
      content: "",
      tool_calls: [{ type: "function", function: { name: "calculator", arguments: args } }],
    } as unknown as ChatMessage,
    { role: "tool", content: "6" },
  ];
  const want = '<|user|>2*3=<eos><|assistant|><tool_call>{"name": "calculator", "arguments": ' +
    '{"expression": "2*3"}}</tool_call><eos><|tool|>6<eos><|assistant|>';
  const opts = { addGenerationPrompt: true };
  assert.equal(tok.applyChatTemplate(call({ expression: "2*3" }), opts), want);
  assert.equal(tok.applyChatTemplate(call('{"expression": "2*3"}'), opts), want);
  assert.throws(() => tok.applyChatTemplate([{ role: "robot", content: "x" }]), /unknown role/);
});
