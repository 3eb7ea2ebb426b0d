/**
 * Activation checkpointing: a segment (a decoder layer) runs its forward off the tape, keeping
 * only its inputs and output; its backward runs the segment again on the tape and back-propagates
 * through that copy. Parameters used inside reach their `.grad` through the inner backward; the
 * segment's inputs get their gradient from it. Memory: one segment's intermediates at a time
 * instead of every segment's, for one more forward of each segment.
 */
import { backward, registerOp } from "../autograd.ts";
import { forRecompute, isGradEnabled, noGrad, withGrad } from "../grad_mode.ts";
import { scope } from "../scope.ts";
import type { Tensor } from "../tensor.ts";

registerOp(
  "checkpoint",
  "checkpoint(fn, inputs, { params }): fn(inputs) without its intermediates on the tape; backward " +
    "recomputes fn on the tape and back-propagates through it (gradients as without checkpointing)",
);

export interface CheckpointOptions {
  /**
   * Tensors fn reads besides `inputs` (its weights): the segment is recorded when one of them
   * needs a gradient even if no input does (a frozen embedding under trainable layers).
   */
  params?: readonly Tensor[];
}

/** fn(inputs) with its activations recomputed in backward; deterministic fn only. */
export function checkpoint(
  fn: (inputs: Tensor[]) => Tensor,
  inputs: Tensor[],
  options: CheckpointOptions = {},
): Tensor {
  const needs = inputs.some((t) => t.requiresGrad) ||
    (options.params ?? []).some((t) => t.requiresGrad);
  if (!isGradEnabled() || !needs) return fn(inputs);
  const out = scope(() => forRecompute(() => fn(inputs)));
  // Recorded by hand rather than by record(), which needs an input that wants a gradient: here
  // the weights alone may.
  out.requiresGrad = true;
  out.node = {
    name: "checkpoint",
    inputs,
    backward: (g) => scope(() => withGrad(() => segmentGrads(fn, inputs, g))),
  };
  return out;
}

/** Runs fn again on the tape over fresh leaves sharing the inputs' buffers; their gradients. */
function segmentGrads(fn: (inputs: Tensor[]) => Tensor, inputs: Tensor[], g: Tensor) {
  const leaves = inputs.map((x) => {
    const leaf = noGrad(() => x.reshape(x.shape)); // a view with no node
    leaf.requiresGrad = x.requiresGrad;
    return leaf;
  });
  const y = fn(leaves);
  if (y.requiresGrad) backward(y, g);
  return leaves.map((leaf) => {
    const grad = leaf.grad;
    leaf.grad = null;
    return grad;
  });
}
