/** What `temperature = 0` means: greedy decoding, as in vLLM and verl's val_kwargs. */

/**
 * The temperature log-probs are computed at (old_log_prob, ref, update_actor): the rollout
 * temperature, except that 0 (greedy) uses the untempered distribution, 1, as the sampler's
 * rollout log-probs do (softmax(logits / 0) is undefined).
 */
export function logProbTemperature(temperature: number): number {
  return temperature > 0 ? temperature : 1;
}
