/**
 * LoRA adapters on the decoder's linear layers: y = x W^T (+ b) + s (x A^T) B^T with A [r, in],
 * B [out, r], s = alpha / r (alpha / sqrt(r) with rsLoRA). A starts kaiming-uniform as in PEFT
 * (bound 1 / sqrt(in)), B at zero, so a fresh adapter leaves the model unchanged. The adapter
 * tensors are f32 and are the only trainable tensors of an adapted model (its base weights are
 * frozen: no gradients, no optimizer state). `mergeLoraRef` is the plain-TS merge W + s B A; the
 * adapted layer itself is `loraLinear` (lora_linear.ts).
 */
import {
  linearModules,
  type LoraArrays,
  loraScale,
  type LoraSettings,
  type ModelConfig,
  peftKey,
  resolveLoraTargets,
} from "../io/mod.ts";
import { gpu } from "../gpu/mod.ts";
import {
  add,
  cast,
  matmul,
  mulScalar,
  noGrad,
  scope,
  Tensor,
  uniformArray,
} from "../tensor/mod.ts";

/** One module's adapter on the GPU. */
export interface LoraPair {
  a: Tensor; // [r, in]
  b: Tensor; // [out, r]
  scale: number;
  /** lora_dropout: drop probability of the branch's input x in training forwards. */
  dropout: number;
  /** This module's dropout mask in the current training pass (see LoraAdapters.beginPass). */
  dropoutSeed: () => number;
}

/** Default settings for verl's keys (PEFT's defaults for the rest). */
export function loraSettings(o: {
  rank: number;
  alpha?: number;
  targetModules?: string | readonly string[];
  excludeModules?: string | readonly string[] | null;
  baseModel?: string | null;
  taskType?: LoraSettings["taskType"];
  dropout?: number;
}): LoraSettings {
  return {
    rank: o.rank,
    alpha: o.alpha ?? 16,
    targetModules: o.targetModules ?? "all-linear",
    excludeModules: o.excludeModules ?? null,
    useRslora: false,
    dropout: o.dropout ?? 0,
    modulesToSave: o.taskType === "TOKEN_CLS" ? ["score"] : null,
    ensureWeightTying: false,
    baseModelNameOrPath: o.baseModel ?? null,
    taskType: o.taskType ?? "CAUSAL_LM",
  };
}

/** Fresh adapters: A ~ U(-1/sqrt(in), 1/sqrt(in)) (kaiming_uniform, a = sqrt(5)), B = 0. */
export function initLora(config: ModelConfig, s: LoraSettings, seed = 0): LoraArrays {
  const shapes = linearModules(config);
  const out: LoraArrays = new Map();
  resolveLoraTargets(config, s).forEach((m, i) => {
    const [o, inF] = shapes.get(m)!;
    const bound = 1 / Math.sqrt(inF);
    const a = uniformArray(s.rank * inF, seed * 7919 + i, -bound, bound);
    out.set(m, { a, b: new Float32Array(o * s.rank) });
  });
  return out;
}

/** The adapters of a model on the GPU, and whether forwards use them. */
export class LoraAdapters {
  readonly pairs = new Map<string, LoraPair>();
  readonly scale: number;
  /**
   * Training forwards so far: with the module's index it seeds the module's dropout mask, so a
   * checkpointed layer's recompute (within the same pass) draws the forward's mask.
   */
  #pass = 0;

  constructor(
    readonly config: ModelConfig,
    readonly settings: LoraSettings,
    arrays: LoraArrays,
  ) {
    this.scale = loraScale(settings);
    const shapes = linearModules(config);
    const r = settings.rank;
    resolveLoraTargets(config, settings).forEach((m, i) => {
      const x = arrays.get(m);
      if (!x) throw new Error(`LoRA: no adapter for ${m}`);
      const [o, inF] = shapes.get(m)!;
      this.pairs.set(m, {
        a: Tensor.from(x.a, [r, inF], "f32", peftKey(m, "A")).keep(),
        b: Tensor.from(x.b, [o, r], "f32", peftKey(m, "B")).keep(),
        scale: this.scale,
        dropout: settings.dropout,
        dropoutSeed: () => (Math.imul(this.#pass, 0x9e3779b1) + i) >>> 0,
      });
    });
  }

  /** Starts a training forward: the next dropout masks are new ones. */
  beginPass(): void {
    this.#pass++;
  }

  /** Weight shapes [out, in] of the adapted modules. */
  shapes(): Map<string, [number, number]> {
    const all = linearModules(this.config);
    return new Map([...this.pairs.keys()].map((m) => [m, all.get(m)!]));
  }

  /** The trainable tensors under PEFT's names, module by module (A then B). */
  params(): Map<string, Tensor> {
    const out = new Map<string, Tensor>();
    for (const [m, p] of this.pairs) out.set(peftKey(m, "A"), p.a).set(peftKey(m, "B"), p.b);
    return out;
  }

  /** Every A and B as f32 arrays, in one readback. */
  async toArrays(): Promise<LoraArrays> {
    const list = [...this.pairs];
    const ranges = list.flatMap(([, p]) => [p.a, p.b]).map((t) => ({
      buffer: t.buffer,
      size: t.byteSize,
    }));
    const bytes = await gpu().read(ranges);
    const out: LoraArrays = new Map();
    list.forEach(([m], i) => {
      out.set(m, { a: new Float32Array(bytes[2 * i]), b: new Float32Array(bytes[2 * i + 1]) });
    });
    return out;
  }

  dispose(): void {
    for (const p of this.pairs.values()) {
      p.a.dispose();
      p.b.dispose();
    }
  }
}

/** Plain-TS merge W + s B A of every adapted module, in a copy of `base`. */
export function mergeLoraRef(
  config: ModelConfig,
  base: ReadonlyMap<string, Float32Array>,
  adapters: LoraArrays,
  s: Pick<LoraSettings, "rank" | "alpha" | "useRslora">,
): Map<string, Float32Array> {
  const shapes = linearModules(config);
  const out = new Map(base);
  const scale = loraScale(s), r = s.rank;
  for (const [m, { a, b }] of adapters) {
    const name = `${m}.weight`;
    const w = base.get(name);
    const shape = shapes.get(m);
    if (!w || !shape) throw new Error(`LoRA merge: the base model has no ${name}`);
    const [o, inF] = shape;
    const merged = Float32Array.from(w);
    for (let i = 0; i < o; i++) {
      for (let j = 0; j < inF; j++) {
        let acc = 0;
        for (let k = 0; k < r; k++) acc += b[i * r + k] * a[k * inF + j];
        merged[i * inF + j] += scale * acc;
      }
    }
    out.set(name, merged);
  }
  return out;
}

/**
 * W + s B A on the GPU in W's dtype (f32 arithmetic), for a merged-weights rollout copy.
 * w [out, in], B [out, r], A [r, in].
 */
export function mergedWeight(w: Tensor, p: LoraPair): Tensor {
  return noGrad(() =>
    scope(() => {
      const delta = mulScalar(matmul(p.b, p.a), p.scale); // [out, in]
      if (w.dtype === "f32") return add(w, delta);
      return cast(add(cast(w, "f32"), delta), w.dtype);
    })
  );
}
