/**
 * gen: left-pads the prompts, repeats each n times (grouped by uid) and samples responses. With
 * `multi_turn.enable` (or rows whose `agent_name` is `tool_agent`) each sample is a conversation
 * of the tool-calling agent loop instead.
 */
import type { PromptItem } from "../../data/mod.ts";
import { runAgentLoop, type TurnGenerator, turnSeed } from "../../rollout/mod.ts";
import type { Tick } from "../../tracking/mod.ts";
import { deriveSeed } from "../../tensor/mod.ts";
import type { GenBatch } from "../batch.ts";
import type { TrainerParts } from "../parts.ts";
import { agentLoopOptions, agentSample, trajectoryExtraInfo } from "../agent.ts";

export interface GenOptions {
  step: number;
  n: number;
  /** Validation samples with `rollout.val_kwargs` and a seed stream of their own. */
  validation: boolean;
  uidPrefix: string;
  /** Greedy decoding whatever the config says (remax's baseline rollout). */
  greedy?: boolean;
  onProgress?: Tick;
  /** k-th generation batch of a step (dynamic sampling); k > 1 gets a seed stream of its own */
  genBatch?: number;
}

export async function gen(
  parts: TrainerParts,
  items: PromptItem[],
  options: GenOptions,
): Promise<GenBatch> {
  if (parts.remote && !options.validation && !options.greedy) {
    // distributed.backend=nats: the workers sample; their metrics travel with the batch.
    const { batch, metrics } = await parts.remote.gen(parts, items, {
      step: options.step,
      uidPrefix: options.uidPrefix,
      genBatch: options.genBatch ?? 1,
    });
    return { ...batch, rolloutMetrics: metrics };
  }
  const cfg = parts.config.actor_rollout_ref.rollout;
  const sampling = options.validation ? { ...cfg, ...cfg.val_kwargs } : cfg;
  const seed = (options.genBatch ?? 1) > 1
    ? deriveSeed(parts.config.trainer.seed, options.step, 2, options.genBatch!)
    : deriveSeed(parts.config.trainer.seed, options.step, options.validation ? 1 : 0);
  // How every response (or conversation turn) is drawn.
  const draw = {
    temperature: sampling.temperature,
    topK: sampling.top_k,
    topP: sampling.top_p,
    doSample: options.greedy ? false : sampling.do_sample,
    seed,
    returnLogProbs: cfg.calculate_log_probs,
  };
  const agent = items.map((it) => cfg.multi_turn.enable || it.agentName === "tool_agent");
  if (agent.some((a) => a)) {
    if (!agent.every((a) => a)) {
      throw new Error(
        "a batch mixes rows with agent_name tool_agent and rows without: set " +
          "actor_rollout_ref.rollout.multi_turn.enable=true to run every row through the agent loop",
      );
    }
    return await genAgent(parts, items, { ...options, draw });
  }
  const P = Math.max(1, ...items.map((it) => it.inputIds.length));
  const B0 = items.length;
  const prompts = new Int32Array(B0 * P).fill(parts.tokenizer.padTokenId); // [B0, P]
  const promptMask = new Int32Array(B0 * P); // [B0, P]
  items.forEach((it, b) => {
    prompts.set(it.inputIds, b * P + P - it.inputIds.length);
    promptMask.fill(1, b * P + P - it.inputIds.length, b * P + P);
  });
  const out = await parts.rollout({
    inputIds: prompts,
    attentionMask: promptMask,
    batch: B0,
    promptLength: P,
  }, {
    ...draw,
    n: options.n,
    responseLength: parts.config.data.max_response_length,
    onProgress: options.onProgress,
  });
  const n = options.n, B = B0 * n, R = parts.config.data.max_response_length;
  const rep = <T>(xs: T[]) => xs.flatMap((x) => Array<T>(n).fill(x));
  const repRows = (src: Int32Array) => {
    const dst = new Int32Array(B * P);
    for (let b = 0; b < B; b++) {
      dst.set(src.subarray(Math.floor(b / n) * P, Math.floor(b / n) * P + P), b * P);
    }
    return dst;
  };
  return {
    size: B,
    promptLength: P,
    responseLength: R,
    uid: rep(items.map((it) => `${options.uidPrefix}-${it.index}`)),
    dataSource: rep(items.map((it) => it.dataSource)),
    groundTruth: rep(items.map((it) => it.groundTruth)),
    extraInfo: rep(items.map((it) => it.extraInfo)),
    prompts: repRows(prompts),
    promptMask: repRows(promptMask),
    responses: out.responses,
    responseMask: out.responseMask,
    rolloutLogProbs: out.logProbs,
  };
}

/** How gen draws: the rollout call's sampling options, its seed, whether it keeps log-probs. */
interface Draw {
  temperature: number;
  topK: number;
  topP: number;
  doSample: boolean;
  seed: number;
  returnLogProbs: boolean;
}

/** The agent loop over every sample (prompts x n), each turn sampled by the rollout engine. */
async function genAgent(
  parts: TrainerParts,
  items: PromptItem[],
  options: GenOptions & { draw: Draw },
): Promise<GenBatch> {
  const cfg = parts.config.actor_rollout_ref.rollout, mt = cfg.multi_turn;
  const R = parts.config.data.max_response_length, n = options.n;
  const rows = items.flatMap((it) => Array<PromptItem>(n).fill(it));
  const samples = rows.map((it) => {
    if (!it.rawPrompt) {
      throw new Error(`prompt ${it.index} has no chat messages for the agent loop`);
    }
    return agentSample({ ...it, messages: it.rawPrompt });
  });
  if (mt.tool_config_path && !parts.tools) {
    throw new Error(
      `multi_turn.tool_config_path=${mt.tool_config_path}: the trainer was built without its tools`,
    );
  }
  if (mt.interaction_config_path && !parts.interactions) {
    throw new Error(
      `multi_turn.interaction_config_path=${mt.interaction_config_path}: the trainer was built ` +
        "without its interactions",
    );
  }
  const { draw } = options;
  const responseLength = Math.min(cfg.response_length, R);
  const loopOptions = agentLoopOptions(mt, {
    tokenizer: parts.tokenizer,
    env: parts,
    responseLength,
    maxPromptLength: parts.config.data.max_prompt_length,
    eosTokenIds: [parts.tokenizer.eosTokenId],
    log: parts.print,
  });
  // The bar moves as conversations end (the single-turn path's moves as responses end).
  loopOptions.onProgress = options.onProgress;
  const { trajectories, metrics } = parts.turnRollout
    ? await parts.turnRollout(
      {
        ...draw,
        conversations: samples.length,
        longest: parts.config.data.max_prompt_length + responseLength,
      },
      async (turns, engineMetrics) => {
        const r = await runAgentLoop(samples, turns, loopOptions);
        return { ...r, metrics: { ...r.metrics, ...engineMetrics?.() } };
      },
    )
    : await runAgentLoop(samples, turnsByRollout(parts, draw), loopOptions);
  const B = rows.length, P = Math.max(1, ...trajectories.map((t) => t.promptIds.length));
  const prompts = new Int32Array(B * P).fill(parts.tokenizer.padTokenId); // [B, P]
  const promptMask = new Int32Array(B * P); // [B, P]
  const responses = new Int32Array(B * R).fill(parts.tokenizer.padTokenId); // [B, R]
  const responseMask = new Int32Array(B * R); // [B, R]
  const logProbs = cfg.calculate_log_probs ? new Float32Array(B * R) : undefined; // [B, R]
  trajectories.forEach((t, b) => {
    prompts.set(t.promptIds, b * P + P - t.promptIds.length);
    promptMask.fill(1, b * P + P - t.promptIds.length, b * P + P);
    responses.set(t.responseIds, b * R);
    responseMask.set(t.responseMask, b * R);
    if (logProbs && t.responseLogProbs) logProbs.set(t.responseLogProbs, b * R);
  });
  return {
    size: B,
    promptLength: P,
    responseLength: R,
    uid: rows.map((it) => `${options.uidPrefix}-${it.index}`),
    dataSource: rows.map((it) => it.dataSource),
    groundTruth: rows.map((it) => it.groundTruth),
    // As verl's reward managers: the scorer sees the turns, the tools' rewards, the turn scores.
    extraInfo: rows.map((it, b) => ({ ...it.extraInfo, ...trajectoryExtraInfo(trajectories[b]) })),
    prompts,
    promptMask,
    responses,
    responseMask,
    rolloutLogProbs: logProbs,
    conversations: trajectories.map((t) => t.messages),
    rolloutMetrics: metrics,
  };
}

/**
 * Without the agent loop's engine (TrainerParts.turnRollout): each turn is a rollout call of its
 * own, a batch of one, drawn with its turnSeed (the engine's).
 */
function turnsByRollout(parts: TrainerParts, o: Draw): TurnGenerator {
  return async (req) => {
    const L = req.ids.length, R = req.maxTokens;
    const out = await parts.rollout({
      inputIds: Int32Array.from(req.ids),
      attentionMask: new Int32Array(L).fill(1),
      batch: 1,
      promptLength: L,
    }, { ...o, n: 1, responseLength: R, seed: turnSeed(o.seed, req) });
    let k = 0;
    while (k < R && out.responseMask[k]) k++;
    return { tokens: out.responses.subarray(0, k), logProbs: out.logProbs?.subarray(0, k) };
  };
}
