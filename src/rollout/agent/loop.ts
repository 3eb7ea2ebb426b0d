/**
 * The tool-calling agent loop (verl's ToolAgentLoop), run for a whole batch of conversations at
 * once: each turn, every conversation still going gets one assistant turn from the generation
 * engine (its full token sequence is prefilled again each turn: simple and exact, at the cost of
 * recomputing earlier turns' keys and values), then its tool calls run and their replies are
 * appended as `tool` messages, tokenized by deltas (tokenize.ts). A conversation stops when a
 * turn makes no call, when `max_assistant_turns` or `max_user_turns` is reached, or when the
 * response budget (`rollout.response_length` tokens over the whole conversation, tool replies
 * included) is spent. `responseMask` is 1 on the policy's tokens and 0 on the tools'.
 */
import type { ChatMessage, Tokenizer } from "../../io/mod.ts";
import { renderPrompt } from "../../data/mod.ts";
import { runCalls, ToolStats } from "./calls.ts";
import { TOOL_PARSERS } from "./parser.ts";
import { checkTokenization, deltaTokens, type SanityCheckMode } from "./tokenize.ts";
import type { TruncateSide } from "./truncate.ts";
import type { AgentTool } from "./types.ts";

export interface AgentLoopOptions {
  tokenizer: Tokenizer;
  tools: readonly AgentTool[];
  /** `multi_turn.format`: a name in TOOL_PARSERS. */
  format: string;
  maxAssistantTurns: number | null;
  maxUserTurns: number | null;
  maxParallelCalls: number;
  maxToolResponseLength: number;
  toolResponseTruncateSide: TruncateSide;
  sanityCheck: SanityCheckMode;
  /** Response tokens over the whole conversation (rollout.response_length). */
  responseLength: number;
  /** Longest prompt (with the tools' schemas rendered in); longer is an error. */
  maxPromptLength: number;
  eosTokenIds: readonly number[];
}

/** One conversation to run. */
export interface AgentSample {
  messages: ChatMessage[];
  /** `extra_info.tools_kwargs`: per tool name, `{create_kwargs}`. */
  toolsKwargs?: Record<string, unknown>;
}

/** Left-padded sequences for one turn, and the most tokens any of them may add. */
export interface TurnRequest {
  inputIds: Int32Array; // [A, L] left-padded
  attentionMask: Int32Array; // [A, L]
  batch: number; // A
  promptLength: number; // L
  responseLength: number;
  /** 1 for the first assistant turn, then 2, ... (a seed stream per turn). */
  turn: number;
}

/** The engine: `[A, L]` in, `[A, responseLength]` tokens out (mask 1 up to and including EOS). */
export type TurnGenerator = (
  request: TurnRequest,
) => Promise<{ responses: Int32Array; responseMask: Int32Array; logProbs?: Float32Array }>;

export interface Trajectory {
  promptIds: number[];
  responseIds: number[]; // at most responseLength
  responseMask: number[]; // 1 = policy token, 0 = tool tokens
  /** The sampler's log-probs of the policy's tokens (0 on tool tokens), when the engine gave them. */
  responseLogProbs?: number[];
  /** The conversation with roles: prompt, assistant turns (as decoded) and tool replies. */
  messages: ChatMessage[];
  /** verl's count: assistant turns + tool turns + 1. */
  numTurns: number;
  /** calc_reward of each tool at the end (extra_info.rollout_reward_scores). */
  toolRewards: Record<string, number>;
}

interface State {
  sample: AgentSample;
  messages: ChatMessage[];
  promptIds: number[];
  ids: number[]; // response tokens so far
  mask: number[];
  logProbs: number[];
  assistantTurns: number;
  userTurns: number;
  instances: Map<string, string>;
  toolRewards: Record<string, number>;
  done: boolean;
}

let instanceCounter = 0;

function createKwargs(sample: AgentSample, name: string): Record<string, unknown> {
  const kw = (sample.toolsKwargs?.[name] as { create_kwargs?: unknown } | undefined)?.create_kwargs;
  return typeof kw === "object" && kw !== null ? kw as Record<string, unknown> : {};
}

export async function runAgentLoop(
  samples: AgentSample[],
  generateTurn: TurnGenerator,
  o: AgentLoopOptions,
): Promise<{ trajectories: Trajectory[]; metrics: Record<string, number> }> {
  const parser = Object.hasOwn(TOOL_PARSERS, o.format)
    ? TOOL_PARSERS[o.format as keyof typeof TOOL_PARSERS]
    : undefined;
  if (!parser) {
    throw new Error(`multi_turn.format=${o.format}: one of ${Object.keys(TOOL_PARSERS)}`);
  }
  const parse = parser;
  const tok = o.tokenizer, R = o.responseLength;
  const schemas = o.tools.map((t) => t.schema);
  const toolMap = new Map(o.tools.map((t) => [t.name, t]));
  const stats = new ToolStats();
  let withLogProbs = false;
  const states: State[] = samples.map((sample, i) => {
    const promptIds = renderPrompt(sample.messages, tok, { tools: schemas });
    if (promptIds.length > o.maxPromptLength) {
      throw new Error(
        `sample ${i}: the prompt with the tools' schemas is ${promptIds.length} tokens, over ` +
          `data.max_prompt_length=${o.maxPromptLength}`,
      );
    }
    return {
      sample,
      messages: [...sample.messages],
      promptIds,
      ids: [],
      mask: [],
      logProbs: [],
      assistantTurns: 0,
      userTurns: 0,
      instances: new Map(),
      toolRewards: {},
      done: false,
    };
  });
  // Lifecycle: one instance of each tool per trajectory, created before its first turn.
  await Promise.all(states.flatMap((s) =>
    o.tools.map(async (t) => {
      const id = `${t.name}-${++instanceCounter}`;
      await t.create(id, createKwargs(s.sample, t.name));
      s.instances.set(t.name, id);
    })
  ));
  try {
    for (let turn = 1; states.some((s) => !s.done); turn++) {
      const active = states.filter((s) => !s.done);
      const seqs = active.map((s) => [...s.promptIds, ...s.ids]);
      const L = Math.max(...seqs.map((q) => q.length));
      const inputIds = new Int32Array(active.length * L).fill(tok.padTokenId);
      const attentionMask = new Int32Array(active.length * L);
      seqs.forEach((q, a) => {
        inputIds.set(q, a * L + L - q.length);
        attentionMask.fill(1, a * L + L - q.length, a * L + L);
      });
      const budget = Math.max(...active.map((s) => R - s.ids.length));
      const out = await generateTurn({
        inputIds,
        attentionMask,
        batch: active.length,
        promptLength: L,
        responseLength: budget,
        turn,
      });
      const pending: Promise<void>[] = [];
      active.forEach((s, a) => {
        const room = R - s.ids.length;
        const turnIds: number[] = [];
        for (let r = 0; r < Math.min(budget, room); r++) {
          if (!out.responseMask[a * budget + r]) break;
          turnIds.push(out.responses[a * budget + r]);
          if (out.logProbs) s.logProbs.push(out.logProbs[a * budget + r]);
        }
        withLogProbs = out.logProbs !== undefined;
        pending.push(afterTurn(s, turnIds));
      });
      await Promise.all(pending);
    }
    // calc_reward before release, as verl's lifecycle.
    for (const s of states) {
      for (const [name, id] of s.instances) {
        s.toolRewards[name] = await toolMap.get(name)!.calcReward(id).catch(() => 0);
      }
    }
  } finally {
    await Promise.all(
      states.flatMap((s) =>
        [...s.instances].map(([name, id]) => toolMap.get(name)!.release(id).catch(() => {}))
      ),
    );
  }

  async function afterTurn(s: State, turnIds: number[]): Promise<void> {
    s.ids.push(...turnIds);
    s.mask.push(...turnIds.map(() => 1));
    s.assistantTurns++;
    const ended = turnIds.length > 0 && o.eosTokenIds.includes(turnIds[turnIds.length - 1]);
    const turnText = tok.decode(turnIds);
    const content = tok.decode(ended ? turnIds.slice(0, -1) : turnIds);
    const history = [...s.messages, { role: "assistant", content }];
    s.messages = history;
    if (
      s.ids.length >= R || (o.maxAssistantTurns && s.assistantTurns >= o.maxAssistantTurns) ||
      (o.maxUserTurns && s.userTurns >= o.maxUserTurns)
    ) return void (s.done = true);
    const calls = parse(content).calls.slice(0, o.maxParallelCalls);
    if (calls.length === 0) return void (s.done = true);
    const texts = await runCalls(calls, {
      tools: toolMap,
      instances: s.instances,
      maxToolResponseLength: o.maxToolResponseLength,
      truncateSide: o.toolResponseTruncateSide,
      stats,
    });
    const added = texts.map((content) => ({ role: "tool", content }));
    const delta = deltaTokens(tok, schemas, {
      history,
      ids: [...s.promptIds, ...s.ids],
      turnText,
      added,
    });
    // As verl: a tool reply that does not fit ends the conversation before it is appended.
    if (s.ids.length + delta.length >= R) return void (s.done = true);
    s.messages = [...history, ...added];
    s.ids.push(...delta);
    s.mask.push(...delta.map(() => 0));
    s.logProbs.push(...delta.map(() => 0));
    s.userTurns++;
    checkTokenization(tok, schemas, s.messages, [...s.promptIds, ...s.ids], o.sanityCheck);
  }

  const trajectories: Trajectory[] = states.map((s) => ({
    promptIds: s.promptIds,
    responseIds: s.ids.slice(0, R),
    responseMask: s.mask.slice(0, R),
    responseLogProbs: withLogProbs ? s.logProbs.slice(0, R) : undefined,
    messages: s.messages,
    numTurns: s.assistantTurns + s.userTurns + 1,
    toolRewards: s.toolRewards,
  }));
  const turns = trajectories.map((t) => t.numTurns);
  const metrics = {
    "num_turns/mean": turns.reduce((a, b) => a + b, 0) / Math.max(1, turns.length),
    "num_turns/max": Math.max(...turns),
    "num_turns/min": Math.min(...turns),
    ...stats.metrics(),
  };
  return { trajectories, metrics };
}
