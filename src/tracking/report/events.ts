/**
 * Scalars out of TensorBoard event files: the TFRecord frames (`readRecords`) hold `Event`
 * protobufs; we decode just enough of them: `step`, and each summary value's `tag` with its
 * `simple_value` (what our writer, PyTorch and tensorboardX write) or a scalar `tensor` (TF2).
 */
import { crc32c, readRecords } from "../tensorboard.ts";

/** One scalar of one event. */
export interface EventScalar {
  step: number;
  tag: string;
  value: number;
}

interface Field {
  num: number;
  wire: number;
  /** varint (wire 0) */
  int?: bigint;
  /** fixed64 / fixed32 (wire 1 / 5), as raw bytes */
  fixed?: Uint8Array;
  /** length-delimited (wire 2) */
  bytes?: Uint8Array;
}

/** The fields of one protobuf message, in order. Throws on a malformed message. */
export function protoFields(buf: Uint8Array): Field[] {
  const out: Field[] = [];
  let off = 0;
  const varint = (): bigint => {
    let x = 0n, shift = 0n;
    for (;;) {
      if (off >= buf.length) throw new Error("truncated varint");
      const b = buf[off++];
      x |= BigInt(b & 0x7f) << shift;
      if (!(b & 0x80)) return x;
      shift += 7n;
      if (shift > 70n) throw new Error("varint too long");
    }
  };
  const take = (n: number): Uint8Array => {
    if (off + n > buf.length) throw new Error("truncated field");
    const b = buf.subarray(off, off + n);
    off += n;
    return b;
  };
  while (off < buf.length) {
    const key = Number(varint());
    const num = key >>> 3, wire = key & 7;
    if (wire === 0) out.push({ num, wire, int: varint() });
    else if (wire === 1) out.push({ num, wire, fixed: take(8) });
    else if (wire === 5) out.push({ num, wire, fixed: take(4) });
    else if (wire === 2) out.push({ num, wire, bytes: take(Number(varint())) });
    else throw new Error(`unsupported wire type ${wire}`);
  }
  return out;
}

const view = (b: Uint8Array) => new DataView(b.buffer, b.byteOffset, b.byteLength);
const f32 = (b: Uint8Array, i = 0) => view(b).getFloat32(i, true);
const f64 = (b: Uint8Array, i = 0) => view(b).getFloat64(i, true);

/** TensorProto { dtype = 1, tensor_content = 4, float_val = 5, double_val = 6 }: its one value. */
function tensorScalar(msg: Uint8Array): number | undefined {
  let dtype = 0;
  let value: number | undefined;
  let content: Uint8Array | undefined;
  for (const f of protoFields(msg)) {
    if (f.num === 1 && f.int !== undefined) dtype = Number(f.int);
    else if (f.num === 4 && f.bytes) content = f.bytes;
    else if (f.num === 5) value = f.fixed ? f32(f.fixed) : f.bytes?.length ? f32(f.bytes) : value;
    else if (f.num === 6) value = f.fixed ? f64(f.fixed) : f.bytes?.length ? f64(f.bytes) : value;
  }
  if (value === undefined && content) {
    // DT_FLOAT = 1, DT_DOUBLE = 2
    if (dtype === 1 && content.length >= 4) value = f32(content);
    else if (dtype === 2 && content.length >= 8) value = f64(content);
  }
  return value;
}

/** Summary.Value { tag = 1, simple_value = 2, tensor = 8 }. */
function summaryValue(msg: Uint8Array): { tag: string; value: number } | undefined {
  let tag: string | undefined;
  let value: number | undefined;
  for (const f of protoFields(msg)) {
    if (f.num === 1 && f.bytes) tag = new TextDecoder().decode(f.bytes);
    else if (f.num === 2 && f.fixed) value = f32(f.fixed);
    else if (f.num === 8 && f.bytes && value === undefined) value = tensorScalar(f.bytes);
  }
  return tag !== undefined && value !== undefined ? { tag, value } : undefined;
}

/** Event { wall_time = 1, step = 2, summary = 5 }: its scalars (none for the version event). */
export function decodeEvent(payload: Uint8Array): EventScalar[] {
  let step = 0;
  const values: { tag: string; value: number }[] = [];
  for (const f of protoFields(payload)) {
    if (f.num === 2 && f.int !== undefined) step = Number(BigInt.asIntN(64, f.int));
    else if (f.num === 5 && f.bytes) {
      for (const v of protoFields(f.bytes)) {
        const sv = v.num === 1 && v.bytes ? summaryValue(v.bytes) : undefined;
        if (sv) values.push(sv);
      }
    }
  }
  return values.map((v) => ({ step, ...v }));
}

/**
 * Every scalar of one event file, in file order. A torn last record (a run killed mid-write) is
 * dropped; a bad checksum or a malformed event elsewhere is an error naming the file.
 */
export function readEventFile(path: string, bytes: Uint8Array): EventScalar[] {
  let records: Uint8Array[];
  try {
    records = readRecords(completeRecords(bytes));
  } catch (e) {
    throw new Error(`${path}: ${e instanceof Error ? e.message : e}`);
  }
  const out: EventScalar[] = [];
  records.forEach((r, i) => {
    try {
      out.push(...decodeEvent(r));
    } catch (e) {
      throw new Error(`${path}: record ${i}: ${e instanceof Error ? e.message : e}`);
    }
  });
  return out;
}

/**
 * The prefix of `bytes` made of whole records (length, its checksum, payload, checksum): a last
 * record cut short is left out; one whose length checksum is wrong is left for `readRecords` to
 * report.
 */
function completeRecords(bytes: Uint8Array): Uint8Array {
  const v = view(bytes);
  let off = 0;
  while (off + 12 <= bytes.length) {
    if (v.getUint32(off + 8, true) !== maskedCrc(bytes.subarray(off, off + 8))) break;
    const end = off + 16 + Number(v.getBigUint64(off, true));
    if (end > bytes.length) return bytes.subarray(0, off);
    off = end;
  }
  return off + 12 <= bytes.length ? bytes : bytes.subarray(0, off);
}

function maskedCrc(bytes: Uint8Array): number {
  const c = crc32c(bytes);
  return ((((c >>> 15) | (c << 17)) >>> 0) + 0xa282ead8) >>> 0;
}
