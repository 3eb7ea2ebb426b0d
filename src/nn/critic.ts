/**
 * The PPO critic: the decoder trunk with a scalar value head instead of the lm_head. The head is
 * HF's token-classification head with one label, saved as `score.weight` [1, C] and `score.bias`
 * [1] (what `AutoModelForTokenClassification` with `num_labels=1`, verl's critic class, loads).
 */
import type { ModelConfig } from "../io/mod.ts";
import { linear, normalSampler } from "../tensor/mod.ts";
import type { Tensor } from "../tensor/mod.ts";
import { DecoderTrunk, type ForwardOptions, type LoadOptions, uploadWeights } from "./decoder.ts";
import { view } from "./layers.ts";
import { unpack } from "./packing.ts";
import { criticWeightShapes, initWeights, VALUE_HEAD_BIAS, VALUE_HEAD_WEIGHT } from "./weights.ts";

export class Critic extends DecoderTrunk {
  private constructor(
    config: ModelConfig,
    weights: Map<string, Tensor>,
    lora?: LoadOptions["lora"],
  ) {
    super(config, weights, lora);
  }

  /** A critic folder's tensors; a missing `score.bias` (a bias-free head) starts at zero. */
  static fromTensors(
    config: ModelConfig,
    tensors: ReadonlyMap<string, Float32Array>,
    options: Pick<LoadOptions, "lora" | "dtype"> = {},
  ): Critic {
    const all = new Map(tensors);
    if (!all.has(VALUE_HEAD_BIAS)) all.set(VALUE_HEAD_BIAS, new Float32Array(1));
    all.delete("lm_head.weight");
    // f16 applies to the trunk's matrices only: the value head stays f32 and trainable.
    const what = "Critic", dtype = options.dtype;
    const weights = uploadWeights(criticWeightShapes(config), all, { what, dtype });
    return new Critic(config, weights, options.lora);
  }

  /**
   * With LoRA: the adapters and the value head (PEFT's modules_to_save), which starts untrained
   * and so must learn in full; without: every parameter.
   */
  override trainable(): Map<string, Tensor> {
    if (!this.lora) return this.params();
    const w = this.weights;
    return new Map([
      ...this.lora.params(),
      [VALUE_HEAD_WEIGHT, w.get(VALUE_HEAD_WEIGHT)!],
      [VALUE_HEAD_BIAS, w.get(VALUE_HEAD_BIAS)!],
    ]);
  }

  /**
   * A critic initialised from an actor's (causal LM) tensors: the same trunk, the lm_head dropped,
   * and a value head of N(0, headStd) weights (zero by default, so the first values are 0).
   */
  static fromActor(
    config: ModelConfig,
    actor: ReadonlyMap<string, Float32Array>,
    options: { headStd?: number; seed?: number } & Pick<LoadOptions, "lora" | "dtype"> = {},
  ): Critic {
    const all = new Map(actor);
    const head = new Float32Array(config.hiddenSize);
    const std = options.headStd ?? 0;
    if (std > 0) {
      const normal = normalSampler(options.seed ?? 0);
      for (let i = 0; i < head.length; i++) head[i] = normal() * std;
    }
    all.set(VALUE_HEAD_WEIGHT, head);
    all.set(VALUE_HEAD_BIAS, new Float32Array(1));
    return Critic.fromTensors(config, all, options);
  }

  /** HF-like random trunk with the value head at zero. */
  static random(config: ModelConfig, options: { seed?: number } = {}): Critic {
    const w = initWeights(criticWeightShapes(config), { seed: options.seed });
    w.get(VALUE_HEAD_WEIGHT)!.fill(0);
    return Critic.fromTensors(config, w);
  }

  /** Values [B, T] of a padded batch through autograd (0 at the padding with `packing`). */
  values(inputIds: Tensor, options: ForwardOptions): Tensor {
    const h = this.hiddenRows(inputIds, options); // [N, C] packed, else [B, T, C]
    const [B, T] = inputIds.shape;
    const w = this.weights;
    const v = linear(h, w.get(VALUE_HEAD_WEIGHT)!, w.get(VALUE_HEAD_BIAS)!); // [..., 1]
    return view(options.packing ? unpack(v, options.packing) : v, [B, T]);
  }
}
