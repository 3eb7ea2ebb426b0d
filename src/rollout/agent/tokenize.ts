/**
 * Turn-by-turn tokenization of a conversation. The tokens after an assistant turn are the chat
 * template's rendering of the conversation with the new messages, minus its rendering without
 * them: only the new text is tokenized and appended, so the policy's tokens are never re-encoded.
 * The template's own text after the assistant's stop token (Qwen's "\n" after <|im_end|>) comes
 * first. `checkTokenization` compares the result with one render of the whole conversation.
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

/**
 * Tokens that continue a conversation whose last message is the assistant turn just generated
 * (`turnText`: that turn decoded with its stop token) with `added` messages and the generation
 * prompt.
 */
export function deltaTokens(
  tokenizer: Tokenizer,
  tools: readonly unknown[],
  history: ChatMessage[],
  turnText: string,
  added: ChatMessage[],
): number[] {
  const base = renderChat(history, tokenizer, { addGenerationPrompt: false, tools });
  const after = renderChat([...history, ...added], tokenizer, { addGenerationPrompt: true, tools });
  let text: string;
  if (after.startsWith(base)) {
    const k = turnText === "" ? -1 : base.lastIndexOf(turnText);
    const tail = k >= 0 ? base.slice(k + turnText.length) : "";
    text = tail + after.slice(base.length);
  } else {
    // The template rewrites an earlier turn when one is added (e.g. drops old reasoning): render
    // the new messages after a fixed history instead, as verl does.
    const b = renderChat(PROBE, tokenizer, { addGenerationPrompt: false, tools });
    const a = renderChat([...PROBE, ...added], tokenizer, { addGenerationPrompt: true, tools });
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
