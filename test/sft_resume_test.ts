/**
 * Exact SFT resume through the real `deno task sft`: a run SIGKILLed in the middle of a save, then
 * resumed with `resume_mode=auto` (the default), logs the same per-step losses, learning rates and
 * gradient norms as an uninterrupted run and ends with byte-identical weights and AdamW state; the
 * data order continues mid-epoch and across epoch boundaries, and the cosine schedule continues
 * from its warmup. The same holds under LoRA (adapter folder, adapter AdamW state).
 */
import assert from "node:assert/strict";
import { type JsonlRecord, jsonlRecords, metricsByStep, sft, tree } from "./crash_helpers.ts";

const ROOT = new URL("..", import.meta.url).pathname;

/** 12 examples in batches of 4: three steps an epoch, so step 2 is mid-epoch and 7 steps cross two epoch boundaries. */
function args(experiment: string, extra: string[] = []): string[] {
  return [
    `data.train_files=${ROOT}data/arithmetic/train.parquet`,
    `data.val_files=${ROOT}data/arithmetic/val.parquet`,
    "data.train_max_samples=12",
    "data.val_max_samples=4",
    "data.max_length=32",
    "data.train_batch_size=4",
    "data.micro_batch_size_per_gpu=2",
    "optim.lr=3e-3",
    "optim.warmup_steps_ratio=0.3", // 2 warmup steps of 7, then cosine
    "optim.lr_scheduler=cosine",
    "trainer.total_training_steps=7",
    "trainer.save_freq=2",
    "trainer.test_freq=3",
    "trainer.logger=[file]",
    "trainer.project_name=sft_resume",
    `trainer.experiment_name=${experiment}`,
    `trainer.default_local_dir=ckpt_${experiment}`,
    ...extra,
  ];
}

/** Steps of the records holding a step's training metrics, in file order. */
const trainedSteps = (records: JsonlRecord[]) =>
  records.filter((r) => "train/loss" in r.data).map((r) => r.step);

function sameBytes(a: string, b: string): void {
  const x = Deno.readFileSync(a), y = Deno.readFileSync(b);
  assert.ok(x.length === y.length && x.every((v, i) => v === y[i]), `${a} differs from ${b}`);
}

/** Runs uninterrupted and killed-then-resumed, and compares everything they leave. */
async function killAndResume(name: string, part: string, extra: string[]): Promise<void> {
  const root = Deno.makeTempDirSync({ prefix: `webrl_sft_${name}_` });
  try {
    const full = await sft(root, args("full", extra));
    assert.equal(full.code, 0, full.text);
    const b = args("cut", [...extra, "trainer.max_ckpt_to_keep=2"]);
    const killed = await sft(root, b, { WEBRL_KILL_DURING_SAVE: "4" });
    assert.equal(killed.signal, "SIGKILL", killed.text);
    const resumed = await sft(root, b);
    assert.equal(resumed.code, 0, resumed.text);
    assert.match(resumed.text, /resumed from global_step_2/);
    assert.match(resumed.text, /removed leftovers of an interrupted run: .*global_step_4\.tmp-/);
    assert.match(resumed.text, /metrics\.jsonl: dropped 2 record\(s\) after step 2/);

    const runA = `${root}/outputs/sft_resume/full/metrics.jsonl`;
    const runB = `${root}/outputs/sft_resume/cut/metrics.jsonl`;
    const ra = jsonlRecords(runA), rb = jsonlRecords(runB);
    assert.deepEqual(trainedSteps(rb), [1, 2, 3, 4, 5, 6, 7]);
    const ma = metricsByStep(ra), mb = metricsByStep(rb);
    for (let step = 1; step <= 7; step++) {
      assert.deepEqual(mb.get(step), ma.get(step), `step ${step}`);
    }
    // The run crossed two epoch boundaries and validated at 3, 6 and the end.
    assert.deepEqual([3, 4, 7].map((s) => ma.get(s)!["train/epoch"]), [0, 1, 2]);
    assert.ok([3, 6, 7].every((s) => Number.isFinite(ma.get(s)!["val/loss"])));
    assert.ok(ma.get(1)!["train/lr"] < ma.get(2)!["train/lr"], "warmup");
    assert.ok(ma.get(7)!["train/loss"] < ma.get(1)!["train/loss"], "the loss falls");

    for (const file of ["optimizer.safetensors", ...modelFiles(part)]) {
      sameBytes(
        `${root}/ckpt_full/global_step_7/${part}/${file}`,
        `${root}/ckpt_cut/global_step_7/${part}/${file}`,
      );
    }
    // max_ckpt_to_keep=2 kept the newest two; nothing half-written or stale is left.
    assert.deepEqual(
      tree(`${root}/ckpt_cut`).filter((n) => !n.includes("/")),
      ["global_step_6", "global_step_7", "latest_checkpointed_iteration.txt"],
    );
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
}

const modelFiles = (part: string) =>
  part === "lora_adapter" ? ["adapter_model.safetensors"] : ["model.safetensors"];

Deno.test({
  name: "SFT killed during a save and resumed (auto) matches an uninterrupted run exactly",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: () => killAndResume("full", "huggingface", []),
});

Deno.test({
  name: "LoRA SFT killed during a save and resumed matches an uninterrupted run exactly",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: () =>
    killAndResume("lora", "lora_adapter", [
      `model.partial_pretrain=${ROOT}assets/tiny_arith`,
      "model.lora_rank=4",
      "model.lora_alpha=8",
    ]),
});
