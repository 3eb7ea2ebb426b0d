/**
 * Scopes release intermediates deterministically: GPU memory is not garbage collected in time, so
 * every tensor made inside `scope(fn)` is disposed when fn returns, except those it returns (they
 * move to the enclosing scope) and those `keep()`-ed. Outside any scope nothing is tracked.
 *
 * Tensors register themselves on construction, so this file knows them only as things that can be
 * disposed: importing tensor.ts here would close an import circle.
 */
interface Tracked {
  dispose(): void;
}

const stack: Set<Tracked>[] = [];

export function trackTensor(t: Tracked): void {
  stack.at(-1)?.add(t);
}

export function untrackTensor(t: Tracked): void {
  for (let i = stack.length - 1; i >= 0; i--) if (stack[i].delete(t)) return;
}

function collect(value: unknown, out: Set<unknown>, depth = 0): void {
  if (value === null || typeof value !== "object" || depth > 4) return;
  if ((value as { buffer?: unknown; shape?: unknown }).shape !== undefined && "dtype" in value) {
    out.add(value);
    return;
  }
  if (Array.isArray(value)) { for (const v of value) collect(v, out, depth + 1); }
  else if (value instanceof Map) { for (const v of value.values()) collect(v, out, depth + 1); }
  else if (Object.getPrototypeOf(value) === Object.prototype) {
    for (const v of Object.values(value)) collect(v, out, depth + 1);
  }
}

function close(frame: Set<Tracked>, result: unknown): void {
  const keep = new Set<unknown>();
  collect(result, keep);
  stack.pop();
  for (const t of frame) {
    if (keep.has(t)) trackTensor(t);
    else t.dispose();
  }
}

/** Runs fn and disposes every tensor it created that is not part of its result. */
export function scope<T>(fn: () => T): T {
  const frame = new Set<Tracked>();
  stack.push(frame);
  let result: T;
  try {
    result = fn();
  } catch (e) {
    close(frame, undefined);
    throw e;
  }
  close(frame, result);
  return result;
}

/** Async variant; do not interleave two async scopes (the controller runs stages in sequence). */
export async function scopeAsync<T>(fn: () => Promise<T>): Promise<T> {
  const frame = new Set<Tracked>();
  stack.push(frame);
  let result: T;
  try {
    result = await fn();
  } catch (e) {
    close(frame, undefined);
    throw e;
  }
  close(frame, result);
  return result;
}
