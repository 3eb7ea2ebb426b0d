import assert from "node:assert/strict";
import { ConfigError } from "./errors.ts";
import { loadConfig } from "./load.ts";

const load = (...overrides: string[]) =>
  loadConfig("ppo_trainer", { overrides, skipPathChecks: true });
const refused = (key: string, why: RegExp, ...overrides: string[]) =>
  assert.throws(
    () => load(...overrides),
    (e: unknown) => e instanceof ConfigError && e.key === key && why.test(e.message),
  );

Deno.test("distributed and rollout_correction keys: what runs, and what is refused by name", () => {
  const ok = load("distributed.backend=nats", "distributed.max_staleness=1");
  assert.equal(ok.distributed.max_staleness, 1);
  assert.equal(ok.distributed.backend, "nats");
  // Workers always send log-probs; in process the sampler must keep them.
  load("distributed.backend=nats", "algorithm.rollout_correction.rollout_is=token");
  refused(
    "algorithm.rollout_correction.rollout_is",
    /calculate_log_probs=true/,
    "algorithm.rollout_correction.rollout_is=sequence",
  );
  load(
    "algorithm.rollout_correction.rollout_is=sequence",
    "actor_rollout_ref.rollout.calculate_log_probs=true",
  );
  refused(
    "distributed.backend",
    /multi_turn/,
    "distributed.backend=nats",
    "actor_rollout_ref.rollout.multi_turn.enable=true",
  );
  refused(
    "distributed.backend",
    /LoRA/,
    "distributed.backend=nats",
    "actor_rollout_ref.model.lora_rank=8",
  );
  refused(
    "distributed.max_staleness",
    /filter_groups/,
    "distributed.backend=nats",
    "distributed.max_staleness=1",
    "algorithm.filter_groups.enable=true",
    "algorithm.filter_groups.metric=acc",
  );
  refused(
    "distributed.token",
    /one of/,
    "distributed.backend=nats",
    "distributed.token=t",
    "distributed.nkey_seed=SU",
  );
  assert.throws(() => load("distributed.backend=ray"), /distributed\.backend/);
});
