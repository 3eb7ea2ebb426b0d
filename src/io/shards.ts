/**
 * Sharded checkpoints: splitting tensors into files and the `model.safetensors.index.json` that maps
 * each tensor to its file, as `transformers` writes and reads them. Pure: no file system.
 */
import { DTYPE_BYTES } from "./dtype.ts";
import { elementCount, type TensorSpec } from "./safetensors.ts";

export const SINGLE_FILE = "model.safetensors";
export const INDEX_FILE = "model.safetensors.index.json";

/** The index file's content. */
export interface ShardIndex {
  metadata: { total_size: number } & Record<string, unknown>;
  weight_map: Record<string, string>;
}

/** `model-00001-of-00003.safetensors`, counting from 1 like transformers. */
export function shardFileName(index: number, count: number): string {
  const pad = (n: number) => String(n).padStart(5, "0");
  return `model-${pad(index + 1)}-of-${pad(count)}.safetensors`;
}

export function tensorByteSize(t: TensorSpec): number {
  return elementCount(t.shape) * DTYPE_BYTES[t.dtype];
}

/**
 * Groups tensors, in the given order, into shards of at most `maxShardBytes` of tensor data each.
 * A tensor larger than the limit gets a shard of its own rather than failing.
 */
export function planShards<T extends TensorSpec>(
  tensors: readonly T[],
  maxShardBytes: number,
): T[][] {
  if (!(maxShardBytes > 0)) throw new Error(`maxShardBytes must be positive, got ${maxShardBytes}`);
  const shards: T[][] = [];
  let current: T[] = [];
  let size = 0;
  for (const t of tensors) {
    const bytes = tensorByteSize(t);
    if (current.length > 0 && size + bytes > maxShardBytes) {
      shards.push(current);
      current = [];
      size = 0;
    }
    current.push(t);
    size += bytes;
  }
  if (current.length > 0 || shards.length === 0) shards.push(current);
  return shards;
}

/** Builds the index for shards named by {@link shardFileName}; keys sorted as transformers does. */
export function buildShardIndex(shards: readonly (readonly TensorSpec[])[]): ShardIndex {
  const entries: [string, string][] = [];
  let total = 0;
  shards.forEach((shard, i) => {
    const file = shardFileName(i, shards.length);
    for (const t of shard) {
      entries.push([t.name, file]);
      total += tensorByteSize(t);
    }
  });
  entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return { metadata: { total_size: total }, weight_map: Object.fromEntries(entries) };
}

/** Parses and checks an index file's text or object; `file` names it in errors. */
export function parseShardIndex(source: string | unknown, file: string): ShardIndex {
  let raw: unknown = source;
  if (typeof source === "string") {
    try {
      raw = JSON.parse(source);
    } catch (e) {
      throw new Error(`${file}: not valid JSON (${(e as Error).message})`);
    }
  }
  const obj = raw as Record<string, unknown> | null;
  const map = obj?.weight_map as Record<string, unknown> | undefined;
  if (!map || typeof map !== "object" || Array.isArray(map)) {
    throw new Error(`${file}: missing "weight_map" object`);
  }
  for (const [name, shard] of Object.entries(map)) {
    if (
      typeof shard !== "string" || shard.includes("/") || shard.includes("\\") || shard === ".."
    ) {
      throw new Error(
        `${file}: weight_map["${name}"] is not a plain file name: ${JSON.stringify(shard)}`,
      );
    }
  }
  const metadata = (obj?.metadata ?? {}) as ShardIndex["metadata"];
  return { metadata, weight_map: map as Record<string, string> };
}

/** The distinct shard files an index refers to, in first-seen order. */
export function shardFiles(index: ShardIndex): string[] {
  return [...new Set(Object.values(index.weight_map))];
}
