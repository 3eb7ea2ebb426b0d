/**
 * The training precision of a model from verl's `fsdp_config.mixed_precision.param_dtype`: fp32
 * (the exact path), or fp16 / bf16 as mixed precision: f16 operands in the linear layers and the LM
 * head (cached f16 weight copies, remade after each optimizer step), f32 master weights and AdamW
 * moments, and a dynamic loss scale on the optimizer. WebGPU has no bf16: bf16 runs as fp16 with one
 * notice; an adapter without shader-f16 runs f32 with one notice.
 */
import { gpu } from "../gpu/mod.ts";
import { HalfWeights } from "../nn/mod.ts";
import type { PrecisionName } from "../config/mod.ts";
import { LossScaler, type LossScalerOptions } from "./loss_scaler.ts";
import type { Optimizer } from "./optimizer_step.ts";

export type TrainPrecision = "f32" | "f16";

/** `param_dtype` on this GPU; `notice` hears one line when the request is not run as named. */
export function trainPrecision(
  name: PrecisionName,
  o: { key: string; notice: (line: string) => void },
): TrainPrecision {
  if (name === "fp32" || name === "float32") return "f32";
  const bf16 = name === "bf16" || name === "bfloat16";
  if (!gpu().hasF16) {
    o.notice(
      `${o.key}=${name}: this GPU has no shader-f16, so training runs in f32 (no loss scaling)`,
    );
    return "f32";
  }
  if (bf16) {
    o.notice(
      `${o.key}=${name}: WebGPU has no bf16; mixed precision runs with fp16 operands and ` +
        "dynamic loss scaling instead",
    );
  }
  return "f16";
}

/**
 * Switches `model`'s training passes to mixed precision and gives `optimizer` a loss scaler; the
 * f16 weight copies are remade after each write of their weight (an optimizer step, a load).
 * Returns the optimizer to use.
 * "f32" leaves both as they are.
 */
export function applyPrecision(
  precision: TrainPrecision,
  model: { mixedPrecision: HalfWeights | null },
  optimizer: Optimizer,
  scaler: LossScalerOptions = {},
): Optimizer {
  if (precision === "f32") return optimizer;
  model.mixedPrecision = new HalfWeights();
  return { ...optimizer, scaler: new LossScaler(scaler) };
}
