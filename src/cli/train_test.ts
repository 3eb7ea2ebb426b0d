import assert from "node:assert/strict";
import { ConfigError, loadConfig } from "../config/mod.ts";
import { checkTrained } from "./train.ts";

const cfg = (...overrides: string[]) =>
  loadConfig("ppo_trainer", { overrides, skipPathChecks: true });
const ran = { "actor/pg_loss": 0.1 };

Deno.test("train: a run that trained no step, or stopped short, is an error", () => {
  // Trained to the end, or validation only: fine.
  checkTrained(cfg("trainer.total_training_steps=3"), {
    globalStep: 3,
    lastMetrics: ran,
    lastValidation: {},
  }, 3);
  checkTrained(
    cfg("trainer.val_only=true"),
    { globalStep: 0, lastMetrics: {}, lastValidation: {} },
    5,
  );
  // Resumed from a checkpoint that had already done every step.
  assert.throws(
    () =>
      checkTrained(
        cfg("trainer.total_training_steps=4", "trainer.default_local_dir=/ck"),
        { globalStep: 4, lastMetrics: {}, lastValidation: {} },
        4,
      ),
    (e: unknown) => {
      assert.ok(e instanceof ConfigError);
      assert.equal(e.key, "trainer.total_training_steps");
      assert.match(
        e.message,
        /^no training step ran: the run resumed from a checkpoint at global step 4 in trainer\.default_local_dir=\/ck, and trainer\.total_training_steps=4 are already done\..*trainer\.resume_mode=disable/,
      );
      return true;
    },
  );
  assert.throws(
    () => checkTrained(cfg(), { globalStep: 6, lastMetrics: {}, lastValidation: {} }, 6),
    /trainer\.total_epochs=30 of the training set = 6 steps are already done/,
  );
  assert.throws(
    () => checkTrained(cfg(), { globalStep: 2, lastMetrics: ran, lastValidation: {} }, 6),
    /training stopped at step 2 of 6/,
  );
});
