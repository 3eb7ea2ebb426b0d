/**
 * The tool-calling agent loop (verl's ToolAgentLoop), run for a whole batch of conversations at
 * once, each on its own: a conversation submits its assistant turn as one request to the
 * generation engine (its full token sequence, prefilled again each turn: simple and exact, at the
 * cost of recomputing earlier turns' keys and values) and awaits it, while the others' turns and
 * tool calls go on (a continuous-batching engine decodes the turns in flight together); then its
 * tool calls run, or, for a turn without calls, the sample's interaction (a simulated user)
 * replies (turn.ts). A conversation stops when
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
  /** Hears each conversation as it ends: (conversations ended, conversations). */
  onProgress?: (done: number, total: number) => void;
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

/** One assistant turn of one conversation. */
export interface TurnRequest {
  /** The conversation's tokens so far: prompt, earlier turns, tool and user replies. */
  ids: number[];
  /** Most tokens the turn may add: the response budget left. */
  maxTokens: number;
  /** The conversation's index in the batch. */
  sample: number;
  /** 1 for its first assistant turn, then 2, ... */
  turn: number;
}

/**
 * The engine: one turn's tokens (at most maxTokens, the EOS included when it ended the turn) and,
 * when it keeps them, their log-probs.
 */
export type TurnGenerator = (
  request: TurnRequest,
) => Promise<{ tokens: ArrayLike<number>; logProbs?: ArrayLike<number> }>;

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
  /** Wall time it waited on the engine for its turns, and of its tool calls (verl's agent_loop timing). */
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
    // Each conversation runs its turns on its own; the engine batches the requests in flight.
    let ended = 0;
    await Promise.all(states.map(async (s) => {
      for (let turn = 1; !s.done; turn++) {
        const room = R - s.ids.length;
        if (room <= 0) break;
        const t0 = performance.now();
        const out = await generateTurn({
          ids: [...s.promptIds, ...s.ids],
          maxTokens: room,
          sample: s.index,
          turn,
        });
        s.seconds.generate += (performance.now() - t0) / 1000;
        const turnIds = Array.from(out.tokens).slice(0, room);
        if (out.logProbs) {
          withLogProbs = true;
          s.logProbs.push(...Array.from(out.logProbs).slice(0, turnIds.length));
        }
        await afterTurn(ctx, s, turnIds);
      }
      o.onProgress?.(++ended, states.length);
    }));
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
