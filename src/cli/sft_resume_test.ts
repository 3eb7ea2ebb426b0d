/**
 * What `deno task sft` does with trainer.resume_mode besides the exact resume itself
 * (test/sft_resume_test.ts): a fresh start where there is nothing to resume, and clear errors for
 * a missing or damaged checkpoint and for a config that would continue it as another run.
 */
import assert from "node:assert/strict";
import { ConfigError } from "../config/mod.ts";
import { main } from "./sft.ts";

const ROOT = new URL("../..", import.meta.url).pathname;

function args(dir: string, extra: string[] = []): string[] {
  return [
    `data.train_files=${ROOT}data/arithmetic/train.parquet`,
    `data.val_files=${ROOT}data/arithmetic/val.parquet`,
    "data.train_max_samples=8",
    "data.val_max_samples=4",
    "data.max_length=32",
    "data.train_batch_size=4",
    "data.micro_batch_size_per_gpu=4",
    "trainer.total_training_steps=2",
    "trainer.save_freq=1",
    "trainer.logger=[]",
    `trainer.default_local_dir=${dir}`,
    ...extra,
  ];
}

/** A test of `main` in a temporary folder, removed after (resource and op sanitizers off). */
function sftTest(name: string, fn: (root: string) => Promise<void>): void {
  Deno.test({
    name,
    sanitizeResources: false,
    sanitizeOps: false,
    fn: async () => {
      const root = await Deno.makeTempDir();
      try {
        await fn(root);
      } finally {
        await Deno.remove(root, { recursive: true });
      }
    },
  });
}

/** Flips one byte of a file in place. */
function damage(path: string): void {
  const bytes = Deno.readFileSync(path);
  bytes[bytes.length - 1] ^= 0xff;
  Deno.writeFileSync(path, bytes);
}

sftTest(
  "sft resume_mode=auto starts fresh in a missing or empty folder, then resumes there",
  async (root) => {
    const fresh = await main(args(`${root}/missing`, ["trainer.total_training_steps=1"]));
    assert.deepEqual([fresh.step, fresh.trained], [1, 1]);
    Deno.mkdirSync(`${root}/empty`);
    const empty = await main(args(`${root}/empty`, ["trainer.total_training_steps=1"]));
    assert.deepEqual([empty.step, empty.trained], [1, 1]);
    assert.ok(Deno.statSync(`${root}/empty/global_step_1/huggingface/model.safetensors`).isFile);
    // The same folder again, with one step more to go: only that step runs.
    const more = await main(args(`${root}/empty`));
    assert.deepEqual([more.step, more.trained], [2, 1]);
    // Nothing left to train is an error that says where the checkpoint is and what to do.
    await assert.rejects(
      () => main(args(`${root}/empty`)),
      (e: Error) =>
        e instanceof ConfigError && e.key === "trainer.total_training_steps" &&
        e.message.includes(`resumed from a checkpoint at global step 2 in `) &&
        e.message.includes("trainer.resume_mode=disable"),
    );
    const again = await main(args(`${root}/empty`, ["trainer.resume_mode=disable"]));
    assert.deepEqual([again.step, again.trained], [2, 2]);
  },
);

sftTest(
  "sft resume from a missing, misnamed or damaged checkpoint is an error naming it",
  async (root) => {
    const dir = `${root}/ckpt`;
    const gone = `${root}/gone/global_step_3`;
    for (const mode of ["resume_path", "auto"]) {
      await assert.rejects(
        () => main(args(dir, [`trainer.resume_mode=${mode}`, `trainer.resume_from_path=${gone}`])),
        (e: Error) =>
          e instanceof ConfigError && e.key === "trainer.resume_from_path" &&
          e.message.includes(gone),
      );
    }
    await assert.rejects(
      () => main(args(dir, ["trainer.resume_mode=resume_path"])),
      /trainer\.resume_mode=resume_path needs trainer\.resume_from_path/,
    );
    Deno.mkdirSync(`${root}/step2`);
    await assert.rejects(
      () =>
        main(
          args(dir, [
            "trainer.resume_mode=resume_path",
            `trainer.resume_from_path=${root}/step2`,
          ]),
        ),
      /trainer\.resume_from_path: ".*step2" must be a global_step_N checkpoint folder/,
    );
    await main(args(dir));
    damage(`${dir}/global_step_2/huggingface/model.safetensors`);
    const path = `${dir}/global_step_2`;
    await assert.rejects(
      () =>
        main(args(dir, ["trainer.resume_mode=resume_path", `trainer.resume_from_path=${path}`])),
      (e: Error) =>
        e.message.startsWith(
          `refusing to resume: ${path}/huggingface/model.safetensors SHA-256`,
        ) &&
        e.message.includes(`trainer.resume_from_path=${Deno.realPathSync(dir)}/global_step_1`),
    );
    // auto takes the newest checkpoint, which is the damaged one: the same refusal.
    await assert.rejects(
      () => main(args(dir)),
      /refusing to resume: .*global_step_2\/huggingface/,
    );
  },
);

sftTest(
  "sft resume under another model, trained weights or data order is refused as in PPO",
  async (root) => {
    const dir = `${root}/ckpt`;
    await main(args(dir, ["trainer.total_training_steps=1"]));
    const more = (extra: string[]) => main(args(dir, extra));
    await assert.rejects(
      () => more([`model.partial_pretrain=${ROOT}assets/tiny_arith`]),
      /with model\.partial_pretrain changed would continue .*resume_allowed_changes=\[model\.partial_pretrain\]/,
    );
    await assert.rejects(
      () => more(["model.lora_rank=4"]),
      /with model\.lora_rank changed/,
    );
    // Allowed, the LoRA run still cannot continue a checkpoint that holds no adapter.
    await assert.rejects(
      () => more(["model.lora_rank=4", "trainer.resume_allowed_changes=[model.lora_rank]"]),
      /holds no lora_adapter\/ folder, which an SFT run with LoRA saves \(it holds huggingface\/\)/,
    );
    await assert.rejects(
      () => more(["data.train_batch_size=8", "data.train_max_samples=16"]),
      /data\.train_batch_size, data\.train_max_samples changed/,
    );
    const allowed = await more([
      "data.train_batch_size=8",
      "trainer.resume_allowed_changes=[data.train_batch_size]",
    ]);
    assert.deepEqual([allowed.step, allowed.trained], [2, 1]);
  },
);
