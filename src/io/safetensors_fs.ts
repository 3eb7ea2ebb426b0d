/**
 * Deno-only safetensors file access. Tensors are read one at a time through a file handle and
 * written in a stream, so multi-GiB shards never need a single buffer of their size.
 */
import {
  checkTensorBytes,
  encodeHeader,
  parseHeaderJson,
  type RawTensor,
  readHeaderLength,
  SafetensorsError,
  type TensorEntry,
} from "./safetensors.ts";
import {
  buildShardIndex,
  INDEX_FILE,
  parseShardIndex,
  planShards,
  shardFileName,
  SINGLE_FILE,
} from "./shards.ts";

export function joinPath(dir: string, name: string): string {
  return dir.endsWith("/") ? dir + name : `${dir}/${name}`;
}

async function readExactly(file: Deno.FsFile, buf: Uint8Array): Promise<boolean> {
  let done = 0;
  while (done < buf.byteLength) {
    const n = await file.read(buf.subarray(done));
    if (n === null) return false;
    done += n;
  }
  return true;
}

async function writeAll(file: Deno.FsFile, buf: Uint8Array): Promise<void> {
  let done = 0;
  while (done < buf.byteLength) done += await file.write(buf.subarray(done));
}

/** An open safetensors file whose header is parsed and whose tensors are read on demand. */
export class SafetensorsFile implements Disposable {
  readonly entries: ReadonlyMap<string, TensorEntry>;

  private constructor(
    readonly path: string,
    private readonly file: Deno.FsFile,
    readonly metadata: Record<string, string>,
    entries: TensorEntry[],
    private readonly dataStart: number,
  ) {
    this.entries = new Map(entries.map((e) => [e.name, e]));
  }

  /** Opens `path` and validates its header against the file size. */
  static async open(path: string): Promise<SafetensorsFile> {
    const file = await Deno.open(path, { read: true });
    try {
      const size = (await file.stat()).size;
      const prefix = new Uint8Array(8);
      if (size >= 8 && !(await readExactly(file, prefix))) {
        throw new SafetensorsError(path, "truncated while reading the header length");
      }
      const n = readHeaderLength(prefix, size, path);
      const json = new Uint8Array(n);
      if (!(await readExactly(file, json))) {
        throw new SafetensorsError(path, "truncated while reading the header");
      }
      const header = parseHeaderJson(json, { file: path, fileSize: size });
      return new SafetensorsFile(path, file, header.metadata, header.entries, header.dataStart);
    } catch (e) {
      file.close();
      throw e;
    }
  }

  /** Reads one tensor's bytes into a fresh buffer. */
  async read(name: string): Promise<RawTensor> {
    const entry = this.entries.get(name);
    if (!entry) throw new SafetensorsError(this.path, "not in this file", name);
    const bytes = new Uint8Array(entry.end - entry.begin);
    await this.file.seek(this.dataStart + entry.begin, Deno.SeekMode.Start);
    if (!(await readExactly(this.file, bytes))) {
      throw new SafetensorsError(this.path, "file ends inside the tensor's data", name);
    }
    return { name, dtype: entry.dtype, shape: entry.shape, bytes };
  }

  close(): void {
    this.file.close();
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

/** Reads every tensor of one file, tensor by tensor, in data order. */
export async function readSafetensorsFile(
  path: string,
): Promise<{ tensors: RawTensor[]; metadata: Record<string, string> }> {
  using file = await SafetensorsFile.open(path);
  const tensors: RawTensor[] = [];
  for (const name of file.entries.keys()) tensors.push(await file.read(name));
  return { tensors, metadata: file.metadata };
}

/** Streams `tensors` into one safetensors file at `path`. */
export async function writeSafetensorsFile(
  path: string,
  tensors: readonly RawTensor[],
  options: { metadata?: Record<string, string> } = {},
): Promise<void> {
  for (const t of tensors) checkTensorBytes(t);
  const byName = new Map(tensors.map((t) => [t.name, t]));
  const { header, order } = encodeHeader(tensors, options);
  using file = await Deno.open(path, { write: true, create: true, truncate: true });
  await writeAll(file, header);
  for (const spec of order) await writeAll(file, byName.get(spec.name)!.bytes);
}

/**
 * Reads the weights of a checkpoint folder: `model.safetensors.index.json` and its shards when
 * present, else `model.safetensors`. `names` restricts which tensors are read.
 */
export async function readSafetensorsFolder(
  dir: string,
  options: { names?: Iterable<string> } = {},
): Promise<Map<string, RawTensor>> {
  const wanted = options.names ? new Set(options.names) : null;
  const out = new Map<string, RawTensor>();
  const indexPath = joinPath(dir, INDEX_FILE);
  let plan: Map<string, string[] | null>;
  try {
    const index = parseShardIndex(await Deno.readTextFile(indexPath), indexPath);
    plan = new Map();
    for (const [name, shard] of Object.entries(index.weight_map)) {
      if (wanted && !wanted.has(name)) continue;
      if (!plan.has(shard)) plan.set(shard, []);
      plan.get(shard)!.push(name);
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
    plan = new Map([[SINGLE_FILE, null]]);
  }
  for (const [shard, names] of plan) {
    const path = joinPath(dir, shard);
    using file = await openOrExplain(path, names === null ? indexPath : null);
    for (const name of names ?? file.entries.keys()) {
      if (wanted && !wanted.has(name)) continue;
      if (!file.entries.has(name)) {
        throw new SafetensorsError(
          path,
          `listed in ${INDEX_FILE} but missing from the shard`,
          name,
        );
      }
      out.set(name, await file.read(name));
    }
  }
  return out;
}

/** Opens a weights file; `noIndex` is the index path that was also absent, for the message. */
async function openOrExplain(path: string, noIndex: string | null): Promise<SafetensorsFile> {
  try {
    return await SafetensorsFile.open(path);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
    throw new Error(
      noIndex === null
        ? `missing shard ${path}, listed in ${INDEX_FILE}`
        : `missing weights: neither ${path} nor ${noIndex} exists`,
    );
  }
}

/**
 * Writes `tensors` (in the given order) into `dir` as `model.safetensors`, or, when they exceed
 * `maxShardBytes`, as numbered shards plus `model.safetensors.index.json`. Returns the file names.
 */
export async function writeSafetensorsFolder(
  dir: string,
  tensors: readonly RawTensor[],
  options: { maxShardBytes?: number; metadata?: Record<string, string> } = {},
): Promise<string[]> {
  const shards = planShards(tensors, options.maxShardBytes ?? Number.POSITIVE_INFINITY);
  if (shards.length === 1) {
    await writeSafetensorsFile(joinPath(dir, SINGLE_FILE), tensors, options);
    return [SINGLE_FILE];
  }
  const files: string[] = [];
  for (let i = 0; i < shards.length; i++) {
    const name = shardFileName(i, shards.length);
    await writeSafetensorsFile(joinPath(dir, name), shards[i], options);
    files.push(name);
  }
  const index = buildShardIndex(shards);
  await Deno.writeTextFile(joinPath(dir, INDEX_FILE), JSON.stringify(index, null, 2) + "\n");
  return [...files, INDEX_FILE];
}
