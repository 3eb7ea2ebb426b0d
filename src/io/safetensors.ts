/**
 * The safetensors format over plain bytes: no file system here, so the browser can use it too.
 *
 * Layout: an 8-byte little-endian header length N, N bytes of JSON (`{name: {dtype, shape,
 * data_offsets: [begin, end]}, "__metadata__": {string: string}}`), then the data section that the
 * offsets index into.
 */
import { type Dtype, DTYPE_BYTES, isDtype } from "./dtype.ts";

/** One tensor's entry in a safetensors header; offsets are relative to the data section. */
export interface TensorEntry {
  name: string;
  dtype: Dtype;
  shape: number[];
  begin: number;
  end: number;
}

export interface SafetensorsHeader {
  /** Entries in the order of their data. */
  entries: TensorEntry[];
  metadata: Record<string, string>;
  /** Absolute offset of the data section: 8 + header length. */
  dataStart: number;
}

/** A tensor as raw little-endian bytes. */
export interface RawTensor {
  name: string;
  dtype: Dtype;
  shape: number[];
  /** A view into the source buffer when parsed: no copy. */
  bytes: Uint8Array;
}

/** Refuse absurd headers before allocating for them (the reference implementation uses 100 MB). */
export const MAX_HEADER_BYTES = 100_000_000;

/** Error for a malformed file; the message always names the file and, when known, the tensor. */
export class SafetensorsError extends Error {
  constructor(file: string, message: string, tensor?: string) {
    super(`${file}: ${tensor === undefined ? "" : `tensor "${tensor}": `}${message}`);
    this.name = "SafetensorsError";
  }
}

export function elementCount(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

/** Reads the header length from the first 8 bytes and checks it against the file size. */
export function readHeaderLength(prefix: Uint8Array, fileSize: number, file: string): number {
  if (prefix.byteLength < 8 || fileSize < 8) {
    throw new SafetensorsError(file, `truncated: ${fileSize} bytes, need at least 8`);
  }
  const view = new DataView(prefix.buffer, prefix.byteOffset, 8);
  const n = view.getUint32(0, true) + view.getUint32(4, true) * 2 ** 32;
  if (n > MAX_HEADER_BYTES) {
    throw new SafetensorsError(file, `header length ${n} exceeds ${MAX_HEADER_BYTES} bytes`);
  }
  if (8 + n > fileSize) {
    throw new SafetensorsError(
      file,
      `header length ${n} runs past the end of the file (${fileSize} bytes): truncated or corrupt`,
    );
  }
  return n;
}

function isNonNegativeInt(x: unknown): x is number {
  return typeof x === "number" && Number.isSafeInteger(x) && x >= 0;
}

/**
 * Parses and validates the JSON header. `fileSize` is the whole file's size, so that offsets past
 * the end (a truncated file) are caught before any tensor is read.
 */
export function parseHeaderJson(
  json: Uint8Array,
  options: { file: string; fileSize: number },
): SafetensorsHeader {
  const { file, fileSize } = options;
  const dataStart = 8 + json.byteLength;
  const dataSize = fileSize - dataStart;
  let raw: unknown;
  try {
    raw = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(json));
  } catch (e) {
    throw new SafetensorsError(file, `header is not valid JSON (${(e as Error).message})`);
  }
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    throw new SafetensorsError(file, "header is not a JSON object");
  }
  const metadata: Record<string, string> = {};
  const entries: TensorEntry[] = [];
  for (const [name, value] of Object.entries(raw as Record<string, unknown>)) {
    if (name === "__metadata__") {
      if (value === null || typeof value !== "object" || Array.isArray(value)) {
        throw new SafetensorsError(file, "__metadata__ is not an object");
      }
      for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
        if (typeof v !== "string") {
          throw new SafetensorsError(file, `__metadata__["${k}"] is not a string`);
        }
        metadata[k] = v;
      }
      continue;
    }
    entries.push(parseEntry(name, value, file, dataSize));
  }
  entries.sort((a, b) => a.begin - b.begin || a.end - b.end);
  for (let i = 1; i < entries.length; i++) {
    const prev = entries[i - 1];
    if (entries[i].begin < prev.end) {
      throw new SafetensorsError(
        file,
        `data_offsets [${entries[i].begin}, ${entries[i].end}] overlap tensor "${prev.name}"`,
        entries[i].name,
      );
    }
  }
  return { entries, metadata, dataStart };
}

function parseEntry(name: string, value: unknown, file: string, dataSize: number): TensorEntry {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new SafetensorsError(file, "entry is not an object", name);
  }
  const { dtype, shape, data_offsets: offsets } = value as Record<string, unknown>;
  if (!isDtype(dtype)) {
    throw new SafetensorsError(file, `unknown dtype ${JSON.stringify(dtype)}`, name);
  }
  if (!Array.isArray(shape) || !shape.every(isNonNegativeInt)) {
    throw new SafetensorsError(file, `bad shape ${JSON.stringify(shape)}`, name);
  }
  if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every(isNonNegativeInt)) {
    throw new SafetensorsError(file, `bad data_offsets ${JSON.stringify(offsets)}`, name);
  }
  const [begin, end] = offsets as number[];
  if (begin > end) {
    throw new SafetensorsError(file, `data_offsets [${begin}, ${end}] are reversed`, name);
  }
  if (end > dataSize) {
    throw new SafetensorsError(
      file,
      `data_offsets [${begin}, ${end}] exceed the data section (${Math.max(dataSize, 0)} bytes): ` +
        "truncated or corrupt",
      name,
    );
  }
  const expected = elementCount(shape) * DTYPE_BYTES[dtype];
  if (end - begin !== expected) {
    throw new SafetensorsError(
      file,
      `holds ${end - begin} bytes but ${dtype} ${JSON.stringify(shape)} needs ${expected}`,
      name,
    );
  }
  return { name, dtype, shape: shape as number[], begin, end };
}

/** Parses a whole file held in memory; tensor bytes are views into `bytes`. */
export function parseSafetensors(
  bytes: Uint8Array,
  options: { file?: string } = {},
): { tensors: RawTensor[]; metadata: Record<string, string> } {
  const file = options.file ?? "<bytes>";
  const n = readHeaderLength(bytes, bytes.byteLength, file);
  const header = parseHeaderJson(bytes.subarray(8, 8 + n), { file, fileSize: bytes.byteLength });
  const tensors = header.entries.map((e) => ({
    name: e.name,
    dtype: e.dtype,
    shape: e.shape,
    bytes: bytes.subarray(header.dataStart + e.begin, header.dataStart + e.end),
  }));
  return { tensors, metadata: header.metadata };
}

/** What a writer needs to know about a tensor before it has the bytes. */
export interface TensorSpec {
  name: string;
  dtype: Dtype;
  shape: readonly number[];
}

/**
 * Builds the header for `tensors` (8-byte length prefix included) and the data order.
 *
 * Data is laid out widest dtype first, then by name, so every tensor starts aligned to its element
 * size and a reader can view it without copying; JSON keys are sorted so output is deterministic.
 */
export function encodeHeader(
  tensors: readonly TensorSpec[],
  options: { metadata?: Record<string, string> } = {},
): { header: Uint8Array; order: TensorSpec[]; dataSize: number } {
  const order = [...tensors].sort((a, b) =>
    DTYPE_BYTES[b.dtype] - DTYPE_BYTES[a.dtype] || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)
  );
  const json: Record<string, unknown> = {};
  if (options.metadata && Object.keys(options.metadata).length > 0) {
    json.__metadata__ = Object.fromEntries(
      Object.entries(options.metadata).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
    );
  }
  const offsets = new Map<string, [number, number]>();
  let offset = 0;
  for (const t of order) {
    if (t.name === "__metadata__") throw new Error(`"__metadata__" cannot name a tensor`);
    if (offsets.has(t.name)) throw new Error(`duplicate tensor name "${t.name}"`);
    const size = elementCount(t.shape) * DTYPE_BYTES[t.dtype];
    offsets.set(t.name, [offset, offset + size]);
    offset += size;
  }
  const specs = new Map(order.map((t) => [t.name, t]));
  for (const name of [...offsets.keys()].sort()) {
    const t = specs.get(name)!;
    json[name] = { dtype: t.dtype, shape: [...t.shape], data_offsets: offsets.get(name) };
  }
  const text = new TextEncoder().encode(JSON.stringify(json));
  // Pad with spaces (valid JSON whitespace) so the data section starts 8-byte aligned.
  const padded = Math.ceil(text.byteLength / 8) * 8;
  const header = new Uint8Array(8 + padded).fill(0x20);
  const view = new DataView(header.buffer);
  view.setUint32(0, padded % 2 ** 32, true);
  view.setUint32(4, Math.floor(padded / 2 ** 32), true);
  header.set(text, 8);
  return { header, order, dataSize: offset };
}

/** Serialises tensors into one buffer (for files that fit in memory; see safetensors_fs.ts). */
export function serializeSafetensors(
  tensors: readonly RawTensor[],
  options: { metadata?: Record<string, string> } = {},
): Uint8Array {
  const byName = new Map(tensors.map((t) => [t.name, t]));
  for (const t of tensors) checkTensorBytes(t);
  const { header, order, dataSize } = encodeHeader(tensors, options);
  const out = new Uint8Array(header.byteLength + dataSize);
  out.set(header, 0);
  let offset = header.byteLength;
  for (const spec of order) {
    const t = byName.get(spec.name)!;
    out.set(t.bytes, offset);
    offset += t.bytes.byteLength;
  }
  return out;
}

/** Throws when a tensor's byte length does not match its dtype and shape. */
export function checkTensorBytes(t: RawTensor): void {
  const expected = elementCount(t.shape) * DTYPE_BYTES[t.dtype];
  if (t.bytes.byteLength !== expected) {
    throw new Error(
      `tensor "${t.name}": ${t.bytes.byteLength} bytes but ${t.dtype} ` +
        `${JSON.stringify(t.shape)} needs ${expected}`,
    );
  }
}
