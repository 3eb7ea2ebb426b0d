/**
 * SFT with LoRA through `deno task sft`'s entry point: from the shipped tiny checkpoint (which
 * mostly answers with a bare number), rank-8 adapters learn the `#### n` answers of the arithmetic
 * data, and the run saves a PEFT folder (global_step_N/lora_adapter) instead of the model.
 */
import assert from "node:assert/strict";
import { sft as main } from "../src/cli/mod.ts";

const ROOT = new URL("..", import.meta.url).pathname;

Deno.test({
  name: "SFT with LoRA lowers the response loss and saves a PEFT adapter folder",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const dir = Deno.makeTempDirSync({ prefix: "webrl_sft_lora_" });
    try {
      const common = [
        `data.train_files=${ROOT}data/arithmetic/train.parquet`,
        `data.val_files=${ROOT}data/arithmetic/val.parquet`,
        "data.response_key=extra_info",
        "data.response_dict_keys=[answer]",
        "data.max_length=32",
        "data.train_batch_size=32",
        "data.micro_batch_size_per_gpu=32",
        `model.partial_pretrain=${ROOT}assets/tiny_arith`,
        "optim.lr=3e-3",
        "optim.weight_decay=0",
        "optim.lr_scheduler=constant",
        "optim.warmup_steps_ratio=0",
        "trainer.logger=[]",
      ];
      const before = await main([
        ...common,
        "optim.lr=0",
        "trainer.total_training_steps=1",
        `trainer.default_local_dir=${dir}/base`,
      ]);
      const after = await main([
        ...common,
        `trainer.default_local_dir=${dir}/lora`,
        "model.lora_rank=8",
        "model.lora_alpha=16",
        "model.target_modules=all-linear",
        "trainer.total_training_steps=15",
      ]);
      console.log(`SFT LoRA val/loss ${before.valLoss.toFixed(4)} -> ${after.valLoss.toFixed(4)}`);
      assert.ok(after.valLoss < before.valLoss * 0.6, `${before.valLoss} -> ${after.valLoss}`);
      const files = [...Deno.readDirSync(`${dir}/lora/global_step_15/lora_adapter`)].map((e) =>
        e.name
      );
      assert.ok(files.includes("adapter_config.json"), files.join());
      assert.ok(files.includes("adapter_model.safetensors"), files.join());
    } finally {
      Deno.removeSync(dir, { recursive: true });
    }
  },
});
