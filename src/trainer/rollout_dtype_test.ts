import assert from "node:assert/strict";
import { ConfigError, loadConfig } from "../config/mod.ts";
import { gpu } from "../gpu/mod.ts";
import { charTokenizer } from "../io/mod.ts";
import { CausalLM, tinyModelConfig, tinyWeights } from "../nn/mod.ts";
import { assertClose, gpuTest, leftPadded } from "../testing/mod.ts";
import { writeParquet } from "../data/mod.ts";
import { buildTrainerParts, rolloutPrecision } from "./build.ts";
import { rolloutFor } from "./rollout_fn.ts";
import { runGeneration, tinyGenerationModel, type WeightsDtype } from "./main_generation.ts";
import type { RolloutOptions } from "./parts.ts";

const B = 2, P = 5, R = 6;
const KEY = "actor_rollout_ref.rollout.dtype";

function setup() {
  const tokenizer = charTokenizer();
  const config = tinyModelConfig({
    vocabSize: tokenizer.vocabSize,
    eosTokenId: tokenizer.eosTokenId,
  });
  const tensors = tinyWeights(config, { seed: 5, init: "varied" });
  const { ids, mask } = leftPadded(B, P, [2, 0], config.vocabSize, 3);
  const prompts = { inputIds: ids, attentionMask: mask, batch: B, promptLength: P };
  const sampling: RolloutOptions = {
    n: 2,
    responseLength: R,
    temperature: 0.9,
    topK: 0,
    topP: 1,
    doSample: true,
    seed: 7,
    returnLogProbs: true,
  };
  return { tokenizer, config, tensors, prompts, sampling };
}

/** The trainer's parts for `overrides`, with the tiny model; `lines` gets what it prints. */
function parts(overrides: string[], lines: string[]) {
  const s = setup();
  const cfg = loadConfig("ppo_trainer", {
    overrides: [
      "data.train_batch_size=2",
      "actor_rollout_ref.actor.ppo_mini_batch_size=2",
      "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
      "actor_rollout_ref.rollout.n=2",
      "critic.ppo_mini_batch_size=2",
      "critic.ppo_micro_batch_size_per_gpu=4",
      ...overrides,
    ],
    skipPathChecks: true,
  });
  const item = (index: number) => ({
    index,
    inputIds: [3, 4, 5],
    dataSource: "arith",
    groundTruth: "7",
    extraInfo: {},
  });
  const built = buildTrainerParts({
    config: cfg,
    tokenizer: s.tokenizer,
    actor: { config: s.config, tensors: s.tensors },
    eosTokenIds: [],
    trainItems: [item(0), item(1)],
    valItems: [],
    tracking: { log: () => {}, close() {} },
    print: (line) => lines.push(line),
  });
  return { ...s, built };
}

Deno.test("rollout.dtype takes float32 (the default), float16 or bfloat16, names the key otherwise", () => {
  const cfg = (o: string[]) => loadConfig("ppo_trainer", { overrides: o, skipPathChecks: true });
  assert.equal(cfg([]).actor_rollout_ref.rollout.dtype, "float32");
  assert.equal(cfg([`${KEY}=float16`]).actor_rollout_ref.rollout.dtype, "float16");
  assert.equal(cfg([`${KEY}=bfloat16`]).actor_rollout_ref.rollout.dtype, "bfloat16");
  const gen = (o: string[]) => loadConfig("generation", { overrides: o, skipPathChecks: true });
  assert.equal(gen([]).rollout.dtype, "float32");
  assert.equal(gen(["rollout.dtype=float16"]).rollout.dtype, "float16");
  for (const [load, key] of [[cfg, KEY], [gen, "rollout.dtype"]] as const) {
    assert.throws(
      () => load([`${key}=float64`]),
      (e: unknown) =>
        e instanceof ConfigError && e.key === key &&
        /expects one of float32, float16, bfloat16, got "float64"/.test(e.message),
    );
  }
});

gpuTest("rolloutPrecision: float16 is an f16 KV cache, f16 weights only with shader-f16", () => {
  const lines: string[] = [];
  const notice = (line: string) => lines.push(line);
  const o = { key: KEY, headDim: 16, notice };
  assert.deepEqual(rolloutPrecision("float32", { ...o, headDim: 6 }), {
    kvDtype: "f32",
    f16Weights: false,
  });
  assert.deepEqual(lines, []);
  assert.throws(
    () => rolloutPrecision("float16", { ...o, headDim: 6 }),
    (e: unknown) =>
      e instanceof ConfigError && e.key === KEY && /multiple of 4.* is 6/.test(e.message),
  );
  // bfloat16 (verl's default) runs as float16, with one notice saying so
  const bf = rolloutPrecision("bfloat16", o);
  assert.deepEqual(bf, { kvDtype: "f16", f16Weights: gpu().hasF16 });
  assert.match(
    lines.shift()!,
    /rollout\.dtype=bfloat16: WebGPU has no bfloat16, so the rollout runs float16/,
  );
  lines.length = 0;
  const half = rolloutPrecision("float16", o);
  assert.deepEqual(half, { kvDtype: "f16", f16Weights: gpu().hasF16 });
  if (gpu().hasF16) assert.deepEqual(lines, []);
  else {
    assert.equal(lines.length, 1);
    assert.match(
      lines[0],
      /actor_rollout_ref\.rollout\.dtype=float16: .*no shader-f16.*f32 weights/,
    );
  }
});

gpuTest(
  "the PPO rollout: float32 is today's decoding bit for bit, float16 an f16 cache",
  async () => {
    const f32Lines: string[] = [], f16Lines: string[] = [];
    const a = parts([], f32Lines);
    const b = parts([`${KEY}=float16`], f16Lines);
    // The same weights decoded as they are (no rollout copy), f32 cache: what the rollout did
    // before the key existed.
    const direct = CausalLM.fromTensors(a.config, a.tensors);
    const want = await rolloutFor(direct, a.tokenizer, [], { mergeLora: false })(
      a.prompts,
      a.sampling,
    );
    const f32 = await a.built.rollout(a.prompts, a.sampling);
    assert.deepEqual(f32.responses, want.responses);
    assert.deepEqual(f32.logProbs, want.logProbs, "float32 is bit for bit the f32 decoding");
    const f16 = await b.built.rollout(b.prompts, b.sampling);
    const again = await b.built.rollout(b.prompts, b.sampling);
    assert.deepEqual(again.logProbs, f16.logProbs, "a rollout copy per call decodes the same");
    // Rounding may flip a sampled token (f16 weights too where the GPU has shader-f16): each
    // row is compared up to its first differing token, and most tokens must agree.
    const got: number[] = [], ref: number[] = [];
    for (let row = 0; row * R < want.responses.length; row++) {
      for (let t = row * R; t < (row + 1) * R && f16.responses[t] === want.responses[t]; t++) {
        got.push(f16.logProbs![t]);
        ref.push(want.logProbs![t]);
      }
    }
    assert.ok(got.length * 2 >= want.responses.length, `only ${got.length} tokens agree`);
    assert.notDeepEqual(got, ref, "keys and values were rounded to halves");
    assertClose(got, ref, { atol: 1e-2, rtol: 1e-2, label: "f16 log-probs" });
    assert.deepEqual(f32Lines.filter((l) => l.includes(KEY)), []);
    // One notice, at build, however many rollouts run; none where f16 weights are possible.
    assert.equal(f16Lines.filter((l) => l.includes(KEY)).length, gpu().hasF16 ? 0 : 1);
    direct.dispose();
  },
);

gpuTest(
  "generator: rollout.dtype=float16 loads f16 weights where it can, else says so once",
  async () => {
    const dir = await Deno.makeTempDir({ prefix: "rollout_dtype_test_" });
    await writeParquet(`${dir}/prompts.parquet`, {
      rows: ["1+2=", "7*8=", "3-1="].map((content) => ({ prompt: [{ role: "user", content }] })),
    });
    for (const dtype of ["float32", "float16"] as const) {
      const cfg = loadConfig("generation", {
        overrides: [
          `data.path=${dir}/prompts.parquet`,
          `data.output_path=${dir}/${dtype}.parquet`,
          "data.batch_size=2",
          "rollout.response_length=4",
          `rollout.dtype=${dtype}`,
        ],
      });
      const lines: string[] = [], loaded: WeightsDtype[] = [];
      const s = await runGeneration(cfg, {
        print: (line) => lines.push(line),
        loadModel: (d) => {
          loaded.push(d);
          return Promise.resolve(tinyGenerationModel(cfg, d));
        },
      });
      assert.equal(s.responses, 3);
      const half = dtype === "float16" && gpu().hasF16;
      assert.deepEqual(loaded, [half ? "float16" : "float32"]);
      const notices = lines.filter((l) => l.startsWith("rollout.dtype=float16"));
      assert.equal(notices.length, dtype === "float16" && !gpu().hasF16 ? 1 : 0, lines.join("\n"));
    }
    await Deno.remove(dir, { recursive: true });
  },
);

gpuTest(
  "param_dtype reaches the actor, its reference copy, the critic and their optimizers",
  () => {
    const lines: string[] = [];
    const { built } = parts([
      "algorithm.adv_estimator=gae",
      "actor_rollout_ref.actor.use_kl_loss=true",
      "actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype=fp16",
      "critic.model.fsdp_config.mixed_precision.param_dtype=fp16",
    ], lines);
    const half = gpu().hasF16;
    const actor = built.actor.model as CausalLM, ref = built.ref as CausalLM;
    assert.ok(ref instanceof CausalLM && ref !== actor, "a reference copy of its own");
    assert.equal(actor.mixedPrecision !== null, half, "actor");
    assert.equal(ref.mixedPrecision !== null, half, "the reference computes as the actor does");
    assert.equal(built.actor.optimizer.scaler != null, half, "actor loss scale");
    assert.equal(built.critic!.optimizer.scaler != null, half, "critic loss scale");
    // Without shader-f16 each key says once that it runs f32.
    assert.equal(lines.filter((l) => l.includes("training runs in f32")).length, half ? 0 : 2);
  },
);
