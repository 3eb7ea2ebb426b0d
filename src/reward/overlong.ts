/**
 * DAPO's overlong reward shaping (verl's "dapo" reward manager, `reward_model.overlong_buffer`):
 * a soft penalty over the last `len` tokens before max_response_length.
 *
 *   expected = max_response_length - len;  exceed = L - expected
 *   penalty  = min(-exceed / len · penalty_factor, 0)
 *
 * so a response of L ≤ expected tokens gets 0, and the penalty falls linearly to -penalty_factor
 * at L = max_response_length.
 */

/** `reward_model.overlong_buffer` with the response budget it is measured against. */
export interface OverlongBuffer {
  /** tokens before max_response_length over which the penalty grows (len) */
  len: number;
  /** the penalty at max_response_length (penalty_factor) */
  penaltyFactor: number;
  /** add `overlong_reward` and `overlong` (1 when penalised) to reward_extra_info (log) */
  log: boolean;
  /** data.max_response_length */
  maxResponseLength: number;
}

/** Throws unless 0 < len <= maxResponseLength (verl asserts the latter). */
export function checkOverlongBuffer(o: OverlongBuffer): void {
  if (!(Number.isInteger(o.len) && o.len > 0 && o.len <= o.maxResponseLength)) {
    throw new Error(
      `reward_model.overlong_buffer.len=${o.len} must be an integer in ` +
        `[1, data.max_response_length=${o.maxResponseLength}]`,
    );
  }
}

/** The penalty (≤ 0) of a response of `length` valid tokens. */
export function overlongPenalty(length: number, o: OverlongBuffer): number {
  const exceed = length - (o.maxResponseLength - o.len);
  return Math.min((-exceed / o.len) * o.penaltyFactor, 0);
}
