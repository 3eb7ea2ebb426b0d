/** `distributed.*`: rollout workers over NATS JetStream (docs/scaling.md). */
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
