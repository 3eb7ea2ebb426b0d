/**
 * Whether ops record onto the autograd tape. A file of its own with no imports: Tensor (which
 * records reshape views) and the tape (which turns recording off while it runs backwards) both
 * read it, and neither may import the other's file for it.
 */
let gradEnabled = true;
/** Set while a checkpointed segment's first forward runs: backward will recompute it. */
let recomputedLater = false;

/**
 * Whether the ops running now will be recomputed under autograd (a checkpointed segment's first,
 * untaped forward): inference-only fusions stay off there, so the recompute's values are the
 * forward's bit for bit.
 */
export function isRecomputedLater(): boolean {
  return recomputedLater;
}

/** Runs fn (tape off) as a forward that backward will recompute (see isRecomputedLater). */
export function forRecompute<T>(fn: () => T): T {
  const prev = recomputedLater;
  recomputedLater = true;
  try {
    return noGrad(fn);
  } finally {
    recomputedLater = prev;
  }
}

export function isGradEnabled(): boolean {
  return gradEnabled;
}

/** Runs fn with the tape off: nothing is recorded (rollout, reference and old-logprob passes). */
export function noGrad<T>(fn: () => T): T {
  const prev = gradEnabled;
  gradEnabled = false;
  try {
    return fn();
  } finally {
    gradEnabled = prev;
  }
}

export async function noGradAsync<T>(fn: () => Promise<T>): Promise<T> {
  const prev = gradEnabled;
  gradEnabled = false;
  try {
    return await fn();
  } finally {
    gradEnabled = prev;
  }
}

/** Runs fn with the tape on (a checkpointed segment recomputes its forward inside backward). */
export function withGrad<T>(fn: () => T): T {
  const prev = gradEnabled;
  gradEnabled = true;
  try {
    return fn();
  } finally {
    gradEnabled = prev;
  }
}
