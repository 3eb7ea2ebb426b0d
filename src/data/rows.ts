/** verl's parquet row schema, checked row by row with errors naming file, row and column. */
import type { ChatMessage } from "../io/mod.ts";
import { DataError } from "./errors.ts";
import type { Row } from "./parquet.ts";

/** A validated row of verl's RL schema. */
export interface RLRow {
  prompt: ChatMessage[];
  dataSource: string;
  ability: string | null;
  groundTruth: string;
  rewardStyle: string | null;
  extraInfo: Record<string, unknown>;
  agentName: string | null;
  interactionKwargs: Record<string, unknown> | null;
}

/** Where a row came from, for error messages. */
export interface RowPlace {
  file: string;
  row: number;
}

/** A prompt column's chat messages, or an error naming the file, row and column. */
export function parseChatMessages(value: unknown, at: RowPlace, column: string): ChatMessage[] {
  const fail = (why: string): never => {
    throw new DataError(at.file, why, at.row, column);
  };
  if (!Array.isArray(value) || value.length === 0) {
    fail(`expected a non-empty list of {role, content}, got ${describe(value)}`);
  }
  return (value as unknown[]).map((m, i) => {
    const msg = m as Record<string, unknown> | null;
    if (typeof msg?.role !== "string" || typeof msg?.content !== "string") {
      fail(`message ${i} is not {role: string, content: string}: ${describe(m)}`);
    }
    return { role: msg!.role as string, content: msg!.content as string };
  });
}

/** Checks one row against verl's schema. */
export function parseRLRow(
  row: Row,
  at: RowPlace,
  keys: { promptKey: string; dataSourceKey: string },
): RLRow {
  const fail = (column: string, why: string): never => {
    throw new DataError(at.file, why, at.row, column);
  };
  const messages = parseChatMessages(row[keys.promptKey], at, keys.promptKey);
  const dataSource = row[keys.dataSourceKey];
  if (typeof dataSource !== "string") {
    fail(keys.dataSourceKey, `expected a string, got ${describe(dataSource)}`);
  }
  const rm = row.reward_model;
  if (typeof rm !== "object" || rm === null || Array.isArray(rm)) {
    fail("reward_model", `expected a struct {style, ground_truth}, got ${describe(rm)}`);
  }
  const gt = (rm as Row).ground_truth;
  // A struct or list (Search-R1's {target: [...]}) reaches the scorer as its JSON text.
  const structured = typeof gt === "object" && gt !== null;
  if (typeof gt !== "string" && typeof gt !== "number" && !structured) {
    fail("reward_model", `ground_truth should be a string, got ${describe(gt)}`);
  }
  const extra = row.extra_info ?? {};
  if (typeof extra !== "object" || Array.isArray(extra)) {
    fail("extra_info", `expected a struct, got ${describe(extra)}`);
  }
  const optStr = (column: string): string | null => {
    const v = row[column];
    if (v === null || v === undefined) return null;
    return typeof v === "string" ? v : fail(column, `expected a string, got ${describe(v)}`);
  };
  const ik = row.interaction_kwargs ?? null;
  if (ik !== null && (typeof ik !== "object" || Array.isArray(ik))) {
    fail("interaction_kwargs", `expected a struct, got ${describe(ik)}`);
  }
  return {
    prompt: messages,
    dataSource: dataSource as string,
    ability: optStr("ability"),
    groundTruth: structured ? jsonText(gt) : String(gt),
    rewardStyle: typeof (rm as Row).style === "string" ? (rm as Row).style as string : null,
    extraInfo: extra as Record<string, unknown>,
    agentName: optStr("agent_name"),
    interactionKwargs: ik as Record<string, unknown> | null,
  };
}

function jsonText(v: unknown): string {
  return JSON.stringify(
    v,
    (_, x) =>
      typeof x === "bigint"
        ? Number(x)
        : ArrayBuffer.isView(x) && !(x instanceof DataView)
        ? Array.from(x as unknown as ArrayLike<number>)
        : x,
  );
}

function describe(v: unknown): string {
  if (v === undefined) return "nothing";
  const s = JSON.stringify(v, (_, x) => typeof x === "bigint" ? x.toString() : x) ?? String(v);
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}
