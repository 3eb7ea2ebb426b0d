/**
 * TensorBoard event files written by hand: TFRecord framing (length, masked CRC32C of the length,
 * payload, masked CRC32C of the payload) around `Event` protobufs with scalar summaries. This is all
 * TensorBoard needs to chart scalars, and keeps us free of a protobuf dependency.
 */

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    t[i] = c >>> 0;
  }
  return t;
})();

/** CRC-32C (Castagnoli), the checksum TFRecord uses. */
export function crc32c(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function maskedCrc(bytes: Uint8Array): number {
  const c = crc32c(bytes);
  return ((((c >>> 15) | (c << 17)) >>> 0) + 0xa282ead8) >>> 0;
}

/** A minimal protobuf writer: varints, fixed64 doubles, fixed32 floats, bytes. */
class Proto {
  #parts: number[] = [];
  varint(v: number | bigint): this {
    let x = BigInt(v);
    while (x >= 0x80n) {
      this.#parts.push(Number(x & 0x7fn) | 0x80);
      x >>= 7n;
    }
    this.#parts.push(Number(x));
    return this;
  }
  tag(field: number, wire: number): this {
    return this.varint((field << 3) | wire);
  }
  double(field: number, v: number): this {
    const b = new Uint8Array(8);
    new DataView(b.buffer).setFloat64(0, v, true);
    this.tag(field, 1).#parts.push(...b);
    return this;
  }
  float(field: number, v: number): this {
    const b = new Uint8Array(4);
    new DataView(b.buffer).setFloat32(0, v, true);
    this.tag(field, 5).#parts.push(...b);
    return this;
  }
  int(field: number, v: number): this {
    return this.tag(field, 0).varint(v);
  }
  bytes(field: number, b: Uint8Array): this {
    this.tag(field, 2).varint(b.length).#parts.push(...b);
    return this;
  }
  string(field: number, s: string): this {
    return this.bytes(field, new TextEncoder().encode(s));
  }
  done(): Uint8Array {
    return Uint8Array.from(this.#parts);
  }
}

/** Event { wall_time = 1 (double), step = 2 (int64), file_version = 3 | summary = 5 }. */
export function encodeVersionEvent(wallTime: number): Uint8Array {
  return new Proto().double(1, wallTime).string(3, "brain.Event:2").done();
}

/** Summary { value = 1: Value { tag = 1, simple_value = 2 } }. */
export function encodeScalarEvent(
  wallTime: number,
  step: number,
  scalars: Record<string, number>,
): Uint8Array {
  const summary = new Proto();
  for (const [tag, v] of Object.entries(scalars)) {
    summary.bytes(1, new Proto().string(1, tag).float(2, v).done());
  }
  return new Proto().double(1, wallTime).int(2, step).bytes(5, summary.done()).done();
}

export function frameRecord(payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(12 + payload.length + 4);
  const view = new DataView(out.buffer);
  view.setBigUint64(0, BigInt(payload.length), true);
  view.setUint32(8, maskedCrc(out.subarray(0, 8)), true);
  out.set(payload, 12);
  view.setUint32(12 + payload.length, maskedCrc(payload), true);
  return out;
}

/** Reads the records back (tests, and anyone inspecting a run without TensorBoard). */
export function readRecords(bytes: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let off = 0;
  while (off + 12 <= bytes.length) {
    const len = Number(view.getBigUint64(off, true));
    if (view.getUint32(off + 8, true) !== maskedCrc(bytes.subarray(off, off + 8))) {
      throw new Error(`event file: bad length checksum at byte ${off}`);
    }
    const payload = bytes.subarray(off + 12, off + 12 + len);
    if (view.getUint32(off + 12 + len, true) !== maskedCrc(payload)) {
      throw new Error(`event file: bad payload checksum at byte ${off}`);
    }
    out.push(payload);
    off += 16 + len;
  }
  return out;
}

/** Appends scalar events to `{dir}/events.out.tfevents.{time}.{host}`. */
export class TensorBoardWriter {
  #file: Deno.FsFile;
  readonly path: string;

  constructor(dir: string) {
    Deno.mkdirSync(dir, { recursive: true });
    const host = (() => {
      try {
        return Deno.hostname();
      } catch {
        return "localhost";
      }
    })();
    this.path = `${dir}/events.out.tfevents.${Math.floor(Date.now() / 1000)}.${host}`;
    this.#file = Deno.openSync(this.path, { create: true, append: true });
    this.#file.writeSync(frameRecord(encodeVersionEvent(Date.now() / 1000)));
  }

  log(step: number, scalars: Record<string, number>): void {
    const finite = Object.fromEntries(
      Object.entries(scalars).filter(([, v]) => typeof v === "number" && Number.isFinite(v)),
    );
    this.#file.writeSync(frameRecord(encodeScalarEvent(Date.now() / 1000, step, finite)));
  }

  close(): void {
    this.#file.close();
  }
}
