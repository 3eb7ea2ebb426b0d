/** A config that cannot be used; `key` is the dotted key (or file) at fault. */
export class ConfigError extends Error {
  constructor(readonly key: string, message: string) {
    super(message);
    this.name = "ConfigError";
  }
}

/** Levenshtein distance, used for did-you-mean hints. */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost);
    }
    prev = cur;
  }
  return prev[b.length];
}

/**
 * The closest known key to `key`: a key with the same last segment elsewhere in the tree wins
 * (a key put in the wrong section is the commonest slip), then the smallest edit distance on the
 * whole dotted key, within a third of its length.
 */
export function closestKey(key: string, known: string[]): string | undefined {
  const leaf = key.split(".").at(-1)!;
  const sameLeaf = known.filter((k) => k.split(".").at(-1) === leaf);
  if (sameLeaf.length > 0) {
    return sameLeaf.sort((x, y) => editDistance(key, x) - editDistance(key, y))[0];
  }
  let best: string | undefined;
  let bestD = Infinity;
  for (const k of known) {
    const d = editDistance(key, k);
    if (d < bestD) [best, bestD] = [k, d];
  }
  return bestD <= Math.max(2, Math.floor(key.length / 3)) ? best : undefined;
}
