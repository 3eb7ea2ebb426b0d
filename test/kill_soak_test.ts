/**
 * The SIGKILL soak at CI size: a kill at each kill point (during a save, a prune and a step's log
 * write) and three at random moments, then the resumed run must equal an uninterrupted one
 * (kill_soak.ts; `deno run -A test/kill_soak.ts --kills 50` is the long version).
 */
import assert from "node:assert/strict";
import { killSoak } from "./kill_soak.ts";

Deno.test({
  name: "6 SIGKILLs (save, prune, log, 3 random) and resumes: same result as an uninterrupted run",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const res = await killSoak({ kills: 6, seed: 3, steps: 8 });
    assert.deepEqual(res.problems, [], res.summary);
    assert.equal(res.kills, 6, res.summary);
    for (const n of Object.values(res.atPoints)) assert.ok(n >= 1, res.summary);
    assert.ok(res.resumes >= 1, res.summary); // at least the run after the prune kill
    assert.ok(res.bytesCompared > 0, res.summary);
  },
});
