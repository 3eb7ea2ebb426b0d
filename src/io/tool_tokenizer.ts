/**
 * The character tokenizer of the tool-calling tasks (calc_tool, search): the synthetic tasks'
 * characters plus `{}"[]`, a `<|tool|>` role for tool replies, and the hermes call openings and
 * closings of the built-in calculator and search tools as single tokens (as a BPE vocabulary
 * merges frequent strings), so a call costs its arguments plus two tokens. Any other call can
 * still be spelled character by character. The chat template renders `tool_calls` of assistant
 * messages (verl's multi-turn SFT data) as the same hermes text the model writes, so a generated
 * turn and a stored one are the same tokens; the tools' schemas are not written into the prompt
 * (the tiny model learns its tools from its SFT data).
 *
 * Regenerate the committed copy with `deno run -A src/io/tool_tokenizer.ts [dir]`.
 */
import { CHAR_ALPHABET, charTokenizerFiles, charTokenizerTexts } from "./char_tokenizer.ts";
import { HfTokenizer } from "./tokenizer.ts";

export const TOOL_ALPHABET = CHAR_ALPHABET + '{}"[]';

/** Hermes call text of the built-in tools, each one token. */
export const TOOL_CALL_TOKENS = [
  '<tool_call>{"name": "calculator", "arguments": {"expression": "',
  '"}}</tool_call>',
  '<tool_call>{"name": "search", "arguments": {"query_list": ["',
  '"]}}</tool_call>',
] as const;

/**
 * Every message is `<|role|>content<eos>` (roles system, user, assistant, tool); an assistant
 * message's `tool_calls` follow its content as `<tool_call>{"name": ..., "arguments": ...}
 * </tool_call>` (arguments given as a JSON string are written as they are).
 */
export const TOOL_CHAT_TEMPLATE_TINY = "{%- for message in messages %}" +
  "{%- if message.role not in ['system', 'user', 'assistant', 'tool'] %}" +
  "{{- raise_exception('unknown role: ' + message.role) }}{%- endif %}" +
  "{{- '<|' + message.role + '|>' }}{%- if message.content %}{{- message.content }}{%- endif %}" +
  "{%- if message.tool_calls %}{%- for call in message.tool_calls %}" +
  `{{- '<tool_call>{"name": "' + call.function.name + '", "arguments": ' }}` +
  "{%- if call.function.arguments is string %}{{- call.function.arguments }}" +
  "{%- else %}{{- call.function.arguments | tojson }}{%- endif %}" +
  "{{- '}</tool_call>' }}{%- endfor %}{%- endif %}" +
  "{{- eos_token }}{%- endfor %}" +
  "{%- if add_generation_prompt %}{{- '<|assistant|>' }}{%- endif %}";

const OPTIONS = {
  alphabet: TOOL_ALPHABET,
  extraSpecialTokens: ["<|tool|>"],
  addedTokens: TOOL_CALL_TOKENS,
  chatTemplate: TOOL_CHAT_TEMPLATE_TINY,
};

/** The two files, as committed under assets/tool_tokenizer/. */
export function toolTokenizerTexts(): {
  "tokenizer.json": string;
  "tokenizer_config.json": string;
} {
  return charTokenizerTexts(OPTIONS);
}

/** The tool tokenizer, ready to use. */
export function toolTokenizer(): HfTokenizer {
  const f = charTokenizerFiles(OPTIONS);
  return new HfTokenizer(f.tokenizerJson, f.tokenizerConfig, { source: "tool_tokenizer" });
}

if (import.meta.main) {
  const dir = Deno.args[0] ?? new URL("../../assets/tool_tokenizer", import.meta.url).pathname;
  await Deno.mkdir(dir, { recursive: true });
  for (const [name, text] of Object.entries(toolTokenizerTexts())) {
    await Deno.writeTextFile(`${dir}/${name}`, text);
  }
  console.log(`wrote ${dir}`);
}
