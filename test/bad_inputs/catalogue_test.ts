import assert from "node:assert/strict";
import { runCatalogue } from "./catalogue.ts";

Deno.test({
  name: "every bad input in the catalogue exits non-zero with a message that names it",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const results = await runCatalogue();
    assert.ok(results.length >= 150, `only ${results.length} cases`);
    const failing = results.filter((r) => !r.ok);
    assert.deepEqual(
      failing.map((r) => `[${r.task}] ${r.name}: ${r.why}\n${r.output.slice(0, 600)}`),
      [],
    );
  },
});
