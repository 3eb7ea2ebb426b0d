/**
 * The tool-calling agent loop (verl's ToolAgentLoop), run for a whole batch of conversations at
 * once: each turn, every conversation still going gets one assistant turn from the generation
 * engine (its full token sequence is prefilled again each turn: simple and exact, at the cost of
 * recomputing earlier turns' keys and values); then its tool calls run, or, for a turn without
 * calls, the sample's interaction (a simulated user) replies (turn.ts). A conversation stops when
 * a turn makes no call and has no interaction, when the interaction ends it, when
 * `max_assistant_turns` or `max_user_turns` is reached, or when the response budget
 * (`rollout.response_length` tokens over the whole conversation, tool and user replies included)
 * is spent. `responseMask` is 1 on the policy's tokens and 0 on the tools' and the user's.
 */
import type { ChatMessage, Tokenizer } from "../../io/mod.ts";
import { renderPrompt } from "../../data/mod.ts";
import { ToolStats } from "./calls.ts";
import type { AgentInteraction } from "./interaction.ts";
import { loopMetrics } from "./loop_metrics.ts";
import { TOOL_PARSERS } from "./parser.ts";
import type { SanityCheckMode } from "./tokenize.ts";
import type { TruncateSide } from "./truncate.ts";
import { afterTurn, type ConversationState, InteractionStats, type TurnContext } from "./turn.ts";
import type { AgentTool } from "./types.ts";

export interface AgentLoopOptions {
  tokenizer: Tokenizer;
  tools: readonly AgentTool[];
  /** The interactions a sample may name (multi_turn.interaction_config_path). */
  interactions?: readonly AgentInteraction[];
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
  /** Where lines about failed interaction calls go (default console.warn). */
  log?: (line: string) => void;
}

/** One conversation to run. */
export interface AgentSample {
  messages: ChatMessage[];
  /** `extra_info.tools_kwargs`: per tool name, `{create_kwargs}`. */
  toolsKwargs?: Record<string, unknown>;
  /** The row's `interaction_kwargs` (`name` picks the interaction; all go to its calls). */
  interactionKwargs?: Record<string, unknown> | null;
  /** Names the sample in errors (e.g. its file and row); default `sample <i>`. */
  where?: string;
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
  responseMask: number[]; // 1 = policy token, 0 = tool and user tokens
  /** The sampler's log-probs of the policy's tokens (0 elsewhere), when the engine gave them. */
  responseLogProbs?: number[];
  /** The conversation with roles: prompt, assistant turns (as decoded), tool and user replies. */
  messages: ChatMessage[];
  /** verl's count: assistant turns + user turns (tool and interaction replies) + 1. */
  numTurns: number;
  /** calc_reward of each tool at the end (extra_info.rollout_reward_scores). */
  toolRewards: Record<string, number>;
  /** Each tool call's step reward, in order (verl's tool_rewards). */
  toolStepRewards: number[];
  /** The interaction's score of each of its turns (verl's turn_scores). */
  turnScores: number[];
  /** Wall time of the engine's turns it was in, and of its tool calls (verl's agent_loop timing). */
  seconds: { generate: number; tools: number };
  /** The sample's interaction: its name, replies, whether it ended the conversation, final score. */
  interaction?: { name: string; turns: number; terminated: boolean; score: number | null };
}

let instanceCounter = 0;

function createKwargs(sample: AgentSample, name: string): Record<string, unknown> {
  const kw = (sample.toolsKwargs?.[name] as { create_kwargs?: unknown } | undefined)?.create_kwargs;
  return typeof kw === "object" && kw !== null ? kw as Record<string, unknown> : {};
}

/**
 * The interaction a sample names (verl requires `name`; with one interaction it may be left
 * out); null when none are configured. Throws naming the sample when it names none or another.
 */
export function pickInteraction(
  sample: AgentSample,
  i: number,
  all: readonly AgentInteraction[],
): AgentInteraction | null {
  if (all.length === 0) return null;
  const kw = sample.interactionKwargs;
  const names = all.map((x) => x.name).join(", ");
  const where = sample.where ?? `sample ${i}`;
  if (!kw) {
    throw new Error(
      `${where} has no interaction_kwargs, but multi_turn.interaction_config_path names ` +
        `interactions (${names}): give each row interaction_kwargs: {name, ...}`,
    );
  }
  if (kw.name === undefined && all.length === 1) return all[0];
  const found = all.find((x) => x.name === kw.name);
  if (!found) {
    throw new Error(
      `${where} names interaction_kwargs.name=${JSON.stringify(kw.name)}, not an interaction ` +
        `of multi_turn.interaction_config_path (${names})`,
    );
  }
  return found;
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
  const tok = o.tokenizer, R = o.responseLength;
  const ctx: TurnContext = {
    ...o,
    schemas: o.tools.map((t) => t.schema),
    tools: new Map(o.tools.map((t) => [t.name, t])),
    parse: parser,
    stats: new ToolStats(),
    interactionStats: new InteractionStats(),
  };
  let withLogProbs = false;
  const states: ConversationState[] = samples.map((sample, i) => {
    const promptIds = renderPrompt(sample.messages, tok, { tools: ctx.schemas });
    if (promptIds.length > o.maxPromptLength) {
      throw new Error(
        `${
          sample.where ?? `sample ${i}`
        }: the prompt with the tools' schemas is ${promptIds.length} tokens, over ` +
          `data.max_prompt_length=${o.maxPromptLength}`,
      );
    }
    const impl = pickInteraction(sample, i, o.interactions ?? []);
    return {
      index: i,
      messages: [...sample.messages],
      promptIds,
      ids: [],
      mask: [],
      logProbs: [],
      assistantTurns: 0,
      userTurns: 0,
      instances: new Map(),
      toolRewards: {},
      toolStepRewards: [],
      seconds: { generate: 0, tools: 0 },
      interaction: impl && {
        impl,
        id: `${impl.name}-${++instanceCounter}`,
        kwargs: sample.interactionKwargs ?? {},
        turns: 0,
        scores: [],
        terminated: false,
        final: null,
      },
      done: false,
    };
  });
  const started: ConversationState[] = [];
  try {
    // Lifecycle: one instance of each tool and one interaction session per trajectory, started
    // before its first turn.
    await Promise.all(states.flatMap((s) =>
      o.tools.map(async (t) => {
        const id = `${t.name}-${++instanceCounter}`;
        await t.create(id, createKwargs(samples[s.index], t.name));
        s.instances.set(t.name, id);
      })
    ));
    await Promise.all(states.map(async (s) => {
      const it = s.interaction;
      if (!it) return;
      try {
        await it.impl.start(it.id, it.kwargs);
        started.push(s);
      } catch (e) {
        ctx.interactionStats.fail(s, "start", e);
        s.interaction = null;
      }
    }));
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
      const t0 = performance.now();
      const out = await generateTurn({
        inputIds,
        attentionMask,
        batch: active.length,
        promptLength: L,
        responseLength: budget,
        turn,
      });
      withLogProbs = out.logProbs !== undefined;
      for (const s of active) s.seconds.generate += (performance.now() - t0) / 1000;
      await Promise.all(active.map((s, a) => {
        const room = R - s.ids.length;
        const turnIds: number[] = [];
        for (let r = 0; r < Math.min(budget, room); r++) {
          if (!out.responseMask[a * budget + r]) break;
          turnIds.push(out.responses[a * budget + r]);
          if (out.logProbs) s.logProbs.push(out.logProbs[a * budget + r]);
        }
        return afterTurn(ctx, s, turnIds);
      }));
    }
    // calc_reward / calculate_score before release / finalize, as verl's lifecycle.
    for (const s of states) {
      for (const [name, id] of s.instances) {
        s.toolRewards[name] = await ctx.tools.get(name)!.calcReward(id).catch(() => 0);
      }
      const it = s.interaction;
      if (it) {
        it.final = await it.impl.calculateScore(it.id, it.kwargs).catch((e) => {
          ctx.interactionStats.fail(s, "calculateScore", e);
          return null;
        });
      }
    }
  } finally {
    await Promise.all([
      ...states.flatMap((s) =>
        [...s.instances].map(([name, id]) => ctx.tools.get(name)!.release(id).catch(() => {}))
      ),
      ...started.map((s) =>
        s.interaction?.impl.finalize(s.interaction.id, s.interaction.kwargs).catch(() => {})
      ),
    ]);
  }
  ctx.interactionStats.report(states.length, o.log ?? console.warn);
  const trajectories: Trajectory[] = states.map((s) => ({
    promptIds: s.promptIds,
    responseIds: s.ids.slice(0, R),
    responseMask: s.mask.slice(0, R),
    responseLogProbs: withLogProbs ? s.logProbs.slice(0, R) : undefined,
    messages: s.messages,
    numTurns: s.assistantTurns + s.userTurns + 1,
    toolRewards: s.toolRewards,
    toolStepRewards: s.toolStepRewards,
    turnScores: s.interaction?.scores ?? [],
    seconds: s.seconds,
    ...(s.interaction
      ? {
        interaction: {
          name: s.interaction.impl.name,
          turns: s.interaction.turns,
          terminated: s.interaction.terminated,
          score: s.interaction.final,
        },
      }
      : {}),
  }));
  return { trajectories, metrics: loopMetrics(trajectories, ctx) };
}
