/**
 * Turn-by-turn tokenization of a conversation. The tokens after an assistant turn are the chat
 * template's rendering of the conversation with the new messages, minus what is already there:
 * only the new text is tokenized and appended, so the policy's tokens are never re-encoded. `checkTokenization` compares the result with one render of the whole conversation.
 */
import { type ChatMessage, type Tokenizer } from "../../io/mod.ts";
import { renderChat } from "../../data/mod.ts";

/** `multi_turn.tokenization_sanity_check_mode`, as in verl. */
export const SANITY_CHECK_MODES = ["strict", "ignore_strippable", "disable"] as const;
export type SanityCheckMode = typeof SANITY_CHECK_MODES[number];

/** A stand-in history for templates whose earlier turns change when a message is added. */
const PROBE: ChatMessage[] = [
  { role: "user", content: "x" },
  { role: "assistant", content: "y" },
];

/** What the loop knows when tool replies are to be appended. */
export interface DeltaInput {
  /** The conversation so far, ending with the assistant turn just generated. */
  history: ChatMessage[];
  /** Every token so far (prompt and response). */
  ids: readonly number[];
  /** The assistant turn decoded with its stop token. */
  turnText: string;
  /** The new messages (tool replies). */
  added: ChatMessage[];
}

/**
 * Tokens that continue the conversation with `added` and the generation prompt. The render with
 * the new messages normally starts with the text of every token so far (the template wrote the
 * prompt, the policy wrote its turns): the rest is tokenized. Templates that render the latest
 * assistant turn differently from earlier ones (Qwen3 adds an empty think block to the last)
 * are handled by rendering the history without the new messages instead, and the template's text
 * after the turn's stop token is kept.
 */
export function deltaTokens(
  tokenizer: Tokenizer,
  tools: readonly unknown[],
  d: DeltaInput,
): number[] {
  const after = renderChat([...d.history, ...d.added], tokenizer, {
    addGenerationPrompt: true,
    tools,
  });
  const soFar = tokenizer.decode(d.ids);
  const base = renderChat(d.history, tokenizer, { addGenerationPrompt: false, tools });
  let text: string;
  if (after.startsWith(soFar)) text = after.slice(soFar.length);
  else if (after.startsWith(base)) {
    const k = d.turnText === "" ? -1 : base.lastIndexOf(d.turnText);
    const tail = k >= 0 ? base.slice(k + d.turnText.length) : "";
    text = tail + after.slice(base.length);
  } else {
    // The template rewrites an earlier turn when one is added: render the new messages after a
    // fixed history instead, as verl does.
    const b = renderChat(PROBE, tokenizer, { addGenerationPrompt: false, tools });
    const a = renderChat([...PROBE, ...d.added], tokenizer, { addGenerationPrompt: true, tools });
    if (!a.startsWith(b)) {
      throw new Error(
        "the chat template does not render a conversation as its earlier part plus the new " +
          "messages, so tool turns cannot be appended token by token",
      );
    }
    text = a.slice(b.length);
  }
  return tokenizer.encode(text, { addSpecialTokens: false });
}

/**
 * Compares the conversation's tokens with the template's render of all its messages (as text,
 * so a policy's unusual split of a word is not a mismatch). `strict`: any difference throws;
 * `ignore_strippable`: a difference in whitespace only passes; `disable`: no check.
 */
export function checkTokenization(
  tokenizer: Tokenizer,
  tools: readonly unknown[],
  messages: ChatMessage[],
  ids: readonly number[],
  mode: SanityCheckMode,
): void {
  if (mode === "disable") return;
  const full = renderChat(messages, tokenizer, { addGenerationPrompt: true, tools });
  const expected = tokenizer.decode(tokenizer.encode(full, { addSpecialTokens: false }));
  const got = tokenizer.decode(ids);
  if (got === expected) return;
  if (mode === "ignore_strippable" && got.replace(/\s+/g, "") === expected.replace(/\s+/g, "")) {
    return;
  }
  let i = 0;
  while (i < got.length && got[i] === expected[i]) i++;
  const around = (s: string) => JSON.stringify(s.slice(Math.max(0, i - 20), i + 20));
  throw new Error(
    `multi_turn.tokenization_sanity_check_mode=${mode}: the conversation tokenized turn by turn ` +
      `differs from one render of the chat template at character ${i}: turn by turn ` +
      `${around(got)}, full render ${around(expected)} (set the mode to ignore_strippable or ` +
      "disable if the template is known to differ)",
  );
}
