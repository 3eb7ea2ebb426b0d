import assert from "node:assert/strict";
import { Progress } from "./progress.ts";

Deno.test("progress: a stage's tick draws its own count after the stage name", () => {
  const lines: string[] = [];
  const p = new Progress("step 3", 4, { write: (t) => lines.push(t) });
  p.update(1, "gen");
  p.tick(1, "gen")(32, 64);
  p.done();
  const clear = "\r\x1b[2K";
  const shown = lines.map((l) => l.replace(clear, "").replace(/ \d+\.\ds /, " _s "));
  assert.deepEqual(shown, [
    "step 3 [######..................] 1/4 _s gen",
    "step 3 [######..................] 1/4 _s gen 32/64",
    "",
  ]);
});
