/**
 * Whether ops record onto the autograd tape. A file of its own with no imports: Tensor (which
 * records reshape views) and the tape (which turns recording off while it runs backwards) both
 * read it, and neither may import the other's file for it.
 */
let gradEnabled = true;

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
