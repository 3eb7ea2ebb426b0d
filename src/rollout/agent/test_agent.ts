/** Test fixtures of the agent loop: a character tokenizer whose template has a tool role, and a
 * scripted engine that writes given turns. */
import { CHAR_ALPHABET, charTokenizerFiles, HfTokenizer } from "../../io/mod.ts";
import type { TurnGenerator } from "./loop.ts";
import type { AgentTool, ToolResult, ToolSchema } from "./types.ts";

/** Tools are listed in a system turn; every message is `<|role|>content<eos>`. */
export const TOOL_CHAT_TEMPLATE = "{%- if tools %}{{- '<|system|>tools:' }}" +
  "{%- for t in tools %}{{- ' ' + t.function.name }}{%- endfor %}{{- eos_token }}{%- endif %}" +
  "{%- for message in messages %}" +
  "{{- '<|' + message.role + '|>' + message.content + eos_token }}" +
  "{%- endfor %}" +
  "{%- if add_generation_prompt %}{{- '<|assistant|>' }}{%- endif %}";

export const AGENT_ALPHABET = CHAR_ALPHABET + '{}"[]';

export function agentTokenizer(template = TOOL_CHAT_TEMPLATE): HfTokenizer {
  const f = charTokenizerFiles({ alphabet: AGENT_ALPHABET });
  return new HfTokenizer(f.tokenizerJson, f.tokenizerConfig, { chatTemplate: template });
}

/**
 * An engine that answers sample k's turn t with `scripts[k][t - 1]` and EOS (cut at the request's
 * length); a sample is found by the `qK` marker in its prompt. Records every request.
 */
export function scriptedEngine(
  tok: HfTokenizer,
  scripts: string[][],
  requests: { rows: number; length: number; turn: number }[] = [],
): TurnGenerator {
  return (req) => {
    requests.push({ rows: req.batch, length: req.responseLength, turn: req.turn });
    const R = req.responseLength, L = req.promptLength;
    const responses = new Int32Array(req.batch * R).fill(tok.padTokenId);
    const responseMask = new Int32Array(req.batch * R);
    for (let a = 0; a < req.batch; a++) {
      const text = tok.decode(req.inputIds.subarray(a * L, a * L + L));
      const k = Number(/q(\d+)/.exec(text)![1]);
      const turn = scripts[k][req.turn - 1] ?? "done";
      const ids = [...tok.encode(turn, { addSpecialTokens: false }), tok.eosTokenId].slice(0, R);
      responses.set(ids, a * R);
      responseMask.fill(1, a * R, a * R + ids.length);
    }
    return Promise.resolve({ responses, responseMask });
  };
}

/** A tool that records its lifecycle calls and echoes its argument. */
export class RecordingTool implements AgentTool {
  readonly log: string[] = [];
  readonly schema: ToolSchema;
  constructor(readonly name: string) {
    this.schema = {
      type: "function",
      function: {
        name,
        parameters: { type: "object", properties: { x: { type: "string" } }, required: ["x"] },
      },
    };
  }
  create(id: string, kw: Record<string, unknown>): Promise<void> {
    this.log.push(`create ${id} ${JSON.stringify(kw)}`);
    return Promise.resolve();
  }
  execute(id: string, args: Record<string, unknown>): Promise<ToolResult> {
    this.log.push(`execute ${id} ${JSON.stringify(args)}`);
    return Promise.resolve({ text: `got ${args.x}` });
  }
  calcReward(id: string): Promise<number> {
    this.log.push(`calc_reward ${id}`);
    return Promise.resolve(0.5);
  }
  release(id: string): Promise<void> {
    this.log.push(`release ${id}`);
    return Promise.resolve();
  }
}
