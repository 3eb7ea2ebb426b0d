/**
 * The decoder trunk shared by the causal LM (causal_lm.ts) and the critic: embedding, layers and
 * final norm through autograd (`hidden`), and the upload of Hugging Face-named weights.
 * Parameters live in a map under Hugging Face names, so loading and saving a folder is a
 * rename-free copy.
 */
import { gpu } from "../gpu/mod.ts";
import {
  EMBED_WEIGHT,
  HEAD_WEIGHT,
  type LoraArrays,
  type LoraSettings,
  type ModelConfig,
  type RopeScaling,
  ropeScalingOf,
} from "../io/mod.ts";
import { attention, cast, checkpoint, embedding, isGradEnabled } from "../tensor/mod.ts";
import { type LmHeadLogprobOptions, rmsNorm, scope } from "../tensor/mod.ts";
import { f16BitsToF32, f16ToF32Into, f32ToF16Into, fmtShape } from "../tensor/mod.ts";
import { ropeDynamicInvFreq, Tensor } from "../tensor/mod.ts";
import {
  decoderLayer,
  decoderLayerStep,
  type LayerAttention,
  type LayerParams,
  layerParams,
  type RopeCall,
} from "./layers.ts";
import { ropeFrequencies } from "./rope_scaling.ts";
import { LoraAdapters } from "./lora.ts";
import type { HalfWeights } from "./half_weights.ts";
import { checkWeights, tensorsIn } from "./weights.ts";
import {
  checkPacking,
  pack,
  packedAttend,
  type Packing,
  type ScoredRows,
  unpack,
} from "./packing.ts";

export interface ForwardOptions {
  /** i32 [B, T] rotary positions (left padding: cumsum(mask) - 1, clipped at 0). */
  positionIds: Tensor;
  /** i32 [B, T] 1 = token, 0 = padding. */
  attentionMask: Tensor;
  /** Run the base weights alone, LoRA adapters off (the reference policy of a LoRA actor). */
  disableAdapters?: boolean;
  /**
   * use_remove_padding: run the token-wise work on the real tokens only (packingOf the mask);
   * the results at real tokens equal the padded pass's up to f32 rounding.
   */
  packing?: Packing;
}

/** What {@link CausalLM.tokenLogProbs} computes, besides the forward's inputs. */
export interface TokenLogProbOptions extends ForwardOptions, LmHeadLogprobOptions {
  /** i32 [B, T] or [B * T]: the token each position predicts; -100 is ignored (log-prob 0). */
  targets: Tensor;
  /**
   * The positions with a target (scoredRowsOf the same targets): the LM head then runs on those
   * rows only, and every output is 0 (entropy included) elsewhere. Without it, every position.
   */
  scored?: ScoredRows | null;
}

export interface LoadOptions {
  /**
   * "f16" stores the projection matrices, the lm_head and the embedding table in half precision
   * for inference or a frozen LoRA base where the GPU has shader-f16 (the gathered rows are
   * widened to f32); such a model has no trainable f32 parameters. Default "f32".
   */
  dtype?: "f32" | "f16";
  /** LoRA adapters on the linear layers; the base weights are then frozen. */
  lora?: { settings: LoraSettings; arrays: LoraArrays };
}

export const EMBED = EMBED_WEIGHT;

/** A matrix that feeds `linear` (the only weights worth storing in f16). */
export function isMatrix(name: string): boolean {
  return name.endsWith("_proj.weight") || name === HEAD_WEIGHT;
}

/** What a model of dtype "f16" stores in half precision: the matrices and the embedding table. */
export function storedHalf(name: string): boolean {
  return isMatrix(name) || name === EMBED;
}

/**
 * Uploads HF-named arrays, checked against `shapes`. A Uint16Array holds f16 bits (weights that
 * came as f16): uploaded as they are into an f16 tensor, converted once into an f32 one.
 */
export function uploadWeights(
  shapes: Map<string, number[]>,
  arrays: ReadonlyMap<string, Float32Array | Uint16Array>,
  options: LoadOptions & { what: string },
): Map<string, Tensor> {
  checkWeights(shapes, arrays, options.what);
  const half = options.dtype === "f16";
  if (half && !gpu().hasF16) {
    throw new Error(`${options.what}: f16 weights need shader-f16, which this GPU lacks`);
  }
  const out = new Map<string, Tensor>();
  for (const [name, shape] of shapes) {
    const dtype = half && storedHalf(name) ? "f16" : "f32", a = arrays.get(name)!;
    let bits: Uint16Array | null = a instanceof Uint16Array ? a : null;
    if (dtype === "f16" && !bits) {
      bits = new Uint16Array(a.length);
      f32ToF16Into(a as Float32Array, bits);
    }
    if (dtype === "f16") {
      const t = Tensor.empty(shape, "f16", name).keep();
      if (a.length > 0) gpu().upload(t.buffer, bits!);
      out.set(name, t);
      continue;
    }
    const values = bits ? new Float32Array(bits.length) : a as Float32Array;
    if (bits) f16ToF32Into(bits, values);
    out.set(name, Tensor.from(values, shape, "f32", name).keep());
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
  /**
   * Mixed precision of the training and log-prob passes (`hidden`, `tokenLogProbs`): the linear
   * layers and the LM head multiply f16 copies (held here) with f32 accumulation, and attention
   * rounds to halves as torch's fp16 attention (precision "f16"); norms, RoPE, the embedding and
   * every weight stay f32. Null: f32. Decoding is not affected (the rollout's own `dtype`
   * governs it).
   */
  mixedPrecision: HalfWeights | null = null;

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
    attention: (l: number) => LayerAttention,
    longest = ids.shape[1],
    pass: { adapters?: boolean; half?: HalfWeights | null } = {},
  ): Tensor {
    const adapters = pass.adapters ?? true, half = pass.half ?? null;
    const rows = embedding(ids, this.weights.get(EMBED)!);
    // A half table (frozen or inference-only) gathers half rows; the residual stream is f32.
    let h = rows.dtype === "f16" ? scope(() => cast(rows, "f32")) : rows;
    if (h !== rows) rows.dispose();
    const inference = !isGradEnabled();
    if (!inference && adapters) this.lora?.beginPass(); // new lora_dropout masks
    const rope = this.#ropeCall(positions, longest);
    const finalNorm = this.weights.get("model.norm.weight")!;
    let normed: Tensor | null = null; // h's next norm, when the layer before made it
    this.layers.forEach((w, l) => {
      const ctx = { config: this.config, positions, ...attention(l), rope, adapters, half };
      if (!inference && this.gradientCheckpointing) {
        h = checkpoint(([x]) => decoderLayer(x, w, ctx), [h], { params: tensorsIn(w) });
      } else if (!inference) h = decoderLayer(h, w, ctx);
      else {
        // Off the tape nothing needs a layer's intermediates: free them before the next layer.
        const nextNorm = this.layers[l + 1]?.inputNorm ?? finalNorm;
        const next = scope(() => decoderLayerStep(h, w, { ...ctx, normedInput: normed, nextNorm }));
        h.dispose();
        normed?.dispose();
        ({ h, normed } = next);
      }
    });
    // A per-forward dynamic table: inference is done with it; on the tape the backward still
    // rotates with it, and the caller's scope frees it.
    if (inference && rope.invFreq && rope.invFreq !== this.#ropeTable) rope.invFreq.dispose();
    if (normed) h.dispose();
    return normed ?? rmsNorm(h, finalNorm, { eps: this.config.rmsNormEps });
  }

  /**
   * Final-norm hidden states [B, T, C] of a padded batch (training forward, on the tape); with
   * `packing`, zeros at the padding.
   */
  hidden(inputIds: Tensor, options: ForwardOptions): Tensor {
    const h = this.hiddenRows(inputIds, options);
    return options.packing ? unpack(h, options.packing) : h;
  }

  /** Final-norm hidden states: [N, C] of the real tokens with `packing`, else [B, T, C]. */
  protected hiddenRows(inputIds: Tensor, options: ForwardOptions): Tensor {
    this.checkIds("hidden", inputIds, [
      ["positionIds", options.positionIds],
      ["attentionMask", options.attentionMask],
    ]);
    const p = options.packing, keyMask = options.attentionMask;
    const pass = { adapters: !options.disableAdapters, half: this.mixedPrecision };
    // Mixed precision rounds attention as torch autocast's fp16 attention does.
    const precision = pass.half ? "f16" : "f32";
    if (!p) {
      return this.trunk(
        inputIds,
        options.positionIds,
        () => ({
          attend: (q, k, v) => attention(q, k, v, { keyMask, causal: true, precision }),
        }),
        inputIds.shape[1],
        pass,
      );
    }
    checkPacking(p, inputIds);
    const ids = pack(inputIds, p).reshape([1, p.tokens]); // [1, N]
    const positions = pack(options.positionIds, p).reshape([1, p.tokens]); // [1, N]
    const attend = packedAttend(p, keyMask, { precision });
    const h = this.trunk(ids, positions, () => ({ attend }), inputIds.shape[1], pass);
    return h.reshape([p.tokens, this.config.hiddenSize]); // [N, C]
  }

  dispose(): void {
    for (const t of this.ownedWeights ?? this.weights.values()) t.dispose();
    this.lora?.dispose();
    this.#ropeTable?.dispose();
    this.mixedPrecision?.clear();
  }
}
