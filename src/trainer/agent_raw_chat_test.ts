import assert from "node:assert/strict";
import { ConfigError } from "../config/mod.ts";
import { checkRawChatRows } from "./agent.ts";

Deno.test("rows that run the agent loop need data.return_raw_chat; the error names the row", () => {
  const rows = [
    { file: "a.parquet", row: 0, agentName: null },
    { file: "a.parquet", row: 3, agentName: "tool_agent" },
  ];
  checkRawChatRows(rows, true);
  checkRawChatRows(rows.slice(0, 1), false);
  assert.throws(
    () => checkRawChatRows(rows, false),
    (e: Error) =>
      e instanceof ConfigError && e.key === "data.return_raw_chat" &&
      e.message.startsWith("a.parquet row 3: agent_name tool_agent runs the agent loop"),
  );
});
