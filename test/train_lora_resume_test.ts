/**
 * LoRA checkpoints resume exactly: PPO (gae) with LoRA on the actor and on the critic, saved
 * every step as PEFT folders (the critic's with its value head as modules_to_save), killed in the
 * middle of the third save and resumed, ends with the same adapters and optimizer states as an
 * uninterrupted run; `lora_adapter_path` then continues from the saved adapter.
 */
import assert from "node:assert/strict";
import { makeTinyRun } from "./tiny_run.ts";
import { train } from "./crash_helpers.ts";

const same = (a: string, b: string) => {
  const x = Deno.readFileSync(a), y = Deno.readFileSync(b);
  return x.length === y.length && x.every((v, i) => v === y[i]);
};

Deno.test({
  name: "LoRA actor and critic: killed during a save, resumed, equal an uninterrupted run",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const root = Deno.makeTempDirSync({ prefix: "webrl_lora_resume_" });
    const a = await makeTinyRun(`${root}/a`);
    const b = await makeTinyRun(`${root}/b`);
    const common = [
      "algorithm.adv_estimator=gae",
      "actor_rollout_ref.model.lora_rank=4",
      "actor_rollout_ref.model.target_modules=[q_proj,v_proj,down_proj]",
      "actor_rollout_ref.actor.use_kl_loss=true",
      "critic.model.lora_rank=2",
      "critic.model.lora_alpha=4",
      "trainer.total_training_steps=4",
      "trainer.save_freq=1",
      "trainer.test_freq=-1",
    ];
    const full = await train(`${root}/a`, [...a.overrides, ...common]);
    assert.equal(full.code, 0, full.text);
    const killed = await train(`${root}/b`, [...b.overrides, ...common], {
      WEBRL_KILL_DURING_SAVE: "3",
    });
    assert.equal(killed.signal, "SIGKILL", killed.text);
    const resumed = await train(`${root}/b`, [...b.overrides, ...common]);
    assert.equal(resumed.code, 0, resumed.text);
    assert.match(resumed.text, /resumed from global_step_2/);
    for (const part of ["actor", "critic"]) {
      const dir = (r: string) => `${root}/${r}/ckpt/global_step_4/${part}`;
      for (const f of ["adapter_model.safetensors", "optimizer.safetensors"]) {
        assert.ok(same(`${dir("a")}/${f}`, `${dir("b")}/${f}`), `${part}/${f} differs`);
      }
      assert.ok(!Deno.statSync(dir("a")).isFile);
    }
    const critic = JSON.parse(
      Deno.readTextFileSync(`${root}/a/ckpt/global_step_4/critic/adapter_config.json`),
    );
    assert.equal(critic.task_type, "TOKEN_CLS");
    assert.deepEqual(critic.modules_to_save, ["score"]);
    const actor = JSON.parse(
      Deno.readTextFileSync(`${root}/a/ckpt/global_step_4/actor/adapter_config.json`),
    );
    assert.deepEqual(actor.target_modules, ["q_proj", "v_proj", "down_proj"]);

    // Continue from the saved adapter in a fresh run; a contradicting rank is refused.
    const cont = [
      `actor_rollout_ref.model.lora_adapter_path=${root}/a/ckpt/global_step_4/actor`,
      "trainer.total_training_steps=1",
      "trainer.save_freq=-1",
      "trainer.test_freq=-1",
    ];
    const again = await train(root, [...a.overrides, ...cont, "trainer.resume_mode=disable"]);
    assert.equal(again.code, 0, again.text);
    const bad = await train(root, [
      ...a.overrides,
      ...cont,
      "trainer.resume_mode=disable",
      "actor_rollout_ref.model.lora_rank=8",
    ]);
    assert.notEqual(bad.code, 0);
    assert.match(bad.text, /lora_rank=8 differs from the adapter's r=4/);
    Deno.removeSync(root, { recursive: true });
  },
});
