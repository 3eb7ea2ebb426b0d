/**
 * Opens `distributed.backend: nats` for a trainer (Deno side): connects with the configured
 * credentials, creates or purges the run's streams (jobs of an earlier trainer process are
 * dropped), publishes what workers need besides weights, and lets the loader look ahead.
 */
import { engineSettings } from "../config/mod.ts";
import { connectNats, Coordinator } from "../distributed/mod.ts";
import type { ModelConfig } from "../io/mod.ts";
import { rewardManagerOptions } from "../reward/mod.ts";
import type { TrainerParts } from "./parts.ts";
import { PeekLoader } from "./peek_loader.ts";
import { RemoteRollout, subjectPrefix } from "./remote.ts";
import { totalSteps } from "./ppo_trainer.ts";

export interface RemoteSetupOptions {
  modelConfig: ModelConfig;
  /** Tokenizer files (and generation_config.json) the workers build their tokenizer from. */
  tokenizerFiles: Record<string, string>;
  eosTokenIds: number[];
  /** Cast the weights to f16 on the GPU before each publication's readback (RemoteOptions). */
  castOnGpu?: boolean;
}

/** Attaches a RemoteRollout to `parts` (parts.remote, and a look-ahead parts.trainLoader). */
export async function attachRemote(parts: TrainerParts, o: RemoteSetupOptions): Promise<void> {
  const cfg = parts.config, d = cfg.distributed;
  const creds = d.creds_file ? await Deno.readTextFile(d.creds_file) : null;
  const connect = {
    name: `trainer ${cfg.trainer.project_name}/${cfg.trainer.experiment_name}`,
    token: d.token,
    nkeySeed: d.nkey_seed ?? Deno.env.get("NATS_NKEY_SEED") ?? null,
    creds,
  };
  const nc = await connectNats(d.url, connect);
  const coordinator = await Coordinator.open(nc, {
    prefix: subjectPrefix(parts),
    jobTimeoutS: d.job_timeout_s,
    stepTimeoutS: d.step_timeout_s,
    maxDeliver: d.max_deliver,
    keepVersions: d.max_staleness + 2,
    background: { url: d.url, connect },
  });
  await coordinator.publishRunInfo({
    tokenizerFiles: o.tokenizerFiles,
    eosTokenIds: o.eosTokenIds,
    reward: cfg.custom_reward_function.path === null ? rewardManagerOptions(cfg) : null,
    // bfloat16 runs as float16 (WebGPU has none); the workers take the dtype that runs
    rolloutDtype: cfg.actor_rollout_ref.rollout.dtype === "bfloat16"
      ? "float16"
      : cfg.actor_rollout_ref.rollout.dtype,
    engine: engineSettings(cfg.actor_rollout_ref.rollout),
  });
  const loader = new PeekLoader(parts.trainLoader);
  parts.trainLoader = loader;
  parts.remote = new RemoteRollout({
    coordinator,
    modelConfig: o.modelConfig,
    loader,
    totalSteps: totalSteps(parts),
    castOnGpu: o.castOnGpu,
  });
  parts.print?.(
    `distributed: jobs on ${coordinator.names.jobs} at ${d.url}; start workers with ` +
      `deno task worker --url ${d.url} --prefix ${coordinator.names.prefix}`,
  );
}
