/**
 * Multi-turn SFT examples (verl's `data.multiturn`): a row's messages column holds a whole
 * conversation `[{role, content, tool_calls?}]`, its tools column the OpenAI function schemas the
 * chat template is given. The conversation is rendered once; the loss mask is 1 only on the
 * tokens of assistant turns, found by rendering prefixes: an assistant turn's tokens are those
 * between the render of the messages before it with the generation prompt and the render that
 * includes it (its content, its calls and its stop token, not the role marker the prompt wrote).
 * System, user and tool tokens are never trained on.
 */
import type { ChatMessage, Tokenizer } from "../io/mod.ts";
import { DataError } from "./errors.ts";
import { renderChat } from "./prompt.ts";

export interface MultiturnOptions {
  messagesKey: string;
  toolsKey: string;
  /** A boolean column handed to the template as `enable_thinking` where the file has it. */
  enableThinkingKey: string;
  maxLength: number;
  /** `error` or `right` (cut the end); a conversation cannot lose its start. */
  truncation: string;
}

const ROLES = ["system", "user", "assistant", "tool"];

function readMessages(value: unknown, err: (m: string) => DataError): ChatMessage[] {
  if (!Array.isArray(value) || value.length === 0) {
    throw err(
      `expected a non-empty list of messages {role, content}, got ${JSON.stringify(value)}`,
    );
  }
  return value.map((m, i) => {
    if (typeof m !== "object" || m === null) throw err(`message ${i} is not a struct`);
    const { role, content, tool_calls: calls } = m as Record<string, unknown>;
    if (typeof role !== "string" || !ROLES.includes(role)) {
      throw err(`message ${i} has role ${JSON.stringify(role)} (one of ${ROLES.join(", ")})`);
    }
    if (content !== null && content !== undefined && typeof content !== "string") {
      throw err(`message ${i} content should be a string, got ${JSON.stringify(content)}`);
    }
    if (calls !== null && calls !== undefined && !Array.isArray(calls)) {
      throw err(`message ${i} tool_calls should be a list, got ${JSON.stringify(calls)}`);
    }
    const msg: ChatMessage & { tool_calls?: unknown[] } = { role, content: content ?? "" };
    if (Array.isArray(calls) && calls.length > 0) msg.tool_calls = calls;
    return msg;
  });
}

function readTools(value: unknown, err: (m: string) => DataError): unknown[] {
  if (value === null || value === undefined) return [];
  const v = typeof value === "string"
    ? (() => {
      try {
        return JSON.parse(value);
      } catch {
        throw err("tools should be a list of function schemas or its JSON text");
      }
    })()
    : value;
  if (!Array.isArray(v)) throw err(`tools should be a list, got ${JSON.stringify(v)}`);
  return v;
}

/** The token ids of a conversation and its loss mask (1 on assistant tokens). */
export function multiturnTokens(
  messages: ChatMessage[],
  tokenizer: Tokenizer,
  options: { tools?: readonly unknown[]; variables?: Record<string, unknown> } = {},
): { ids: number[]; lossMask: number[] } {
  const enc = (m: ChatMessage[], gen: boolean) =>
    tokenizer.encode(
      renderChat(m, tokenizer, {
        addGenerationPrompt: gen,
        tools: options.tools,
        variables: options.variables,
      }),
      { addSpecialTokens: false },
    );
  const ids = enc(messages, false);
  const lossMask = ids.map(() => 0);
  const isPrefix = (p: number[]) => p.length <= ids.length && p.every((t, i) => ids[i] === t);
  messages.forEach((m, i) => {
    if (m.role !== "assistant") return;
    const before = enc(messages.slice(0, i), true), through = enc(messages.slice(0, i + 1), false);
    if (!isPrefix(before) || !isPrefix(through)) {
      throw new Error(
        `the chat template does not render the conversation up to message ${i} as the start of ` +
          "the whole render, so the assistant tokens cannot be found",
      );
    }
    lossMask.fill(1, before.length, through.length);
  });
  return { ids, lossMask };
}

/** One row of a multi-turn SFT file as an example (prompt = tokens before the first trained one). */
export function multiturnExampleFromRow(
  row: Record<string, unknown>,
  tokenizer: Tokenizer,
  o: MultiturnOptions,
  where: { file: string; row: number },
): { promptIds: number[]; responseIds: number[]; lossMask: number[] } {
  const err = (column: string) => (m: string) => new DataError(where.file, m, where.row, column);
  if (!(o.messagesKey in row)) {
    throw err(o.messagesKey)(`column is missing (data.multiturn.messages_key)`);
  }
  const messages = readMessages(row[o.messagesKey], err(o.messagesKey));
  const tools = readTools(row[o.toolsKey], err(o.toolsKey));
  const thinking = row[o.enableThinkingKey];
  if (thinking !== undefined && thinking !== null && typeof thinking !== "boolean") {
    throw err(o.enableThinkingKey)(`expected a boolean, got ${JSON.stringify(thinking)}`);
  }
  const variables = typeof thinking === "boolean" ? { enable_thinking: thinking } : undefined;
  let t: { ids: number[]; lossMask: number[] };
  try {
    t = multiturnTokens(messages, tokenizer, { tools, variables });
  } catch (e) {
    throw err(o.messagesKey)((e as Error).message);
  }
  const first = t.lossMask.indexOf(1);
  if (first < 0) throw err(o.messagesKey)("the conversation has no assistant tokens to train on");
  if (t.ids.length > o.maxLength) {
    if (o.truncation !== "right") {
      throw err(o.messagesKey)(
        `conversation is ${t.ids.length} tokens, longer than data.max_length=${o.maxLength} ` +
          "(data.truncation=right cuts its end; left and middle would cut its start)",
      );
    }
    if (first >= o.maxLength) {
      throw err(o.messagesKey)(`no assistant token within data.max_length=${o.maxLength}`);
    }
    t = { ids: t.ids.slice(0, o.maxLength), lossMask: t.lossMask.slice(0, o.maxLength) };
  }
  return {
    promptIds: t.ids.slice(0, first),
    responseIds: t.ids.slice(first),
    lossMask: t.lossMask.slice(first),
  };
}
