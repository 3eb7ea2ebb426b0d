/**
 * The Qwen2 / Qwen3 / Llama / Mistral causal LM on the GPU: a training forward through autograd
 * (`forward`, `hidden`) and an inference path with a KV cache (`prefill`, `decodeStep`).
 * Parameters live in a map under Hugging Face names, so loading and saving a folder is a
 * rename-free copy.
 */
import { gpu } from "../gpu/mod.ts";
import {
  type LoraArrays,
  type LoraSettings,
  type ModelConfig,
  type RopeScaling,
  ropeScalingOf,
} from "../io/mod.ts";
import { attention, cast, checkpoint, embedding, isGradEnabled, linear } from "../tensor/mod.ts";
import { lmHeadLogprob, type LmHeadLogprobOptions, noGrad, rmsNorm, scope } from "../tensor/mod.ts";
import { f16BitsToF32, fmtShape, type LmHeadLogprobResult } from "../tensor/mod.ts";
import { ropeDynamicInvFreq, Tensor } from "../tensor/mod.ts";
import { KvCache, lastStep } from "./kv_cache.ts";
import {
  type Attend,
  decoderLayer,
  type LayerParams,
  layerParams,
  type RopeCall,
} from "./layers.ts";
import { ropeFrequencies } from "./rope_scaling.ts";
import { LoraAdapters, mergedWeight } from "./lora.ts";
import { checkWeights, initWeights, tensorsIn, weightShapes } from "./weights.ts";

export interface ForwardOptions {
  /** i32 [B, T] rotary positions (left padding: cumsum(mask) - 1, clipped at 0). */
  positionIds: Tensor;
  /** i32 [B, T] 1 = token, 0 = padding. */
  attentionMask: Tensor;
  /** Run the base weights alone, LoRA adapters off (the reference policy of a LoRA actor). */
  disableAdapters?: boolean;
}

/** What {@link CausalLM.tokenLogProbs} computes, besides the forward's inputs. */
export interface TokenLogProbOptions extends ForwardOptions, LmHeadLogprobOptions {
  /** i32 [B, T] or [B * T]: the token each position predicts; -100 is ignored (log-prob 0). */
  targets: Tensor;
}

export interface LoadOptions {
  /**
   * "f16" stores the projection matrices (and the lm_head) in half precision for inference where
   * the GPU has shader-f16; such a model has no trainable f32 parameters. Default "f32".
   */
  dtype?: "f32" | "f16";
  /** LoRA adapters on the linear layers; the base weights are then frozen. */
  lora?: { settings: LoraSettings; arrays: LoraArrays };
}

const EMBED = "model.embed_tokens.weight";

/** A matrix that feeds `linear` (the only weights worth storing in f16). */
function isMatrix(name: string): boolean {
  return name.endsWith("_proj.weight") || name === "lm_head.weight";
}

/** Uploads HF-named arrays, checked against `shapes`. */
export function uploadWeights(
  shapes: Map<string, number[]>,
  arrays: ReadonlyMap<string, Float32Array>,
  options: LoadOptions & { what: string },
): Map<string, Tensor> {
  checkWeights(shapes, arrays, options.what);
  const half = options.dtype === "f16";
  if (half && !gpu().hasF16) {
    throw new Error(`${options.what}: f16 weights need shader-f16, which this GPU lacks`);
  }
  const out = new Map<string, Tensor>();
  for (const [name, shape] of shapes) {
    const dtype = half && isMatrix(name) ? "f16" : "f32";
    out.set(name, Tensor.from(arrays.get(name)!, shape, dtype, name).keep());
  }
  return out;
}

/** The shared trunk of the LM and the critic: embedding, layers and final norm. */
export class DecoderTrunk {
  protected readonly layers: LayerParams[];
  /** The scaled RoPE table [D/2] of linear / llama3 / yarn (null: theta's own, or dynamic). */
  readonly #ropeTable: Tensor | null;
  readonly #rope: RopeScaling;
  /** LoRA adapters (null: every weight trains). */
  readonly lora: LoraAdapters | null;
  /** A view over another model's weights frees only these on dispose (null: all of its own). */
  protected ownedWeights: Tensor[] | null = null;
  /** enable_gradient_checkpointing: each layer keeps its input; the backward reruns the layer. */
  gradientCheckpointing = false;

  protected constructor(
    readonly config: ModelConfig,
    protected readonly weights: Map<string, Tensor>,
    lora?: LoadOptions["lora"],
  ) {
    this.lora = lora ? new LoraAdapters(config, lora.settings, lora.arrays) : null;
    this.layers = Array.from(
      { length: config.numHiddenLayers },
      (_, l) => layerParams(config, weights, l, this.lora?.pairs),
    );
    this.#rope = ropeScalingOf(config);
    const fixed = this.#rope.type !== "default" && this.#rope.type !== "dynamic";
    this.#ropeTable = fixed
      ? Tensor.from(ropeFrequencies(config).invFreq, [config.headDim / 2], "f32", "rope.inv_freq")
        .keep()
      : null;
  }

  /**
   * The rotation of one forward. `longest` bounds max(position) + 1 (the sequence length, or the
   * cache length in decoding): dynamic NTK changes the table only past max_position_embeddings,
   * and then builds it on the GPU from the positions, as transformers does per forward.
   */
  #ropeCall(positions: Tensor, longest: number): RopeCall {
    const c = this.config, s = this.#rope;
    const call: RopeCall = { theta: c.ropeTheta, scale: s.attentionScaling };
    if (this.#ropeTable) return { ...call, invFreq: this.#ropeTable };
    if (s.type === "dynamic" && longest > c.maxPositionEmbeddings) {
      const invFreq = ropeDynamicInvFreq(positions, {
        theta: c.ropeTheta,
        headDim: c.headDim,
        factor: s.factor,
        maxPositionEmbeddings: c.maxPositionEmbeddings,
      });
      return { ...call, invFreq };
    }
    return call;
  }

  /** Every parameter under its HF name (the same tensors, so the trainer can set requiresGrad). */
  params(): Map<string, Tensor> {
    return new Map(this.weights);
  }

  /** What an optimizer updates: the LoRA A and B (PEFT names) when adapted, else params(). */
  trainable(): Map<string, Tensor> {
    return this.lora ? this.lora.params() : this.params();
  }

  /** All parameters as f32 arrays, read back in one round trip. */
  async toArrays(): Promise<Map<string, Float32Array>> {
    const entries = [...this.weights];
    const bytes = await gpu().read(
      entries.map(([, t]) => ({ buffer: t.buffer, size: t.byteSize })),
    );
    const out = new Map<string, Float32Array>();
    entries.forEach(([name, t], i) => {
      if (t.dtype === "f32") out.set(name, new Float32Array(bytes[i]));
      else out.set(name, Float32Array.from(new Uint16Array(bytes[i]), f16BitsToF32));
    });
    return out;
  }

  protected checkIds(op: string, ids: Tensor, others: [string, Tensor][]): void {
    const bad = ids.dtype !== "i32" || ids.rank !== 2 ||
      others.some(([, t]) => t.dtype !== "i32" || t.shape.join() !== ids.shape.join());
    if (bad) {
      const all = [["inputIds", ids] as [string, Tensor], ...others]
        .map(([n, t]) => `${n} ${t.dtype} ${fmtShape(t.shape)}`).join(", ");
      throw new Error(`${op}: expected i32 tensors of one shape [B, T], got ${all}`);
    }
  }

  /**
   * Runs the layers with the given attention; returns the final-norm hidden states [B, T, C].
   * `longest` bounds the forward's max(position) + 1 (see {@link DecoderTrunk.#ropeCall}).
   */
  protected trunk(
    ids: Tensor,
    positions: Tensor,
    attend: (l: number) => Attend,
    longest = ids.shape[1],
    adapters = true,
  ): Tensor {
    let h = embedding(ids, this.weights.get(EMBED)!);
    const inference = !isGradEnabled();
    const rope = this.#ropeCall(positions, longest);
    this.layers.forEach((w, l) => {
      const ctx = { config: this.config, positions, attend: attend(l), rope, adapters };
      if (!inference && this.gradientCheckpointing) {
        h = checkpoint(([x]) => decoderLayer(x, w, ctx), [h], { params: tensorsIn(w) });
      } else if (!inference) h = decoderLayer(h, w, ctx);
      else {
        // Off the tape nothing needs a layer's intermediates: free them before the next layer.
        const next = scope(() => decoderLayer(h, w, ctx));
        h.dispose();
        h = next;
      }
    });
    // A per-forward dynamic table: inference is done with it; on the tape the backward still
    // rotates with it, and the caller's scope frees it.
    if (inference && rope.invFreq && rope.invFreq !== this.#ropeTable) rope.invFreq.dispose();
    return rmsNorm(h, this.weights.get("model.norm.weight")!, { eps: this.config.rmsNormEps });
  }

  /** Final-norm hidden states [B, T, C] of a padded batch (training forward, on the tape). */
  hidden(inputIds: Tensor, options: ForwardOptions): Tensor {
    this.checkIds("hidden", inputIds, [
      ["positionIds", options.positionIds],
      ["attentionMask", options.attentionMask],
    ]);
    return this.trunk(
      inputIds,
      options.positionIds,
      () => (q, k, v) => attention(q, k, v, { keyMask: options.attentionMask, causal: true }),
      inputIds.shape[1],
      !options.disableAdapters,
    );
  }

  dispose(): void {
    for (const t of this.ownedWeights ?? this.weights.values()) t.dispose();
    this.lora?.dispose();
    this.#ropeTable?.dispose();
  }
}

/** Qwen2ForCausalLM / Qwen3ForCausalLM / LlamaForCausalLM / MistralForCausalLM. */
export class CausalLM extends DecoderTrunk {
  /** The lm_head matrix: the embedding table when tied (both uses' gradients add up). */
  #head: Tensor;

  private constructor(
    config: ModelConfig,
    weights: Map<string, Tensor>,
    lora?: LoadOptions["lora"],
    view?: { head: Tensor; owned: Tensor[] },
  ) {
    super(config, weights, lora);
    if (view) {
      this.#head = view.head;
      this.ownedWeights = view.owned;
    } else if (!config.tieWordEmbeddings) this.#head = weights.get("lm_head.weight")!;
    else if (weights.get(EMBED)!.dtype === "f32" && this.#f16Linear()) {
      // f16 inference: a half copy of the tied table for the lm_head; the gather stays f32.
      this.#head = noGrad(() => cast(weights.get(EMBED)!, "f16")).keep();
    } else this.#head = weights.get(EMBED)!;
  }

  #f16Linear(): boolean {
    return this.layers[0]?.q.dtype === "f16";
  }

  /** Parameters keyed by HF names; `lm_head.weight` is absent when tied (as in HF's files). */
  static fromTensors(
    config: ModelConfig,
    tensors: ReadonlyMap<string, Float32Array>,
    options: LoadOptions = {},
  ): CausalLM {
    const weights = uploadWeights(weightShapes(config), tensors, { ...options, what: "CausalLM" });
    return new CausalLM(config, weights, options.lora);
  }

  /** HF-like random initialisation (normal, std 0.02), deterministic in `seed`. */
  static random(config: ModelConfig, options: LoadOptions & { seed?: number } = {}): CausalLM {
    const shapes = weightShapes(config);
    return CausalLM.fromTensors(config, initWeights(shapes, { seed: options.seed }), options);
  }

  /**
   * An inference copy with every LoRA adapter merged into its weight (W + s B A, in W's dtype;
   * the other weights and the lm_head shared, so it costs one copy of the adapted matrices): what
   * a rollout decodes with, built after each update and disposed after use. Without adapters,
   * the model itself.
   */
  withMergedAdapters(): CausalLM {
    const lora = this.lora;
    if (!lora) return this;
    const weights = new Map(this.weights);
    const owned: Tensor[] = [];
    for (const [m, pair] of lora.pairs) {
      const t = mergedWeight(weights.get(`${m}.weight`)!, pair).keep();
      weights.set(`${m}.weight`, t);
      owned.push(t);
    }
    return new CausalLM(this.config, weights, undefined, { head: this.#head, owned });
  }

  /** Logits [B, T, V] of a padded batch through autograd. */
  forward(inputIds: Tensor, options: ForwardOptions): Tensor {
    return linear(this.hidden(inputIds, options), this.#head);
  }

  /**
   * Log-probs (entropy, Σπ²) of `targets`, shaped like them, through autograd: the LM head runs
   * over vocabulary chunks fused with the log-softmax, never materialising [B, T, V] logits.
   */
  tokenLogProbs(inputIds: Tensor, options: TokenLogProbOptions): LmHeadLogprobResult {
    const { targets, temperature, withEntropy, withSumPiSquared, chunkBytes, ...forward } = options;
    const h = this.hidden(inputIds, forward); // [B, T, C]
    return lmHeadLogprob(h, this.#head, targets, {
      temperature,
      withEntropy,
      withSumPiSquared,
      chunkBytes,
    });
  }

  /** Empty KV caches for `batch` sequences of up to `maxLength` tokens; promptMask [B, P]. */
  createCache(batch: number, maxLength: number, promptMask: Int32Array): KvCache {
    const c = this.config;
    return KvCache.create({
      layers: c.numHiddenLayers,
      batch,
      maxLength,
      kvHeads: c.numKeyValueHeads,
      headDim: c.headDim,
      promptMask,
    });
  }

  /**
   * Runs the prompt [B, P] into an empty cache; returns the last position's logits [B, V]. The
   * cache may hold r * B rows: each prompt's keys and values then fill its r rows (KvCache.append).
   */
  prefill(cache: KvCache, inputIds: Tensor, options: ForwardOptions): Tensor {
    this.checkIds("prefill", inputIds, [
      ["positionIds", options.positionIds],
      ["attentionMask", options.attentionMask],
    ]);
    if (cache.length !== 0) throw new Error(`prefill: the cache already holds ${cache.length}`);
    return noGrad(() => {
      const h = this.trunk(inputIds, options.positionIds, (l) => (q, k, v) => {
        cache.append(l, k, v);
        return attention(q, k, v, { keyMask: options.attentionMask, causal: true });
      });
      cache.advance(inputIds.shape[1]);
      return linear(lastStep(h), this.#head);
    });
  }

  /** One token per sequence (ids, positions i32 [B, 1]) against the cache; logits [B, V]. */
  decodeStep(cache: KvCache, ids: Tensor, positions: Tensor): Tensor {
    this.checkIds("decodeStep", ids, [["positions", positions]]);
    if (ids.shape[0] !== cache.batch || ids.shape[1] !== 1) {
      throw new Error(`decodeStep: ids ${fmtShape(ids.shape)} must be [${cache.batch}, 1]`);
    }
    return noGrad(() => {
      const kvLength = cache.length + 1;
      const h = this.trunk(ids, positions, (l) => (q, k, v) => {
        cache.append(l, k, v);
        return attention(q, cache.keys[l], cache.values[l], {
          keyMask: cache.keyMask,
          kvLength,
          causal: false,
        });
      }, kvLength);
      cache.advance(1);
      return linear(h, this.#head).reshape([cache.batch, this.config.vocabSize]);
    });
  }

  override dispose(): void {
    const view = this.ownedWeights !== null;
    if (!view && !this.weights.has("lm_head.weight") && this.#head !== this.weights.get(EMBED)) {
      this.#head.dispose();
    }
    super.dispose();
  }
}
