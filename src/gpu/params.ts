/**
 * A dispatch's uniform parameters: built by the kernels' wrappers (`packParams`), written by the
 * recorder into its uniform arena (`writeParams`) without a buffer per dispatch.
 */

/** One 4-byte uniform field: a plain number is a u32, `{ f32 }` / `{ i32 }` choose the type. */
export type ParamField = number | { f32: number } | { i32: number };

/**
 * A dispatch's uniform fields, as `packParams` made them: the recorder writes them straight into
 * its uniform arena (no buffer per dispatch), zero-padded to a multiple of 16 bytes.
 */
export interface Params {
  readonly fields: readonly ParamField[];
}

/** Bytes a uniform of `n` fields takes: a multiple of 16, at least 16. */
const paddedBytes = (n: number) => Math.max(16, Math.ceil(n / 4) * 16);

/** The uniform fields of a dispatch (`DispatchOptions.params`), in order. */
export function packParams(fields: readonly ParamField[]): Params {
  return { fields };
}

/** Writes `params` at byte `offset` of `view` and zero-pads them; returns the bytes they take. */
export function writeParams(view: DataView, offset: number, params: Params): number {
  const f = params.fields;
  const bytes = paddedBytes(f.length);
  for (let i = 0; i < f.length; i++) {
    const v = f[i];
    if (typeof v === "number") view.setUint32(offset + i * 4, v >>> 0, true);
    else if ("f32" in v) view.setFloat32(offset + i * 4, v.f32, true);
    else view.setInt32(offset + i * 4, v.i32, true);
  }
  for (let at = offset + f.length * 4; at < offset + bytes; at += 4) view.setUint32(at, 0, true);
  return bytes;
}

/** `params` as bytes of their own (a uniform buffer made by hand: benches). */
export function paramBytes(params: Params): ArrayBuffer {
  const buf = new ArrayBuffer(paddedBytes(params.fields.length));
  writeParams(new DataView(buf), 0, params);
  return buf;
}
