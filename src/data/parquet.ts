/**
 * Parquet in (hyparquet, with snappy/gzip/zstd/brotli/lz4 through hyparquet-compressors) and out
 * (hyparquet-writer, nested lists and structs laid out as pyarrow does).
 */
import { parquetMetadata, parquetReadObjects, type SchemaElement } from "hyparquet";
import { compressors } from "hyparquet-compressors";
import { parquetWriteBuffer } from "hyparquet-writer";
import { DataError } from "./errors.ts";

/** A row as read: column name -> value (lists as arrays, structs as objects). */
export type Row = Record<string, unknown>;

/** Reads every row of a parquet file; a corrupt or unreadable file is a DataError naming it. */
export async function readParquet(
  path: string,
  opts: { required?: string[] } = {},
): Promise<Row[]> {
  let bytes: Uint8Array;
  try {
    bytes = await Deno.readFile(path);
  } catch (e) {
    throw new DataError(path, `cannot read: ${(e as Error).message}`);
  }
  return await parquetRows(bytes, { ...opts, file: path });
}

/**
 * The rows of a parquet file held in memory (a file picked in a browser); `file` names it in
 * errors, as readParquet's path does.
 */
export async function parquetRows(
  bytes: Uint8Array,
  opts: { file: string; required?: string[] },
): Promise<Row[]> {
  const path = opts.file;
  const file = bytes.buffer.slice(
    bytes.byteOffset,
    bytes.byteOffset + bytes.byteLength,
  ) as ArrayBuffer;
  let names: string[];
  try {
    names = parquetMetadata(file).schema.slice(1).filter((_, i, all) => isTopLevel(all, i))
      .map((e) => e.name);
  } catch (e) {
    throw new DataError(path, `not a readable parquet file (${(e as Error).message})`);
  }
  for (const c of opts.required ?? []) {
    if (!names.includes(c)) {
      throw new DataError(path, `missing column (file has: ${names.join(", ")})`, undefined, c);
    }
  }
  try {
    const rows = await parquetReadObjects({ file, compressors });
    return rows.map((r) => plain(r) as Row);
  } catch (e) {
    throw new DataError(path, `corrupt parquet data (${(e as Error).message})`);
  }
}

/** Whether schema element i (children of the root, flattened) sits directly under the root. */
function isTopLevel(all: { num_children?: number }[], i: number): boolean {
  // Walk the flattened tree, skipping each group's descendants.
  let j = 0;
  while (j < all.length) {
    if (j === i) return true;
    j = skip(all, j);
  }
  return false;
}

function skip(all: { num_children?: number }[], j: number): number {
  let next = j + 1;
  for (let c = 0; c < (all[j].num_children ?? 0); c++) next = skip(all, next);
  return next;
}

/** int64 columns come back as bigint; JSON-friendly numbers are what rows are used as. */
function plain(v: unknown): unknown {
  if (typeof v === "bigint") {
    return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER)
      ? Number(v)
      : v.toString();
  }
  if (Array.isArray(v)) return v.map(plain);
  if (v instanceof Date || ArrayBuffer.isView(v)) return v;
  if (typeof v === "object" && v !== null) {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  }
  return v;
}

/** The logical type of a column, inferred from its values. */
type Shape =
  | { kind: "string" | "bool" | "int" | "double" }
  | { kind: "list"; item: Shape }
  | { kind: "struct"; fields: [string, Shape][] };

/**
 * Infers a column's type from its values: strings, numbers (INT64 when all are integers, else
 * DOUBLE), booleans, lists and structs (the union of the keys seen). Nulls are allowed anywhere.
 */
export function inferShape(name: string, values: unknown[]): Shape {
  const present = values.filter((v) => v !== null && v !== undefined);
  if (present.every((v) => typeof v === "string")) return { kind: "string" };
  if (present.every((v) => typeof v === "boolean")) return { kind: "bool" };
  if (present.every((v) => typeof v === "number")) {
    return { kind: present.every((v) => Number.isSafeInteger(v)) ? "int" : "double" };
  }
  if (present.every((v) => Array.isArray(v))) {
    return { kind: "list", item: inferShape(`${name}[]`, (present as unknown[][]).flat()) };
  }
  if (present.every((v) => typeof v === "object" && !Array.isArray(v))) {
    const keys = [...new Set(present.flatMap((v) => Object.keys(v as object)))];
    if (keys.length === 0) throw new Error(`column "${name}": empty structs cannot be written`);
    return {
      kind: "struct",
      fields: keys.map((k) => [k, inferShape(`${name}.${k}`, present.map((v) => (v as Row)[k]))]),
    };
  }
  throw new Error(`column "${name}" mixes value types`);
}

/** Schema elements of a shape; lists use the 3-level list/element layout pyarrow writes. */
function elements(name: string, shape: Shape): SchemaElement[] {
  const repetition_type = "OPTIONAL";
  switch (shape.kind) {
    case "string":
      return [{ name, type: "BYTE_ARRAY", converted_type: "UTF8", repetition_type }];
    case "bool":
      return [{ name, type: "BOOLEAN", repetition_type }];
    case "int":
      return [{ name, type: "INT64", repetition_type }];
    case "double":
      return [{ name, type: "DOUBLE", repetition_type }];
    case "list":
      return [
        { name, repetition_type, converted_type: "LIST", num_children: 1 },
        { name: "list", repetition_type: "REPEATED", num_children: 1 },
        ...elements("element", shape.item),
      ];
    case "struct":
      return [
        { name, repetition_type, num_children: shape.fields.length },
        ...shape.fields.flatMap(([k, s]) => elements(k, s)),
      ];
  }
}

/** Values as hyparquet-writer wants them for a shape (bigint for INT64, null for missing). */
function encode(v: unknown, shape: Shape): unknown {
  if (v === null || v === undefined) return null;
  switch (shape.kind) {
    case "int":
      return BigInt(v as number);
    case "list":
      return (v as unknown[]).map((x) => encode(x, shape.item));
    case "struct":
      return Object.fromEntries(shape.fields.map(([k, s]) => [k, encode((v as Row)[k], s)]));
    default:
      return v;
  }
}

/** Columns by name, or rows (all rows share the first row's keys). */
export type WriteData = { columns: Record<string, unknown[]> } | { rows: Row[] };

/**
 * Writes a snappy-compressed parquet file, to a temp name first, then renamed into place; on a
 * failure the temp file is removed and the error names the path.
 */
export async function writeParquet(path: string, data: WriteData): Promise<void> {
  const columns = "columns" in data ? data.columns : rowsToColumns(data.rows);
  const names = Object.keys(columns);
  if (names.length === 0) throw new Error(`writeParquet ${path}: no columns`);
  const schema: SchemaElement[] = [{ name: "root", num_children: names.length }];
  const columnData = names.map((name) => {
    const shape = inferShape(name, columns[name]);
    schema.push(...elements(name, shape));
    return { name, data: columns[name].map((v) => encode(v, shape)) };
  });
  const buf = parquetWriteBuffer({ columnData, schema, codec: "SNAPPY" });
  const tmp = `${path}.tmp-${Deno.pid}-${Date.now()}`;
  try {
    await Deno.writeFile(tmp, new Uint8Array(buf));
    await Deno.rename(tmp, path);
  } catch (e) {
    await Deno.remove(tmp).catch(() => {});
    const isDir = (await Deno.stat(path).catch(() => null))?.isDirectory;
    throw new Error(
      `cannot write ${path}: ${isDir ? "it is a folder" : (e as Error).message}`,
      { cause: e },
    );
  }
}

function rowsToColumns(rows: Row[]): Record<string, unknown[]> {
  const keys = rows.length ? Object.keys(rows[0]) : [];
  return Object.fromEntries(keys.map((k) => [k, rows.map((r) => r[k] ?? null)]));
}
