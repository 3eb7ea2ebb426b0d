/** The model's context window against the prompt and response budgets. */
import { ConfigError } from "./errors.ts";

export interface ContextLengths {
  /** data.max_prompt_length (or the longest prompt actually built). */
  maxPromptLength: number;
  /** data.max_response_length (rollout.response_length). */
  maxResponseLength: number;
  /** max_position_embeddings of the model's config.json. */
  maxPositionEmbeddings: number;
  /** Where the number came from, e.g. `/models/qwen/config.json`, for the message. */
  model: string;
  /** Keys of the two budgets; default data.max_prompt_length and data.max_response_length. */
  promptKey?: string;
  responseKey?: string;
  /** How the prompt side is named in the message; default `${promptKey}=${maxPromptLength}`. */
  promptLabel?: string;
}

/**
 * Throws when a prompt plus its response can run past the positions the model was trained on
 * (verl's rollout asserts `prompt_length + response_length <= max_position_embeddings` too).
 * The error names the three numbers and is reported under the response key when the prompt
 * budget alone fits (saying how far to lower it), else under the prompt key.
 */
export function checkContextLength(c: ContextLengths): void {
  const promptKey = c.promptKey ?? "data.max_prompt_length";
  const responseKey = c.responseKey ?? "data.max_response_length";
  const total = c.maxPromptLength + c.maxResponseLength;
  if (total <= c.maxPositionEmbeddings) return;
  // When the prompt side fits, the response budget is what to lower, and by how much.
  const room = c.maxPositionEmbeddings - c.maxPromptLength;
  const fix = room >= 1
    ? `set ${responseKey}=${room} or less (or lower ${promptKey})`
    : `lower ${promptKey} and ${responseKey}`;
  throw new ConfigError(
    room >= 1 ? responseKey : promptKey,
    `${c.promptLabel ?? `${promptKey}=${c.maxPromptLength}`} + ` +
      `${responseKey}=${c.maxResponseLength} = ${total} ` +
      `tokens is more than the model's max_position_embeddings=${c.maxPositionEmbeddings} ` +
      `(${c.model}): ${fix}, or use a model with a longer context`,
  );
}
