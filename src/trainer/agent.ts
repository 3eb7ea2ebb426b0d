/**
 * The agent loop as the trainer and the generator run it: its tools and interactions loaded from
 * `multi_turn.*`, its options, and one sample per prompt row.
 */
import { ConfigError, type PpoConfig } from "../config/mod.ts";
import type { ChatMessage, Tokenizer } from "../io/mod.ts";
import { DataError } from "../data/mod.ts";
import {
  type AgentInteraction,
  type AgentLoopOptions,
  type AgentSample,
  type AgentTool,
  loadInteractionConfig,
  loadToolConfig,
  pickInteraction,
  type Trajectory,
  type TruncateSide,
} from "../rollout/mod.ts";

/** `multi_turn.*` (the same keys under actor_rollout_ref.rollout and the generator's rollout). */
export type MultiTurnConfig = PpoConfig["actor_rollout_ref"]["rollout"]["multi_turn"];

/** What the loop calls out to: tools (tool_config_path) and interactions (interaction_config_path). */
export interface AgentEnv {
  tools: AgentTool[];
  interactions: AgentInteraction[];
}

/**
 * Loads the YAML files `multi_turn.*` names; a bad file is a ConfigError on its key (`prefix` is
 * where the section sits: the trainer's actor_rollout_ref.rollout.multi_turn by default).
 */
export async function loadAgentEnv(
  mt: MultiTurnConfig,
  prefix = "actor_rollout_ref.rollout.multi_turn",
): Promise<AgentEnv> {
  const load = async <T>(key: string, path: string | null, f: (p: string) => Promise<T[]>) => {
    try {
      return path ? await f(path) : [];
    } catch (e) {
      throw new ConfigError(`${prefix}.${key}`, (e as Error).message);
    }
  };
  const tools = await load("tool_config_path", mt.tool_config_path, loadToolConfig);
  try {
    const interactions = await load(
      "interaction_config_path",
      mt.interaction_config_path,
      loadInteractionConfig,
    );
    return { tools, interactions };
  } catch (e) {
    for (const t of tools) t.close?.();
    throw e;
  }
}

/**
 * Tools or interactions configured for a run in which no row runs the agent loop would be
 * silently unused: an error naming the key and the two ways to run the loop.
 */
export function checkAgentUsed(
  mt: MultiTurnConfig,
  o: { prefix: string; agentRows: boolean },
): void {
  if (mt.enable || o.agentRows) return;
  const key = mt.interaction_config_path
    ? "interaction_config_path"
    : mt.tool_config_path
    ? "tool_config_path"
    : null;
  if (key === null) return;
  throw new ConfigError(
    `${o.prefix}.${key}`,
    `${o.prefix}.${key}=${mt[key]} is set, but no prompt runs the agent loop: set ` +
      `${o.prefix}.enable=true, or give the rows agent_name: tool_agent`,
  );
}

/** Stops the workers of user tools and interactions. */
export function closeAgentEnv(env: Partial<AgentEnv>): void {
  for (const t of env.tools ?? []) t.close?.();
  for (const i of env.interactions ?? []) i.close?.();
}

export function agentLoopOptions(
  mt: MultiTurnConfig,
  o: {
    tokenizer: Tokenizer;
    env: Partial<AgentEnv>;
    responseLength: number;
    maxPromptLength: number;
    eosTokenIds: number[];
    log?: (line: string) => void;
  },
): AgentLoopOptions {
  return {
    tokenizer: o.tokenizer,
    tools: o.env.tools ?? [],
    interactions: o.env.interactions ?? [],
    format: mt.format,
    maxAssistantTurns: mt.max_assistant_turns,
    maxUserTurns: mt.max_user_turns,
    maxParallelCalls: mt.max_parallel_calls,
    maxToolResponseLength: mt.max_tool_response_length,
    toolResponseTruncateSide: mt.tool_response_truncate_side as TruncateSide,
    sanityCheck: mt.tokenization_sanity_check_mode,
    responseLength: o.responseLength,
    maxPromptLength: o.maxPromptLength,
    eosTokenIds: o.eosTokenIds,
    log: o.log,
  };
}

function asRecord(v: unknown): Record<string, unknown> | null {
  return typeof v === "object" && v !== null && !Array.isArray(v)
    ? v as Record<string, unknown>
    : null;
}

/**
 * A row as the loop runs it: its messages, `extra_info.tools_kwargs`, and its interaction
 * kwargs: the `interaction_kwargs` column, else `extra_info.interaction_kwargs` (where verl's
 * gsm8k multi-turn preprocessing puts them).
 */
export function agentSample(row: {
  messages: ChatMessage[];
  extraInfo: Record<string, unknown>;
  interactionKwargs?: Record<string, unknown> | null;
}): AgentSample {
  return {
    messages: row.messages,
    toolsKwargs: asRecord(row.extraInfo.tools_kwargs) ?? {},
    interactionKwargs: row.interactionKwargs ?? asRecord(row.extraInfo.interaction_kwargs),
  };
}

/**
 * With interactions configured, every row must name one of them: checked when the data loads,
 * so a bad row is an error naming its file and row before any step runs.
 */
export function checkInteractionRows(
  items: {
    file: string;
    row: number;
    rawPrompt: ChatMessage[];
    extraInfo: Record<string, unknown>;
    interactionKwargs: Record<string, unknown> | null;
  }[],
  interactions: readonly AgentInteraction[],
): void {
  if (interactions.length === 0) return;
  for (const it of items) {
    try {
      pickInteraction(
        { ...agentSample({ ...it, messages: it.rawPrompt }), where: "this row" },
        0,
        interactions,
      );
    } catch (e) {
      throw new DataError(it.file, (e as Error).message, it.row);
    }
  }
}

/**
 * What verl's reward managers add to a multi-turn sample's extra_info: the turn count, each
 * tool's calc_reward, the tools' step rewards and the interaction's turn scores (and, here, its
 * final calculate_score).
 */
export function trajectoryExtraInfo(t: Trajectory): Record<string, unknown> {
  return {
    num_turns: t.numTurns,
    rollout_reward_scores: t.toolRewards,
    tool_rewards: t.toolStepRewards,
    turn_scores: t.turnScores,
    ...(t.interaction ? { interaction_score: t.interaction.score } : {}),
  };
}

/** The fields of trajectoryExtraInfo that generation dumps carry beside `messages`. */
export function agentDumpFields(
  extra: Record<string, unknown>,
): { num_turns?: number; turn_scores?: number[]; tool_rewards?: number[] } {
  const nums = (v: unknown) => Array.isArray(v) ? v as number[] : undefined;
  return {
    num_turns: typeof extra.num_turns === "number" ? extra.num_turns : undefined,
    turn_scores: nums(extra.turn_scores),
    tool_rewards: nums(extra.tool_rewards),
  };
}
