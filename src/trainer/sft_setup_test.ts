import assert from "node:assert/strict";
import { stepsOf } from "./sft_setup.ts";
import { loadConfig } from "../config/mod.ts";

const sft = (...overrides: string[]) =>
  loadConfig("sft_trainer", { overrides, skipPathChecks: true });

Deno.test("SFT save_freq and test_freq take verl's after_each_epoch", () => {
  const cfg = sft("trainer.save_freq=after_each_epoch", "trainer.test_freq=after_each_epoch");
  assert.equal(cfg.trainer.save_freq, "after_each_epoch");
  assert.equal(stepsOf(cfg.trainer.save_freq, 12), 12);
  assert.equal(stepsOf(sft("trainer.test_freq=5").trainer.test_freq, 12), 5);
});

Deno.test("SFT save_freq=0 and unknown words are errors naming the key", () => {
  assert.throws(() => sft("trainer.save_freq=0"), /trainer\.save_freq=0 names no step/);
  assert.throws(() => sft("trainer.test_freq=0"), /trainer\.test_freq=0/);
  assert.throws(
    () => sft("trainer.save_freq=each_epoch"),
    /"trainer\.save_freq" expects an integer or after_each_epoch, got "each_epoch"/,
  );
});
