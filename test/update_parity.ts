/**
 * The Deno side of the update parity check (test/update_parity.py compares it with plain PyTorch):
 * a Qwen2-family model with random weights saved as a Hugging Face folder (f32), a fixed batch
 * (prompts, ragged responses with a masked tool token, advantages, old log-probs, old values,
 * returns), and ONE update of each kind through the trainer's own functions (updateActor /
 * updateCritic: one mini-batch of micro-batches, grad clip, AdamW with weight decay):
 *
 *   vanilla  policy loss "vanilla", token-mean, clip 0.2 / dual clip 3 (verl's defaults)
 *   gspo     policy loss "gspo", seq-mean-token-mean, clip 3e-4 / 4e-4 (verl's GSPO settings)
 *   value    clipped value loss (cliprange_value 0.5, token-mean) on a critic with a value head
 *
 * --precision=fp16 runs every pass in mixed precision (f16 operands in the linear layers and the LM
 * head, f32 masters, the dynamic loss scale): the gradients are dumped unscaled (divided by the
 * loss scale AdamW stepped with, recorded in the manifest).
 *
 * Written under OUT: actor/ and critic/ (model folders), batch.safetensors (inputs, our log-probs
 * and values before any update), <case>/grads.safetensors (the accumulated gradients of every
 * parameter before clipping, as AdamW receives them with the clip scale beside), <case>/
 * after.safetensors (the weights after the step) and manifest.json (hyper-parameters, our metrics).
 *
 *   deno run -A test/update_parity.ts --out=DIR [--shape=tiny|0.5b-2layers] [--vocab=N]
 *     [--precision=fp16] [--keep-logits-gb=G]
 *
 * --keep-logits-gb: actor.keep_logits_gb, the LM head's logits kept from forward to backward (and
 * then run in groups of vocabulary chunks).
 *   python3 test/update_parity.py DIR
 */
import { initGpu } from "../src/gpu/mod.ts";
import {
  floatTensor,
  type ModelConfig,
  type RawTensor,
  writeModelFolder,
  writeSafetensorsFile,
} from "../src/io/mod.ts";
import {
  CausalLM,
  Critic,
  type ForwardOptions,
  tinyModelConfig,
  tinyWeights,
} from "../src/nn/mod.ts";
import { clone, mulScalar, noGrad, type Tensor } from "../src/tensor/mod.ts";
import {
  applyPrecision,
  computeLogProbs,
  computeValues,
  type CriticUpdateOptions,
  makeOptimizer,
  type TrainPrecision,
  updateActor,
  updateCritic,
} from "../src/trainer/mod.ts";
import { HalfWeights } from "../src/nn/mod.ts";
import { qwen25Config } from "../bench/grpo_setup.ts";
import {
  ACTOR_CASES,
  CRITIC_CASE,
  LOOP,
  PARITY_OPTIM,
  parityBatch,
  type ParityInputs,
  withOldLogProbs,
  withOldValues,
} from "./update_batch.ts";

/**
 * Model shapes: the small default, and the 0.5B width with the full vocabulary (the LM head runs
 * in vocabulary chunks); `vocab` overrides the vocabulary size (a CPU adapter's 128 MiB binding
 * limit holds at most ~37k rows of 896).
 */
export const PARITY_SHAPES = {
  tiny: (vocab = 512) =>
    tinyModelConfig({
      hiddenSize: 64,
      intermediateSize: 128,
      numHiddenLayers: 2,
      numAttentionHeads: 4,
      numKeyValueHeads: 2,
      vocabSize: vocab,
      eosTokenId: 1,
      maxPositionEmbeddings: 256,
      ropeTheta: 1e6,
      rmsNormEps: 1e-6,
    }),
  "0.5b-2layers": (vocab?: number) =>
    qwen25Config("0.5b", { numHiddenLayers: 2, vocabSize: vocab }),
} satisfies Record<string, (vocab?: number) => ModelConfig>;
export type ParityShape = keyof typeof PARITY_SHAPES;

/** Rows x prompt / response tokens of the batch per shape. */
const BATCH_SIZES: Record<ParityShape, { P: number; R: number }> = {
  tiny: { P: 6, R: 10 },
  "0.5b-2layers": { P: 12, R: 24 },
};

type Optimizer = ReturnType<typeof makeOptimizer>;

/**
 * Copies every gradient when AdamW steps (the accumulated, unclipped gradients), divided by the
 * loss scale they carry (1 without loss scaling); `scale()` is that scale.
 */
function recordGrads(opt: Optimizer): { grads: () => Tensor[]; scale: () => number } {
  const step = opt.adamw.step.bind(opt.adamw);
  let grads: Tensor[] = [];
  let scale = 1;
  opt.adamw.step = (o) => {
    scale = opt.scaler?.scale ?? 1;
    grads = noGrad(() =>
      opt.params.map((p) => {
        if (!p.grad) throw new Error(`parameter ${p.label} has no gradient`);
        return (scale === 1 ? clone(p.grad) : mulScalar(p.grad, 1 / scale)).keep();
      })
    );
    step(o);
  };
  return { grads: () => grads, scale: () => scale };
}

function f32(name: string, shape: number[], x: Float32Array): RawTensor {
  const t = floatTensor(shape, x);
  return { name, dtype: t.dtype, shape: t.shape, bytes: t.data };
}

function i32(name: string, shape: number[], x: Int32Array): RawTensor {
  return { name, dtype: "I32", shape, bytes: new Uint8Array(x.slice().buffer) };
}

/** One update of `model`; writes OUT/<name>/grads.safetensors and after.safetensors. */
async function oneUpdate(
  out: string,
  name: string,
  model: CausalLM | Critic,
  run: (opt: Optimizer) => Promise<Record<string, number>>,
  precision: TrainPrecision,
): Promise<Record<string, number>> {
  const params = model.params();
  const opt = applyPrecision(precision, model, makeOptimizer(params, PARITY_OPTIM));
  const recorded = recordGrads(opt);
  const metrics = { ...await run(opt), loss_scale: recorded.scale() };
  const names = [...params.keys()];
  const shape = (n: string) => [...params.get(n)!.shape];
  const g = recorded.grads();
  if (g.length !== names.length) throw new Error(`${name}: no optimizer step was taken`);
  const gradArrays = await Promise.all(g.map(async (t) => new Float32Array(await t.toArray())));
  g.forEach((t) => t.dispose());
  const after = await model.toArrays();
  opt.adamw.dispose();
  await Deno.mkdir(`${out}/${name}`, { recursive: true });
  await writeSafetensorsFile(
    `${out}/${name}/grads.safetensors`,
    names.map((n, i) => f32(n, shape(n), gradArrays[i])),
  );
  await writeSafetensorsFile(
    `${out}/${name}/after.safetensors`,
    names.map((n) => f32(n, shape(n), after.get(n)!)),
  );
  return metrics;
}

/** The critic as the trainer holds it: values [B, T] as its forward (src/trainer/build.ts). */
function valueModel(critic: Critic) {
  return {
    forward: (ids: Tensor, f: ForwardOptions) => critic.values(ids, f),
    params: () => critic.params(),
    toArrays: () => critic.toArrays(),
  };
}

/** A model folder (f32) of weights `w`, shaped as the model's parameters. */
function writeFolder(path: string, config: ModelConfig, w: Map<string, Float32Array>, model: {
  params(): Map<string, Tensor>;
}) {
  const shapes = model.params();
  const tensors = new Map([...w].map(([n, x]) => [n, floatTensor([...shapes.get(n)!.shape], x)]));
  return writeModelFolder(path, { config, tensors, dtype: "float32", overwrite: true });
}

/** Everything test/update_parity.py reads, under `out`; returns the manifest. */
export async function writeUpdateParity(
  out: string,
  o: { shape?: ParityShape; vocab?: number; precision?: TrainPrecision; keepLogitsGb?: number } =
    {},
) {
  const g = await initGpu();
  const precision = o.precision ?? "f32";
  if (precision === "f16" && !g.hasF16) throw new Error("--precision=fp16 needs shader-f16");
  // The passes before any update run in the precision of the update (the PPO ratio starts at 1).
  const half = () => precision === "f16" ? new HalfWeights() : null;
  const shape = o.shape ?? "tiny";
  const config = PARITY_SHAPES[shape](o.vocab);
  const { P, R } = BATCH_SIZES[shape];
  const std = shape === "tiny" ? 0.1 : 0.02;
  const actorW = tinyWeights(config, { seed: 7, std });
  const criticW = tinyWeights(config, { seed: 8, std, critic: true });
  const inputs: ParityInputs = parityBatch(config.vocabSize, { B: LOOP.miniBatchSize, P, R });

  // Before any update: our log-probs and values, and the old log-probs / values around them.
  let model = CausalLM.fromTensors(config, actorW);
  model.mixedPrecision = half();
  await writeFolder(`${out}/actor`, config, actorW, model);
  const micro = { microBatchSize: LOOP.microBatchSize, withEntropy: false, temperature: 1 };
  const { logProbs } = await computeLogProbs(model, inputs.batch, micro);
  model.dispose();
  let critic = Critic.fromTensors(config, criticW);
  critic.mixedPrecision = half();
  await writeFolder(`${out}/critic`, config, criticW, critic);
  const vpreds = await computeValues(valueModel(critic), inputs.batch, micro);
  critic.dispose();

  const metrics: Record<string, Record<string, number>> = {};
  const tensors: RawTensor[] = [];
  const B = inputs.batch.size, T = P + R;
  for (const [name, loss] of Object.entries(ACTOR_CASES)) {
    const batch = withOldLogProbs(inputs, logProbs, {
      sequence: loss.policyLoss === "gspo",
      avoid: [1 - loss.clipRatioLow, 1 + loss.clipRatioHigh, loss.clipRatioC].map(Math.log),
    });
    tensors.push(f32(`${name}.old_log_probs`, [B, R], batch.oldLogProbs));
    model = CausalLM.fromTensors(config, actorW);
    metrics[name] = await oneUpdate(
      out,
      name,
      model,
      (opt) =>
        updateActor(model, opt, batch, {
          ...LOOP,
          temperature: 1,
          loss,
          keepLogitsBytes: (o.keepLogitsGb ?? 0) * 1e9,
        }),
      precision,
    );
    model.dispose();
  }
  const criticBatch = withOldValues(inputs, vpreds, CRITIC_CASE.cliprangeValue);
  critic = Critic.fromTensors(config, criticW);
  const criticO: CriticUpdateOptions = { ...LOOP, ...CRITIC_CASE };
  metrics.value = await oneUpdate(
    out,
    "value",
    critic,
    (opt) => updateCritic(valueModel(critic), opt, criticBatch, criticO),
    precision,
  );
  critic.dispose();

  const b = inputs.batch, s = inputs.sequences;
  await writeSafetensorsFile(`${out}/batch.safetensors`, [
    i32("prompts", [B, P], b.prompts),
    i32("prompt_mask", [B, P], b.promptMask),
    i32("responses", [B, R], b.responses),
    i32("response_mask", [B, R], b.responseMask),
    i32("input_ids", [B, T], s.inputIds),
    i32("attention_mask", [B, T], s.attentionMask),
    i32("position_ids", [B, T], s.positionIds),
    f32("advantages", [B, R], inputs.advantages),
    f32("log_probs", [B, R], logProbs),
    f32("vpreds", [B, R], vpreds),
    f32("values", [B, R], criticBatch.values!),
    f32("returns", [B, R], criticBatch.returns!),
    ...tensors,
  ]);
  const manifest = {
    shape,
    precision: precision === "f16" ? "fp16" : "fp32",
    vocab_size: config.vocabSize,
    architecture: config.architectures[0],
    batch: { rows: B, prompt_length: P, response_length: R },
    update: { ...LOOP, temperature: 1 },
    optim: PARITY_OPTIM,
    actor_cases: ACTOR_CASES,
    critic_case: CRITIC_CASE,
    grads: "accumulated over the micro-batches, before clipping",
    metrics,
  };
  await Deno.writeTextFile(`${out}/manifest.json`, JSON.stringify(manifest, null, 1) + "\n");
  return manifest;
}

function flag(name: string): string | undefined {
  const hit = Deno.args.find((a) => a.startsWith(`--${name}=`));
  return hit?.slice(name.length + 3);
}

if (import.meta.main) {
  const out = flag("out") ?? "outputs/update_parity";
  const shape = flag("shape") ?? "tiny";
  if (!(shape in PARITY_SHAPES)) {
    throw new Error(`--shape=${shape}: one of ${Object.keys(PARITY_SHAPES).join(", ")}`);
  }
  await Deno.mkdir(out, { recursive: true });
  const t0 = performance.now();
  const vocab = flag("vocab");
  const precision = flag("precision") ?? "fp32";
  if (precision !== "fp32" && precision !== "fp16") {
    throw new Error(`--precision=${precision}: fp32 or fp16`);
  }
  const m = await writeUpdateParity(out, {
    shape: shape as ParityShape,
    vocab: vocab ? Number(vocab) : undefined,
    precision: precision === "fp16" ? "f16" : "f32",
    keepLogitsGb: Number(flag("keep-logits-gb") ?? 0),
  });
  for (const [name, x] of Object.entries(m.metrics)) {
    const norm = x["actor/grad_norm"] ?? x["critic/grad_norm"];
    console.log(JSON.stringify({ case: name, grad_norm: norm }));
  }
  const s = ((performance.now() - t0) / 1000).toFixed(1);
  console.log(`wrote ${out} (${shape}, ${s} s): python3 test/update_parity.py ${out}`);
}
