/** Test fixtures of the agent loop: a character tokenizer whose template has a tool role, the
 * loop's options, a tiny model and a greedy engine over that tokenizer, and a scripted engine
 * that writes given turns. */
import { CHAR_ALPHABET, charTokenizerFiles, HfTokenizer } from "../../io/mod.ts";
import { CausalLM, tinyModelConfig, tinyWeights } from "../../nn/mod.ts";
import { Engine, type EngineOptions } from "../engine.ts";
import type { AgentLoopOptions, TurnGenerator } from "./loop.ts";
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

/** Hermes calls, no turn limits, one call a turn, 200 response tokens; `over` overrides. */
export function loopOptions(
  tok: HfTokenizer,
  over: Partial<AgentLoopOptions> = {},
): AgentLoopOptions {
  return {
    tokenizer: tok,
    tools: [],
    format: "hermes",
    maxAssistantTurns: null,
    maxUserTurns: null,
    maxParallelCalls: 1,
    maxToolResponseLength: 256,
    toolResponseTruncateSide: "middle",
    sanityCheck: "strict",
    responseLength: 200,
    maxPromptLength: 100,
    eosTokenIds: [tok.eosTokenId],
    ...over,
  };
}

/** A tiny model over `tok`'s vocabulary and EOS (varied weights, seed 9), 512 positions. */
export function agentModel(tok: HfTokenizer): CausalLM {
  const config = tinyModelConfig({
    vocabSize: tok.vocabSize,
    eosTokenId: tok.eosTokenId,
    maxPositionEmbeddings: 512,
  });
  return CausalLM.fromTensors(config, tinyWeights(config, { seed: 9, init: "varied" }));
}

/** A greedy engine over `tok`'s EOS and pad: 4 sequences, 64 blocks of 8; `o` overrides. */
export function agentEngine(
  model: CausalLM,
  tok: HfTokenizer,
  o: Partial<EngineOptions> = {},
): Engine {
  return new Engine(model, {
    maxSeqs: 4,
    blockSize: 8,
    numBlocks: 64,
    eosTokenIds: [tok.eosTokenId],
    padTokenId: tok.padTokenId,
    sampling: { doSample: false },
    ...o,
  });
}

/**
 * An engine that answers sample k's turn t with `scripts[k][t - 1]` and EOS (cut at the request's
 * maxTokens); a sample is found by the `qK` marker in its prompt. Records every request; each
 * answer comes `delayMs` later (default 0: at once).
 */
export function scriptedEngine(
  tok: HfTokenizer,
  scripts: string[][],
  requests: { sample: number; length: number; turn: number }[] = [],
  delayMs = 0,
): TurnGenerator {
  return async (req) => {
    requests.push({ sample: req.sample, length: req.maxTokens, turn: req.turn });
    const k = Number(/q(\d+)/.exec(tok.decode(req.ids))![1]);
    const turn = scripts[k][req.turn - 1] ?? "done";
    const tokens = [...tok.encode(turn, { addSpecialTokens: false }), tok.eosTokenId];
    if (delayMs > 0) await new Promise((ok) => setTimeout(ok, delayMs));
    return { tokens: tokens.slice(0, req.maxTokens) };
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
