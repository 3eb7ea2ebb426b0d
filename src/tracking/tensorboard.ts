/**
 * TensorBoard event files written by hand: TFRecord framing (length, masked CRC32C of the length,
 * payload, masked CRC32C of the payload) around `Event` protobufs with scalar summaries. This is all
 * TensorBoard needs to chart scalars, and keeps us free of a protobuf dependency.
 *
 * A resumed run keeps TensorBoard's view consistent: events after the resume step are dropped from
 * the earlier event files (rewritten whole, torn last records included), and the run appends to a
 * new file, so every step appears once.
 */
import {
  removeStaleTemps,
  replaceFile,
  type ResumeOptions,
  stampNow,
  syncDir,
  writeAll,
} from "./resume.ts";

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

/**
 * Reads the records back (tests, and anyone inspecting a run without TensorBoard). A damaged or
 * torn record throws, or with `stopAtDamage` ends the list (what a crash mid-write leaves).
 */
export function readRecords(bytes: Uint8Array, o: { stopAtDamage?: boolean } = {}): Uint8Array[] {
  const out: Uint8Array[] = [];
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let off = 0;
  const bad = (what: string) => {
    if (o.stopAtDamage) return true;
    throw new Error(`event file: ${what} at byte ${off}`);
  };
  while (off < bytes.length) {
    if (off + 12 > bytes.length) break; // a torn header: ignored, as TensorBoard does
    const len = Number(view.getBigUint64(off, true));
    if (view.getUint32(off + 8, true) !== maskedCrc(bytes.subarray(off, off + 8))) {
      if (bad("bad length checksum")) break;
    }
    if (off + 16 + len > bytes.length) {
      if (bad("truncated record")) break;
    }
    const payload = bytes.subarray(off + 12, off + 12 + len);
    if (view.getUint32(off + 12 + len, true) !== maskedCrc(payload)) {
      if (bad("bad payload checksum")) break;
    }
    out.push(payload);
    off += 16 + len;
  }
  return out;
}

/** The `step` (field 2) of an Event, 0 when absent (the file-version event). */
export function eventStep(payload: Uint8Array): number {
  let off = 0;
  const varint = (): number => {
    let x = 0, mul = 1;
    for (;;) {
      const b = payload[off++];
      if (b === undefined) throw new Error("event: truncated varint");
      x += (b & 0x7f) * mul;
      if (!(b & 0x80)) return x;
      mul *= 128;
    }
  };
  while (off < payload.length) {
    const key = varint(), field = key >>> 3, wire = key & 7;
    if (field === 2 && wire === 0) return varint();
    if (wire === 0) varint();
    else if (wire === 1) off += 8;
    else if (wire === 5) off += 4;
    else if (wire === 2) {
      const len = varint(); // read before adding: `off += varint()` would add to the old offset
      off += len;
    } else throw new Error(`event: unsupported wire type ${wire}`);
  }
  return 0;
}

const isEventFile = (name: string) => name.includes("tfevents");

/**
 * Cuts the event files in `dir` back to `resumeStep` (see resume.ts); with -1 (a fresh run) an
 * earlier run's files move into `{dir}/replaced-{stamp}/`, which TensorBoard shows as its own run.
 */
export function cutEventFiles(dir: string, o: ResumeOptions): void {
  if (o.resumeStep === undefined) return;
  removeStaleTemps(dir, o);
  let names: string[];
  try {
    names = [...Deno.readDirSync(dir)].filter((e) => e.isFile && isEventFile(e.name))
      .map((e) => e.name).sort();
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return;
    throw e;
  }
  if (!names.length) return;
  if (o.resumeStep < 0) {
    const aside = `${dir}/replaced-${stampNow()}`;
    Deno.mkdirSync(aside);
    for (const n of names) Deno.renameSync(`${dir}/${n}`, `${aside}/${n}`);
    syncDir(dir);
    o.print?.(`notice: ${dir} held an earlier run's event files; moved to ${aside}`);
    return;
  }
  for (const n of names) {
    const path = `${dir}/${n}`;
    const bytes = Deno.readFileSync(path);
    const records = readRecords(bytes, { stopAtDamage: true });
    const kept = records.filter((r) => eventStep(r) <= o.resumeStep!);
    const size = records.reduce((s, r) => s + r.length + 16, 0);
    if (kept.length === records.length && size === bytes.length) continue;
    const framed = kept.map(frameRecord);
    const out = new Uint8Array(framed.reduce((s, f) => s + f.length, 0));
    let off = 0;
    for (const f of framed) out.set(f, (off += f.length) - f.length);
    replaceFile(path, out);
    o.print?.(
      `${path}: dropped ${records.length - kept.length} event(s) after step ${o.resumeStep}` +
        (size === bytes.length ? "" : " and a torn last record"),
    );
  }
}

let writers = 0;

function exists(path: string): boolean {
  try {
    Deno.lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * Appends scalar events to a new `{dir}/events.out.tfevents.{time}.{host}.{pid}.{n}`, after cutting
 * the earlier files back to the resume step.
 */
export class TensorBoardWriter {
  #file: Deno.FsFile;
  readonly path: string;

  constructor(dir: string, options: ResumeOptions = {}) {
    Deno.mkdirSync(dir, { recursive: true });
    cutEventFiles(dir, options);
    const host = (() => {
      try {
        return Deno.hostname();
      } catch {
        return "localhost";
      }
    })();
    // As TensorFlow names them: time, host, pid and a per-process count; never an existing file.
    const base = `${dir}/events.out.tfevents.${Math.floor(Date.now() / 1000)}.${host}.${Deno.pid}`;
    while (exists(`${base}.${writers}`)) writers++;
    this.path = `${base}.${writers++}`;
    this.#file = Deno.openSync(this.path, { createNew: true, append: true });
    writeAll(this.#file, frameRecord(encodeVersionEvent(Date.now() / 1000)));
  }

  log(step: number, scalars: Record<string, number>): void {
    const finite = Object.fromEntries(
      Object.entries(scalars).filter(([, v]) => typeof v === "number" && Number.isFinite(v)),
    );
    writeAll(this.#file, frameRecord(encodeScalarEvent(Date.now() / 1000, step, finite)));
  }

  flush(): void {
    this.#file.syncSync();
  }

  close(): void {
    this.#file.close();
  }
}
