/** Left-padded prompt tensors, as the rollout engine and the actor take them. */

export interface PromptTensors {
  /** [B,P] token ids, left-padded. */
  inputIds: Int32Array;
  /** [B,P] 1 for real tokens, 0 for padding. */
  attentionMask: Int32Array;
  /** [B,P] cumsum(mask) - 1, clamped at 0, so the first real token sits at position 0. */
  positionIds: Int32Array;
  batchSize: number;
  promptLength: number;
}

/** Left-pads prompts to the longest one (or to `length`). */
export function collatePrompts(
  items: readonly { inputIds: readonly number[] }[],
  opts: { padTokenId: number; length?: number },
): PromptTensors {
  const B = items.length;
  const longest = items.reduce((m, it) => Math.max(m, it.inputIds.length), 0);
  const P = opts.length ?? longest;
  if (longest > P) throw new Error(`collatePrompts: a prompt of ${longest} tokens exceeds ${P}`);
  const inputIds = new Int32Array(B * P).fill(opts.padTokenId);
  const attentionMask = new Int32Array(B * P);
  const positionIds = new Int32Array(B * P);
  items.forEach((it, b) => {
    const n = it.inputIds.length;
    const off = b * P + (P - n);
    inputIds.set(it.inputIds, off);
    attentionMask.fill(1, off, b * P + P);
    for (let t = 0; t < n; t++) positionIds[off + t] = t;
  });
  return { inputIds, attentionMask, positionIds, batchSize: B, promptLength: P };
}
