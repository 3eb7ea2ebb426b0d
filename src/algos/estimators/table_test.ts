import assert from "node:assert/strict";
import {
  ESTIMATOR_TABLE_BEGIN,
  ESTIMATOR_TABLE_END,
  estimatorTable,
  estimatorTableRows,
} from "./table.ts";
import "./all.ts";

const PAGE = new URL("../../../docs/architecture.md", import.meta.url);

/** A markdown table's rows as trimmed cells, the separator row dropped. */
function cells(table: string): string[][] {
  return table.trim().split("\n")
    .map((l) => l.trim().replace(/^\|/, "").replace(/\|$/, "").split("|").map((c) => c.trim()))
    .filter((row) => !row.every((c) => /^:?-+:?$/.test(c)));
}

Deno.test("docs/architecture.md's estimator table is the registry's (regenerate on change)", () => {
  const page = Deno.readTextFileSync(PAGE);
  const begin = page.indexOf(ESTIMATOR_TABLE_BEGIN), end = page.indexOf(ESTIMATOR_TABLE_END);
  assert.ok(begin >= 0 && end > begin, `docs/architecture.md lacks the markers around the table`);
  const inPage = cells(page.slice(begin + ESTIMATOR_TABLE_BEGIN.length, end));
  assert.deepEqual(
    inPage,
    estimatorTableRows(),
    `docs/architecture.md's table differs from ADV_ESTIMATORS; replace it with:\n\n` +
      `${estimatorTable()}\n\n(then deno fmt docs/architecture.md)`,
  );
});
