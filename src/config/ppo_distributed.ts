/** `distributed.*`: rollout workers over NATS JetStream (docs/scaling.md). */
import { ConfigError } from "./errors.ts";
import type { PpoConfig } from "./ppo_root.ts";
import { float, int, oneOf, section, str } from "./schema.ts";

export const ppoDistributed = section(
  "Scale-out: rollout workers over NATS JetStream (deno task worker, deno task nats).",
  {
    backend: oneOf(
      ["none", "nats"],
      "none",
      "none: generate in this process; nats: publish prompt jobs and weights to a NATS server " +
        "and collect trajectories from workers.",
    ),
    url: str("nats://127.0.0.1:4222", "NATS server: nats://, tls://, ws:// or wss://."),
    subject_prefix: str(
      null,
      "Subjects, streams and bucket of the run; null = webrl.<project_name>.<experiment_name>.",
    ),
    token: str(null, "Authentication token of the trainer (servers with token auth)."),
    nkey_seed: str(
      null,
      "The trainer's nkey seed (SU...) as deno task nats prints it; null = the environment " +
        "variable NATS_NKEY_SEED when set.",
    ),
    creds_file: str(null, "A .creds file (user JWT and seed) of the trainer.", { isPath: true }),
    max_staleness: int(
      0,
      "Policy versions a trajectory may lag: 0 = on-policy and synchronous; 1 = jobs of step " +
        "k+1 are generated during the update of step k (one-step off-policy); more = further ahead.",
      { min: 0, max: 8 },
    ),
    job_timeout_s: float(
      120,
      "Seconds a worker may hold a job (the JetStream ack wait); then it goes to another worker.",
      { min: 0.5 },
    ),
    step_timeout_s: float(
      1800,
      "Seconds a step waits for its last trajectory before the run stops with an error.",
      { min: 1 },
    ),
    max_deliver: int(5, "Deliveries of one job before JetStream gives up on it.", { min: 1 }),
    logprob_tolerance: float(
      0.5,
      "A prompt group is rejected when a sample's mean |rollout log-prob - recomputed log-prob| " +
        "over its response tokens exceeds this (f16 weights and max_staleness updates stay well below).",
      { min: 0 },
    ),
    reward_tolerance: float(
      1e-4,
      "A prompt group is rejected when a worker's score differs from the trainer's re-score by more.",
      { min: 0 },
    ),
  },
);

/** Cross-key rules of `distributed.*` and `algorithm.rollout_correction`. */
export function checkDistributed(cfg: PpoConfig): void {
  const d = cfg.distributed, rollout = cfg.actor_rollout_ref.rollout;
  const rc = cfg.algorithm.rollout_correction;
  if (rc.rollout_is !== null && d.backend === "none" && !rollout.calculate_log_probs) {
    throw new ConfigError(
      "algorithm.rollout_correction.rollout_is",
      `algorithm.rollout_correction.rollout_is=${rc.rollout_is} weighs by the rollout's ` +
        "log-probs: set actor_rollout_ref.rollout.calculate_log_probs=true",
    );
  }
  if (d.backend === "none") return;
  if (rollout.multi_turn.enable) {
    throw new ConfigError(
      "distributed.backend",
      "distributed.backend=nats runs single-turn rollouts on the workers; multi_turn.enable=true " +
        "is not supported with it (use distributed.backend=none)",
    );
  }
  if (cfg.algorithm.filter_groups.enable && d.max_staleness > 0) {
    throw new ConfigError(
      "distributed.max_staleness",
      "algorithm.filter_groups.enable=true draws extra generation batches within a step; it " +
        "needs distributed.max_staleness=0",
    );
  }
  const auth = [d.token, d.nkey_seed, d.creds_file].filter((x) => x !== null).length;
  if (auth > 1) {
    throw new ConfigError(
      "distributed.token",
      "set one of distributed.token, distributed.nkey_seed and distributed.creds_file",
    );
  }
}
