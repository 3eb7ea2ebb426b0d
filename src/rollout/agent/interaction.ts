/**
 * Interactions (verl's BaseInteraction): a simulated user that answers each assistant turn that
 * makes no tool call. Per trajectory the loop calls `start` once (with the row's
 * `interaction_kwargs`), `generateResponse` after each such turn (its text becomes a `user`
 * message; it may end the conversation and gives a turn score), then `calculateScore` and
 * `finalize` when the trajectory ends.
 */
import type { ChatMessage } from "../../io/mod.ts";
import { gsm8kScore } from "../../reward/mod.ts";

/** What the simulated user says after an assistant turn (verl's 4-tuple). */
export interface InteractionReply {
  /** End the conversation after this reply. */
  shouldTerminate: boolean;
  /** The user message appended to the conversation. */
  content: string;
  /** The turn's score (extra_info.turn_scores); null records none. */
  score: number | null;
  extra: Record<string, unknown>;
}

export interface AgentInteraction {
  readonly name: string;
  /** Starts a session for one trajectory with the row's interaction_kwargs. */
  start(instanceId: string, kwargs: Record<string, unknown>): Promise<void>;
  generateResponse(
    instanceId: string,
    messages: readonly ChatMessage[],
    kwargs: Record<string, unknown>,
  ): Promise<InteractionReply>;
  /** The session's score when the trajectory ends (extra_info.interaction_score). */
  calculateScore(instanceId: string, kwargs: Record<string, unknown>): Promise<number>;
  finalize(instanceId: string, kwargs: Record<string, unknown>): Promise<void>;
  /** Frees what the interaction holds for the whole run (a worker). */
  close?(): void;
}

/**
 * Checks what an interaction's generate_response returned: verl's tuple `[should_terminate,
 * response, score, extra]` or an object `{shouldTerminate, response, score?, extra?}`.
 */
export function toReply(v: unknown, name: string): InteractionReply {
  const o = Array.isArray(v)
    ? { shouldTerminate: v[0], response: v[1], score: v[2], extra: v[3] }
    : typeof v === "object" && v !== null
    ? v as Record<string, unknown>
    : null;
  const bad = (why: string): never => {
    throw new Error(
      `${name}.generateResponse returned ${JSON.stringify(v)}: ${why} (expected ` +
        "[shouldTerminate, response, score, extra] or {shouldTerminate, response, score, extra})",
    );
  };
  if (!o) return bad("not a tuple or an object");
  if (typeof o.shouldTerminate !== "boolean") bad("shouldTerminate is not a boolean");
  if (typeof o.response !== "string") bad("response is not a string");
  const score = o.score === undefined || o.score === null ? null : o.score;
  if (score !== null && (typeof score !== "number" || !Number.isFinite(score))) {
    bad("score is not a finite number");
  }
  const extra = o.extra ?? {};
  if (typeof extra !== "object" || Array.isArray(extra)) bad("extra is not an object");
  return {
    shouldTerminate: o.shouldTerminate as boolean,
    content: o.response as string,
    score: score as number | null,
    extra: extra as Record<string, unknown>,
  };
}

/** The content of the conversation's last assistant message ("" if none). */
export function lastAssistant(messages: readonly ChatMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i].role === "assistant") return messages[i].content;
  }
  return "";
}

interface Gsm8kSession {
  groundTruth: string | null;
  response: string;
}

/**
 * verl's Gsm8kInteraction: the last assistant message is scored against
 * `interaction_kwargs.ground_truth` with the strict gsm8k rule (`#### <number>`); a correct answer
 * scores 1.0 and ends the conversation, a wrong one scores 0 and asks for another try.
 * `config.correct_feedback` / `config.incorrect_feedback` replace the two replies.
 */
export class Gsm8kInteraction implements AgentInteraction {
  static readonly CORRECT = "Your answer is correct.";
  static readonly INCORRECT = "Your answer is wrong. Check your reasoning and try again.";
  readonly #sessions = new Map<string, Gsm8kSession>();
  readonly #correct: string;
  readonly #incorrect: string;

  constructor(readonly name: string, config: Record<string, unknown> = {}) {
    this.#correct = String(config.correct_feedback ?? Gsm8kInteraction.CORRECT);
    this.#incorrect = String(config.incorrect_feedback ?? Gsm8kInteraction.INCORRECT);
  }

  start(instanceId: string, kwargs: Record<string, unknown>): Promise<void> {
    const gt = kwargs.ground_truth;
    const groundTruth = gt === undefined || gt === null ? null : String(gt);
    this.#sessions.set(instanceId, { groundTruth, response: "" });
    return Promise.resolve();
  }

  async generateResponse(
    instanceId: string,
    messages: readonly ChatMessage[],
  ): Promise<InteractionReply> {
    this.#session(instanceId).response = lastAssistant(messages);
    const score = await this.calculateScore(instanceId);
    const correct = score === 1;
    return {
      shouldTerminate: correct,
      content: correct ? this.#correct : this.#incorrect,
      score,
      extra: {},
    };
  }

  calculateScore(instanceId: string): Promise<number> {
    const s = this.#session(instanceId);
    if (s.groundTruth === null) return Promise.resolve(0);
    return Promise.resolve(
      gsm8kScore(s.response, s.groundTruth, { method: "strict", formatScore: 0, score: 1 }),
    );
  }

  finalize(instanceId: string): Promise<void> {
    this.#sessions.delete(instanceId);
    return Promise.resolve();
  }

  #session(instanceId: string): Gsm8kSession {
    const s = this.#sessions.get(instanceId);
    if (!s) throw new Error(`${this.name}: no session ${instanceId}`);
    return s;
  }
}

/** How a built-in interaction is made from a YAML entry's name and `config`. */
export interface BuiltinInteraction {
  make(name: string, config: Record<string, unknown>): AgentInteraction;
  doc: string;
}

/** Built-in interactions by `class_name` (ours and verl's). */
export const BUILTIN_INTERACTIONS: Readonly<Record<string, BuiltinInteraction>> = (() => {
  const gsm8k: BuiltinInteraction = {
    make: (name, config) => new Gsm8kInteraction(name, config),
    doc: "gsm8k feedback: 1.0 and the end when `#### <answer>` is right, else try again",
  };
  return { gsm8k, "verl.interactions.gsm8k_interaction.Gsm8kInteraction": gsm8k };
})();
