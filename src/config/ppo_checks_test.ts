import assert from "node:assert/strict";
import { ConfigError } from "./errors.ts";
import { loadConfig } from "./load.ts";

Deno.test("save_freq=0 and test_freq=0 are refused with the way to say never (-1)", () => {
  for (const key of ["save_freq", "test_freq"]) {
    assert.throws(
      () => loadConfig("ppo_trainer", { overrides: [`trainer.${key}=0`], skipPathChecks: true }),
      (e: Error) =>
        e instanceof ConfigError && e.key === `trainer.${key}` &&
        e.message.includes(`trainer.${key}=0 would never`) &&
        e.message.includes(`use trainer.${key}=-1 for never`),
    );
    for (const ok of ["-1", "1", "5"]) {
      loadConfig("ppo_trainer", { overrides: [`trainer.${key}=${ok}`], skipPathChecks: true });
    }
  }
  const cfg = loadConfig("ppo_trainer", {
    overrides: ["trainer.resume_allowed_changes=[actor_rollout_ref.rollout.n]"],
    skipPathChecks: true,
  });
  assert.deepEqual(cfg.trainer.resume_allowed_changes, ["actor_rollout_ref.rollout.n"]);
});
