import assert from "node:assert/strict";
import { DataLoader } from "../../data/mod.ts";
import type { CheckpointStore } from "../parts.ts";
import { resume, save } from "./save.ts";

/** A store that keeps the last save's extra in memory and resumes from it. */
function memoryStore(): CheckpointStore & { saved: Record<string, unknown> | null } {
  return {
    saved: null,
    save(_step, extra) {
      this.saved = structuredClone(extra);
      return Promise.resolve();
    },
    resume() {
      return Promise.resolve(this.saved);
    },
  };
}

const items = Array.from({ length: 10 }, (_, i) => i);

Deno.test("save then resume continues the loader at its position; another seed is said", async () => {
  const checkpoints = memoryStore();
  const logged: number[] = [];
  const tracking = { log: (step: number) => logged.push(step), close() {} };
  const first = new DataLoader(items, { batchSize: 3, shuffle: true, seed: 7 });
  first.next();
  first.next();
  await save({ checkpoints, tracking, trainLoader: first }, 2);
  assert.deepEqual(checkpoints.saved, {
    global_step: 2,
    data_loader: { epoch: 0, cursor: 6, seed: 7 },
    kl_ctrl: null,
  });
  assert.deepEqual(logged, [2], "the save's timing is a record of its step");

  const lines: string[] = [];
  const print = (l: string) => lines.push(l);
  const same = new DataLoader(items, { batchSize: 3, shuffle: true, seed: 7 });
  assert.equal(await resume({ checkpoints, tracking, trainLoader: same, print }), 2);
  assert.deepEqual(same.next(), first.next());
  assert.deepEqual(lines, ["resumed from global_step_2"]);

  lines.length = 0;
  const other = new DataLoader(items, { batchSize: 3, shuffle: true, seed: 8 });
  await resume({ checkpoints, tracking, trainLoader: other, print });
  assert.deepEqual(other.state(), { epoch: 0, cursor: 6, seed: 8 });
  assert.match(
    lines[0],
    /^notice: .*shuffled with seed 7; this run shuffles with seed 8 from epoch 0/,
  );

  assert.equal(await resume({ checkpoints: null, tracking, trainLoader: other }), 0);
});
