/**
 * What happens after one assistant turn of a conversation: its tool calls run and their replies
 * are appended as `tool` messages; a turn without calls goes to the sample's interaction (if it
 * has one), whose reply is appended as a `user` message and may end the conversation. Appended
 * tokens are tokenized by deltas (tokenize.ts) and get response_mask 0.
 */
import type { ChatMessage, Tokenizer } from "../../io/mod.ts";
import { runCalls, type ToolStats } from "./calls.ts";
import type { AgentInteraction } from "./interaction.ts";
import type { ParsedTurn } from "./parser.ts";
import { checkTokenization, deltaTokens, type SanityCheckMode } from "./tokenize.ts";
import type { TruncateSide } from "./truncate.ts";
import type { AgentTool, ToolSchema } from "./types.ts";

/** One conversation in flight. */
export interface ConversationState {
  index: number;
  messages: ChatMessage[];
  promptIds: number[];
  ids: number[]; // response tokens so far
  mask: number[];
  logProbs: number[];
  assistantTurns: number;
  /** verl's user_turns: tool turns and interaction turns. */
  userTurns: number;
  /** Tool name -> instance id. */
  instances: Map<string, string>;
  toolRewards: Record<string, number>;
  /** Each call's step reward, in order (verl's tool_rewards). */
  toolStepRewards: number[];
  /** Wall time this conversation waited on the engine for its turns, and of its tool calls. */
  seconds: { generate: number; tools: number };
  interaction: {
    impl: AgentInteraction;
    id: string;
    kwargs: Record<string, unknown>;
    turns: number;
    scores: number[];
    terminated: boolean;
    /** calculate_score at the end; null when it failed. */
    final: number | null;
  } | null;
  done: boolean;
}

/** Counts of interaction calls over a batch, for the step's metrics. */
export class InteractionStats {
  errors = 0;
  readonly latency: number[] = [];
  readonly messages: string[] = [];
  /** Samples with a failed call. */
  readonly failed = new Set<number>();

  fail(s: ConversationState, what: string, e: unknown): void {
    this.errors++;
    this.failed.add(s.index);
    const name = s.interaction?.impl.name ?? "?";
    this.messages.push(`sample ${s.index}: interaction ${name}.${what}: ${(e as Error).message}`);
  }

  /**
   * Failed interaction calls end their conversation and are reported; when most of the batch's
   * conversations hit one, the interaction is broken, not unlucky: the batch stops.
   */
  report(samples: number, log: (line: string) => void): void {
    if (this.errors === 0) return;
    for (const m of this.messages.slice(0, 3)) log(m);
    if (this.messages.length > 3) log(`interaction: ${this.messages.length - 3} more failures`);
    if (this.failed.size * 2 > samples) {
      throw new Error(
        `the interaction failed for ${this.failed.size} of ${samples} samples; first: ` +
          this.messages[0],
      );
    }
  }
}

/** What a turn needs from the loop. */
export interface TurnContext {
  tokenizer: Tokenizer;
  schemas: ToolSchema[];
  tools: ReadonlyMap<string, AgentTool>;
  parse: (text: string) => ParsedTurn;
  responseLength: number;
  maxAssistantTurns: number | null;
  maxUserTurns: number | null;
  maxParallelCalls: number;
  maxToolResponseLength: number;
  toolResponseTruncateSide: TruncateSide;
  sanityCheck: SanityCheckMode;
  eosTokenIds: readonly number[];
  stats: ToolStats;
  interactionStats: InteractionStats;
}

/** Records the turn's tokens, then runs its calls or the interaction, or ends the conversation. */
export async function afterTurn(
  c: TurnContext,
  s: ConversationState,
  turnIds: number[],
): Promise<void> {
  const tok = c.tokenizer;
  s.ids.push(...turnIds);
  s.mask.push(...turnIds.map(() => 1));
  s.assistantTurns++;
  const ended = turnIds.length > 0 && c.eosTokenIds.includes(turnIds[turnIds.length - 1]);
  const turnText = tok.decode(turnIds);
  const content = tok.decode(ended ? turnIds.slice(0, -1) : turnIds);
  const history = [...s.messages, { role: "assistant", content }];
  s.messages = history;
  if (
    s.ids.length >= c.responseLength ||
    (c.maxAssistantTurns && s.assistantTurns >= c.maxAssistantTurns) ||
    (c.maxUserTurns && s.userTurns >= c.maxUserTurns)
  ) return void (s.done = true);
  const calls = c.parse(content).calls.slice(0, c.maxParallelCalls);
  if (calls.length > 0) {
    const t0 = performance.now();
    const replies = await runCalls(calls, {
      tools: c.tools,
      instances: s.instances,
      maxToolResponseLength: c.maxToolResponseLength,
      truncateSide: c.toolResponseTruncateSide,
      stats: c.stats,
    });
    s.seconds.tools += (performance.now() - t0) / 1000;
    s.toolStepRewards.push(...replies.map((r) => r.reward));
    const added = replies.map((r) => ({ role: "tool", content: r.text }));
    return append(c, s, { history, turnText, added });
  }
  const it = s.interaction;
  if (!it) return void (s.done = true);
  const t0 = performance.now();
  let reply;
  try {
    reply = await it.impl.generateResponse(it.id, history, it.kwargs);
  } catch (e) {
    c.interactionStats.fail(s, "generateResponse", e);
    return void (s.done = true);
  } finally {
    c.interactionStats.latency.push((performance.now() - t0) / 1000);
  }
  it.turns++;
  if (reply.score !== null) it.scores.push(reply.score);
  // As verl: the user's reply is appended even past the budget (the response is cut there).
  const added = [{ role: "user", content: reply.content }];
  append(c, s, { history, turnText, added }, { mustFit: false });
  if (reply.shouldTerminate) it.terminated = true;
  if (reply.shouldTerminate || s.ids.length >= c.responseLength) s.done = true;
}

/**
 * Appends tool or user messages after the assistant turn. As verl: a tool reply that does not
 * fit in the response budget (`mustFit`) ends the conversation before it is appended.
 */
function append(
  c: TurnContext,
  s: ConversationState,
  d: { history: ChatMessage[]; turnText: string; added: ChatMessage[] },
  o: { mustFit: boolean } = { mustFit: true },
): void {
  const tok = c.tokenizer;
  const delta = deltaTokens(tok, c.schemas, { ...d, ids: [...s.promptIds, ...s.ids] });
  if (o.mustFit && s.ids.length + delta.length >= c.responseLength) return void (s.done = true);
  s.messages = [...d.history, ...d.added];
  s.ids.push(...delta);
  s.mask.push(...delta.map(() => 0));
  s.logProbs.push(...delta.map(() => 0));
  s.userTurns++;
  checkTokenization(tok, c.schemas, s.messages, [...s.promptIds, ...s.ids], c.sanityCheck);
}
