/** The reward manager a config asks for: its kind, its overlong buffer, a sandboxed user function. */
import { RewardManager, type RewardManagerOptions } from "./manager.ts";
import { SandboxedRewardFunction } from "./sandbox.ts";

/** The reward settings the manager reads from a trainer or evaluator config. */
export interface CustomRewardConfig {
  path: string | null;
  name: string;
  reward_kwargs: Record<string, unknown>;
  timeout_s: number;
  /** Time budget of one scoring call (a step's batch); null or absent = none. */
  batch_timeout_s?: number | null;
}

/** `reward_model.*` and the response budget, as a trainer config holds them. */
export interface RewardModelConfig {
  reward_model?: {
    reward_manager: string;
    overlong_buffer: { enable: boolean; len: number; penalty_factor: number; log: boolean };
  };
  data?: { max_response_length?: number; [key: string]: unknown };
}

/** The manager kind and overlong buffer a config asks for (naive and none when it has no keys). */
export function rewardManagerOptions(
  cfg: RewardModelConfig,
): Pick<RewardManagerOptions, "manager" | "overlongBuffer"> {
  const rm = cfg.reward_model;
  if (!rm) return {};
  if (rm.reward_manager !== "naive" && rm.reward_manager !== "dapo") {
    throw new Error(`reward_model.reward_manager=${rm.reward_manager}: use naive or dapo`);
  }
  const ob = rm.overlong_buffer;
  if (!ob.enable) return { manager: rm.reward_manager };
  const max = cfg.data?.max_response_length;
  if (max === undefined) {
    throw new Error("reward_model.overlong_buffer needs data.max_response_length");
  }
  return {
    manager: rm.reward_manager,
    overlongBuffer: {
      len: ob.len,
      penaltyFactor: ob.penalty_factor,
      log: ob.log,
      maxResponseLength: max,
    },
  };
}

/** The manager a config asks for: a sandboxed user function, or the built-in scorers. */
export async function createRewardManager(
  cfg: { custom_reward_function: CustomRewardConfig } & RewardModelConfig,
  opts: Omit<RewardManagerOptions, "scorer" | "manager" | "overlongBuffer"> = {},
): Promise<RewardManager> {
  const c = cfg.custom_reward_function;
  const kind = rewardManagerOptions(cfg);
  if (c.path === null) return new RewardManager({ ...opts, ...kind });
  const scorer = await SandboxedRewardFunction.load(c.path, {
    name: c.name,
    timeoutS: c.timeout_s,
    batchTimeoutS: c.batch_timeout_s ?? null,
    rewardKwargs: c.reward_kwargs,
  });
  return new RewardManager({ ...opts, ...kind, scorer });
}
