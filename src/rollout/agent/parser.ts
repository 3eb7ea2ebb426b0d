/**
 * Tool-call parsers (`multi_turn.format`). A parser turns one assistant turn's text into the calls
 * it asks for; a call that cannot be read (bad JSON, no name, arguments that are not an object) is
 * kept as an error entry, so the loop answers it with an error message instead of dropping it.
 *
 * - `hermes` (Qwen, Hermes): every `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`.
 * - `llama3_json` (Llama 3.x): the turn, after an optional `<|python_tag|>`, is one or more JSON
 *   objects `{"name": ..., "parameters": {...}}` (or `"arguments"`), separated by `;`.
 */

/** One call as the model wrote it: a readable call, or why it could not be read. */
export type ParsedCall =
  | { ok: true; name: string; arguments: Record<string, unknown> }
  | { ok: false; error: string; raw: string };

export interface ParsedTurn {
  /** The turn's text without its call markup. */
  content: string;
  calls: ParsedCall[];
}

export type ToolParser = (text: string) => ParsedTurn;

const HERMES_CALL = /<tool_call>([\s\S]*?)<\/tool_call>/g;

function readCall(raw: string, argKeys: readonly string[]): ParsedCall {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (e) {
    return { ok: false, error: `the call is not valid JSON (${(e as Error).message})`, raw };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return { ok: false, error: "the call is not a JSON object {name, arguments}", raw };
  }
  const obj = value as Record<string, unknown>;
  if (typeof obj.name !== "string" || obj.name === "") {
    return { ok: false, error: 'the call has no "name" string', raw };
  }
  const key = argKeys.find((k) => k in obj);
  const args = key === undefined ? {} : obj[key];
  if (typeof args !== "object" || args === null || Array.isArray(args)) {
    return { ok: false, error: `"${key}" of ${obj.name} is not a JSON object`, raw };
  }
  return { ok: true, name: obj.name, arguments: args as Record<string, unknown> };
}

export const hermesParser: ToolParser = (text) => {
  const calls = [...text.matchAll(HERMES_CALL)].map((m) => readCall(m[1].trim(), ["arguments"]));
  return { content: text.replace(HERMES_CALL, ""), calls };
};

/**
 * Splits `a; b` into JSON object texts at top-level `;` (braces and strings tracked, so a `;`
 * inside an argument does not split).
 */
function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0, start = 0, inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "{" || c === "[") depth++;
    else if (c === "}" || c === "]") depth--;
    else if (c === ";" && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts.map((p) => p.trim()).filter((p) => p !== "");
}

export const llama3JsonParser: ToolParser = (text) => {
  let body = text.trim();
  const tagged = body.startsWith("<|python_tag|>");
  if (tagged) body = body.slice("<|python_tag|>".length).trim();
  // Without the tag, only a turn that is JSON from its first character is a call (as Llama's
  // template writes them); prose that mentions braces is plain content.
  if (!tagged && !body.startsWith("{")) return { content: text, calls: [] };
  const calls = splitTopLevel(body).map((raw) => readCall(raw, ["parameters", "arguments"]));
  return { content: "", calls };
};

/** `multi_turn.format` names. */
export const TOOL_FORMATS = ["hermes", "llama3_json"] as const;
export type ToolFormat = typeof TOOL_FORMATS[number];

/** Parsers by `multi_turn.format` name. */
export const TOOL_PARSERS: Readonly<Record<ToolFormat, ToolParser>> = {
  hermes: hermesParser,
  llama3_json: llama3JsonParser,
};
