/**
 * Test helpers: parquet fixtures written the way pyarrow lays them out (built as an Apache Arrow
 * table, then encoded from Arrow's own schema), so the reader is tested against files our writer
 * did not produce. Tests tokenize with the real character tokenizer (`charTokenizer` in io).
 */
import * as arrow from "apache-arrow";
import { gzipSync } from "fflate";
import type { SchemaElement } from "hyparquet";
import { parquetWriteBuffer } from "hyparquet-writer";

/** Parquet schema elements for an Arrow field, in pyarrow's layout. */
function fieldElements(name: string, type: arrow.DataType): SchemaElement[] {
  const repetition_type = "OPTIONAL";
  if (arrow.DataType.isUtf8(type)) {
    return [{ name, type: "BYTE_ARRAY", converted_type: "UTF8", repetition_type }];
  }
  if (arrow.DataType.isBool(type)) return [{ name, type: "BOOLEAN", repetition_type }];
  if (arrow.DataType.isInt(type)) return [{ name, type: "INT64", repetition_type }];
  if (arrow.DataType.isFloat(type)) return [{ name, type: "DOUBLE", repetition_type }];
  if (arrow.DataType.isList(type)) {
    return [
      { name, repetition_type, converted_type: "LIST", num_children: 1 },
      { name: "list", repetition_type: "REPEATED", num_children: 1 },
      ...fieldElements("element", type.children[0].type),
    ];
  }
  if (arrow.DataType.isStruct(type)) {
    return [
      { name, repetition_type, num_children: type.children.length },
      ...type.children.flatMap((f) => fieldElements(f.name, f.type)),
    ];
  }
  throw new Error(`fixture: unsupported arrow type ${type}`);
}

/** Plain JS values out of Arrow's row proxies; int64 stays bigint for the writer. */
function plain(v: unknown): unknown {
  if (v instanceof arrow.Vector) return [...v].map(plain);
  if (v !== null && typeof v === "object" && "toJSON" in v && !(v instanceof Date)) {
    const obj = (v as { toJSON(): Record<string, unknown> }).toJSON();
    return Object.fromEntries(Object.entries(obj).map(([k, x]) => [k, plain(x)]));
  }
  return v;
}

/** Encodes an Arrow table as parquet bytes with the given codec (SNAPPY or GZIP). */
export function arrowTableToParquet(
  table: arrow.Table,
  codec: "SNAPPY" | "GZIP" = "SNAPPY",
): Uint8Array {
  const fields = table.schema.fields;
  const schema: SchemaElement[] = [{ name: "schema", num_children: fields.length }];
  const columnData = fields.map((f) => {
    schema.push(...fieldElements(f.name, f.type));
    return { name: f.name, data: [...table.getChild(f.name)!].map(plain) };
  });
  const buf = parquetWriteBuffer({
    columnData,
    schema,
    codec,
    compressors: { GZIP: (input: Uint8Array) => gzipSync(input) },
    createdBy: "parquet-cpp-arrow version 17.0.0",
  });
  return new Uint8Array(buf);
}

/** An Arrow table with verl's RL schema (prompt list<struct>, reward_model and extra_info structs). */
export function verlArrowTable(
  rows: { source: string; messages: [string, string][]; truth: string; index: number }[],
): arrow.Table {
  const msg = new arrow.Struct([
    new arrow.Field("role", new arrow.Utf8(), true),
    new arrow.Field("content", new arrow.Utf8(), true),
  ]);
  const rm = new arrow.Struct([
    new arrow.Field("style", new arrow.Utf8(), true),
    new arrow.Field("ground_truth", new arrow.Utf8(), true),
  ]);
  const extra = new arrow.Struct([
    new arrow.Field("split", new arrow.Utf8(), true),
    new arrow.Field("index", new arrow.Int64(), true),
    new arrow.Field("ratio", new arrow.Float64(), true),
  ]);
  return new arrow.Table({
    data_source: arrow.vectorFromArray(rows.map((r) => r.source), new arrow.Utf8()),
    prompt: arrow.vectorFromArray(
      rows.map((r) => r.messages.map(([role, content]) => ({ role, content }))),
      new arrow.List(new arrow.Field("element", msg, true)),
    ),
    ability: arrow.vectorFromArray(rows.map(() => "math"), new arrow.Utf8()),
    reward_model: arrow.vectorFromArray(
      rows.map((r) => ({ style: "rule", ground_truth: r.truth })),
      rm,
    ),
    extra_info: arrow.vectorFromArray(
      rows.map((r) => ({ split: "train", index: BigInt(r.index), ratio: r.index / 4 })),
      extra,
    ),
  });
}
