/**
 * `deno task generate` with `rollout.multi_turn.enable`: each prompt row runs the agent loop
 * (tools and interactions from `rollout.multi_turn.*`) `data.n_samples` times, every turn a request
 * to one continuous-batching engine (rollout.max_num_seqs, kv_cache_tokens). Besides the
 * `responses` column (each response decoded as the reward manager reads it: every token up to
 * the policy's last, tool and user replies included), the output gains `conversations`: per row, a
 * list of n_samples conversations, each a list of `{role, content}` (prompt, assistant turns,
 * tool and user replies).
 */
import { enginePoolOptions, engineSettings, type GenerationConfig } from "../config/mod.ts";
import type { ChatMessage, Tokenizer } from "../io/mod.ts";
import { DataError, parseChatMessages, renderPrompt, type Row } from "../data/mod.ts";
import { Engine, engineTurns, prefixCacheMetrics, runAgentLoop } from "../rollout/mod.ts";
import {
  agentLoopOptions,
  agentSample,
  checkInteractionRows,
  closeAgentEnv,
  loadAgentEnv,
} from "./agent.ts";
import type { CausalLM, KvDtype } from "../nn/mod.ts";

/** A model ready to generate with, and where its context length came from (for messages). */
export interface GenerationModel {
  network: CausalLM;
  tokenizer: Tokenizer;
  eosTokenIds: number[];
  source: string;
}

export interface AgentGeneration {
  responses: string[][]; // [rows][n]
  conversations: ChatMessage[][][]; // [rows][n][messages]
  /** Tokens the policy generated. */
  tokens: number;
  /** Length of the longest prompt (tools' schemas rendered in), and its row. */
  longest: { length: number; row: number };
}

function record(v: unknown, at: { file: string; row: number }, column: string) {
  if (v === null || v === undefined) return null;
  if (typeof v !== "object" || Array.isArray(v)) {
    throw new DataError(at.file, `expected a struct, got ${JSON.stringify(v)}`, at.row, column);
  }
  return v as Record<string, unknown>;
}

/** Runs the agent loop over every row; `beforeStart` sees the longest prompt (context checks). */
export async function generateConversations(
  rows: Row[],
  m: GenerationModel,
  cfg: GenerationConfig,
  o: {
    print: (line: string) => void;
    beforeStart: (longest: AgentGeneration["longest"]) => void;
    /** rollout.dtype's KV cache (default f32). */
    kvDtype?: KvDtype;
  },
): Promise<AgentGeneration> {
  const mt = cfg.rollout.multi_turn, r = cfg.rollout, n = cfg.data.n_samples;
  const file = cfg.data.path, column = cfg.data.prompt_key;
  const env = await loadAgentEnv(mt, "rollout.multi_turn");
  try {
    const schemas = env.tools.map((t) => t.schema);
    const max = Math.min(cfg.data.max_prompt_length, r.prompt_length);
    const out: AgentGeneration = {
      responses: [],
      conversations: [],
      tokens: 0,
      longest: { length: 0, row: 0 },
    };
    const samples = rows.map((row, i) => {
      const at = { file, row: i };
      const messages = parseChatMessages(row[column], at, column);
      const length = renderPrompt(messages, m.tokenizer, { tools: schemas }).length;
      if (length > max) {
        throw new DataError(
          file,
          `the prompt with the tools' schemas is ${length} tokens, over ` +
            `${
              cfg.data.max_prompt_length <= r.prompt_length
                ? "data.max_prompt_length"
                : "rollout.prompt_length"
            }=${max} ` +
            "(multi-turn prompts are not truncated)",
          i,
          column,
        );
      }
      if (length > out.longest.length) out.longest = { length, row: i };
      const item = {
        file,
        row: i,
        rawPrompt: messages,
        extraInfo: record(row.extra_info, at, "extra_info") ?? {},
        interactionKwargs: record(row.interaction_kwargs, at, "interaction_kwargs"),
      };
      checkInteractionRows([item], env.interactions);
      return { ...agentSample({ ...item, messages }), where: `row ${i} of ${file}` };
    });
    o.beforeStart(out.longest);
    const options = agentLoopOptions(mt, {
      tokenizer: m.tokenizer,
      env,
      responseLength: r.response_length,
      maxPromptLength: max,
      eosTokenIds: r.ignore_eos ? [] : m.eosTokenIds,
      log: o.print,
    });
    const engine = generatorEngine(m.network, cfg, {
      sequences: cfg.data.batch_size * n,
      longest: out.longest.length + r.response_length,
      eosTokenIds: m.eosTokenIds,
      padTokenId: m.tokenizer.padTokenId,
      kvDtype: o.kvDtype,
    });
    try {
      for (let at = 0, batch = 0; at < rows.length; at += cfg.data.batch_size, batch++) {
        const part = samples.slice(at, at + cfg.data.batch_size);
        const seed = (cfg.trainer.seed + 7919 * batch) >>> 0;
        const { trajectories, metrics } = await runAgentLoop(
          part.flatMap((s) => Array(n).fill(s)),
          engineTurns(engine, { seed }),
          options,
        );
        for (let b = 0; b < part.length; b++) {
          const mine = trajectories.slice(b * n, b * n + n);
          out.responses.push(mine.map((t) => {
            const last = t.responseMask.lastIndexOf(1);
            out.tokens += t.responseMask.reduce((a, x) => a + x, 0);
            return m.tokenizer.decode(t.responseIds.slice(0, last + 1), {
              skipSpecialTokens: true,
            });
          }));
          out.conversations.push(mine.map((t) => t.messages));
        }
        const shown = Object.entries({ ...metrics, ...prefixCacheMetrics(engine) }).map(([k, v]) =>
          `${k}=${+v.toFixed(3)}`
        ).join(" ");
        o.print(
          `generated ${Math.min(at + part.length, rows.length)}/${rows.length} prompts: ${shown}`,
        );
      }
    } finally {
      await engine.close();
    }
    return out;
  } finally {
    closeAgentEnv(env);
  }
}

/**
 * The generator's engine: `rollout.*` sampling, `max_num_seqs`, and a pool for `sequences` of up
 * to `longest` positions (enginePoolBlocks, `rollout.kv_cache_tokens`).
 */
export function generatorEngine(
  model: CausalLM,
  cfg: GenerationConfig,
  o: {
    sequences: number;
    longest: number;
    eosTokenIds: number[];
    padTokenId: number;
    kvDtype?: KvDtype;
  },
): Engine {
  const r = cfg.rollout;
  return new Engine(model, {
    ...enginePoolOptions({ ...engineSettings(r), key: "rollout.kv_cache_tokens" }, o),
    kvDtype: o.kvDtype,
    eosTokenIds: r.ignore_eos ? [] : o.eosTokenIds,
    padTokenId: o.padTokenId,
    sampling: { temperature: r.temperature, topK: r.top_k, topP: r.top_p, doSample: r.do_sample },
  });
}
