/**
 * The Qwen2 / Qwen3 / Llama / Mistral causal LM on the GPU: a training forward through autograd
 * (`forward`, `tokenLogProbs`) and an inference path with a KV cache (`prefill`, `decodeStep`)
 * over the shared decoder trunk.
 */
import type { ModelConfig } from "../io/mod.ts";
import { gpu } from "../gpu/mod.ts";
import { attention, cast, fmtShape, linear, lmHeadLogprob, noGrad, scope } from "../tensor/mod.ts";
import { type LmHeadLogprobOptions, type LmHeadLogprobResult, Tensor } from "../tensor/mod.ts";
import { KvCache, type KvDtype, lastStep } from "./kv_cache.ts";
import { type LoraPair, mergedWeight } from "./lora.ts";
import { initWeights, weightShapes } from "./weights.ts";
import type { LayerAttention } from "./layers.ts";
import { pack, type ScoredRows, unpack } from "./packing.ts";
import {
  DecoderTrunk,
  EMBED,
  type ForwardOptions,
  type LoadOptions,
  storedHalf,
  type TokenLogProbOptions,
  uploadWeights,
} from "./decoder.ts";

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
      // f16 matrices over an f32 table: a half copy of the tied table for the lm_head.
      this.#head = noGrad(() => cast(weights.get(EMBED)!, "f16")).keep();
    } else this.#head = weights.get(EMBED)!;
  }

  #f16Linear(): boolean {
    return this.layers[0]?.q.dtype === "f16";
  }

  /**
   * Parameters keyed by HF names; `lm_head.weight` is absent when tied (as in HF's files). A
   * Uint16Array holds f16 bits (uploadWeights).
   */
  static fromTensors(
    config: ModelConfig,
    tensors: ReadonlyMap<string, Float32Array | Uint16Array>,
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
   * the other weights and the lm_head shared, so it costs one copy of the adapted matrices).
   * Without adapters, the model itself. Same as `forRollout()`.
   */
  withMergedAdapters(): CausalLM {
    return this.forRollout();
  }

  /**
   * What a rollout decodes with, built per call and disposed after use: the LoRA adapters merged
   * into their weights (W + s B A), and with `f16Weights` every projection matrix, the lm_head
   * and the embedding table in f16, the tensors `uploadWeights` stores in f16 for dtype "f16"
   * (norms and biases stay f32; needs shader-f16; a tied table's one half copy serves both). A
   * tensor that needs neither is shared; an adapted one is copied once (merged, then cast). The
   * model itself when nothing changes.
   */
  forRollout(options: { f16Weights?: boolean } = {}): CausalLM {
    const half = options.f16Weights === true;
    if (half && !gpu().hasF16) {
      throw new Error("CausalLM.forRollout: f16 weights need shader-f16, which this GPU lacks");
    }
    const pairs = this.lora?.pairs ?? new Map<string, LoraPair>();
    const pairOf = (name: string) =>
      name.endsWith(".weight") ? pairs.get(name.slice(0, -".weight".length)) : undefined;
    const tied = this.config.tieWordEmbeddings;
    const changes = (name: string, t: Tensor) =>
      pairOf(name) !== undefined || (half && storedHalf(name) && t.dtype === "f32");
    if (![...this.weights].some(([name, t]) => changes(name, t))) return this;
    const weights = new Map(this.weights);
    const owned: Tensor[] = [];
    noGrad(() => {
      for (const [name, w] of this.weights) {
        if (!changes(name, w)) continue;
        const pair = pairOf(name);
        const t = scope(() => {
          const merged = pair ? mergedWeight(w, pair) : w;
          return half && merged.dtype === "f32" ? cast(merged, "f16") : merged;
        }).keep();
        weights.set(name, t);
        owned.push(t);
      }
    });
    // Tied and half: the table's half copy is the lm_head too.
    const head = !tied ? weights.get("lm_head.weight")! : half ? weights.get(EMBED)! : this.#head;
    return new CausalLM(this.config, weights, undefined, { head, owned });
  }

  /** Logits [B, T, V] of a padded batch through autograd. */
  forward(inputIds: Tensor, options: ForwardOptions): Tensor {
    const half = this.mixedPrecision?.get(this.#head) ?? null;
    return linear(this.hidden(inputIds, options), this.#head, null, { half });
  }

  /**
   * Log-probs (entropy, Σπ²) of `targets`, shaped like them, through autograd: the LM head runs
   * over vocabulary chunks fused with the log-softmax, never materialising [B, T, V] logits.
   */
  tokenLogProbs(inputIds: Tensor, options: TokenLogProbOptions): LmHeadLogprobResult {
    const {
      targets,
      temperature,
      withEntropy,
      withSumPiSquared,
      chunkBytes,
      keepBytes,
      scored,
      ...forward
    } = options;
    // mixed precision: the head multiplies its f16 copy (a tied table's own; the gather stays f32)
    const half = this.mixedPrecision?.get(this.#head) ?? null;
    const head = { temperature, withEntropy, withSumPiSquared, chunkBytes, keepBytes, half };
    const p = forward.packing;
    const h = this.hiddenRows(inputIds, forward); // [N, C] packed, else [B, T, C]
    if (scored) return this.#scoredLogProbs(h, targets, scored, head);
    if (!p) return lmHeadLogprob(h, this.#head, targets, head);
    // packed: the head runs on the N real tokens; pads get 0 in every output
    const r = lmHeadLogprob(h, this.#head, pack(targets.reshape([p.batch, p.length]), p), head);
    const back = (t: Tensor | null) => t && unpack(t, p).reshape(targets.shape);
    return {
      logProbs: back(r.logProbs)!,
      entropy: back(r.entropy),
      sumPiSquared: back(r.sumPiSquared),
    };
  }

  /** The head on the scored rows of h ([N, C] packed, else [B, T, C]), results back at targets'. */
  #scoredLogProbs(
    h: Tensor,
    targets: Tensor,
    scored: ScoredRows,
    head: LmHeadLogprobOptions,
  ): LmHeadLogprobResult {
    const { rows, positions } = scored;
    const [B, T] = [positions.batch, positions.length];
    if (targets.size !== B * T) {
      throw new Error(
        `tokenLogProbs: scored rows of [${B}, ${T}] do not fit targets ${fmtShape(targets.shape)}`,
      );
    }
    const source = h.reshape([rows.batch, rows.length, this.config.hiddenSize]);
    const hs = pack(source, rows); // [S, C]
    const r = lmHeadLogprob(hs, this.#head, pack(targets.reshape([B, T]), positions), head);
    const back = (t: Tensor | null) => t && unpack(t, positions).reshape(targets.shape);
    return {
      logProbs: back(r.logProbs)!,
      entropy: back(r.entropy),
      sumPiSquared: back(r.sumPiSquared),
    };
  }

  /**
   * Empty KV caches for `batch` sequences of up to `maxLength` tokens; promptMask [B, P]. dtype
   * f16 stores halves (half the cache memory and decode reads; needs headDim % 4 == 0).
   */
  createCache(
    batch: number,
    maxLength: number,
    promptMask: Int32Array,
    options: { dtype?: KvDtype } = {},
  ): KvCache {
    const c = this.config;
    return KvCache.create({
      dtype: options.dtype,
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
   * cache may hold r * B rows: each prompt's keys and values then fill its r rows (KvCache.ropeAppend).
   */
  prefill(cache: KvCache, inputIds: Tensor, options: ForwardOptions): Tensor {
    this.checkIds("prefill", inputIds, [
      ["positionIds", options.positionIds],
      ["attentionMask", options.attentionMask],
    ]);
    if (cache.length !== 0) throw new Error(`prefill: the cache already holds ${cache.length}`);
    if (options.packing) throw new Error("prefill: packed sequences are for the training passes");
    return noGrad(() => {
      const h = this.trunk(inputIds, options.positionIds, (l) => ({
        rotate: (qkv, rope) => cache.ropeAppend(l, qkv, rope),
        attend: (q, k, v) => attention(q, k, v, { keyMask: options.attentionMask, causal: true }),
      }));
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
      const h = this.trunk(ids, positions, (l) => ({
        rotate: (qkv, rope) => cache.ropeAppend(l, qkv, rope),
        attend: (q) =>
          attention(q, cache.keys[l], cache.values[l], {
            keyMask: cache.keyMask,
            kvLength,
            causal: false,
          }),
      }), kvLength);
      cache.advance(1);
      return linear(h, this.#head).reshape([cache.batch, this.config.vocabSize]);
    });
  }

  /**
   * Tokens ids, positions i32 [B, T] (one per row to decode, several to extend a cached prefix)
   * with the caller's rotation and attention per layer (a paged cache's, or a contiguous cache
   * holding the prefix); `longest` bounds max(position) + 1. Logits [B, V] of each row's last
   * position.
   */
  decodeWith(
    ids: Tensor,
    positions: Tensor,
    layer: (l: number) => LayerAttention,
    longest: number,
  ): Tensor {
    this.checkIds("decodeWith", ids, [["positions", positions]]);
    return noGrad(() => {
      const h = this.trunk(ids, positions, layer, longest);
      if (ids.shape[1] > 1) return linear(lastStep(h), this.#head);
      return linear(h, this.#head).reshape([ids.shape[0], this.config.vocabSize]);
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
